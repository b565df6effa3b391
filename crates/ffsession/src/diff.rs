//! What changed between two sessions: tabs added, removed and moved between
//! windows, windows opened and closed.
//!
//! Only open tabs of open windows count. A tab is identified by the URL of its
//! current history entry, as a multiset: two tabs on the same page are two
//! tabs, and closing one of them is one removal. Windows of the two sessions
//! are matched by how many tab URLs they share (greedily, largest overlap
//! first); a window of `a` with no match was closed, one of `b` was opened. A
//! URL found in both sessions but in windows that do not match moved.

use std::collections::HashMap;

use serde::Serialize;

use crate::session::{Session, TabFilter};

/// Window and tab counts of one side of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SideCounts {
    /// Open windows.
    pub windows: usize,
    /// Open tabs.
    pub tabs: usize,
}

/// A tab found in only one of the two sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TabChange<'s> {
    /// 1-based window number in the session the tab is in (`a` for removed
    /// tabs, `b` for added ones).
    pub window: usize,
    /// 1-based position in that window.
    pub position: usize,
    /// URL of the current history entry.
    pub url: Option<&'s str>,
    /// Title of the current history entry.
    pub title: Option<&'s str>,
}

/// A tab open in both sessions, in windows that do not match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TabMove<'s> {
    /// URL of the current history entry.
    pub url: Option<&'s str>,
    /// Title in `b`.
    pub title: Option<&'s str>,
    /// 1-based window number in `a`.
    pub from_window: usize,
    /// 1-based window number in `b`.
    pub to_window: usize,
}

/// A window found in only one of the two sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowChange<'s> {
    /// 1-based window number in its session.
    pub window: usize,
    /// Its open tabs.
    pub tabs: usize,
    /// The title of its selected tab (else its first tab's).
    pub title: Option<&'s str>,
}

/// What changed from session `a` to session `b`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionDiff<'s> {
    /// Counts of `a`.
    pub a: SideCounts,
    /// Counts of `b`.
    pub b: SideCounts,
    /// Tabs of `b` with no counterpart in `a`, in `b`'s order.
    pub added: Vec<TabChange<'s>>,
    /// Tabs of `a` with no counterpart in `b`, in `a`'s order.
    pub removed: Vec<TabChange<'s>>,
    /// Tabs in both, in windows that do not match, in `b`'s order.
    pub moved: Vec<TabMove<'s>>,
    /// Windows of `b` matching no window of `a`.
    pub windows_opened: Vec<WindowChange<'s>>,
    /// Windows of `a` matching no window of `b`.
    pub windows_closed: Vec<WindowChange<'s>>,
}

impl SessionDiff<'_> {
    /// True if neither tabs nor windows changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.moved.is_empty()
            && self.windows_opened.is_empty()
            && self.windows_closed.is_empty()
    }
}

/// One open tab: (window, position, url, title), all 1-based.
type Open<'s> = (usize, usize, Option<&'s str>, Option<&'s str>);

fn open_tabs<'s>(s: &'s Session<'_>) -> Vec<Open<'s>> {
    s.tab_records(TabFilter::default())
        .map(|r| (r.window, r.position, r.url, r.title))
        .collect()
}

/// URL multiset of each window (index 0 = window 1).
fn window_urls<'s>(windows: usize, tabs: &[Open<'s>]) -> Vec<HashMap<Option<&'s str>, usize>> {
    let mut out = vec![HashMap::new(); windows];
    for &(w, _, url, _) in tabs {
        *out[w - 1].entry(url).or_insert(0) += 1;
    }
    out
}

/// Match windows of `a` to windows of `b` by shared tab URLs, largest overlap
/// first (ties: lower window numbers first). `result[i]` is the 0-based `b`
/// window matched to `a` window `i`.
fn match_windows(
    a: &[HashMap<Option<&str>, usize>],
    b: &[HashMap<Option<&str>, usize>],
) -> Vec<Option<usize>> {
    let mut pairs = Vec::new();
    for (i, wa) in a.iter().enumerate() {
        for (j, wb) in b.iter().enumerate() {
            let overlap: usize = wa
                .iter()
                .filter_map(|(url, n)| wb.get(url).map(|m| (*n).min(*m)))
                .sum();
            if overlap > 0 {
                pairs.push((overlap, i, j));
            }
        }
    }
    pairs.sort_by(|x, y| y.0.cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let mut a_to_b = vec![None; a.len()];
    let mut b_taken = vec![false; b.len()];
    for (_, i, j) in pairs {
        if a_to_b[i].is_none() && !b_taken[j] {
            a_to_b[i] = Some(j);
            b_taken[j] = true;
        }
    }
    a_to_b
}

fn window_change<'s>(s: &'s Session<'_>, index: usize) -> WindowChange<'s> {
    let w = &s.windows[index];
    let selected = w
        .selected
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| w.tabs.get(n));
    WindowChange {
        window: index + 1,
        tabs: w.tabs.len(),
        title: selected.or(w.tabs.first()).and_then(|t| t.title()),
    }
}

/// What changed from `a` to `b` (see the module documentation).
pub fn diff<'s>(a: &'s Session<'_>, b: &'s Session<'_>) -> SessionDiff<'s> {
    let tabs_a = open_tabs(a);
    let tabs_b = open_tabs(b);
    let a_to_b = match_windows(
        &window_urls(a.windows.len(), &tabs_a),
        &window_urls(b.windows.len(), &tabs_b),
    );

    // Occurrences of each URL in `b` not yet paired: (index into tabs_b).
    let mut unpaired_b: HashMap<Option<&str>, Vec<usize>> = HashMap::new();
    for (k, t) in tabs_b.iter().enumerate() {
        unpaired_b.entry(t.2).or_default().push(k);
    }
    let mut b_used = vec![false; tabs_b.len()];
    let mut a_left = Vec::new();
    // First pass: a tab stays in its (matched) window.
    for (k, t) in tabs_a.iter().enumerate() {
        let target = a_to_b[t.0 - 1];
        let found = target.and_then(|j| {
            unpaired_b
                .get(&t.2)?
                .iter()
                .copied()
                .find(|&m| !b_used[m] && tabs_b[m].0 == j + 1)
        });
        match found {
            Some(m) => b_used[m] = true,
            None => a_left.push(k),
        }
    }
    // Second pass: what is left pairs across windows (moved), else removed.
    let mut removed = Vec::new();
    let mut moves = Vec::new();
    for k in a_left {
        let t = tabs_a[k];
        let found = unpaired_b
            .get(&t.2)
            .and_then(|v| v.iter().copied().find(|&m| !b_used[m]));
        match found {
            Some(m) => {
                b_used[m] = true;
                moves.push((m, t.0));
            }
            None => removed.push(TabChange {
                window: t.0,
                position: t.1,
                url: t.2,
                title: t.3,
            }),
        }
    }
    moves.sort_unstable();
    let moved = moves
        .into_iter()
        .map(|(m, from)| TabMove {
            url: tabs_b[m].2,
            title: tabs_b[m].3,
            from_window: from,
            to_window: tabs_b[m].0,
        })
        .collect();
    let added = tabs_b
        .iter()
        .zip(&b_used)
        .filter(|(_, used)| !**used)
        .map(|(t, _)| TabChange {
            window: t.0,
            position: t.1,
            url: t.2,
            title: t.3,
        })
        .collect();

    let mut b_matched = vec![false; b.windows.len()];
    for j in a_to_b.iter().flatten() {
        b_matched[*j] = true;
    }
    let windows_closed = (0..a.windows.len())
        .filter(|&i| a_to_b[i].is_none())
        .map(|i| window_change(a, i))
        .collect();
    let windows_opened = (0..b.windows.len())
        .filter(|&j| !b_matched[j])
        .map(|j| window_change(b, j))
        .collect();

    SessionDiff {
        a: SideCounts {
            windows: a.windows.len(),
            tabs: tabs_a.len(),
        },
        b: SideCounts {
            windows: b.windows.len(),
            tabs: tabs_b.len(),
        },
        added,
        removed,
        moved,
        windows_opened,
        windows_closed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session from windows of URLs; titles are the URLs upper-cased.
    fn json(windows: &[&[&str]]) -> Vec<u8> {
        let windows: Vec<serde_json::Value> = windows
            .iter()
            .map(|tabs| {
                let tabs: Vec<serde_json::Value> = tabs
                    .iter()
                    .map(
                        |u| serde_json::json!({"entries": [{"url": u, "title": u.to_uppercase()}]}),
                    )
                    .collect();
                serde_json::json!({ "tabs": tabs, "selected": 1 })
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({ "windows": windows })).unwrap()
    }

    fn urls<'a>(tabs: &[TabChange<'a>]) -> Vec<&'a str> {
        tabs.iter().map(|t| t.url.unwrap()).collect()
    }

    #[test]
    fn identical_sessions_have_no_changes() {
        let j = json(&[&["a", "b"], &["c"]]);
        let (a, b) = (
            Session::from_json(&j).unwrap(),
            Session::from_json(&j).unwrap(),
        );
        let d = diff(&a, &b);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(
            d.a,
            SideCounts {
                windows: 2,
                tabs: 3
            }
        );
        assert_eq!(d.a, d.b);
    }

    #[test]
    fn added_and_removed_tabs_with_titles_and_places() {
        let ja = json(&[&["a", "b", "c"]]);
        let jb = json(&[&["a", "d", "c", "e"]]);
        let (a, b) = (
            Session::from_json(&ja).unwrap(),
            Session::from_json(&jb).unwrap(),
        );
        let d = diff(&a, &b);
        assert_eq!(
            d.removed,
            [TabChange {
                window: 1,
                position: 2,
                url: Some("b"),
                title: Some("B")
            }]
        );
        assert_eq!(urls(&d.added), ["d", "e"]);
        assert_eq!(d.added[1].position, 4);
        assert!(d.moved.is_empty() && d.windows_opened.is_empty() && d.windows_closed.is_empty());
    }

    #[test]
    fn duplicates_count_as_a_multiset() {
        let ja = json(&[&["a", "a", "a", "b"]]);
        let jb = json(&[&["a", "b", "b"]]);
        let (a, b) = (
            Session::from_json(&ja).unwrap(),
            Session::from_json(&jb).unwrap(),
        );
        let d = diff(&a, &b);
        assert_eq!(urls(&d.removed), ["a", "a"]);
        assert_eq!(urls(&d.added), ["b"]);
        // Reverse direction is the mirror image.
        let r = diff(&b, &a);
        assert_eq!(urls(&r.added), ["a", "a"]);
        assert_eq!(urls(&r.removed), ["b"]);
    }

    #[test]
    fn tabs_moved_between_matched_windows() {
        // Window order swapped in b, and "c" moved from window 1 to the other.
        let ja = json(&[&["a", "b", "c"], &["x", "y"]]);
        let jb = json(&[&["x", "y", "c"], &["a", "b"]]);
        let (a, b) = (
            Session::from_json(&ja).unwrap(),
            Session::from_json(&jb).unwrap(),
        );
        let d = diff(&a, &b);
        assert!(d.added.is_empty() && d.removed.is_empty(), "{d:?}");
        assert!(d.windows_opened.is_empty() && d.windows_closed.is_empty());
        assert_eq!(
            d.moved,
            [TabMove {
                url: Some("c"),
                title: Some("C"),
                from_window: 1,
                to_window: 1
            }],
            "a's window 1 matches b's window 2, so c moved to b's window 1"
        );
    }

    #[test]
    fn windows_opened_and_closed() {
        let ja = json(&[&["a", "b"], &["x", "y", "z"]]);
        let jb = json(&[&["a", "b", "n"], &["p", "q"], &["z"]]);
        let (a, b) = (
            Session::from_json(&ja).unwrap(),
            Session::from_json(&jb).unwrap(),
        );
        let d = diff(&a, &b);
        // a2 {x,y,z} matches b3 {z}; b2 {p,q} matches nothing.
        assert!(d.windows_closed.is_empty(), "{d:?}");
        assert_eq!(
            d.windows_opened,
            [WindowChange {
                window: 2,
                tabs: 2,
                title: Some("P")
            }]
        );
        assert_eq!(urls(&d.removed), ["x", "y"]);
        assert_eq!(urls(&d.added), ["n", "p", "q"]);

        let jc = json(&[&["a", "b"]]);
        let c = Session::from_json(&jc).unwrap();
        let d = diff(&a, &c);
        assert_eq!(
            d.windows_closed,
            [WindowChange {
                window: 2,
                tabs: 3,
                title: Some("X")
            }]
        );
        assert_eq!(urls(&d.removed), ["x", "y", "z"]);
        assert!(d.windows_opened.is_empty() && d.added.is_empty());
    }

    #[test]
    fn a_window_merged_into_another_is_closed_and_its_tabs_moved() {
        let ja = json(&[&["a", "b", "c"], &["x"]]);
        let jb = json(&[&["a", "b", "c", "x"]]);
        let (a, b) = (
            Session::from_json(&ja).unwrap(),
            Session::from_json(&jb).unwrap(),
        );
        let d = diff(&a, &b);
        assert_eq!(d.windows_closed.len(), 1);
        assert_eq!(d.windows_closed[0].window, 2);
        assert_eq!(d.moved.len(), 1);
        assert_eq!((d.moved[0].from_window, d.moved[0].to_window), (2, 1));
        assert!(d.added.is_empty() && d.removed.is_empty());
    }

    #[test]
    fn closed_tabs_and_closed_windows_are_ignored() {
        let ja = br#"{"windows":[{"tabs":[{"entries":[{"url":"a"}]}],
            "_closedTabs":[{"state":{"entries":[{"url":"gone"}]}}]}],
            "_closedWindows":[{"tabs":[{"entries":[{"url":"old"}]}]}]}"#;
        let jb = br#"{"windows":[{"tabs":[{"entries":[{"url":"a"}]}]}]}"#;
        let (a, b) = (
            Session::from_json(ja).unwrap(),
            Session::from_json(jb).unwrap(),
        );
        assert!(diff(&a, &b).is_empty());
    }
}
