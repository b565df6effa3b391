//! Finding where damage starts in an LZ4 block by compressing again.
//!
//! A flipped bit in a match offset or length makes the block copy the wrong
//! earlier bytes, and in session JSON, which repeats itself, such copies can
//! read as valid JSON for kilobytes before anything looks wrong: tabs in
//! between would come back with URLs that were never there.
//!
//! LZ4 compressors are deterministic. The reference library Firefox uses
//! (`LZ4_compress_default`: liblz4 1.10.0 gives Firefox ESR 153's session files
//! back byte for byte) and lz4_flex (ffsession's own writes) each give exactly
//! the block they wrote when run again on the data it decodes to. So the data
//! a damaged block decodes to is compressed again with each, and the two
//! blocks are compared sequence by sequence. Seeing the same bytes before the
//! damage, the compressor writes the same sequences up to there; at the
//! damaged sequence it writes another one, or, when the damage only made a
//! match longer, the same one and another one just after (the caller's
//! margin, many sequences long, covers that one). So everything before the
//! first sequence that differs, but for that one sequence, is the original.
//!
//! One kind of damage stays unseen: a copy the compressor would make itself,
//! such as a unique run of bytes copied whole from the wrong place (or a
//! flipped literal byte, which no compressor can tell from the original).
//! Such damage shows only where the wrong bytes stop being JSON, and the
//! caller distrusts a wider margin before that point.
//!
//! A file written by another compressor (another library version, a tool)
//! agrees with neither beyond a few sequences: then this finds nothing, and
//! the caller keeps its wide margin.

use super::lz4::length;

/// One LZ4 sequence, by what it decodes to (its literal bytes are the data's
/// own bytes at `out`, so two blocks of the same data agree on them).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sequence {
    /// Where it starts in the block (not compared: see [`Sequence::decodes_as`]).
    input: usize,
    /// Where its output starts.
    pub(super) out: usize,
    pub(super) literals: usize,
    /// Match offset and length (0, 0 for the last, literals-only sequence).
    offset: u16,
    pub(super) len: usize,
}

impl Sequence {
    /// Whether `other` decodes to the same bytes at the same place.
    pub(super) fn decodes_as(&self, other: &Sequence) -> bool {
        (self.out, self.literals, self.offset, self.len)
            == (other.out, other.literals, other.offset, other.len)
    }
}

/// The compressors that write session files.
#[derive(Debug, Clone, Copy)]
pub(super) enum Compressor {
    /// liblz4's `LZ4_compress_default`, as Firefox.
    Reference,
    /// lz4_flex, as ffsession.
    Flex,
}

impl Compressor {
    pub(super) fn compress(self, data: &[u8]) -> Option<Vec<u8>> {
        match self {
            Compressor::Reference => lz4::block::compress(data, None, false).ok(),
            Compressor::Flex => Some(lz4_flex::block::compress(data)),
        }
    }
}

/// How much of the data before the damage shows must be written the way a
/// compressor writes it, for the comparison with that compressor to be
/// trusted. Seen: 97.5% to 100% for the compressor that wrote a damaged file,
/// under 66% for the other one, but for files of a few KB (up to 94.5%).
const AGREEMENT: f64 = 0.9;

/// Or how many sequences from the start of the block it must write the same.
/// A flipped length makes every sequence read after it garbage, so that when
/// the damage shows far after it, little of the data before agrees. Seen:
/// compressors other than the one that wrote a block write at most its
/// first 19 sequences the same.
const AGREED_RUN: usize = 64;

/// A damaged block, sequence by sequence, with which of its sequences the
/// compressor that wrote it writes again for the data it decodes to.
#[derive(Debug)]
pub(crate) struct Written {
    sequences: Vec<Sequence>,
    /// Per sequence: written again the same.
    same: Vec<bool>,
    decoded_len: usize,
}

/// Compare `block` with what each compressor writes for `decoded` (what
/// `block` decodes to, as far as it goes). `shows` is the offset in it where
/// the damage shows (a JSON error, say): the compressor that agrees on at
/// least [`AGREEMENT`] of the sequences before it is the one that wrote the
/// block, or the one that writes at least its first [`AGREED_RUN`] sequences
/// the same. `None` if neither does. Firefox's compressor is tried first, and
/// the other only if it does not agree (the two never both do).
pub(crate) fn compare(block: &[u8], decoded: &[u8], shows: usize) -> Option<Written> {
    let ours: Vec<Sequence> = sequences(block).collect();
    let before = ours.iter().take_while(|s| s.out < shows).count();
    if before == 0 {
        return None;
    }
    let same = [Compressor::Reference, Compressor::Flex]
        .into_iter()
        .filter_map(|compressor| compressor.compress(decoded))
        .map(|again| same_sequences(&ours, &sequences(&again).collect::<Vec<_>>()))
        .find(|same| {
            let agreed = &same[..before];
            let run = agreed.iter().take_while(|&&b| b).count();
            agrees(before, agreed.iter().filter(|&&b| b).count(), run)
        })?;
    Some(Written {
        sequences: ours,
        same,
        decoded_len: decoded.len(),
    })
}

impl Written {
    /// Where the output of the first sequence the compressor would not have
    /// written starts (the decoded length if there is none). The damaged
    /// sequence may be the one before, written the same, when the damage
    /// made its match longer.
    pub(crate) fn first_unwritten(&self) -> usize {
        self.same
            .iter()
            .position(|s| !s)
            .map_or(self.decoded_len, |i| self.sequences[i].out)
    }

    /// The first sequence the compressor would not have written and the one
    /// before it (the damaged one when the damage made its match longer), as
    /// (offset in the block, offset of its output), earlier first.
    pub(crate) fn first_unwritten_and_before(&self) -> Option<[(usize, usize); 2]> {
        let i = self.same.iter().position(|s| !s)?;
        Some(self.pair(i))
    }

    /// The same for the sequence whose output holds byte `at`.
    pub(crate) fn holding_and_before(&self, at: usize) -> Option<[(usize, usize); 2]> {
        let i = self
            .sequences
            .partition_point(|s| s.out <= at)
            .checked_sub(1)?;
        Some(self.pair(i))
    }

    fn pair(&self, i: usize) -> [(usize, usize); 2] {
        let at = |s: &Sequence| (s.input, s.out);
        [
            at(&self.sequences[i.saturating_sub(1)]),
            at(&self.sequences[i]),
        ]
    }

    /// The sequences whose matches wrote the bytes in `ranges` of the data,
    /// or the bytes those copied, and so on back, as far as `not_before`:
    /// where wrong bytes found in `ranges` may have been copied from (at most
    /// `max`), as (offset in the block, offset of its output), in order.
    pub(crate) fn copied_into(
        &self,
        ranges: &[std::ops::Range<usize>],
        not_before: usize,
        max: usize,
    ) -> Vec<(usize, usize)> {
        let mut found = std::collections::BTreeSet::new();
        let mut todo = ranges.to_vec();
        'todo: while let Some(r) = todo.pop() {
            let seqs = &self.sequences;
            let mut i = seqs.partition_point(|s| s.out + s.literals + s.len <= r.start);
            while i < seqs.len() && seqs[i].out < r.end {
                let s = seqs[i];
                let copy = s.out + s.literals;
                let (lo, hi) = (r.start.max(copy), r.end.min(copy + s.len));
                if lo < hi && copy >= not_before && found.insert(i) {
                    if found.len() >= max {
                        break 'todo;
                    }
                    if let Some(from) = copy.checked_sub(usize::from(s.offset)) {
                        todo.push(from + (lo - copy)..from + (hi - copy));
                    }
                }
                i += 1;
            }
        }
        found
            .into_iter()
            .map(|i| (self.sequences[i].input, self.sequences[i].out))
            .collect()
    }

    /// The output range of the sequence whose output starts at `out`.
    pub(crate) fn output_of(&self, out: usize) -> std::ops::Range<usize> {
        let i = self.sequences.partition_point(|s| s.out < out);
        self.sequences
            .get(i)
            .map_or(out..out, |s| s.out..s.out + s.literals + s.len)
    }

    /// If byte `at` of the data was written as a literal byte, where the
    /// output of the sequence before the one holding it starts.
    pub(crate) fn start_before_literal(&self, at: usize) -> Option<usize> {
        let i = self
            .sequences
            .partition_point(|s| s.out <= at)
            .checked_sub(1)?;
        let s = self.sequences[i];
        (at < s.out + s.literals).then(|| self.sequences[i.saturating_sub(1)].out)
    }
}

/// Whether a compressor that writes `same` of a block's first `sequences`
/// sequences the same, the first `run` of them in a row, is the one that
/// wrote it.
pub(super) fn agrees(sequences: usize, same: usize, run: usize) -> bool {
    run >= AGREED_RUN || same as f64 / sequences as f64 >= AGREEMENT
}

/// Per sequence of `ours`: whether `theirs` holds the same sequence at the
/// same place.
fn same_sequences(ours: &[Sequence], theirs: &[Sequence]) -> Vec<bool> {
    let mut j = 0;
    ours.iter()
        .map(|s| {
            while j < theirs.len() && theirs[j].out < s.out {
                j += 1;
            }
            theirs.get(j).is_some_and(|t| t.decodes_as(s))
        })
        .collect()
}

/// The sequences of `block`, as far as they can be read (no data is decoded:
/// only lengths and offsets).
pub(super) fn sequences(block: &[u8]) -> Sequences<'_> {
    Sequences { block, i: 0, at: 0 }
}

/// The iterator [`sequences`] returns.
pub(super) struct Sequences<'a> {
    block: &'a [u8],
    /// Where the next sequence starts in the block (its length once done).
    i: usize,
    /// Where its output starts.
    at: usize,
}

impl Iterator for Sequences<'_> {
    type Item = Sequence;

    fn next(&mut self) -> Option<Sequence> {
        let block = self.block;
        let (input, mut i) = (self.i, self.i);
        self.i = block.len();
        let token = *block.get(i)?;
        i += 1;
        let literals = length(block, &mut i, usize::from(token >> 4))?;
        if literals > block.len() - i {
            return None;
        }
        i += literals;
        if i + 2 > block.len() {
            // The last sequence: literals only (or a cut match offset).
            return Some(Sequence {
                input,
                out: self.at,
                literals,
                offset: 0,
                len: 0,
            });
        }
        let offset = u16::from_le_bytes([block[i], block[i + 1]]);
        i += 2;
        let len = length(block, &mut i, usize::from(token & 15))? + 4;
        let s = Sequence {
            input,
            out: self.at,
            literals,
            offset,
            len,
        };
        self.i = i;
        self.at += literals + len;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> String {
        ffsession_gen::generate(&ffsession_gen::Spec {
            tabs: 300,
            windows: 2,
            seed: 4,
            ..ffsession_gen::Spec::default()
        })
    }

    #[test]
    fn each_compressor_writes_its_own_block_again() {
        let data = session();
        let data = data.as_bytes();
        for block in [
            lz4::block::compress(data, None, false).unwrap(),
            lz4_flex::block::compress(data),
        ] {
            assert_eq!(
                compare(&block, data, data.len()).map(|w| w.first_unwritten()),
                Some(data.len())
            );
        }
    }

    #[test]
    fn the_reference_library_writes_firefoxs_files_again() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/firefox");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonlz4") {
                let file = std::fs::read(&path).unwrap();
                let json = crate::format::decompress(&file).unwrap();
                let again = lz4::block::compress(&json, None, false).unwrap();
                assert!(again == file[12..], "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen >= 2);
    }

    /// The offsets of `block`'s bytes that are not literal data: tokens,
    /// length bytes and match offsets.
    fn not_literal(block: &[u8]) -> Vec<usize> {
        let (mut found, mut i) = (Vec::new(), 0);
        while i < block.len() {
            let start = i;
            let token = block[i];
            i += 1;
            let literals = length(block, &mut i, usize::from(token >> 4)).unwrap();
            found.extend(start..i);
            i += literals;
            let end = (i + 2).min(block.len());
            i = end;
            length(block, &mut i, usize::from(token & 15));
            found.extend(end - 2.min(end)..i.min(block.len()));
        }
        found
    }

    #[test]
    fn damage_is_located_at_or_before_it_unless_the_compressor_writes_it_too() {
        // A flipped literal byte is written back as it is (nothing tells it
        // from the original), so only tokens, lengths and offsets are flipped
        // here. Each flip is either located at or before the first wrong
        // byte, or the compressor, given the wrong bytes, writes the damaged
        // sequence exactly as it is: a match made longer (then the next
        // sequence differs) or a unique run of bytes copied whole from the
        // wrong place (frequent in this test's random payloads; the caller
        // then relies on where the damage shows).
        let data = session();
        let data = data.as_bytes();
        let mut rng = fastrand::Rng::with_seed(9);
        let (mut flips, mut located, mut next, mut written_too, mut unknown) = (0, 0, 0, 0, 0);
        for block in [
            lz4::block::compress(data, None, false).unwrap(),
            lz4_flex::block::compress(data),
        ] {
            let not_literal = not_literal(&block);
            for _ in 0..250 {
                let at = not_literal[rng.usize(..not_literal.len())];
                let mut bad = block.clone();
                bad[at] ^= 1 << rng.u32(0..8);
                let decoded = super::super::lz4::decode_prefix(&bad, data.len(), 0).out;
                let Some(wrong) = decoded.iter().zip(data).position(|(a, b)| a != b) else {
                    continue;
                };
                flips += 1;
                let Some(written) = compare(&bad, &decoded, wrong.max(1)) else {
                    eprintln!("flip at {at}: first wrong byte {wrong}, no compressor agrees");
                    unknown += 1;
                    continue;
                };
                if written.first_unwritten() <= wrong {
                    located += 1;
                    continue;
                }
                let damaged = written
                    .sequences
                    .iter()
                    .position(|s| s.out + s.literals + s.len > wrong)
                    .unwrap();
                assert!(
                    written.same[damaged],
                    "flip at {at}: first wrong byte {wrong}, located at {}",
                    written.first_unwritten()
                );
                if written.same.get(damaged + 1) == Some(&false) {
                    next += 1;
                } else {
                    written_too += 1;
                }
            }
        }
        eprintln!(
            "of {flips} flips, {located} located, {next} one sequence later, {written_too} written \
             the same by the compressor, {unknown} with no compressor agreeing"
        );
        assert!(flips > 400, "{flips}");
        // Seen: 1% of flips, all in the first 2% of the block, where a few
        // hundred sequences decide the agreement.
        assert!(unknown * 100 <= flips * 2, "{unknown} of {flips}");
        assert!(
            (located + next) * 100 >= flips * 60,
            "{located} + {next} of {flips}"
        );
        assert!(next > 0 && written_too > 0);
    }

    #[test]
    fn copies_are_traced_back_to_the_matches_that_wrote_them() {
        let data = session();
        let data = data.as_bytes();
        let block = lz4::block::compress(data, None, false).unwrap();
        let written = compare(&block, data, data.len()).unwrap();
        let mut traced = 0;
        for s in written.sequences.iter().filter(|s| s.len > 0).step_by(37) {
            let copy = s.out + s.literals;
            let ranges = [copy..copy + s.len, copy..copy];
            let found = written.copied_into(&ranges, 0, 1000);
            // The match itself, then only sequences before it, each of whose
            // matches wrote bytes it copied (its source, or that one's).
            assert!(found.contains(&(s.input, s.out)));
            assert!(found.iter().all(|&(_, out)| out <= s.out));
            let from = copy - usize::from(s.offset);
            let source = written.sequences.iter().find(|t| {
                let c = t.out + t.literals;
                t.len > 0 && c < from + s.len && from < c + t.len && c + t.len <= copy
            });
            if let Some(t) = source {
                assert!(found.contains(&(t.input, t.out)));
                traced += 1;
            }
            // Nothing before `not_before`, and at most `max`.
            assert!(written.copied_into(&ranges, copy + 1, 1000).is_empty());
            assert_eq!(written.copied_into(&ranges, 0, 1).len(), 1);
        }
        assert!(traced > 10, "{traced}");
    }

    #[test]
    fn another_compressors_block_is_not_trusted() {
        // High compression writes other sequences: neither compressor agrees.
        let data = session();
        let block = lz4::block::compress(
            data.as_bytes(),
            Some(lz4::block::CompressionMode::HIGHCOMPRESSION(9)),
            false,
        )
        .unwrap();
        assert_eq!(
            compare(&block, data.as_bytes(), data.len()).map(|w| w.first_unwritten()),
            None
        );
    }
}
