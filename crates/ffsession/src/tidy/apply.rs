//! Carrying out a tidy plan on a profile, by the restore recipe.

use std::path::{Path, PathBuf};

use super::{render_json, Editable, TidyError, TidyPlan};
use crate::backup::backup_profile;
use crate::error::Error;
use crate::profile::{lock_state, take_profile_lock, LockState};
use crate::sources::{self, NewestSession, SourceFile};
use crate::store::{ArchivedTab, Digest, SnapshotId, Store, UndoAction, UndoPoint};
use crate::{Session, SessionData};

/// The profile's current session: its newest readable session file (by the
/// session's own `lastUpdate`, as [`sources::newest`] picks it, but reading
/// only the timestamps of each file, and nothing of a lone file: the caller
/// reads the chosen one whole),
/// unless a newer file is damaged (tidying the older one would lose tabs; the
/// damaged one wants `rescue`). A profile with no session file is
/// [`Error::NoSessionFile`].
pub fn load_current(profile_dir: &Path) -> Result<NewestSession, TidyError> {
    // Zen's own files hold no Firefox session (and are no newer, damaged
    // current session).
    let files: Vec<SourceFile> = sources::list(profile_dir)?
        .into_iter()
        .filter(|f| !f.kind.is_zen())
        .collect();
    let candidates = files.len();
    let mut best: Option<(u64, SessionData, SourceFile)> = None;
    let mut skipped = Vec::new();
    for file in files {
        // With one file there is nothing to rank: the caller's full read
        // checks it.
        let read = SessionData::read(&file.path).and_then(|d| {
            let stamp = match candidates {
                1 => None,
                _ => d.parse_meta()?.timestamps.last_update,
            };
            Ok((d, stamp))
        });
        match read {
            Ok((data, stamp)) => {
                let stamp = stamp.unwrap_or(0);
                if best.as_ref().is_none_or(|(b, _, _)| stamp > *b) {
                    best = Some((stamp, data, file));
                }
            }
            Err(e) => skipped.push((file.path, sources::short_reason(&e), file.modified)),
        }
    }
    let Some((_, data, source)) = best else {
        return match skipped.into_iter().next() {
            Some((path, reason, _)) => Err(TidyError::DamagedCurrent { path, reason }),
            None => Err(Error::NoSessionFile {
                profile: profile_dir.to_path_buf(),
                skipped: Vec::new(),
            }
            .into()),
        };
    };
    for (path, reason, modified) in &skipped {
        if let (Some(m), Some(c)) = (modified, source.modified) {
            if m > &c {
                return Err(TidyError::DamagedCurrent {
                    path: path.clone(),
                    reason: reason.clone(),
                });
            }
        }
    }
    Ok(NewestSession {
        data,
        source,
        candidates,
        skipped: skipped.into_iter().map(|(p, r, _)| (p, r)).collect(),
    })
}

/// What a tidy did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TidyReport {
    /// The snapshot of the session as it was: `ffsession restore` it to undo.
    pub undo: SnapshotId,
    /// The file written.
    pub written: PathBuf,
    /// Tabs recorded as archived in the catalog.
    pub archived: usize,
    /// Where the old `prefs.js` was kept, if there was one.
    pub prefs_backup: Option<PathBuf>,
}

/// Apply `plan` (made from `session`, read from `source_name` of the profile
/// in `profile_dir`) at `now_ms`: see the [module documentation](super).
pub fn apply(
    plan: &TidyPlan,
    session: &Editable<'_>,
    original_json: &[u8],
    store: &mut Store,
    profile: &str,
    profile_dir: &Path,
    now_ms: u64,
) -> Result<TidyReport, TidyError> {
    let running = |pid| TidyError::FirefoxRunning {
        profile: profile_dir.to_path_buf(),
        pid,
    };
    if let LockState::Running { pid } = lock_state(profile_dir) {
        return Err(running(pid));
    }
    let _lock = take_profile_lock(profile_dir)?.ok_or_else(|| running(None))?;

    // The tidied session must read back as the plan says before anything changes.
    let json = render_json(session, plan, Some(now_ms));
    let not = |reason: String| TidyError::NotEditable {
        path: plan.source.clone(),
        reason,
    };
    let tabs_written = Session::from_json(&json)
        .map_err(|e| not(format!("the tidied session does not read back: {e}")))?
        .summary()
        .tabs;
    if tabs_written != plan.tabs_after {
        return Err(not(format!(
            "the tidied session has {tabs_written} tabs, the plan says {}",
            plan.tabs_after
        )));
    }
    let packed = crate::format::compress(&json).map_err(|e| not(e.to_string()))?;

    // The undo point: every session file of the profile, durably in the store.
    let undo = backup_profile(store, profile, profile_dir, now_ms)?.snapshots;
    let source_name = plan
        .source
        .strip_prefix(profile_dir)
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default();
    let digest = Digest::of(original_json);
    let undo_id = undo
        .iter()
        .find(|s| s.file_name == source_name && s.is_ok() && s.content_hash == digest)
        .map(|s| s.id)
        .ok_or_else(|| TidyError::Changed {
            path: plan.source.clone(),
        })?;

    let archived: Vec<ArchivedTab> = plan
        .closed
        .iter()
        .map(|c| ArchivedTab {
            url: c.url.clone(),
            title: c.title.clone(),
            archived_at_ms: now_ms,
            snapshot: undo_id,
            reason: c.reason.name().to_owned(),
            window: c.window as u64,
            last_accessed: c.last_accessed,
            position: Some(c.position as u64),
        })
        .collect();
    store.record_undo_point(&UndoPoint {
        made_at_ms: now_ms,
        profile: profile.to_owned(),
        action: UndoAction::Tidy,
        snapshots: undo.iter().map(|s| s.id).collect(),
        restored: None,
        restored_content: None,
    })?;
    store.record_archived(&archived)?;

    let written = profile_dir.join("sessionstore.jsonlz4");
    let prefs_backup = crate::restore::install(store, profile_dir, &packed, &undo, now_ms)?;
    Ok(TidyReport {
        undo: undo_id,
        written,
        archived: archived.len(),
        prefs_backup,
    })
}
