//! What a prune keeps of Zen's files: the Zen file of each kept Firefox
//! session's moment (the one a restore of it writes,
//! [`crate::zen::companion`]), the newest that verified, and what the
//! protections keep of any snapshot (undo points, archived tabs, damage
//! found). Retention's rules never count them: a Zen file is not a session,
//! and a period's newest "session" must stay Firefox's.

use std::collections::HashMap;

use crate::retention::{Candidate, Decision, PrunePlan, Reason};
use crate::store::SnapshotInfo;
use crate::zen::companion;

/// Add a decision for each of Zen's snapshots to `plan` (made over the
/// Firefox sessions alone), then order all decisions newest session first.
/// `candidates` holds every snapshot's protections.
pub(super) fn decide(plan: &mut PrunePlan, snapshots: &[SnapshotInfo], candidates: &[Candidate]) {
    let by_id: HashMap<i64, &Candidate> = candidates.iter().map(|c| (c.id, c)).collect();
    let damaged = |id: i64| by_id.get(&id).is_some_and(|c| c.damaged);
    let mut reasons: HashMap<i64, Vec<Reason>> = snapshots
        .iter()
        .filter(|s| s.kind.is_zen())
        .map(|s| (s.id.0, Vec::new()))
        .collect();
    if reasons.is_empty() {
        return;
    }
    let info: HashMap<i64, &SnapshotInfo> = snapshots.iter().map(|s| (s.id.0, s)).collect();
    // The Zen file of each kept session: the first that has not been found
    // damaged, and any found damaged before it (as a restore passes them).
    for d in plan.decisions.iter().filter(|d| d.keep) {
        let Some(session) = info.get(&d.id) else {
            continue;
        };
        for z in companion::candidates_for(session, snapshots) {
            if let Some(r) = reasons.get_mut(&z.id.0) {
                r.push(Reason::ZenCompanion { session: d.id });
            }
            if !damaged(z.id.0) {
                break;
            }
        }
    }
    let newest = snapshots
        .iter()
        .filter(|s| s.kind.is_zen() && s.is_ok() && !damaged(s.id.0))
        .max_by_key(|s| (s.session_time_ms(), std::cmp::Reverse(s.kind.rank()), s.id));
    if let Some(r) = newest.and_then(|s| reasons.get_mut(&s.id.0)) {
        r.push(Reason::NewestVerified);
    }
    for (id, r) in &mut reasons {
        let Some(c) = by_id.get(id) else { continue };
        if c.holds_archive {
            r.push(Reason::HoldsArchivedTabs);
        }
        if let Some(until) = c.undo_until_ms {
            r.push(Reason::UndoPoint {
                until_ms: (until != i64::MAX).then_some(until),
            });
        }
        if c.damaged {
            r.push(Reason::FoundDamaged);
        }
    }
    plan.decisions
        .extend(reasons.into_iter().map(|(id, reasons)| Decision {
            id,
            keep: !reasons.is_empty(),
            reasons,
        }));
    // Newest session first, as retention orders them: by the session's own
    // time, then the file's role, then the later backup, then the id.
    plan.decisions.sort_by_key(|d| {
        let c = by_id.get(&d.id);
        (
            std::cmp::Reverse(c.map_or(0, |c| c.session_ms)),
            c.map_or(u8::MAX, |c| c.role),
            std::cmp::Reverse(c.map_or(0, |c| c.taken_at_ms)),
            std::cmp::Reverse(d.id),
        )
    });
}
