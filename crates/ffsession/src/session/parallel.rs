//! Parsing one session on two threads.
//!
//! serde_json reads a session at 1.5-2 GB/s on one core; the derived
//! `Deserialize` of [`Session`] is the reference parser. Large files are
//! split in two at a tab boundary found by pattern: Firefox writes every tab
//! of a window's `tabs` array as `{"entries":[...`, and in valid JSON the
//! bytes `,{"entries":[` can only be
//! the start of an object that is a later element of an array (a `"` inside a
//! string is escaped, and `,` inside an object is followed by a key). A helper
//! thread parses from there as if it stood at a tab of a window: the rest of
//! that `tabs` array, the rest of the window, then the following windows up to
//! the end of their array. Meanwhile this thread walks the document from the
//! start, one value at a time, so it knows byte offsets; when it reaches the
//! same offset at the start of a tab in a window's `tabs`, the helper's guess
//! was right by construction and its result is adopted.
//!
//! Anything unexpected (the split is not where this thread finds a tab, a
//! syntax or shape error, a duplicate field, invalid UTF-8, or whatever fails a
//! fast attempt, `de::fast_attempt`) gives up the fast path and runs the
//! reference parser on the whole document, which also words the error. Only the
//! top level and the window objects are walked here; tabs are read by the
//! quick tab reader (`skim.rs`), and every other value inside them (closed
//! tabs, groups, numbers), and any tab that reader leaves, by serde_json
//! through the model's own `Deserialize` impls. Documents too small for two
//! threads are walked the same way on one ([`parse_one_thread`]). A
//! document still being decoded is walked behind the decoder, whose thread
//! then reads the second half of what is left ([`parse_growing`]).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::{self, ScopedJoinHandle};

pub(crate) use super::threads::{receive, spawn_beside, two_cores};

use serde::de::IgnoredAny;
use serde_json::value::RawValue;

pub(super) use super::cursor::Cursor;
use super::de::{self, List, OptI64, OptStr, OptU64, OrDefault};
use super::growing::Growing;
use super::skim::is_space;
use super::{ClosedTab, ForkData, Session, Tab, TabGroup, Timestamps, Window};
use crate::forks;

/// The bytes before the `{` of a tab that is not the first in its window.
pub(crate) const TAB_START: &[u8] = b",{\"entries\":[";

/// Documents smaller than this are parsed on one thread. A 2 MiB session parses
/// in about a millisecond; starting a thread takes 40-100 µs, and waking an idle
/// core in a virtual machine now and then a millisecond more.
pub(crate) const PARALLEL_MIN_BYTES: usize = 2 << 20;

/// The fast path gave up; the reference parser decides (and words the error).
#[derive(Debug)]
pub(crate) struct GiveUp;

type Result<T> = std::result::Result<T, GiveUp>;

/// How much more of the document this thread takes than the helper. The helper
/// starts 60-90 µs after this thread (spawning a thread), in which time this
/// thread parses about 200 KB; splitting past the middle lets both finish
/// together. On a 4.4 MB session, 128-192 KiB past the middle parsed 5-9%
/// faster than the middle itself (interleaved medians); at 40 MB it makes no
/// measurable difference.
const HELPER_HEAD_START: usize = 160 << 10;

/// Where the helper thread should start: the `{` of the first tab that begins
/// at or after [`HELPER_HEAD_START`] bytes past the middle of `json` (at most
/// a sixteenth of it).
pub(crate) fn split_point(json: &[u8]) -> Option<usize> {
    let middle = json.len() / 2 + HELPER_HEAD_START.min(json.len() / 16);
    memchr::memmem::find(&json[middle..], TAB_START).map(|i| middle + i + 1)
}

/// Parse `json` with a helper thread starting at `split` (the `{` of a tab).
pub(crate) fn parse_split(json: &[u8], split: usize) -> Result<Session<'_>> {
    let cancel = AtomicBool::new(false);
    thread::scope(|scope| {
        let mut pending = Some(Pending {
            start: Start::At(split),
            helper: spawn_beside(scope, || {
                de::fast_attempt(|| speculate(&json[split..], split, &cancel))
            }),
            cancel: None,
        });
        let result = de::fast_attempt(|| walk_prefix(json, split, &mut pending));
        if let Some(unused) = pending {
            // Not adopted: stop the helper early, and join it here so that its
            // thread has ended when this returns.
            cancel.store(true, Ordering::Relaxed);
            let _ = unused.helper.join();
            return Err(GiveUp);
        }
        result
    })
}

/// Parse the document `growing` holds while it is written: `start` (on
/// this thread, while the helper's thread starts) begins writing it, and
/// `write` (on the helper thread) goes on from there, returning whether the
/// whole text became ready. This thread walks behind the writer. Once the
/// writer is done, it offers to read the second half of what this walk has
/// left, from a tab on, as [`parse_split`]'s helper does, and this thread
/// adopts what it read on reaching that tab. Should this walk have passed
/// that tab already (or the helper give up), it goes on alone: it has the
/// whole text. The helper always writes the whole document before it
/// returns, even when this walk gives up.
pub(crate) fn parse_growing<'a, W: Send>(
    growing: &'a Growing<'a>,
    start: impl FnOnce() -> W,
    write: impl FnOnce(W) -> bool + Send,
) -> Result<Session<'a>> {
    let (cancel, offer) = (&AtomicBool::new(false), &Offer::default());
    let (give, take) = mpsc::sync_channel(1);
    thread::scope(|scope| {
        let helper = spawn_beside(scope, move || {
            let whole = receive(&take).is_some_and(write);
            if !whole || cancel.load(Ordering::Relaxed) {
                return Err(GiveUp);
            }
            let (text, _) = growing.text().ok_or(GiveUp)?;
            let walked = offer.walked.load(Ordering::Relaxed);
            let from = walked + (text.len().saturating_sub(walked)) / 2;
            let found = memchr::memmem::find(text.as_bytes().get(from..).ok_or(GiveUp)?, TAB_START);
            let split = found.ok_or(GiveUp)? + from + 1;
            offer.split.store(split, Ordering::Release);
            de::fast_attempt(|| speculate_text(&text[split..], split, cancel))
        });
        // The writer's first step here, while the helper's thread starts.
        let _ = give.send(start());
        let mut pending = Some(Pending {
            start: Start::Offered(offer),
            helper,
            cancel: Some(cancel),
        });
        let result = de::fast_attempt(|| session(&mut Cursor::growing(growing)?, &mut pending));
        // Not adopted: stop the helper early (the scope joins it).
        cancel.store(true, Ordering::Relaxed);
        growing.stop_waiting();
        result
    })
}

/// How [`parse_growing`]'s two threads agree on where the helper starts.
#[derive(Default)]
struct Offer {
    /// How far the walk has come (at the start of its last tab).
    walked: AtomicUsize,
    /// Where the helper starts, once it knows (0 until then).
    split: AtomicUsize,
}

/// The fast attempt on one thread: the same walk over the whole document,
/// with no helper to adopt.
pub(crate) fn parse_one_thread(json: &[u8]) -> Result<Session<'_>> {
    de::fast_attempt(|| walk_prefix(json, json.len(), &mut None))
}

/// This thread's part: validate the text before the split and walk it (all
/// of it, with no helper, when `split` is the length).
fn walk_prefix<'a>(
    json: &'a [u8],
    split: usize,
    pending: &mut Option<Pending<'_, 'a>>,
) -> Result<Session<'a>> {
    let text = simdutf8::basic::from_utf8(&json[..split]).map_err(|_| GiveUp)?;
    session(&mut Cursor::new(text, 0), pending)
}

/// What the helper read, starting at a tab.
struct Speculation<'a> {
    /// The rest of the document, validated, starting at the split...
    text: &'a str,
    /// ...which is this offset in the document.
    base: usize,
    /// Tabs from the split to the end of that window's `tabs`.
    tabs: Vec<Tab<'a>>,
    /// Fields of that window written after its `tabs`.
    window_rest: WindowFields<'a>,
    /// The windows after it, up to the end of their array.
    windows: Vec<Window<'a>>,
    /// Offset just past the `]` that ends the array of windows.
    end: usize,
}

/// The helper thread, not yet adopted.
struct Pending<'scope, 'a> {
    start: Start<'scope>,
    helper: ScopedJoinHandle<'scope, Result<Speculation<'a>>>,
    /// For a walk that may go on alone ([`parse_growing`]): how to stop the
    /// helper early. Without it, a walk that cannot adopt the helper gives up.
    cancel: Option<&'scope AtomicBool>,
}

/// Where the helper starts.
#[derive(Clone, Copy)]
enum Start<'o> {
    /// At this offset, the `{` of a tab.
    At(usize),
    /// Where the helper offers to start, once it does ([`parse_growing`]).
    Offered(&'o Offer),
}

impl Pending<'_, '_> {
    /// Where the helper starts, if known yet; tells an [`Offer`] how far
    /// `cursor` has come.
    fn start(&self, cursor: &Cursor<'_>) -> Option<usize> {
        match self.start {
            Start::At(start) => Some(start),
            Start::Offered(offer) => {
                offer.walked.store(cursor.pos, Ordering::Relaxed);
                Some(offer.split.load(Ordering::Acquire)).filter(|&split| split > 0)
            }
        }
    }
}

/// The helper: validate the rest of the document and read it as if `text`
/// started at a tab that is not the first of a window.
fn speculate<'a>(bytes: &'a [u8], base: usize, cancel: &AtomicBool) -> Result<Speculation<'a>> {
    let text = simdutf8::basic::from_utf8(bytes).map_err(|_| GiveUp)?;
    speculate_text(text, base, cancel)
}

/// [`speculate`] on text already validated.
fn speculate_text<'a>(text: &'a str, base: usize, cancel: &AtomicBool) -> Result<Speculation<'a>> {
    let cursor = &mut Cursor::new(text, base);
    let mut tabs = Vec::new();
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(GiveUp);
        }
        tabs.push(cursor.tab()?);
        if !cursor.more(b']')? {
            break;
        }
    }
    let mut window_rest = WindowFields::default();
    while cursor.more(b'}')? {
        let key = cursor.key()?;
        if key == "tabs" {
            return Err(GiveUp);
        }
        window_rest.read(&key, cursor)?;
    }
    let mut windows = Vec::new();
    while cursor.more(b']')? {
        if cancel.load(Ordering::Relaxed) {
            return Err(GiveUp);
        }
        windows.push(window(cursor, &mut None)?.0);
    }
    Ok(Speculation {
        text,
        base,
        tabs,
        window_rest,
        windows,
        end: cursor.pos,
    })
}

/// The top-level object, read field by field.
fn session<'a>(
    cursor: &mut Cursor<'a>,
    pending: &mut Option<Pending<'_, 'a>>,
) -> Result<Session<'a>> {
    let mut windows = None;
    let mut closed_windows = None;
    let mut selected_window = None;
    let mut saved_groups = None;
    let mut timestamps = None;
    let mut more = cursor.open(b'{', b'}')?;
    while more {
        let key = cursor.key()?;
        match &*key {
            "windows" => once(&mut windows, windows_array(cursor, pending)?)?,
            "_closedWindows" => once(&mut closed_windows, windows_array(cursor, pending)?)?,
            "selectedWindow" => once(&mut selected_window, cursor.value::<OptU64>()?.0)?,
            "savedGroups" => once(&mut saved_groups, cursor.value::<List<TabGroup>>()?.0)?,
            "session" => once(&mut timestamps, cursor.value::<OrDefault<Timestamps>>()?.0)?,
            _ => {
                cursor.value::<IgnoredAny>()?;
            }
        }
        more = cursor.more(b'}')?;
    }
    // Only whitespace may follow.
    if !cursor.rest_of_all()?.bytes().all(is_space) {
        return Err(GiveUp);
    }
    Ok(Session {
        windows: windows.ok_or(GiveUp)?,
        closed_windows: closed_windows.unwrap_or_default(),
        selected_window: selected_window.flatten(),
        saved_groups: saved_groups.unwrap_or_default(),
        session: timestamps.unwrap_or_default(),
    })
}

/// Set a field seen for the first time (serde rejects duplicate fields too).
pub(super) fn once<T>(slot: &mut Option<T>, value: T) -> Result<()> {
    if slot.replace(value).is_some() {
        return Err(GiveUp);
    }
    Ok(())
}

/// `windows` or `_closedWindows`.
fn windows_array<'a>(
    cursor: &mut Cursor<'a>,
    pending: &mut Option<Pending<'_, 'a>>,
) -> Result<Vec<Window<'a>>> {
    let mut windows = Vec::new();
    if !cursor.open(b'[', b']')? {
        return Ok(windows);
    }
    loop {
        let (window, adopted) = window(cursor, pending)?;
        windows.push(window);
        if let Some(rest) = adopted {
            // The helper read the remaining windows and the closing `]`.
            windows.extend(rest);
            return Ok(windows);
        }
        if !cursor.more(b']')? {
            return Ok(windows);
        }
    }
}

/// One window object. When the helper's result is adopted inside it, also
/// returns the windows the helper read after it.
#[allow(clippy::type_complexity)]
fn window<'a>(
    cursor: &mut Cursor<'a>,
    pending: &mut Option<Pending<'_, 'a>>,
) -> Result<(Window<'a>, Option<Vec<Window<'a>>>)> {
    let mut fields = WindowFields::default();
    let mut more = cursor.open(b'{', b'}')?;
    while more {
        let key = cursor.key()?;
        if key == "tabs" {
            if fields.tabs.is_some() {
                return Err(GiveUp);
            }
            if cursor.peek()? != b'[' {
                // Not an array: no tabs (`de::list`).
                fields.tabs = Some(cursor.value::<List<Tab>>()?.0);
                more = cursor.more(b'}')?;
                continue;
            }
            let mut tabs = Vec::new();
            let adopted = tabs_array(cursor, &mut tabs, pending)?;
            fields.tabs = Some(tabs);
            if let Some(speculation) = adopted {
                let tabs = fields.tabs.as_mut().ok_or(GiveUp)?;
                tabs.extend(speculation.tabs);
                fields.merge(speculation.window_rest)?;
                *cursor = Cursor::new(speculation.text, speculation.base);
                cursor.pos = speculation.end;
                return Ok((fields.into_window(), Some(speculation.windows)));
            }
        } else {
            fields.read(&key, cursor)?;
        }
        more = cursor.more(b'}')?;
    }
    Ok((fields.into_window(), None))
}

/// A window's `tabs`, with the helper adopted if this thread reaches its start.
fn tabs_array<'a>(
    cursor: &mut Cursor<'a>,
    tabs: &mut Vec<Tab<'a>>,
    pending: &mut Option<Pending<'_, 'a>>,
) -> Result<Option<Speculation<'a>>> {
    if !cursor.open(b'[', b']')? {
        return Ok(None);
    }
    loop {
        if let Some(p) = pending.as_ref() {
            if let Some(start) = p.start(cursor).filter(|&start| cursor.pos >= start) {
                let p = pending.take().ok_or(GiveUp)?;
                let adopted = if cursor.pos == start {
                    p.helper.join().map_err(|_| GiveUp).and_then(|r| r)
                } else {
                    Err(GiveUp)
                };
                match (adopted, p.cancel) {
                    (Ok(speculation), _) => return Ok(Some(speculation)),
                    // Go on alone (the helper is joined by the caller).
                    (Err(GiveUp), Some(cancel)) => cancel.store(true, Ordering::Relaxed),
                    (Err(GiveUp), None) => return Err(GiveUp),
                }
            }
        }
        tabs.push(cursor.tab()?);
        if !cursor.more(b']')? {
            return Ok(None);
        }
    }
}

/// The fields of a window other than `tabs`, as the derived `Deserialize` of
/// [`Window`] reads them.
#[derive(Default)]
pub(super) struct WindowFields<'a> {
    tabs: Option<Vec<Tab<'a>>>,
    selected: Option<Option<u64>>,
    pub(super) closed_tabs: Option<Vec<ClosedTab<'a>>>,
    pub(super) groups: Option<Vec<TabGroup<'a>>>,
    width: Option<Option<i64>>,
    height: Option<Option<i64>>,
    screen_x: Option<Option<i64>>,
    screen_y: Option<Option<i64>>,
    sizemode: Option<Option<Cow<'a, str>>>,
    title: Option<Option<Cow<'a, str>>>,
    closed_at: Option<Option<u64>>,
    forks: ForkData<'a>,
}

impl<'a> WindowFields<'a> {
    pub(super) fn read(&mut self, key: &str, cursor: &mut Cursor<'a>) -> Result<()> {
        match key {
            "selected" => once(&mut self.selected, cursor.value::<OptU64>()?.0),
            "_closedTabs" => once(&mut self.closed_tabs, cursor.value::<List<_>>()?.0),
            "groups" => once(&mut self.groups, cursor.value::<List<_>>()?.0),
            "width" => once(&mut self.width, cursor.value::<OptI64>()?.0),
            "height" => once(&mut self.height, cursor.value::<OptI64>()?.0),
            "screenX" => once(&mut self.screen_x, cursor.value::<OptI64>()?.0),
            "screenY" => once(&mut self.screen_y, cursor.value::<OptI64>()?.0),
            "sizemode" => once(&mut self.sizemode, cursor.value::<OptStr>()?.0),
            "title" => once(&mut self.title, cursor.value::<OptStr>()?.0),
            "closedAt" => once(&mut self.closed_at, cursor.value::<OptU64>()?.0),
            _ => match forks::find(forks::WINDOW_KEYS, key.as_bytes()) {
                Some(key) => {
                    let raw = cursor.value::<&RawValue>()?.get();
                    self.forks
                        .insert::<serde_json::Error>(key, raw)
                        .map_err(|_| GiveUp)
                }
                None => cursor.value::<IgnoredAny>().map(drop),
            },
        }
    }

    /// Which fields are set, one bit each (for a reader that keeps the
    /// fields of a window only long enough to count them).
    pub(super) fn seen(&self) -> u16 {
        let fields = [
            self.tabs.is_some(),
            self.selected.is_some(),
            self.closed_tabs.is_some(),
            self.groups.is_some(),
            self.width.is_some(),
            self.height.is_some(),
            self.screen_x.is_some(),
            self.screen_y.is_some(),
            self.sizemode.is_some(),
            self.title.is_some(),
            self.closed_at.is_some(),
        ]
        .iter()
        .enumerate()
        .fold(0, |mask, (bit, &set)| mask | u16::from(set) << bit);
        // Then a bit for each fork key, in the order of the registry (keys
        // past the sixteenth share the last bit: a duplicate seen where
        // there is none only sends the document to the reference).
        let forks = forks::WINDOW_KEYS.iter().enumerate();
        forks.fold(fields, |mask, (bit, &key)| {
            mask | u16::from(self.forks.get(key).is_some()) << (11 + bit).min(15)
        })
    }

    /// Add the fields the helper read after `tabs`.
    fn merge(&mut self, later: WindowFields<'a>) -> Result<()> {
        fn join<T>(slot: &mut Option<T>, later: Option<T>) -> Result<()> {
            match later {
                Some(value) => once(slot, value),
                None => Ok(()),
            }
        }
        join(&mut self.tabs, later.tabs)?;
        join(&mut self.selected, later.selected)?;
        join(&mut self.closed_tabs, later.closed_tabs)?;
        join(&mut self.groups, later.groups)?;
        join(&mut self.width, later.width)?;
        join(&mut self.height, later.height)?;
        join(&mut self.screen_x, later.screen_x)?;
        join(&mut self.screen_y, later.screen_y)?;
        join(&mut self.sizemode, later.sizemode)?;
        join(&mut self.title, later.title)?;
        join(&mut self.closed_at, later.closed_at)?;
        for (key, raw) in later.forks.iter() {
            self.forks
                .insert::<serde_json::Error>(key, raw)
                .map_err(|_| GiveUp)?;
        }
        Ok(())
    }

    fn into_window(self) -> Window<'a> {
        Window {
            tabs: self.tabs.unwrap_or_default(),
            selected: self.selected.flatten(),
            closed_tabs: self.closed_tabs.unwrap_or_default(),
            groups: self.groups.unwrap_or_default(),
            width: self.width.flatten(),
            height: self.height.flatten(),
            screen_x: self.screen_x.flatten(),
            screen_y: self.screen_y.flatten(),
            sizemode: self.sizemode.flatten(),
            title: self.title.flatten(),
            closed_at: self.closed_at.flatten(),
            forks: self.forks,
        }
    }
}

/// For fuzzing: panic if a fast path accepts a document the serial reference
/// rejects, or reads it differently. Checks the fast attempt on one thread and
/// `json` split at each of its first eight tab boundaries (whatever its size).
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub fn assert_fast_paths_match_reference(json: &[u8]) {
    let reference = Session::from_json_serial(json).map(|s| format!("{s:?}"));
    if let Some(fast) = Session::fast_attempt(json) {
        assert_eq!(
            reference.as_deref(),
            Ok(format!("{fast:?}").as_str()),
            "the one-thread fast attempt disagrees with the serial parser"
        );
    }
    for at in memchr::memmem::find_iter(json, TAB_START).take(8) {
        if let Ok(split) = parse_split(json, at + 1) {
            assert_eq!(
                reference.as_deref(),
                Ok(format!("{split:?}").as_str()),
                "split at {} disagrees with the serial parser",
                at + 1
            );
        }
    }
}

#[cfg(test)]
mod tests;
