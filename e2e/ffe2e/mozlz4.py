"""mozlz4 reader/writer for the harness, independent of ffsession: it checks and
prepares session files with the `lz4` package (python-lz4, the LZ4 reference
library's bindings), not with the tool under test.

mozlz4 = b"mozLz40\\0" + u32 little-endian decompressed size + raw LZ4 block.
"""

from __future__ import annotations

import json
import struct

import lz4.block

MAGIC = b"mozLz40\0"


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != MAGIC:
        raise ValueError("%s: not a mozlz4 file (magic %r)" % (path, raw[:8]))
    (size,) = struct.unpack("<I", raw[8:12])
    data = lz4.block.decompress(raw[12:], uncompressed_size=size)
    if len(data) != size:
        raise ValueError("%s: LZ4 size mismatch: header says %d, got %d" % (path, size, len(data)))
    return data


def load_json(path: str):
    return json.loads(read(path).decode("utf-8"))


def write(path: str, data: bytes):
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<I", len(data)) + lz4.block.compress(data, store_size=False))
