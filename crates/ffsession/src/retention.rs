//! Retention: which snapshots a prune keeps, which it removes, and why.
//!
//! This module owns the policy, not the store: it takes a list of snapshots
//! (id, time, verified or not, tab count) and returns a plan, one decision per
//! snapshot with its reasons, before anything touches disk. The rules follow
//! restic's `forget`, over the sessions' own time: `keep_last` keeps the N
//! newest sessions; `keep_hourly` (daily, weekly, monthly, yearly) keeps the
//! newest session of each of the N newest hours (days, ISO weeks, months,
//! years) that have sessions, in the time zone given. A session's time is
//! Firefox's own clock (`session.lastUpdate`, [`Candidate::session_ms`]),
//! never the time of the backup nor the snapshot id: an `upgrade.jsonlz4-*`
//! copy backed up today holds a session weeks old, and counts in the day of
//! that session. Equal times go to the file Firefox tries first, then to the
//! later backup. Two protections override every policy:
//!
//! - the newest session that verified ok is always kept;
//! - the last good session before a corrupt one, or before one that lost more
//!   than half of its tabs ([`is_shrunken`]), is always kept: it is what a user
//!   wants back after a crash or an overwritten session.
//!
//! A "good" session is one that verified when it was taken
//! and was not found damaged since ([`Candidate::damaged`]): the caller
//! ([`crate::prune`]) reads the protected snapshots back before it removes
//! anything, and plans again when one does not read back whole.
//!
//! A snapshot that holds tabs `tidy` archived is kept too, and so is one
//! found damaged (a later backup of the same content may heal it).

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde::Serialize;

/// How many snapshots to keep, per rule. 0 disables a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionPolicy {
    /// Keep the N newest sessions (by their own time).
    pub keep_last: u32,
    /// Keep the newest session of each of the N newest hours with sessions.
    pub keep_hourly: u32,
    /// Keep the newest session of each of the N newest days with sessions.
    pub keep_daily: u32,
    /// Keep the newest session of each of the N newest ISO weeks with sessions.
    pub keep_weekly: u32,
    /// Keep the newest session of each of the N newest months with sessions.
    pub keep_monthly: u32,
    /// Keep the newest session of each of the N newest years with sessions.
    pub keep_yearly: u32,
}

impl RetentionPolicy {
    /// The defaults: a day of hourly snapshots, then a week of daily ones, a
    /// month of weekly ones, a year of monthly ones, and a few yearly ones.
    pub const DEFAULT: RetentionPolicy = RetentionPolicy {
        keep_last: 10,
        keep_hourly: 24,
        keep_daily: 7,
        keep_weekly: 4,
        keep_monthly: 12,
        keep_yearly: 3,
    };
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        RetentionPolicy::DEFAULT
    }
}

/// What retention needs to know about a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Snapshot id.
    pub id: i64,
    /// When the snapshot was taken, ms since the epoch: the tie-break
    /// between equal sessions of one role.
    pub taken_at_ms: i64,
    /// The session's own time (`session.lastUpdate`, else the file's
    /// modification time), ms since the epoch: the order of every rule.
    pub session_ms: i64,
    /// The file's role, in the order Firefox tries the files (0 for
    /// `sessionstore.jsonlz4`): the tie-break between equal session times.
    pub role: u8,
    /// The snapshot decompressed and parsed as a session.
    pub verified: bool,
    /// It was found not to read back whole (a damaged or missing chunk):
    /// never protected as good, always kept.
    pub damaged: bool,
    /// Open tabs in the session (0 when not verified).
    pub tabs: u64,
    /// It holds tabs `tidy` archived (always kept).
    pub holds_archive: bool,
    /// It belongs to an undo point still inside its promised time: kept
    /// until then (ms since the epoch; `i64::MAX` while it is the newest
    /// undo point of its profile). See [`crate::store::UndoPoint`].
    pub undo_until_ms: Option<i64>,
    /// Whose session it is: the machine and profile it was taken from
    /// (snapshots of one remote, copied from several machines). Every rule
    /// and protection applies to each group on its own, as a store of its
    /// own would; a local store is one group.
    pub group: u32,
}

/// Why a snapshot is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Reason {
    /// One of the `keep_last` newest sessions.
    Last,
    /// Newest session of its hour.
    Hourly,
    /// Newest of its day.
    Daily,
    /// Newest of its ISO week.
    Weekly,
    /// Newest of its month.
    Monthly,
    /// Newest of its year.
    Yearly,
    /// The newest session that verified ok and reads back whole.
    NewestVerified,
    /// Found damaged: kept, since a later backup of the same content heals it.
    FoundDamaged,
    /// It holds tabs `tidy` closed (the undo point of a tidy).
    HoldsArchivedTabs,
    /// Part of an undo point (a restore's or a tidy's), kept for its
    /// promised time.
    UndoPoint {
        /// Kept until then (ms since the epoch); `None` while it is the
        /// newest undo point of its profile.
        until_ms: Option<i64>,
    },
    /// The last good snapshot before a damaged one.
    LastGoodBefore {
        /// The corrupt or shrunken snapshot that followed it.
        damaged: i64,
    },
    /// Zen's sessions file of the moment of a kept Firefox session: a
    /// restore of that session writes it too ([`crate::zen::companion`]).
    ZenCompanion {
        /// The Firefox session it goes with.
        session: i64,
    },
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Last => f.write_str("last"),
            Reason::Hourly => f.write_str("hourly"),
            Reason::Daily => f.write_str("daily"),
            Reason::Weekly => f.write_str("weekly"),
            Reason::Monthly => f.write_str("monthly"),
            Reason::Yearly => f.write_str("yearly"),
            Reason::NewestVerified => f.write_str("newest verified"),
            Reason::FoundDamaged => f.write_str("found damaged, may heal"),
            Reason::HoldsArchivedTabs => f.write_str("holds archived tabs"),
            Reason::UndoPoint { until_ms: None } => f.write_str("undo point, the newest"),
            Reason::UndoPoint { until_ms: Some(ms) } => {
                let day = Timestamp::from_millisecond(*ms)
                    .map(|t| t.strftime("%Y-%m-%d").to_string())
                    .unwrap_or_else(|_| ms.to_string());
                write!(f, "undo point, until {day}")
            }
            Reason::LastGoodBefore { damaged } => write!(f, "last good before damaged #{damaged}"),
            Reason::ZenCompanion { session } => write!(f, "Zen's file of #{session}"),
        }
    }
}

/// The decision for one snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Snapshot id.
    pub id: i64,
    /// Kept (true) or removed.
    pub keep: bool,
    /// Why it is kept; empty when removed.
    pub reasons: Vec<Reason>,
}

/// A prune plan: one decision per snapshot, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrunePlan {
    /// The decisions.
    pub decisions: Vec<Decision>,
    /// Snapshots a protection would have kept that were found not to read
    /// back whole when the plan was made (id, what is wrong): kept, and the
    /// protection moved on (filled in by [`crate::prune::plan_store`]).
    pub found_damaged: Vec<(i64, String)>,
}

impl PrunePlan {
    /// Ids of the snapshots to remove.
    pub fn removed(&self) -> impl Iterator<Item = i64> + '_ {
        self.decisions.iter().filter(|d| !d.keep).map(|d| d.id)
    }
}

/// True if a session with `tabs` lost more than half of the `previous` tabs.
pub fn is_shrunken(previous: u64, tabs: u64) -> bool {
    tabs.saturating_mul(2) < previous
}

/// Newest session first: by the session's own time, then by the file's role
/// (the file Firefox tries first is the newer), then by the later backup,
/// then by id.
fn newest_session_first(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.session_ms
        .cmp(&a.session_ms)
        .then(a.role.cmp(&b.role))
        .then(b.taken_at_ms.cmp(&a.taken_at_ms))
        .then(b.id.cmp(&a.id))
}

/// The calendar buckets of a snapshot for the periodic rules.
fn buckets(ms: i64, tz: &TimeZone) -> [(i64, i64, i64); 5] {
    let zoned = Timestamp::from_millisecond(ms)
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .to_zoned(tz.clone());
    let date: Date = zoned.date();
    let year = i64::from(date.year());
    let week = date.iso_week_date();
    [
        (year, i64::from(date.day_of_year()), i64::from(zoned.hour())),
        (year, i64::from(date.day_of_year()), 0),
        (i64::from(week.year()), i64::from(week.week()), 0),
        (year, i64::from(date.month()), 0),
        (year, 0, 0),
    ]
}

/// Decide, for every candidate, whether `policy` keeps it and why: for each
/// group ([`Candidate::group`]: a machine and profile) on its own, as if it
/// were the only one; decisions newest session first.
pub fn plan(policy: &RetentionPolicy, candidates: &[Candidate], tz: &TimeZone) -> PrunePlan {
    let mut groups: Vec<u32> = candidates.iter().map(|c| c.group).collect();
    groups.sort_unstable();
    groups.dedup();
    if groups.len() <= 1 {
        return plan_group(policy, candidates, tz);
    }
    let mut decisions = Vec::with_capacity(candidates.len());
    for g in groups {
        let of_group: Vec<Candidate> = candidates
            .iter()
            .filter(|c| c.group == g)
            .copied()
            .collect();
        decisions.extend(plan_group(policy, &of_group, tz).decisions);
    }
    let by_id: std::collections::HashMap<i64, &Candidate> =
        candidates.iter().map(|c| (c.id, c)).collect();
    decisions.sort_by(|a, b| newest_session_first(by_id[&a.id], by_id[&b.id]));
    PrunePlan {
        decisions,
        found_damaged: Vec::new(),
    }
}

/// [`plan`] for the candidates of one group.
fn plan_group(policy: &RetentionPolicy, candidates: &[Candidate], tz: &TimeZone) -> PrunePlan {
    // Every rule and protection follows the sessions' own clock, newest
    // first: a period keeps the newest session it saw, never an older copy
    // (an upgrade copy) backed up last.
    let mut order: Vec<&Candidate> = candidates.iter().collect();
    order.sort_by(|a, b| newest_session_first(a, b));
    let mut decisions: Vec<Decision> = order
        .iter()
        .map(|c| Decision {
            id: c.id,
            keep: false,
            reasons: Vec::new(),
        })
        .collect();

    let periodic = [
        (policy.keep_hourly, Reason::Hourly),
        (policy.keep_daily, Reason::Daily),
        (policy.keep_weekly, Reason::Weekly),
        (policy.keep_monthly, Reason::Monthly),
        (policy.keep_yearly, Reason::Yearly),
    ];
    let mut last_bucket = [None; 5];
    let mut kept = [0u32; 5];
    for (i, c) in order.iter().enumerate() {
        if (i as u64) < u64::from(policy.keep_last) {
            decisions[i].reasons.push(Reason::Last);
        }
        let b = buckets(c.session_ms, tz);
        for (rule, (limit, reason)) in periodic.iter().enumerate() {
            if last_bucket[rule] != Some(b[rule]) {
                last_bucket[rule] = Some(b[rule]);
                if kept[rule] < *limit {
                    kept[rule] += 1;
                    decisions[i].reasons.push(*reason);
                }
            }
        }
    }

    for (i, c) in order.iter().enumerate() {
        if c.holds_archive {
            decisions[i].reasons.push(Reason::HoldsArchivedTabs);
        }
        if let Some(until) = c.undo_until_ms {
            decisions[i].reasons.push(Reason::UndoPoint {
                until_ms: (until != i64::MAX).then_some(until),
            });
        }
        if c.damaged {
            decisions[i].reasons.push(Reason::FoundDamaged);
        }
    }
    if let Some(i) = order.iter().position(|c| c.verified && !c.damaged) {
        decisions[i].reasons.push(Reason::NewestVerified);
    }
    // Oldest to newest session: remember the last good one; protect it when a
    // corrupt or shrunken one follows. A snapshot found damaged is storage
    // damage, not a session event: it neither protects nor is protected.
    let mut last_good: Option<usize> = None;
    for (i, c) in order.iter().enumerate().rev() {
        if c.damaged {
            continue;
        }
        let damaged = !c.verified || last_good.is_some_and(|g| is_shrunken(order[g].tabs, c.tabs));
        if damaged {
            if let Some(g) = last_good {
                let reason = Reason::LastGoodBefore { damaged: c.id };
                if !decisions[g]
                    .reasons
                    .iter()
                    .any(|r| matches!(r, Reason::LastGoodBefore { .. }))
                {
                    decisions[g].reasons.push(reason);
                }
            }
        }
        if c.verified {
            // A shrunken session becomes the new baseline once protected, so one
            // tab loss protects one snapshot, not every later one.
            last_good = Some(i);
        }
    }
    for d in &mut decisions {
        d.keep = !d.reasons.is_empty();
    }
    PrunePlan {
        decisions,
        found_damaged: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;
    const DAY: i64 = 24 * HOUR;

    fn none() -> RetentionPolicy {
        RetentionPolicy {
            keep_last: 0,
            keep_hourly: 0,
            keep_daily: 0,
            keep_weekly: 0,
            keep_monthly: 0,
            keep_yearly: 0,
        }
    }

    /// The plan under a policy that keeps only what `set` sets.
    fn plan_with(
        set: impl FnOnce(&mut RetentionPolicy),
        snaps: &[Candidate],
        tz: &TimeZone,
    ) -> PrunePlan {
        let mut policy = none();
        set(&mut policy);
        plan(&policy, snaps, tz)
    }

    fn ok(id: i64, t: i64, tabs: u64) -> Candidate {
        Candidate {
            id,
            taken_at_ms: t,
            session_ms: t,
            role: 1,
            verified: true,
            damaged: false,
            tabs,
            holds_archive: false,
            undo_until_ms: None,
            group: 0,
        }
    }

    fn corrupt(id: i64, t: i64) -> Candidate {
        Candidate {
            verified: false,
            tabs: 0,
            ..ok(id, t, 0)
        }
    }

    fn kept(plan: &PrunePlan) -> Vec<i64> {
        let mut k: Vec<i64> = plan
            .decisions
            .iter()
            .filter(|d| d.keep)
            .map(|d| d.id)
            .collect();
        k.sort();
        k
    }

    // 2026-11-02 00:30 UTC, a Monday.
    const T0: i64 = 1_793_579_400_000;

    #[test]
    fn keep_last_and_daily_like_restic() {
        // Four snapshots a day for five days.
        let snaps: Vec<Candidate> = (0..20)
            .map(|i| ok(i, T0 + (i / 4) * DAY + (i % 4) * 5 * HOUR, 100))
            .collect();
        let p = plan_with(|p| p.keep_last = 2, &snaps, &TimeZone::UTC);
        assert_eq!(kept(&p), [18, 19]);
        let p = plan_with(|p| p.keep_daily = 3, &snaps, &TimeZone::UTC);
        // The newest snapshot of each of the three newest days.
        assert_eq!(kept(&p), [11, 15, 19]);
        let p = plan_with(|p| p.keep_weekly = 5, &snaps, &TimeZone::UTC);
        assert_eq!(kept(&p), [19]);
        let d = p.decisions.iter().find(|d| d.id == 19).unwrap();
        assert_eq!(d.reasons, [Reason::Weekly, Reason::NewestVerified]);
    }

    #[test]
    fn hourly_buckets_follow_the_time_zone() {
        let snaps = [ok(1, T0, 10), ok(2, T0 + HOUR / 2 + 60_000, 10)];
        // 00:30 and 01:01 UTC are different hours...
        assert_eq!(
            kept(&plan_with(|p| p.keep_hourly = 2, &snaps, &TimeZone::UTC)),
            [1, 2]
        );
        // ...but at +05:30 they are 06:00 and 06:31: one hour, newest kept.
        let ist = TimeZone::fixed(jiff::tz::Offset::from_seconds(5 * 3600 + 1800).unwrap());
        assert_eq!(kept(&plan_with(|p| p.keep_hourly = 2, &snaps, &ist)), [2]);
    }

    #[test]
    fn the_newest_verified_snapshot_is_never_removed() {
        let snaps = [
            ok(1, T0, 50),
            corrupt(2, T0 + HOUR),
            corrupt(3, T0 + 2 * HOUR),
        ];
        let p = plan_with(|p| p.keep_last = 1, &snaps, &TimeZone::UTC);
        assert_eq!(kept(&p), [1, 3]);
        let d1 = p.decisions.iter().find(|d| d.id == 1).unwrap();
        assert!(d1.reasons.contains(&Reason::NewestVerified));
        assert!(d1.reasons.contains(&Reason::LastGoodBefore { damaged: 2 }));
    }

    #[test]
    fn the_last_good_before_a_shrunken_session_is_kept() {
        let snaps = [
            ok(1, T0, 400),
            ok(2, T0 + HOUR, 410),
            ok(3, T0 + 2 * HOUR, 12), // lost most tabs
            ok(4, T0 + 3 * HOUR, 13),
            ok(5, T0 + 4 * HOUR, 14),
        ];
        let p = plan_with(|p| p.keep_last = 1, &snaps, &TimeZone::UTC);
        assert_eq!(kept(&p), [2, 5]);
        assert_eq!(
            p.decisions.iter().find(|d| d.id == 2).unwrap().reasons,
            [Reason::LastGoodBefore { damaged: 3 }]
        );
        assert_eq!(p.removed().collect::<Vec<_>>(), [4, 3, 1]);
    }

    #[test]
    fn the_protections_follow_the_sessions_own_clock() {
        // One backup of a lived-in profile: the current session (50 tabs,
        // written a minute ago) and an upgrade copy (3 tabs, weeks old) stored
        // after it, so with the higher id.
        let current = Candidate {
            role: 1,
            ..ok(1, T0 + 30 * DAY, 50)
        };
        let upgrade = Candidate {
            taken_at_ms: T0 + 30 * DAY,
            session_ms: T0,
            role: 4,
            ..ok(2, T0, 3)
        };
        let p = plan_with(|p| p.keep_last = 1, &[current, upgrade], &TimeZone::UTC);
        let d1 = p.decisions.iter().find(|d| d.id == 1).unwrap();
        assert_eq!(d1.reasons, [Reason::Last, Reason::NewestVerified]);
        // The upgrade copy is the newest backup, but an old session: not
        // the last one, and not a shrunken session either.
        let d2 = p.decisions.iter().find(|d| d.id == 2).unwrap();
        assert_eq!(d2.reasons, []);
        // Equal session times: the file Firefox tries first is the newer.
        let a = Candidate {
            role: 3,
            ..ok(3, T0, 10)
        };
        let b = Candidate {
            role: 0,
            taken_at_ms: T0 - HOUR,
            ..ok(4, T0, 10)
        };
        let p = plan(&none(), &[a, b], &TimeZone::UTC);
        assert_eq!(kept(&p), [4]);
    }

    #[test]
    fn each_day_keeps_its_own_session_not_an_old_copy_backed_up_last() {
        // Nine daily `backup --prune` runs of a profile whose recovery file
        // changes every day beside an upgrade copy of a May session: each
        // run stores the day's session, then the upgrade copy (a higher id,
        // a later backup time).
        let may = T0 - 180 * DAY;
        let mut snaps = Vec::new();
        for day in 0..9 {
            let t = T0 + day * DAY + 20 * HOUR;
            snaps.push(Candidate {
                role: 1,
                ..ok(2 * day + 1, t, 40 + day as u64)
            });
            snaps.push(Candidate {
                id: 2 * day + 2,
                taken_at_ms: t + 1000,
                session_ms: may,
                role: 4,
                ..ok(0, may, 3)
            });
        }
        let p = plan_with(|p| p.keep_daily = 7, &snaps, &TimeZone::UTC);
        // The seven newest days with sessions each keep the day's session;
        // no upgrade copy, and nothing else.
        assert_eq!(kept(&p), [5, 7, 9, 11, 13, 15, 17]);
        for d in p.decisions.iter().filter(|d| d.keep) {
            assert!(d.reasons.contains(&Reason::Daily), "{d:?}");
        }
        // With room for more days than the sessions had, the May session's
        // day is kept once: its newest copy (the last backup of it).
        let p = plan_with(|p| p.keep_daily = 30, &snaps, &TimeZone::UTC);
        let upgrade_days: Vec<i64> = p
            .decisions
            .iter()
            .filter(|d| d.keep && d.id % 2 == 0)
            .map(|d| d.id)
            .collect();
        assert_eq!(upgrade_days, [18]);
        // The N newest sessions, not the N newest backups.
        let p = plan_with(|p| p.keep_last = 3, &snaps, &TimeZone::UTC);
        assert_eq!(kept(&p), [13, 15, 17]);
    }

    #[test]
    fn a_snapshot_found_damaged_is_kept_and_the_protection_moves() {
        let older = ok(1, T0, 50);
        let newer = Candidate {
            damaged: true,
            ..ok(2, T0 + HOUR, 50)
        };
        let p = plan_with(|p| p.keep_last = 1, &[older, newer], &TimeZone::UTC);
        assert_eq!(kept(&p), [1, 2]);
        let d1 = p.decisions.iter().find(|d| d.id == 1).unwrap();
        assert_eq!(d1.reasons, [Reason::NewestVerified]);
        let d2 = p.decisions.iter().find(|d| d.id == 2).unwrap();
        assert_eq!(d2.reasons, [Reason::Last, Reason::FoundDamaged]);
    }

    #[test]
    fn shrinking_means_losing_more_than_half() {
        assert!(is_shrunken(100, 49));
        assert!(!is_shrunken(100, 50));
        assert!(!is_shrunken(0, 0));
    }

    #[test]
    fn a_snapshot_holding_archived_tabs_is_kept() {
        let mut old = ok(1, T0, 10);
        old.holds_archive = true;
        let candidates = [old, ok(2, T0 + DAY, 10), ok(3, T0 + 2 * DAY, 10)];
        let plan = plan(&none(), &candidates, &TimeZone::UTC);
        let kept: Vec<i64> = plan
            .decisions
            .iter()
            .filter(|d| d.keep)
            .map(|d| d.id)
            .collect();
        assert_eq!(kept, vec![3, 1]);
        let d1 = plan.decisions.iter().find(|d| d.id == 1).unwrap();
        assert_eq!(d1.reasons, vec![Reason::HoldsArchivedTabs]);
    }

    /// Two laptops copying to one remote: each keeps its own newest
    /// sessions, whatever the other backed up since (issue 38: a remote
    /// prune removed 13 of laptop B's 14 snapshots, its newest among them).
    #[test]
    fn each_machine_keeps_its_own_newest_sessions() {
        let tz = TimeZone::UTC;
        let mut snaps = Vec::new();
        // Laptop A (group 0): 14 sessions, the last an hour ago.
        for i in 0..14 {
            snaps.push(ok(i + 1, 100 * DAY + i * HOUR, 10));
        }
        // Laptop B (group 1): 14 sessions of a week earlier.
        for i in 0..14 {
            snaps.push(Candidate {
                group: 1,
                ..ok(100 + i, 93 * DAY + i * HOUR, 20)
            });
        }
        let p = plan_with(|p| p.keep_last = 3, &snaps, &tz);
        let mut k = kept(&p);
        k.sort_unstable();
        // Each laptop's three newest, and each one's newest verified.
        assert_eq!(k, [12, 13, 14, 111, 112, 113]);
        // One group alone plans as before.
        let alone: Vec<Candidate> = snaps.iter().copied().filter(|c| c.group == 1).collect();
        let mut k1 = kept(&plan_with(|p| p.keep_last = 3, &alone, &tz));
        k1.sort_unstable();
        assert_eq!(k1, [111, 112, 113]);
        // Decisions stay newest session first.
        let order: Vec<i64> = p.decisions.iter().map(|d| d.id).collect();
        assert_eq!(order[0], 14);
        assert_eq!(order.last(), Some(&100));
    }
}
