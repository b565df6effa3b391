//! A flat view of a session's tabs: one [`TabRecord`] per tab, as listed by
//! `ffsession tabs` and rendered by [`crate::export`].

use std::borrow::Cow;

use serde::Serialize;

use super::{Session, Tab, Window};

/// Whether a listed tab is open, recently closed, or in a recently closed window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TabState {
    /// An open tab in an open window.
    Open,
    /// A recently closed tab of an open window.
    Closed,
    /// A tab of a recently closed window.
    ClosedWindow,
    /// A tab `tidy` closed and archived: from the store's catalog, never from
    /// a session file.
    Archived,
}

impl TabState {
    /// The name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            TabState::Open => "open",
            TabState::Closed => "closed",
            TabState::ClosedWindow => "closed-window",
            TabState::Archived => "archived",
        }
    }
}

/// One tab, flattened, borrowing from the parsed session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TabRecord<'s> {
    /// 1-based window number: in `windows` for open and closed tabs, in
    /// `_closedWindows` for tabs of closed windows.
    pub window: usize,
    /// 1-based position in the window (for closed tabs: in the closed list).
    pub position: usize,
    /// Open, closed, or in a closed window.
    pub state: TabState,
    /// URL of the current history entry.
    pub url: Option<&'s str>,
    /// Title of the current history entry.
    pub title: Option<&'s str>,
    /// Pinned.
    pub pinned: bool,
    /// Hidden.
    pub hidden: bool,
    /// The window's selected tab.
    pub selected: bool,
    /// Tab group name (or id when the group has no name).
    pub group: Option<&'s str>,
    /// Container id (`userContextId`), 0 for none.
    pub container: u64,
    /// Last time the tab was selected, ms since the epoch.
    pub last_accessed: Option<u64>,
    /// When the tab (or its window) was closed, ms since the epoch.
    pub closed_at: Option<u64>,
    /// Number of back/forward history entries.
    pub history_len: usize,
    /// A fork's mark: a tab shown in every space. Set by the fork's module
    /// ([`Session::tab_records_with`]); false for Firefox.
    pub essential: bool,
    /// A fork's mark: the space the tab is in, by id or by name. Set by the
    /// fork's module ([`Session::tab_records_with`]); `None` for Firefox.
    pub space: Option<Cow<'s, str>>,
}

/// Which tabs to list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TabFilter {
    /// Only this 1-based window of `windows` (closed windows are then left out).
    pub window: Option<usize>,
    /// Also list recently closed tabs and the tabs of recently closed windows.
    pub include_closed: bool,
}

pub(crate) fn record<'s>(
    window: &'s Window<'_>,
    tab: &'s Tab<'_>,
    number: usize,
    position: usize,
    state: TabState,
) -> TabRecord<'s> {
    TabRecord {
        window: number,
        position,
        state,
        url: tab.url(),
        title: tab.title(),
        pinned: tab.pinned,
        hidden: tab.hidden,
        selected: state != TabState::Closed && window.selected == Some(position as u64),
        group: tab
            .group_id
            .as_deref()
            .and_then(|id| window.group_name(id).or(Some(id))),
        container: tab.container(),
        last_accessed: tab.last_accessed,
        closed_at: None,
        history_len: tab.entries.len(),
        essential: false,
        space: None,
    }
}

impl<'a> Session<'a> {
    /// Every tab that `filter` selects, in file order: open tabs window by window,
    /// each window's closed tabs after its open ones, then closed windows.
    /// A fork's marks are left unset: see [`Session::tab_records_with`].
    pub fn tab_records(&self, filter: TabFilter) -> impl Iterator<Item = TabRecord<'_>> + '_ {
        self.tab_records_with(filter, |_, record| record)
    }

    /// [`Session::tab_records`], each record passed through `mark` with its
    /// tab: how a fork's module sets its marks (`essential`, `space`) from
    /// the tab's [`ForkData`](super::ForkData).
    pub fn tab_records_with<'s, M>(
        &'s self,
        filter: TabFilter,
        mark: M,
    ) -> impl Iterator<Item = TabRecord<'s>> + use<'s, 'a, M>
    where
        M: Fn(&'s Tab<'a>, TabRecord<'s>) -> TabRecord<'s> + Copy + 's,
    {
        let open_windows = self
            .windows
            .iter()
            .enumerate()
            .map(|(i, w)| (i + 1, w))
            .filter(move |(n, _)| filter.window.is_none_or(|want| want == *n));
        let open = open_windows.flat_map(move |(n, w)| {
            let tabs = w
                .tabs
                .iter()
                .enumerate()
                .map(move |(i, t)| mark(t, record(w, t, n, i + 1, TabState::Open)));
            let closed = w
                .closed_tabs
                .iter()
                .take(if filter.include_closed { usize::MAX } else { 0 })
                .enumerate()
                .map(move |(i, c)| {
                    let record = TabRecord {
                        title: c.state.title().or(c.title.as_deref()),
                        closed_at: c.closed_at,
                        ..record(w, &c.state, n, i + 1, TabState::Closed)
                    };
                    mark(&c.state, record)
                });
            tabs.chain(closed)
        });
        let show_closed_windows = filter.include_closed && filter.window.is_none();
        let closed_windows = self
            .closed_windows
            .iter()
            .take(if show_closed_windows { usize::MAX } else { 0 })
            .enumerate()
            .flat_map(move |(i, w)| {
                w.tabs.iter().enumerate().map(move |(j, t)| {
                    let record = TabRecord {
                        closed_at: w.closed_at,
                        ..record(w, t, i + 1, j + 1, TabState::ClosedWindow)
                    };
                    mark(t, record)
                })
            });
        open.chain(closed_windows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &[u8] = br#"{"windows":[
          {"tabs":[{"entries":[{"url":"a","title":"A"}],"groupId":"g1"},{"entries":[{"url":"b"}]}],"selected":2,
           "groups":[{"id":"g1","name":"Work"}],
           "_closedTabs":[{"state":{"entries":[{"url":"c"}]},"title":"C","closedAt":5}]},
          {"tabs":[{"entries":[{"url":"d"}]}]}],
        "_closedWindows":[{"tabs":[{"entries":[{"url":"e"}]}],"closedAt":7}]}"#;

    #[test]
    fn lists_open_tabs_only_by_default() {
        let s = Session::from_json(JSON).unwrap();
        let urls: Vec<_> = s
            .tab_records(TabFilter::default())
            .map(|r| r.url.unwrap())
            .collect();
        assert_eq!(urls, ["a", "b", "d"]);
        let first = s.tab_records(TabFilter::default()).next().unwrap();
        assert_eq!((first.group, first.selected), (Some("Work"), false));
        assert!(s.tab_records(TabFilter::default()).nth(1).unwrap().selected);
    }

    #[test]
    fn closed_tabs_and_windows_on_request() {
        let s = Session::from_json(JSON).unwrap();
        let all: Vec<_> = s
            .tab_records(TabFilter {
                window: None,
                include_closed: true,
            })
            .map(|r| (r.url.unwrap(), r.state, r.window, r.closed_at, r.title))
            .collect();
        assert_eq!(
            all,
            [
                ("a", TabState::Open, 1, None, Some("A")),
                ("b", TabState::Open, 1, None, None),
                ("c", TabState::Closed, 1, Some(5), Some("C")),
                ("d", TabState::Open, 2, None, None),
                ("e", TabState::ClosedWindow, 1, Some(7), None),
            ]
        );
        let w2: Vec<_> = s
            .tab_records(TabFilter {
                window: Some(2),
                include_closed: true,
            })
            .map(|r| r.url.unwrap())
            .collect();
        assert_eq!(w2, ["d"]);
    }
}
