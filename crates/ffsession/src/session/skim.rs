//! A quick reader of one tab object, for the walks over a
//! [`Cursor`](super::parallel::Cursor) (the fast attempt on one thread, the
//! two-thread parse, `info` and `tabs --format urls` a piece at a time).
//!
//! serde_json reads a tab as the derived `Deserialize` of [`Tab`] asks: each
//! key is parsed and matched through the field visitor, each value goes
//! through a visitor, and each field the model ignores (most of a tab's
//! fields: a history entry's ids, UUIDs, principals, form data, storage) is
//! walked token by token through serde's `IgnoredAny`. That walk is most of
//! the time a large read spends after decompressing.
//!
//! Here the same object is read byte by byte with no visitors: keys are
//! compared as bytes, the common shapes of the fields the model keeps (a
//! string without escapes, an integer, `true`, `null`) are read at once, and
//! other fields are skipped by a small JSON checker that scans strings eight
//! bytes at a time. The result is the same as serde's, or none:
//! - a value this reader does not take at once (an escaped string, a number
//!   written as a string or a float, a history entry that is not an object)
//!   is read by serde_json with the model's own reader for that field, from
//!   the value's first byte; so is an ignored value the checker does not
//!   accept;
//! - a key with an escape, a field given twice, or anything out of place in
//!   the object itself: the whole tab goes to serde_json
//!   ([`Cursor::tab`](super::parallel::Cursor::tab)).
//!
//! So every byte this reader accepts, serde_json accepts too, with the same
//! meaning. The `tab` fuzz target and the tests hold it to serde_json's
//! result on the same text.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

#[cfg(any(fuzzing, debug_assertions))]
use super::de;
use serde_json::value::RawValue;

use super::de::{Blob, BoolOrNull, List, OptId, OptStr, OptU64, Skipped};
use super::{Entry, Tab};
use crate::forks;

/// Read the tab object that `text` starts with (after any whitespace): the
/// tab and the length of text it took, or `None` where serde_json must read
/// it (see the module documentation). Only for fast attempts
/// (`de::fast_attempt`), whose way of skipping unused strings it follows.
pub(super) fn tab(text: &str) -> Option<(Tab<'_>, usize)> {
    let mut skim = Skim { text, pos: 0 };
    let tab = skim.tab()?;
    Some((tab, skim.pos))
}

/// For fuzzing and tests: panic if this reader reads a tab from the start
/// of `text` where serde_json, in a fast attempt, reads another tab, takes
/// other bytes, or fails. True if this reader read one.
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub fn assert_matches_serde(text: &str) -> bool {
    let (skimmed, by_serde) = de::fast_attempt(|| {
        let skimmed = tab(text).map(|(tab, len)| (format!("{tab:?}"), len));
        let mut values = serde_json::Deserializer::from_str(text).into_iter::<Tab>();
        let by_serde = match values.next() {
            Some(Ok(tab)) => Some((format!("{tab:?}"), values.byte_offset())),
            _ => None,
        };
        (skimmed, by_serde)
    });
    if let Some(skimmed) = &skimmed {
        assert_eq!(
            by_serde.as_ref(),
            Some(skimmed),
            "the quick tab reader disagrees with serde_json on {text:?}"
        );
    }
    skimmed.is_some()
}

/// Nesting this reader follows in an ignored value before it leaves the
/// value to serde_json.
const MAX_DEPTH: u32 = 32;

/// JSON's whitespace (not form feed, unlike `u8::is_ascii_whitespace`).
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// A position in the text.
struct Skim<'a> {
    text: &'a str,
    pos: usize,
}

/// Bits for the fields of a tab, and of a history entry, already read.
mod seen {
    pub(super) const ENTRIES: u16 = 1;
    pub(super) const INDEX: u16 = 1 << 1;
    pub(super) const PINNED: u16 = 1 << 2;
    pub(super) const HIDDEN: u16 = 1 << 3;
    pub(super) const GROUP_ID: u16 = 1 << 4;
    pub(super) const USER_CONTEXT_ID: u16 = 1 << 5;
    pub(super) const LAST_ACCESSED: u16 = 1 << 6;
    pub(super) const USER_TYPED_VALUE: u16 = 1 << 7;
    pub(super) const IMAGE: u16 = 1 << 8;
    pub(super) const URL: u16 = 1;
    pub(super) const TITLE: u16 = 1 << 1;
    pub(super) const CSP: u16 = 1 << 2;
    pub(super) const REFERRER_INFO: u16 = 1 << 3;
    pub(super) const CLONE_STATE: u16 = 1 << 4;
}

impl<'a> Skim<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Skip whitespace and return the next byte.
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        loop {
            let b = *bytes.get(self.pos)?;
            if !is_space(b) {
                return Some(b);
            }
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        if self.peek()? != byte {
            return None;
        }
        self.pos += 1;
        Some(())
    }

    /// Whether the text at the position starts with `word`; if so, step over it.
    fn word(&mut self, word: &[u8]) -> bool {
        let found = self.bytes()[self.pos..].starts_with(word);
        if found {
            self.pos += word.len();
        }
        found
    }

    /// The value here, read by serde_json as `T` (one of the model's field
    /// readers), borrowing from the text.
    fn serde<T: Deserialize<'a>>(&mut self) -> Option<T> {
        let mut values = serde_json::Deserializer::from_str(&self.text[self.pos..]).into_iter();
        let value = values.next()?.ok()?;
        self.pos += values.byte_offset();
        Some(value)
    }

    /// The string at `"` when it has no escape and no control character:
    /// its text, with the position past its closing quote.
    fn plain_str(&mut self) -> Option<&'a str> {
        let start = self.pos + 1;
        let end = string_end(self.bytes(), start);
        if self.bytes().get(end) != Some(&b'"') {
            return None;
        }
        self.pos = end + 1;
        Some(&self.text[start..end])
    }

    /// An object key without escapes, and its `:`.
    fn key(&mut self) -> Option<&'a [u8]> {
        if self.peek()? != b'"' {
            return None;
        }
        let key = self.plain_str()?;
        self.eat(b':')?;
        Some(key.as_bytes())
    }

    /// After a field: true if another follows, false at the `}`.
    fn more_fields(&mut self) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Some(true)
            }
            b'}' => {
                self.pos += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// `{` and whether a field follows.
    fn open_object(&mut self) -> Option<bool> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(false);
        }
        Some(true)
    }

    /// A tab object.
    fn tab(&mut self) -> Option<Tab<'a>> {
        let mut tab = Tab::default();
        let mut seen = 0u16;
        let mut more = self.open_object()?;
        while more {
            let bit = match self.key()? {
                b"entries" => {
                    tab.entries = self.entries()?;
                    seen::ENTRIES
                }
                b"index" => {
                    tab.index = self.opt_u64()?;
                    seen::INDEX
                }
                b"pinned" => {
                    tab.pinned = self.bool_or_null()?;
                    seen::PINNED
                }
                b"hidden" => {
                    tab.hidden = self.bool_or_null()?;
                    seen::HIDDEN
                }
                b"groupId" => {
                    tab.group_id = self.opt_id()?;
                    seen::GROUP_ID
                }
                b"userContextId" => {
                    tab.user_context_id = self.opt_u64()?;
                    seen::USER_CONTEXT_ID
                }
                b"lastAccessed" => {
                    tab.last_accessed = self.opt_u64()?;
                    seen::LAST_ACCESSED
                }
                b"userTypedValue" => {
                    tab.user_typed_value = self.opt_str()?;
                    seen::USER_TYPED_VALUE
                }
                b"image" => {
                    self.blob()?;
                    seen::IMAGE
                }
                key => {
                    if let Some(key) = forks::find(forks::TAB_KEYS, key) {
                        // A fork's key: its raw value, as serde_json takes it.
                        let raw = self.serde::<&RawValue>()?;
                        tab.forks.insert::<serde_json::Error>(key, raw.get()).ok()?;
                    } else {
                        self.ignored()?;
                    }
                    0
                }
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            more = self.more_fields()?;
        }
        Some(tab)
    }

    /// A tab's `entries`.
    fn entries(&mut self) -> Option<Vec<Entry<'a>>> {
        let start = self.pos;
        self.entry_array().or_else(|| {
            self.pos = start;
            Some(self.serde::<List<Entry>>()?.0)
        })
    }

    /// `entries` as an array of entry objects, without the fallback.
    fn entry_array(&mut self) -> Option<Vec<Entry<'a>>> {
        let mut entries = Vec::new();
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(entries);
        }
        loop {
            entries.push(self.entry()?);
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(entries);
                }
                _ => return None,
            }
        }
    }

    /// One history entry object.
    fn entry(&mut self) -> Option<Entry<'a>> {
        let mut entry = Entry {
            url: None,
            title: None,
            csp: Skipped,
            referrer_info: Skipped,
            structured_clone_state: Skipped,
        };
        let mut seen = 0u16;
        let mut more = self.open_object()?;
        while more {
            let bit = match self.key()? {
                b"url" => {
                    entry.url = self.opt_str()?;
                    seen::URL
                }
                b"title" => {
                    entry.title = self.opt_str()?;
                    seen::TITLE
                }
                b"csp" => {
                    self.blob()?;
                    seen::CSP
                }
                b"referrerInfo" => {
                    self.blob()?;
                    seen::REFERRER_INFO
                }
                b"structuredCloneState" => {
                    self.blob()?;
                    seen::CLONE_STATE
                }
                _ => {
                    self.ignored()?;
                    0
                }
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            more = self.more_fields()?;
        }
        Some(entry)
    }

    /// `de::opt_u64`: a small non-negative integer at once, `null`, or serde_json.
    fn opt_u64(&mut self) -> Option<Option<u64>> {
        match self.peek()? {
            b'0'..=b'9' => {
                let start = self.pos;
                if let Some(n) = self.small_integer() {
                    return Some(Some(n));
                }
                self.pos = start;
            }
            b'n' if self.word(b"null") => return Some(None),
            _ => {}
        }
        Some(self.serde::<OptU64>()?.0)
    }

    /// An integer of at most 15 digits, exact as the `f64` `de::opt_u64`
    /// goes through; `None` for anything longer, a fraction or an exponent.
    fn small_integer(&mut self) -> Option<u64> {
        let bytes = &self.bytes()[self.pos..];
        let digits = bytes
            .iter()
            .take(16)
            .take_while(|b| b.is_ascii_digit())
            .count();
        let after = bytes.get(digits).copied();
        let leading_zero = digits > 1 && bytes[0] == b'0';
        if digits > 15 || leading_zero || matches!(after, Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let n = bytes[..digits]
            .iter()
            .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
        self.pos += digits;
        Some(n)
    }

    /// `de::bool_or_null`: `true`, `false` or `null` at once, or serde_json.
    fn bool_or_null(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' if self.word(b"true") => Some(true),
            b'f' if self.word(b"false") => Some(false),
            b'n' if self.word(b"null") => Some(false),
            _ => Some(self.serde::<BoolOrNull>()?.0),
        }
    }

    /// `de::opt_str`: a string without escapes at once, `null`, or serde_json.
    fn opt_str(&mut self) -> Option<Option<Cow<'a, str>>> {
        self.string_field(None, |s| Some(Cow::Borrowed(s)), |v: OptStr| v.0)
    }

    /// `de::opt_id`: as [`Skim::opt_str`], numbers by serde_json.
    fn opt_id(&mut self) -> Option<Option<Cow<'a, str>>> {
        self.string_field(None, |s| Some(Cow::Borrowed(s)), |v: OptId| v.0)
    }

    /// `de::unused_blob` in a fast attempt: a string without escapes or
    /// control characters, or `null`, at once; anything else by serde_json.
    fn blob(&mut self) -> Option<()> {
        self.string_field((), drop, |_: Blob| ())
    }

    /// A field whose usual value is a string: one without escapes or
    /// control characters is given to `plain`, `null` is `null`, and any
    /// other value is read by serde_json as `T` and given to `other`.
    fn string_field<T: Deserialize<'a>, V>(
        &mut self,
        null: V,
        plain: impl FnOnce(&'a str) -> V,
        other: impl FnOnce(T) -> V,
    ) -> Option<V> {
        match self.peek()? {
            b'"' => {
                let start = self.pos;
                if let Some(s) = self.plain_str() {
                    return Some(plain(s));
                }
                self.pos = start;
            }
            b'n' if self.word(b"null") => return Some(null),
            _ => {}
        }
        self.serde::<T>().map(other)
    }

    /// A field the model does not read: checked and skipped here, or by
    /// serde_json (`IgnoredAny`) if this checker does not accept it.
    fn ignored(&mut self) -> Option<()> {
        let start = self.pos;
        if self.skip_value(0).is_none() {
            self.pos = start;
            self.serde::<IgnoredAny>()?;
        }
        Some(())
    }

    /// Skip one JSON value, accepting only what serde_json's `ignore_value`
    /// accepts.
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_str(),
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                if !self.open_object()? {
                    return Some(());
                }
                loop {
                    if self.peek()? != b'"' {
                        return None;
                    }
                    self.skip_str()?;
                    self.eat(b':')?;
                    self.skip_value(depth + 1)?;
                    if !self.more_fields()? {
                        return Some(());
                    }
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.pos += 1;
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Some(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b']' => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.word(b"true").then_some(()),
            b'f' => self.word(b"false").then_some(()),
            b'n' => self.word(b"null").then_some(()),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    /// A string at `"`, escapes checked as serde_json's `ignore_str` checks
    /// them (`\u` and four hex digits, whatever they encode).
    fn skip_str(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let mut i = self.pos + 1;
        loop {
            i = string_end(bytes, i);
            match *bytes.get(i)? {
                b'"' => {
                    self.pos = i + 1;
                    return Some(());
                }
                b'\\' => match *bytes.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' if bytes.get(i + 2..i + 6)?.iter().all(u8::is_ascii_hexdigit) => i += 6,
                    _ => return None,
                },
                // A control character.
                _ => return None,
            }
        }
    }

    /// A number as JSON writes it (serde_json's `ignore_integer`).
    fn skip_number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let digits = |i: usize| bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let mut i = self.pos + usize::from(bytes[self.pos] == b'-');
        match *bytes.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => i += digits(i),
            _ => return None,
        }
        if bytes.get(i) == Some(&b'.') {
            let n = digits(i + 1);
            if n == 0 {
                return None;
            }
            i += 1 + n;
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let n = digits(i);
            if n == 0 {
                return None;
            }
            i += n;
        }
        self.pos = i;
        Some(())
    }
}

/// The index of the first `"`, `\` or control character in `bytes` at or
/// after `i` (or the length). The first 16 bytes are looked at eight at a
/// time, as serde_json does: most strings of a tab (keys, ids, numbers of
/// history) end there. Past them, a long string (a favicon, base64) is
/// searched with memchr's vector code for the quote and the backslash, and
/// the bytes before that checked for control characters with a minimum,
/// which the compiler turns into vector instructions as well.
fn string_end(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    for _ in 0..2 {
        let Some(Ok(chunk)) = bytes.get(i..i + 8).map(<[u8; 8]>::try_from) else {
            break;
        };
        let word = u64::from_le_bytes(chunk);
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // A byte's high bit: it is 0 (the lowest set is exact), or below 0x20.
        let found = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word);
        let found = found & HIGH;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let rest = &bytes[i.min(bytes.len())..];
    let n = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    let text = &rest[..n];
    if text.iter().fold(u8::MAX, |low, &b| low.min(b)) < 0x20 {
        return i + text.iter().position(|&b| b < 0x20).unwrap_or(n);
    }
    i + n
}

#[cfg(test)]
mod tests;
