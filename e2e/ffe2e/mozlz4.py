"""Pure-Python mozlz4 reader/writer, used only by the harness for debugging and
for inspecting saved fixtures (the real conversions are done by ffsession).

mozlz4 = b"mozLz40\\0" + u32 little-endian decompressed size + raw LZ4 block.
"""

from __future__ import annotations

import json
import struct

MAGIC = b"mozLz40\0"


def lz4_block_decompress(src: bytes, size: int) -> bytes:
    dst = bytearray()
    i, n = 0, len(src)
    while i < n:
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        dst += src[i:i + lit]
        i += lit
        if i >= n:
            break
        off = src[i] | (src[i + 1] << 8)
        i += 2
        if off == 0 or off > len(dst):
            raise ValueError("corrupt LZ4 block: bad offset %d at %d" % (off, i))
        ml = token & 15
        if ml == 15:
            while True:
                b = src[i]
                i += 1
                ml += b
                if b != 255:
                    break
        ml += 4
        start = len(dst) - off
        if off >= ml:
            dst += dst[start:start + ml]
        else:
            for k in range(ml):
                dst.append(dst[start + k])
    if len(dst) != size:
        raise ValueError("LZ4 size mismatch: header says %d, got %d" % (size, len(dst)))
    return bytes(dst)


def lz4_block_literals(data: bytes) -> bytes:
    """A valid (uncompressed, literals-only) LZ4 block."""
    out = bytearray()
    n = len(data)
    if n >= 15:
        out.append(0xF0)
        r = n - 15
        while r >= 255:
            out.append(255)
            r -= 255
        out.append(r)
    else:
        out.append(n << 4)
    out += data
    return bytes(out)


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != MAGIC:
        raise ValueError("%s: not a mozlz4 file (magic %r)" % (path, raw[:8]))
    (size,) = struct.unpack("<I", raw[8:12])
    return lz4_block_decompress(raw[12:], size)


def load_json(path: str):
    return json.loads(read(path).decode("utf-8"))


def write(path: str, data: bytes):
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<I", len(data)) + lz4_block_literals(data))
