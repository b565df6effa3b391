//! Extracting tabs named one by one, open or not: recently closed tabs,
//! closed windows and tabs `tidy` archived become open tabs of the result,
//! as Firefox would reopen them, each written as Firefox wrote it.

use std::collections::HashSet;

use serde_json::value::RawValue;

use super::edit::{archived_matches, render_session, EditResult};
use super::raw::{RawObject, RawWindow, RenderOptions, TabEdit};
use super::{Editable, TidyError};
use crate::session::Tab;
use crate::store::ArchivedTab;

/// Tabs and windows of a session named one by one ([`super::Selection::Picked`]).
/// Every number is 1-based, as `ffsession tabs --closed` lists them.
#[derive(Debug, Clone, Default)]
pub struct Picked<'q> {
    /// Open tabs: (window, position).
    pub tabs: Vec<(usize, usize)>,
    /// Recently closed tabs of open windows: (window, position in its list
    /// of closed tabs). Each becomes an open tab of its window.
    pub closed_tabs: Vec<(usize, usize)>,
    /// Recently closed windows, whole (their number in the list of closed
    /// windows). Each becomes an open window.
    pub closed_windows: Vec<usize>,
    /// Tabs of recently closed windows: (closed window, position). Each
    /// window becomes an open window holding those tabs.
    pub closed_window_tabs: Vec<(usize, usize)>,
    /// Tabs `tidy` archived, as the store records them (of the snapshot
    /// being extracted from, which holds them open).
    pub archived: &'q [ArchivedTab],
}

impl Picked<'_> {
    /// True if nothing is named.
    pub fn is_empty(&self) -> bool {
        self.tabs.is_empty()
            && self.closed_tabs.is_empty()
            && self.closed_windows.is_empty()
            && self.closed_window_tabs.is_empty()
            && self.archived.is_empty()
    }
}

/// A window made for the result: `base`'s members with `tabs` as its tabs
/// (each read again for its group).
fn window_with<'a>(base: &RawWindow<'a>, tabs: Vec<&'a RawValue>) -> RawWindow<'a> {
    RawWindow {
        len: base.len,
        obj: base.obj.clone(),
        facts: tabs
            .iter()
            .map(|t| serde_json::from_str::<Tab<'a>>(t.get()).ok())
            .collect(),
        tabs,
        selected: base.selected,
        groups: base.groups.clone(),
    }
}

/// The `state` of a recently closed tab: the tab Firefox reopens.
fn closed_state(item: &RawValue) -> Option<&RawValue> {
    RawObject::parse(item.get()).ok()?.get("state")
}

/// Sorted, without repeats.
fn set<T: Ord + Copy>(list: &[T]) -> Vec<T> {
    let mut v = list.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// A session holding the open windows with the tabs `picked` names (open,
/// archived, or recently closed ones reopened in their window), then the
/// closed windows it names, reopened. Nothing else: no closed tab or window.
pub(super) fn extract_picked(
    session: &Editable<'_>,
    picked: &Picked<'_>,
) -> Result<EditResult, TidyError> {
    let doc = &session.doc;
    let nothing = |what: String| TidyError::NothingSelected {
        path: session.path().to_path_buf(),
        what,
    };
    if picked.is_empty() {
        return Err(nothing("no tab".to_owned()));
    }
    let open_window = |w: usize| w.checked_sub(1).and_then(|wi| doc.windows.get(wi));
    let no_window = || format!("the session has {} windows", doc.windows.len());
    let mut hits: HashSet<(usize, usize)> = HashSet::new();
    for &(w, p) in &picked.tabs {
        let win =
            open_window(w).ok_or_else(|| nothing(format!("tab {w}:{p} ({})", no_window())))?;
        if p == 0 || p > win.tabs.len() {
            return Err(nothing(format!(
                "tab {w}:{p} (window {w} has {} tabs)",
                win.tabs.len()
            )));
        }
        hits.insert((w - 1, p - 1));
    }
    if !picked.archived.is_empty() {
        hits.extend(archived_matches(session, picked.archived).map_err(nothing)?);
    }
    // Recently closed tabs, reopened at the end of their window.
    let mut reopened: Vec<Vec<&RawValue>> = vec![Vec::new(); doc.windows.len()];
    for (w, p) in set(&picked.closed_tabs) {
        let what = || format!("closed tab {w}:{p}");
        let win = open_window(w).ok_or_else(|| nothing(format!("{} ({})", what(), no_window())))?;
        let closed = win.closed_tabs();
        let item = p
            .checked_sub(1)
            .and_then(|i| closed.get(i))
            .ok_or_else(|| {
                nothing(format!(
                    "{} (window {w} has {} recently closed tabs)",
                    what(),
                    closed.len()
                ))
            })?;
        let state = closed_state(item)
            .ok_or_else(|| nothing(format!("{} (it holds no tab state)", what())))?;
        reopened[w - 1].push(state);
    }
    let mut made: Vec<(RawWindow<'_>, Vec<TabEdit>)> = Vec::new();
    let mut selected_window = None;
    for (wi, w) in doc.windows.iter().enumerate() {
        let extra = &reopened[wi];
        let mut edits: Vec<TabEdit> = (0..w.tabs.len())
            .map(|ti| {
                if hits.contains(&(wi, ti)) {
                    TabEdit::Keep
                } else {
                    TabEdit::Remove
                }
            })
            .collect();
        if extra.is_empty() && !edits.contains(&TabEdit::Keep) {
            continue;
        }
        if doc.selected_window() == Some(wi) {
            selected_window = Some(made.len());
        }
        edits.extend(extra.iter().map(|_| TabEdit::Keep));
        let tabs = w.tabs.iter().chain(extra).copied().collect();
        made.push((window_with(w, tabs), edits));
    }
    // Closed windows, reopened whole or with the tabs named.
    let whole = set(&picked.closed_windows);
    let some = set(&picked.closed_window_tabs);
    if !whole.is_empty() || !some.is_empty() {
        let closed = doc.closed_windows().map_err(|e| TidyError::NotEditable {
            path: session.path().to_path_buf(),
            reason: format!("its closed windows do not read: {e}"),
        })?;
        let numbers: Vec<usize> = set(&whole
            .iter()
            .copied()
            .chain(some.iter().map(|(n, _)| *n))
            .collect::<Vec<_>>());
        for n in numbers {
            let win = n
                .checked_sub(1)
                .and_then(|i| closed.get(i))
                .ok_or_else(|| {
                    nothing(format!(
                        "closed window {n} (the session has {} closed windows)",
                        closed.len()
                    ))
                })?;
            let mut edits = vec![TabEdit::Remove; win.tabs.len()];
            for &(m, p) in some.iter().filter(|(m, _)| *m == n) {
                let slot = p
                    .checked_sub(1)
                    .and_then(|i| edits.get_mut(i))
                    .ok_or_else(|| {
                        nothing(format!(
                            "tab {p} of closed window {m} (it has {} tabs)",
                            win.tabs.len()
                        ))
                    })?;
                *slot = TabEdit::Keep;
            }
            if whole.contains(&n) {
                edits.fill(TabEdit::Keep);
            }
            if win.tabs.is_empty() {
                return Err(nothing(format!("closed window {n} (it has no tab)")));
            }
            made.push((window_with(win, win.tabs.clone()), edits));
        }
    }
    let windows: Vec<(&RawWindow<'_>, &[TabEdit])> =
        made.iter().map(|(w, e)| (w, e.as_slice())).collect();
    let opts = RenderOptions {
        drop_closed_tabs: true,
        drop_closed_windows: true,
        selected_window,
        last_update: None,
    };
    render_session(session, &windows, opts)
}
