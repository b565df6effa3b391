//! Restoring a snapshot into a profile so that the next Firefox start reopens
//! exactly its windows and tabs, whatever the user's startup setting.
//!
//! This module owns the restore recipe, worked out against Firefox ESR 153
//! (`e2e/experiments/RESTORE.md`; Firefox's `SessionStartup.sys.mjs` and
//! `SessionFile.sys.mjs`):
//!
//! 1. The snapshot must be a verified session with at least one window with tabs,
//!    or Firefox silently falls back to another file.
//! 2. Firefox must not run on the profile, and must not start while we work:
//!    we hold an exclusive fcntl lock on `.parentlock` (Firefox's own profile
//!    lock) from the check to the end, so a Firefox started meanwhile refuses
//!    the profile. A restore done under a running Firefox is lost at its quit.
//! 3. Every current session file of the profile is snapshotted into the store
//!    first (durably), so the restore itself can be undone.
//! 4. `recovery.jsonlz4`, `recovery.baklz4` and `previous.jsonlz4` are removed
//!    from `sessionstore-backups/` (they are in the store now), so Firefox cannot
//!    fall back to them.
//! 5. The snapshot is written as `sessionstore.jsonlz4` (atomically).
//! 6. Last, `prefs.js` gets `browser.sessionstore.resume_session_once = true`,
//!    the one-shot switch Firefox itself uses for restarts: it restores the
//!    session whatever `browser.startup.page` says and clears the pref. A stale
//!    `browser.sessionstore.resuming_after_os_restart` line, which would cancel
//!    it, is removed. The old `prefs.js` is kept in the store folder.
//!    (`user.js` is not used: it is re-applied at every start.)
//!
//!
//! In a Zen profile, Zen's own sessions file of the same moment is written
//! as `zen-sessions.jsonlz4` before step 5 ([`crate::zen::restore`]): Zen
//! shows the tabs and spaces of that file, not Firefox's.
//!
//! [`plan`] computes all of this without touching anything; [`execute`] does it.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use crate::backup::{backup_profile, BackupError};
use crate::error::{IoResultExt, PathError};
use crate::fs_util::write_atomic;
use crate::profile::{lock_state, LockState};
use crate::store::{
    SnapshotDamage, SnapshotId, SnapshotInfo, Store, StoreError, UndoAction, UndoPoint,
};

/// The pref that makes the next start restore the session, once.
pub const RESUME_ONCE_PREF: &str = "browser.sessionstore.resume_session_once";
/// A pref that, left true, makes Firefox skip the one-shot restore.
pub const OS_RESTART_PREF: &str = "browser.sessionstore.resuming_after_os_restart";
/// Session files removed so Firefox cannot fall back to them.
pub const SET_ASIDE: [&str; 3] = [
    "sessionstore-backups/recovery.jsonlz4",
    "sessionstore-backups/recovery.baklz4",
    "sessionstore-backups/previous.jsonlz4",
];

/// Why a restore cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// Firefox runs on the profile.
    #[error("{}: Firefox is running on this profile{}", profile.display(), pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    FirefoxRunning {
        /// The profile folder.
        profile: PathBuf,
        /// Firefox's process id, if known.
        pid: Option<u32>,
    },
    /// The snapshot is not a session Firefox would restore.
    #[error("snapshot {id} cannot be restored: {reason}")]
    NotRestorable {
        /// The snapshot.
        id: SnapshotId,
        /// Why.
        reason: String,
    },
    /// A file to restore is not a session Firefox would restore: refused
    /// before anything is stored.
    #[error("{}: not a Firefox session file: {reason}", path.display())]
    NotASession {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `restore latest` found no snapshot to restore.
    #[error("the store has no snapshot Firefox would restore that reads back whole{}", if damaged.is_empty() { String::new() } else { format!(" ({} found damaged)", damaged.len()) })]
    NothingToRestore {
        /// Snapshots skipped because they do not read back whole.
        damaged: Vec<SnapshotDamage>,
    },
    /// The profile has session files (or `prefs.js`) to keep for the undo,
    /// and the store cannot be written.
    #[error("{}: the store cannot be written, and the undo snapshot of the profile's current files must go somewhere: {source}", store.display())]
    UndoNeedsStore {
        /// The store folder.
        store: PathBuf,
        /// Why it cannot be written (boxed: the error stays small).
        #[source]
        source: Box<StoreError>,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Backing up the current session failed.
    #[error(transparent)]
    Backup(#[from] BackupError),
    /// A file of the profile could not be read or written.
    #[error(transparent)]
    Io(#[from] PathError),
}

impl RestoreError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<crate::Hint> {
        use crate::Hint;
        match self {
            RestoreError::FirefoxRunning { .. } => Some(Hint::Advice(
                "quit Firefox (all its windows) and run the restore again",
            )),
            RestoreError::NotASession { path, .. } => {
                Some(Hint::RestoreNotASession { file: path.clone() })
            }
            RestoreError::NotRestorable { .. } => Some(Hint::ListVerified),
            RestoreError::NothingToRestore { damaged } if damaged.is_empty() => {
                Some(Hint::TakeBackup)
            }
            RestoreError::NothingToRestore { .. } => Some(Hint::CheckAndBackUp),
            RestoreError::UndoNeedsStore { .. } => Some(Hint::UndoNeedsStore),
            RestoreError::Store(e) => e.hint(),
            RestoreError::Backup(e) => e.hint(),
            RestoreError::Io(_) => None,
        }
    }
}

/// What a restore will do.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RestorePlan {
    /// The profile folder.
    pub profile_dir: PathBuf,
    /// The snapshot to restore.
    pub snapshot: SnapshotInfo,
    /// The profile folder does not exist yet and will be created.
    pub create_dir: bool,
    /// Current session files that will be snapshotted first.
    pub back_up: Vec<String>,
    /// Files that will be removed after that backup (relative to the profile).
    pub remove: Vec<String>,
    /// The file the snapshot is written to.
    pub write: PathBuf,
    /// Zen's sessions file of the same moment, written with it, when the
    /// store has one ([`crate::zen::restore`]).
    pub zen: Option<crate::zen::restore::ZenRestore>,
    /// `prefs.js`, where the one-shot restore pref is set.
    pub prefs: PathBuf,
    /// Things the user should know (e.g. `user.js` overriding the pref).
    pub warnings: Vec<String>,
}

impl RestorePlan {
    /// True if the profile holds something an undo needs kept (session
    /// files, `prefs.js`): then the restore writes into a store.
    pub fn needs_undo(&self) -> bool {
        !self.back_up.is_empty() || self.prefs.exists()
    }
}

/// Check that `id` can be restored into `profile_dir` (its content reads back
/// whole) and say what will change.
pub fn plan(
    store: &Store,
    id: SnapshotId,
    profile_dir: &Path,
) -> Result<RestorePlan, RestoreError> {
    let snapshot = store.snapshot(id)?;
    check_restorable(&snapshot)?;
    // Read it back now (every chunk against its digest), so a snapshot the
    // store can no longer give back whole is refused before any plan is shown.
    store.read_json(id)?;
    let mut changes = profile_changes(profile_dir)?;
    let (zen, zen_warnings) = crate::zen::restore::plan(store, &snapshot, profile_dir)?;
    changes.warnings.extend(zen_warnings);
    Ok(RestorePlan {
        profile_dir: profile_dir.to_path_buf(),
        snapshot,
        create_dir: changes.create_dir,
        back_up: changes.back_up,
        remove: changes.remove,
        write: profile_dir.join("sessionstore.jsonlz4"),
        zen,
        prefs: profile_dir.join("prefs.js"),
        warnings: changes.warnings,
    })
}

/// The snapshot `restore latest` means: the newest session by its own clock
/// (`session.lastUpdate`, never the snapshot id: an upgrade copy backed up
/// today is an old session) that Firefox would restore and that reads back
/// whole now. A snapshot the user restored counts as a session of the time
/// it was restored ([`newest_first`]). Returns it and the newer ones
/// skipped because they do not read back whole (each with what is wrong).
pub fn latest(store: &Store) -> Result<(SnapshotInfo, Vec<SnapshotDamage>), RestoreError> {
    latest_of(store, &|_| true)
}

/// [`latest`] among the snapshots `keep` keeps (one machine's and
/// profile's, of a remote's copy holding several).
pub fn latest_of(
    store: &Store,
    keep: &dyn Fn(&SnapshotInfo) -> bool,
) -> Result<(SnapshotInfo, Vec<SnapshotDamage>), RestoreError> {
    let mut skipped = Vec::new();
    for s in newest_first(store)?.into_iter().filter(|s| keep(s)) {
        if check_restorable(&s).is_err() {
            continue;
        }
        match store.verify_snapshot(s.id)? {
            None => return Ok((s, skipped)),
            Some(damage) => skipped.push(damage),
        }
    }
    Err(RestoreError::NothingToRestore { damaged: skipped })
}

/// The snapshots of files that were damaged when they were taken and are
/// newer (as [`newest_first`] orders them) than `chosen`: what `restore
/// latest` passed over, and what `rescue` may still get tabs back from.
pub fn newer_damaged_files(
    store: &Store,
    chosen: &SnapshotInfo,
) -> Result<Vec<SnapshotInfo>, RestoreError> {
    Ok(newest_first(store)?
        .into_iter()
        .take_while(|s| s.id != chosen.id)
        .filter(|s| !s.is_ok() && !s.kind.is_zen())
        .collect())
}

/// The store's snapshots, newest session first, as `restore latest` sees
/// them: by the session's own time, except that a session the user
/// restored is the profile's session from the moment of its restore (its
/// undo point says when) until Firefox writes a newer one, so it comes
/// before the snapshots of the files it replaced. That holds for every
/// snapshot of the restored content (the restored file backed up again
/// keeps its old `lastUpdate`). Equal times go to what was restored, then to
/// the store's order ([`crate::store::newest_session_first`]).
pub fn newest_first(store: &Store) -> Result<Vec<SnapshotInfo>, RestoreError> {
    let mut restored_at = std::collections::HashMap::new();
    let mut snapshots = store.snapshots_by_session_time()?;
    for p in store.undo_points()? {
        let content = p.restored_content.or_else(|| {
            let id = p.restored?;
            snapshots
                .iter()
                .find(|s| s.id == id)
                .map(|s| s.content_hash)
        });
        if let Some(content) = content {
            let at = restored_at.entry(content).or_insert(0u64);
            *at = (*at).max(p.made_at_ms);
        }
    }
    if !restored_at.is_empty() {
        // A stable sort keeps the store's order within equal keys.
        snapshots.sort_by_key(|s| {
            let at = restored_at.get(&s.content_hash).copied();
            let time = at.map_or(s.session_time_ms(), |t| t.max(s.session_time_ms()));
            (std::cmp::Reverse(time), at.is_none())
        });
    }
    Ok(snapshots)
}

/// What a restore changes in a profile folder, whatever it restores.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ProfileChanges {
    /// The folder does not exist yet and will be created (a new machine, a
    /// new profile): Firefox opens it with `firefox -profile DIR`.
    pub create_dir: bool,
    /// Current session files that will be snapshotted first.
    pub back_up: Vec<String>,
    /// Files that will be removed after that backup (relative to the profile).
    pub remove: Vec<String>,
    /// Things the user should know (e.g. `user.js` overriding the pref).
    pub warnings: Vec<String>,
}

/// Check that Firefox does not run on `profile_dir` and say what a restore
/// would change there. A folder that does not exist is created by the
/// restore; an empty one just gets the session and `prefs.js`.
pub fn profile_changes(profile_dir: &Path) -> Result<ProfileChanges, RestoreError> {
    if !profile_dir.exists() {
        return Ok(ProfileChanges {
            create_dir: true,
            ..ProfileChanges::default()
        });
    }
    if let LockState::Running { pid } = lock_state(profile_dir) {
        return Err(RestoreError::FirefoxRunning {
            profile: profile_dir.to_path_buf(),
            pid,
        });
    }
    let back_up = crate::sources::list(profile_dir)?
        .into_iter()
        .map(|f| f.name)
        .collect();
    let remove = SET_ASIDE
        .iter()
        .filter(|n| profile_dir.join(n).exists())
        .map(|n| (*n).to_owned())
        .collect();
    let mut warnings = Vec::new();
    if let Ok(user_js) = fs::read_to_string(profile_dir.join("user.js")) {
        for pref in [RESUME_ONCE_PREF, OS_RESTART_PREF] {
            if user_js.contains(pref) {
                warnings.push(format!(
                    "user.js sets {pref}; it overrides prefs.js and may stop the restore"
                ));
            }
        }
    }
    Ok(ProfileChanges {
        create_dir: false,
        back_up,
        remove,
        warnings,
    })
}

/// Store the session file at `path` as a snapshot, so that it is restored
/// (and the restore undone) like any other: an extracted, merged or rescued
/// session, or one copied from elsewhere. It must be a session Firefox would
/// restore.
pub fn import(store: &mut Store, path: &Path, now_ms: u64) -> Result<SnapshotInfo, RestoreError> {
    check_session_file(path)?;
    let mut f = File::open(path).with_path(path)?;
    let meta = f.metadata().with_path(path)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut bytes).with_path(path)?;
    let source = crate::store::SnapshotSource {
        bytes,
        profile: "imported".to_owned(),
        file_name: path.display().to_string(),
        kind: crate::sources::SourceKind::Other,
        mtime_ms: meta.modified().ok().and_then(crate::store::unix_ms),
    };
    let info = store.add_snapshots(vec![source], now_ms)?.remove(0);
    check_restorable(&info)?;
    Ok(info)
}

/// A file Firefox would restore: a readable session with a window with
/// tabs, checked before anything is stored ([`RestoreError::NotASession`]).
pub fn check_session_file(path: &Path) -> Result<(), RestoreError> {
    let not = |reason: String| RestoreError::NotASession {
        path: path.to_path_buf(),
        reason,
    };
    let summary = match crate::format::FileSummary::read(path) {
        Ok(s) if s.zen.is_some() => return Err(not(ZEN_FILE.into())),
        Ok(s) => s.summary,
        Err(crate::Error::Io(e)) => return Err(e.into()),
        Err(crate::Error::Format { source, .. }) => return Err(not(source.to_string())),
        Err(crate::Error::Parse { source, .. }) => return Err(not(source.to_string())),
        Err(e) => return Err(not(e.to_string())),
    };
    if summary.windows == 0 || summary.tabs == 0 {
        return Err(not(
            "it has no window with tabs, and Firefox would start empty instead".into(),
        ));
    }
    Ok(())
}

/// Why one of Zen's files is not restored alone.
const ZEN_FILE: &str =
    "it is Zen's sessions file (its spaces and sidebar), not a Firefox session; \
     restore the Firefox session of its moment, and Zen's file of that moment comes with it";

/// A snapshot Firefox would restore: verified, with a window with tabs.
fn check_restorable(snapshot: &SnapshotInfo) -> Result<(), RestoreError> {
    let not = |reason: &str| RestoreError::NotRestorable {
        id: snapshot.id,
        reason: reason.to_owned(),
    };
    if snapshot.kind.is_zen() {
        return Err(not(ZEN_FILE));
    }
    if !snapshot.is_ok() {
        return Err(not("its file was damaged when it was taken"));
    }
    match snapshot.counts {
        Some(c) if c.windows > 0 && c.tabs > 0 => Ok(()),
        _ => Err(not(
            "it has no window with tabs, and Firefox would start empty instead",
        )),
    }
}

/// What a restore did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RestoreReport {
    /// Snapshots of the profile's files taken before anything changed: restore
    /// one of them to undo.
    pub undo: Vec<SnapshotInfo>,
    /// Where the old `prefs.js` was kept, if there was one.
    pub prefs_backup: Option<PathBuf>,
}

/// Carry out `plan`, recording `profile` and `now_ms` for the undo snapshots.
///
/// The snapshot comes from `store`; the undo snapshot of the profile's
/// current files (and its old `prefs.js`) goes into `undo_store` when given,
/// else into `store`. When the profile holds nothing to undo (a new or empty
/// folder: [`RestorePlan::needs_undo`]), nothing is written into any store,
/// so `store` may be read-only (a store on a USB stick or a mounted backup).
pub fn execute(
    plan: &RestorePlan,
    store: &mut Store,
    undo_store: Option<&mut Store>,
    profile: &str,
    now_ms: u64,
) -> Result<RestoreReport, RestoreError> {
    let dir = &plan.profile_dir;
    let needs_undo = plan.needs_undo();
    if needs_undo && undo_store.is_none() && store.is_read_only() {
        return Err(RestoreError::UndoNeedsStore {
            store: store.dir().to_path_buf(),
            source: Box::new(StoreError::ReadOnly {
                dir: store.dir().to_path_buf(),
            }),
        });
    }
    if plan.create_dir {
        create_private_dir(dir)?;
    }
    let _lock = hold_profile_lock(dir)?;
    let packed = store.export_mozlz4(plan.snapshot.id)?;
    let zen_packed = match &plan.zen {
        Some(z) => Some(store.export_mozlz4(z.snapshot.id)?),
        None => None,
    };
    let same_store = undo_store.is_none();
    let undo_into: &mut Store = match undo_store {
        Some(s) => s,
        None => store,
    };
    let undo = if needs_undo {
        backup_profile(undo_into, profile, dir, now_ms)?.snapshots
    } else {
        Vec::new()
    };
    if needs_undo || (same_store && !undo_into.is_read_only()) {
        // The undo point, durable before the profile changes. What was
        // restored is named only in its own store (the restore's time makes
        // it the latest there: [`latest`]); a profile with nothing to undo
        // still records it, where the store can be written.
        undo_into.record_undo_point(&UndoPoint {
            made_at_ms: now_ms,
            profile: profile.to_owned(),
            action: UndoAction::Restore,
            snapshots: undo.iter().map(|s| s.id).collect(),
            restored: same_store.then_some(plan.snapshot.id),
            restored_content: Some(plan.snapshot.content_hash),
        })?;
    }
    // Zen's file first, then Firefox's and the pref that makes the next
    // start restore them: each durable before the next is written.
    if let (Some(zen), Some(zen_packed)) = (&plan.zen, &zen_packed) {
        write_atomic(&zen.write, |w| w.write_all(zen_packed))?;
    }
    let prefs_backup = install(undo_into, dir, &packed, &undo, now_ms)?;
    Ok(RestoreReport { undo, prefs_backup })
}

/// Create a new profile folder (and its parents), readable only by the user
/// as Firefox creates them, durably.
fn create_private_dir(dir: &Path) -> Result<(), PathError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).with_path(dir)?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::fs_util::sync_dir(parent)?;
    }
    Ok(())
}

/// Steps 4 to 6 of the recipe, shared by `restore` and `tidy`: set aside the
/// session files Firefox could fall back to (only those the `undo` snapshots
/// hold), write `packed` (mozlz4) as `sessionstore.jsonlz4`, keep `prefs.js`
/// in the store and set the one-shot resume pref in it. The caller holds the
/// profile lock and took `undo` first. Returns where the old `prefs.js` was
/// kept, if there was one.
pub fn install(
    store: &Store,
    dir: &Path,
    packed: &[u8],
    undo: &[SnapshotInfo],
    now_ms: u64,
) -> Result<Option<PathBuf>, PathError> {
    for name in SET_ASIDE {
        if undo.iter().any(|s| s.file_name == name) {
            let path = dir.join(name);
            match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(PathError { path, source: e })
                }
                _ => {}
            }
        }
    }
    if let Some(backups) = dir.join(SET_ASIDE[0]).parent() {
        if backups.is_dir() {
            crate::fs_util::sync_dir(backups)?;
        }
    }
    write_atomic(&dir.join("sessionstore.jsonlz4"), |w| w.write_all(packed))?;

    let prefs = dir.join("prefs.js");
    let old_prefs = match fs::read_to_string(&prefs) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(PathError {
                path: prefs,
                source: e,
            })
        }
    };
    let prefs_backup = match &old_prefs {
        Some(text) => {
            let keep = store
                .dir()
                .join("restores")
                .join(format!("{now_ms}-prefs.js"));
            let restores = keep.parent().unwrap_or(store.dir());
            if !restores.is_dir() {
                fs::create_dir_all(restores).with_path(restores)?;
                crate::fs_util::sync_dir(store.dir())?;
            }
            write_atomic(&keep, |w| w.write_all(text.as_bytes()))?;
            Some(keep)
        }
        None => None,
    };
    let new_prefs = with_resume_once(old_prefs.as_deref().unwrap_or(""));
    write_atomic(&prefs, |w| w.write_all(new_prefs.as_bytes()))?;
    Ok(prefs_backup)
}

/// `prefs.js` text with the one-shot restore pref set and the pref that would
/// cancel it removed; every other line is kept as it is.
pub fn with_resume_once(prefs: &str) -> String {
    let mut out: String = prefs
        .lines()
        .filter(|l| {
            !(l.contains(&format!("\"{RESUME_ONCE_PREF}\""))
                || l.contains(&format!("\"{OS_RESTART_PREF}\"")))
        })
        .flat_map(|l| [l, "\n"])
        .collect();
    out.push_str(&format!("user_pref(\"{RESUME_ONCE_PREF}\", true);\n"));
    out
}

/// Firefox's profile lock, held for the whole restore (`profile::take_profile_lock`).
fn hold_profile_lock(dir: &Path) -> Result<File, RestoreError> {
    crate::profile::take_profile_lock(dir)?.ok_or_else(|| RestoreError::FirefoxRunning {
        profile: dir.to_path_buf(),
        pid: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefs_get_the_one_shot_pref_and_lose_the_canceller() {
        let before = "// Mozilla User Preferences\n\
                      user_pref(\"browser.startup.page\", 1);\n\
                      user_pref(\"browser.sessionstore.resuming_after_os_restart\", true);\n\
                      user_pref(\"browser.sessionstore.resume_session_once\", false);\n";
        let after = with_resume_once(before);
        assert_eq!(
            after,
            "// Mozilla User Preferences\n\
             user_pref(\"browser.startup.page\", 1);\n\
             user_pref(\"browser.sessionstore.resume_session_once\", true);\n"
        );
        assert_eq!(
            with_resume_once(""),
            "user_pref(\"browser.sessionstore.resume_session_once\", true);\n"
        );
    }
}
