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

#[path = "life/firefox.rs"]
mod firefox;
#[path = "life/model.rs"]
mod model;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use ffsession::backup::backup_profile;
use ffsession::fs_util::{set_test_hook, TestHook};
use ffsession::remote::{
    copy_to_remote, open_backend, prune_remote, sync_from_remote, KeyParams, Location, Remote,
    RemoteOptions, RemoteSnapshot,
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
        }
    }

    fn remote_dir(&self) -> PathBuf {
        self.root.path().join("remote")
    }

    /// The remote, in a local folder (the same code as every backend above
    /// the backend trait).
    fn open_remote(&self) -> Remote {
        let backend = open_backend(
            &Location::Folder(self.remote_dir()),
            &RemoteOptions::default(),
        )
        .unwrap();
        Remote::open_or_create(backend, "sim", KeyParams { log_n: Some(4) }, "laptop")
            .unwrap()
            .0
    }

    /// What the remote holds, read back through a new machine's copy.
    fn observe_remote(&self) -> Observed {
        let cache = tempfile::tempdir().unwrap();
        let mut store = Store::create_or_open(cache.path().join("store")).unwrap();
        let report = sync_from_remote(&self.open_remote(), &mut store, &mut |_| {}).unwrap();
        assert!(
            report.damaged.is_empty(),
            "the remote does not read: {report:?}"
        );
        drop(store);
        observe_store(&cache.path().join("store"))
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

    /// A backup on a disk that fills up after `budget` bytes: all or nothing.
    fn backup_on_full_disk(&mut self, budget: u64) {
        let before = self.observe();
        let mut store = self.store();
        set_test_hook(Some(TestHook {
            fail_after_bytes: Some(budget),
            ..TestHook::default()
        }));
        let result = backup_profile(&mut store, PROFILE, &self.ff.dir, self.now);
        set_test_hook(None);
        drop(store);
        match result {
            Ok(report) => self.add_entries(&report.snapshots),
            Err(_) => {
                let after = self.observe();
                assert_eq!(
                    (before.whole, before.damaged),
                    (after.whole, after.damaged),
                    "promise 6: a backup that failed on a full disk changed what the store holds"
                );
            }
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

    /// `tidy` (tabs not seen for some days closed): the closed tabs stay
    /// found and restorable (promise 4), the session written is the source
    /// less those tabs, of the tidy's time.
    fn tidy(&mut self) {
        if self.ff.running {
            return;
        }
        let Ok(current) = tidy::load_current(&self.ff.dir) else {
            return;
        };
        let session = Editable::new(&current.data).unwrap();
        let days = self.rng.u64(1..40);
        let rules = TidyRules {
            archive_older_than_ms: Some(days * DAY),
            ..TidyRules::default()
        };
        let Ok(plan) = tidy::plan(&session, &rules, self.now, false) else {
            return;
        };
        if plan.is_noop() {
            return;
        }
        let source = current
            .source
            .path
            .strip_prefix(&self.ff.dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let Some(Written::Session { json: holder, .. }) = self.ff.files.get(&source).cloned()
        else {
            panic!("tidy read {source}, which the simulator did not write whole");
        };
        let contents = self.whole_files();
        let mut store = self.store();
        let report = tidy::apply(
            &plan,
            &session,
            current.data.json(),
            &mut store,
            PROFILE,
            &self.ff.dir,
            self.now,
        )
        .unwrap();
        drop(store);
        // Every file of the profile was stored first: the undo point.
        let files: Vec<String> = self.ff.files.keys().cloned().collect();
        for name in files {
            let (json, session_ms) = match self.ff.files[&name].clone() {
                Written::Session { json, last_update } => (Some(json), last_update),
                Written::Damaged { mtime } => (None, mtime),
            };
            self.model.entries.push(Entry {
                file: name.clone(),
                json,
                session_ms,
                role: firefox::role(&name),
                stored_at: self.now,
            });
        }
        assert_eq!(report.archived, plan.closed.len());
        for c in &plan.closed {
            self.model.archived.push(Archived {
                url: c.url.clone(),
                holder: holder.clone(),
            });
        }
        self.model.undo.push(Undo {
            made_at: self.now,
            contents,
            restored: None,
        });
        let written = self
            .ff
            .rescan_after_restore()
            .expect("tidy wrote a session");
        let closed: BTreeSet<u64> = plan
            .closed
            .iter()
            .map(|c| c.url.rsplit('/').next().unwrap().parse().unwrap())
            .collect();
        let want: Vec<u64> = firefox::tabs_of(&holder)
            .into_iter()
            .map(|t| t.0)
            .filter(|t| !closed.contains(t))
            .collect();
        let got: Vec<u64> = firefox::tabs_of(&written)
            .into_iter()
            .map(|t| t.0)
            .collect();
        assert_eq!(
            got, want,
            "the tidied session is not its source less the closed tabs"
        );
        assert_eq!(firefox::last_update_of(&written), Some(self.now));
    }

    /// The whole session files of the profile now.
    fn whole_files(&self) -> Vec<Vec<u8>> {
        self.ff
            .files
            .values()
            .filter_map(|w| match w {
                Written::Session { json, .. } => Some(json.clone()),
                Written::Damaged { .. } => None,
            })
            .collect()
    }

    /// `copy --to` the remote: it then holds everything the store holds.
    fn copy(&mut self) {
        if !self.store_dir.exists() {
            return;
        }
        let store = Store::open_read_only(&self.store_dir).unwrap();
        let report = copy_to_remote(
            &store,
            &self.open_remote(),
            "laptop",
            &Default::default(),
            self.now,
            &mut |_| {},
        )
        .unwrap();
        assert!(report.skipped.is_empty(), "{report:?}");
        drop(store);
        // The remote holds what the store holds (a copy adds; the remote's
        // own prunes remove).
        let mut have = self.remote.entries.clone();
        for e in &self.model.entries {
            let n_local = self.model.entries.iter().filter(|x| *x == e).count();
            let n_remote = have.iter().filter(|x| *x == e).count();
            if n_remote < n_local {
                have.push(e.clone());
            }
        }
        self.remote.entries = have;
        self.copied_at = Some(self.now);
    }

    /// `prune --store REMOTE`: planned on a local copy of the remote, as the
    /// command does, then carried out on the remote.
    fn remote_prune(&mut self, policy: RetentionPolicy) {
        if self.copied_at.is_none() {
            return;
        }
        let before = self.observe_remote();
        let remote = self.open_remote();
        let cache = tempfile::tempdir().unwrap();
        let mut store = Store::create_or_open(cache.path().join("store")).unwrap();
        sync_from_remote(&remote, &mut store, &mut |_| {}).unwrap();
        let (snapshots, plan) =
            prune::plan_store(&store, &policy, &TimeZone::UTC, self.now).unwrap();
        let names: Vec<String> = plan
            .removed()
            .filter_map(|id| snapshots.iter().find(|s| s.id.0 == id))
            .map(|s| RemoteSnapshot::of(s, "").name_for(&remote))
            .collect();
        prune_remote(&remote, &names, "laptop", self.now).unwrap();
        drop(store);
        let seen = self.observe_remote();
        for (why, json) in self.remote.required_after_prune(&policy, &before.contents) {
            assert!(
                seen.contents.contains(&json),
                "promise 1 on the remote: the {why} session (lastUpdate {:?}) was pruned",
                firefox::last_update_of(&json)
            );
        }
        self.remote.reconcile(&seen);
    }

    /// Promises 3, 4 and 6 on the remote: what was copied (and not pruned
    /// there) is there, with the undo points inside their time and the
    /// sessions holding archived tabs.
    fn check_remote(&self) {
        let Some(copied_at) = self.copied_at else {
            return;
        };
        let seen = self.observe_remote();
        let missing = self.remote.missing(&seen);
        assert!(
            missing.is_empty(),
            "promise 6 on the remote: copied and gone: {missing:?}"
        );
        for (i, u) in self.model.undo.iter().enumerate() {
            if u.made_at > copied_at || self.model.undo_kept_until(i) <= self.now {
                continue;
            }
            for json in u.contents.iter().chain(u.restored.iter()) {
                assert!(
                    seen.contents.contains(json),
                    "promise 3 on the remote: the undo point of {} lost a session",
                    u.made_at
                );
            }
        }
        for a in &self.model.archived {
            if seen.contents.is_empty() {
                break;
            }
            assert!(
                seen.contents.contains(&a.holder)
                    || !self
                        .remote
                        .entries
                        .iter()
                        .any(|e| e.json.as_ref() == Some(&a.holder)),
                "promise 4 on the remote: the session holding archived {} is gone",
                a.url
            );
        }
    }

    /// Bring archived tabs back as a person does: `extract --archived` from
    /// the snapshot holding them, `merge` with the current session, `restore
    /// merged.jsonlz4`. Firefox then reopens the current tabs and them.
    fn bring_back_archived(&mut self) {
        if self.ff.running || self.model.archived.is_empty() {
            return;
        }
        let a = self.model.archived[self.rng.usize(0..self.model.archived.len())].clone();
        let mut store = self.store();
        let marks: Vec<_> = store
            .archived_tabs()
            .unwrap()
            .into_iter()
            .filter(|t| t.url == a.url)
            .collect();
        let holder = marks.last().expect("an archived tab has its mark").snapshot;
        let tabs = store.archived_in(holder).unwrap();
        let data =
            SessionData::from_bytes("holder.json", store.read_json(holder).unwrap()).unwrap();
        let extracted =
            tidy::extract(&Editable::new(&data).unwrap(), &Selection::Archived(&tabs)).unwrap();
        let Ok(current) = tidy::load_current(&self.ff.dir) else {
            return;
        };
        let extracted = SessionData::from_bytes("extracted.json", extracted.json).unwrap();
        let merged = tidy::merge(
            &[
                Editable::new(&current.data).unwrap(),
                Editable::new(&extracted).unwrap(),
            ],
            true,
            Some(self.now),
        )
        .unwrap();
        let file = self.scratch.path().join("merged.jsonlz4");
        fs::write(&file, ffsession::format::compress(&merged.json).unwrap()).unwrap();
        let contents = self.whole_files();
        let info = restore::import(&mut store, &file, self.now).unwrap();
        assert_eq!(store.read_json(info.id).unwrap(), merged.json);
        self.model.entries.push(Entry {
            file: info.file_name.clone(),
            json: Some(merged.json.clone()),
            session_ms: self.now,
            role: firefox::role(&info.file_name),
            stored_at: self.now,
        });
        let plan = restore::plan(&store, info.id, &self.ff.dir).unwrap();
        let report = restore::execute(&plan, &mut store, None, PROFILE, self.now).unwrap();
        self.add_entries(&report.undo);
        drop(store);
        let written = self.ff.rescan_after_restore();
        assert!(
            written.as_ref() == Some(&merged.json),
            "the merged session was not restored"
        );
        let back: Vec<u64> = firefox::tabs_of(&merged.json)
            .into_iter()
            .map(|t| t.0)
            .collect();
        let id: u64 = a.url.rsplit('/').next().unwrap().parse().unwrap();
        assert!(back.contains(&id), "{} is not back", a.url);
        self.model.undo.push(Undo {
            made_at: self.now,
            contents,
            restored: Some(merged.json),
        });
    }

    /// A backup killed (SIGKILL) right after its `kill_after`-th file write,
    /// in a child process: whatever it did not report is not stored as far
    /// as the model knows, and nothing stored before is lost (promise 6).
    fn backup_killed(&mut self, kill_after: u64) {
        // The test hook kills with SIGKILL on Unix only.
        if cfg!(not(unix)) {
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["life_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("FFSESSION_LIFE_CHILD", "backup")
            .env("FFSESSION_LIFE_STORE", &self.store_dir)
            .env("FFSESSION_LIFE_PROFILE", &self.ff.dir)
            .env("FFSESSION_LIFE_NOW", self.now.to_string())
            .env("FFSESSION_LIFE_KILL_AFTER", kill_after.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !stdout.contains("CHILD DONE") {
            #[cfg(unix)]
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&out.status),
                Some(9),
                "the child neither finished nor was killed: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let store = Store::open_read_only(&self.store_dir).unwrap();
        let taken: Vec<_> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("STORED "))
            .map(|id| {
                store
                    .snapshot(ffsession::store::SnapshotId(id.trim().parse().unwrap()))
                    .unwrap()
            })
            .collect();
        drop(store);
        self.add_entries(&taken);
    }

    /// `check`: with no damage left behind, the store is whole.
    fn check(&mut self) {
        if !self.store_dir.exists() {
            return;
        }
        let report = ffsession::store::check_store(&self.store_dir, &mut |_, _| {}).unwrap();
        assert!(
            report.is_whole(),
            "check finds damage nobody made: {report:?}"
        );
    }

    /// A flipped byte in a stored chunk: `check` must name it; then the
    /// byte is put back.
    fn flip_and_check(&mut self) {
        let mut chunks = Vec::new();
        collect_files(&self.store_dir.join("chunks"), &mut chunks);
        if chunks.is_empty() {
            return;
        }
        let path = &chunks[self.rng.usize(0..chunks.len())];
        let mut bytes = fs::read(path).unwrap();
        let original = zstd::decode_all(&bytes[..]).ok();
        let at = self.rng.usize(0..bytes.len());
        let bit = 1u8 << self.rng.u32(0..8);
        bytes[at] ^= bit;
        fs::write(path, &bytes).unwrap();
        // Some bits of a zstd frame change nothing it decodes to.
        let harmless = original.is_some() && zstd::decode_all(&bytes[..]).ok() == original;
        let report = ffsession::store::check_store(&self.store_dir, &mut |_, _| {}).unwrap();
        // A chunk no snapshot uses (a full disk left it) is only listed.
        assert!(
            !report.is_whole() || report.orphan_chunks.contains(path) || harmless,
            "promise 6: check found nothing wrong after a flipped bit ({bit:#x} at byte {at} of {}) in {}: {report:?}",
            bytes.len(),
            path.display()
        );
        bytes[at] ^= bit;
        fs::write(path, &bytes).unwrap();
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
                || [".parentlock", "prefs.js", "lock"].contains(&name.as_str());
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
