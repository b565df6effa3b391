//! When `ffsession watch` takes a snapshot: the debounce policy, as a small
//! state machine free of clocks and file-system events so it can be tested.
//!
//! Firefox rewrites `recovery.jsonlz4` about every 15 seconds while it runs.
//! A snapshot is taken at most once per interval (default 5 minutes) while
//! changes keep coming, as soon as the interval allows after a change, and at
//! once when Firefox exits (its final `sessionstore.jsonlz4`, or the last
//! recovery file after a crash), whatever the interval.
//!
//! Each snapshot is a [`cycle`]: back up the files whose content changed since
//! their newest snapshot ([`UnchangedFiles::Skip`]), then, if anything was
//! stored, apply the retention policy ([`crate::prune`]), so a store that
//! `watch` feeds for years stays bounded by the policy. [`UnchangedNotices`]
//! turns the unchanged files of each cycle into notices said once per change.
//!
//! Between snapshots, `watch` reads every change ([`loss`]): a write that is
//! damaged or lost more than half of the tabs makes the next cycle due at
//! once, which stores the good copy Firefox still has. What it remembers
//! across restarts (its alarms, failing backups and copies) is [`state`].

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use jiff::tz::TimeZone;

use crate::backup::{
    backup_profile_with, BackupError, BackupReport, UnchangedFile, UnchangedFiles,
};
use crate::prune::{self, PruneOutcome};
use crate::retention::RetentionPolicy;
use crate::store::{SnapshotId, Store};

pub mod loss;
pub mod state;

/// The default minimum time between two snapshots.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// Decides when to snapshot. Times are durations since any fixed start.
#[derive(Debug, Clone)]
pub struct Debouncer {
    interval: Duration,
    last_snapshot: Option<Duration>,
    pending: bool,
    urgent: bool,
}

impl Debouncer {
    /// A debouncer allowing one snapshot per `interval`.
    pub fn new(interval: Duration) -> Self {
        Debouncer {
            interval,
            last_snapshot: None,
            pending: false,
            urgent: false,
        }
    }

    /// A session file changed.
    pub fn changed(&mut self) {
        self.pending = true;
    }

    /// A read found a loss ([`loss::LossWatch`]): snapshot now, whatever
    /// the interval, while Firefox still has the good copy.
    pub fn loss(&mut self) {
        self.firefox_exited();
    }

    /// Firefox exited: snapshot now, whatever the interval.
    pub fn firefox_exited(&mut self) {
        self.pending = true;
        self.urgent = true;
    }

    /// When the next snapshot is due, if one is pending.
    pub fn due_at(&self) -> Option<Duration> {
        if !self.pending {
            return None;
        }
        match self.last_snapshot {
            Some(last) if !self.urgent => Some(last + self.interval),
            _ => Some(Duration::ZERO),
        }
    }

    /// Whether a snapshot should be taken at `now`.
    pub fn is_due(&self, now: Duration) -> bool {
        self.due_at().is_some_and(|at| now >= at)
    }

    /// A snapshot was taken at `now`.
    pub fn snapshot_taken(&mut self, now: Duration) {
        self.last_snapshot = Some(now);
        self.pending = false;
        self.urgent = false;
    }
}

/// What one watch cycle did.
#[derive(Debug, Clone)]
pub struct CycleReport {
    /// The backup: snapshots taken, files unchanged, the alarm.
    pub backup: BackupReport,
    /// What retention removed; `None` when nothing was stored (nothing to
    /// prune that the last cycle did not already consider).
    pub pruned: Option<PruneOutcome>,
}

/// One watch snapshot at `now_ms`: back up the changed files of the profile
/// in `profile_dir` into `store`, then apply `policy` (periods in `tz`) if
/// anything was stored.
pub fn cycle(
    store: &mut Store,
    profile: &str,
    profile_dir: &Path,
    now_ms: u64,
    policy: &RetentionPolicy,
    tz: &TimeZone,
) -> Result<CycleReport, BackupError> {
    let backup = backup_profile_with(store, profile, profile_dir, now_ms, UnchangedFiles::Skip)?;
    let pruned = if backup.snapshots.is_empty() {
        None
    } else {
        Some(prune::apply(store, policy, tz, now_ms)?)
    };
    Ok(CycleReport { backup, pruned })
}

/// How often `watch` reads back what it relies on ([`verify_newest`]).
pub const VERIFY_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// Read back the newest snapshot of each file of `profile` (the one an
/// unchanged file is compared with, and so never stored again while it
/// stays unchanged). A damaged one is marked, and the next [`cycle`] stores
/// its file again even if unchanged, which rewrites the damaged chunks.
/// `watch` calls this at start and every [`VERIFY_INTERVAL`], then runs a
/// cycle at once when anything was found.
pub fn verify_newest(
    store: &Store,
    profile: &str,
) -> Result<Vec<crate::store::SnapshotDamage>, crate::store::StoreError> {
    let mut newest: HashMap<String, SnapshotId> = HashMap::new();
    for s in store.snapshots()? {
        if s.profile == profile {
            let e = newest.entry(s.file_name.clone()).or_insert(s.id);
            *e = (*e).max(s.id);
        }
    }
    let mut ids: Vec<SnapshotId> = newest.into_values().collect();
    ids.sort();
    let mut found = Vec::new();
    for id in ids {
        if let Some(d) = store.verify_snapshot(id)? {
            found.push(d);
        }
    }
    Ok(found)
}

/// Which files were last said to be unchanged, so each "unchanged since #N"
/// is said once, and again only after the file changed.
#[derive(Debug, Clone, Default)]
pub struct UnchangedNotices {
    said: HashMap<String, SnapshotId>,
}

impl UnchangedNotices {
    /// The unchanged files of `report` not yet said (since their last change);
    /// files stored by `report` are forgotten, so their next "unchanged" is
    /// said again.
    pub fn update<'r>(&mut self, report: &'r BackupReport) -> Vec<&'r UnchangedFile> {
        for s in &report.snapshots {
            self.said.remove(&s.file_name);
        }
        report
            .unchanged
            .iter()
            .filter(|u| self.said.insert(u.file.clone(), u.since) != Some(u.since))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn at_most_one_snapshot_per_interval_while_changes_keep_coming() {
        let mut d = Debouncer::new(5 * MIN);
        assert!(!d.is_due(Duration::ZERO), "nothing changed yet");
        d.changed();
        assert!(
            d.is_due(Duration::ZERO),
            "the first change is taken at once"
        );
        d.snapshot_taken(Duration::ZERO);
        let mut taken = 1;
        // Firefox writes every 15 s for an hour.
        for step in 1..=240u64 {
            let now = Duration::from_secs(15 * step);
            d.changed();
            if d.is_due(now) {
                d.snapshot_taken(now);
                taken += 1;
            }
        }
        assert_eq!(taken, 1 + 12, "one per 5 minutes over an hour");
    }

    #[test]
    fn firefox_exiting_snapshots_at_once() {
        let mut d = Debouncer::new(5 * MIN);
        d.changed();
        d.snapshot_taken(Duration::ZERO);
        d.changed();
        assert!(!d.is_due(MIN));
        assert_eq!(d.due_at(), Some(5 * MIN));
        d.firefox_exited();
        assert!(d.is_due(MIN));
        d.snapshot_taken(MIN);
        assert_eq!(d.due_at(), None);
    }
}
