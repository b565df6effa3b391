//! Undo points: the snapshots a `restore` or a `tidy` took of a profile's
//! session files before changing them, and how long retention keeps them.
//!
//! Each undo point is one manifest file, `undo/<made at>-<first id>.json`
//! (sealed like every manifest: a checksum over its JSON), written
//! durably before the profile changes. There is no catalog table: the
//! files are the record, so a rebuilt catalog keeps them, and a prune reads
//! the few there are.
//!
//! The promise ([`UndoPoint::kept_until_ms`]): an undo point is kept at
//! least 30 days, and until the next undo point of the same profile is 7
//! days old, whichever is later. So the newest undo point of a profile is
//! always kept.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{manifest, SnapshotId, StoreError};

/// The folder of undo-point manifests.
pub const UNDO_DIR: &str = "undo";

/// How long an undo point is kept at least.
pub const UNDO_KEEP_MS: u64 = 30 * DAY_MS;
/// How long an undo point is kept after the next one of its profile.
pub const UNDO_KEEP_AFTER_NEXT_MS: u64 = 7 * DAY_MS;
const DAY_MS: u64 = 24 * 3_600_000;

/// What changed the profile after the undo point was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndoAction {
    /// `ffsession restore` (a snapshot, `latest`, or a file).
    Restore,
    /// `ffsession tidy`.
    Tidy,
}

impl std::fmt::Display for UndoAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UndoAction::Restore => "restore",
            UndoAction::Tidy => "tidy",
        })
    }
}

/// One undo point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoPoint {
    /// When it was taken (ms since the epoch).
    pub made_at_ms: u64,
    /// The profile (its name, as its snapshots record it).
    pub profile: String,
    /// What changed the profile then.
    pub action: UndoAction,
    /// The snapshots of the profile's files as they were.
    pub snapshots: Vec<SnapshotId>,
    /// For a restore, the snapshot it put in place: the profile's session
    /// from then on, until Firefox writes a newer one.
    pub restored: Option<SnapshotId>,
    /// The content of that snapshot (its BLAKE3): every snapshot of the
    /// same content, such as a later backup of the restored file, is that
    /// session too.
    #[serde(default)]
    pub restored_content: Option<super::Digest>,
}

impl UndoPoint {
    /// Until when retention keeps this undo point, given every undo point of
    /// the store: `None` for as long as it is the newest of its profile.
    pub fn kept_until_ms(&self, all: &[UndoPoint]) -> Option<u64> {
        let next = all
            .iter()
            .filter(|u| u.profile == self.profile && u.made_at_ms > self.made_at_ms)
            .map(|u| u.made_at_ms)
            .min()?;
        Some((self.made_at_ms + UNDO_KEEP_MS).max(next.saturating_add(UNDO_KEEP_AFTER_NEXT_MS)))
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UndoManifest {
    format: String,
    undo: UndoPoint,
}

const UNDO_FORMAT: &str = "ffsession-undo/1";

/// Write (durably) the manifest of an undo point into the store at `dir`.
pub(super) fn write(dir: &Path, point: &UndoPoint) -> Result<(), StoreError> {
    let first = point.snapshots.first().map_or(0, |s| s.0);
    let path = dir
        .join(UNDO_DIR)
        .join(format!("{}-{first}.json", point.made_at_ms));
    manifest::write_sealed(
        dir,
        UNDO_DIR,
        &path,
        &UndoManifest {
            format: UNDO_FORMAT.into(),
            undo: point.clone(),
        },
    )
}

/// Undo-point files that do not read: (path, why).
type Unreadable = Vec<(String, String)>;

/// Every undo point of the store at `dir`, oldest first, and the files that
/// do not read.
pub(super) fn read_all(dir: &Path) -> Result<(Vec<UndoPoint>, Unreadable), StoreError> {
    let mut points = Vec::new();
    let mut bad = Vec::new();
    for (path, manifest) in manifest::sealed_files::<UndoManifest>(dir, UNDO_DIR)? {
        match manifest {
            Ok(m) if m.format == UNDO_FORMAT => points.push(m.undo),
            Ok(m) => bad.push((
                path.display().to_string(),
                format!("unknown format {:?}", m.format),
            )),
            Err(why) => bad.push((path.display().to_string(), why)),
        }
    }
    points.sort_by_key(|u| (u.made_at_ms, u.snapshots.first().copied()));
    Ok((points, bad))
}

impl super::Store {
    /// Record an undo point (durably, before the profile changes).
    pub fn record_undo_point(&self, point: &UndoPoint) -> Result<(), StoreError> {
        self.writable()?;
        super::hygiene::refuse_writer_links(self.dir())?;
        write(self.dir(), point)
    }

    /// Every undo point of the store, oldest first. A file that does not
    /// read is left out (`check` names it).
    pub fn undo_points(&self) -> Result<Vec<UndoPoint>, StoreError> {
        Ok(read_all(self.dir())?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(profile: &str, at: u64) -> UndoPoint {
        UndoPoint {
            made_at_ms: at,
            profile: profile.into(),
            action: UndoAction::Restore,
            snapshots: vec![SnapshotId(at as i64)],
            restored: None,
            restored_content: None,
        }
    }

    #[test]
    fn an_undo_point_lasts_30_days_and_7_after_the_next() {
        let a = point("p", 0);
        let b = point("p", 2 * DAY_MS);
        let c = point("p", 40 * DAY_MS);
        let other = point("q", DAY_MS);
        let all = [a.clone(), b.clone(), c.clone(), other.clone()];
        // The next one soon after: 30 days.
        assert_eq!(a.kept_until_ms(&all), Some(30 * DAY_MS));
        // The next one 38 days later: until it is 7 days old.
        assert_eq!(b.kept_until_ms(&all), Some(47 * DAY_MS));
        // The newest of each profile: for as long as it is the newest.
        assert_eq!(c.kept_until_ms(&all), None);
        assert_eq!(other.kept_until_ms(&all), None);
    }

    #[test]
    fn undo_points_are_written_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let b = point("p", 5);
        let a = point("p", 1);
        write(dir.path(), &b).unwrap();
        write(dir.path(), &a).unwrap();
        std::fs::write(dir.path().join(UNDO_DIR).join("9-9.json"), b"{}").unwrap();
        let (points, bad) = read_all(dir.path()).unwrap();
        assert_eq!(points, [a, b]);
        assert_eq!(bad.len(), 1);
    }
}
