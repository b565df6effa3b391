//! Counting a session while its JSON arrives a piece at a time, keeping
//! none of it: what `ffsession info` needs, in the memory of a few pieces
//! instead of the whole JSON (`format/summarize.rs` decodes the pieces on
//! another thread meanwhile).
//!
//! The walk is `parallel.rs`'s, over the same [`Cursor`](super::parallel::Cursor): the top level and
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

use serde::de::IgnoredAny;

use super::de::{List, OptU64, OrDefault};
use super::parallel::{once, GiveUp, WindowFields};
use super::{de, Summary, Tab, TabGroup, Timestamps};

mod feed;

pub(crate) use feed::{receive, Handoff, Helper, Piece, Speculation};
use feed::{Feed, Walked, WindowTally};

type Result<T> = std::result::Result<T, GiveUp>;

/// What is done with each open tab: given the tab and the output to write to.
pub(crate) type Visit = fn(&Tab<'_>, &mut Vec<u8>);

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
    let mut feed = Feed::new(next, recycle, helper);
    let mut visitor = Visitor { visit, out };
    let summary = de::fast_attempt(|| session(&mut feed, &mut visitor)).ok()?;
    Some((summary, feed.shared()))
}

/// What is done with each open tab, and where it writes.
struct Visitor<'v> {
    visit: Visit,
    out: &'v mut Vec<u8>,
}

/// The helper's walk of the pieces in `handoff`, with `visit` given each tab.
pub(crate) fn speculate(handoff: Handoff<'_>, visit: Visit) -> Option<Speculation<'_>> {
    let mut none = || None;
    let mut drop_bytes = |_: &mut [u8]| {};
    let mut feed = Feed::handed(&mut none, &mut drop_bytes, handoff);
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
    Some(feed.finish(Walked {
        tally,
        seen: seen & !TABS_SEEN,
        windows,
        out,
    }))
}

/// The bit [`WindowFields::seen`] gives `tabs`.
const TABS_SEEN: u16 = 1;

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
            let tab = c.tab()?;
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
