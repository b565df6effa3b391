//! Decoding a damaged LZ4 block as far as it is valid.
//!
//! lz4_flex decodes whole blocks and, on an error, does not say how much of
//! the output it had already written. An LZ4 block is a run of sequences
//! (literals, then a copy of earlier output), decoded in order, so everything
//! a damaged block produced before its first invalid sequence is the data
//! Firefox wrote. The reader's own decoder ([`Pieces`], `format/stream.rs`)
//! decodes it a sequence at a time here, stops there and says where.

use crate::format::stream::Pieces;
pub(crate) use crate::format::stream::{Reason, Stop};

/// What [`decode_prefix`] got out of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prefix {
    /// The decoded bytes up to the damage (all of them if there was none).
    pub out: Vec<u8>,
    /// Where and why decoding stopped early, if it did.
    pub stop: Option<Stop>,
}

/// Decode `block` sequence by sequence, never producing more than `limit`
/// bytes. `reserve` is how much to allocate up front (the size header, if
/// plausible). Literals cut by the end of the block are kept: they are bytes
/// of the original as far as they go.
pub(crate) fn decode_prefix(block: &[u8], limit: usize, reserve: usize) -> Prefix {
    let mut out: Vec<u8> = Vec::with_capacity(reserve.min(limit));
    let stop = decode_from(block, 0, limit, &mut out).err();
    Prefix { out, stop }
}

/// The offset in `block` of the sequence whose output holds byte `at` of the
/// decoded data (the block's length if `at` is past the output).
pub(crate) fn input_offset_of(block: &[u8], limit: usize, at: usize) -> usize {
    let mut out = Vec::new();
    let mut sequence_start = 0;
    let _ = decode_until(block, 0, limit, &mut out, &mut |input, len| {
        if len > at {
            return true;
        }
        sequence_start = input;
        false
    });
    if out.len() <= at {
        return block.len();
    }
    sequence_start
}

/// How many bytes the block decodes to before the sequence that holds byte
/// `input` of the block (all of them if `input` is past its end): a damaged
/// byte spoils its whole sequence, whose match is written after its literals.
pub(crate) fn output_before(block: &[u8], limit: usize, input: usize) -> usize {
    let mut out = Vec::new();
    let mut before = 0;
    let _ = decode_until(block, 0, limit, &mut out, &mut |at, len| {
        if at > input {
            return true;
        }
        before = len;
        false
    });
    if input >= block.len() {
        return out.len();
    }
    before
}

/// Decode the sequences of `block` from input offset `start` (where one
/// starts) onto `out`, which holds what the ones before decoded to.
pub(crate) fn decode_from(
    block: &[u8],
    start: usize,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), Stop> {
    decode_until(block, start, limit, out, &mut |_, _| false)
}

/// Decode sequences; before each one, `stop_before(input offset, output
/// length)` may end the decoding early.
fn decode_until(
    block: &[u8],
    start: usize,
    limit: usize,
    out: &mut Vec<u8>,
    stop_before: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<(), Stop> {
    if block.is_empty() {
        return Err(Stop {
            input: 0,
            reason: Reason::Empty,
        });
    }
    let mut sequences = Pieces::resume(block, start, out.len(), limit);
    while sequences.input_read() < block.len() {
        if stop_before(sequences.input_read(), out.len()) {
            return Ok(());
        }
        if !sequences.sequence_onto(out)? {
            // The last sequence has literals only.
            return Ok(());
        }
    }
    Err(Stop {
        input: block.len(),
        reason: Reason::EndsAfterMatch,
    })
}

/// A length: the token's 4 bits, then while they (or the last byte) are all
/// ones, one more byte added. `None` if the block ends first.
pub(super) fn length(block: &[u8], i: &mut usize, nibble: usize) -> Option<usize> {
    if nibble != 15 {
        return Some(nibble);
    }
    crate::format::stream::extra_length(block, i).map(|n| n + 15)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..5_000u32)
            .flat_map(|i| format!("{{\"url\":\"http://127.0.0.1/{}\"}},", i % 700).into_bytes())
            .collect()
    }

    #[test]
    fn a_whole_block_decodes_as_lz4_flex_does() {
        let data = sample();
        let block = lz4_flex::block::compress(&data);
        let p = decode_prefix(&block, data.len(), data.len());
        assert_eq!(p.stop, None);
        assert_eq!(p.out, data);
    }

    #[test]
    fn a_truncated_block_gives_a_prefix_of_the_original() {
        let data = sample();
        let block = lz4_flex::block::compress(&data);
        for cut in [1, 7, block.len() / 3, block.len() / 2, block.len() - 1] {
            let p = decode_prefix(&block[..cut], data.len(), data.len());
            assert!(p.stop.is_some(), "cut {cut}");
            assert!(data.starts_with(&p.out), "cut {cut}");
            assert!(p.out.len() < data.len());
        }
        // Later cuts give longer prefixes.
        let half = decode_prefix(&block[..block.len() / 2], usize::MAX, 0);
        let most = decode_prefix(&block[..block.len() * 9 / 10], usize::MAX, 0);
        assert!(most.out.len() > half.out.len());
    }

    #[test]
    fn a_flipped_byte_keeps_everything_before_it() {
        let data = sample();
        let block = lz4_flex::block::compress(&data);
        for at in (0..block.len()).step_by(block.len() / 50) {
            let mut bad = block.clone();
            bad[at] ^= 0x55;
            let p = decode_prefix(&bad, data.len() * 2, 0);
            // What the bytes before the flip decode to is the original, and
            // the damaged block gives at least that.
            let before = decode_prefix(&block[..at], usize::MAX, 0).out;
            assert!(data.starts_with(&before), "flip at {at}");
            assert!(p.out.starts_with(&before), "flip at {at}");
        }
    }

    #[test]
    fn the_limit_and_bad_offsets_stop_decoding() {
        let data = sample();
        let block = lz4_flex::block::compress(&data);
        let p = decode_prefix(&block, 100, 100);
        assert_eq!(p.out, data[..p.out.len()]);
        assert!(p.out.len() <= 100);
        assert!(p.stop.is_some());
        // A match before the start of the output.
        let p = decode_prefix(&[0x1f, b'a', 0xff, 0xff, 0x00], 1000, 0);
        assert_eq!(p.out, b"a");
        assert_eq!(p.stop.unwrap().input, 0);
        assert_eq!(decode_prefix(&[], 10, 10).out, b"");
    }

    #[test]
    fn input_offsets_point_at_the_sequence_holding_a_byte() {
        let data = sample();
        let block = lz4_flex::block::compress(&data);
        let mut last = 0;
        for at in (0..data.len()).step_by(997) {
            let input = input_offset_of(&block, usize::MAX, at);
            assert!(input >= last && input < block.len());
            // Decoding up to that sequence gives at most `at` bytes.
            assert!(decode_prefix(&block[..input], usize::MAX, 0).out.len() <= at);
            last = input;
        }
        assert_eq!(input_offset_of(&block, usize::MAX, data.len()), block.len());
    }

    #[test]
    fn a_flipped_byte_leaves_the_output_before_its_sequence_intact() {
        let data = sample();
        let block = lz4_flex::block::compress(&data);
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..500 {
            let at = rng.usize(..block.len());
            let kept = output_before(&block, usize::MAX, at);
            let mut bad = block.clone();
            bad[at] ^= 1 << rng.u32(0..8);
            let out = decode_prefix(&bad, data.len() * 2, 0).out;
            assert!(
                out.len() >= kept && out[..kept] == data[..kept],
                "flip at {at}"
            );
        }
        assert_eq!(output_before(&block, usize::MAX, block.len()), data.len());
    }
}
