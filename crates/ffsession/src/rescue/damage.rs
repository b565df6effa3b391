//! Where a damaged file stops being trusted: decoding as far as it goes,
//! where UTF-8 and JSON first go wrong, and the margin kept before that.

use serde::de::IgnoredAny;

use super::{cut, locate, lz4, repair, Damage};
use crate::error::FormatError;
use crate::format::{self, Format, MOZLZ4_HEADER_LEN, MOZLZ4_MAGIC};

/// The most one byte of LZ4 data can expand to, as in `format.rs`.
const LZ4_MAX_EXPANSION: usize = 255;

/// How much LZ4 data before the damaged sequence is distrusted when it is
/// known: one flipped bit in it repairs the block (`repair.rs`), or the first
/// wrong byte is a literal wrong on its own.
const LOCAL_MARGIN: usize = 128;

/// The same when the damage shows in bytes the compressor writes the same (a
/// wrong byte copied from further back, a flipped literal), or the file's
/// compressor is not known: the damage may lie some way before.
const WIDE_MARGIN: usize = 2048;

/// How far before the point where damage shows the data compressed again may
/// place its start, in bytes of JSON: a file written by a compressor close
/// to, but not the same as, the two compared could otherwise lose far more
/// than it has to. Seen: wrong bytes began at most 132 KB before the point
/// where they showed.
const LOCATE_REACH: usize = 256 * 1024;

/// The same margin for plain JSON, where a flipped byte spoils only its own
/// value: it shows at the latest just after the string or token it is in.
const JSON_MARGIN: usize = 64;

/// A file's session data decoded as far as it goes.
pub(super) struct Decoded<'a> {
    pub(super) format: Format,
    pub(super) json: std::borrow::Cow<'a, [u8]>,
    /// Damage found while decoding (LZ4 or size header).
    pub(super) damage: Option<Damage>,
    /// The LZ4 block and the decoding limit, to map JSON offsets back to file
    /// offsets (mozlz4 only).
    pub(super) block: Option<(&'a [u8], usize)>,
    pub(super) json_expected: Option<u64>,
}

impl Decoded<'_> {
    /// A damage report for JSON offset `at`.
    pub(super) fn damage_at(&self, at: u64, reason: String, file_size: u64) -> Damage {
        let file_offset = match self.block {
            Some((block, limit)) => {
                (MOZLZ4_HEADER_LEN + lz4::input_offset_of(block, limit, at as usize)) as u64
            }
            None => at,
        };
        Damage {
            file_offset,
            file_percent: percent(file_offset, file_size),
            json_offset: at,
            json_expected: self.json_expected,
            json_percent: percent(at, self.json_expected.unwrap_or(file_size)),
            kept_json_bytes: at,
            reason,
            truncation: false,
        }
    }
}

pub(super) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 * 1000.0 / whole as f64).round() / 10.0
}

/// Decode the container as far as it is valid.
pub(super) fn decode(bytes: &[u8]) -> Result<Decoded<'_>, FormatError> {
    if !bytes.starts_with(MOZLZ4_MAGIC) {
        // Plain JSON (or not a session at all: `json_text` decides).
        if bytes.starts_with(b"mozLz4") || MOZLZ4_MAGIC.starts_with(bytes) {
            return Err(format::detect(bytes)
                .err()
                .unwrap_or(FormatError::UnknownFormat));
        }
        return Ok(Decoded {
            format: Format::Json,
            json: std::borrow::Cow::Borrowed(bytes),
            damage: None,
            block: None,
            json_expected: None,
        });
    }
    if bytes.len() < MOZLZ4_HEADER_LEN {
        return Err(FormatError::TruncatedHeader { len: bytes.len() });
    }
    let claimed = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
    let block = &bytes[MOZLZ4_HEADER_LEN..];
    let cap = block
        .len()
        .saturating_mul(LZ4_MAX_EXPANSION)
        .saturating_add(16);
    // A plausible header bounds the output; a damaged one does not stop us
    // reading what the data holds.
    let limit = if claimed <= cap { claimed } else { cap };
    let mut prefix = lz4::decode_prefix(block, limit, limit.min(claimed));
    let file_size = bytes.len() as u64;
    // Whether the block stops because the input ran out (and where), and
    // whether the decoded data is then all the original's (`truncated`).
    let ran_out = match (&prefix.stop, prefix.out.len() == claimed) {
        (Some(stop), _) => stop
            .reason
            .input_ran_out()
            .then_some(stop.input == block.len()),
        (None, false) => (prefix.out.len() < claimed).then_some(true),
        (None, true) => None,
    };
    let truncation = ran_out.is_some_and(|at_end| truncated(block, &mut prefix.out, limit, at_end));
    let damage = match (&prefix.stop, prefix.out.len() == claimed) {
        (Some(stop), _) => {
            let file_offset = (MOZLZ4_HEADER_LEN + stop.input) as u64;
            Some(Damage {
                file_offset,
                file_percent: percent(file_offset, file_size),
                json_offset: prefix.out.len() as u64,
                json_expected: Some(claimed as u64),
                json_percent: percent(prefix.out.len() as u64, claimed as u64),
                kept_json_bytes: prefix.out.len() as u64,
                reason: format!("damaged LZ4 data: {}", stop.reason),
                truncation,
            })
        }
        (None, false) => Some(Damage {
            file_offset: file_size,
            file_percent: 100.0,
            json_offset: prefix.out.len() as u64,
            json_expected: Some(claimed as u64),
            json_percent: percent(prefix.out.len() as u64, claimed as u64),
            kept_json_bytes: prefix.out.len() as u64,
            reason: format!(
                "the size header says {claimed} bytes but the LZ4 data holds {}",
                prefix.out.len()
            ),
            truncation,
        }),
        (None, true) => None,
    };
    Ok(Decoded {
        format: Format::Mozlz4,
        json: std::borrow::Cow::Owned(prefix.out),
        damage,
        block: Some((block, limit)),
        json_expected: Some(claimed as u64),
    })
}

/// Whether a block that stops because the input ran out is a clean cut: all
/// it decodes to (`decoded`) is then the original's, and nothing before the
/// end is distrusted. So it is when a compressor writes it again as it is
/// (`cut.rs`): the input simply ended. When the compressor
/// that wrote it writes it differently, it is damaged before the end. When
/// neither compressor agrees with it (a file another compressor wrote),
/// nothing tells, and a block that stops at the very end of the input
/// (`stop_at_end`: in literals or after a match) counts as cut, as it always
/// did; one that stops in a length or a match offset does not.
fn truncated(block: &[u8], decoded: &mut Vec<u8>, size: usize, stop_at_end: bool) -> bool {
    match cut::written_again(block, decoded, size) {
        cut::Cut::Written => true,
        cut::Cut::Differs => false,
        cut::Cut::Unknown => stop_at_end,
    }
}

/// The JSON text of the decoded data: from its first `{`, past a byte-order
/// mark, white space and the `(` of old Firefox versions. Returns its offset.
pub(super) fn json_text(data: &[u8]) -> Option<(usize, &[u8])> {
    let mut start = if data.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    start += data[start..]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'('))
        .count();
    (data.get(start) == Some(&b'{')).then(|| (start, &data[start..]))
}

/// How the JSON in a text reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum JsonCheck {
    /// One valid value; whatever follows it (white space, the `)` of old
    /// Firefox versions, garbage) is not read.
    Complete,
    /// Valid as far as it goes, but the value is not closed.
    EndsEarly,
    /// Invalid at this byte offset (just past the byte serde_json stopped
    /// on), with serde_json's words.
    Invalid(usize, String),
}

/// Whether the JSON in `text` is complete, cut, or where it stops being valid.
pub(super) fn json_check(text: &[u8]) -> JsonCheck {
    let mut de = serde_json::Deserializer::from_slice(text);
    let err = match serde::Deserialize::deserialize(&mut de).map(|_: IgnoredAny| ()) {
        Ok(()) => return JsonCheck::Complete,
        Err(e) => e,
    };
    let at = offset_of(text, err.line(), err.column());
    if err.is_eof() || (at == text.len() && reads_on(text)) {
        return JsonCheck::EndsEarly;
    }
    let message = err.to_string();
    let what = message.split(" at line ").next().unwrap_or(&message);
    JsonCheck::Invalid(at, format!("invalid JSON: {what}"))
}

/// Whether `text`, invalid at its very end, reads on with one more digit: a
/// number cut after its sign, point or exponent (`-`, `1.`, `1e+`), which
/// serde_json calls invalid rather than cut.
fn reads_on(text: &[u8]) -> bool {
    let mut more = Vec::with_capacity(text.len() + 1);
    more.extend_from_slice(text);
    more.push(b'0');
    let mut de = serde_json::Deserializer::from_slice(&more);
    let read: Result<IgnoredAny, _> = serde::Deserialize::deserialize(&mut de);
    read.is_err_and(|e| e.is_eof())
}

/// The byte offset of serde_json's (1-based line, column).
fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', text)
            .nth(line - 2)
            .map_or(text.len(), |i| i + 1)
    };
    (line_start + column).min(text.len())
}

/// How many bytes of the JSON text (which starts at `text_start` of the
/// decoded data) to trust, given that it reads as valid up to `valid` and
/// then shows damage that is not a clean cut; `byte_level` when the first
/// wrong byte is wrong on its own (invalid UTF-8, a control character).
pub(super) fn trusted_len(
    decoded: &Decoded<'_>,
    text_start: usize,
    valid: usize,
    byte_level: bool,
) -> usize {
    match decoded.block {
        Some((block, limit)) => {
            // Compressed again, the data shows where the damage starts
            // when that is before the point where it shows (`locate.rs`),
            // and a repair tells whether it is the damage itself
            // (`repair.rs`).
            let mut shows = text_start + valid;
            let mut margin = WIDE_MARGIN;
            if let Some(written) = locate::compare(block, &decoded.json, shows) {
                let first = written.first_unwritten();
                let starts = first.max(shows.saturating_sub(LOCATE_REACH));
                let repaired = repair::earliest_repair(
                    block,
                    limit,
                    &decoded.json,
                    text_start,
                    &repair::candidates(&written, shows, shows.saturating_sub(LOCATE_REACH)),
                    shows,
                );
                if let Some(at) = repaired {
                    margin = LOCAL_MARGIN;
                    shows = at;
                } else {
                    if byte_level
                        && written
                            .start_before_literal(shows)
                            .is_some_and(|p| starts >= p)
                    {
                        // A byte wrong on its own, written as a literal: the
                        // damage is in its sequence or the one before (a copy
                        // that ended inside a character), unless the data
                        // compressed again places it earlier.
                        margin = LOCAL_MARGIN;
                    }
                    shows = shows.min(starts);
                }
            }
            let at = lz4::input_offset_of(block, limit, shows);
            let safe = lz4::output_before(block, limit, at.saturating_sub(margin));
            safe.saturating_sub(text_start).min(valid)
        }
        None => valid.saturating_sub(JSON_MARGIN),
    }
}
