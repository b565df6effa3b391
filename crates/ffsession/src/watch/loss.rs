//! Reading every change: `watch` reads the newest session Firefox wrote after
//! each write (a summary, no store involved), so that a write that is damaged
//! or lost more than half of the tabs of the one before is seen at once,
//! whatever the interval between snapshots.
//!
//! Firefox writes `recovery.jsonlz4` about every 15 seconds, first moving
//! the one before to `recovery.baklz4`. When a write loses the tabs, the
//! good session is in `recovery.baklz4` (or, after a restart that lost
//! them, still in `previous.jsonlz4`) for 15 seconds, until the next write
//! moves the loss there too. [`LossWatch`] says "now": `watch` then runs a
//! cycle at once, which stores every changed file, that good copy included,
//! and [`good_copy`] names the snapshot that brings the tabs back.

use std::collections::HashMap;
use std::path::Path;
use std::time::SystemTime;

use crate::error::{Error, PathError};
use crate::format::FileSummary;
use crate::retention::is_shrunken;
use crate::sources;
use crate::store::{unix_ms, SnapshotInfo, Store, StoreError};

/// What one read of the newest session file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The file, relative to the profile.
    pub file: String,
    /// The session's own time (`session.lastUpdate`, else the file's
    /// modification time).
    pub session_ms: u64,
    /// When Firefox started the run that wrote it (`session.startTime`).
    pub started_ms: Option<u64>,
    /// Its tabs, or why it does not read.
    pub state: ReadState,
}

/// A session file's tabs, or its damage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadState {
    /// A readable session with this many tabs in open windows.
    Tabs(u64),
    /// The file does not decompress or parse.
    Damaged(String),
}

/// Reads the newest Firefox session file of a profile, each file's summary
/// kept while the file stays the same (size and modification time: Firefox
/// replaces files by rename, which keeps both, so `recovery.baklz4` is read
/// once, as `recovery.jsonlz4`).
#[derive(Debug, Default)]
pub struct Reader {
    seen: HashMap<(u64, Option<SystemTime>), Read>,
}

/// One file's read: its session time, its run's start, its state.
type Read = (u64, Option<u64>, ReadState);

impl Reader {
    /// The newest Firefox session of the profile in `profile_dir`, by its own
    /// time (ties: the file Firefox tries first); `None` when it has none.
    /// Zen's own files hold no Firefox session and are not read. A file that
    /// cannot be read at all (gone, permission denied) is left out: the next
    /// cycle's backup reports it.
    pub fn read_newest(&mut self, profile_dir: &Path) -> Result<Option<Reading>, PathError> {
        let listing = sources::scan(profile_dir)?;
        let mut seen = HashMap::new();
        let mut newest: Option<((u64, std::cmp::Reverse<u8>), Reading)> = None;
        for file in listing.files.iter().filter(|f| !f.kind.is_zen()) {
            let key = (file.size, file.modified);
            let known = self.seen.get(&key).cloned();
            let Some((session_ms, started_ms, state)) =
                known.or_else(|| read_one(&file.path, file.modified))
            else {
                continue;
            };
            seen.insert(key, (session_ms, started_ms, state.clone()));
            let rank = (session_ms, std::cmp::Reverse(file.kind.rank()));
            if newest.as_ref().is_none_or(|(k, _)| rank > *k) {
                newest = Some((
                    rank,
                    Reading {
                        file: file.name.clone(),
                        session_ms,
                        started_ms,
                        state,
                    },
                ));
            }
        }
        self.seen = seen;
        Ok(newest.map(|(_, r)| r))
    }
}

/// One file's session time and state; `None` when it cannot be read at all
/// (an I/O error is not damage) or is Zen's.
fn read_one(path: &Path, modified: Option<SystemTime>) -> Option<Read> {
    let mtime = modified.and_then(unix_ms).unwrap_or(0);
    match FileSummary::read(path) {
        Ok(s) if s.zen.is_some() => None,
        Ok(s) => Some((
            s.summary.timestamps.last_update.unwrap_or(mtime),
            s.summary.timestamps.start_time,
            ReadState::Tabs(s.summary.tabs as u64),
        )),
        Err(Error::Io(_)) => None,
        Err(e) => Some((mtime, None, ReadState::Damaged(error_reason(&e)))),
    }
}

/// True if the profile in `profile_dir` tells Firefox to restore the last
/// session at every start (`browser.startup.page` 3, in `user.js` or else
/// `prefs.js`; the last setting of a file wins). Firefox's default (1, its
/// home page) starts a new session with one tab: fewer tabs after such a
/// start are no loss, the last session being kept in `previous.jsonlz4`.
pub fn restores_at_start(profile_dir: &Path) -> bool {
    let setting = |name: &str| -> Option<bool> {
        let text = std::fs::read_to_string(profile_dir.join(name)).ok()?;
        text.lines().rev().find_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("user_pref(")
                .or_else(|| l.strip_prefix("pref("))?;
            let rest = rest.trim_start().strip_prefix("\"browser.startup.page\"")?;
            let value = rest.trim_start().strip_prefix(',')?.trim_start();
            Some(value.starts_with('3'))
        })
    };
    setting("user.js")
        .or_else(|| setting("prefs.js"))
        .unwrap_or(false)
}

/// What is wrong with a file, without its path (the reading names the file).
fn error_reason(e: &Error) -> String {
    match e {
        Error::Format { source, .. } => source.to_string(),
        Error::Parse { source, .. } => format!("not a valid Firefox session: {source}"),
        other => other.to_string(),
    }
}

/// A loss seen in a reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loss {
    /// The newest session file is damaged.
    Damaged {
        /// The file, relative to the profile.
        file: String,
        /// What is wrong with it.
        reason: String,
        /// The tabs of the newest good session read or stored before, if
        /// known.
        previous_tabs: Option<u64>,
    },
    /// The newest session lost more than half of the tabs of the one before.
    Shrunken {
        /// The file, relative to the profile.
        file: String,
        /// Its tabs.
        tabs: u64,
        /// The tabs of the newest good session read or stored before.
        previous_tabs: u64,
    },
}

impl Loss {
    /// The tabs of the good session before the loss, if known.
    pub fn previous_tabs(&self) -> Option<u64> {
        match self {
            Loss::Damaged { previous_tabs, .. } => *previous_tabs,
            Loss::Shrunken { previous_tabs, .. } => Some(*previous_tabs),
        }
    }
}

/// Decides, reading by reading, whether the newest session was lost.
///
/// The reference is the tabs of the newest readable session read (or, at
/// start, stored): a reading with fewer than half of them is a loss, said
/// once, and becomes the reference itself (so a person who really closed
/// those tabs is not told again at every write; the good copy was stored
/// when it was said). A damaged reading is a loss said once until a
/// readable one comes, and leaves the reference as it was.
#[derive(Debug, Clone, Default)]
pub struct LossWatch {
    reference: Option<u64>,
    /// When the reference session's Firefox run started.
    reference_start: Option<u64>,
    damaged: bool,
    /// Firefox restores the last session at every start
    /// ([`restores_at_start`]): a new run with fewer tabs is a loss then.
    restores_at_start: bool,
}

impl LossWatch {
    /// A watch whose reference is the newest good session stored, if any
    /// ([`newest_good_tabs`]).
    pub fn new(reference: Option<u64>) -> Self {
        LossWatch {
            reference,
            ..LossWatch::default()
        }
    }

    /// Say whether Firefox restores the last session at every start (read
    /// from the profile before each reading: the setting can change).
    pub fn set_restores_at_start(&mut self, restores: bool) {
        self.restores_at_start = restores;
    }

    /// The tabs the next reading is compared with.
    pub fn reference(&self) -> Option<u64> {
        self.reference
    }

    /// Take in a reading; a loss when it is one (said once).
    pub fn observe(&mut self, reading: &Reading) -> Option<Loss> {
        match &reading.state {
            ReadState::Tabs(tabs) => {
                self.damaged = false;
                // A new Firefox run that does not restore the last session
                // (Firefox's default start) begins with few tabs by design:
                // the last session is in previous.jsonlz4, and stored.
                let new_run = matches!(
                    (self.reference_start, reading.started_ms),
                    (Some(a), Some(b)) if a != b
                );
                let by_design = new_run && !self.restores_at_start;
                let loss = self
                    .reference
                    .filter(|&previous| !by_design && is_shrunken(previous, *tabs))
                    .map(|previous_tabs| Loss::Shrunken {
                        file: reading.file.clone(),
                        tabs: *tabs,
                        previous_tabs,
                    });
                self.reference = Some(*tabs);
                self.reference_start = reading.started_ms;
                loss
            }
            ReadState::Damaged(reason) => {
                if std::mem::replace(&mut self.damaged, true) {
                    return None;
                }
                Some(Loss::Damaged {
                    file: reading.file.clone(),
                    reason: reason.clone(),
                    previous_tabs: self.reference,
                })
            }
        }
    }
}

/// The tabs of the newest good Firefox session of `profile` in `store`, by
/// the session's own time.
pub fn newest_good_tabs(store: &Store, profile: &str) -> Result<Option<u64>, StoreError> {
    Ok(store
        .snapshots_by_session_time()?
        .into_iter()
        .find(|s| is_good(s, profile))
        .and_then(|s| s.counts.map(|c| c.tabs)))
}

/// The snapshot that brings back a session of `previous_tabs` tabs: the
/// newest good Firefox session of `profile` (by its own time) that did not
/// lose more than half of them. After a loss, that is the good copy the
/// loss's cycle stored (`recovery.baklz4`, `previous.jsonlz4`), or an older
/// snapshot when Firefox had none left.
pub fn good_copy(
    store: &Store,
    profile: &str,
    previous_tabs: u64,
) -> Result<Option<SnapshotInfo>, StoreError> {
    Ok(store
        .snapshots_by_session_time()?
        .into_iter()
        .filter(|s| is_good(s, profile))
        .find(|s| {
            s.counts
                .is_some_and(|c| !is_shrunken(previous_tabs, c.tabs))
        }))
}

fn is_good(s: &SnapshotInfo, profile: &str) -> bool {
    s.profile == profile && s.is_ok() && s.counts.is_some() && !s.kind.is_zen()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tabs(file: &str, n: u64) -> Reading {
        Reading {
            file: file.into(),
            session_ms: 0,
            started_ms: Some(1),
            state: ReadState::Tabs(n),
        }
    }

    fn run(n: u64, started: u64) -> Reading {
        Reading {
            started_ms: Some(started),
            ..tabs("sessionstore-backups/recovery.jsonlz4", n)
        }
    }

    #[test]
    fn a_new_run_that_does_not_restore_is_no_loss_unless_firefox_restores_at_start() {
        // Firefox's default start: a new session of one tab.
        let mut w = LossWatch::new(None);
        assert_eq!(w.observe(&run(200, 1)), None);
        assert_eq!(w.observe(&run(1, 2)), None, "a new run by design");
        assert_eq!(w.reference(), Some(1));
        // Told to restore at every start: the same is a loss.
        let mut w = LossWatch::new(None);
        w.set_restores_at_start(true);
        assert_eq!(w.observe(&run(200, 1)), None);
        assert!(w.observe(&run(1, 2)).is_some(), "the restore lost the tabs");
        // Within one run, a loss is a loss whatever the setting.
        let mut w = LossWatch::new(None);
        assert_eq!(w.observe(&run(200, 1)), None);
        assert!(w.observe(&run(3, 1)).is_some());
    }

    #[test]
    fn the_start_setting_is_read_from_user_js_then_prefs_js() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!restores_at_start(dir.path()), "Firefox's default");
        std::fs::write(
            dir.path().join("prefs.js"),
            "user_pref(\"browser.startup.page\", 1);\nuser_pref(\"browser.startup.page\", 3);\n",
        )
        .unwrap();
        assert!(restores_at_start(dir.path()), "the last setting wins");
        std::fs::write(
            dir.path().join("user.js"),
            "user_pref(\"browser.startup.page\", 1);\n",
        )
        .unwrap();
        assert!(!restores_at_start(dir.path()), "user.js overrides prefs.js");
    }

    #[test]
    fn a_write_that_lost_most_tabs_is_a_loss_once() {
        let mut w = LossWatch::new(Some(450));
        assert_eq!(w.observe(&tabs("r", 460)), None, "more tabs: no loss");
        assert_eq!(
            w.observe(&tabs("r", 12)),
            Some(Loss::Shrunken {
                file: "r".into(),
                tabs: 12,
                previous_tabs: 460
            }),
            "compared with the newest read, not the one stored"
        );
        assert_eq!(w.observe(&tabs("r", 12)), None, "said once");
        assert_eq!(
            w.observe(&tabs("r", 11)),
            None,
            "the loss is the reference now"
        );
        assert!(w.observe(&tabs("r", 5)).is_some(), "a new loss of half");
    }

    #[test]
    fn half_the_tabs_is_no_loss_and_gradual_closing_never_is() {
        let mut w = LossWatch::new(Some(100));
        assert_eq!(w.observe(&tabs("r", 50)), None, "exactly half kept");
        for n in (1..50).rev() {
            assert_eq!(w.observe(&tabs("r", n)), None, "one tab closed at a time");
        }
    }

    #[test]
    fn damage_is_said_once_until_a_readable_write() {
        let mut w = LossWatch::new(Some(30));
        let damaged = Reading {
            file: "r".into(),
            session_ms: 0,
            started_ms: None,
            state: ReadState::Damaged("cut".into()),
        };
        assert_eq!(
            w.observe(&damaged),
            Some(Loss::Damaged {
                file: "r".into(),
                reason: "cut".into(),
                previous_tabs: Some(30)
            })
        );
        assert_eq!(w.observe(&damaged), None);
        assert_eq!(w.reference(), Some(30), "damage keeps the reference");
        assert_eq!(w.observe(&tabs("r", 29)), None);
        assert!(
            w.observe(&damaged).is_some(),
            "new damage after a good write"
        );
    }

    #[test]
    fn no_reference_no_shrink() {
        let mut w = LossWatch::new(None);
        assert_eq!(w.observe(&tabs("r", 1)), None);
        assert_eq!(w.reference(), Some(1));
    }
}
