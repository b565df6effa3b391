//! Decoding a mozlz4 file's LZ4 block while letting go of the input behind it.
//!
//! A mapped 15 MB file sat in the process's memory beside the 23 MB of JSON
//! decoded from it: peak memory was the two together. An LZ4 block is a run
//! of sequences (literals copied from the input, then a copy of at most
//! 64 KiB back in the output), decoded front to back, so input already
//! decoded is never needed again. This decoder reports its progress every
//! [`CHUNK`] bytes of input; the caller releases the mapped pages behind it
//! (`Buffer::release_before`), so about one chunk of the input is resident at
//! a time besides the JSON.
//!
//! Reading the file through a 256 KiB buffer instead of mapping it did the
//! same for memory but cost a fifth more time: copying 15 MB out of the page
//! cache took the kernel longer than faulting the mapping in.
//!
//! The result and every error are those of `lz4_flex::block::decompress_into`
//! on the same block (a test compares them on generated data and on cut and
//! damaged blocks; the `mozlz4` fuzz target on arbitrary ones). Like the rest
//! of the crate this is safe Rust: lengths are checked once per sequence, and
//! the common short copies are fixed-size ones the compiler turns into a few
//! moves. It decodes as fast as lz4_flex or faster (the read bench's
//! `decompress` row against `floor_decompress`).

use lz4_flex::block::DecompressError;

/// How often (in bytes of input) the decoder reports its progress.
pub(crate) const CHUNK: usize = 256 << 10;

/// Decode the LZ4 `block` into `out`; returns how many bytes it decoded to.
/// `progress(n)` is called each time `n`, the number of input bytes fully
/// decoded, passes another [`CHUNK`].
pub(crate) fn decode(
    block: &[u8],
    out: &mut [u8],
    progress: &mut dyn FnMut(usize),
) -> Result<usize, DecompressError> {
    let mut i = 0;
    let mut o = 0;
    let mut next_report = CHUNK;
    loop {
        if i >= next_report {
            progress(i);
            next_report = i + CHUNK;
        }
        let token = *block.get(i).ok_or(DecompressError::ExpectedAnotherByte)?;
        i += 1;
        let mut literals = usize::from(token >> 4);
        if literals == 15 {
            literals += length(block, &mut i)?;
        }
        if literals > 0 {
            if literals > block.len() - i {
                return Err(DecompressError::LiteralOutOfBounds);
            }
            if literals > out.len() - o {
                return Err(DecompressError::OutputTooSmall {
                    expected: o + literals,
                    actual: out.len(),
                });
            }
            if literals <= 16 && block.len() - i >= 16 && out.len() - o >= 16 {
                // One fixed-size copy; the bytes past `literals` are
                // overwritten by what follows.
                out[o..o + 16].copy_from_slice(&block[i..i + 16]);
            } else {
                out[o..o + literals].copy_from_slice(&block[i..i + literals]);
            }
            i += literals;
            o += literals;
        }
        if i == block.len() {
            return Ok(o);
        }
        if block.len() - i < 2 {
            return Err(DecompressError::ExpectedAnotherByte);
        }
        let offset = usize::from(u16::from_le_bytes([block[i], block[i + 1]]));
        i += 2;
        if offset == 0 {
            return Err(DecompressError::OffsetZero);
        }
        let mut len = usize::from(token & 15) + 4;
        if len == 19 {
            len += length(block, &mut i)?;
        }
        if offset > o {
            return Err(DecompressError::OffsetOutOfBounds);
        }
        if len > out.len() - o {
            return Err(DecompressError::OutputTooSmall {
                expected: o + len,
                actual: out.len(),
            });
        }
        copy_match(out, o, offset, len);
        o += len;
        // lz4_flex refuses a block that ends after a match: the last
        // sequence of a block has literals only.
        if i == block.len() {
            return Err(DecompressError::ExpectedAnotherByte);
        }
    }
}

/// The farthest back an LZ4 match reaches (its offset is a `u16`).
pub(crate) const WINDOW: usize = 1 << 16;

/// An LZ4 block decoded a piece at a time, for a reader that keeps none of
/// the output behind it (`format/summarize.rs`).
///
/// Each piece is written after the output just before it: the caller copies
/// at least the last [`WINDOW`] bytes (or all of them, if fewer) of the
/// previous piece to the front of the next buffer, where the matches that
/// reach back find them. A sequence may straddle two pieces. It accepts
/// exactly the blocks [`decode`] accepts, decodes them to the same bytes,
/// and fails where [`decode`] fails (without saying why: a caller that sees
/// a failure reads the file the ordinary way, which words the error).
pub(crate) struct Pieces<'b> {
    block: &'b [u8],
    /// Next byte of the block to read.
    i: usize,
    /// Bytes of output so far.
    total: usize,
    /// The size the file's header claims.
    claimed: usize,
    state: State,
    /// The token of the sequence being decoded (its low bits are the match
    /// length, read once the literals are copied).
    token: u8,
}

#[derive(Clone, Copy)]
enum State {
    /// At a sequence's token.
    Token,
    /// Copying literals: this many left; then a match follows unless the
    /// block ends.
    Literals(usize),
    /// Copying a match: `left` bytes from `offset` back.
    Match { offset: usize, left: usize },
    /// The block ended after literals, as it must.
    End,
}

/// The block is damaged, cut, or decodes to another size than claimed.
#[derive(Debug)]
pub(crate) struct Broken;

impl<'b> Pieces<'b> {
    pub(crate) fn new(block: &'b [u8], claimed: usize) -> Self {
        Pieces {
            block,
            i: 0,
            total: 0,
            claimed,
            state: State::Token,
            token: 0,
        }
    }

    /// Bytes of the block fully read (for letting go of the input behind).
    pub(crate) fn input_read(&self) -> usize {
        self.i
    }

    /// Whether the whole block is decoded, to the size claimed.
    pub(crate) fn finished(&self) -> bool {
        matches!(self.state, State::End)
    }

    /// Decode into `out[start..]`, where `out[..start]` holds the last
    /// `start` bytes of output so far (at least [`WINDOW`] of them, or all),
    /// until `out` is full or the block ends. Returns how much of `out` is
    /// filled.
    pub(crate) fn fill(&mut self, out: &mut [u8], start: usize) -> Result<usize, Broken> {
        let (window, out) = out.split_at_mut(start);
        Ok(start + self.fill_after(window, out)?)
    }

    /// Decode into `out` until it is full or the block ends, where `window`
    /// holds the last bytes of output before it (at least [`WINDOW`] of
    /// them, or all); returns how much of `out` is filled. For a reader
    /// that keeps the whole output in one buffer and reads what is decoded
    /// while the rest is (`session/growing.rs`).
    pub(crate) fn fill_after(&mut self, window: &[u8], out: &mut [u8]) -> Result<usize, Broken> {
        debug_assert!(window.len() >= WINDOW.min(self.total) && window.len() <= self.total);
        let mut o = 0;
        loop {
            match self.state {
                State::End => return Ok(o),
                State::Token => {
                    let token = *self.block.get(self.i).ok_or(Broken)?;
                    self.i += 1;
                    let mut literals = usize::from(token >> 4);
                    if literals == 15 {
                        literals += length(self.block, &mut self.i).map_err(|_| Broken)?;
                    }
                    if literals > self.block.len() - self.i || literals > self.claimed - self.total
                    {
                        return Err(Broken);
                    }
                    self.state = State::Literals(literals);
                    self.token = token;
                }
                State::Literals(left) => {
                    let n = left.min(out.len() - o);
                    if n <= 16 && self.block.len() - self.i >= 16 && out.len() - o >= 16 {
                        // As in `decode`: one fixed-size copy.
                        out[o..o + 16].copy_from_slice(&self.block[self.i..self.i + 16]);
                    } else {
                        out[o..o + n].copy_from_slice(&self.block[self.i..self.i + n]);
                    }
                    self.i += n;
                    self.total += n;
                    o += n;
                    if n < left {
                        self.state = State::Literals(left - n);
                        return Ok(o);
                    }
                    if self.i == self.block.len() {
                        self.state = State::End;
                        if self.total != self.claimed {
                            return Err(Broken);
                        }
                        continue;
                    }
                    if self.block.len() - self.i < 2 {
                        return Err(Broken);
                    }
                    let offset = usize::from(u16::from_le_bytes([
                        self.block[self.i],
                        self.block[self.i + 1],
                    ]));
                    self.i += 2;
                    let mut len = usize::from(self.token & 15) + 4;
                    if len == 19 {
                        len += length(self.block, &mut self.i).map_err(|_| Broken)?;
                    }
                    if offset == 0 || offset > self.total || len > self.claimed - self.total {
                        return Err(Broken);
                    }
                    self.state = State::Match { offset, left: len };
                }
                State::Match { offset, left } => {
                    let n = left.min(out.len() - o);
                    if offset <= o {
                        copy_match(out, o, offset, n);
                    } else {
                        copy_match_after(window, out, o, offset, n);
                    }
                    self.total += n;
                    o += n;
                    if n < left {
                        self.state = State::Match {
                            offset,
                            left: left - n,
                        };
                        return Ok(o);
                    }
                    // A block may not end after a match.
                    if self.i == self.block.len() {
                        return Err(Broken);
                    }
                    self.state = State::Token;
                }
            }
        }
    }
}

/// An LZ4 length's extra bytes: added up until one is not 255.
#[inline]
fn length(block: &[u8], i: &mut usize) -> Result<usize, DecompressError> {
    let mut n = 0usize;
    loop {
        let b = *block.get(*i).ok_or(DecompressError::ExpectedAnotherByte)?;
        *i += 1;
        n += usize::from(b);
        if b != 255 {
            return Ok(n);
        }
    }
}

/// Copy `len` bytes from `offset` back in `out` to `out[at..]` (checked by
/// the caller: `0 < offset <= at`, room for `len`).
#[inline]
fn copy_match(out: &mut [u8], at: usize, offset: usize, len: usize) {
    let from = at - offset;
    if offset >= 32 && len <= 32 && out.len() - at >= 32 {
        // Apart by 32 bytes or more: one fixed-size copy; the bytes written
        // past `len` are overwritten by what follows.
        out.copy_within(from..from + 32, at);
    } else if offset >= len {
        out.copy_within(from..from + len, at);
    } else {
        // Overlapping: a pattern `offset` bytes long, repeated.
        for k in 0..len {
            out[at + k] = out[from + k];
        }
    }
}

/// [`copy_match`] for a match that starts in `window`, the output just
/// before `out`: `offset - at` bytes back from its end (checked by the
/// caller: the window holds them).
#[cold]
fn copy_match_after(window: &[u8], out: &mut [u8], at: usize, offset: usize, len: usize) {
    let back = offset - at;
    let from = window.len() - back;
    // The bytes in the window, then (for a match that runs past the
    // window's end) the rest from `out`, which now lies `offset` back.
    let n = back.min(len);
    out[at..at + n].copy_from_slice(&window[from..from + n]);
    if n < len {
        copy_match(out, at + n, offset, len - n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What lz4_flex makes of `block`, as (bytes, error message).
    fn reference(block: &[u8], size: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0; size];
        match lz4_flex::block::decompress_into(block, &mut out) {
            Ok(n) => {
                out.truncate(n);
                Ok(out)
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn streamed(block: &[u8], size: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0; size];
        let mut reported = Vec::new();
        let result = decode(block, &mut out, &mut |n| reported.push(n));
        // Progress only moves forward, a chunk at a time, within the block.
        for w in reported.windows(2) {
            assert!(w[1] >= w[0] + CHUNK, "{reported:?}");
        }
        assert!(reported.iter().all(|&n| n >= CHUNK && n <= block.len()));
        match result {
            Ok(n) => {
                // Sequences are short: every chunk passed is reported.
                assert!(reported.len() + 1 >= block.len() / CHUNK, "{reported:?}");
                out.truncate(n);
                Ok(out)
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn sample(len: usize) -> Vec<u8> {
        // Text with repeats near and far, runs (overlapping matches) and
        // stretches of noise (long literals).
        let mut v = Vec::new();
        let mut x: u32 = 7;
        while v.len() < len {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            match x >> 29 {
                0 => v.extend(std::iter::repeat_n(b'a', (x >> 8) as usize % 700)),
                1 => v.extend((0..(x >> 9) % 3000).map(|i| (i * 7 + (x >> 3)) as u8)),
                2..=4 => {
                    v.extend_from_slice(b"{\"url\":\"https://example.com/page\",\"title\":\"x\"},")
                }
                _ => v.extend_from_slice(format!("{x}-").as_bytes()),
            }
        }
        v.truncate(len);
        v
    }

    /// `block` cut every `cut_step` bytes, and with a byte flipped (three
    /// ways) every `flip_step` bytes, each claiming `size`.
    fn damaged(
        block: &[u8],
        size: usize,
        cut_step: usize,
        flip_step: usize,
    ) -> Vec<(Vec<u8>, usize)> {
        let mut cases: Vec<(Vec<u8>, usize)> = Vec::new();
        for cut in (0..block.len()).step_by(cut_step) {
            cases.push((block[..cut].to_vec(), size));
        }
        for at in (0..block.len()).step_by(flip_step) {
            for flip in [0x01, 0x80, 0xff] {
                let mut b = block.to_vec();
                b[at] ^= flip;
                cases.push((b, size));
            }
        }
        cases
    }

    #[test]
    fn decodes_as_lz4_flex_does() {
        for len in [0, 1, 15, 16, 17, 100, 5_000, 700_000, 3_000_000] {
            let json = sample(len);
            let block = lz4_flex::block::compress(&json);
            assert_eq!(streamed(&block, json.len()), Ok(json.clone()), "len {len}");
            assert_eq!(reference(&block, json.len()), Ok(json), "len {len}");
        }
    }

    #[test]
    fn cut_damaged_and_wrongly_sized_blocks_fail_as_lz4_flex_does() {
        let json = sample(60_000);
        let block = lz4_flex::block::compress(&json);
        let mut cases = damaged(&block, json.len(), 97, 131);
        cases.push((block.clone(), json.len() - 1));
        cases.push((block.clone(), 10));
        cases.push((block.clone(), json.len() + 100));
        let mut failures = 0;
        for (b, size) in cases {
            let want = reference(&b, size);
            let got = streamed(&b, size);
            match (&want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g),
                (Err(w), Err(g)) => {
                    assert_eq!(w, g, "size {size}");
                    failures += 1;
                }
                _ => panic!(
                    "lz4_flex {:?}, here {:?}",
                    want.map(|v| v.len()),
                    got.map(|v| v.len())
                ),
            }
        }
        assert!(failures > 20, "{failures}");
    }
    /// What [`Pieces`] makes of `block`, `piece` bytes at a time, each piece
    /// after a copy of the last `WINDOW` bytes of the output before it.
    fn in_pieces(block: &[u8], size: usize, piece: usize) -> Option<Vec<u8>> {
        let mut decoder = Pieces::new(block, size);
        let mut all = Vec::new();
        let mut buf = vec![0; piece];
        let mut start = 0;
        loop {
            let end = decoder.fill(&mut buf, start).ok()?;
            assert!(end == buf.len() || decoder.finished());
            all.extend_from_slice(&buf[start..end]);
            if decoder.finished() {
                return Some(all);
            }
            let window = WINDOW.min(all.len());
            buf = vec![0; window + piece];
            buf[..window].copy_from_slice(&all[all.len() - window..]);
            start = window;
        }
    }

    #[test]
    fn pieces_decode_as_the_whole_block_does() {
        for len in [0, 1, 17, 5_000, 700_000] {
            let json = sample(len);
            let block = lz4_flex::block::compress(&json);
            for piece in [1, 2, 15, 16, 33, 1000, 65_536, 300_000] {
                if len > 5_000 && piece < 1000 {
                    continue;
                }
                assert_eq!(
                    in_pieces(&block, json.len(), piece).as_ref(),
                    Some(&json),
                    "len {len}, piece {piece}"
                );
            }
        }
    }

    #[test]
    fn pieces_fail_where_the_whole_block_fails() {
        let json = sample(60_000);
        let block = lz4_flex::block::compress(&json);
        let mut cases = damaged(&block, json.len(), 89, 127);
        cases.push((block.clone(), json.len() - 1));
        cases.push((block.clone(), json.len() + 1));
        cases.push((block.clone(), 0));
        let mut failures = 0;
        for (b, size) in cases {
            let whole = streamed(&b, size).ok().filter(|out| out.len() == size);
            for piece in [7, 4096, 70_000] {
                assert_eq!(
                    in_pieces(&b, size, piece),
                    whole,
                    "size {size}, piece {piece}"
                );
            }
            failures += usize::from(whole.is_none());
        }
        assert!(failures > 20, "{failures}");
    }
}
