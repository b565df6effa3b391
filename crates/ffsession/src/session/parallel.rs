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
//! threads are walked the same way on one ([`parse_one_thread`]).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, ScopedJoinHandle};

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};

use super::de::{self, List, OptI64, OptStr, OptU64, OrDefault};
use super::skim::{self, is_space};
use super::{ClosedTab, Session, Tab, TabGroup, Timestamps, Window};

/// The bytes before the `{` of a tab that is not the first in its window.
pub(crate) const TAB_START: &[u8] = b",{\"entries\":[";

/// Documents smaller than this are parsed on one thread. A 2 MiB session parses
/// in about a millisecond; starting a thread takes 40-100 µs, and waking an idle
/// core in a virtual machine now and then a millisecond more.
pub(crate) const PARALLEL_MIN_BYTES: usize = 2 << 20;

/// Whether a second thread can run at the same time (checked once): on
/// Linux, whether this thread may run on two CPUs or more.
///
/// Not `available_parallelism` there, which also reads the cgroup's CPU
/// quota: 18 system calls and 45-70 µs before every read of a large
/// session. A read takes milliseconds, far less than a quota's period
/// (100 ms), so even a quota of one CPU lets two threads run at once.
pub(crate) fn two_cores() -> bool {
    static TWO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TWO.get_or_init(|| {
        #[cfg(target_os = "linux")]
        let two = rustix::thread::sched_getaffinity(None).is_ok_and(|cpus| cpus.count() >= 2);
        #[cfg(not(target_os = "linux"))]
        let two = thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        two
    })
}

/// Spawn `f` on a scoped thread that runs on another core than this thread.
///
/// Linux sometimes queues a new thread on its parent's core even when the
/// other core is idle, and moves it only at the next scheduler tick (4 ms at
/// 250 Hz): on a 2-core VM, 2 of 5 runs parsed a 23 MB session in 9 ms
/// instead of 5. So the new thread's first act is to leave the core its parent
/// runs on (if another is allowed; then it allows every core again), and the
/// parent yields once, which lets a thread queued behind it run that far.
pub(crate) fn spawn_beside<'scope, T: Send + 'scope>(
    scope: &'scope thread::Scope<'scope, '_>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> ScopedJoinHandle<'scope, T> {
    #[cfg(target_os = "linux")]
    {
        let parent = rustix::thread::sched_getcpu();
        let handle = scope.spawn(move || {
            leave_core(parent);
            f()
        });
        thread::yield_now();
        handle
    }
    #[cfg(not(target_os = "linux"))]
    scope.spawn(f)
}

/// Move this thread off core `cpu`, if it may run elsewhere: restrict it to
/// the other allowed cores (the kernel moves it before the call returns), then
/// allow all of them again.
#[cfg(target_os = "linux")]
fn leave_core(cpu: usize) {
    use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity};
    // Already elsewhere: nothing to do (`sched_getcpu` needs no system call).
    if sched_getcpu() != cpu {
        return;
    }
    let Ok(allowed) = sched_getaffinity(None) else {
        return;
    };
    if allowed.count() < 2 || !allowed.is_set(cpu) {
        return;
    }
    let mut others = allowed;
    others.unset(cpu);
    if sched_setaffinity(None, &others).is_ok() {
        let _ = sched_setaffinity(None, &allowed);
    }
}

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
            start: split,
            helper: spawn_beside(scope, || {
                de::fast_attempt(|| speculate(&json[split..], split, &cancel))
            }),
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
    let mut cursor = Cursor {
        text,
        base: 0,
        pos: 0,
    };
    session(&mut cursor, pending)
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
    start: usize,
    helper: ScopedJoinHandle<'scope, Result<Speculation<'a>>>,
}

/// The helper: validate the rest of the document and read it as if `text`
/// started at a tab that is not the first of a window.
fn speculate<'a>(bytes: &'a [u8], base: usize, cancel: &AtomicBool) -> Result<Speculation<'a>> {
    let text = simdutf8::basic::from_utf8(bytes).map_err(|_| GiveUp)?;
    let mut cursor = Cursor {
        text,
        base,
        pos: base,
    };
    let cursor = &mut cursor;
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

/// A position in the document, over the validated piece of it this thread has.
pub(super) struct Cursor<'a> {
    pub(super) text: &'a str,
    /// Offset of `text` in the document.
    pub(super) base: usize,
    /// Offset in the document.
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn rest(&self) -> &'a str {
        &self.text[self.pos - self.base..]
    }

    /// Skip whitespace and return the next byte.
    pub(super) fn peek(&mut self) -> Result<u8> {
        let rest = self.rest().as_bytes();
        let n = rest.iter().position(|&b| !is_space(b)).ok_or(GiveUp)?;
        self.pos += n;
        Ok(rest[n])
    }

    fn eat(&mut self, byte: u8) -> Result<()> {
        if self.peek()? != byte {
            return Err(GiveUp);
        }
        self.pos += 1;
        Ok(())
    }

    /// One JSON value read by serde_json, borrowing from the document.
    pub(super) fn value<T: Deserialize<'a>>(&mut self) -> Result<T> {
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
        if let Some((tab, len)) = skim::tab(self.rest()) {
            self.pos += len;
            return Ok(tab);
        }
        self.value()
    }

    /// An object key and its `:`.
    pub(super) fn key(&mut self) -> Result<Cow<'a, str>> {
        let Key(key) = self.value()?;
        self.eat(b':')?;
        Ok(key)
    }

    /// Open an object or array with `open`: true if a first key or element
    /// follows, false if `close` comes at once.
    pub(super) fn open(&mut self, open: u8, close: u8) -> Result<bool> {
        self.eat(open)?;
        if self.peek()? == close {
            self.pos += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// After a value in an object or array: true if another follows (`,`),
    /// false at `close`.
    pub(super) fn more(&mut self, close: u8) -> Result<bool> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Ok(true)
            }
            b if b == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(GiveUp),
        }
    }
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
    if !cursor.rest().bytes().all(is_space) {
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
                *cursor = Cursor {
                    text: speculation.text,
                    base: speculation.base,
                    pos: speculation.end,
                };
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
            if cursor.pos >= p.start {
                let p = pending.take().ok_or(GiveUp)?;
                if cursor.pos > p.start {
                    return Err(GiveUp);
                }
                return p.helper.join().map_err(|_| GiveUp)?.map(Some);
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
            _ => cursor.value::<IgnoredAny>().map(drop),
        }
    }

    /// Which fields are set, one bit each (for a reader that keeps the
    /// fields of a window only long enough to count them).
    pub(super) fn seen(&self) -> u16 {
        [
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
        .fold(0, |mask, (bit, &set)| mask | u16::from(set) << bit)
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
        join(&mut self.closed_at, later.closed_at)
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
        }
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

/// For fuzzing: panic if a fast path accepts a document the serial reference
/// rejects, or reads it differently. Checks the fast attempt on one thread and
/// `json` split at each of its first eight tab boundaries (whatever its size).
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
