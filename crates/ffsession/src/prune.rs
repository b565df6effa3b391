//! Applying the retention policy to a store: the plan for its snapshots
//! ([`crate::retention::plan`], with its two protections), then the removal of
//! the snapshots the plan drops and of the stored data no snapshot uses any
//! more. `ffsession prune`, `backup --prune` and `watch` all go through here.
//!
//! Zen's files take no part in the rules: each is kept as the Zen file of a
//! kept Firefox session's moment, or by a protection of its own (`zen.rs`).

mod zen;

use jiff::tz::TimeZone;

use std::collections::HashSet;

use crate::retention::{self, Candidate, PrunePlan, Reason, RetentionPolicy};
use crate::store::{GcReport, SnapshotId, SnapshotInfo, Store, StoreError, UndoPoint};

/// What retention needs to know of each snapshot; `archive` lists the
/// snapshots that hold tabs `tidy` archived (always kept). One group: see
/// [`group_by_origin`] for a remote's copy.
pub fn candidates(snapshots: &[SnapshotInfo], archive: &[SnapshotId]) -> Vec<Candidate> {
    snapshots
        .iter()
        .map(|s| Candidate {
            id: s.id.0,
            taken_at_ms: i64::try_from(s.taken_at_ms).unwrap_or(i64::MAX),
            session_ms: i64::try_from(s.session_time_ms()).unwrap_or(i64::MAX),
            role: s.kind.rank(),
            verified: s.is_ok(),
            damaged: false,
            tabs: s.counts.map_or(0, |c| c.tabs),
            holds_archive: archive.contains(&s.id),
            undo_until_ms: None,
            group: 0,
        })
        .collect()
}

/// Put each candidate in the group of the machine and profile its snapshot
/// came from, where the store knows it (a remote's local copy records each
/// snapshot's origin, [`Store::origins`]); retention then applies to each
/// machine's sessions on its own, as on that machine. A machine is its
/// identity, never its label: two machines of one host name keep their
/// newest each (snapshots copied before identities go by their label).
/// Snapshots of no known origin (a local store's) stay together.
pub fn group_by_origin(
    candidates: &mut [Candidate],
    snapshots: &[SnapshotInfo],
    origins: &std::collections::BTreeMap<SnapshotId, crate::store::Origin>,
) {
    let mut groups: Vec<(Option<crate::machine::MachineKey>, &str)> = Vec::new();
    for (c, s) in candidates.iter_mut().zip(snapshots) {
        let key = match origins.get(&s.id) {
            Some(o) => (Some(o.machine_key()), s.profile.as_str()),
            None => (None, ""),
        };
        let i = groups.iter().position(|g| *g == key).unwrap_or_else(|| {
            groups.push(key);
            groups.len() - 1
        });
        c.group = u32::try_from(i).unwrap_or(u32::MAX);
    }
}

/// Mark the candidates that belong to an undo point still inside its
/// promised time at `now_ms` ([`UndoPoint::kept_until_ms`]). In a remote's
/// copy (`origins` known), each machine's undo points count among its own
/// only: another machine's newer undo point (of a profile of the same
/// name) never shortens this machine's promise.
pub fn mark_undo_points(
    candidates: &mut [Candidate],
    points: &[UndoPoint],
    origins: &std::collections::BTreeMap<SnapshotId, crate::store::Origin>,
    now_ms: u64,
) {
    let machine_of = |p: &UndoPoint| {
        p.snapshots
            .iter()
            .chain(p.restored.iter())
            .find_map(|id| origins.get(id))
            .map(crate::store::Origin::machine_key)
    };
    for p in points {
        let mine = machine_of(p);
        let same: Vec<UndoPoint> = points
            .iter()
            .filter(|q| machine_of(q) == mine)
            .cloned()
            .collect();
        let until = match p.kept_until_ms(&same) {
            None => i64::MAX,
            Some(t) if t > now_ms => i64::try_from(t).unwrap_or(i64::MAX),
            Some(_) => continue,
        };
        // What a restore put in place is kept with the snapshots it
        // replaced: until Firefox writes a newer session, it is the latest.
        let kept =
            |id: i64| p.snapshots.contains(&SnapshotId(id)) || p.restored == Some(SnapshotId(id));
        for c in candidates.iter_mut().filter(|c| kept(c.id)) {
            c.undo_until_ms = Some(c.undo_until_ms.map_or(until, |u| u.max(until)));
        }
    }
}

/// The store's snapshots (newest first) and what `policy` does with each,
/// periods counted in `tz`, undo points kept as promised at `now_ms`.
/// Changes nothing but the damage marks.
///
/// The snapshots a protection keeps (the newest good session, the last good
/// one before a damaged or shrunken one) are read back now
/// ([`Store::verify_snapshot`]), not trusted from backup time: one that does
/// not read back whole is marked damaged (kept, since a later backup of the
/// same content may heal it) and the plan is made again, so the protection
/// moves to the newest one that does. Snapshots already marked damaged start
/// so. [`PrunePlan::found_damaged`] says what was found.
pub fn plan_store(
    store: &Store,
    policy: &RetentionPolicy,
    tz: &TimeZone,
    now_ms: u64,
) -> Result<(Vec<SnapshotInfo>, PrunePlan), StoreError> {
    let snapshots = store.snapshots()?;
    let archive = store.archive_snapshots()?;
    let marks = store.damage_marks()?;
    let mut candidates = candidates(&snapshots, &archive);
    let origins = store.origins()?;
    group_by_origin(&mut candidates, &snapshots, &origins);
    mark_undo_points(&mut candidates, &store.undo_points()?, &origins, now_ms);
    for c in &mut candidates {
        c.damaged = marks.contains_key(&SnapshotId(c.id));
    }
    let mut found = Vec::new();
    let mut checked = HashSet::new();
    let is_zen: HashSet<i64> = snapshots
        .iter()
        .filter(|s| s.kind.is_zen())
        .map(|s| s.id.0)
        .collect();
    loop {
        // The rules and protections over Firefox's sessions; Zen's files
        // follow the sessions they go with.
        let firefox: Vec<Candidate> = candidates
            .iter()
            .filter(|c| !is_zen.contains(&c.id))
            .copied()
            .collect();
        let mut plan = retention::plan(policy, &firefox, tz);
        zen::decide(&mut plan, &snapshots, &candidates);
        let unchecked: Vec<i64> = plan
            .decisions
            .iter()
            .filter(|d| {
                d.reasons
                    .iter()
                    .any(|r| matches!(r, Reason::NewestVerified | Reason::LastGoodBefore { .. }))
            })
            .map(|d| d.id)
            .filter(|id| checked.insert(*id))
            .collect();
        if unchecked.is_empty() {
            for (id, what) in marks {
                if !found.iter().any(|(f, _)| *f == id.0) {
                    found.push((id.0, what));
                }
            }
            found.sort();
            plan.found_damaged = found;
            return Ok((snapshots, plan));
        }
        for id in unchecked {
            if let Some(damage) = store.verify_snapshot(SnapshotId(id))? {
                if let Some(c) = candidates.iter_mut().find(|c| c.id == id) {
                    c.damaged = true;
                }
                found.push((id, damage.what));
            }
        }
    }
}

/// What carrying out a plan did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct PruneOutcome {
    /// Snapshots removed from the catalog.
    pub removed: u64,
    /// What garbage collection then removed (nothing is collected when no
    /// snapshot was removed).
    pub gc: GcReport,
}

/// Remove the snapshots `plan` drops, then (if any) the stored data no
/// remaining snapshot uses.
pub fn carry_out(store: &mut Store, plan: &PrunePlan) -> Result<PruneOutcome, StoreError> {
    let mut removed = 0;
    for id in plan.removed().collect::<Vec<_>>() {
        store.remove_snapshot(SnapshotId(id))?;
        removed += 1;
    }
    let gc = if removed > 0 {
        store.collect_garbage()?
    } else {
        GcReport::default()
    };
    Ok(PruneOutcome { removed, gc })
}

/// [`plan_store`] then [`carry_out`].
pub fn apply(
    store: &mut Store,
    policy: &RetentionPolicy,
    tz: &TimeZone,
    now_ms: u64,
) -> Result<PruneOutcome, StoreError> {
    let (_, plan) = plan_store(store, policy, tz, now_ms)?;
    carry_out(store, &plan)
}
