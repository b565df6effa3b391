//! Counts and timestamps of a session, as shown by `ffsession info`.

use serde::Serialize;

use super::{Session, Timestamps};

/// What a session holds, in numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Open windows.
    pub windows: usize,
    /// Tabs in open windows.
    pub tabs: usize,
    /// Pinned tabs in open windows.
    pub pinned_tabs: usize,
    /// Hidden tabs in open windows.
    pub hidden_tabs: usize,
    /// Tab groups in open windows.
    pub tab_groups: usize,
    /// Saved (closed) tab groups.
    pub saved_groups: usize,
    /// Recently closed tabs of open windows.
    pub closed_tabs: usize,
    /// Recently closed windows.
    pub closed_windows: usize,
    /// Tabs inside the recently closed windows.
    pub closed_window_tabs: usize,
    /// History entries over all open tabs.
    pub history_entries: usize,
    /// 1-based selected window, if valid.
    pub selected_window: Option<usize>,
    /// `session.lastUpdate`, `startTime`, `recentCrashes`.
    #[serde(flatten)]
    pub timestamps: Timestamps,
}

impl Summary {
    /// Count everything in `session`.
    pub fn of(session: &Session<'_>) -> Self {
        let mut s = Summary {
            windows: session.windows.len(),
            closed_windows: session.closed_windows.len(),
            saved_groups: session.saved_groups.len(),
            selected_window: session.selected_window_index(),
            timestamps: session.session,
            ..Summary::default()
        };
        for w in &session.windows {
            s.tabs += w.tabs.len();
            s.closed_tabs += w.closed_tabs.len();
            s.tab_groups += w.groups.len();
            for t in &w.tabs {
                s.pinned_tabs += usize::from(t.pinned);
                s.hidden_tabs += usize::from(t.hidden);
                s.history_entries += t.entries.len();
            }
        }
        s.closed_window_tabs = session.closed_windows.iter().map(|w| w.tabs.len()).sum();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_open_closed_and_pinned() {
        let json = br#"{"windows":[
              {"tabs":[{"entries":[{"url":"a"},{"url":"b"}],"pinned":true},{"entries":[]}],
               "_closedTabs":[{"state":{"entries":[{"url":"c"}]}}],"groups":[{"id":"g"}]},
              {"tabs":[{"entries":[{"url":"d"}],"hidden":true}]}],
            "_closedWindows":[{"tabs":[{"entries":[]},{"entries":[]}]}],
            "selectedWindow":2,"session":{"lastUpdate":9,"startTime":3,"recentCrashes":1}}"#;
        let s = Session::from_json(json).unwrap().summary();
        assert_eq!(
            (s.windows, s.tabs, s.pinned_tabs, s.hidden_tabs),
            (2, 3, 1, 1)
        );
        assert_eq!(
            (s.closed_tabs, s.closed_windows, s.closed_window_tabs),
            (1, 1, 2)
        );
        assert_eq!(
            (s.tab_groups, s.history_entries, s.selected_window),
            (1, 3, Some(2))
        );
        assert_eq!(s.timestamps.last_update, Some(9));
        assert_eq!(s.timestamps.recent_crashes, Some(1));
    }
}
