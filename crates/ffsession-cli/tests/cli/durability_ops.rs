//! Never lose data, beyond `backup`: `prune` and `restore` killed with SIGKILL
//! at a hundred points each (runs go on until a hundred were killed;
//! durability.rs does `backup`). After every kill,
//! every snapshot the store lists reads back byte-identical, nothing the
//! retention policy keeps is gone, and the profile holds either its old
//! session files or the restored one, never a mix that loses a session: a
//! file that is gone from the profile is in the store.
#![cfg(unix)]

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ffsession::store::{Digest, Store};

use crate::common::{copy_tree, keep_only_last, ok_json, Run, TestEnv};
use crate::durability::{backup_ok, first_backup, kill_after, verify, FakeFirefox, DELAY_ENV};

/// Runs go on until this many were killed before they ended (a kill time
/// past the end of a run kills nothing)...
const KILLS: u32 = 100;
/// ... within this many runs.
const MAX_RUNS: u64 = 300;
/// Kill times are spread over this many steps of 1.2 whole runs.
const STEPS: u64 = 100;

fn ids(store: &Path) -> BTreeSet<i64> {
    Store::open_read_only(store)
        .unwrap()
        .snapshots()
        .unwrap()
        .iter()
        .map(|s| s.id.0)
        .collect()
}

/// The median of three whole runs of `cmd` (each on a fresh copy made by
/// `fresh`).
fn timed(mut run: impl FnMut() -> Command) -> Duration {
    let mut took: Vec<Duration> = (0..3)
        .map(|_| {
            let mut cmd = run();
            let start = Instant::now();
            let out = cmd.stdout(Stdio::null()).run();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            start.elapsed()
        })
        .collect();
    took.sort();
    took[1]
}

/// Kill times spread evenly over 1.2 times a whole run, in a shuffled order.
fn kill_time(i: u64, whole: Duration) -> Duration {
    whole.mul_f64(1.2 * ((i * 37) % STEPS) as f64 / STEPS as f64)
}

#[test]
fn kill_9_at_a_hundred_points_of_prune_loses_nothing_it_keeps() {
    let env = TestEnv::new();
    let store = env.path().join("store");
    let mut fx = FakeFirefox::new(env.path().join("profile"), 3);
    for _ in 0..12 {
        fx.advance();
        backup_ok(&env, &fx.profile, &store);
    }
    let all = ids(&store);
    let prune = |dir: &Path| {
        let mut cmd = env.std_store_cmd_at(&fx.profile, dir);
        cmd.arg("prune")
            .args(keep_only_last(4))
            .env(DELAY_ENV, "1")
            .stdin(Stdio::null());
        cmd
    };
    // What a whole prune keeps.
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        let dir = env.path().join(format!("copy-{n}"));
        copy_tree(&store, &dir);
        dir
    };
    let whole_dir = fresh();
    let whole = timed(|| prune(&fresh()));
    let out = prune(&whole_dir).run();
    assert!(out.status.success());
    let kept = ids(&whole_dir);
    assert!(
        kept.len() >= 4 && kept.len() < all.len(),
        "{kept:?} of {all:?}"
    );

    let (killed, runs, whole) = killed_runs(&mut fresh, &prune, whole, |i, dir| {
        let left = ids(dir);
        assert!(
            left.is_superset(&kept),
            "run {i}: kept snapshots gone: {left:?}"
        );
        let store = Store::open_read_only(dir).unwrap();
        verify(&store, &fx.written, &mut HashSet::new());
        drop(store);
        // Pruning again finishes the job, and leaves no stray chunk.
        assert!(prune(dir).run().status.success());
        assert_eq!(ids(dir), kept, "run {i}");
        let store = Store::open_read_only(dir).unwrap();
        let (_, unreferenced) = verify(&store, &fx.written, &mut HashSet::new());
        assert_eq!(unreferenced, 0, "run {i}");
        drop(store);
        fs::remove_dir_all(dir).unwrap();
    });
    eprintln!("prune: {killed} of {runs} runs killed (a whole prune took {whole:?})");
}

/// Runs of `cmd`, each on a fresh copy made by `fresh` and killed at a
/// [`kill_time`] of a whole run (`whole`, timed again every tenth run as
/// the machine's load changes), until [`KILLS`] of them were killed within
/// [`MAX_RUNS`]; `check(run, copy)` after each. Returns how many were
/// killed, how many ran, and the last whole run's time.
fn killed_runs(
    fresh: &mut dyn FnMut() -> PathBuf,
    cmd: &dyn Fn(&Path) -> Command,
    mut whole: Duration,
    mut check: impl FnMut(u64, &Path),
) -> (u32, u64, Duration) {
    let (mut killed, mut runs) = (0, 0);
    while killed < KILLS {
        let i = runs;
        runs += 1;
        assert!(runs <= MAX_RUNS, "only {killed} of {MAX_RUNS} runs killed");
        if i % 10 == 9 {
            whole = timed(|| cmd(&fresh()));
        }
        let dir = fresh();
        killed += u32::from(kill_after(cmd(&dir), kill_time(i, whole)));
        check(i, &dir);
    }
    (killed, runs, whole)
}

/// The content the store would keep for a session file's bytes.
fn content_digest(bytes: &[u8]) -> Digest {
    match ffsession::format::decompress(bytes) {
        Ok(json) => Digest::of(&json),
        Err(_) => Digest::of(bytes),
    }
}

#[test]
fn kill_9_at_a_hundred_points_of_restore_leaves_old_or_new_and_loses_nothing() {
    let env = TestEnv::new();
    let store = env.path().join("store");
    let mut fx = first_backup(&env, &store, 3);
    let snapshots = ok_json(
        env.store_cmd_at(&fx.profile, &store)
            .args(["list", "--json"]),
    );
    let target = snapshots
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["status"] == "ok" && s["file_name"] == "sessionstore-backups/recovery.jsonlz4")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let target_json = Store::open_read_only(&store)
        .unwrap()
        .read_json(ffsession::store::SnapshotId(target))
        .unwrap();
    // The profile moves on, so the restore changes it.
    for _ in 0..3 {
        fx.advance();
    }
    fs::write(fx.profile.join("prefs.js"), "user_pref(\"a\", 1);\n").unwrap();
    let old: Vec<(String, Vec<u8>)> = ffsession::sources::list(&fx.profile)
        .unwrap()
        .into_iter()
        .map(|f| (f.name.clone(), fs::read(&f.path).unwrap()))
        .collect();
    let old_prefs = fs::read_to_string(fx.profile.join("prefs.js")).unwrap();

    let mut n = 0;
    let mut fresh = || {
        n += 1;
        let dir = env.path().join(format!("run-{n}"));
        copy_tree(&store, &dir.join("store"));
        copy_tree(&fx.profile, &dir.join("profile"));
        dir
    };
    let restore = |dir: &Path| {
        let mut cmd = env.std_store_cmd_at(&dir.join("profile"), &dir.join("store"));
        cmd.args(["restore", &target.to_string()])
            .env(DELAY_ENV, "2")
            .stdin(Stdio::null());
        cmd
    };
    let whole = timed(|| restore(&fresh()));

    let mut restored_seen = 0;
    let (killed, runs, whole) = killed_runs(&mut fresh, &restore, whole, |i, dir| {
        let profile = dir.join("profile");
        let store = Store::open_read_only(dir.join("store")).unwrap();
        verify(&store, &fx.written, &mut HashSet::new());
        let stored: HashSet<Digest> = store
            .snapshots()
            .unwrap()
            .iter()
            .map(|s| s.content_hash)
            .collect();
        drop(store);
        // Each old file is still there as it was, or (set aside by the
        // restore) it is in the store.
        for (name, bytes) in &old {
            match fs::read(profile.join(name)) {
                Ok(now) if &now == bytes => {}
                Ok(now) if name == "sessionstore.jsonlz4" => {
                    assert_eq!(
                        ffsession::format::decompress(&now).unwrap(),
                        target_json,
                        "run {i}: sessionstore.jsonlz4 is neither old nor restored"
                    );
                    assert!(
                        stored.contains(&content_digest(bytes)),
                        "run {i}: old {name} lost"
                    );
                    restored_seen += 1;
                }
                Ok(_) => panic!("run {i}: {name} changed"),
                Err(_) => assert!(
                    stored.contains(&content_digest(bytes)),
                    "run {i}: {name} gone and not stored"
                ),
            }
        }
        let prefs = fs::read_to_string(profile.join("prefs.js")).unwrap();
        assert!(
            prefs == old_prefs || prefs.contains("resume_session_once\", true"),
            "run {i}: prefs.js {prefs:?}"
        );
        // A restore run to its end afterwards puts the snapshot in place.
        let out = restore(dir).env_remove(DELAY_ENV).run();
        assert!(
            out.status.success(),
            "run {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let now = fs::read(profile.join("sessionstore.jsonlz4")).unwrap();
        assert_eq!(
            ffsession::format::decompress(&now).unwrap(),
            target_json,
            "run {i}"
        );
        fs::remove_dir_all(dir).unwrap();
    });
    eprintln!(
        "restore: {killed} of {runs} runs killed (a whole restore took {whole:?}); \
         {restored_seen} left the restored sessionstore.jsonlz4 in place"
    );
    assert!(
        restored_seen > 0 && restored_seen < runs as usize,
        "{restored_seen}"
    );
}

/// Backups killed one after another (each SIGKILLed right after its k-th file
/// landed, k = 2..) leave chunk files no catalog row names: `check` counts
/// them in one line, and `prune` removes every one even when its policy
/// removes no snapshot, without touching a snapshot.
#[test]
fn orphans_of_killed_backups_are_counted_in_one_line_and_prune_removes_them() {
    use std::os::unix::process::ExitStatusExt;
    let env = TestEnv::new();
    let store = env.path().join("store");
    let mut fx = first_backup(&env, &store, 40);
    let before = ids(&store);
    let mut killed = 0;
    for k in 0..12u64 {
        // Wholly new sessions every other step: every chunk is new.
        fx.advance();
        fx.advance();
        let mut cmd = env.std_store_cmd_at(&fx.profile, &store);
        cmd.arg("backup")
            .env("FFSESSION_TEST_KILL_AFTER_WRITES", (2 + k % 6).to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if cmd.status().unwrap().signal() == Some(9) {
            killed += 1;
        }
    }
    assert!(killed >= 10, "only {killed} backups were killed");
    assert_eq!(ids(&store), before, "a killed backup recorded a snapshot");

    let json = ok_json(
        env.store_cmd_at(&fx.profile, &store)
            .args(["check", "--json"]),
    );
    let orphans = json["orphan_chunks"].as_array().unwrap().len();
    assert!(orphans >= 20, "{orphans} orphans");
    let out = env.std_store_cmd_at(&fx.profile, &store).arg("check").run();
    assert!(out.status.success(), "orphans are harmless");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("orphan")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].contains(&format!("{orphans} orphan chunk files"))
            && lines[0].contains(&format!(
                "`ffsession --profile {} --store {} prune` removes them",
                fx.profile.display(),
                store.display()
            )),
        "{text}"
    );

    // A policy that keeps every snapshot still clears them.
    let out = env
        .std_store_cmd_at(&fx.profile, &store)
        .args(["prune", "--keep-last", "1000"])
        .run();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("removing 0 snapshots"));
    assert_eq!(ids(&store), before);
    let json = ok_json(
        env.store_cmd_at(&fx.profile, &store)
            .args(["check", "--json"]),
    );
    assert_eq!(json["orphan_chunks"].as_array().unwrap().len(), 0, "{json}");
    assert_eq!(json["temp_files"].as_array().unwrap().len(), 0, "{json}");
    assert!(json["damaged_snapshots"].as_array().unwrap().is_empty());
    let store = Store::open_read_only(&store).unwrap();
    let (snapshots, unreferenced) = verify(&store, &fx.written, &mut HashSet::new());
    assert_eq!(snapshots.len(), before.len());
    assert_eq!(unreferenced, 0);
}
