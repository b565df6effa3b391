//! The simulator's remote, shared by every machine of the world: copies to
//! it (one paused mid-way while another machine prunes, checks or
//! restores), its prune (planned on a new machine's copy at the world's
//! time, as the command plans at the server's), kills of both, and the
//! promises checked on a machine that never saw it.

use std::io::Write as _;

use ffsession::remote::{check_remote, CopyProgress, RemoteError};

use super::world::{random_policy, Meanwhile, World};
use super::*;

/// The password of the simulated remote.
pub const PASSWORD: &str = "sim";

impl Life {
    /// What the remote holds of this machine's (`seen`), learnt: a copy that
    /// died or failed may have sent snapshots whole before it stopped, and
    /// they count for the retention there.
    pub(crate) fn learn_sent(&mut self, seen: &Observed) {
        let mut whole = seen.whole.clone();
        let mut damaged = seen.damaged.clone();
        for e in &self.remote.entries {
            let slot = match &e.json {
                Some(j) => whole.get_mut(&(e.file.clone(), j.clone(), e.stored_at)),
                None => damaged.get_mut(&(e.file.clone(), e.session_ms, e.stored_at)),
            };
            if let Some(n) = slot {
                *n = n.saturating_sub(1);
            }
        }
        for e in &self.ever_stored {
            let slot = match &e.json {
                Some(j) => whole.get_mut(&(e.file.clone(), j.clone(), e.stored_at)),
                None => damaged.get_mut(&(e.file.clone(), e.session_ms, e.stored_at)),
            };
            if let Some(n) = slot.filter(|n| **n > 0) {
                *n -= 1;
                self.remote.entries.push(e.clone());
            }
        }
    }

    /// The remote, in the shared folder (the same code as every backend
    /// above the backend trait).
    pub(crate) fn open_remote(&self) -> Remote {
        open_shared(&self.remote_loc)
    }
}

fn open_shared(loc: &Location) -> Remote {
    let backend = open_backend(loc, &RemoteOptions::default()).unwrap();
    Remote::open_or_create(backend, PASSWORD, KeyParams { log_n: Some(4) }, "sim")
        .unwrap()
        .0
}

/// Set the server's time of every lock on the remote to two hours ago: a
/// copy asleep that long.
fn age_locks(remote_dir: &Path) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 3600);
    let mut files = Vec::new();
    collect_files(&remote_dir.join("locks"), &mut files);
    for f in files {
        if let Ok(file) = fs::File::options().write(true).open(&f) {
            let _ = file.set_modified(when);
        }
    }
}

impl World {
    /// The remote's folder on this machine's disk (the folder itself, or
    /// the SFTP server's).
    fn remote_dir(&self) -> PathBuf {
        self.remote_disk.clone()
    }

    fn remote_exists(&self) -> bool {
        self.remote_dir().join("keys").exists()
    }

    /// What the remote holds, read through a new machine's copy: no object
    /// may be damaged or missing.
    pub(crate) fn observe_remote(&self) -> Observed {
        let t0 = std::time::Instant::now();
        let _t = Timer(t0);
        let cache = tmp().unwrap();
        let mut store = Store::create_or_open(cache.path().join("store")).unwrap();
        let report =
            sync_from_remote(&open_shared(&self.remote_loc), &mut store, &mut |_| {}).unwrap();
        assert!(
            report.damaged.is_empty() && report.unreadable.is_empty(),
            "promise 7: a new machine finds the remote damaged: {report:?}"
        );
        drop(store);
        observe_store(&cache.path().join("store"))
    }

    /// A new machine's `check --read-data` of the remote finds no damage.
    fn assert_remote_whole(&self) {
        let r = check_remote(&open_shared(&self.remote_loc), true, &mut |_| {}).unwrap();
        assert!(
            r.is_clean() && r.is_complete(),
            "promise 7: a new machine's check of the remote finds damage: {r:?}"
        );
    }

    /// Promises 3, 4, 6 and 7 on the remote, for every machine: what each
    /// copied (and no prune removed) is there and reads, with the undo
    /// points inside their time (at the world's time, as a remote prune
    /// judges them) and the sessions holding archived tabs.
    pub(crate) fn check_remote(&self) {
        if !self.remote_exists() {
            return;
        }
        let seen = self.observe_remote();
        for (i, l) in self.lives.iter().enumerate() {
            let Some(copied_at) = l.copied_at else {
                continue;
            };
            let missing = l.remote.missing(&seen);
            assert!(
                missing.is_empty(),
                "promise 7: machine {i} copied and the remote lost: {missing:?}"
            );
            for (u_i, u) in l.model.undo.iter().enumerate() {
                if u.made_at > copied_at || l.model.undo_kept_until(u_i) <= self.now {
                    continue;
                }
                for json in u.contents.iter().chain(u.restored.iter()) {
                    if !seen.contents.contains(json) && std::env::var_os("LIFE_DEBUG").is_some() {
                        let cache = tmp().unwrap();
                        let mut st = Store::create_or_open(cache.path().join("s")).unwrap();
                        sync_from_remote(&open_shared(&self.remote_loc), &mut st, &mut |_| {})
                            .unwrap();
                        eprintln!(
                            "world now {}; machine {i} copied_at {copied_at}; kept until {}",
                            self.now,
                            l.model.undo_kept_until(u_i)
                        );
                        eprintln!(
                            "model undo points of machine {i}: {:?}",
                            l.model
                                .undo
                                .iter()
                                .map(|u| (
                                    u.made_at,
                                    u.contents
                                        .iter()
                                        .map(|j| firefox::last_update_of(j))
                                        .collect::<Vec<_>>(),
                                    u.restored.as_ref().map(|j| firefox::last_update_of(j))
                                ))
                                .collect::<Vec<_>>()
                        );
                        let o = st.origins().unwrap();
                        eprintln!(
                            "remote undo points: {:?}",
                            st.undo_points()
                                .unwrap()
                                .iter()
                                .map(|p| (
                                    p.made_at_ms,
                                    p.snapshots
                                        .iter()
                                        .map(|id| (id.0, o.get(id).map(|o| o.host.clone())))
                                        .collect::<Vec<_>>(),
                                    p.restored
                                ))
                                .collect::<Vec<_>>()
                        );
                        eprintln!("missing lastUpdate {:?}", firefox::last_update_of(json));
                    }
                    assert!(
                        seen.contents.contains(json),
                        "promise 3 on the remote: machine {i}'s undo point of {} lost a session",
                        u.made_at
                    );
                }
            }
            for a in &l.model.archived {
                assert!(
                    seen.contents.contains(&a.holder)
                        || !l
                            .remote
                            .entries
                            .iter()
                            .any(|e| e.json.as_ref() == Some(&a.holder)),
                    "promise 4 on the remote: the session holding archived {} is gone",
                    a.url
                );
            }
        }
    }

    /// `copy --to` the remote from machine `m`; with `meanwhile`, another
    /// machine acts once the copy has sent a random number of objects.
    pub(crate) fn copy(
        &mut self,
        m: usize,
        meanwhile: Option<(usize, Meanwhile)>,
    ) -> Option<String> {
        let l = &self.lives[m];
        if !l.store_dir.exists() {
            return None;
        }
        // What the remote holds of each machine's own before the copy (a
        // copy that slept while a prune ran sent again some of what it
        // found there, beyond the model): what this copy finds there, it
        // does not send.
        if self.remote_exists() {
            let seen = self.observe_remote();
            self.learn_sent(&seen);
        }
        let l = &self.lives[m];
        let before = l.remote.entries.clone();
        let store = Store::open_read_only(&l.store_dir).unwrap();
        let remote = l.open_remote();
        let machine = l.machine.clone();
        let now = l.now;
        let at = self.rng.u64(1..30);
        let mut sent = 0u64;
        let mut what = String::new();
        let mut pruned_meanwhile = false;
        let result = copy_to_remote(
            &store,
            &remote,
            &machine,
            &Default::default(),
            now,
            &mut |p| {
                let CopyProgress::Sent { .. } = p else { return };
                sent += 1;
                let Some((b, kind)) = meanwhile.filter(|_| sent == at) else {
                    return;
                };
                what = format!("after {at} objects, machine {b}: {kind:?}");
                // On a thread of its own: the copy is inside its backend's
                // runtime here (SFTP), where another cannot start.
                let world = &mut *self;
                let pruned = &mut pruned_meanwhile;
                std::thread::scope(|scope| {
                    let done = scope.spawn(move || world.meanwhile(m, b, kind, pruned));
                    if let Err(e) = done.join() {
                        std::panic::resume_unwind(e);
                    }
                });
            },
        );
        drop(store);
        if meanwhile.is_some() && sent < at {
            what = format!("done after {sent} objects, before the other acted");
        }
        if std::env::var_os("LIFE_DEBUG").is_some() {
            eprintln!("copy from {m}: {what}; {result:?}");
        }
        match result {
            Ok(report) => {
                assert!(report.skipped.is_empty(), "{report:?}");
                if report.resent > 0 {
                    self.counts
                        .outcome("a copy sent again what a prune removed meanwhile");
                }
                self.dead_locks.remove(&m);
                self.copied(m, &before);
            }
            Err(e @ (RemoteError::Locked { .. } | RemoteError::Incomplete { .. }))
                if pruned_meanwhile =>
            {
                self.counts
                    .outcome("a copy failed, saying so: a prune ran while it slept");
                what.push_str(&format!("; the copy failed: {e}"));
            }
            Err(RemoteError::Locked { .. }) if self.others_dead_locks(m) => {
                what.push_str("; refused: a killed prune's lock");
            }
            Err(e) => panic!("copy from machine {m} failed: {e}"),
        }
        self.check_remote();
        Some(what)
    }

    /// What machine `b` does while machine `m`'s copy is paused.
    fn meanwhile(&mut self, m: usize, b: usize, kind: Meanwhile, pruned: &mut bool) {
        match kind {
            Meanwhile::Prune => {
                // The copy's lock is live by the server's clock, whatever
                // the two machines' clocks say: refused.
                let refused = self.prune_attempt(b, 0).is_none();
                assert!(
                    refused,
                    "a prune ran while a live copy held its lock (machine {m}'s clock {:+} min, machine {b}'s {:+} min)",
                    self.lives[m].offset / 60_000,
                    self.lives[b].offset / 60_000
                );
                self.counts.outcome("a prune refused: a copy was running");
            }
            Meanwhile::AsleepPrune => {
                age_locks(&self.remote_dir());
                let keep = if self.rng.bool() { 0 } else { KEEP_DEFAULT };
                if self.prune_attempt(b, keep).is_some() {
                    *pruned = true;
                    self.counts.outcome("a prune ran while a copy slept");
                }
            }
            Meanwhile::Check => {
                self.assert_remote_whole();
                self.counts.outcome("a check while a copy ran");
            }
            Meanwhile::Restore => {
                self.remote_restore();
                self.counts.outcome("a restore while a copy ran");
            }
        }
    }

    /// The model after a copy from `m` that succeeded: the remote holds
    /// everything its store held that the remote did not hold of it before
    /// the copy (`before`): what the copy sent, and confirmed. (What it
    /// found there already, a prune elsewhere may have removed meanwhile,
    /// as its retention allows: the models follow that prune.)
    pub(crate) fn copied(&mut self, m: usize, before: &[Entry]) {
        let l = &mut self.lives[m];
        let mut base = before.to_vec();
        let mut sent = Vec::new();
        for e in &l.model.entries {
            let n_local = l.model.entries.iter().filter(|x| *x == e).count();
            let n_known = base.iter().filter(|x| *x == e).count();
            if n_known < n_local {
                base.push(e.clone());
                sent.push(e.clone());
            }
        }
        for e in sent {
            let n_sent = l.model.entries.iter().filter(|x| **x == e).count();
            if l.remote.entries.iter().filter(|x| **x == e).count() < n_sent {
                l.remote.entries.push(e);
            }
        }
        l.copied_at = Some(l.now);
    }

    /// Every machine learns what the remote holds of its own.
    fn learn_sent(&mut self, seen: &Observed) {
        for l in &mut self.lives {
            l.learn_sent(seen);
        }
    }

    /// True if another machine than `m` may have left a dead lock.
    fn others_dead_locks(&self, m: usize) -> bool {
        self.dead_locks.iter().any(|&d| d != m)
    }

    /// The plan of a remote prune under `policy`, made on a new machine's
    /// copy at the world's time: the names to remove.
    fn plan_remote_prune(&self, policy: &RetentionPolicy) -> Vec<String> {
        let remote = open_shared(&self.remote_loc);
        let cache = tmp().unwrap();
        let mut store = Store::create_or_open(cache.path().join("store")).unwrap();
        sync_from_remote(&remote, &mut store, &mut |_| {}).unwrap();
        let (snapshots, plan) =
            prune::plan_store(&store, policy, &TimeZone::UTC, self.now).unwrap();
        plan.removed()
            .filter_map(|id| snapshots.iter().find(|s| s.id.0 == id))
            .map(|s| remote.snapshot_name(s))
            .collect()
    }

    /// Machine `b` prunes the remote with a random policy and margin
    /// `keep_ms`: `None` if refused (a lock), else the policy, with
    /// promise 1 checked for every machine and the models reconciled.
    fn prune_attempt(&mut self, b: usize, keep_ms: u64) -> Option<RetentionPolicy> {
        let policy = random_policy(&mut self.rng);
        let before = self.observe_remote();
        self.learn_sent(&before);
        let names = self.plan_remote_prune(&policy);
        let remote = open_shared(&self.remote_loc);
        let l = &self.lives[b];
        let mut lock = match remote.lock(true, &l.machine, l.now) {
            Ok(lock) => lock,
            Err(RemoteError::Locked { .. }) => return None,
            Err(e) => panic!("{e}"),
        };
        self.dead_locks.remove(&b);
        prune_remote(
            &mut lock,
            &names,
            PruneOptions {
                keep_unused_ms: keep_ms,
            },
        )
        .unwrap();
        drop(lock);
        self.after_remote_prune(&policy, &before);
        Some(policy)
    }

    /// Promise 1 on the remote, for each machine on its own; then each
    /// machine's model keeps what the remote kept.
    fn after_remote_prune(&mut self, policy: &RetentionPolicy, before: &Observed) {
        let seen = self.observe_remote();
        for (i, l) in self.lives.iter_mut().enumerate() {
            for (why, json) in l.remote.required_after_prune(policy, &before.contents) {
                if !seen.contents.contains(&json) && std::env::var_os("LIFE_DEBUG").is_some() {
                    let mut model: Vec<_> = l
                        .remote
                        .entries
                        .iter()
                        .map(|e| (e.session_ms, e.stored_at, e.file.clone(), e.json.is_some()))
                        .collect();
                    model.sort();
                    eprintln!("model of machine {i}: {model:#?}");
                    // Each whole file seen: its session's time, when, which.
                    let files = |o: &Observed| {
                        let mut files: Vec<_> = o
                            .whole
                            .keys()
                            .map(|(f, j, t)| (firefox::last_update_of(j), *t, f.clone()))
                            .collect();
                        files.sort();
                        files
                    };
                    eprintln!("remote before: {:#?}", files(before));
                    eprintln!("remote after: {:#?}", files(&seen));
                    eprintln!("policy {policy:?}");
                    let cache = tmp().unwrap();
                    let mut st = Store::create_or_open(cache.path().join("s")).unwrap();
                    sync_from_remote(&open_shared(&l.remote_loc), &mut st, &mut |_| {}).unwrap();
                    let o = st.origins().unwrap();
                    let mut rows: Vec<_> = st
                        .snapshots()
                        .unwrap()
                        .iter()
                        .map(|x| {
                            (
                                o.get(&x.id).map(|o| o.host.clone()),
                                x.last_update_ms,
                                x.taken_at_ms,
                                x.file_name.clone(),
                            )
                        })
                        .collect();
                    rows.sort();
                    eprintln!("with origins: {rows:#?}");
                }
                assert!(
                    seen.contents.contains(&json),
                    "promise 1 on the remote: machine {i}'s {why} session (lastUpdate {:?}) was pruned",
                    firefox::last_update_of(&json)
                );
            }
            l.remote.reconcile(&seen);
        }
    }

    /// `prune --store REMOTE` from machine `m`.
    pub(crate) fn remote_prune(&mut self, m: usize) -> Option<String> {
        if !self.remote_exists() {
            return None;
        }
        let keep = if self.rng.bool() { 0 } else { KEEP_DEFAULT };
        match self.prune_attempt(m, keep) {
            Some(policy) => {
                self.check_remote();
                Some(format!("{policy:?}, keep unused {keep} ms"))
            }
            None => {
                assert!(
                    self.others_dead_locks(m),
                    "a prune was refused with no copy running and no lock left by a kill"
                );
                Some("refused: a killed copy's lock".into())
            }
        }
    }

    /// A new machine's `check --read-data` of the remote.
    pub(crate) fn remote_check(&mut self) -> Option<String> {
        if !self.remote_exists() {
            return None;
        }
        self.assert_remote_whole();
        Some(String::new())
    }

    /// A new machine restores the newest session of any machine from the
    /// remote into a new profile folder: it is a whole session some
    /// machine stored.
    pub(crate) fn remote_restore(&mut self) -> Option<String> {
        if !self.remote_exists() {
            return None;
        }
        let cache = tmp().unwrap();
        let mut store = Store::create_or_open(cache.path().join("store")).unwrap();
        let report =
            sync_from_remote(&open_shared(&self.remote_loc), &mut store, &mut |_| {}).unwrap();
        assert!(report.damaged.is_empty(), "{report:?}");
        let Ok((chosen, _)) = restore::latest(&store) else {
            return Some("nothing to restore yet".into());
        };
        let want = store.read_json(chosen.id).unwrap();
        let profile = cache.path().join("new-profile");
        let plan = restore::plan(&store, chosen.id, &profile).unwrap();
        restore::execute(&plan, &mut store, None, PROFILE, self.now).unwrap();
        let got = firefox::decode_mozlz4(&fs::read(profile.join("sessionstore.jsonlz4")).unwrap());
        assert!(
            got.as_ref() == Some(&want),
            "the restored file is not the snapshot"
        );
        let known = self.lives.iter().any(|l| {
            l.ever.contains(&want)
                || l.model
                    .undo
                    .iter()
                    .any(|u| u.restored.as_ref() == Some(&want))
        });
        assert!(known, "a new machine restored a session no machine stored");
        Some(String::new())
    }

    /// A child process copies from machine `m` and dies (SIGKILL) after a
    /// random number of writes to the remote: whatever it left, a new
    /// machine finds no damage, and everything copied before is there.
    pub(crate) fn copy_killed(&mut self, m: usize) -> Option<String> {
        let l = &self.lives[m];
        if cfg!(not(unix)) || !l.store_dir.exists() {
            return None;
        }
        // The remote exists first (the child opens it).
        drop(l.open_remote());
        let k = self.rng.u64(1..40);
        let out = child(&self.lives[m], "copy", k, self.now, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.contains("COPY OK") {
            self.dead_locks.remove(&m);
            let before = self.lives[m].remote.entries.clone();
            self.copied(m, &before);
        } else if stdout.contains("CHILD DONE") {
            // It ran to its end and failed: only a lock another machine's
            // killed copy or prune left may refuse it.
            assert!(
                stdout.contains("Locked") && self.others_dead_locks(m),
                "a copy failed: {stdout}"
            );
            return Some("refused: a killed prune's lock".into());
        } else {
            assert_killed(&out);
            self.dead_locks.insert(m);
        }
        self.check_remote();
        Some(format!("after {k} writes"))
    }

    /// A child process prunes the remote from machine `m` and dies after a
    /// random number of writes and removals: promise 1 holds for what it
    /// did, and a new machine finds no damage.
    pub(crate) fn remote_prune_killed(&mut self, m: usize) -> Option<String> {
        if cfg!(not(unix)) || !self.remote_exists() {
            return None;
        }
        let policy = random_policy(&mut self.rng);
        let before = self.observe_remote();
        self.learn_sent(&before);
        let names = self.plan_remote_prune(&policy);
        let list = self.lives[m].scratch.path().join("names");
        let mut f = fs::File::create(&list).unwrap();
        for n in &names {
            writeln!(f, "{n}").unwrap();
        }
        drop(f);
        let keep = if self.rng.bool() { 0 } else { KEEP_DEFAULT };
        let k = self.rng.u64(1..30);
        let out = child(
            &self.lives[m],
            "prune",
            k,
            self.now,
            &[
                ("FFSESSION_LIFE_NAMES", list.to_string_lossy().into_owned()),
                ("FFSESSION_LIFE_KEEP_UNUSED", keep.to_string()),
            ],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.contains("LOCKED") {
            assert!(
                self.others_dead_locks(m),
                "a prune refused with nothing running"
            );
            return Some("refused: a killed copy's lock".into());
        }
        if stdout.contains("CHILD DONE") {
            self.dead_locks.remove(&m);
        } else {
            assert_killed(&out);
            self.dead_locks.insert(m);
        }
        self.after_remote_prune(&policy, &before);
        self.check_remote();
        Some(format!("after {k} writes, {policy:?}"))
    }
}

/// The default margin of a remote prune (the world's objects are seconds
/// old on the server's clock: nothing is old enough).
const KEEP_DEFAULT: u64 = ffsession::remote::KEEP_UNUSED_MS;

/// Run `what` for machine `l` in a child process killed after `kill_after`
/// writes (see `life_child`).
pub(crate) fn child(
    l: &Life,
    what: &str,
    kill_after: u64,
    world_now: u64,
    extra: &[(&str, String)],
) -> std::process::Output {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args(["life_child", "--exact", "--nocapture", "--test-threads=1"])
        .env("FFSESSION_LIFE_CHILD", what)
        .env("FFSESSION_LIFE_STORE", &l.store_dir)
        .env("FFSESSION_LIFE_PROFILE", &l.ff.dir)
        .env("FFSESSION_LIFE_REMOTE", l.remote_loc.to_string())
        .env("FFSESSION_LIFE_MACHINE_ID", &l.machine.id)
        .env("FFSESSION_LIFE_MACHINE_LABEL", &l.machine.label)
        .env(
            "FFSESSION_LIFE_NOW",
            if what == "prune" { world_now } else { l.now }.to_string(),
        )
        .env("FFSESSION_LIFE_KILL_AFTER", kill_after.to_string());
    for (k, v) in extra {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The child neither finished nor failed: it was killed.
pub(crate) fn assert_killed(out: &std::process::Output) {
    #[cfg(unix)]
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "the child neither finished nor was killed: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = out;
}

struct Timer(std::time::Instant);
impl Drop for Timer {
    fn drop(&mut self) {
        if std::env::var_os("LIFE_TIMING").is_some() {
            eprintln!("observe_remote {:?}", self.0.elapsed());
        }
    }
}
