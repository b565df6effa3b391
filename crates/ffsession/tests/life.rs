//! A year of use, simulated (issues 36 and 44): a seeded random walk over
//! fake clocks (minutes to weeks between steps) drives one to three
//! machines sharing one remote, each with its Firefox profile, written as
//! Firefox writes it (`life/firefox.rs`: recovery rotation, a clean quit,
//! `previous.jsonlz4` at the next start, upgrade copies, crashes that cut a
//! file or overwrite its header, tabs that come and go, history cleared),
//! its store and its own clock (hours ahead or behind, jumping back), and
//! some lives give every machine the same host name. ffsession's library
//! does what people do: `backup` (with `--prune` under random policies),
//! `watch` cycles, `prune`, `restore latest` and by id, `tidy`, bringing
//! archived tabs back, `copy --to` the shared folder remote, its prune,
//! `check`, a new machine's restore from it; one machine's copy is paused
//! mid-way while another prunes, checks or restores (and, as a laptop that
//! slept past its lock's time, while another prunes with no margin). Faults:
//! a full disk during a backup, a backup, restore, copy or remote prune
//! killed (SIGKILL, in a child process) after a random write, a flipped bit
//! in a stored chunk. After every step it checks the promises against a
//! model that shares no code with ffsession (`life/model.rs`):
//!
//! 1. every period a prune's policy promises keeps its newest session, on
//!    the store and on the remote, for each machine on its own;
//! 2. `restore latest` gives the newest whole session (a restore counts as
//!    a session of its time), and names a newer damaged file;
//! 3. every undo point inside its promised time is restorable, locally and
//!    on the remote after a copy;
//! 4. every archived tab is marked, found by search, and its session
//!    restorable, locally and on the remote;
//! 5. nothing is written outside the store, the profile and the remote;
//! 6. nothing reported stored is lost (a full disk or a kill stores all or
//!    nothing of a backup), and `check` names a flipped bit;
//! 7. a copy that returned success left every snapshot it sent restorable
//!    by a machine that never saw the remote, whatever ran meanwhile; a new
//!    machine's `check` of the remote finds no damage.
//!
//! Every kind of step is counted (`life/picker.rs`); a run prints the
//! table and fails if a kind never ran. A failure prints its seed and its
//! last steps; `FFSESSION_LIFE_SEED=N` replays one life
//! (`FFSESSION_LIFE_STEPS` steps). CI runs the fixed seeds of
//! `lives_of_fixed_seeds`; `cargo test -p ffsession --test life --
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
#[path = "life/picker.rs"]
mod picker;
#[path = "life/remote.rs"]
mod remote;
#[path = "life/world.rs"]
mod world;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use ffsession::backup::backup_profile;
use ffsession::fs_util::{set_test_hook, TestHook};
use ffsession::machine::Machine;
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

/// One machine's life: its Firefox, its store, its clock, and what the
/// model knows it stored (locally, and on the shared remote).
struct Life {
    rng: fastrand::Rng,
    root: tempfile::TempDir,
    ff: Firefox,
    store_dir: PathBuf,
    /// This machine's clock: the world's time plus `offset` (set by the
    /// world before each step).
    now: u64,
    offset: i64,
    model: Model,
    /// What the remote must hold of this machine's: the entries it copied
    /// (reconciled after prunes), and when its last copy was made.
    remote: Model,
    copied_at: Option<u64>,
    /// The simulator's own files (a merged session to restore), outside
    /// the folders ffsession may write.
    scratch: tempfile::TempDir,
    machine: Machine,
    /// The shared remote (a folder; over SFTP in the long mode's
    /// `FFSESSION_LIFE_SFTP`).
    remote_loc: Location,
    /// Every session any file of the profile ever held (Firefox's writes,
    /// and what ffsession wrote there): what a restore may give.
    ever: BTreeSet<Vec<u8>>,
    /// Every entry the store ever held after a step (what a copy may have
    /// sent), never reconciled away.
    ever_stored: Vec<Entry>,
}

impl Life {
    fn new(seed: u64, machine: Machine, remote_loc: Location, first_tab: u64, offset: i64) -> Life {
        let root = tmp().unwrap();
        let ff = Firefox::new(&root.path().join("profile"), first_tab);
        let store_dir = root.path().join("store");
        Life {
            rng: fastrand::Rng::with_seed(seed),
            root,
            ff,
            store_dir,
            now: START,
            offset,
            model: Model::default(),
            remote: Model::default(),
            copied_at: None,
            scratch: tmp().unwrap(),
            machine,
            remote_loc,
            ever: BTreeSet::new(),
            ever_stored: Vec::new(),
        }
    }

    fn store(&self) -> Store {
        Store::create_or_open(&self.store_dir).unwrap()
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
    fn restore(&mut self, latest: bool) -> bool {
        if self.ff.running || !self.store_dir.exists() {
            return false;
        }
        let mut store = self.store();
        let seen = self.observe();
        let id = if latest {
            let Ok((chosen, _)) = restore::latest(&store) else {
                assert!(
                    self.model.expected_latest(&seen.contents).is_none(),
                    "promise 2: restore latest found nothing"
                );
                return true;
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
            let Some(id) = self.random_whole_snapshot(&store) else {
                return false;
            };
            id
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
        self.push_undo(contents, Some(want));
        true
    }

    /// Promises that hold after every step.
    fn check_always(&mut self) {
        for w in self.ff.files.values() {
            if let Written::Session { json, .. } = w {
                self.ever.insert(json.clone());
            }
        }
        for e in &self.model.entries {
            let have = self.ever_stored.iter().filter(|x| *x == e).count();
            let now = self.model.entries.iter().filter(|x| *x == e).count();
            if have < now {
                self.ever_stored.push(e.clone());
            }
        }
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
        top.retain(|n| n != "store");
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
}

/// A temporary folder, in memory where the system has a tmpfs
/// (`/dev/shm`): the simulator's stores fsync at every write, and a disk's
/// fsyncs would be most of its time. (The order of writes and fsyncs is the
/// CLI's fsync-order test's.)
fn tmp() -> std::io::Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if cfg!(target_os = "linux") && shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new().prefix("ffs-life-").tempdir_in(shm) {
            return Ok(dir);
        }
    }
    tempfile::tempdir()
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
/// steps and fail. Returns how often each kind of step ran.
fn live(seed: u64, steps: usize) -> picker::Counts {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut world = world::World::new(seed);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for _ in 0..steps {
            world.step();
        }
    }));
    set_test_hook(None);
    if let Err(e) = outcome {
        let days = world.now.saturating_sub(START) / DAY;
        eprintln!(
            "life of seed {seed} failed at step {} (day {days}); replay with FFSESSION_LIFE_SEED={seed}\n{}\nsteps:",
            world.steps.len(),
            world.describe()
        );
        for (i, s) in
            world
                .steps
                .iter()
                .enumerate()
                .skip(if std::env::var_os("LIFE_DEBUG").is_some() {
                    0
                } else {
                    world.steps.len().saturating_sub(40)
                })
        {
            eprintln!("  {i}: {s}");
        }
        std::panic::resume_unwind(e);
    }
    std::mem::take(&mut world.counts)
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Print the table of what ran, and fail if a kind of step or of life
/// never did.
fn report(counts: &picker::Counts, what: &str) {
    eprintln!("{what}: what ran\n{}", counts.table());
    let zeros = counts.zeros();
    assert!(
        zeros.is_empty(),
        "{what}: these kinds never ran: {zeros:?}\n{}",
        counts.table()
    );
}

#[test]
fn lives_of_fixed_seeds() {
    if let Some(seed) = env_u64("FFSESSION_LIFE_SEED") {
        let counts = live(
            seed,
            env_u64("FFSESSION_LIFE_STEPS").unwrap_or(400) as usize,
        );
        eprintln!("seed {seed}: what ran\n{}", counts.table());
        return;
    }
    // Fewer steps under Wine, where every step is slower: the logic is the
    // same on every platform (and the kills, in child processes, are Unix
    // only).
    let (seeds, steps) = if cfg!(windows) { (2, 120) } else { (6, 260) };
    let mut counts = picker::Counts::default();
    for seed in 1..=seeds {
        counts.add(&live(seed, steps));
    }
    if cfg!(unix) {
        report(&counts, &format!("{seeds} lives of {steps} steps"));
    }
}

#[test]
#[ignore = "the long run: many seeds (FFSESSION_LIFE_LIVES, FFSESSION_LIFE_STEPS)"]
fn lives_of_many_seeds() {
    let lives = env_u64("FFSESSION_LIFE_LIVES").unwrap_or(250);
    let steps = env_u64("FFSESSION_LIFE_STEPS").unwrap_or(400) as usize;
    let first = env_u64("FFSESSION_LIFE_FIRST").unwrap_or(1000);
    let mut counts = picker::Counts::default();
    for seed in first..first + lives {
        counts.add(&live(seed, steps));
    }
    report(
        &counts,
        &format!(
            "seeds {first}..{}: {lives} lives of {steps} steps, {} steps",
            first + lives - 1,
            lives * steps as u64
        ),
    );
}

/// One operation in a child process, for a kill at an exact point
/// (`FFSESSION_LIFE_CHILD`: `backup`, `restore`, `copy` or `prune`; run by
/// the kill steps of `life/faults.rs` and `life/remote.rs`, nothing
/// otherwise). Store writes (commits) count for backup and restore, remote
/// writes and removals for copy and prune.
#[test]
fn life_child() {
    let Ok(what) = std::env::var("FFSESSION_LIFE_CHILD") else {
        return;
    };
    let var = |n: &str| std::env::var(n).unwrap();
    let num = |n: &str| -> u64 { var(n).parse().unwrap() };
    let now = num("FFSESSION_LIFE_NOW");
    let kill_after = num("FFSESSION_LIFE_KILL_AFTER");
    let store_dir = PathBuf::from(var("FFSESSION_LIFE_STORE"));
    let remote = || {
        let backend = open_backend(
            &Location::parse(&var("FFSESSION_LIFE_REMOTE")).unwrap(),
            &RemoteOptions::default(),
        )
        .unwrap();
        Remote::open(backend, remote::PASSWORD).unwrap()
    };
    let machine = || Machine {
        id: var("FFSESSION_LIFE_MACHINE_ID"),
        label: var("FFSESSION_LIFE_MACHINE_LABEL"),
    };
    let store_hook = || {
        set_test_hook(Some(TestHook {
            kill_after_commits: Some(kill_after),
            ..TestHook::default()
        }))
    };
    match what.as_str() {
        "backup" => {
            let mut store = Store::create_or_open(&store_dir).unwrap();
            store_hook();
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
        }
        "restore" => {
            let mut store = Store::create_or_open(&store_dir).unwrap();
            let id = ffsession::store::SnapshotId(num("FFSESSION_LIFE_SNAPSHOT") as i64);
            let profile = PathBuf::from(var("FFSESSION_LIFE_PROFILE"));
            let plan = restore::plan(&store, id, &profile).unwrap();
            store_hook();
            let report = restore::execute(&plan, &mut store, None, PROFILE, now).unwrap();
            set_test_hook(None);
            for s in report.undo {
                println!("STORED {}", s.id);
            }
        }
        "copy" => {
            let store = Store::open_read_only(&store_dir).unwrap();
            let remote = remote();
            ffsession::remote::set_test_hook(Some(kill_after), 0);
            let r = copy_to_remote(
                &store,
                &remote,
                &machine(),
                &Default::default(),
                now,
                &mut |_| {},
            );
            ffsession::remote::set_test_hook(None, 0);
            match r {
                Ok(_) => println!("COPY OK"),
                Err(e) => println!("COPY FAILED: {e:?}"),
            }
        }
        "prune" => {
            let remote = remote();
            let names: Vec<String> = fs::read_to_string(var("FFSESSION_LIFE_NAMES"))
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect();
            let options = PruneOptions {
                keep_unused_ms: num("FFSESSION_LIFE_KEEP_UNUSED"),
            };
            let Ok(mut lock) = remote.lock(true, &machine(), now) else {
                println!("LOCKED");
                println!("CHILD DONE");
                return;
            };
            ffsession::remote::set_test_hook(Some(kill_after), 0);
            prune_remote(&mut lock, &names, options).unwrap();
            drop(lock);
            ffsession::remote::set_test_hook(None, 0);
        }
        other => panic!("no such child: {other}"),
    }
    println!("CHILD DONE");
}
