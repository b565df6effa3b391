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
        Self::resume(block, 0, 0, claimed)
    }

    /// Decode from input offset `start`, where a sequence starts, with
    /// `total` bytes decoded before it, never past `limit` bytes of output
    /// (the size claimed, for [`Pieces::new`]); the rescue reads a damaged
    /// block this way, a sequence at a time ([`Pieces::sequence_onto`]).
    pub(crate) fn resume(block: &'b [u8], start: usize, total: usize, limit: usize) -> Self {
        Pieces {
            block,
            i: start,
            total,
            claimed: limit,
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
                    let literals = self.literal_length().map_err(|_| Broken)?;
                    if literals > self.block.len() - self.i || literals > self.claimed - self.total
                    {
                        return Err(Broken);
                    }
                    self.state = State::Literals(literals);
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
                    let (offset, len) = self.match_header().map_err(|_| Broken)?;
                    if len > self.claimed - self.total {
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

impl Pieces<'_> {
    /// A sequence's token and its literals' length (the token kept for its
    /// match length).
    #[inline(always)]
    fn literal_length(&mut self) -> Result<usize, Reason> {
        let token = *self.block.get(self.i).ok_or(Reason::InLiteralLength)?;
        self.i += 1;
        self.token = token;
        let mut literals = usize::from(token >> 4);
        if literals == 15 {
            literals += length(self.block, &mut self.i).map_err(|_| Reason::InLiteralLength)?;
        }
        Ok(literals)
    }

    /// The match after a sequence's literals: its offset back (checked
    /// against the output so far) and its length.
    #[inline(always)]
    fn match_header(&mut self) -> Result<(usize, usize), Reason> {
        if self.block.len() - self.i < 2 {
            return Err(Reason::InMatchOffset);
        }
        let offset = usize::from(u16::from_le_bytes([
            self.block[self.i],
            self.block[self.i + 1],
        ]));
        self.i += 2;
        if offset == 0 || offset > self.total {
            return Err(Reason::MatchBeforeStart);
        }
        let mut len = usize::from(self.token & 15) + 4;
        if len == 19 {
            len += length(self.block, &mut self.i).map_err(|_| Reason::InMatchLength)?;
        }
        Ok((offset, len))
    }

    /// Decode the next sequence onto `out`, which holds all the output so
    /// far; `Ok(false)` when the block ended after its literals, as a block
    /// ends. On damage, what decoded before the sequence stays in `out`, with
    /// as much of its literals as there are (bytes of the original as far as
    /// they go), and the error says where the sequence starts and why it
    /// could not be decoded.
    pub(crate) fn sequence_onto(&mut self, out: &mut Vec<u8>) -> Result<bool, Stop> {
        debug_assert!(matches!(self.state, State::Token) && out.len() == self.total);
        let start = self.i;
        let fail = |reason| Stop {
            input: start,
            reason,
        };
        let literals = self.literal_length().map_err(fail)?;
        let available = self.block.len() - self.i;
        let room = self.claimed - self.total;
        if literals > available || literals > room {
            // Keep what is there of the literals, up to the limit.
            let keep = literals.min(available).min(room);
            out.extend_from_slice(&self.block[self.i..self.i + keep]);
            self.total += keep;
            self.state = State::End;
            if keep == room {
                return Err(fail(Reason::PastLimit));
            }
            // Every byte there was used: the damage is the missing rest.
            return Err(Stop {
                input: self.block.len(),
                reason: Reason::InLiterals,
            });
        }
        out.extend_from_slice(&self.block[self.i..self.i + literals]);
        self.i += literals;
        self.total += literals;
        if self.i == self.block.len() {
            self.state = State::End;
            return Ok(false);
        }
        let (offset, len) = self.match_header().map_err(fail)?;
        if len > self.claimed - self.total {
            return Err(fail(Reason::PastLimit));
        }
        let from = out.len() - offset;
        if offset >= len {
            out.extend_from_within(from..from + len);
        } else {
            // Overlapping: a pattern `offset` bytes long, repeated.
            out.reserve(len);
            for k in 0..len {
                out.push(out[from + k]);
            }
        }
        self.total += len;
        Ok(true)
    }
}

/// Where a damaged block stops decoding ([`Pieces::sequence_onto`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stop {
    /// Offset in the block of the sequence that could not be decoded.
    pub input: usize,
    /// What is wrong with it.
    pub reason: Reason,
}

/// Why decoding stopped: [`Reason::PastLimit`] is the one stop that is not
/// damage when the limit is the caller's own (how far it wants to decode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    Empty,
    InLiteralLength,
    PastLimit,
    InLiterals,
    InMatchOffset,
    MatchBeforeStart,
    InMatchLength,
    EndsAfterMatch,
}

impl Reason {
    /// Whether decoding stopped because the block ended inside a sequence
    /// (or after a match, where literals must end a block): what a cut file
    /// looks like, though damage that garbles a length can look the same.
    pub(crate) fn input_ran_out(self) -> bool {
        matches!(
            self,
            Reason::InLiteralLength
                | Reason::InLiterals
                | Reason::InMatchOffset
                | Reason::InMatchLength
                | Reason::EndsAfterMatch
        )
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reason::Empty => "the LZ4 data is empty",
            Reason::InLiteralLength => "the data ends inside a literal length",
            Reason::PastLimit => "the data holds more than the size header says",
            Reason::InLiterals => "the data ends inside literals",
            Reason::InMatchOffset => "the data ends inside a match offset",
            Reason::MatchBeforeStart => "a match refers to data before the start",
            Reason::InMatchLength => "the data ends inside a match length",
            Reason::EndsAfterMatch => "the data ends after a match, where literals must end it",
        })
    }
}

/// An LZ4 length's extra bytes (after a nibble of 15), for a reader that
/// walks a block's sequences itself (the rescue's search for damage); `None`
/// if the block ends first.
pub(crate) fn extra_length(block: &[u8], i: &mut usize) -> Option<usize> {
    length(block, i).ok()
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
mod tests;
