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
//! last piece may end a step at its edge.
//!
//! Anything the fast paths give up on gives up here too; the caller then
//! reads the file the ordinary way, which decides (and words any error).
//! A test and the `summarize` fuzz target hold the counts to those of
//! [`Summary::of`] the reference parse.

use serde::de::IgnoredAny;

use super::parallel::{is_space, once, Cursor, GiveUp, List, OptU64, OrDefault, WindowFields};
use super::{de, Summary, Tab, TabGroup, Timestamps};

type Result<T> = std::result::Result<T, GiveUp>;

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
/// `recycle`. `None` where the ordinary read must decide.
///
/// `visit` is given each open tab, in order, with `out` to write to: once per
/// tab in what `out` holds at the end (a step run again first cuts `out` back
/// to where it was before the step).
pub(crate) fn summary<'s>(
    next: &mut dyn FnMut() -> Option<Piece<'s>>,
    recycle: &mut dyn FnMut(&'s mut [u8]),
    visit: &mut dyn FnMut(&Tab<'_>, &mut Vec<u8>),
    out: &mut Vec<u8>,
) -> Option<Summary> {
    let mut feed = Feed {
        next,
        recycle,
        text: Text::Joined(String::new()),
        base: 0,
        pos: 0,
        last: false,
    };
    let mut visitor = Visitor { visit, out };
    de::fast_attempt(|| session(&mut feed, &mut visitor)).ok()
}

/// What is done with each open tab, and where it writes.
struct Visitor<'v> {
    visit: &'v mut dyn FnMut(&Tab<'_>, &mut Vec<u8>),
    out: &'v mut Vec<u8>,
}

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
}

impl<'s> Feed<'_, 's> {
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
                Ok(value) if self.last || cursor.pos < end => {
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
            let Some(piece) = (self.next)() else {
                self.last = true;
                return Ok(());
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

/// `windows` or `_closedWindows`: `count` is called with each window's tally.
/// Open windows' tabs go to `visitor`.
fn windows_array(
    feed: &mut Feed<'_, '_>,
    mut visitor: Option<&mut Visitor<'_>>,
    mut count: impl FnMut(WindowTally),
) -> Result<()> {
    let mut more = feed.step(|c| c.open(b'[', b']'))?;
    while more {
        count(window(feed, visitor.as_deref_mut())?);
        more = feed.step(|c| c.more(b']'))?;
    }
    Ok(())
}

/// One window object (`parallel::window`, counting).
fn window(feed: &mut Feed<'_, '_>, visitor: Option<&mut Visitor<'_>>) -> Result<WindowTally> {
    let mut visitor = visitor;
    let mut tally = WindowTally::default();
    let mut seen = 0u16;
    let mut more = feed.step(|c| c.open(b'{', b'}'))?;
    while more {
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
                tabs(feed, &mut tally, visitor.as_deref_mut())?;
                // The bit `WindowFields::seen` gives `tabs`.
                (1, 0, 0)
            }
        };
        if seen & mask != 0 {
            return Err(GiveUp);
        }
        seen |= mask;
        tally.closed_tabs += closed_tabs;
        tally.groups += groups;
        more = feed.step(|c| c.more(b'}'))?;
    }
    Ok(tally)
}

/// A window's `tabs` (`parallel::tabs_array`), one tab per step.
fn tabs(
    feed: &mut Feed<'_, '_>,
    tally: &mut WindowTally,
    mut visitor: Option<&mut Visitor<'_>>,
) -> Result<()> {
    if feed.step(|c| c.peek())? != b'[' {
        // Not an array: no tabs (`de::list`).
        tally.tabs += feed.step(|c| Ok(c.value::<List<Tab>>()?.0.len()))?;
        return Ok(());
    }
    let mut more = feed.step(|c| c.open(b'[', b']'))?;
    while more {
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
        more = feed.step(|c| c.more(b']'))?;
    }
    Ok(())
}
