//! A simulated long run of `ffsession watch`, on a fake clock: shared by the
//! `watch_year` benchmark and the one-month test in `tests/watch.rs`.
//!
//! A profile holds `sessionstore-backups/recovery.jsonlz4`; each change
//! navigates a few tabs to new pages and, as Firefox does, first moves the old
//! recovery file to `recovery.baklz4`. Each cycle is the library's own
//! [`ffsession::watch::cycle`] (back up the changed files, then apply the
//! retention policy), with the store opened and closed around it as the CLI
//! does, at `start + n * interval`.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ffsession::retention::RetentionPolicy;
use ffsession::store::Store;
use ffsession::watch::{cycle, UnchangedNotices};
use ffsession_gen::{firefox_json, generate, mozlz4, Spec};
use jiff::tz::TimeZone;
use serde_json::Value;

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Simulated days.
    pub days: u64,
    /// Time between two cycles (the watch interval).
    pub interval: Duration,
    /// The session changes every this many cycles.
    pub change_every: u64,
    /// Run the cycles in between changes too (they must store nothing), or
    /// only one of them a day.
    pub run_unchanged: bool,
    /// Bytes of session JSON.
    pub session_bytes: usize,
    /// Tabs navigated per change.
    pub tabs_per_change: usize,
    /// Days after which to report.
    pub checkpoints: Vec<u64>,
    /// The retention policy.
    pub policy: RetentionPolicy,
    /// Sample this process's RSS every this many cycles run.
    pub rss_every: Option<u64>,
}

/// The state of the store at a checkpoint.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Simulated days so far.
    pub day: u64,
    /// Cycles run (changed or not).
    pub cycles_run: u64,
    /// Cycles at which the session had changed.
    pub changes: u64,
    /// Snapshots the cycles took, in all.
    pub snapshots_taken: u64,
    /// Snapshots in the catalog now.
    pub snapshots_kept: u64,
    /// Rows per catalog table.
    pub rows: Vec<(&'static str, u64)>,
    /// Bytes of every file in the store folder (catalog, WAL, chunks).
    pub store_bytes: u64,
    /// Wall time so far.
    pub elapsed: Duration,
    /// (cycles run, VmRSS in KiB), every `rss_every` cycles.
    pub rss: Vec<(u64, u64)>,
}

/// The session, kept as a value so a change edits a few tabs only.
struct Session {
    value: Value,
    next: u64,
    rng: fastrand::Rng,
}

impl Session {
    fn new(bytes: usize) -> Session {
        let spec = Spec::sized(bytes);
        let value = serde_json::from_str(&generate(&spec)).expect("generated JSON");
        Session {
            value,
            next: 0,
            rng: fastrand::Rng::with_seed(7),
        }
    }

    /// Navigate `n` random tabs to new pages at `now_ms`.
    fn change(&mut self, n: usize, now_ms: u64) {
        for _ in 0..n {
            let windows = self.value["windows"].as_array_mut().expect("windows");
            let w = self.rng.usize(..windows.len());
            let tabs = windows[w]["tabs"].as_array_mut().expect("tabs");
            let t = self.rng.usize(..tabs.len());
            let entries = tabs[t]["entries"].as_array_mut().expect("entries");
            let last = entries.len() - 1;
            self.next += 1;
            let k = self.next;
            entries[last]["url"] = Value::from(format!("https://news{}.example/story/{k}", k % 97));
            entries[last]["title"] = Value::from(format!("Story number {k} of the day"));
        }
        self.value["session"]["lastUpdate"] = Value::from(now_ms);
    }

    fn mozlz4(&self) -> Vec<u8> {
        mozlz4(firefox_json(&self.value).as_bytes())
    }
}

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    ffsession_gen::files_under(dir)
        .iter()
        .filter_map(|f| fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// A profile folder and a store folder under `root`.
pub fn folders(root: &Path) -> (PathBuf, PathBuf) {
    let profile = root.join("profile");
    fs::create_dir_all(profile.join("sessionstore-backups")).unwrap();
    (profile, root.join("store"))
}

/// Run `cfg` in `root`, calling `report` at each checkpoint.
pub fn run(cfg: &SimConfig, root: &Path, mut report: impl FnMut(&Checkpoint)) -> Checkpoint {
    let (profile, store_dir) = folders(root);
    let backups = profile.join("sessionstore-backups");
    let recovery = backups.join("recovery.jsonlz4");
    let start_ms: u64 = 1_767_225_600_000; // 2026-01-01 00:00 UTC
    let interval_ms = cfg.interval.as_millis() as u64;
    let cycles_per_day = 86_400_000 / interval_ms;
    let total = cfg.days * cycles_per_day;
    let tz = TimeZone::UTC;
    let mut session = Session::new(cfg.session_bytes);
    let mut notices = UnchangedNotices::default();
    let started = Instant::now();
    let mut last = None;
    let (mut cycles_run, mut changes, mut taken) = (0u64, 0u64, 0u64);
    let mut rss = Vec::new();
    for n in 0..total {
        let now_ms = start_ms + n * interval_ms;
        let changed = n % cfg.change_every == 0;
        // One cycle a day that is not a change cycle (when there is one).
        let daily_unchanged = n % cycles_per_day == cycles_per_day / 2 + 1;
        if changed {
            session.change(cfg.tabs_per_change, now_ms);
            if recovery.exists() {
                fs::rename(&recovery, backups.join("recovery.baklz4")).unwrap();
            }
            fs::write(&recovery, session.mozlz4()).unwrap();
            changes += 1;
        }
        if changed || cfg.run_unchanged || daily_unchanged {
            let mut store = Store::create_or_open(&store_dir).expect("opening the store");
            let r = cycle(&mut store, "sim", &profile, now_ms, &cfg.policy, &tz)
                .expect("a watch cycle");
            drop(store);
            notices.update(&r.backup);
            if !changed {
                assert!(
                    r.backup.snapshots.is_empty(),
                    "cycle {n}: an unchanged session was stored"
                );
            }
            taken += r.backup.snapshots.len() as u64;
            cycles_run += 1;
            if cfg.rss_every.is_some_and(|every| cycles_run % every == 0) {
                rss.push((cycles_run, rss_kib().unwrap_or(0)));
            }
        }
        let day = (n + 1) / cycles_per_day;
        if (n + 1) % cycles_per_day == 0 && cfg.checkpoints.contains(&day) {
            let store = Store::open_read_only(&store_dir).unwrap();
            let c = Checkpoint {
                day,
                cycles_run,
                changes,
                snapshots_taken: taken,
                snapshots_kept: store.snapshots().unwrap().len() as u64,
                rows: store.table_rows().unwrap(),
                store_bytes: dir_bytes(&store_dir),
                elapsed: started.elapsed(),
                rss: rss.clone(),
            };
            report(&c);
            last = Some(c);
        }
    }
    last.expect("at least one checkpoint")
}

/// The most snapshots `policy` can keep: one per rule slot, plus the newest
/// verified one (no snapshot here is corrupt or shrunken, so the other
/// protection never applies).
pub fn policy_bound(policy: &RetentionPolicy) -> u64 {
    u64::from(
        policy.keep_last
            + policy.keep_hourly
            + policy.keep_daily
            + policy.keep_weekly
            + policy.keep_monthly
            + policy.keep_yearly,
    ) + 1
}

/// `VmRSS` of this process, in KiB (Linux).
pub fn rss_kib() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
