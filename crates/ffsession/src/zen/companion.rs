//! Which of Zen's snapshots belongs with a Firefox session: the one moment a
//! restore puts back, and that retention keeps together.
//!
//! Zen writes its sessions file at every Firefox session save, from the
//! state Firefox has just collected: Firefox stamps `session.lastUpdate`,
//! then Zen stamps `lastCollected` a few milliseconds later, then both files
//! are written. So the Zen file of a session's moment is the newest one
//! collected no later than [`SAME_SAVE_MS`] after the session's own time. A
//! later one belongs to a later save (Firefox saves at most every 15 s); an
//! earlier one is the last Zen state before the session, the nearest there
//! is when the store has no Zen file of that very save.
//!
//! Only a Zen file Zen would use counts: one that verified, with at least
//! one space (Zen reads a file without spaces as damaged and falls back to
//! its copies in `zen-sessions-backup/`). Among equal times, the file Zen
//! reads first (`zen-sessions.jsonlz4`, then its backup, its clean copy, its
//! dated copies), then the later backup. A session from the same profile
//! only (a remote's local copy holds several machines' snapshots), except a
//! file restored from elsewhere (profile `imported`), which takes Zen's
//! files of the store it is restored from.

use crate::store::SnapshotInfo;

/// How much later than a Firefox session's `lastUpdate` Zen's file of the
/// same save may be collected: Zen collects right after Firefox (a few ms),
/// Firefox saves at most every 15 s.
pub const SAME_SAVE_MS: u64 = 5_000;

/// The profile name of a session file restored from elsewhere
/// ([`crate::restore::import`]).
pub const IMPORTED: &str = "imported";

/// Zen's snapshots among `snapshots` that may go with a Firefox session of
/// `profile` whose own time is `session_ms`, the best first: the newest
/// collected by `session_ms + SAME_SAVE_MS` (see the module documentation).
/// The first that reads back whole is the one to restore.
pub fn candidates<'s>(
    session_ms: u64,
    profile: &str,
    snapshots: &'s [SnapshotInfo],
) -> Vec<&'s SnapshotInfo> {
    let limit = session_ms.saturating_add(SAME_SAVE_MS);
    let mut found: Vec<&SnapshotInfo> = snapshots
        .iter()
        .filter(|z| z.kind.is_zen() && z.is_ok())
        .filter(|z| z.counts.is_some_and(|c| c.windows > 0))
        .filter(|z| z.last_update_ms.is_some_and(|t| t <= limit))
        .filter(|z| profile == IMPORTED || z.profile == profile)
        .collect();
    found.sort_by(|a, b| {
        b.last_update_ms
            .cmp(&a.last_update_ms)
            .then_with(|| a.kind.rank().cmp(&b.kind.rank()))
            .then_with(|| b.taken_at_ms.cmp(&a.taken_at_ms))
            .then_with(|| b.id.cmp(&a.id))
    });
    found
}

/// [`candidates`] for the Firefox session snapshot `session`.
pub fn candidates_for<'s>(
    session: &SnapshotInfo,
    snapshots: &'s [SnapshotInfo],
) -> Vec<&'s SnapshotInfo> {
    candidates(session.session_time_ms(), &session.profile, snapshots)
}
