//! What `watch` remembers across its restarts, for its alarms and for
//! `ffsession status`: when it last backed up, since when backups or a
//! remote's copies have failed, the alarms it raised, and when it last told
//! the person of each kind of alarm (at most once per [`NOTIFY_EVERY_MS`]).
//!
//! It is kept outside the store, in a file the caller names (the CLI's state
//! folder), so that a store that cannot be written (a full disk, a read-only
//! mount) still has its failure remembered; `check` keeps its last outcome
//! beside it ([`CheckRecord`]). Both are advice, not data: a file that does
//! not read is taken as empty, and each is written whole with
//! [`write_atomic`].

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{IoResultExt, PathError};
use crate::fs_util::write_atomic;

/// At most one notification per kind of alarm in this time (an hour).
pub const NOTIFY_EVERY_MS: u64 = 60 * 60 * 1000;

/// Backups, or a remote's copies, that have failed this long (a day) raise
/// an alarm.
pub const FAILING_ALARM_AFTER_MS: u64 = 24 * 60 * 60 * 1000;

/// How many alarms the state keeps (the newest).
pub const ALARMS_KEPT: usize = 50;

/// What `watch` remembers (`watch.json` in its state folder).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct WatchState {
    /// The process that wrote it last.
    pub pid: Option<u32>,
    /// When that process started (ms since the Unix epoch).
    pub started_ms: Option<u64>,
    /// When it last ran a cycle that worked.
    pub last_cycle_ms: Option<u64>,
    /// Backups: since when they fail, and why.
    pub backups: Failing,
    /// Each remote `watch` copies to, by its name in the config file.
    pub remotes: BTreeMap<String, Failing>,
    /// When the person was last told of each kind of alarm
    /// ([`AlarmKind::key`]).
    pub notified: BTreeMap<String, u64>,
    /// The alarms raised, oldest first (the newest [`ALARMS_KEPT`]).
    pub alarms: Vec<AlarmRecord>,
}

/// Something that works, or has failed since a moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Failing {
    /// The last time it worked.
    pub last_ok_ms: Option<u64>,
    /// Since when it fails (the first failure after it last worked).
    pub failing_since_ms: Option<u64>,
    /// The last failure's message.
    pub last_error: Option<String>,
}

impl Failing {
    /// It worked at `now_ms`.
    pub fn ok(&mut self, now_ms: u64) {
        *self = Failing {
            last_ok_ms: Some(now_ms),
            failing_since_ms: None,
            last_error: None,
        };
    }

    /// It failed at `now_ms`; true when it has failed for
    /// [`FAILING_ALARM_AFTER_MS`] or more.
    pub fn failed(&mut self, now_ms: u64, error: String) -> bool {
        let since = *self.failing_since_ms.get_or_insert(now_ms);
        self.last_error = Some(error);
        now_ms.saturating_sub(since) >= FAILING_ALARM_AFTER_MS
    }
}

/// The kinds of alarm, each told at most once per [`NOTIFY_EVERY_MS`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AlarmKind {
    /// The newest session lost more than half of the tabs.
    Shrunken,
    /// The newest session file is damaged.
    Damaged,
    /// A session file cannot be read.
    Unreadable,
    /// Backups have failed for a day.
    BackupsFailing,
    /// Copies to a remote have failed for a day.
    CopyFailing {
        /// The remote's name in the config file.
        remote: String,
    },
}

impl AlarmKind {
    /// The name its last notification is remembered under: one per kind,
    /// and per remote for copies.
    pub fn key(&self) -> String {
        match self {
            AlarmKind::Shrunken => "shrunken".into(),
            AlarmKind::Damaged => "damaged".into(),
            AlarmKind::Unreadable => "unreadable".into(),
            AlarmKind::BackupsFailing => "backups-failing".into(),
            AlarmKind::CopyFailing { remote } => format!("copy-failing:{remote}"),
        }
    }
}

/// One alarm `watch` raised.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AlarmRecord {
    /// When (ms since the Unix epoch).
    pub at_ms: u64,
    /// What kind.
    #[serde(flatten)]
    pub kind: AlarmKind,
    /// What happened, in a line.
    pub message: String,
    /// The snapshot that brings the session back, if one does.
    pub snapshot: Option<i64>,
    /// Whether the person was told (not within the hour after the last
    /// of its kind, nor when notifications are off or failed).
    pub notified: bool,
}

impl WatchState {
    /// The state in `path`: empty when there is none, or when it does not
    /// read as one (it is advice; the next save writes it whole).
    pub fn load(path: &Path) -> Result<WatchState, PathError> {
        load_json(path)
    }

    /// Write the state to `path` (atomically; its folder made if missing,
    /// private to the user on Unix).
    pub fn save(&self, path: &Path) -> Result<(), PathError> {
        save_json(path, self)
    }

    /// Whether an alarm of `kind` may be told at `now_ms`: none of its kind
    /// was in the last [`NOTIFY_EVERY_MS`]. When it may, it counts as told.
    pub fn may_notify(&mut self, kind: &AlarmKind, now_ms: u64) -> bool {
        let key = kind.key();
        if self
            .notified
            .get(&key)
            .is_some_and(|&at| now_ms.saturating_sub(at) < NOTIFY_EVERY_MS && at <= now_ms)
        {
            return false;
        }
        self.notified.insert(key, now_ms);
        true
    }

    /// Remember an alarm (the newest [`ALARMS_KEPT`] are kept).
    pub fn record(&mut self, alarm: AlarmRecord) {
        self.alarms.push(alarm);
        let extra = self.alarms.len().saturating_sub(ALARMS_KEPT);
        self.alarms.drain(..extra);
    }
}

/// The last `ffsession check` of a store (`check.json` beside the watch
/// state).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckRecord {
    /// When it ended (ms since the Unix epoch).
    pub at_ms: u64,
    /// `whole`, `damaged` or `unreadable` (a file could not be read).
    pub outcome: String,
    /// What it found, in a line.
    pub summary: String,
    /// Whether it read every chunk (`--read-data`, or a local check, which
    /// always does).
    #[serde(default)]
    pub read_data: bool,
}

impl CheckRecord {
    /// The record in `path`, if there is one that reads.
    pub fn load(path: &Path) -> Result<Option<CheckRecord>, PathError> {
        load_json(path)
    }

    /// Write it to `path` (atomically; its folder made if missing).
    pub fn save(&self, path: &Path) -> Result<(), PathError> {
        save_json(path, self)
    }
}

fn load_json<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T, PathError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_default()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(PathError {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

fn save_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), PathError> {
    // Private, as the store is: it names the profile's files and folders.
    if let Some(dir) = path.parent() {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir).with_path(dir)?;
    }
    let json = serde_json::to_vec_pretty(value).map_err(|e| PathError {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    write_atomic(path, |w| w.write_all(&json))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = NOTIFY_EVERY_MS;

    #[test]
    fn one_notification_per_kind_per_hour() {
        let mut s = WatchState::default();
        let remote = |name: &str| AlarmKind::CopyFailing {
            remote: name.into(),
        };
        assert!(s.may_notify(&AlarmKind::Shrunken, 0));
        assert!(!s.may_notify(&AlarmKind::Shrunken, HOUR - 1));
        assert!(s.may_notify(&AlarmKind::Damaged, 1), "another kind");
        assert!(s.may_notify(&remote("nas"), 1));
        assert!(s.may_notify(&remote("usb"), 1), "another remote");
        assert!(!s.may_notify(&remote("nas"), 2));
        assert!(s.may_notify(&AlarmKind::Shrunken, HOUR));
        // A clock set back does not silence alarms for good.
        assert!(s.may_notify(&AlarmKind::Damaged, 0));
    }

    #[test]
    fn failing_for_a_day_is_an_alarm_and_working_again_resets_it() {
        let mut f = Failing::default();
        assert!(!f.failed(1000, "disk full".into()));
        assert!(!f.failed(1000 + FAILING_ALARM_AFTER_MS - 1, "disk full".into()));
        assert!(f.failed(1000 + FAILING_ALARM_AFTER_MS, "read-only".into()));
        assert_eq!(f.failing_since_ms, Some(1000));
        assert_eq!(f.last_error.as_deref(), Some("read-only"));
        f.ok(5);
        assert_eq!(f.failing_since_ms, None);
        assert!(!f.failed(10, "again".into()));
    }

    #[test]
    fn the_state_survives_a_restart_and_a_garbled_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("watch.json");
        assert_eq!(WatchState::load(&path).unwrap(), WatchState::default());
        let mut s = WatchState::default();
        assert!(s.may_notify(&AlarmKind::Shrunken, 7));
        for i in 0..60 {
            s.record(AlarmRecord {
                at_ms: i,
                kind: AlarmKind::Shrunken,
                message: format!("{i}"),
                snapshot: Some(3),
                notified: true,
            });
        }
        assert_eq!(s.alarms.len(), ALARMS_KEPT);
        assert_eq!(s.alarms[0].at_ms, 10, "the oldest go first");
        s.save(&path).unwrap();
        let mut again = WatchState::load(&path).unwrap();
        assert_eq!(again, s);
        assert!(!again.may_notify(&AlarmKind::Shrunken, 8), "remembered");
        std::fs::write(&path, b"{ not json").unwrap();
        assert_eq!(WatchState::load(&path).unwrap(), WatchState::default());
    }
}
