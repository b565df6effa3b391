//! The model the simulator checks ffsession against: what was stored, as
//! the simulator wrote it, and what each promise requires of the store.
//! It shares no code with ffsession: its own order of sessions, its own
//! calendar periods (UTC), its own rule for undo points.

use std::collections::{BTreeMap, BTreeSet};

use ffsession::retention::RetentionPolicy;

pub const HOUR: u64 = 3_600_000;
pub const DAY: u64 = 24 * HOUR;

/// One snapshot the store reported stored, as the simulator knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub file: String,
    /// The session JSON written; `None` for a damaged file.
    pub json: Option<Vec<u8>>,
    /// The session's own time (`lastUpdate`; a damaged file's mtime).
    pub session_ms: u64,
    pub role: u8,
    pub stored_at: u64,
}

impl Entry {
    /// Newest session first: own time, then Firefox's order of files,
    /// then the later backup.
    fn key(&self) -> (std::cmp::Reverse<u64>, u8, std::cmp::Reverse<u64>) {
        (
            std::cmp::Reverse(self.session_ms),
            self.role,
            std::cmp::Reverse(self.stored_at),
        )
    }
}

/// How `restore latest` ranks sessions: time, restored, Firefox's order.
type LatestKey = (u64, bool, std::cmp::Reverse<u8>);

/// An undo point: what the profile held when ffsession changed it.
#[derive(Debug, Clone)]
pub struct Undo {
    pub made_at: u64,
    /// The whole session files of the profile then.
    pub contents: Vec<Vec<u8>>,
    /// For a restore: what it put in place.
    pub restored: Option<Vec<u8>>,
}

/// A tab `tidy` closed: its URL and the session that holds it.
#[derive(Debug, Clone)]
pub struct Archived {
    pub url: String,
    pub holder: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct Model {
    pub entries: Vec<Entry>,
    pub undo: Vec<Undo>,
    pub archived: Vec<Archived>,
}

/// What the store holds now, read back through ffsession: each whole
/// snapshot's JSON (by file and backup time), and each damaged-when-taken
/// one (file, mtime, backup time).
#[derive(Debug, Default, Clone)]
pub struct Observed {
    pub whole: BTreeMap<(String, Vec<u8>, u64), usize>,
    pub damaged: BTreeMap<(String, u64, u64), usize>,
    /// Every JSON that reads back whole, whatever the file.
    pub contents: BTreeSet<Vec<u8>>,
}

/// Calendar periods in UTC, written again from the civil calendar.
fn periods(ms: u64) -> [(i64, i64); 5] {
    let ts = jiff::Timestamp::from_millisecond(ms as i64).unwrap();
    let d = ts.to_zoned(jiff::tz::TimeZone::UTC).date();
    let iso = d.iso_week_date();
    let (y, m) = (i64::from(d.year()), i64::from(d.month()));
    [
        ((ms / HOUR) as i64, 0),
        ((ms / DAY) as i64, 0),
        (i64::from(iso.year()), i64::from(iso.week())),
        (y, m),
        (y, 0),
    ]
}

impl Model {
    /// The entries, newest session first.
    fn ordered(&self) -> Vec<&Entry> {
        let mut v: Vec<&Entry> = self.entries.iter().collect();
        v.sort_by_key(|e| e.key());
        v
    }

    /// The session JSONs a prune under `policy` must leave readable: for
    /// `keep_last`, the N newest sessions; for each periodic rule, the
    /// newest session of each of the N newest periods that have sessions
    /// (nothing when that one is a damaged file or did not read back
    /// before the prune); and the newest whole session.
    pub fn required_after_prune(
        &self,
        policy: &RetentionPolicy,
        readable: &BTreeSet<Vec<u8>>,
    ) -> Vec<(String, Vec<u8>)> {
        let ordered = self.ordered();
        let mut out = Vec::new();
        let mut need = |why: String, e: &Entry| {
            if let Some(j) = &e.json {
                if readable.contains(j) {
                    out.push((why, j.clone()));
                }
            }
        };
        for e in ordered.iter().take(policy.keep_last as usize) {
            need("last".into(), e);
        }
        let rules = [
            ("hourly", policy.keep_hourly),
            ("daily", policy.keep_daily),
            ("weekly", policy.keep_weekly),
            ("monthly", policy.keep_monthly),
            ("yearly", policy.keep_yearly),
        ];
        for (r, (name, n)) in rules.iter().enumerate() {
            let mut seen = BTreeSet::new();
            for e in &ordered {
                if seen.len() >= *n as usize {
                    break;
                }
                if seen.insert(periods(e.session_ms)[r]) {
                    need(format!("{name} {:?}", periods(e.session_ms)[r]), e);
                }
            }
        }
        if let Some(e) = ordered
            .iter()
            .find(|e| e.json.as_ref().is_some_and(|j| readable.contains(j)))
        {
            need("newest whole".into(), e);
        }
        out
    }

    /// Until when the promise keeps undo point `i`: at least 30 days, and
    /// until the next one is 7 days old; the newest for ever.
    pub fn undo_kept_until(&self, i: usize) -> u64 {
        let made = self.undo[i].made_at;
        match self
            .undo
            .iter()
            .map(|u| u.made_at)
            .filter(|&t| t > made)
            .min()
        {
            None => u64::MAX,
            Some(next) => (made + 30 * DAY).max(next + 7 * DAY),
        }
    }

    /// What `restore latest` must give: the newest whole session that
    /// reads back, where a restore counts as a session of the time it was
    /// made (and wins a tie).
    pub fn expected_latest(&self, readable: &BTreeSet<Vec<u8>>) -> Option<(u64, Vec<u8>)> {
        let mut best: Option<(LatestKey, Vec<u8>)> = None;
        let mut offer = |key: LatestKey, json: &Vec<u8>| {
            if readable.contains(json) && best.as_ref().is_none_or(|(k, _)| key > *k) {
                best = Some((key, json.clone()));
            }
        };
        for e in &self.entries {
            if let Some(j) = &e.json {
                offer((e.session_ms, false, std::cmp::Reverse(e.role)), j);
            }
        }
        for u in &self.undo {
            if let Some(j) = &u.restored {
                let own = crate::firefox::last_update_of(j).unwrap_or(0);
                offer((u.made_at.max(own), true, std::cmp::Reverse(0)), j);
            }
        }
        best.map(|((t, _, _), j)| (t, j))
    }

    /// After a prune: keep the entries the store still holds.
    pub fn reconcile(&mut self, seen: &Observed) {
        let mut whole = seen.whole.clone();
        let mut damaged = seen.damaged.clone();
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.entries[i].stored_at));
        let mut keep = vec![false; self.entries.len()];
        for i in order {
            let e = &self.entries[i];
            let slot = match &e.json {
                Some(j) => whole.get_mut(&(e.file.clone(), j.clone(), e.stored_at)),
                None => damaged.get_mut(&(e.file.clone(), e.session_ms, e.stored_at)),
            };
            if let Some(n) = slot.filter(|n| **n > 0) {
                *n -= 1;
                keep[i] = true;
            }
        }
        let mut k = keep.into_iter();
        self.entries.retain(|_| k.next().unwrap_or(false));
    }

    /// Every entry is in the store (count for count): nothing reported
    /// stored is gone. Returns what is missing.
    pub fn missing(&self, seen: &Observed) -> Vec<String> {
        let mut whole = seen.whole.clone();
        let mut damaged = seen.damaged.clone();
        let mut out = Vec::new();
        for e in &self.entries {
            let slot = match &e.json {
                Some(j) => whole.get_mut(&(e.file.clone(), j.clone(), e.stored_at)),
                None => damaged.get_mut(&(e.file.clone(), e.session_ms, e.stored_at)),
            };
            match slot.filter(|n| **n > 0) {
                Some(n) => *n -= 1,
                None => out.push(format!(
                    "{} of {} (stored at {}){}",
                    e.file,
                    e.session_ms,
                    e.stored_at,
                    if e.json.is_none() { ", damaged" } else { "" }
                )),
            }
        }
        out
    }
}
