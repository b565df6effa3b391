//! One buffer of JSON that one thread writes front to back while others read
//! what is already written: decoding a large mozlz4 file and parsing it at
//! the same time (`format/at_once.rs`), where the parsed session borrows
//! from the finished buffer, which never moves.
//!
//! The writer ([`Writer`], one only) decodes into the buffer a step at a
//! time; each step may read back into what it wrote before (an LZ4 match
//! reaches at most 64 KiB back). After each step it checks the new bytes are
//! UTF-8, up to the last whole character, and publishes how far the text is
//! ready ([`Growing::text`]). Readers see only the ready front of the
//! buffer, which is never written again; the writer writes only past it.
//! So no byte is ever written while a reference to it exists: this module's
//! `unsafe` hands out slices of disjoint parts of one allocation, made from
//! the one raw pointer to it.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// How far back an LZ4 match reaches, at most (its offset is a `u16`).
const WINDOW: usize = 1 << 16;

/// [`Growing::state`]: still being written.
const WRITING: u8 = 0;
/// [`Growing::state`]: all of it written and ready.
const WHOLE: u8 = 1;
/// [`Growing::state`]: the writer gave up (a damaged block, not UTF-8): the
/// text will never be whole.
const BROKEN: u8 = 2;

/// The buffer and how much of it is ready.
pub(crate) struct Growing<'d> {
    base: *mut u8,
    len: usize,
    /// Bytes at the front that are written, checked and never written again.
    ready: AtomicUsize,
    state: AtomicU8,
    /// Whether the writer was taken.
    writer: AtomicBool,
    /// The most text a reader has waited for (see [`Growing::waited_for`]).
    wanted: AtomicUsize,
    _buffer: PhantomData<&'d [u8]>,
}

// SAFETY: the raw pointer is the buffer's; readers only read the ready
// front (published with release ordering, read with acquire), and the one
// writer only writes past it (see the module documentation).
#[allow(unsafe_code)]
unsafe impl Send for Growing<'_> {}
#[allow(unsafe_code)]
unsafe impl Sync for Growing<'_> {}

impl<'d> Growing<'d> {
    /// The `len` bytes at `base`, to be written by [`Growing::writer`].
    ///
    /// # Safety
    /// The `len` bytes at `base` must be one allocation, valid for reads
    /// and writes for `'d`, and nothing but this value may read or write
    /// them while it lives, nor write them for `'d` (the text it hands out
    /// lives that long).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn new(base: *mut u8, len: usize) -> Self {
        Growing {
            base,
            len,
            ready: AtomicUsize::new(0),
            state: AtomicU8::new(WRITING),
            writer: AtomicBool::new(false),
            wanted: AtomicUsize::new(0),
            _buffer: PhantomData,
        }
    }

    /// The writer; `None` if it was taken already.
    pub(crate) fn writer(&self) -> Option<Writer<'_, 'd>> {
        if self.writer.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(Writer {
            growing: self,
            written: 0,
            ready: 0,
        })
    }

    /// Readers will wait for no more (for tests that write a step at a time
    /// only once a reader waits: [`Growing::waited_for`] is then always true).
    pub(crate) fn stop_waiting(&self) {
        self.wanted.store(usize::MAX, Ordering::Relaxed);
    }

    /// Whether a reader has waited for more than `ready` bytes: for tests
    /// that write a step at a time only once a reader has read all before.
    pub(crate) fn waited_for(&self, ready: usize) -> bool {
        self.wanted.load(Ordering::Relaxed) > ready
    }

    /// The length the whole text will have.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The text ready so far, and whether it is the whole; `None` if the
    /// writer gave up.
    pub(crate) fn text(&self) -> Option<(&'d str, bool)> {
        // The state first: once it says whole, `ready` is the length.
        let state = self.state.load(Ordering::Acquire);
        if state == BROKEN {
            return None;
        }
        let ready = self.ready.load(Ordering::Acquire);
        // SAFETY: the first `ready` bytes are written, checked as UTF-8 and
        // never written again (`Writer::publish` stores `ready` after
        // checking, with release ordering).
        #[allow(unsafe_code)]
        let text =
            unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.base, ready)) };
        Some((text, state == WHOLE))
    }

    /// Wait until more than `seen` bytes are ready, or the text is whole;
    /// `None` if the writer gave up.
    pub(crate) fn more(&self, seen: usize) -> Option<(&'d str, bool)> {
        self.wanted.fetch_max(seen + 1, Ordering::Relaxed);
        let mut spins = 0u32;
        loop {
            let (text, whole) = self.text()?;
            if whole || text.len() > seen {
                return Some((text, whole));
            }
            // The writer runs on another core, a step ahead (tens of
            // microseconds): wait awake, then let others run.
            spins += 1;
            if spins < SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// How often [`Growing::more`] checks before it yields the core.
const SPINS: u32 = 1 << 6;

/// The one thread that writes a [`Growing`] buffer.
pub(crate) struct Writer<'g, 'd> {
    pub(crate) growing: &'g Growing<'d>,
    /// Bytes written.
    written: usize,
    /// Bytes published as ready.
    ready: usize,
}

impl Writer<'_, '_> {
    /// The length of the whole text.
    pub(crate) fn len(&self) -> usize {
        self.growing.len
    }

    /// Bytes made ready so far.
    pub(crate) fn ready(&self) -> usize {
        self.ready
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> usize {
        self.written
    }

    /// Write at most `step` more bytes: `write(window, out)` is given the
    /// last bytes written (up to 64 KiB of them) and room after them, and
    /// returns how much of that room it filled.
    pub(crate) fn write<E>(
        &mut self,
        step: usize,
        write: impl FnOnce(&[u8], &mut [u8]) -> Result<usize, E>,
    ) -> Result<usize, E> {
        let g = self.growing;
        let from = self.written - self.written.min(WINDOW);
        let end = self.written + step.min(g.len - self.written);
        // SAFETY: both lie in the buffer. Readers only read before
        // `self.ready <= self.written`, so the room `written..end` is
        // referenced by nothing else; the window before it is only read.
        #[allow(unsafe_code)]
        let (window, room) = unsafe {
            (
                std::slice::from_raw_parts(g.base.add(from), self.written - from),
                std::slice::from_raw_parts_mut(g.base.add(self.written), end - self.written),
            )
        };
        let n = write(window, room)?;
        self.written += n.min(end - self.written);
        Ok(n)
    }

    /// Check the bytes written since the last call as UTF-8, up to the last
    /// whole character (all of them with `whole`, which also needs every
    /// byte of the buffer written), and make them ready. False, and the
    /// text is broken for its readers, if they are not UTF-8.
    pub(crate) fn publish(&mut self, whole: bool) -> bool {
        let g = self.growing;
        if whole && self.written != g.len {
            return self.give_up();
        }
        // SAFETY: written by this thread and not yet ready: no one else
        // refers to these bytes.
        #[allow(unsafe_code)]
        let new = unsafe {
            std::slice::from_raw_parts(g.base.add(self.ready), self.written - self.ready)
        };
        let end = if whole { new.len() } else { whole_chars(new) };
        if simdutf8::basic::from_utf8(&new[..end]).is_err() {
            return self.give_up();
        }
        self.ready += end;
        g.ready.store(self.ready, Ordering::Release);
        if whole {
            g.state.store(WHOLE, Ordering::Release);
        }
        true
    }

    /// Give up: the text will never be whole. Returns false.
    pub(crate) fn give_up(&mut self) -> bool {
        self.growing.state.store(BROKEN, Ordering::Release);
        false
    }
}

impl Drop for Writer<'_, '_> {
    /// A writer that stops before the text is whole (a panic, an early
    /// return) leaves it broken, so that no reader waits for it forever.
    fn drop(&mut self) {
        let _ = self.growing.state.compare_exchange(
            WRITING,
            BROKEN,
            Ordering::Release,
            Ordering::Relaxed,
        );
    }
}

/// The length of `bytes` up to the start of a last character that is cut
/// (all of it if none is, or if it is not UTF-8 there anyway).
fn whole_chars(bytes: &[u8]) -> usize {
    // The last byte that starts a character, at most 3 bytes back.
    for back in 1..=bytes.len().min(4) {
        let at = bytes.len() - back;
        let b = bytes[at];
        if b & 0xC0 != 0x80 {
            let needed = match b {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            return if needed > back { at } else { bytes.len() };
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_ends_before_a_cut_character_only() {
        let s = "aé€😀".as_bytes();
        for cut in 0..=s.len() {
            let end = whole_chars(&s[..cut]);
            assert!(std::str::from_utf8(&s[..end]).is_ok(), "{cut}");
            assert!(cut - end < 4 && (end == cut || std::str::from_utf8(&s[..cut]).is_err()));
        }
    }

    #[test]
    fn readers_see_only_checked_text_and_a_broken_one_never_whole() {
        let mut buf = vec![0u8; 10];
        // SAFETY: `buf` is used only through `growing` until it is dropped.
        #[allow(unsafe_code)]
        let growing = unsafe { Growing::new(buf.as_mut_ptr(), buf.len()) };
        let mut writer = growing.writer().unwrap();
        assert!(growing.writer().is_none());
        let fill = |bytes: &'static [u8]| {
            move |_: &[u8], room: &mut [u8]| -> Result<usize, ()> {
                room[..bytes.len()].copy_from_slice(bytes);
                Ok(bytes.len())
            }
        };
        writer.write(4, fill(b"ab\xC3")).unwrap();
        assert!(writer.publish(false));
        assert_eq!(growing.text(), Some(("ab", false)));
        writer.write(4, fill(b"\xA9cd")).unwrap();
        assert!(writer.publish(false));
        assert_eq!(growing.text(), Some(("abécd", false)));
        // Not all written: cannot be whole.
        assert!(!writer.publish(true));
        assert_eq!(growing.text(), None);
        assert_eq!(growing.more(0), None);
    }

    #[test]
    fn a_writer_dropped_early_breaks_the_text() {
        let mut buf = vec![0u8; 4];
        // SAFETY: as above.
        #[allow(unsafe_code)]
        let growing = unsafe { Growing::new(buf.as_mut_ptr(), buf.len()) };
        drop(growing.writer());
        assert_eq!(growing.more(0), None);
    }
}
