//! Zen's part of a restore: the Zen sessions file of the restored session's
//! moment, written as the profile's `zen-sessions.jsonlz4` with it.
//!
//! With window sync on (Zen's default), Zen puts the tabs of its own file
//! into every window in place of those Firefox restores, and takes its
//! spaces from it: Firefox's session restored alone shows the tabs and
//! spaces of whatever Zen file the profile has. So a restore writes both,
//! the Zen file chosen by [`super::companion`], each through
//! `write_atomic`.
//!
//! Zen's copies in `zen-sessions-backup/` are left as they are (they are in
//! the undo snapshot with every other file): Zen reads them only when its
//! main file is missing (`recovery.baklz4`) or has no spaces (`clean.jsonlz4`,
//! then the newest dated copy), and the file written always has spaces. Zen
//! copies its main file over `clean.jsonlz4` when it next saves.

use std::path::{Path, PathBuf};

use super::companion;
use crate::store::{SnapshotInfo, Store, StoreError};

/// A Zen file found more than this before the session it goes with is
/// worth a warning: Zen will show its tabs as of then.
const STALE_MS: u64 = 60_000;

/// Zen's part of a restore.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ZenRestore {
    /// The snapshot of Zen's file written with the session.
    pub snapshot: SnapshotInfo,
    /// Where: the profile's `zen-sessions.jsonlz4`.
    pub write: PathBuf,
}

/// The Zen file to restore with `session` into `profile_dir`, if the store
/// has one (the first of [`companion::candidates_for`] that reads back
/// whole), and what the user should know: a Zen profile restored without
/// one, a Zen file much older than the session, a damaged one passed over,
/// a startup setting that makes Zen restore only pinned tabs.
pub fn plan(
    store: &Store,
    session: &SnapshotInfo,
    profile_dir: &Path,
) -> Result<(Option<ZenRestore>, Vec<String>), StoreError> {
    let snapshots = store.snapshots()?;
    let mut warnings = Vec::new();
    let mut chosen = None;
    for z in companion::candidates_for(session, &snapshots) {
        match store.verify_snapshot(z.id)? {
            None => {
                chosen = Some(z.clone());
                break;
            }
            Some(damage) => warnings.push(format!(
                "Zen's file of snapshot {} ({}) does not read back whole ({}); passed over",
                z.id, z.file_name, damage.what
            )),
        }
    }
    let zen_profile = profile_dir.join("zen-sessions.jsonlz4").exists()
        || profile_dir.join("zen-sessions-backup").is_dir();
    match &chosen {
        Some(z) => {
            let gap = session
                .session_time_ms()
                .saturating_sub(z.session_time_ms());
            if gap > STALE_MS {
                warnings.push(format!(
                    "Zen's file nearest this session (snapshot {}) was collected {} min before it: Zen shows its spaces and tabs as of then",
                    z.id,
                    gap / 60_000
                ));
            }
        }
        None if zen_profile => warnings.push(
            "the store has no Zen sessions file of this session's moment or before it: \
             Zen keeps its current zen-sessions.jsonlz4, and shows its spaces and tabs \
             rather than this session's"
                .to_owned(),
        ),
        None => {}
    }
    if chosen.is_some() || zen_profile {
        if let Some(page) = startup_page(profile_dir) {
            if page != 3 {
                warnings.push(format!(
                    "prefs.js sets browser.startup.page to {page}: Zen then restores only pinned tabs; \
                     set \"Open previous windows and tabs\" (3) in Zen's settings first"
                ));
            }
        }
    }
    let restore = chosen.map(|snapshot| ZenRestore {
        snapshot,
        write: profile_dir.join("zen-sessions.jsonlz4"),
    });
    Ok((restore, warnings))
}

/// `browser.startup.page` as the profile's `prefs.js` sets it, if it does.
/// (Zen's default is 3, "open previous windows and tabs".)
fn startup_page(profile_dir: &Path) -> Option<i64> {
    let prefs = std::fs::read_to_string(profile_dir.join("prefs.js")).ok()?;
    prefs.lines().rev().find_map(|line| {
        let rest = line
            .trim()
            .strip_prefix("user_pref(\"browser.startup.page\",")?;
        rest.trim().strip_suffix(");")?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_startup_page_is_read_from_prefs_js() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(startup_page(dir.path()), None);
        std::fs::write(
            dir.path().join("prefs.js"),
            "user_pref(\"browser.startup.homepage\", \"x\");\n\
             user_pref(\"browser.startup.page\", 1);\n",
        )
        .unwrap();
        assert_eq!(startup_page(dir.path()), Some(1));
    }
}
