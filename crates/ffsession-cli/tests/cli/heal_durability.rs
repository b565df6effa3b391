//! The healing path under `kill -9`: a backup that finds damaged chunks and
//! rewrites them is killed at over a hundred points, most at random times and
//! some at an exact point (killed by itself right after its first chunk rewrite, with
//! more damaged chunks still to go, so a crash between two rewrites is tested
//! however fast or slow the machine is). Every chunk file must
//! then be either the damaged file as it was or the healed one (never a torn
//! mix: the rewrite is atomic), every listed snapshot must read back
//! byte-identical or be named damaged by `check` (never silently wrong), and
//! the next backup must make the store whole.
#![cfg(unix)]

use std::collections::HashMap;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use ffsession::store::{check_store, Digest, Store, StoreError};
use ffsession_gen::{generate, mozlz4, Spec};

use crate::common::{ok_stdout, stderr, Run, TestEnv};

const DELAY_ENV: &str = "FFSESSION_TEST_WRITE_DELAY_MS";
const KILL_ENV: &str = "FFSESSION_TEST_KILL_AFTER_WRITES";
const SIGKILL: i32 = 9;

/// Chunk files of the store (temporary files left out).
fn chunk_files(store: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ffsession_gen::files_under(&store.join("chunks"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "zst"))
        .collect();
    out.sort();
    out
}

#[test]
fn kill_9_while_a_backup_heals_damaged_chunks_never_leaves_a_wrong_snapshot() {
    const RUNS: u64 = 160;
    let started = Instant::now();
    let env = TestEnv::new();
    let store_dir = env.store_dir();
    let mut written: HashMap<Digest, Vec<u8>> = HashMap::new();
    // The same tabs each time, with a new lastUpdate: a chunk or two differ.
    let put = |env: &TestEnv, written: &mut HashMap<Digest, Vec<u8>>, step: u64| -> PathBuf {
        let json = generate(&Spec {
            tabs: 40,
            windows: 2,
            favicon_bytes: 2_000,
            seed: 7,
            last_update: 1_795_300_000_000 + step * 15_000,
            ..Spec::default()
        })
        .into_bytes();
        written.insert(Digest::of(&json), json.clone());
        env.profile_with_recovery(&mozlz4(&json))
    };
    let mut profile = put(&env, &mut written, 1);
    ok_stdout(env.store_cmd(&profile).arg("backup"));

    let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let backup = |profile: &Path| {
        let mut cmd = env.std_store_cmd_at(profile, &store_dir);
        cmd.arg("backup")
            .env(DELAY_ENV, "5")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };

    // How long a backup that heals a few chunks takes, slowed writes included.
    let damage = |next: &mut dyn FnMut() -> u64| -> HashMap<PathBuf, Vec<u8>> {
        // Only chunks some snapshot uses (a killed run may leave others).
        let spare: Vec<PathBuf> = Store::open_read_only(&store_dir)
            .unwrap()
            .unreferenced_chunks()
            .unwrap()
            .into_iter()
            .map(|c| c.path)
            .collect();
        let files: Vec<PathBuf> = chunk_files(&store_dir)
            .into_iter()
            .filter(|f| !spare.contains(f))
            .collect();
        let mut damaged = HashMap::new();
        for _ in 0..4 {
            let f = &files[(next() % files.len() as u64) as usize];
            let mut bytes = fs::read(f).unwrap();
            let i = (next() % bytes.len() as u64) as usize;
            bytes[i] ^= 1 << (next() % 8);
            fs::write(f, &bytes).unwrap();
            damaged.insert(f.clone(), bytes);
        }
        damaged
    };
    damage(&mut next);
    let t = Instant::now();
    let status = backup(&profile).status().unwrap();
    assert!(status.success());
    let mut full = t.elapsed();

    let (mut killed, mut mid_heal, mut exited) = (0, 0, 0);
    for i in 0..RUNS {
        if i % 4 == 3 {
            // A new session that shares most chunks: the new-content path.
            profile = put(&env, &mut written, 1 + i);
        }
        // Every eighth run stops at an exact point: the content is stored
        // whole first, then damaged until at least two of its own chunks are
        // bad, and the backup kills itself right after rewriting the first of them.
        let exact = i % 8 == 1;
        let damaged = if exact {
            let out = env.store_cmd(&profile).arg("backup").run();
            assert!(out.status.success(), "run {i}: {}", stderr(&out));
            let latest = Store::open_read_only(&store_dir)
                .unwrap()
                .snapshots()
                .unwrap()[0]
                .id;
            let mut damaged = HashMap::new();
            loop {
                damaged.extend(damage(&mut next));
                let report = check_store(&store_dir, &mut |_, _| {}).unwrap();
                let own = report.damaged_snapshots.iter().find(|d| d.id == latest);
                if own.is_some_and(|d| d.chunks.len() >= 2) {
                    // A flipped bit that leaves the content whole (in a
                    // field of the zstd frame the decoder does not need)
                    // is no damage: only what check names counts.
                    damaged.retain(|path, _| report.damaged_chunks.iter().any(|c| &c.path == path));
                    break damaged;
                }
            }
        } else {
            damage(&mut next)
        };
        let frac = ((i * 37) % RUNS) as f64 / RUNS as f64;
        let t = Instant::now();
        let mut cmd = backup(&profile);
        if exact {
            cmd.env(KILL_ENV, "1");
        }
        let mut child = cmd.spawn().unwrap();
        // Every tenth run goes to its end and times a whole heal again.
        let deadline = if i % 10 == 9 || exact {
            t + Duration::from_secs(60)
        } else {
            t + full.mul_f64(0.75 * frac)
        };
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                break child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let died = status.signal() == Some(SIGKILL);
        if exact {
            assert!(died, "run {i}: {status:?}");
        }
        if died {
            killed += 1;
        } else {
            assert!(status.success(), "run {i}: {status:?}");
            exited += 1;
            if i % 10 == 9 {
                full = t.elapsed();
            }
        }

        // Each damaged file is the damaged one as it was, or healed whole
        // (check reads every chunk file and hashes it against its name).
        let store = Store::open_read_only(&store_dir).unwrap();
        let report = check_store(&store_dir, &mut |_, _| {}).unwrap();
        let mut healed = 0;
        for (path, bytes) in &damaged {
            if report.damaged_chunks.iter().any(|c| &c.path == path) {
                assert_eq!(
                    &fs::read(path).unwrap(),
                    bytes,
                    "run {i}: {}",
                    path.display()
                );
            } else {
                healed += 1;
            }
        }
        if exact {
            assert_eq!(healed, 1, "run {i}: the kill came after one rewrite");
        }
        if healed > 0 && healed < damaged.len() && died {
            mid_heal += 1;
        }
        // Every snapshot reads back byte-identical, or is named by check.
        for s in store.snapshots().unwrap() {
            match store.read_content(s.id) {
                Ok(back) => {
                    assert!(
                        written.get(&s.content_hash) == Some(&back),
                        "run {i}: snapshot {} is wrong",
                        s.id
                    );
                    assert!(report.damaged_snapshots.iter().all(|d| d.id != s.id));
                }
                Err(StoreError::DamagedChunk { .. } | StoreError::MissingChunk { .. }) => {
                    assert!(
                        report.damaged_snapshots.iter().any(|d| d.id == s.id),
                        "run {i}: snapshot {} is unreadable but check does not name it",
                        s.id
                    );
                }
                Err(e) => panic!("run {i}: snapshot {}: {e}", s.id),
            }
        }
        assert!(report.problems.is_empty(), "run {i}: {:?}", report.problems);
        // A backup that ran to its end left everything it holds whole.
        if status.success() {
            let current = store.snapshots().unwrap()[0].id;
            assert!(report.damaged_snapshots.iter().all(|d| d.id != current));
        }
    }

    // The store is usable: an uninterrupted backup of every session heals
    // whatever the kills left, check says whole, and every snapshot reads.
    for seed in written.keys().copied().collect::<Vec<_>>() {
        let json = written[&seed].clone();
        let profile = env.profile_with_recovery(&mozlz4(&json));
        let out = env.store_cmd(&profile).arg("backup").run();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = ok_stdout(env.store_cmd(&profile).arg("check"));
    assert!(out.contains("no errors were found"), "{out}");
    let store = Store::open_read_only(&store_dir).unwrap();
    for s in store.snapshots().unwrap() {
        assert_eq!(
            Some(&store.read_content(s.id).unwrap()),
            written.get(&s.content_hash)
        );
    }
    eprintln!(
        "{RUNS} heal runs in {:.1?} (a whole heal took {full:?}): {killed} killed, {mid_heal} mid-heal, {exited} exited",
        started.elapsed()
    );
    assert!(killed >= 100, "{killed} killed");
    // The exact runs alone give RUNS / 8; random kills may add more.
    assert!(
        mid_heal >= RUNS / 8,
        "{mid_heal} crashes between two chunk rewrites"
    );
}
