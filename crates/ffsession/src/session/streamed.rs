//! Counting a session while its JSON arrives a piece at a time, keeping
//! none of it: what `ffsession info` needs, in the memory of a few pieces
//! instead of the whole JSON (`format/summarize.rs` decodes the pieces on
//! another thread meanwhile).
//!
//! The walk is `parallel.rs`'s, over the same [`Cursor`]: the top level and
//! the window objects are walked here, and every value in them (a tab, a
//! window's closed tabs, the timestamps) is read by serde_json through the
//! model's own `Deserialize` impls, then counted and dropped. Each step runs
//! on the text at hand; a step that fails, or ends at the very edge of what
//! has arrived (a number cut there would still read as a number), is run
//! again on more text. So a step accepts only bytes it has seen followed by
//! more: what it reads is what the whole document holds there. Only the
//! last piece may end a step at its edge, and the text handed over to the
//! decoder's thread, at the tab it starts at ([`Helper`]): a step can end
//! there only past the `,` before the tab.
//!
//! Anything the fast paths give up on gives up here too; the caller then
//! reads the file the ordinary way, which decides (and words any error).
//! A test and the `summarize` fuzz target hold the counts to those of
//! [`Summary::of`] the reference parse.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};

use serde::de::IgnoredAny;

use super::parallel::{
    is_space, once, Cursor, GiveUp, List, OptU64, OrDefault, WindowFields, TAB_START,
};
use super::{de, Summary, Tab, TabGroup, Timestamps};

type Result<T> = std::result::Result<T, GiveUp>;

/// What is done with each open tab: given the tab and the output to write to.
pub(crate) type Visit = fn(&Tab<'_>, &mut Vec<u8>);

/// A piece of a document's text, in a buffer lent by the decoder: it starts
/// `base` bytes into the document, at most [`WINDOW`](crate::format) bytes
/// before the end of the piece before it, so the two overlap; it ends before
/// a character cut at its end (the next piece has it whole).
pub(crate) struct Piece<'s> {
    bytes: &'s mut [u8],
    /// `bytes[..len]` is the text, UTF-8 (checked in [`Piece::new`]).
    len: usize,
    base: usize,
}

impl<'s> Piece<'s> {
    /// The text `bytes[..len]`, `base` bytes into the document; `None` if it
    /// is not UTF-8.
    pub(crate) fn new(bytes: &'s mut [u8], len: usize, base: usize) -> Option<Self> {
        simdutf8::basic::from_utf8(bytes.get(..len)?).ok()?;
        Some(Piece { bytes, len, base })
    }

    fn text(&self) -> &str {
        // SAFETY: `bytes[..len]` was checked to be UTF-8 when this piece was
        // made, and has not changed since: `bytes` is a unique borrow, lent
        // out only as shared (here) until the piece is given up whole
        // (`into_bytes`). Checking again at each step of the walk would read
        // the rest of the piece each time.
        #[allow(unsafe_code)]
        unsafe {
            std::str::from_utf8_unchecked(&self.bytes[..self.len])
        }
    }

    /// Give the buffer back.
    fn into_bytes(self) -> &'s mut [u8] {
        self.bytes
    }
}

/// The text at hand: a piece, or (for a value longer than a piece's
/// overlap with the one before) a copy of the end of one and what followed.
enum Text<'s> {
    Piece(Piece<'s>),
    Joined(String),
}

impl Text<'_> {
    fn as_str(&self) -> &str {
        match self {
            Text::Piece(piece) => piece.text(),
            Text::Joined(text) => text,
        }
    }
}

/// Count the session whose text arrives from `next` (`None`: no more; the
/// caller checks whether the text was whole). Buffers no longer needed go to
/// `recycle`. `None` where the ordinary read must decide. With a `helper`,
/// the rest of the document may be shared with it once it has all arrived
/// (see [`Helper`]); the second result says whether it was.
///
/// `visit` is given each open tab, in order, with `out` to write to: once per
/// tab in what `out` holds at the end (a step run again first cuts `out` back
/// to where it was before the step).
pub(crate) fn summary<'f, 's>(
    next: &'f mut dyn FnMut() -> Option<Piece<'s>>,
    recycle: &'f mut dyn FnMut(&'s mut [u8]),
    helper: Option<&'f mut Helper<'f, 's>>,
    visit: Visit,
    out: &mut Vec<u8>,
) -> Option<(Summary, bool)> {
    let mut feed = Feed::new(next, recycle, 0);
    feed.helper = helper;
    let mut visitor = Visitor { visit, out };
    let summary = de::fast_attempt(|| session(&mut feed, &mut visitor)).ok()?;
    Some((summary, feed.shared))
}

/// What is done with each open tab, and where it writes.
struct Visitor<'v> {
    visit: Visit,
    out: &'v mut Vec<u8>,
}

/// The decoder's thread, which walks part of the document too once it has
/// decoded all of it.
///
/// When the decoder sends its last piece, a few are often still waiting to
/// be walked (up to three: the slots they are in). The walk then takes them
/// all from the channel and hands the later ones to the helper, from a tab
/// at the start of one of them: the helper walks from there as
/// `parallel.rs`'s helper does (the rest of that window's tabs, the rest of
/// the window, the windows after it to the end of their array), while this
/// thread walks up to that tab. Reaching it in a window's `tabs`, this
/// thread adopts what the helper counted and goes on from where the helper
/// stopped, with the helper's text. Reaching it anywhere else, or the
/// helper giving up, gives up the walk (the ordinary read decides).
pub(crate) struct Helper<'a, 's> {
    /// Set once the decoder has sent its last piece and closed the channel.
    pub(crate) done: &'a AtomicBool,
    /// The pieces' channel, to take every piece left from.
    pub(crate) arrived: &'a Receiver<Piece<'s>>,
    /// Where the pieces handed over go (dropped once it is clear none
    /// will, so that the helper stops waiting).
    pub(crate) give: Option<SyncSender<Handoff<'s>>>,
    /// What the helper made of them.
    pub(crate) take: Receiver<Option<Speculation<'s>>>,
    /// Hand over nothing shorter than this.
    pub(crate) min_share: usize,
}

/// The pieces handed to the helper, and the offset of the tab it starts at
/// (its `{`).
pub(crate) struct Handoff<'s> {
    start: usize,
    pieces: VecDeque<Piece<'s>>,
}

/// What the helper counted from a tab: the rest of that window's `tabs`
/// (as a window's tally) and fields, then the windows after it, up to the
/// `]` of their array.
pub(crate) struct Speculation<'s> {
    walked: Walked,
    /// Where the helper stopped, in its text, and what it had left.
    text: Text<'s>,
    base: usize,
    end: usize,
    queue: VecDeque<Piece<'s>>,
    last: bool,
}

/// The counts of a [`Speculation`].
struct Walked {
    /// The rest of the window the helper started in.
    tally: WindowTally,
    /// That window's fields the helper read after `tabs` ([`WindowFields::seen`]).
    seen: u16,
    /// The windows after it.
    windows: Vec<WindowTally>,
    /// What the visitor wrote of the helper's tabs.
    out: Vec<u8>,
}

/// The helper's walk of the pieces in `handoff`, with `visit` given each tab.
pub(crate) fn speculate(handoff: Handoff<'_>, visit: Visit) -> Option<Speculation<'_>> {
    let mut none = || None;
    let mut drop_bytes = |_: &mut [u8]| {};
    let mut feed = Feed::new(&mut none, &mut drop_bytes, handoff.start);
    feed.queue = handoff.pieces;
    let mut out = Vec::new();
    let mut visitor = Visitor {
        visit,
        out: &mut out,
    };
    let mut tally = WindowTally::default();
    let mut seen = TABS_SEEN;
    let windows = de::fast_attempt(|| {
        let v = Some(&mut visitor);
        if tab_run(&mut feed, &mut tally, v)?.is_some() {
            return Err(GiveUp);
        }
        if feed.step(|c| c.more(b'}'))?
            && window_fields(&mut feed, &mut tally, &mut seen, Some(&mut visitor))?.is_some()
        {
            return Err(GiveUp);
        }
        let mut windows = Vec::new();
        while feed.step(|c| c.more(b']'))? {
            windows.push(window(&mut feed, Some(&mut visitor))?.0);
        }
        Ok(windows)
    })
    .ok()?;
    Some(Speculation {
        walked: Walked {
            tally,
            seen: seen & !TABS_SEEN,
            windows,
            out,
        },
        text: feed.text,
        base: feed.base,
        end: feed.pos,
        queue: feed.queue,
        last: feed.last,
    })
}

/// The next message from `from`, `None` once its sender is gone. It waits
/// awake for up to [`SPIN`] before sleeping: on a virtual machine, a thread
/// that sleeps can take a millisecond to wake.
pub(crate) fn receive<T>(from: &mpsc::Receiver<T>) -> Option<T> {
    let start = std::time::Instant::now();
    loop {
        match from.try_recv() {
            Ok(message) => return Some(message),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if start.elapsed() > SPIN => return from.recv().ok(),
            Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
}

/// How long [`receive`] waits awake.
const SPIN: std::time::Duration = std::time::Duration::from_millis(2);

/// The bit [`WindowFields::seen`] gives `tabs`.
const TABS_SEEN: u16 = 1;

/// The text at hand, and where the walk is in it.
struct Feed<'f, 's> {
    next: &'f mut dyn FnMut() -> Option<Piece<'s>>,
    recycle: &'f mut dyn FnMut(&'s mut [u8]),
    text: Text<'s>,
    /// Offset of `text` in the document.
    base: usize,
    /// Offset of the walk in the document.
    pos: usize,
    /// Whether `text` runs to the end of the document.
    last: bool,
    /// Pieces to take before asking `next`.
    queue: VecDeque<Piece<'s>>,
    /// The thread to share the rest with, if any.
    helper: Option<&'f mut Helper<'f, 's>>,
    /// Whether every piece left has been taken from the channel: after
    /// `queue`, there are no more (the sender is gone, but this thread does
    /// not wait on it again).
    drained: bool,
    /// Where the helper starts, until this walk reaches it: the text ends
    /// there.
    handoff: Option<usize>,
    /// Whether the helper's walk was adopted.
    shared: bool,
}

/// Where the next piece comes from.
enum Next<'s> {
    Piece(Piece<'s>),
    /// None until the helper's walk is adopted.
    Paused,
    End,
}

impl<'f, 's> Feed<'f, 's> {
    /// A walk from `pos`, with no text yet.
    fn new(
        next: &'f mut dyn FnMut() -> Option<Piece<'s>>,
        recycle: &'f mut dyn FnMut(&'s mut [u8]),
        pos: usize,
    ) -> Self {
        Feed {
            next,
            recycle,
            text: Text::Joined(String::new()),
            base: pos,
            pos,
            last: false,
            queue: VecDeque::new(),
            helper: None,
            drained: false,
            handoff: None,
            shared: false,
        }
    }

    fn next_piece(&mut self) -> Next<'s> {
        if let Some(piece) = self.queue.pop_front() {
            return Next::Piece(piece);
        }
        if self.handoff.is_some() {
            return Next::Paused;
        }
        if self.drained {
            return Next::End;
        }
        match (self.next)() {
            Some(piece) => Next::Piece(piece),
            None => Next::End,
        }
    }

    /// Whether the text at hand ends at `pos` because the helper starts
    /// there.
    fn paused_at(&self, pos: usize) -> bool {
        self.handoff == Some(pos) && self.queue.is_empty()
    }

    /// At a tab: if the decoder has finished, hand the later pieces to the
    /// helper (once); if this is the tab the helper started at, adopt its
    /// walk and go on from where it stopped.
    fn at_tab(&mut self) -> Result<Option<Walked>> {
        if !self.drained {
            match &self.helper {
                Some(helper) if helper.done.load(Ordering::Acquire) => self.share()?,
                _ => {}
            }
        }
        if self.handoff != Some(self.pos) {
            return Ok(None);
        }
        if !self.queue.is_empty() {
            return Err(GiveUp);
        }
        let helper = self.helper.as_deref_mut().ok_or(GiveUp)?;
        let speculation = receive(&helper.take).flatten().ok_or(GiveUp)?;
        self.handoff = None;
        self.replace(speculation.text, speculation.base);
        self.pos = speculation.end;
        self.queue = speculation.queue;
        self.last = speculation.last;
        self.shared = true;
        Ok(Some(speculation.walked))
    }

    /// Take every piece left, and hand the later ones to the helper from a
    /// tab that starts one of them, so that each thread has about half of
    /// what is left to walk.
    fn share(&mut self) -> Result<()> {
        let Some(helper) = self.helper.as_deref_mut() else {
            return Ok(());
        };
        self.drained = true;
        self.queue.extend(helper.arrived.try_iter());
        let min_share = helper.min_share;
        // The end of the text before each queued piece, and what each adds.
        let mut ends = Vec::with_capacity(self.queue.len());
        let mut end = self.base + self.text.as_str().len();
        let mut total = end.saturating_sub(self.pos);
        for piece in &self.queue {
            ends.push(end);
            let piece_end = piece.base + piece.len;
            total += piece_end.saturating_sub(end);
            end = end.max(piece_end);
        }
        let doc_end = end;
        let best = (0..self.queue.len())
            .filter(|&i| {
                let before = match i {
                    0 => self.text.as_str(),
                    _ => self.queue[i - 1].text(),
                };
                tab_starts_at(before, &self.queue[i], ends[i])
            })
            .map(|i| (i, doc_end - ends[i]))
            .filter(|&(_, share)| share >= min_share)
            .min_by_key(|&(_, share)| share.abs_diff(total / 2));
        let give = helper.give.take();
        let Some((i, _)) = best else {
            return Ok(());
        };
        let pieces = self.queue.split_off(i);
        let start = ends[i];
        give.ok_or(GiveUp)?
            .send(Handoff { start, pieces })
            .map_err(|_| GiveUp)?;
        self.handoff = Some(start);
        Ok(())
    }

    /// Run one step of the walk from the current position; again on more
    /// text if it fails or ends at the edge of the text at hand.
    fn step<R>(&mut self, mut f: impl FnMut(&mut Cursor<'_>) -> Result<R>) -> Result<R> {
        loop {
            let text = self.text.as_str();
            let mut cursor = Cursor {
                text,
                base: self.base,
                pos: self.pos,
            };
            let result = f(&mut cursor);
            let end = self.base + text.len();
            match result {
                Ok(value) if self.last || cursor.pos < end || self.paused_at(cursor.pos) => {
                    self.pos = cursor.pos;
                    return Ok(value);
                }
                Err(GiveUp) if self.last => return Err(GiveUp),
                _ => self.more()?,
            }
        }
    }

    /// Replace the text at hand, giving its buffer back if it was a piece's.
    fn replace(&mut self, text: Text<'s>, base: usize) {
        if let Text::Piece(old) = std::mem::replace(&mut self.text, text) {
            (self.recycle)(old.into_bytes());
        }
        self.base = base;
    }

    /// Take in more pieces: at least one, and until the text from the
    /// current position has doubled (so a value many pieces long is tried
    /// a few times, not once per piece). Text before the position goes.
    fn more(&mut self) -> Result<()> {
        let kept = self.base + self.text.as_str().len() - self.pos;
        let mut first = true;
        loop {
            let piece = match self.next_piece() {
                Next::Piece(piece) => piece,
                Next::End => {
                    self.last = true;
                    return Ok(());
                }
                // Text stops where the helper starts.
                Next::Paused if first => return Err(GiveUp),
                Next::Paused => return Ok(()),
            };
            let end = self.base + self.text.as_str().len();
            // Pieces overlap: each starts within the text before it.
            if piece.base > end || piece.base + piece.len < end {
                return Err(GiveUp);
            }
            if first && piece.base <= self.pos {
                // The piece repeats the text still needed: take it whole.
                let base = piece.base;
                self.replace(Text::Piece(piece), base);
            } else {
                if first || matches!(self.text, Text::Piece(_)) {
                    // Keep the text from the position, and add the piece
                    // behind it.
                    let rest = self
                        .text
                        .as_str()
                        .get(self.pos - self.base..)
                        .ok_or(GiveUp)?;
                    let mut joined = String::with_capacity(rest.len() + piece.len);
                    joined.push_str(rest);
                    self.replace(Text::Joined(joined), self.pos);
                }
                let new = piece.text().get(end - piece.base..).ok_or(GiveUp)?;
                if let Text::Joined(joined) = &mut self.text {
                    joined.push_str(new);
                }
                (self.recycle)(piece.into_bytes());
            }
            first = false;
            if self.base + self.text.as_str().len() - self.pos >= 2 * kept {
                return Ok(());
            }
        }
    }

    /// After the top-level value: only whitespace may follow, to the end.
    fn only_space_left(&mut self) -> Result<()> {
        loop {
            let text = self.text.as_str();
            let rest = text.get(self.pos - self.base..).ok_or(GiveUp)?;
            if !rest.bytes().all(is_space) {
                return Err(GiveUp);
            }
            if self.last {
                return Ok(());
            }
            self.pos = self.base + text.len();
            self.more()?;
        }
    }
}

/// The keys of the top-level object that count.
#[derive(Clone, Copy)]
enum TopKey {
    Windows,
    ClosedWindows,
    SelectedWindow,
    SavedGroups,
    Session,
    Other,
}

impl TopKey {
    fn of(key: &str) -> Self {
        match key {
            "windows" => TopKey::Windows,
            "_closedWindows" => TopKey::ClosedWindows,
            "selectedWindow" => TopKey::SelectedWindow,
            "savedGroups" => TopKey::SavedGroups,
            "session" => TopKey::Session,
            _ => TopKey::Other,
        }
    }
}

/// The top-level object (`parallel::session`, counting).
fn session(feed: &mut Feed<'_, '_>, visitor: &mut Visitor<'_>) -> Result<Summary> {
    let mut s = Summary::default();
    let mut windows = None;
    let mut closed_windows = None;
    let mut selected_window = None;
    let mut saved_groups = None;
    let mut timestamps = None;
    let mut more = feed.step(|c| c.open(b'{', b'}'))?;
    while more {
        match feed.step(|c| c.key().map(|key| TopKey::of(&key)))? {
            TopKey::Windows => {
                windows_array(feed, Some(&mut *visitor), |t| {
                    s.windows += 1;
                    s.tabs += t.tabs;
                    s.pinned_tabs += t.pinned;
                    s.hidden_tabs += t.hidden;
                    s.history_entries += t.entries;
                    s.closed_tabs += t.closed_tabs;
                    s.tab_groups += t.groups;
                })?;
                once(&mut windows, ())?;
            }
            TopKey::ClosedWindows => {
                windows_array(feed, None, |t| {
                    s.closed_windows += 1;
                    s.closed_window_tabs += t.tabs;
                })?;
                once(&mut closed_windows, ())?;
            }
            TopKey::SelectedWindow => {
                once(
                    &mut selected_window,
                    feed.step(|c| Ok(c.value::<OptU64>()?.0))?,
                )?;
            }
            TopKey::SavedGroups => {
                let n = feed.step(|c| Ok(c.value::<List<TabGroup>>()?.0.len()))?;
                once(&mut saved_groups, n)?;
            }
            TopKey::Session => {
                let t = feed.step(|c| Ok(c.value::<OrDefault<Timestamps>>()?.0))?;
                once(&mut timestamps, t)?;
            }
            TopKey::Other => feed.step(|c| c.value::<IgnoredAny>().map(drop))?,
        }
        more = feed.step(|c| c.more(b'}'))?;
    }
    feed.only_space_left()?;
    windows.ok_or(GiveUp)?;
    s.saved_groups = saved_groups.unwrap_or_default();
    s.timestamps = timestamps.unwrap_or_default();
    // As `Session::selected_window_index`: 1-based, within the open windows.
    s.selected_window = selected_window
        .flatten()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=s.windows).contains(n));
    Ok(s)
}

/// What one window adds to a summary.
#[derive(Default)]
struct WindowTally {
    tabs: usize,
    pinned: usize,
    hidden: usize,
    entries: usize,
    closed_tabs: usize,
    groups: usize,
}

impl WindowTally {
    fn add(&mut self, other: &WindowTally) {
        self.tabs += other.tabs;
        self.pinned += other.pinned;
        self.hidden += other.hidden;
        self.entries += other.entries;
        self.closed_tabs += other.closed_tabs;
        self.groups += other.groups;
    }
}

/// `windows` or `_closedWindows`: `count` is called with each window's tally.
/// Open windows' tabs go to `visitor`.
fn windows_array(
    feed: &mut Feed<'_, '_>,
    mut visitor: Option<&mut Visitor<'_>>,
    mut count: impl FnMut(WindowTally),
) -> Result<()> {
    let mut more = feed.step(|c| c.open(b'[', b']'))?;
    while more {
        let (tally, later) = window(feed, visitor.as_deref_mut())?;
        count(tally);
        if let Some(later) = later {
            // The helper read the windows after it, and the `]`.
            later.into_iter().for_each(&mut count);
            return Ok(());
        }
        more = feed.step(|c| c.more(b']'))?;
    }
    Ok(())
}

/// One window object (`parallel::window`, counting). When the helper's
/// walk is adopted in it, also the windows the helper counted after it.
fn window(
    feed: &mut Feed<'_, '_>,
    visitor: Option<&mut Visitor<'_>>,
) -> Result<(WindowTally, Option<Vec<WindowTally>>)> {
    let mut tally = WindowTally::default();
    let mut seen = 0u16;
    let mut later = None;
    if feed.step(|c| c.open(b'{', b'}'))? {
        later = window_fields(feed, &mut tally, &mut seen, visitor)?;
    }
    Ok((tally, later))
}

/// A window's fields, from a key to the `}` that ends the window; `seen`
/// has a bit for each field read ([`WindowFields::seen`]). When the
/// helper's walk is adopted in its `tabs`, the windows the helper counted
/// after it.
fn window_fields(
    feed: &mut Feed<'_, '_>,
    tally: &mut WindowTally,
    seen: &mut u16,
    mut visitor: Option<&mut Visitor<'_>>,
) -> Result<Option<Vec<WindowTally>>> {
    loop {
        // A field other than `tabs` is read whole with its key, and kept
        // only as counts and which field it was.
        let field = feed.step(|c| {
            let key = c.key()?;
            if key == "tabs" {
                return Ok(None);
            }
            let mut fields = WindowFields::default();
            fields.read(&key, c)?;
            let count = |list: Option<usize>| list.unwrap_or(0);
            Ok(Some((
                fields.seen(),
                count(fields.closed_tabs.as_ref().map(Vec::len)),
                count(fields.groups.as_ref().map(Vec::len)),
            )))
        })?;
        let (mask, closed_tabs, groups) = match field {
            Some(field) => field,
            None => {
                if *seen & TABS_SEEN != 0 {
                    return Err(GiveUp);
                }
                if let Some(walked) = tabs(feed, tally, visitor.as_deref_mut())? {
                    // The helper read the rest of this window (fields a
                    // window has once only) and the windows after it.
                    if *seen & walked.seen != 0 {
                        return Err(GiveUp);
                    }
                    tally.add(&walked.tally);
                    return Ok(Some(walked.windows));
                }
                (TABS_SEEN, 0, 0)
            }
        };
        if *seen & mask != 0 {
            return Err(GiveUp);
        }
        *seen |= mask;
        tally.closed_tabs += closed_tabs;
        tally.groups += groups;
        if !feed.step(|c| c.more(b'}'))? {
            return Ok(None);
        }
    }
}

/// A window's `tabs` (`parallel::tabs_array`): the helper's walk if adopted
/// in it.
fn tabs(
    feed: &mut Feed<'_, '_>,
    tally: &mut WindowTally,
    visitor: Option<&mut Visitor<'_>>,
) -> Result<Option<Walked>> {
    if feed.step(|c| c.peek())? != b'[' {
        // Not an array: no tabs (`de::list`).
        tally.tabs += feed.step(|c| Ok(c.value::<List<Tab>>()?.0.len()))?;
        return Ok(None);
    }
    if !feed.step(|c| c.open(b'[', b']'))? {
        return Ok(None);
    }
    tab_run(feed, tally, visitor)
}

/// Tabs of a window's `tabs`, one per step, from a tab to the `]`; or to the
/// tab where the helper's walk is adopted (its tabs are written to
/// `visitor`'s output here).
fn tab_run(
    feed: &mut Feed<'_, '_>,
    tally: &mut WindowTally,
    mut visitor: Option<&mut Visitor<'_>>,
) -> Result<Option<Walked>> {
    loop {
        if let Some(walked) = feed.at_tab()? {
            if let Some(v) = visitor {
                v.out.extend_from_slice(&walked.out);
            }
            return Ok(Some(walked));
        }
        // A step may run twice: it returns the counts, added here, and cuts
        // what the visitor wrote back before writing again.
        let mark = visitor.as_ref().map_or(0, |v| v.out.len());
        let (pinned, hidden, entries) = feed.step(|c| {
            let tab = c.value::<Tab>()?;
            if let Some(v) = visitor.as_deref_mut() {
                v.out.truncate(mark);
                (v.visit)(&tab, v.out);
            }
            Ok((tab.pinned, tab.hidden, tab.entries.len()))
        })?;
        tally.tabs += 1;
        tally.pinned += usize::from(pinned);
        tally.hidden += usize::from(hidden);
        tally.entries += entries;
        if !feed.step(|c| c.more(b']'))? {
            return Ok(None);
        }
    }
}

/// Whether a tab starts at `at`, the end of `before` (the text before
/// `piece`'s new text): `before` ends with the `,` of [`TAB_START`], and
/// `piece` has the rest there.
fn tab_starts_at(before: &str, piece: &Piece<'_>, at: usize) -> bool {
    before.ends_with(',')
        && at
            .checked_sub(piece.base)
            .and_then(|i| piece.text().get(i..))
            .is_some_and(|rest| rest.as_bytes().starts_with(&TAB_START[1..]))
}
