//! A position in a session's JSON, read one value at a time by the fast
//! paths' walks (`parallel.rs`, `streamed.rs`).
//!
//! Over a document that is still being decoded ([`Growing`]), each step
//! runs on the text ready so far; a step that fails, or ends at the very
//! edge of that text (a number cut there would still read as a number), is
//! run again once more is ready (at least twice what it had, so that a long
//! value is read only a few times). So a step accepts only bytes it has seen
//! followed by more: what it reads is what the whole document holds there.
//! Once the text is whole, steps run once, as over any other text.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

use super::de;
use super::growing::Growing;
use super::parallel::GiveUp;
use super::skim::{self, is_space};
use super::Tab;

type Result<T> = std::result::Result<T, GiveUp>;

/// A position in the document, over the validated piece of it this thread has.
pub(super) struct Cursor<'a> {
    pub(super) text: &'a str,
    /// Offset of `text` in the document.
    pub(super) base: usize,
    /// Offset in the document.
    pub(super) pos: usize,
    /// The document `text` is the ready front of, while it is not whole
    /// (`text` then starts at the document's start).
    pub(super) grow: Option<&'a Growing<'a>>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`, which is at `base` in the document.
    pub(super) fn new(text: &'a str, base: usize) -> Self {
        Cursor {
            text,
            base,
            pos: base,
            grow: None,
        }
    }

    /// A cursor at the start of the document `grow` is writing.
    pub(super) fn growing(grow: &'a Growing<'a>) -> Result<Self> {
        let (text, whole) = grow.text().ok_or(GiveUp)?;
        let mut cursor = Cursor::new(text, 0);
        if !whole {
            cursor.grow = Some(grow);
        }
        Ok(cursor)
    }

    pub(super) fn rest(&self) -> &'a str {
        &self.text[self.pos - self.base..]
    }

    /// What follows the cursor up to the end of the document (waiting for
    /// all of it).
    pub(super) fn rest_of_all(&mut self) -> Result<&'a str> {
        if let Some(grow) = self.grow.take() {
            let (text, _) = grow.more(grow.len()).ok_or(GiveUp)?;
            self.text = text;
        }
        Ok(self.rest())
    }

    /// Run `op` at the cursor: once, or over a document still arriving
    /// until what it read is followed by more (module documentation).
    #[inline]
    fn step<T>(&mut self, op: impl Fn(&mut Self) -> Result<T>) -> Result<T> {
        if self.grow.is_none() {
            return op(self);
        }
        self.step_growing(op)
    }

    fn step_growing<T>(&mut self, op: impl Fn(&mut Self) -> Result<T>) -> Result<T> {
        loop {
            let start = self.pos;
            let result = op(self);
            let Some(grow) = self.grow else {
                return result;
            };
            if result.is_ok() && self.pos < self.base + self.text.len() {
                return result;
            }
            self.pos = start;
            // Wait for at least twice what the step had, so that a long
            // value is read again only a few times, not at every step of
            // the writer.
            let had = self.base + self.text.len() - start;
            let (text, whole) = grow.more(self.text.len() + had).ok_or(GiveUp)?;
            self.text = text;
            if whole {
                self.grow = None;
            }
        }
    }

    /// Skip whitespace and return the next byte.
    pub(super) fn peek(&mut self) -> Result<u8> {
        self.step(Self::peek_now)
    }

    fn peek_now(&mut self) -> Result<u8> {
        let rest = self.rest().as_bytes();
        let n = rest.iter().position(|&b| !is_space(b)).ok_or(GiveUp)?;
        self.pos += n;
        Ok(rest[n])
    }

    fn eat(&mut self, byte: u8) -> Result<()> {
        if self.peek_now()? != byte {
            return Err(GiveUp);
        }
        self.pos += 1;
        Ok(())
    }

    /// One JSON value read by serde_json, borrowing from the document.
    pub(super) fn value<T: Deserialize<'a>>(&mut self) -> Result<T> {
        self.step(Self::value_now)
    }

    fn value_now<T: Deserialize<'a>>(&mut self) -> Result<T> {
        let mut values = serde_json::Deserializer::from_str(self.rest()).into_iter::<T>();
        match values.next() {
            Some(Ok(value)) => {
                self.pos += values.byte_offset();
                Ok(value)
            }
            _ => Err(GiveUp),
        }
    }

    /// One tab object: read by [`skim`] where it can, else by serde_json
    /// (the same result either way).
    pub(super) fn tab(&mut self) -> Result<Tab<'a>> {
        self.step(|c| {
            if let Some((tab, len)) = skim::tab(c.rest()) {
                c.pos += len;
                return Ok(tab);
            }
            c.value_now()
        })
    }

    /// An object key and its `:`.
    pub(super) fn key(&mut self) -> Result<Cow<'a, str>> {
        self.step(|c| {
            let Key(key) = c.value_now()?;
            c.eat(b':')?;
            Ok(key)
        })
    }

    /// Open an object or array with `open`: true if a first key or element
    /// follows, false if `close` comes at once.
    pub(super) fn open(&mut self, open: u8, close: u8) -> Result<bool> {
        self.step(|c| {
            c.eat(open)?;
            if c.peek_now()? == close {
                c.pos += 1;
                return Ok(false);
            }
            Ok(true)
        })
    }

    /// After a value in an object or array: true if another follows (`,`),
    /// false at `close`.
    pub(super) fn more(&mut self, close: u8) -> Result<bool> {
        self.step(|c| match c.peek_now()? {
            b',' => {
                c.pos += 1;
                Ok(true)
            }
            b if b == close => {
                c.pos += 1;
                Ok(false)
            }
            _ => Err(GiveUp),
        })
    }
}

/// An object key, borrowed unless escaped.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match de::opt_str(d)? {
            Some(key) => Ok(Key(key)),
            None => Err(serde::de::Error::custom("null is not an object key")),
        }
    }
}
