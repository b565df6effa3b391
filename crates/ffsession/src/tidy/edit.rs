//! Extracting windows or tabs of a session, and merging sessions, as raw
//! values: every chosen tab is written as Firefox wrote it.

use std::collections::HashSet;

use serde::Serialize;

use super::picked::{extract_picked, Picked};
use super::raw::{self, Counting, RawWindow, RenderOptions, TabEdit};
use super::{Editable, TidyError};
use crate::session::Tab;
use crate::store::ArchivedTab;
use crate::Session;

/// What `extract` keeps.
#[derive(Debug, Clone)]
pub enum Selection<'q> {
    /// These windows (1-based), whole, with their recently closed tabs.
    Windows(Vec<usize>),
    /// Exactly the tabs `tidy` archived, as the store records them (those of
    /// the snapshot being extracted from): by window and position, or, for a
    /// record without a position, by window, URL, title and last access.
    Archived(&'q [ArchivedTab]),
    /// The open tabs whose title or URL match an FTS5 query (as `search`).
    Query(&'q str),
    /// These open tabs, each by its window and its position there (both
    /// 1-based, as `tabs` lists them).
    Tabs(Vec<(usize, usize)>),
    /// Tabs and windows named one by one, open, recently closed or
    /// archived: closed ones become open tabs and windows of the result.
    Picked(Picked<'q>),
}

/// A session written by `extract` or `merge`.
#[derive(Debug, Clone, Serialize)]
pub struct EditResult {
    /// The session JSON (it reads back as a session).
    #[serde(skip)]
    pub json: Vec<u8>,
    /// Windows in it.
    pub windows: usize,
    /// Tabs in it.
    pub tabs: usize,
}

/// Write the session of `session`'s top-level members with `windows` (each
/// with its tabs' edits) as `opts` says, and read it back.
pub(super) fn render_session(
    session: &Editable<'_>,
    windows: &[(&RawWindow<'_>, &[TabEdit])],
    opts: RenderOptions,
) -> Result<EditResult, TidyError> {
    let mut out = Counting {
        inner: Vec::new(),
        count: 0,
    };
    raw::render(&mut out, &session.doc.top, windows, opts).map_err(|e| TidyError::NotEditable {
        path: session.path().to_path_buf(),
        reason: e.to_string(),
    })?;
    finish(out.inner, session)
}

pub(super) fn finish(json: Vec<u8>, session: &Editable<'_>) -> Result<EditResult, TidyError> {
    let parsed = Session::from_json(&json).map_err(|e| TidyError::NotEditable {
        path: session.path().to_path_buf(),
        reason: format!("the result does not read back: {e}"),
    })?;
    let summary = parsed.summary();
    let (windows, tabs) = (summary.windows, summary.tabs);
    drop(parsed);
    Ok(EditResult {
        json,
        windows,
        tabs,
    })
}

/// Tabs of `session` whose title or URL match `query`, as (window, tab) indexes.
fn query_matches(
    session: &Editable<'_>,
    query: &str,
) -> Result<HashSet<(usize, usize)>, TidyError> {
    let sql = |e: rusqlite::Error| TidyError::BadQuery {
        query: query.to_owned(),
        reason: e.to_string(),
    };
    let conn = rusqlite::Connection::open_in_memory().map_err(sql)?;
    conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5(title, url)")
        .map_err(sql)?;
    let mut ids = Vec::new();
    {
        let mut put = conn
            .prepare("INSERT INTO t (rowid, title, url) VALUES (?1, ?2, ?3)")
            .map_err(sql)?;
        for (wi, w) in session.doc.windows.iter().enumerate() {
            for (ti, f) in w.facts.iter().enumerate() {
                let Some(tab) = f else { continue };
                put.execute((
                    ids.len() as i64,
                    tab.title().unwrap_or_default(),
                    tab.url().unwrap_or_default(),
                ))
                .map_err(sql)?;
                ids.push((wi, ti));
            }
        }
    }
    let mut stmt = conn
        .prepare("SELECT rowid FROM t WHERE t MATCH ?1")
        .map_err(sql)?;
    let rows = stmt
        .query_map([query], |r| r.get::<_, i64>(0))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<i64>>>())
        .map_err(sql)?;
    Ok(rows
        .into_iter()
        .filter_map(|r| ids.get(usize::try_from(r).ok()?).copied())
        .collect())
}

/// The tabs of `session` that `archived` records, as (window, tab) indexes:
/// each record names one tab. A record with a position names the tab there
/// (its URL must agree); one without names a tab of its window with its URL,
/// title and last access, the last such one not yet taken (`tidy` keeps the
/// first of equal duplicates). A record that names no tab is an error: the
/// records are not this session's.
pub(super) fn archived_matches(
    session: &Editable<'_>,
    archived: &[ArchivedTab],
) -> Result<HashSet<(usize, usize)>, String> {
    let doc = &session.doc;
    let mut taken = HashSet::new();
    let fact = |wi: usize, ti: usize| {
        doc.windows
            .get(wi)
            .and_then(|w| w.facts.get(ti))
            .and_then(Option::as_ref)
    };
    for a in archived {
        let missing = || format!("archived tab {:?} (window {})", a.url, a.window);
        let wi = usize::try_from(a.window)
            .ok()
            .and_then(|w| w.checked_sub(1))
            .ok_or_else(missing)?;
        let same = |tab: &Tab<'_>| tab.url().unwrap_or_default() == a.url;
        let found = match a.position {
            Some(p) => usize::try_from(p)
                .ok()
                .and_then(|p| p.checked_sub(1))
                .filter(|&ti| fact(wi, ti).is_some_and(same)),
            None => {
                let tabs = doc.windows.get(wi).map_or(0, |w| w.facts.len());
                (0..tabs).rev().find(|&ti| {
                    !taken.contains(&(wi, ti))
                        && fact(wi, ti).is_some_and(|tab| {
                            same(tab)
                                && tab.title().unwrap_or_default() == a.title
                                && tab.last_accessed == a.last_accessed
                        })
                })
            }
        };
        let ti = found.ok_or_else(missing)?;
        taken.insert((wi, ti));
    }
    Ok(taken)
}

/// A session holding only what `selection` chooses of `session`. Closed
/// windows are left out; so are recently closed tabs, unless whole windows
/// are chosen.
pub fn extract(session: &Editable<'_>, selection: &Selection<'_>) -> Result<EditResult, TidyError> {
    let doc = &session.doc;
    let nothing = |what: String| TidyError::NothingSelected {
        path: session.path().to_path_buf(),
        what,
    };
    let (keep, whole_windows): (Vec<Vec<TabEdit>>, bool) = match selection {
        Selection::Picked(p) => return extract_picked(session, p),
        Selection::Windows(list) => {
            for &n in list {
                if n == 0 || n > doc.windows.len() {
                    return Err(nothing(format!(
                        "window {n} (it has {} windows)",
                        doc.windows.len()
                    )));
                }
            }
            let keep = doc
                .windows
                .iter()
                .enumerate()
                .map(|(wi, w)| {
                    let e = if list.contains(&(wi + 1)) {
                        TabEdit::Keep
                    } else {
                        TabEdit::Remove
                    };
                    vec![e; w.tabs.len()]
                })
                .collect();
            (keep, true)
        }
        Selection::Archived(tabs) => {
            let hits = archived_matches(session, tabs).map_err(nothing)?;
            (
                doc.windows
                    .iter()
                    .enumerate()
                    .map(|(wi, w)| {
                        (0..w.tabs.len())
                            .map(|ti| {
                                if hits.contains(&(wi, ti)) {
                                    TabEdit::Keep
                                } else {
                                    TabEdit::Remove
                                }
                            })
                            .collect()
                    })
                    .collect(),
                false,
            )
        }
        Selection::Tabs(list) => {
            for &(w, p) in list {
                let tabs = w
                    .checked_sub(1)
                    .and_then(|wi| doc.windows.get(wi))
                    .map(|win| win.tabs.len());
                if p == 0 || tabs.is_none_or(|n| p > n) {
                    return Err(nothing(format!(
                        "tab {w}:{p} ({})",
                        match tabs {
                            Some(n) => format!("window {w} has {n} tabs"),
                            None => format!("the session has {} windows", doc.windows.len()),
                        }
                    )));
                }
            }
            let hits: HashSet<(usize, usize)> = list.iter().map(|&(w, p)| (w - 1, p - 1)).collect();
            (
                doc.windows
                    .iter()
                    .enumerate()
                    .map(|(wi, w)| {
                        (0..w.tabs.len())
                            .map(|ti| {
                                if hits.contains(&(wi, ti)) {
                                    TabEdit::Keep
                                } else {
                                    TabEdit::Remove
                                }
                            })
                            .collect()
                    })
                    .collect(),
                false,
            )
        }
        Selection::Query(q) => {
            let hits = query_matches(session, q)?;
            (
                doc.windows
                    .iter()
                    .enumerate()
                    .map(|(wi, w)| {
                        (0..w.tabs.len())
                            .map(|ti| {
                                if hits.contains(&(wi, ti)) {
                                    TabEdit::Keep
                                } else {
                                    TabEdit::Remove
                                }
                            })
                            .collect()
                    })
                    .collect(),
                false,
            )
        }
    };
    let chosen: Vec<(usize, &RawWindow<'_>, &[TabEdit])> = doc
        .windows
        .iter()
        .zip(&keep)
        .enumerate()
        .filter(|(wi, (w, e))| match selection {
            Selection::Windows(list) => list.contains(&(wi + 1)),
            _ => !w.tabs.is_empty() && e.iter().any(|e| *e != TabEdit::Remove),
        })
        .map(|(wi, (w, e))| (wi, w, e.as_slice()))
        .collect();
    if chosen.iter().all(|(_, w, _)| w.tabs.is_empty()) {
        return Err(nothing(match selection {
            Selection::Windows(_) => "the chosen windows".to_owned(),
            Selection::Archived(_) => "the archived tabs".to_owned(),
            Selection::Query(q) => format!("query {q:?}"),
            Selection::Tabs(_) | Selection::Picked(_) => "the chosen tabs".to_owned(),
        }));
    }
    let selected_window = doc
        .selected_window()
        .and_then(|s| chosen.iter().position(|(wi, _, _)| *wi == s));
    let windows: Vec<(&RawWindow<'_>, &[TabEdit])> =
        chosen.iter().map(|(_, w, e)| (*w, *e)).collect();
    let opts = RenderOptions {
        drop_closed_tabs: !whole_windows,
        drop_closed_windows: true,
        selected_window,
        last_update: None,
    };
    render_session(session, &windows, opts)
}

/// All windows of `sessions`, in order, in one session; the other top-level
/// members (closed windows, `session`, `global`, ...) are the first
/// session's, but for `session.lastUpdate`, set to `last_update` when given
/// (the time of the merge: the result is newer than its sources). With
/// `dedupe`, a tab whose URL an earlier tab has is left out (a window left
/// with no tab goes with it).
pub fn merge(
    sessions: &[Editable<'_>],
    dedupe: bool,
    last_update: Option<u64>,
) -> Result<EditResult, TidyError> {
    let first = sessions.first().ok_or_else(|| TidyError::NothingSelected {
        path: std::path::PathBuf::new(),
        what: "an empty list of sessions".to_owned(),
    })?;
    let mut seen: HashSet<&str> = HashSet::new();
    let mut edits: Vec<Vec<TabEdit>> = Vec::new();
    let mut windows: Vec<&RawWindow<'_>> = Vec::new();
    for s in sessions {
        for w in &s.doc.windows {
            let e = w
                .facts
                .iter()
                .map(|f| match f.as_ref().and_then(Tab::url) {
                    Some(u) if dedupe && !seen.insert(u) => TabEdit::Remove,
                    _ => TabEdit::Keep,
                })
                .collect();
            edits.push(e);
            windows.push(w);
        }
    }
    let list: Vec<(&RawWindow<'_>, &[TabEdit])> = windows
        .into_iter()
        .zip(&edits)
        .map(|(w, e)| (w, e.as_slice()))
        .collect();
    let opts = RenderOptions {
        drop_closed_tabs: false,
        drop_closed_windows: false,
        selected_window: first.doc.selected_window(),
        last_update,
    };
    render_session(first, &list, opts)
}
