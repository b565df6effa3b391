//! A year of use, simulated (issue 36): a seeded random walk over a fake
//! clock (minutes to weeks between steps) drives a Firefox profile, written
//! as Firefox writes it (`life/firefox.rs`: recovery rotation, a clean quit,
//! `previous.jsonlz4` at the next start, upgrade copies, crashes that cut a
//! file or overwrite its header, tabs that come and go, history cleared), and
//! ffsession's library: `backup` (with `--prune` under random policies),
//! `watch` cycles, `prune`, `restore latest` and by id, `tidy`, bringing
//! archived tabs back (`extract`, `merge`, `restore FILE`), `copy --to` a
//! folder remote and a prune of the remote, `check`; with faults: a full
//! disk during a backup, a backup killed (SIGKILL, in a child process)
//! after a random write, a flipped bit in a stored chunk. After every step
//! it checks the promises against a model that shares no code with
//! ffsession (`life/model.rs`):
//!
//! 1. every period a prune's policy promises keeps its newest session, on
//!    the store and on the remote;
//! 2. `restore latest` gives the newest whole session (a restore counts as
//!    a session of its time), and names a newer damaged file;
//! 3. every undo point inside its promised time is restorable, locally and
//!    on the remote after a copy;
//! 4. every archived tab is marked, found by search, and its session
//!    restorable, locally and on the remote;
//! 5. nothing is written outside the store, the profile and the remote;
//! 6. nothing reported stored is lost (a full disk or a kill stores all or
//!    nothing of a backup), and `check` names a flipped bit.
//!
//! A failure prints its seed and its last steps; `FFSESSION_LIFE_SEED=N`
//! replays one life (`FFSESSION_LIFE_STEPS` steps). CI runs the fixed seeds
//! of `lives_of_fixed_seeds`; `cargo test -p ffsession --test life --
//! --ignored` runs many more (`FFSESSION_LIFE_FIRST`, `FFSESSION_LIFE_LIVES`,
//! `FFSESSION_LIFE_STEPS`): see docs/testing.md.

#[path = "life/edits.rs"]
mod edits;
#[path = "life/faults.rs"]
mod faults;
#[path = "life/firefox.rs"]
mod firefox;
#[path = "life/model.rs"]
mod model;
#[path = "life/remote.rs"]
mod remote;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use ffsession::backup::backup_profile;
use ffsession::fs_util::{set_test_hook, TestHook};
use ffsession::remote::{
    copy_to_remote, open_backend, prune_remote, sync_from_remote, KeyParams, Location,
    PruneOptions, Remote, RemoteOptions,
};
use ffsession::retention::RetentionPolicy;
use ffsession::store::{literal_query, SnapshotStatus, Store, TimeRange};
use ffsession::tidy::{self, Editable, Selection, TidyRules};
use ffsession::SessionData;
use ffsession::{prune, restore, watch};
use firefox::{Firefox, Written};
use jiff::tz::TimeZone;
use model::{Archived, Entry, Model, Observed, Undo, DAY, HOUR};

/// 2026-01-01 00:00 UTC.
const START: u64 = 1_767_225_600_000;
const PROFILE: &str = "default";

struct Life {
    rng: fastrand::Rng,
    root: tempfile::TempDir,
    ff: Firefox,
    store_dir: PathBuf,
    now: u64,
    model: Model,
    /// What the remote must hold: the entries copied to it (reconciled
    /// after its prunes), and when the last copy was made.
    remote: Model,
    copied_at: Option<u64>,
    /// The simulator's own files (a merged session to restore), outside
    /// the folders ffsession may write.
    scratch: tempfile::TempDir,
    steps: Vec<String>,
    machine: ffsession::machine::Machine,
}

fn random_policy(rng: &mut fastrand::Rng) -> RetentionPolicy {
    if rng.bool() {
        return RetentionPolicy::DEFAULT;
    }
    RetentionPolicy {
        keep_last: rng.u32(0..6),
        keep_hourly: rng.u32(0..8),
        keep_daily: rng.u32(0..6),
        keep_weekly: rng.u32(0..4),
        keep_monthly: rng.u32(0..4),
        keep_yearly: rng.u32(0..3),
    }
}

impl Life {
    fn new(seed: u64) -> Life {
        let root = tempfile::tempdir().unwrap();
        let ff = Firefox::new(&root.path().join("profile"));
        let store_dir = root.path().join("store");
        Life {
            rng: fastrand::Rng::with_seed(seed),
            root,
            ff,
            store_dir,
            now: START,
            model: Model::default(),
            remote: Model::default(),
            copied_at: None,
            scratch: tempfile::tempdir().unwrap(),
            steps: Vec::new(),
            machine: ffsession::machine::Machine::new("laptop"),
        }
    }

    fn store(&self) -> Store {
        Store::create_or_open(&self.store_dir).unwrap()
    }

    /// Minutes to months between steps.
    fn advance(&mut self) {
        let r = self.rng.u32(0..110);
        self.now += match r {
            0..60 => self.rng.u64(60_000..2 * HOUR),
            60..90 => self.rng.u64(2 * HOUR..2 * DAY),
            _ => self.rng.u64(2 * DAY..40 * DAY),
        };
    }

    /// The model's entries for the snapshots a backup reported, from what
    /// the simulator wrote into each file.
    fn add_entries(&mut self, taken: &[ffsession::store::SnapshotInfo]) {
        for s in taken {
            let written = self.ff.files.get(&s.file_name).cloned();
            let (json, session_ms) = match written {
                Some(Written::Session { json, last_update }) => (Some(json), last_update),
                Some(Written::Damaged { mtime }) => (None, mtime),
                None => panic!(
                    "a snapshot of {} that the profile does not hold",
                    s.file_name
                ),
            };
            // What was reported stored is what was written, and says so.
            assert_eq!(
                s.is_ok(),
                json.is_some(),
                "{}: stored as {:?}",
                s.file_name,
                s.status
            );
            self.model.entries.push(Entry {
                file: s.file_name.clone(),
                json,
                session_ms,
                role: firefox::role(&s.file_name),
                stored_at: self.now,
            });
        }
    }

    /// Read the whole store back through ffsession.
    fn observe(&self) -> Observed {
        observe_store(&self.store_dir)
    }

    /// After a prune under `policy`: promise 1, then the model keeps what
    /// the store kept.
    fn check_prune(&mut self, policy: &RetentionPolicy, before: &BTreeSet<Vec<u8>>) {
        let seen = self.observe();
        for (why, json) in self.model.required_after_prune(policy, before) {
            assert!(
                seen.contents.contains(&json),
                "promise 1: the {why} session ({} bytes, lastUpdate {:?}) was pruned",
                json.len(),
                firefox::last_update_of(&json)
            );
        }
        self.model.reconcile(&seen);
    }

    fn backup(&mut self, prune_with: Option<RetentionPolicy>) {
        let mut store = self.store();
        let report = backup_profile(&mut store, PROFILE, &self.ff.dir, self.now).unwrap();
        self.add_entries(&report.snapshots);
        if let Some(policy) = prune_with {
            let before = self.observe().contents;
            prune::apply(&mut store, &policy, &TimeZone::UTC, self.now).unwrap();
            drop(store);
            self.check_prune(&policy, &before);
        }
    }

    fn watch_cycle(&mut self, policy: RetentionPolicy) {
        let before = self.observe().contents;
        let mut store = self.store();
        let report = watch::cycle(
            &mut store,
            PROFILE,
            &self.ff.dir,
            self.now,
            &policy,
            &TimeZone::UTC,
        )
        .unwrap();
        self.add_entries(&report.backup.snapshots);
        // What the cycle stored was there before its prune.
        let mut before = before;
        let added = self.model.entries.len() - report.backup.snapshots.len();
        before.extend(
            self.model.entries[added..]
                .iter()
                .filter_map(|e| e.json.clone()),
        );
        drop(store);
        if report.pruned.is_some() {
            self.check_prune(&policy, &before);
        }
    }

    /// `restore latest` (promise 2), or a random snapshot.
    fn restore(&mut self, latest: bool) {
        if self.ff.running || !self.store_dir.exists() {
            return;
        }
        let mut store = self.store();
        let seen = self.observe();
        let id = if latest {
            let Ok((chosen, _)) = restore::latest(&store) else {
                assert!(
                    self.model.expected_latest(&seen.contents).is_none(),
                    "promise 2: restore latest found nothing"
                );
                return;
            };
            let got = store.read_json(chosen.id).unwrap();
            let (time, want) = self.model.expected_latest(&seen.contents).unwrap();
            assert!(
                got == want,
                "promise 2: restore latest chose snapshot {} (lastUpdate {:?}), the newest is lastUpdate {:?} (at {time}); the store's order: {:?}; undo points: {:?}",
                chosen.id,
                chosen.last_update_ms,
                firefox::last_update_of(&want),
                restore::newest_first(&store)
                    .unwrap()
                    .iter()
                    .take(6)
                    .map(|s| (s.id.0, s.file_name.clone(), s.last_update_ms))
                    .collect::<Vec<_>>(),
                store.undo_points().unwrap()
            );
            // A newer file damaged when it was taken is named.
            let newer_damaged = self
                .model
                .entries
                .iter()
                .any(|e| e.json.is_none() && e.session_ms > time);
            if newer_damaged {
                assert!(
                    !restore::newer_damaged_files(&store, &chosen)
                        .unwrap()
                        .is_empty(),
                    "promise 2: a newer damaged file was not named"
                );
            }
            chosen.id
        } else {
            let ok: Vec<_> = store
                .snapshots()
                .unwrap()
                .into_iter()
                .filter(|s| s.is_ok())
                .collect();
            if ok.is_empty() {
                return;
            }
            ok[self.rng.usize(0..ok.len())].id
        };
        let want = store.read_json(id).unwrap();
        let contents = self.whole_files();
        let plan = restore::plan(&store, id, &self.ff.dir).unwrap();
        let report = restore::execute(&plan, &mut store, None, PROFILE, self.now).unwrap();
        self.add_entries(&report.undo);
        drop(store);
        let written = self.ff.rescan_after_restore();
        assert!(
            written.as_ref() == Some(&want),
            "the restored file is not the snapshot's session"
        );
        self.model.undo.push(Undo {
            made_at: self.now,
            contents,
            restored: Some(want),
        });
    }

    /// Promises that hold after every step.
    fn check_always(&mut self) {
        let seen = self.observe();
        let missing = self.model.missing(&seen);
        assert!(
            missing.is_empty(),
            "promise 6: stored and gone: {missing:?}"
        );
        for i in 0..self.model.undo.len() {
            if self.model.undo_kept_until(i) <= self.now {
                continue;
            }
            let u = &self.model.undo[i];
            for json in u.contents.iter().chain(u.restored.iter()) {
                assert!(
                    seen.contents.contains(json),
                    "promise 3: the undo point of {} lost a session (lastUpdate {:?}); the store's undo points: {:?}; its snapshots: {:?}",
                    u.made_at,
                    firefox::last_update_of(json),
                    Store::open_read_only(&self.store_dir).unwrap().undo_points().unwrap(),
                    Store::open_read_only(&self.store_dir)
                        .unwrap()
                        .snapshots()
                        .unwrap()
                        .iter()
                        .map(|s| (s.id.0, s.file_name.clone(), s.last_update_ms))
                        .collect::<Vec<_>>()
                );
            }
        }
        // Promise 4: every archived tab is marked, found by search, and
        // its session restorable.
        if !self.model.archived.is_empty() {
            let store = Store::open_read_only(&self.store_dir).unwrap();
            let marked: BTreeSet<String> = store
                .archived_tabs()
                .unwrap()
                .into_iter()
                .map(|t| t.url)
                .collect();
            for a in &self.model.archived {
                assert!(
                    marked.contains(&a.url),
                    "promise 4: {} lost its archive mark",
                    a.url
                );
                assert!(
                    seen.contents.contains(&a.holder),
                    "promise 4: the session holding archived {} is gone",
                    a.url
                );
                let hits = store
                    .search_tabs(
                        &literal_query(&a.url).unwrap(),
                        TimeRange::default(),
                        10_000,
                    )
                    .unwrap();
                assert!(
                    hits.iter().any(|h| h.url == a.url && h.archived.is_some()),
                    "promise 4: search does not find archived {}",
                    a.url
                );
            }
        }
        // Promise 5: nothing outside the store, the profile and the remote.
        let mut top: Vec<String> = fs::read_dir(self.root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        top.retain(|n| n != "store" && n != "remote");
        assert_eq!(
            top,
            ["profile"],
            "promise 5: written outside the store, profile and remote"
        );
        let mut files = Vec::new();
        collect_files(&self.ff.dir, &mut files);
        for f in files {
            let name = f
                .strip_prefix(&self.ff.dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let known = self.ff.files.contains_key(&name)
                || [".parentlock", "parent.lock", "prefs.js", "lock"].contains(&name.as_str());
            assert!(known, "promise 5: ffsession left {name} in the profile");
        }
    }

    fn step(&mut self) {
        self.advance();
        let r = self.rng.u32(0..100);
        let what = match r {
            0..8 if !self.ff.running => {
                let upgrade = self.rng.u32(0..8) == 0;
                self.ff.start(upgrade, self.now);
                format!("start{}", if upgrade { " (upgrade)" } else { "" })
            }
            0..35 if self.ff.running => {
                // Tabs come and go; now and then most of them at once.
                let n = self.ff.tabs.len();
                if self.rng.u32(0..20) == 0 && n > 2 {
                    self.ff.tabs.truncate(n / 4 + 1);
                } else if self.rng.bool() && n > 1 {
                    let at = self.rng.usize(0..n);
                    self.ff.tabs.remove(at);
                } else {
                    let k = self.rng.usize(1..4);
                    self.ff.open_tabs(k, self.now);
                }
                let n = self.ff.tabs.len();
                let seen = self.rng.usize(0..n);
                self.ff.visit(seen, self.now);
                self.ff.write(self.now);
                format!("write ({} tabs)", self.ff.tabs.len())
            }
            35..42 if self.ff.running => {
                self.ff.quit(self.now);
                "quit".into()
            }
            42..44 if self.ff.running => {
                let cut = self.rng.bool();
                self.ff.crash_writing(self.now, cut);
                format!("crash writing ({})", if cut { "cut" } else { "header" })
            }
            44..46 if self.ff.running => {
                self.ff.crash();
                "crash".into()
            }
            46 if !self.ff.running => {
                self.ff.clear_history();
                "clear history".into()
            }
            47..60 => {
                let prune = self.rng.bool().then(|| random_policy(&mut self.rng));
                let what = format!(
                    "backup{}",
                    prune.map(|p| format!(" --prune {p:?}")).unwrap_or_default()
                );
                self.steps.push(what.clone());
                self.backup(prune);
                return self.after_step();
            }
            60..78 => {
                let policy = random_policy(&mut self.rng);
                self.steps.push(format!("watch cycle {policy:?}"));
                self.watch_cycle(policy);
                return self.after_step();
            }
            78..82 if self.store_dir.exists() => {
                let policy = random_policy(&mut self.rng);
                self.steps.push(format!("prune {policy:?}"));
                let before = self.observe().contents;
                let mut store = self.store();
                prune::apply(&mut store, &policy, &TimeZone::UTC, self.now).unwrap();
                drop(store);
                self.check_prune(&policy, &before);
                return self.after_step();
            }
            82..87 => {
                self.steps.push("restore latest".into());
                self.restore(true);
                return self.after_step();
            }
            87..90 => {
                self.steps.push("restore a snapshot".into());
                self.restore(false);
                return self.after_step();
            }
            90..93 if self.store_dir.exists() => {
                self.steps.push("flip a bit, check".into());
                self.flip_and_check();
                return self.after_step();
            }
            93..96 => {
                let budget = self.rng.u64(0..40_000);
                self.steps
                    .push(format!("backup on a full disk ({budget} bytes)"));
                self.backup_on_full_disk(budget);
                return self.after_step();
            }
            96 => {
                self.steps.push("tidy".into());
                self.tidy();
                return self.after_step();
            }
            97 => {
                self.steps.push("copy to the remote".into());
                self.copy();
                self.check_remote();
                return self.after_step();
            }
            98 => {
                let policy = random_policy(&mut self.rng);
                self.steps.push(format!("prune the remote {policy:?}"));
                self.remote_prune(policy);
                self.check_remote();
                return self.after_step();
            }
            99..102 => {
                self.steps
                    .push("bring archived tabs back (extract, merge, restore FILE)".into());
                self.bring_back_archived();
                return self.after_step();
            }
            102..105 if self.store_dir.exists() => {
                let k = self.rng.u64(1..12);
                self.steps.push(format!("backup killed after {k} writes"));
                self.backup_killed(k);
                return self.after_step();
            }
            105..108 => {
                self.steps.push("check".into());
                self.check();
                return self.after_step();
            }
            _ => "nothing".into(),
        };
        self.steps.push(what);
        self.after_step();
    }

    fn after_step(&mut self) {
        self.check_always();
    }
}

/// Read a whole store back through ffsession: each whole snapshot's JSON
/// (by file), each damaged-when-taken one (file, mtime).
fn observe_store(dir: &Path) -> Observed {
    let Ok(store) = Store::open_read_only(dir) else {
        return Observed::default();
    };
    let mut seen = Observed::default();
    for s in store.snapshots().unwrap() {
        match &s.status {
            SnapshotStatus::Ok => {
                if let Ok(json) = store.read_json(s.id) {
                    *seen
                        .whole
                        .entry((s.file_name.clone(), json.clone(), s.taken_at_ms))
                        .or_default() += 1;
                    seen.contents.insert(json);
                }
            }
            SnapshotStatus::Corrupt { .. } => {
                let key = (s.file_name.clone(), s.mtime_ms.unwrap_or(0), s.taken_at_ms);
                *seen.damaged.entry(key).or_default() += 1;
            }
        }
    }
    seen
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            collect_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The test hook is one per process: lives run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Live `steps` steps from `seed`; on a failure, print the seed and the
/// steps and fail.
fn live(seed: u64, steps: usize) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut life = Life::new(seed);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for _ in 0..steps {
            life.step();
        }
    }));
    set_test_hook(None);
    if let Err(e) = outcome {
        let days = (life.now - START) / DAY;
        eprintln!(
            "life of seed {seed} failed at step {} (day {days}); replay with FFSESSION_LIFE_SEED={seed}\nsteps:",
            life.steps.len()
        );
        for (i, s) in life
            .steps
            .iter()
            .enumerate()
            .skip(life.steps.len().saturating_sub(40))
        {
            eprintln!("  {i}: {s}");
        }
        std::panic::resume_unwind(e);
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn lives_of_fixed_seeds() {
    if let Some(seed) = env_u64("FFSESSION_LIFE_SEED") {
        return live(
            seed,
            env_u64("FFSESSION_LIFE_STEPS").unwrap_or(400) as usize,
        );
    }
    // A shorter life under Wine, where every step is slower: the logic is
    // the same on every platform.
    let (seeds, steps) = if cfg!(windows) { (1, 150) } else { (5, 300) };
    for seed in 1..=seeds {
        live(seed, steps);
    }
}

#[test]
#[ignore = "the long run: many seeds (FFSESSION_LIFE_LIVES, FFSESSION_LIFE_STEPS)"]
fn lives_of_many_seeds() {
    let lives = env_u64("FFSESSION_LIFE_LIVES").unwrap_or(250);
    let steps = env_u64("FFSESSION_LIFE_STEPS").unwrap_or(400) as usize;
    let first = env_u64("FFSESSION_LIFE_FIRST").unwrap_or(1000);
    for seed in first..first + lives {
        live(seed, steps);
    }
    eprintln!(
        "{} lives of {steps} steps: {} steps",
        lives,
        lives * steps as u64
    );
}

/// One operation in a child process, for a kill at an exact point
/// (`FFSESSION_LIFE_CHILD`; run by `Life::backup_killed`, nothing otherwise).
#[test]
fn life_child() {
    if std::env::var("FFSESSION_LIFE_CHILD").as_deref() != Ok("backup") {
        return;
    }
    let var = |n: &str| std::env::var(n).unwrap();
    let mut store = Store::create_or_open(var("FFSESSION_LIFE_STORE")).unwrap();
    set_test_hook(Some(TestHook {
        kill_after_commits: Some(var("FFSESSION_LIFE_KILL_AFTER").parse().unwrap()),
        ..TestHook::default()
    }));
    let now: u64 = var("FFSESSION_LIFE_NOW").parse().unwrap();
    let report = backup_profile(
        &mut store,
        PROFILE,
        Path::new(&var("FFSESSION_LIFE_PROFILE")),
        now,
    )
    .unwrap();
    set_test_hook(None);
    for s in report.snapshots {
        println!("STORED {}", s.id);
    }
    println!("CHILD DONE");
}
