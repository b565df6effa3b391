//! Finding the damaged sequence by repairing it.
//!
//! The first sequence the compressor would write otherwise (`locate.rs`) is
//! the damaged one, or the one just after it, unless the damage was a copy
//! the compressor would make itself: a flipped match offset that copied a run
//! of bytes from the wrong place. Then later matches copying from that run
//! copy its wrong bytes too, and the first sequence the compressor writes
//! otherwise, or the point where the JSON breaks, is one of those, up to
//! tens of kilobytes after the damage. Trusting the bytes just before it
//! would keep the wrong ones (seen: URLs that were never in the session).
//!
//! A damaged sequence can be repaired; a sequence that only copies wrong
//! bytes has nothing to flip back. So the candidates are the located
//! sequence, the one before it, and the sequences the wrong bytes there and
//! where the damage showed were copied from, back along the copies. Each bit
//! of each candidate's header (token, lengths, match offset) is flipped in
//! turn and the block decoded from there. A flip repairs the block when the
//! data reads as JSON far past the point where the damage showed, and the
//! compressor that wrote the block writes the repaired block again, sequence
//! for sequence (valid JSON alone is not enough: in a small file, a second
//! flip that hides where a wrong copy stopped reading as JSON gives valid
//! JSON to the end). The earliest candidate a flip repairs is where the
//! damage is. Nothing repaired is ever kept: this only decides how much of
//! the data before the damage to trust.

use serde::de::IgnoredAny;

use super::locate::{self, Written};
use super::lz4::{self, length};

/// How far past the point where the damage showed a repaired block must read
/// as JSON (or to its end, if that comes first).
const CHECK_PAST: usize = 64 * 1024;

/// The same for a first, short check.
const QUICK_CHECK: usize = 1024;

/// How many sequences the wrong bytes may have been copied from are tried.
const MAX_COPIED_FROM: usize = 64;

/// How many bytes all the tries together may decode and read as JSON before
/// the search gives up (and rescue keeps its wide margin): a bound for
/// crafted files. Seen: under 10 MB for a flip in a 40 MB session.
const WORK: usize = 1 << 30;

/// How far before the point where the damage showed the sequences its bytes
/// were copied from are looked for: LZ4 copies from at most 64 KB back, and
/// wrong bytes were seen to show up to 45 KB after the damage.
const COPY_REACH: usize = 64 * 1024;

/// A sequence where the damage may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Candidate {
    /// Where it starts in the block.
    input: usize,
    /// Where its output starts.
    out: usize,
    /// Whether to flip its token and lengths too, or only its match offset
    /// (a sequence wrong bytes were copied from: a wrong length shifts all
    /// that follows and shows at once).
    whole: bool,
}

/// The sequences where the damage may be, in order: the first one the
/// compressor would write otherwise and the one before (unless that is
/// before `not_before`, or after `shows`, where the damage showed: then the
/// one holding `shows` and the one before), and those the bytes there and at
/// `shows` may have been copied from.
pub(super) fn candidates(written: &Written, shows: usize, not_before: usize) -> Vec<Candidate> {
    let mut found = Vec::new();
    // The bytes where the damage showed and a few before (a string cut short).
    let mut wrong = Vec::with_capacity(2);
    wrong.push(shows.saturating_sub(16)..shows + 1);
    let first = written.first_unwritten();
    // The located sequence and the one before; or, when the compressor
    // writes everything up to the point where the damage showed the same
    // (a match made longer, say), the sequence there and the one before.
    let located = if (not_before..=shows).contains(&first) {
        wrong.push(written.output_of(first));
        written.first_unwritten_and_before()
    } else {
        written.holding_and_before(shows)
    };
    found.extend(located.into_iter().flatten().map(|(input, out)| Candidate {
        input,
        out,
        whole: true,
    }));
    let copied = written.copied_into(
        &wrong,
        not_before.max(shows.saturating_sub(COPY_REACH)),
        MAX_COPIED_FROM,
    );
    found.extend(copied.into_iter().map(|(input, out)| Candidate {
        input,
        out,
        whole: false,
    }));
    // The damaged sequence is written the same up to it, so it is never
    // after the first one written otherwise.
    found.retain(|c| c.out <= first);
    // Sorted, and each sequence once (as a whole if so found).
    found.sort_unstable_by_key(|c| (c.input, !c.whole));
    found.dedup_by_key(|c| c.input);
    found
}

/// The earliest of `candidates` (sequences, as (offset in `block`, offset of
/// its output in `decoded`), in order) in which one flipped bit repairs the
/// block: it then decodes without error to valid JSON up to [`CHECK_PAST`]
/// bytes past `shows`, and the compressor that wrote it writes it again.
/// `decoded` is what `block` decodes to, as far as it goes (its JSON text
/// starts at `text_start`); `shows` is where in it the damage showed. Returns
/// the offset of the repaired sequence's output.
pub(super) fn earliest_repair(
    block: &[u8],
    limit: usize,
    decoded: &[u8],
    text_start: usize,
    candidates: &[Candidate],
    shows: usize,
) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    let end = limit.min(shows.saturating_add(CHECK_PAST));
    let mut patched = block.to_vec();
    let mut scanner = Scanner::default();
    // Always `decoded` up to the candidate's output, and its repair after.
    let mut scratch = Vec::with_capacity(end);
    let mut work = 0;
    for &Candidate { input, out, whole } in candidates {
        if out < text_start.max(scratch.len()) || out > decoded.len() || input >= block.len() {
            continue;
        }
        scratch.extend_from_slice(&decoded[scratch.len()..out]);
        scanner.advance(&decoded[text_start..out]);
        let Some(context) = scanner.context() else {
            continue;
        };
        for at in header_bytes(block, input, whole) {
            for bit in 0..8 {
                patched[at] ^= 1 << bit;
                let mut reads_to = |to: usize| {
                    scratch.truncate(out);
                    let decodes = match lz4::decode_from(&patched, input, to, &mut scratch) {
                        Ok(()) => scratch.len() == to,
                        // Reached `to`, or a cut file's end.
                        Err(stop) => {
                            stop.reason == lz4::Reason::PastLimit
                                || (stop.input == block.len() && scratch.len() >= decoded.len())
                        }
                    };
                    work += 2 * scratch.len() - out - (text_start + context.from);
                    // It must change something where the damage showed.
                    decodes
                        && scratch.len() > shows
                        && scratch.get(out..=shows) != decoded.get(out..=shows)
                        && context.reads_on(&scratch[text_start..])
                };
                // Most flips fail soon after: a short check first.
                let quick = end.min(shows.saturating_add(QUICK_CHECK));
                let repairs = reads_to(quick)
                    && (quick == end || reads_to(end))
                    && compressor_writes(&patched, limit, end);
                patched[at] ^= 1 << bit;
                if repairs {
                    return Some(out);
                }
                if work > WORK {
                    return None;
                }
            }
        }
        scratch.truncate(out);
    }
    None
}

/// Whether the compressor that wrote the block (`locate.rs`) writes the
/// block again, for what it decodes to, up to `end` of its
/// output at least. A repair that reads as JSON can still be wrong: in a
/// small file, a copy from the wrong place that reads as JSON, and a second
/// flip after it that hides where it stopped reading as JSON, give valid JSON
/// to the end. But the compressor would not write those two sequences.
fn compressor_writes(block: &[u8], limit: usize, end: usize) -> bool {
    let data = lz4::decode_prefix(block, limit, limit).out;
    locate::compare(block, &data, data.len())
        .is_some_and(|written| written.first_unwritten() >= end.min(data.len()))
}

/// The offsets of the header bytes of the sequence at `input`: its token,
/// literal length bytes, match offset and match length bytes (only its
/// match offset unless `whole`). Of a length's bytes (one per 255), only the
/// first two and the last two.
fn header_bytes(block: &[u8], input: usize, whole: bool) -> Vec<usize> {
    fn length_bytes(bytes: &mut Vec<usize>, from: usize, to: usize) {
        for at in from..to {
            if at < from + 2 || at + 2 >= to {
                bytes.push(at);
            }
        }
    }
    let Some(&token) = block.get(input) else {
        return Vec::new();
    };
    let mut bytes = Vec::new();
    let mut i = input + 1;
    let Some(literals) = length(block, &mut i, usize::from(token >> 4)) else {
        return bytes;
    };
    if whole {
        bytes.push(input);
        length_bytes(&mut bytes, input + 1, i);
    }
    let offset = i.saturating_add(literals);
    if offset.saturating_add(2) > block.len() {
        return bytes;
    }
    bytes.extend([offset, offset + 1]);
    if whole {
        let mut j = offset + 2;
        let _ = length(block, &mut j, usize::from(token & 15));
        length_bytes(&mut bytes, offset + 2, j.min(block.len()));
    }
    bytes
}

/// Where valid JSON text stands at some point: its open objects and arrays
/// and where the member that point is in starts, enough to read on from
/// there with serde_json.
struct Context {
    /// What makes serde_json read the text from `from` as it would read it
    /// from its start: `[` for an open array, `{"":` for an open object, and
    /// for the innermost one `[` or `{`.
    opening: Vec<u8>,
    /// Where the member the point is in starts.
    from: usize,
    /// The point.
    at: usize,
}

/// Where valid JSON text stands, read as far as [`Scanner::advance`] went.
#[derive(Default)]
struct Scanner {
    /// The objects and arrays open: opening byte, where its current member
    /// starts.
    open: Vec<(u8, usize)>,
    in_string: bool,
    escaped: bool,
    at: usize,
}

impl Scanner {
    /// Read on to the end of `text` (which holds what was read before).
    fn advance(&mut self, text: &[u8]) {
        for (i, &b) in text.iter().enumerate().skip(self.at) {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.open.push((b, i + 1)),
                b'}' | b']' => {
                    self.open.pop();
                }
                b',' => {
                    if let Some(last) = self.open.last_mut() {
                        last.1 = i + 1;
                    }
                }
                _ => {}
            }
        }
        self.at = self.at.max(text.len());
    }

    /// The context where it stands. `None` outside any object or array.
    fn context(&self) -> Option<Context> {
        let (&(innermost, from), outer) = self.open.split_last()?;
        let mut opening = Vec::with_capacity(outer.len() * 4 + 1);
        for &(b, _) in outer {
            opening.extend_from_slice(if b == b'[' { b"[" } else { b"{\"\":" });
        }
        opening.push(innermost);
        Some(Context {
            opening,
            from,
            at: self.at,
        })
    }
}

impl Context {
    /// Whether `text`, which agrees with the text this context was taken from
    /// up to its point, reads as valid JSON from there to its end (where it
    /// may be cut).
    fn reads_on(&self, text: &[u8]) -> bool {
        let rest = &text[self.at..];
        match std::str::from_utf8(rest) {
            Ok(_) => {}
            // A character cut by the end of the text.
            Err(e) if e.error_len().is_none() => {}
            Err(_) => return false,
        }
        let mut read = self.opening.clone();
        read.extend_from_slice(&text[self.from..]);
        let mut de = serde_json::Deserializer::from_slice(&read);
        match serde::Deserialize::deserialize(&mut de).map(|_: IgnoredAny| ()) {
            Ok(()) => true,
            Err(e) => e.is_eof(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::damage::JsonCheck;
    use super::*;

    /// Per sequence: offset in the block, offset of its output, offset of
    /// its match offset field.
    type Sequences = Vec<(usize, usize, usize)>;

    /// A generated session as Firefox's compressor writes it, with its
    /// sequences.
    fn block() -> (Vec<u8>, Vec<u8>, Sequences) {
        let data = ffsession_gen::generate(&ffsession_gen::Spec {
            tabs: 200,
            seed: 5,
            ..ffsession_gen::Spec::default()
        })
        .into_bytes();
        let block = ::lz4::block::compress(&data, None, false).unwrap();
        let (mut seqs, mut i, mut out) = (Vec::new(), 0, 0);
        while i < block.len() {
            let input = i;
            let token = block[i];
            i += 1;
            let literals = length(&block, &mut i, usize::from(token >> 4)).unwrap();
            i += literals;
            if i >= block.len() {
                break;
            }
            let offset_at = i;
            i += 2;
            let len = length(&block, &mut i, usize::from(token & 15)).unwrap() + 4;
            seqs.push((input, out, offset_at));
            out += literals + len;
        }
        (data, block, seqs)
    }

    #[test]
    fn a_flipped_match_offset_is_repaired_where_it_is_and_nothing_wrong_is_trusted() {
        // Matches in random payloads copy runs the compressor would copy
        // the same way from elsewhere: such damage shows late, and other
        // flips can hide it too (a repair a little after the damaged
        // sequence, or some way before it, which only costs data).
        let (data, block, seqs) = block();
        let (mut tried, mut exact, mut close) = (0, 0, 0);
        for &(_, out, offset_at) in seqs.iter().skip(50).step_by(41) {
            let mut bad = block.clone();
            bad[offset_at] ^= 1 << 2;
            let decoded = lz4::decode_prefix(&bad, data.len(), data.len()).out;
            let JsonCheck::Invalid(shows, _) = super::super::damage::json_check(&decoded) else {
                continue;
            };
            let wrong = decoded.iter().zip(&data).position(|(a, b)| a != b).unwrap();
            tried += 1;
            let written = locate::compare(&bad, &decoded, shows).unwrap();
            let found = earliest_repair(
                &bad,
                data.len(),
                &decoded,
                0,
                &candidates(&written, shows, 0),
                shows,
            );
            if found == Some(out) {
                exact += 1;
            }
            // What rescue trusts holds no wrong byte, and often ends close
            // before the damage.
            let mut file = crate::format::MOZLZ4_MAGIC.to_vec();
            file.extend_from_slice(&(data.len() as u32).to_le_bytes());
            file.extend_from_slice(&bad);
            let d = super::super::damage::decode(&file).unwrap();
            let trusted = super::super::damage::trusted_len(&d, 0, shows, false);
            assert!(
                trusted <= wrong,
                "flip at {offset_at}: trusted {trusted}, wrong {wrong}"
            );
            if trusted + 1024 >= wrong {
                close += 1;
            }
        }
        eprintln!("{tried} flips: {exact} repaired exactly, {close} trusted up to 1 KB before");
        assert!(tried >= 100, "{tried}");
        assert!(exact * 10 >= tried * 8, "{exact} of {tried}");
        // Seen: a median of 800 bytes (128 bytes of LZ4 data, and the whole
        // sequence there, long in random payloads).
        assert!(close * 2 >= tried, "{close} of {tried}");
    }

    #[test]
    fn a_context_reads_on_as_the_whole_text_would() {
        let text = br#"{"windows":[{"tabs":[{"entries":[{"url":"a,]}\"b"}],"index":1},{"entries":[]}]}],"session":{"lastUpdate":1}}"#;
        for at in 1..text.len() {
            let mut scanner = Scanner::default();
            scanner.advance(&text[..at / 2]);
            scanner.advance(&text[..at]);
            let context = scanner.context().unwrap();
            assert!(context.reads_on(text), "at {at}");
            // A wrong byte after the point is seen.
            let mut bad = text.to_vec();
            let i = (at + 3).min(text.len() - 1);
            bad[i] = b'}';
            let whole_ok = {
                let mut de = serde_json::Deserializer::from_slice(&bad);
                match serde::Deserialize::deserialize(&mut de).map(|_: IgnoredAny| ()) {
                    Ok(()) => true,
                    Err(e) => e.is_eof(),
                }
            };
            assert_eq!(context.reads_on(&bad), whole_ok, "at {at}, '}}' at {i}");
            // Cut anywhere after the point, it still reads as far as it goes.
            assert!(
                context.reads_on(&text[..(at + 7).min(text.len())]),
                "at {at}"
            );
        }
        assert!(Scanner::default().context().is_none());
    }
}
