//! Never lose data: `ffsession backup` killed with SIGKILL at hundreds of
//! points, a full disk (injected through the write test hook, and a real tmpfs
//! filled to the brim), and the order of writes, fsyncs, renames and deletions
//! as strace sees it. The tmpfs and strace tests print a NOTE and skip when
//! mounting or tracing is not allowed.
//!
//! After every kill the store is opened with the library and every catalogued
//! snapshot must read back byte-identical to a session file that was written
//! into the profile at some point; leftovers of the killed run (temporary files,
//! chunk files no row names) must not count as anything and must be collected.
//!
//! `FFSESSION_TEST_WRITE_DELAY_MS` and `FFSESSION_TEST_ENOSPC_AFTER_BYTES` are
//! the CLI's test hook (`ffsession::fs_util::TestHook`).
#![cfg(unix)]

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ffsession::store::{Digest, SnapshotInfo, Store, StoreError, StoreStats};
use ffsession_gen::{generate, mozlz4, Spec};

use crate::common::{expect_error, ok_json, stderr, Run, TestEnv};

const SIGKILL: i32 = 9;
pub(crate) const DELAY_ENV: &str = "FFSESSION_TEST_WRITE_DELAY_MS";
const ENOSPC_ENV: &str = "FFSESSION_TEST_ENOSPC_AFTER_BYTES";

/// Writes a profile's session files as Firefox does (a temporary file renamed
/// over the old one) and remembers every content it ever wrote.
pub(crate) struct FakeFirefox {
    pub(crate) profile: PathBuf,
    step: u64,
    tabs: usize,
    /// Digest of the content the store keeps (the JSON of a valid session, the
    /// raw bytes of a damaged file) -> that content, and whether it is valid.
    pub(crate) written: HashMap<Digest, (Vec<u8>, bool)>,
}

impl FakeFirefox {
    pub(crate) fn new(profile: PathBuf, tabs: usize) -> FakeFirefox {
        fs::create_dir_all(profile.join("sessionstore-backups")).unwrap();
        FakeFirefox {
            profile,
            step: 0,
            tabs,
            written: HashMap::new(),
        }
    }

    fn put(&mut self, name: &str, file: &[u8], content: Vec<u8>, ok: bool) {
        let path = self.profile.join(name);
        let tmp = self.profile.join(format!("{name}.tmp"));
        fs::write(&tmp, file).unwrap();
        fs::rename(&tmp, &path).unwrap();
        self.written.insert(Digest::of(&content), (content, ok));
    }

    fn put_session(&mut self, name: &str, seed: u64, last_update: u64, tabs: usize) {
        let json = generate(&Spec {
            tabs,
            windows: 2,
            history: 3,
            favicon_bytes: 1_500,
            cookies: 5,
            seed,
            last_update,
            ..Spec::default()
        })
        .into_bytes();
        self.put(name, &mozlz4(&json), json, true);
    }

    /// Fifteen seconds of a running Firefox: recovery.jsonlz4 becomes
    /// recovery.baklz4 and a new one is written, a wholly new session every
    /// other step (all its chunks new) and otherwise the same tabs with a new
    /// `lastUpdate` (a chunk or two new); every few steps the other files
    /// change too, and now and then the new recovery file is damaged.
    pub(crate) fn advance(&mut self) {
        self.step += 1;
        let s = self.step;
        let recovery = self.profile.join("sessionstore-backups/recovery.jsonlz4");
        if recovery.exists() {
            fs::rename(
                &recovery,
                self.profile.join("sessionstore-backups/recovery.baklz4"),
            )
            .unwrap();
        }
        let last_update = 1_795_300_000_000 + s * 15_000;
        let tabs = self.tabs + (s % 3) as usize;
        if s.is_multiple_of(23) {
            let json = generate(&Spec {
                tabs,
                seed: s,
                ..Spec::default()
            });
            let packed = mozlz4(json.as_bytes());
            let torn = packed[..packed.len() * 2 / 3].to_vec();
            self.put(
                "sessionstore-backups/recovery.jsonlz4",
                &torn,
                torn.clone(),
                false,
            );
        } else {
            self.put_session(
                "sessionstore-backups/recovery.jsonlz4",
                s - s % 2,
                last_update,
                tabs,
            );
        }
        if s % 7 == 1 {
            self.put_session(
                "sessionstore-backups/previous.jsonlz4",
                100_000 + s,
                last_update - 1,
                self.tabs,
            );
        }
        if s % 11 == 1 {
            self.put_session(
                "sessionstore.jsonlz4",
                200_000 + s,
                last_update - 2,
                self.tabs,
            );
        }
    }

    fn files(&self) -> usize {
        [
            "sessionstore.jsonlz4",
            "sessionstore-backups/recovery.jsonlz4",
            "sessionstore-backups/recovery.baklz4",
            "sessionstore-backups/previous.jsonlz4",
        ]
        .iter()
        .filter(|n| self.profile.join(n).exists())
        .count()
    }
}

fn backup(env: &TestEnv, profile: &Path, store: &Path) -> Command {
    let mut cmd = env.std_store_cmd_at(profile, store);
    cmd.arg("backup").stdin(Stdio::null());
    cmd
}

/// Run a backup to its end; it must succeed (0, or 3 for a damaged newest file).
pub(crate) fn backup_ok(env: &TestEnv, profile: &Path, store: &Path) -> Duration {
    let start = Instant::now();
    let out = backup(env, profile, store).run();
    let took = start.elapsed();
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{:?}: {}",
        out.status,
        stderr(&out)
    );
    took
}

fn is_temp(p: &Path) -> bool {
    ffsession::fs_util::is_temp_file_name(&p.file_name().unwrap().to_string_lossy())
}

fn temp_files(store: &Path) -> usize {
    ffsession_gen::files_under(store)
        .iter()
        .filter(|p| is_temp(p))
        .count()
}

fn chunk_files(store: &Path) -> BTreeSet<String> {
    ffsession_gen::files_under(&store.join("chunks"))
        .iter()
        .filter(|p| !is_temp(p))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// Check every catalogued snapshot of `store` against what was written;
/// contents in `verified` were checked before and are skipped. Returns the
/// snapshots and the number of chunk files no snapshot references.
pub(crate) fn verify(
    store: &Store,
    written: &HashMap<Digest, (Vec<u8>, bool)>,
    verified: &mut HashSet<Digest>,
) -> (Vec<SnapshotInfo>, usize) {
    let snapshots = store.snapshots().unwrap();
    for s in &snapshots {
        let (content, ok) = written
            .get(&s.content_hash)
            .unwrap_or_else(|| panic!("snapshot {} holds content never written: {s:?}", s.id));
        assert_eq!(s.is_ok(), *ok, "snapshot {}: {:?}", s.id, s.status);
        if verified.insert(s.content_hash) {
            let back = store
                .read_content(s.id)
                .unwrap_or_else(|e| panic!("snapshot {} does not restore: {e}", s.id));
            assert!(back == *content, "snapshot {} is not byte-identical", s.id);
        }
    }
    let unreferenced = store.unreferenced_chunks().unwrap();
    assert!(unreferenced.iter().all(|c| !is_temp(&c.path)));
    (snapshots, unreferenced.len())
}

/// A profile in `env` where a fake Firefox with `tabs` tabs has written its
/// first session files, backed up once into `store`.
pub(crate) fn first_backup(env: &TestEnv, store: &Path, tabs: usize) -> FakeFirefox {
    let mut fx = FakeFirefox::new(env.path().join("profile"), tabs);
    fx.advance();
    backup_ok(env, &fx.profile, store);
    fx
}

/// How many snapshots `list --json` shows.
fn list_count(env: &TestEnv, profile: &Path, store: &Path) -> usize {
    let list = ok_json(env.store_cmd_at(profile, store).args(["list", "--json"]));
    list.as_array().unwrap().len()
}

/// Start a backup and SIGKILL it after `delay`, unless it exits first (then
/// it must have succeeded); true if it was killed.
pub(crate) fn kill_after(mut cmd: Command, delay: Duration) -> bool {
    let deadline = Instant::now() + delay;
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let now = Instant::now();
        if now >= deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(1)));
    };
    if status.signal() == Some(SIGKILL) {
        return true;
    }
    assert!(matches!(status.code(), Some(0 | 3)), "{status:?}");
    false
}

/// What the store held at the last look.
struct Seen {
    count: usize,
    temps: usize,
    orphans: usize,
    verified: HashSet<Digest>,
}

impl Seen {
    fn new(store_dir: &Path, written: &HashMap<Digest, (Vec<u8>, bool)>) -> Seen {
        let mut seen = Seen {
            count: 0,
            temps: 0,
            orphans: 0,
            verified: HashSet::new(),
        };
        seen.update(store_dir, written);
        seen
    }

    /// Verify the store; return the snapshots added since the last look, and
    /// whether temporary files or unreferenced chunk files were added.
    fn update(
        &mut self,
        store_dir: &Path,
        written: &HashMap<Digest, (Vec<u8>, bool)>,
    ) -> (usize, bool, bool) {
        let store = Store::open_read_only(store_dir).unwrap();
        let (snapshots, orphans) = verify(&store, written, &mut self.verified);
        let temps = temp_files(store_dir);
        let seen = (
            snapshots.len() - self.count,
            temps > self.temps,
            orphans > self.orphans,
        );
        (self.count, self.temps, self.orphans) = (snapshots.len(), temps, orphans);
        seen
    }
}

/// Where the kills landed.
#[derive(Debug, Default)]
struct Landed {
    /// Exited before the kill.
    exited: u32,
    /// Killed with nothing of its run on disk yet.
    early: u32,
    /// Killed with a temporary file of its own left behind (mid-write).
    mid_write: u32,
    /// Killed with new chunk files no row names (chunks written, row not committed).
    before_commit: u32,
    /// Killed after some but not all of its snapshots committed.
    between_commits: u32,
    /// Killed after all its snapshots committed.
    after_commits: u32,
}

#[test]
fn kill_9_at_hundreds_of_points_of_a_backup_loses_nothing() {
    const RUNS: u64 = 200;
    const FRESH_RUNS: u64 = 24;
    const DELAY_MS: &str = "2";
    let started = Instant::now();
    let env = TestEnv::new();
    let store_dir = env.store_dir();
    let mut fx = FakeFirefox::new(env.path().join("profile"), 4);

    // A whole backup with slowed writes, timed. Kills are spread over the
    // median of the last five, re-timed every tenth run as the load changes.
    let timed = |fx: &FakeFirefox, store: &Path| -> Duration {
        let start = Instant::now();
        let out = backup(&env, &fx.profile, store)
            .env(DELAY_ENV, DELAY_MS)
            .run();
        assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
        start.elapsed()
    };
    let median = |took: &[Duration]| -> Duration {
        let mut last = took[took.len().saturating_sub(5)..].to_vec();
        last.sort();
        last[last.len() / 2]
    };
    fx.advance();
    let create = timed(&fx, &store_dir);
    let mut took = Vec::new();
    for _ in 0..4 {
        fx.advance();
        took.push(timed(&fx, &store_dir));
    }

    let mut seen = Seen::new(&store_dir, &fx.written);
    let first = seen.count;
    let mut landed = Landed::default();
    for i in 0..RUNS {
        if i % 10 == 9 {
            fx.advance();
            took.push(timed(&fx, &store_dir));
            let (added, _, _) = seen.update(&store_dir, &fx.written);
            assert_eq!(added, fx.files(), "a whole backup takes every file");
        }
        fx.advance();
        let files = fx.files();
        // A permutation of 0..RUNS, so kill times cover the whole run evenly.
        let frac = ((i * 73) % RUNS) as f64 / RUNS as f64;
        let mut cmd = backup(&env, &fx.profile, &store_dir);
        cmd.env(DELAY_ENV, DELAY_MS);
        let killed = kill_after(cmd, median(&took).mul_f64(1.2 * frac));

        if i % 25 == 24 {
            seen.verified.clear(); // re-read every snapshot now and then
        }
        let (added, more_temps, more_orphans) = seen.update(&store_dir, &fx.written);
        if !killed {
            landed.exited += 1;
            assert_eq!(added, files, "an uninterrupted backup takes every file");
        } else if more_temps {
            landed.mid_write += 1;
        } else if more_orphans {
            landed.before_commit += 1;
        } else if added == 0 {
            landed.early += 1;
        } else if added < files {
            landed.between_commits += 1;
        } else {
            landed.after_commits += 1;
        }
        if i % 50 == 49 {
            assert_eq!(
                list_count(&env, &fx.profile, &store_dir),
                seen.count,
                "list counts rows only"
            );
        }
    }
    let grown = seen.count - first;
    let full = median(&took);

    // Kills while the store is being created.
    for i in 0..FRESH_RUNS {
        let dir = env.path().join(format!("fresh-{i}"));
        let frac = i as f64 / FRESH_RUNS as f64;
        let mut cmd = backup(&env, &fx.profile, &dir);
        cmd.env(DELAY_ENV, DELAY_MS);
        kill_after(cmd, create.mul_f64(1.1 * frac));
        match Store::open_read_only(&dir) {
            Ok(store) => {
                verify(&store, &fx.written, &mut HashSet::new());
            }
            Err(StoreError::NotAStore { .. }) => {}
            // Killed after the empty catalog file appeared, before its schema
            // committed: a store with nothing in it, which the next backup sets up.
            Err(StoreError::CatalogCorrupt { reason, .. })
                if reason.contains("never initialized") => {}
            Err(e) => panic!("fresh store {i} after a kill: {e:?}"),
        }
        backup_ok(&env, &fx.profile, &dir);
        let mut store = Store::open(&dir).unwrap();
        let (snapshots, _) = verify(&store, &fx.written, &mut HashSet::new());
        assert!(snapshots.len() >= fx.files(), "{i}: {}", snapshots.len());
        store.collect_garbage().unwrap();
        assert_eq!(temp_files(&dir), 0);
    }

    // A normal backup after all that works, and garbage collection removes
    // every leftover and nothing else.
    backup_ok(&env, &fx.profile, &store_dir);
    let mut store = Store::open(&store_dir).unwrap();
    let (before_gc, _) = verify(&store, &fx.written, &mut HashSet::new());
    let gc = store.collect_garbage().unwrap();
    let (after_gc, unreferenced) = verify(&store, &fx.written, &mut HashSet::new());
    assert_eq!(
        before_gc, after_gc,
        "collecting garbage removes no snapshot"
    );
    assert_eq!(unreferenced, 0);
    assert_eq!(temp_files(&store_dir), 0);
    let stats = store.stats().unwrap();
    assert_eq!(
        stats.chunks as usize,
        chunk_files(&store_dir).len(),
        "every chunk file left is a catalogued chunk"
    );
    drop(store);
    assert_eq!(list_count(&env, &fx.profile, &store_dir), after_gc.len());

    eprintln!(
        "{RUNS} + {FRESH_RUNS} kills in {:.1?} (a whole backup took {full:?}): {landed:?}; \
         {} snapshots of {} contents; gc removed {gc:?}",
        started.elapsed(),
        after_gc.len(),
        stats.contents
    );
    // The test is not vacuous: most runs were killed, at every stage.
    let killed = RUNS as u32 - landed.exited;
    assert!(killed >= RUNS as u32 / 2, "{landed:?}");
    assert!(landed.mid_write > 0, "{landed:?}");
    assert!(landed.before_commit > 0, "{landed:?}");
    assert!(landed.early > 0, "{landed:?}");
    assert!(gc.temp_files_removed > 0 && gc.chunks_removed > 0, "{gc:?}");
    assert!(
        grown >= RUNS as usize / 4,
        "the catalog grew during the kills: {grown} snapshots"
    );
}

/// The catalog's snapshots and counts (not its size in bytes) and the chunk
/// files on disk.
#[derive(Debug, PartialEq)]
struct StoreState {
    snapshots: Vec<SnapshotInfo>,
    stats: StoreStats,
    chunk_files: BTreeSet<String>,
}

fn state(store_dir: &Path) -> StoreState {
    let store = Store::open_read_only(store_dir).unwrap();
    StoreState {
        snapshots: store.snapshots().unwrap(),
        stats: StoreStats {
            catalog_bytes: 0,
            ..store.stats().unwrap()
        },
        chunk_files: chunk_files(store_dir),
    }
}

/// A backup that hit a full disk must say so on one line naming the store
/// file, with a hint; a missing hint is added to `problems`.
fn check_disk_full_message(err: &str, store_dir: &Path, problems: &mut Vec<String>) {
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("ffsession: error: "), "{err}");
    assert!(err.contains(&store_dir.display().to_string()), "{err}");
    assert!(
        err.contains("No space left on device") || err.contains("database or disk is full"),
        "{err}"
    );
    if !err
        .trim_end()
        .ends_with("(hint: free some disk space and try again)")
    {
        problems.push(format!("no hint in the error line: {}", err.trim_end()));
    }
}

/// Run a backup that must fail on a full disk; check its message, that no
/// temporary file is left, that every snapshot still restores, and that the
/// catalog is as it was (a difference is added to `problems`). Returns the
/// store's state before and after.
fn failing_backup(
    env: &TestEnv,
    fx: &FakeFirefox,
    store_dir: &Path,
    hook_room: Option<&str>,
    problems: &mut Vec<String>,
) -> (StoreState, StoreState) {
    let before = state(store_dir);
    let mut cmd = backup(env, &fx.profile, store_dir);
    if let Some(room) = hook_room {
        cmd.env(ENOSPC_ENV, room);
    }
    let out = cmd.run();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    check_disk_full_message(&err, store_dir, problems);
    let after = state(store_dir);
    assert_eq!(temp_files(store_dir), 0);
    verify(
        &Store::open_read_only(store_dir).unwrap(),
        &fx.written,
        &mut HashSet::new(),
    );
    if after.snapshots != before.snapshots || after.stats != before.stats {
        let added: Vec<&str> = after.snapshots
            [..after.snapshots.len().saturating_sub(before.snapshots.len())]
            .iter()
            .map(|s| s.file_name.as_str())
            .collect();
        problems.push(format!(
            "a backup that failed on a full disk ({}) changed the catalog: {} snapshots before, {} after; added {added:?}",
            err.trim_end(),
            before.snapshots.len(),
            after.snapshots.len(),
        ));
    }
    (before, after)
}

#[test]
fn a_full_disk_fails_with_a_clear_message_and_leaves_the_store_as_it_was() {
    let env = TestEnv::new();
    let store_dir = env.store_dir();
    let mut fx = first_backup(&env, &store_dir, 20);

    // Firefox writes a new recovery.jsonlz4 (its chunks do not fit);
    // sessionstore.jsonlz4 and previous.jsonlz4 are unchanged.
    fx.advance();
    let mut problems = Vec::new();
    for room in ["0", "30000"] {
        let (before, after) = failing_backup(&env, &fx, &store_dir, Some(room), &mut problems);
        // Chunks that fitted are leftovers no row names.
        let store = Store::open_read_only(&store_dir).unwrap();
        let extra: Vec<_> = store
            .unreferenced_chunks()
            .unwrap()
            .into_iter()
            .filter(|c| {
                !before
                    .chunk_files
                    .contains(&c.path.file_name().unwrap().to_string_lossy().into_owned())
            })
            .collect();
        assert!(extra.iter().all(|c| !c.in_catalog));
        assert_eq!(
            after.chunk_files.len(),
            before.chunk_files.len() + extra.len()
        );
        if room == "0" {
            assert_eq!(after.chunk_files, before.chunk_files);
        } else {
            assert!(!extra.is_empty(), "30000 bytes hold a chunk or two");
        }
    }

    // With space again, the backup goes through and restores exactly.
    let before = state(&store_dir);
    backup_ok(&env, &fx.profile, &store_dir);
    let mut store = Store::open(&store_dir).unwrap();
    let (snapshots, _) = verify(&store, &fx.written, &mut HashSet::new());
    assert_eq!(snapshots.len(), before.snapshots.len() + fx.files());
    store.collect_garbage().unwrap();
    assert!(store.unreferenced_chunks().unwrap().is_empty());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fill the file system, then free `room` bytes.
    fn fill(&self, room: u64) -> PathBuf {
        let path = self.path().join("filler");
        let mut f = fs::File::create(&path).unwrap();
        let block = vec![0xa5u8; 64 * 1024];
        loop {
            match f.write_all(&block) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(room)).unwrap();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

#[test]
fn a_really_full_disk_fails_cleanly_for_chunks_and_for_the_catalog() {
    let tmpfs = match Tmpfs::mount("4m") {
        Ok(t) => t,
        Err(why) => {
            eprintln!(
                "NOTE: skipping the real full-disk test (tmpfs): cannot mount a tmpfs ({why}); \
                 the injected full disk is tested by \
                 a_full_disk_fails_with_a_clear_message_and_leaves_the_store_as_it_was"
            );
            return;
        }
    };
    let env = TestEnv::new();
    let store_dir = tmpfs.path().join("store");
    let mut fx = first_backup(&env, &store_dir, 20);
    let mut problems = Vec::new();

    // New chunks and 64 KiB of room: the chunk writes hit the full disk.
    fx.advance();
    let filler = tmpfs.fill(64 * 1024);
    failing_backup(&env, &fx, &store_dir, None, &mut problems);
    fs::remove_file(&filler).unwrap();

    // Nothing new to write but catalog rows, and no room at all: SQLite
    // itself hits the full disk.
    let backups = fx.profile.join("sessionstore-backups");
    fs::rename(
        backups.join("recovery.baklz4"),
        backups.join("recovery.jsonlz4"),
    )
    .unwrap();
    let filler = tmpfs.fill(0);
    failing_backup(&env, &fx, &store_dir, None, &mut problems);
    fs::remove_file(&filler).unwrap();

    // Space again: backups work, and everything restores.
    fx.advance();
    backup_ok(&env, &fx.profile, &store_dir);
    let mut store = Store::open(&store_dir).unwrap();
    verify(&store, &fx.written, &mut HashSet::new());
    store.collect_garbage().unwrap();
    assert!(store.unreferenced_chunks().unwrap().is_empty());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// One file-system event of a traced process.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    Write(String),
    Fsync(String),
    Rename(String, String),
    Mkdir(String),
    Unlink(String),
}

/// The successful calls in an `strace -y -s 4096` log; paths of file
/// descriptors come from `-y`'s `N</path>`.
fn parse_strace(log: &str) -> Vec<Event> {
    let fd_path = |args: &str| -> Option<String> {
        let start = args.find('<')? + 1;
        let end = start + args[start..].find('>')?;
        Some(args[start..end].to_owned())
    };
    let quoted = |args: &str| -> Vec<String> {
        args.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut events = Vec::new();
    for line in log.lines() {
        // "PID  call(args) = result"
        let line = line.trim_start_matches(|c: char| c.is_ascii_digit() || c == ' ');
        let Some((call, rest)) = line.split_once('(') else {
            continue;
        };
        let Some((args, result)) = rest.rsplit_once(" = ") else {
            continue;
        };
        if result.trim().starts_with('-') {
            continue; // failed
        }
        let event = match call {
            "write" | "pwrite64" | "pwritev" | "writev" => fd_path(args).map(Event::Write),
            "fsync" | "fdatasync" => fd_path(args).map(Event::Fsync),
            "rename" | "renameat" | "renameat2" => match quoted(args).as_slice() {
                [from, to, ..] => Some(Event::Rename(from.clone(), to.clone())),
                _ => None,
            },
            "mkdir" | "mkdirat" => quoted(args).pop().map(Event::Mkdir),
            "unlink" | "unlinkat" => quoted(args).pop().map(Event::Unlink),
            _ => None,
        };
        events.extend(event);
    }
    events
}

/// Run `ffsession --profile PROFILE --store STORE ARGS` under strace; `None`
/// (with a note) if strace is missing or may not trace here.
fn traced(env: &TestEnv, profile: &Path, store: &Path, args: &[&str]) -> Option<Vec<Event>> {
    let log = env.path().join("strace.log");
    let mut cmd = env.sealed_cmd("strace");
    cmd.args(["-f", "-y", "-qq", "-s", "4096", "-o"])
        .arg(&log)
        .arg("-e")
        .arg("trace=write,pwrite64,pwritev,writev,fsync,fdatasync,rename,renameat,renameat2,mkdir,mkdirat,unlink,unlinkat")
        .arg(assert_cmd::cargo::cargo_bin("ffsession"))
        .arg("--profile")
        .arg(profile)
        .arg("--store")
        .arg(store)
        .args(args);
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("NOTE: skipping the fsync-order test: cannot run strace ({e})");
            return None;
        }
    };
    let text = fs::read_to_string(&log).unwrap_or_default();
    if text.is_empty() {
        eprintln!(
            "NOTE: skipping the fsync-order test: strace could not trace ({})",
            stderr(&out).trim()
        );
        return None;
    }
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    Some(parse_strace(&text))
}

fn parent(p: &str) -> &str {
    p.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn is_catalog(p: &str) -> bool {
    p.ends_with("/catalog.sqlite") || p.ends_with("/catalog.sqlite-wal")
}

#[test]
fn chunks_are_durable_before_the_catalog_names_them_and_rows_go_before_files() {
    let env = TestEnv::new();
    let store_dir = env.store_dir();
    let mut fx = first_backup(&env, &store_dir, 5);
    fx.advance();
    fx.advance();
    let store_s = store_dir.display().to_string();
    let Some(events) = traced(&env, &fx.profile, &store_dir, &["backup"]) else {
        return;
    };

    let catalog_writes: Vec<usize> = (0..events.len())
        .filter(|&i| matches!(&events[i], Event::Write(p) if is_catalog(p)))
        .collect();
    let synced_before_next_catalog_write = |from: usize, dir: &str| -> bool {
        let next_catalog = catalog_writes
            .iter()
            .copied()
            .find(|&w| w > from)
            .unwrap_or(usize::MAX);
        events[from..]
            .iter()
            .take(next_catalog - from)
            .any(|e| *e == Event::Fsync(dir.to_owned()))
    };
    let (mut chunk_renames, mut mkdirs) = (0, 0);
    for (i, e) in events.iter().enumerate() {
        match e {
            Event::Write(p) if p.starts_with(&store_s) && !is_catalog(p) => {
                // Store files are written only as temporary files (SQLite's
                // shared-memory index, the tab index, which is derived data
                // SQLite writes in place, and the lock file's informational
                // pid aside), never in place.
                let name = p.rsplit('/').next().unwrap();
                assert!(
                    (name.starts_with(".ffsession-") && name.ends_with(".tmp"))
                        || p.ends_with("/catalog.sqlite-shm")
                        || name.starts_with("index.sqlite")
                        || *p == format!("{store_s}/lock"),
                    "in-place write of {p}"
                );
            }
            Event::Rename(from, to) if to.starts_with(&store_s) => {
                chunk_renames += 1;
                assert_eq!(parent(from), parent(to), "{e:?}");
                let last_write = events[..i]
                    .iter()
                    .rposition(|x| *x == Event::Write(from.clone()))
                    .unwrap_or_else(|| panic!("{from} renamed but never written"));
                assert!(
                    events[last_write..i].contains(&Event::Fsync(from.clone())),
                    "{from} renamed without an fsync after its last write"
                );
                assert!(
                    synced_before_next_catalog_write(i, parent(to)),
                    "the catalog was written before the folder of {to} was fsynced"
                );
            }
            Event::Mkdir(dir) if dir.starts_with(&store_s) => {
                mkdirs += 1;
                assert!(
                    synced_before_next_catalog_write(i, parent(dir)),
                    "the catalog was written before the new folder {dir} was fsynced into its parent"
                );
            }
            _ => {}
        }
    }
    // Every catalog change is fsynced (synchronous=FULL).
    let wal = format!("{store_s}/catalog.sqlite-wal");
    let last_wal_write = events
        .iter()
        .rposition(|e| *e == Event::Write(wal.clone()))
        .expect("the backup wrote the catalog");
    assert!(events[last_wal_write..].contains(&Event::Fsync(wal.clone())));
    assert!(
        chunk_renames >= 2 && mkdirs >= 1,
        "{chunk_renames} {mkdirs}"
    );
    assert!(
        *catalog_writes.last().unwrap()
            > events
                .iter()
                .rposition(|e| matches!(e, Event::Rename(..)))
                .unwrap()
    );

    // Pruning deletes catalog rows durably before it deletes a chunk file.
    let Some(events) = traced(
        &env,
        &fx.profile,
        &store_dir,
        &[
            "prune",
            "--keep-last=1",
            "--keep-hourly=0",
            "--keep-daily=0",
            "--keep-weekly=0",
            "--keep-monthly=0",
            "--keep-yearly=0",
        ],
    ) else {
        return;
    };
    let mut unlinked = 0;
    for (i, e) in events.iter().enumerate() {
        if let Event::Unlink(path) = e {
            if !path.ends_with(".zst") {
                continue;
            }
            unlinked += 1;
            let last_wal_write = events[..i]
                .iter()
                .rposition(|x| *x == Event::Write(wal.clone()))
                .expect("rows are deleted before files");
            assert!(
                events[last_wal_write..i].contains(&Event::Fsync(wal.clone())),
                "{path} deleted before the catalog change was fsynced"
            );
        }
    }
    assert!(unlinked > 0, "prune deleted chunk files");
}

#[test]
fn a_store_on_a_read_only_file_system_is_a_clear_error_and_still_lists() {
    let tmpfs = match Tmpfs::mount("8m") {
        Ok(t) => t,
        Err(why) => {
            eprintln!("NOTE: skipping the read-only store test: cannot mount a tmpfs ({why})");
            return;
        }
    };
    let env = TestEnv::new();
    let store_dir = tmpfs.path().join("store");
    let mut fx = first_backup(&env, &store_dir, 20);
    let stored = fx.files();
    let remount = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(tmpfs.path())
        .status()
        .unwrap();
    assert!(remount.success(), "remounting the tmpfs read-only");
    fx.advance();
    let err = expect_error(env.store_cmd_at(&fx.profile, &store_dir).arg("backup"));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&store_dir.display().to_string()), "{err}");
    assert!(err.contains("(hint: "), "{err}");
    // Reading still works on a read-only store.
    assert_eq!(list_count(&env, &fx.profile, &store_dir), stored);
}
