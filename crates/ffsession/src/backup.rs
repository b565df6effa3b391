//! Taking a backup of a profile: every session file into the store, and the
//! alarm when the newest file is damaged or has lost most of its tabs.
//!
//! This module owns the decision "is this backup worrying?". It snapshots every
//! session file the profile holds ([`crate::sources::list`]) into a
//! [`Store`], each verified by the store (decompressed and parsed) before it
//! counts as good. Then it looks at the newest session of the profile, by the
//! session's own clock (`session.lastUpdate`, see
//! [`SnapshotInfo::session_time_ms`]), never by file order or snapshot id (an
//! `upgrade.jsonlz4-*` copy is an old session): if it is corrupt, or holds
//! fewer than half the tabs of the newest good session stored before this
//! backup, the report carries an [`Alarm`]. The snapshots are
//! kept either way, marked, so the evidence is never lost.
//!
//! Only the profile's own session files are taken ([`sources::scan`]: regular
//! files with Firefox's names, no link followed, at most
//! [`sources::MAX_SESSION_BYTES`]); what is left out, and a file that cannot
//! be read, is in [`BackupReport::skipped`], and the other files are backed
//! up.
//!
//! Zen's own files (`zen-sessions.jsonlz4` and its copies,
//! [`sources::SourceKind::is_zen`]) are stored with the rest, verified as
//! Zen's, and take no part in the alarm: they hold no Firefox session.
//!
//! [`backup_profile_with`] with [`UnchangedFiles::Skip`] (what `watch` does)
//! leaves out a file whose content is that of its newest snapshot, and says so
//! in [`BackupReport::unchanged`]; the explicit `backup` stores every file.

use std::path::Path;

use crate::retention::is_shrunken;
use crate::sources;
use crate::store::{SnapshotId, SnapshotInfo, SnapshotSource, Store, StoreError};

/// Why a backup deserves the user's attention.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "alarm", rename_all = "kebab-case")]
pub enum Alarm {
    /// The newest session file does not decompress or parse.
    NewestCorrupt {
        /// The file, relative to the profile.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The newest session file lost more than half of the tabs of the last
    /// good snapshot.
    Shrunken {
        /// The file, relative to the profile.
        file: String,
        /// Its tabs.
        tabs: u64,
        /// The tabs of the last good snapshot before this backup.
        previous_tabs: u64,
        /// That snapshot.
        previous_id: i64,
    },
    /// A session file exists but cannot be read (permission denied, an I/O
    /// error): it may hold the newest session, and it is not backed up.
    Unreadable {
        /// The file, relative to the profile.
        file: String,
        /// Why it cannot be read.
        error: String,
    },
}

impl BackupError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<crate::Hint> {
        use crate::Hint;
        match self {
            BackupError::Store(e) => e.hint(),
            BackupError::Profile(e) => match e.source.kind() {
                std::io::ErrorKind::NotFound => Some(Hint::CheckProfilePath),
                std::io::ErrorKind::PermissionDenied => {
                    Some(Hint::Advice("check the permissions of the profile folder"))
                }
                _ => None,
            },
        }
    }
}

impl std::fmt::Display for Alarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Alarm::NewestCorrupt { file, reason } => {
                write!(f, "the newest session file {file} is damaged: {reason}")
            }
            Alarm::Shrunken {
                file,
                tabs,
                previous_tabs,
                previous_id,
            } => write!(
                f,
                "the newest session file {file} has {tabs} tabs, down from {previous_tabs} in snapshot {previous_id}"
            ),
            Alarm::Unreadable { file, error } => write!(
                f,
                "the session file {file} cannot be read, so it is not backed up: {error}"
            ),
        }
    }
}

/// What a backup did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BackupReport {
    /// The snapshots taken, in the order Firefox tries the files.
    pub snapshots: Vec<SnapshotInfo>,
    /// Set when the newest file is corrupt or shrunken.
    pub alarm: Option<Alarm>,
    /// Files left out because their content is that of their newest snapshot
    /// (only with [`UnchangedFiles::Skip`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<UnchangedFile>,
    /// What was left out and why: links, files that are not session files
    /// or too large ([`sources::scan`]), and files that could not be read
    /// (each a warning for that file; the other files are backed up).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<sources::SkippedFile>,
}

/// A file not stored again: its content is that of its newest snapshot.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnchangedFile {
    /// The file, relative to the profile.
    pub file: String,
    /// Its newest snapshot, whose content it still has.
    pub since: SnapshotId,
}

/// What a backup does with a file whose content is that of the file's newest
/// snapshot in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnchangedFiles {
    /// Take a snapshot anyway (a catalog row; no chunk is stored twice).
    Store,
    /// Take none, and list the file in [`BackupReport::unchanged`].
    Skip,
}

/// Why a backup failed.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The profile folder could not be read.
    #[error(transparent)]
    Profile(#[from] crate::error::PathError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Snapshot every session file of the profile in `profile_dir` into `store`,
/// recording `profile` (its name) and `now_ms` as the time taken. The backup is
/// all or nothing: if it fails, no snapshot of it is in the catalog.
pub fn backup_profile(
    store: &mut Store,
    profile: &str,
    profile_dir: &Path,
    now_ms: u64,
) -> Result<BackupReport, BackupError> {
    backup_profile_with(store, profile, profile_dir, now_ms, UnchangedFiles::Store)
}

/// [`backup_profile`], choosing what to do with files that did not change
/// since their newest snapshot. The alarm looks at the newest file only when
/// it is stored: an unchanged file was judged when its content was stored.
pub fn backup_profile_with(
    store: &mut Store,
    profile: &str,
    profile_dir: &Path,
    now_ms: u64,
    unchanged_files: UnchangedFiles,
) -> Result<BackupReport, BackupError> {
    // The newest good session stored before this backup, by the session's
    // own clock: what the newest file of this backup is compared with.
    let last_good = store
        .snapshots_by_session_time()?
        .into_iter()
        .find(|s| s.is_ok() && s.counts.is_some() && !s.kind.is_zen());
    let damaged = match unchanged_files {
        UnchangedFiles::Store => Default::default(),
        UnchangedFiles::Skip => store.damage_marks()?,
    };
    let sources::Listing { files, mut skipped } = sources::scan(profile_dir)?;
    let mut read = Vec::with_capacity(files.len());
    let mut unchanged = Vec::new();
    for file in &files {
        let source = match SnapshotSource::read(profile, file) {
            Ok(source) => source,
            // Firefox may rename a file away between listing and reading it.
            Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => continue,
            // One unreadable file does not cost the others their backup.
            Err(e) => {
                skipped.push(sources::SkippedFile {
                    path: file.path.clone(),
                    name: file.name.clone(),
                    reason: sources::SkipReason::Unreadable {
                        error: e.source.to_string(),
                    },
                });
                continue;
            }
        };
        // A file whose newest snapshot was found damaged is stored again,
        // unchanged or not: that rewrites the damaged chunks (healing every
        // snapshot that shares them).
        let same = match unchanged_files {
            UnchangedFiles::Store => None,
            UnchangedFiles::Skip => store
                .latest_content(profile, &source.file_name)?
                .filter(|(id, digest)| {
                    *digest == source.content_digest() && !damaged.contains_key(id)
                })
                .map(|(id, _)| id),
        };
        match same {
            Some(since) => unchanged.push(UnchangedFile {
                file: source.file_name,
                since,
            }),
            None => read.push(source),
        }
    }
    // All files or none: a failure (a full disk) leaves the catalog as it was.
    let taken = store.add_snapshots(read, now_ms)?;
    // The newest session of the profile by its own time (an unchanged file
    // counts with its stored snapshot, and was judged when that was stored):
    // an upgrade copy or previous.jsonlz4 is older than the recovery file
    // beside it, whatever order they were stored in.
    // (session time, role: the file Firefox tries first wins a tie)
    type Key = (u64, std::cmp::Reverse<u8>);
    let mut newest: Option<(Key, Option<usize>)> = None;
    let mut consider = |key: Key, taken: Option<usize>| {
        if newest.is_none_or(|(k, _)| key > k) {
            newest = Some((key, taken));
        }
    };
    // Zen's own files hold no Firefox session: neither newest nor compared.
    for u in &unchanged {
        let info = store.snapshot(u.since)?;
        if info.kind.is_zen() {
            continue;
        }
        consider(
            (info.session_time_ms(), std::cmp::Reverse(info.kind.rank())),
            None,
        );
    }
    for (i, s) in taken.iter().enumerate().filter(|(_, s)| !s.kind.is_zen()) {
        consider(
            (s.session_time_ms(), std::cmp::Reverse(s.kind.rank())),
            Some(i),
        );
    }
    let alarm = newest
        .and_then(|(_, i)| i)
        .map(|i| &taken[i])
        .and_then(|s| match (&s.status, s.counts, &last_good) {
            (crate::store::SnapshotStatus::Corrupt { reason }, _, _) => {
                Some(Alarm::NewestCorrupt {
                    file: s.file_name.clone(),
                    reason: reason.clone(),
                })
            }
            (_, Some(c), Some(prev)) => {
                let previous_tabs = prev.counts.map_or(0, |p| p.tabs);
                is_shrunken(previous_tabs, c.tabs).then(|| Alarm::Shrunken {
                    file: s.file_name.clone(),
                    tabs: c.tabs,
                    previous_tabs,
                    previous_id: prev.id.0,
                })
            }
            _ => None,
        })
        .or_else(|| {
            // A session file that cannot be read may hold the newest session.
            skipped.iter().find_map(|f| match &f.reason {
                sources::SkipReason::Unreadable { error } => Some(Alarm::Unreadable {
                    file: f.name.clone(),
                    error: error.clone(),
                }),
                _ => None,
            })
        });
    // The store now names the folder it backs up (see `store::owner`). A
    // failure to write that name costs nothing stored: the next backup
    // writes it.
    let _ = crate::store::owner::bind(store.dir(), profile_dir);
    Ok(BackupReport {
        snapshots: taken,
        alarm,
        unchanged,
        skipped,
    })
}
