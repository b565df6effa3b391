//! Tidying a session: fewer tabs for Firefox to restore at every start, none
//! of them lost.
//!
//! Firefox's session restore grows with the number of tabs it restores
//! (about 1.4 ms per tab, measured with Firefox ESR 153), much less with the
//! bytes per tab. The rules ([`TidyRules`]) choose tabs to close (not used
//! for a while, duplicates) and bytes to drop (history beyond N entries each
//! side, closed tabs and windows, `data:` favicons, form data and session
//! storage). Pinned tabs, the selected tab of each window and tabs in named
//! groups stay unless the rules say otherwise.
//!
//! [`plan()`] works on the session JSON as raw values (`raw.rs`): a kept tab is
//! written byte for byte, with every field Firefox wrote. [`apply()`] follows
//! the restore recipe (`crate::restore`): it holds Firefox's profile lock,
//! snapshots the profile's session files into the store first (the undo
//! point, which also holds every removed tab), records the removed tabs in
//! the catalog (`archived_tabs`), sets aside the recovery files, writes the
//! tidied session as `sessionstore.jsonlz4` and sets the one-shot resume pref.

pub(crate) mod raw;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, PathError};
use crate::SessionData;
use raw::{RawDoc, TabEdit};

mod apply;
mod edit;
mod picked;
mod plan;
pub use apply::{apply, load_current, TidyReport};
pub use edit::{extract, merge, EditResult, Selection};
pub use picked::Picked;
pub use plan::{plan, render_json, rule_savings, RuleSaving};

/// What to tidy. Every rule is off by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TidyRules {
    /// Close tabs not accessed for this long (ms), by `lastAccessed`.
    pub archive_older_than_ms: Option<u64>,
    /// Close all but the most recently used tab of each URL.
    pub close_duplicates: bool,
    /// Keep at most this many back/forward entries each side of the current one.
    pub trim_history: Option<u64>,
    /// Drop recently closed tabs and windows.
    pub drop_closed: bool,
    /// Drop `data:` favicons, form data and session storage.
    pub drop_payload: bool,
    /// Pinned tabs may be closed too.
    pub include_pinned: bool,
    /// The selected tab of a window may be closed too.
    pub include_selected: bool,
    /// Tabs in named groups may be closed too.
    pub include_grouped: bool,
}

impl TidyRules {
    /// True if no rule is set (a report of what each would save is due).
    pub fn is_empty(&self) -> bool {
        self.archive_older_than_ms.is_none()
            && !self.close_duplicates
            && self.trim_history.is_none()
            && !self.drop_closed
            && !self.drop_payload
    }

    /// Each rule alone, with 30 days (archive) and 5 entries (trim
    /// history) as the values assumed: what [`rule_savings`] weighs.
    pub fn each_alone() -> [TidyRules; 5] {
        let base = TidyRules::default();
        [
            TidyRules {
                archive_older_than_ms: Some(30 * 86_400_000),
                ..base
            },
            TidyRules {
                close_duplicates: true,
                ..base
            },
            TidyRules {
                trim_history: Some(5),
                ..base
            },
            TidyRules {
                drop_closed: true,
                ..base
            },
            TidyRules {
                drop_payload: true,
                ..base
            },
        ]
    }
}

/// Why a tab is closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Reason {
    /// Not accessed since before the cut-off.
    Old {
        /// Its `lastAccessed` (ms since the epoch).
        last_accessed: u64,
    },
    /// Another tab with the same URL was used more recently.
    Duplicate {
        /// That tab's window (1-based).
        of_window: usize,
        /// That tab's position (1-based).
        of_position: usize,
    },
}

impl Reason {
    /// A short name for the catalog: `old` or `duplicate`.
    pub fn name(&self) -> &'static str {
        match self {
            Reason::Old { .. } => "old",
            Reason::Duplicate { .. } => "duplicate",
        }
    }
}

/// A tab the plan closes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClosedTabPlan {
    /// Its window (1-based).
    pub window: usize,
    /// Its position in the window (1-based).
    pub position: usize,
    /// URL of its current entry.
    pub url: String,
    /// Title of its current entry.
    pub title: String,
    /// Its `lastAccessed`.
    pub last_accessed: Option<u64>,
    /// Why it goes.
    pub reason: Reason,
}

/// One window before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowPlan {
    /// 1-based, in file order.
    pub window: usize,
    /// Tabs before.
    pub tabs_before: usize,
    /// Tabs after (0: the window is dropped).
    pub tabs_after: usize,
    /// Bytes of the window's JSON before.
    pub bytes_before: u64,
    /// Bytes after.
    pub bytes_after: u64,
    /// Tabs whose history is trimmed or payload dropped.
    pub tabs_rewritten: usize,
}

/// What a tidy will do, and the tidied JSON's size.
#[derive(Debug, Clone, Serialize)]
pub struct TidyPlan {
    /// The session file read.
    pub source: PathBuf,
    /// Per open window.
    pub windows: Vec<WindowPlan>,
    /// Tabs closed, in window and tab order.
    pub closed: Vec<ClosedTabPlan>,
    /// Recently closed tabs dropped (`--drop-closed`).
    pub closed_tabs_dropped: u64,
    /// Recently closed windows dropped.
    pub closed_windows_dropped: u64,
    /// Session JSON bytes before.
    pub bytes_before: u64,
    /// Session JSON bytes after.
    pub bytes_after: u64,
    /// Tabs before, in open windows.
    pub tabs_before: usize,
    /// Tabs after.
    pub tabs_after: usize,
    #[serde(skip)]
    pub(crate) edits: Vec<Vec<TabEdit>>,
    #[serde(skip)]
    pub(crate) drop_closed: bool,
}

impl TidyPlan {
    /// True if the plan changes nothing (it may still write the same
    /// members with fewer spaces between them).
    pub fn is_noop(&self) -> bool {
        self.closed.is_empty()
            && self.windows.iter().all(|w| w.tabs_rewritten == 0)
            && self.closed_tabs_dropped == 0
            && self.closed_windows_dropped == 0
    }
}

/// Why a tidy (or an edit) cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum TidyError {
    /// A duration that cannot be read.
    #[error("cannot read {text:?} as a duration")]
    BadDuration {
        /// The text given.
        text: String,
    },
    /// The rules would close every tab.
    #[error("{}: the rules would close every one of its {tabs} tabs", path.display())]
    WouldRemoveAll {
        /// The session file.
        path: PathBuf,
        /// Its tabs.
        tabs: usize,
    },
    /// The JSON is not a session the editor can work on.
    #[error("{}: cannot edit this session: {reason}", path.display())]
    NotEditable {
        /// The session file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The newest session file of the profile is damaged.
    #[error("{}: the profile's newest session file is damaged: {reason}", path.display())]
    DamagedCurrent {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Firefox runs on the profile.
    #[error("{}: Firefox is running on this profile{}", profile.display(), pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    FirefoxRunning {
        /// The profile folder.
        profile: PathBuf,
        /// Its pid, if known.
        pid: Option<u32>,
    },
    /// An extract chose no tab.
    #[error("{}: {what} matches no tab", path.display())]
    NothingSelected {
        /// The session file.
        path: PathBuf,
        /// The selection.
        what: String,
    },
    /// A search query that is not valid FTS5 syntax.
    #[error("invalid search query {query:?}: {reason}")]
    BadQuery {
        /// The query.
        query: String,
        /// What SQLite said.
        reason: String,
    },
    /// The session changed between the plan and the undo snapshot.
    #[error("{}: the session changed since it was planned", path.display())]
    Changed {
        /// The session file.
        path: PathBuf,
    },
    /// Reading a session failed.
    #[error(transparent)]
    Read(#[from] Error),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The undo backup failed.
    #[error(transparent)]
    Backup(#[from] crate::backup::BackupError),
    /// A file could not be read or written.
    #[error(transparent)]
    Io(#[from] PathError),
}

impl TidyError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<crate::Hint> {
        use crate::Hint;
        match self {
            TidyError::BadDuration { .. } => Some(Hint::Advice(
                "write a number and a unit: 30d, 12h, 2w, 90m, 45s or 1y",
            )),
            TidyError::WouldRemoveAll { .. } => Some(Hint::AllowEmpty),
            TidyError::NotEditable { path, .. } => {
                Some(Hint::TidyNotEditable { file: path.clone() })
            }
            TidyError::DamagedCurrent { path, .. } => {
                Some(Hint::TidyDamagedCurrent { file: path.clone() })
            }
            TidyError::FirefoxRunning { .. } => Some(Hint::Advice(
                "quit Firefox (all its windows) and run the tidy again",
            )),
            TidyError::Changed { .. } => Some(Hint::Advice("run the tidy again")),
            TidyError::NothingSelected { .. } => Some(Hint::ListTabs),
            TidyError::BadQuery { .. } => Some(Hint::TidyBadQuery),
            TidyError::Read(e) => e.hint(),
            TidyError::Store(e) => e.hint(),
            TidyError::Backup(e) => e.hint(),
            TidyError::Io(_) => None,
        }
    }
}

/// Read a duration such as `30d`, `12h`, `2w`, `90m`, `45s` or `1y` (365
/// days) as milliseconds.
pub fn parse_duration(text: &str) -> Result<u64, TidyError> {
    let bad = || TidyError::BadDuration {
        text: text.to_owned(),
    };
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let unit_ms: u64 = match unit {
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        "y" => 365 * 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(unit_ms).ok_or_else(bad)
}

/// A session parsed for editing: raw values, borrowed from `data`.
#[derive(Debug)]
pub struct Editable<'a> {
    path: &'a Path,
    pub(crate) json_len: u64,
    pub(crate) doc: RawDoc<'a>,
}

impl<'a> Editable<'a> {
    /// Read `data`'s JSON for editing.
    pub fn new(data: &'a SessionData) -> Result<Self, TidyError> {
        let not = |reason: String| TidyError::NotEditable {
            path: data.path().to_path_buf(),
            reason,
        };
        let text = std::str::from_utf8(data.json()).map_err(|e| not(e.to_string()))?;
        // The model (two threads on large sessions) reads each tab's facts.
        let facts = crate::Session::from_json(data.json())
            .ok()
            .map(|s| s.windows.into_iter().map(|w| w.tabs).collect::<Vec<_>>());
        let doc = RawDoc::parse(text, facts).map_err(not)?;
        Ok(Editable {
            path: data.path(),
            json_len: data.json().len() as u64,
            doc,
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        self.path
    }

    /// Tabs in open windows.
    pub fn tabs(&self) -> usize {
        self.doc.windows.iter().map(|w| w.tabs.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d").unwrap(), 30 * 86_400_000);
        assert_eq!(parse_duration("2w").unwrap(), 14 * 86_400_000);
        assert_eq!(parse_duration("90m").unwrap(), 90 * 60_000);
        for bad in ["30", "d", "30x", "-1d", "", "1.5d", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
