//! Never lose data, at the library level: the write test hook of `fs_util`, a
//! full disk while adding snapshots, session files that Firefox replaces while
//! they are read, and retention keeping the last good snapshot.
//!
//! The test hook is global to the process, so every test here holds [`serial`]
//! (this file is its own test binary; other test binaries are unaffected).
//! Killing the backup process at many points is tested on the command line:
//! `crates/ffsession-cli/tests/cli/durability.rs`.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ffsession::backup::backup_profile;
use ffsession::fs_util::{set_test_hook, write_atomic, TestHook};
use ffsession::retention;
use ffsession::sources::SourceKind;
use ffsession::store::{
    Digest, SnapshotInfo, SnapshotSource, SnapshotStatus, Store, StoreError, StoreStats,
};
use ffsession_gen::{generate, mozlz4, Spec};

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time: the hook is process-global.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Installs a hook and removes it when dropped, even if the test panics.
struct Hook;

impl Hook {
    fn set(hook: TestHook) -> Hook {
        set_test_hook(Some(hook));
        Hook
    }

    /// Writes fail as on a full disk once `bytes` more bytes are written.
    fn full_disk_after(bytes: u64) -> Hook {
        Hook::set(TestHook {
            fail_after_bytes: Some(bytes),
            ..TestHook::default()
        })
    }
}

impl Drop for Hook {
    fn drop(&mut self) {
        set_test_hook(None);
    }
}

/// A generated session: its JSON (what the store keeps) and its mozlz4 file.
struct Session {
    json: Vec<u8>,
    packed: Vec<u8>,
}

fn session(tabs: usize, seed: u64) -> Session {
    let json = generate(&Spec {
        tabs,
        windows: 2,
        seed,
        last_update: 1_795_300_000_000 + seed * 15_000,
        ..Spec::default()
    })
    .into_bytes();
    let packed = mozlz4(&json);
    Session { json, packed }
}

fn source(file_name: &str, bytes: &[u8]) -> SnapshotSource {
    SnapshotSource {
        bytes: bytes.to_vec(),
        profile: "default".into(),
        file_name: file_name.into(),
        kind: SourceKind::Recovery,
        mtime_ms: None,
    }
}

/// A temporary folder holding a profile with an empty `sessionstore-backups/`
/// (`profile/`) and a new store (`store/`); returns the folder (removed when
/// dropped), the profile and the store.
fn profile_and_store() -> (tempfile::TempDir, PathBuf, Store) {
    let (dir, profile, store) = common::profile_and_store();
    fs::create_dir_all(profile.join("sessionstore-backups")).unwrap();
    (dir, profile, store)
}

/// Each version's JSON by its digest, to tell which version a snapshot holds.
fn by_content_hash(versions: &[Session]) -> HashMap<Digest, &[u8]> {
    versions
        .iter()
        .map(|v| (Digest::of(&v.json), &v.json[..]))
        .collect()
}

/// Assert that `content`, stored as snapshot `s`, is the version its hash names.
fn assert_is_the_version(by_hash: &HashMap<Digest, &[u8]>, s: &SnapshotInfo, content: &[u8]) {
    let expected = by_hash
        .get(&s.content_hash)
        .unwrap_or_else(|| panic!("snapshot {} is none of the versions", s.id));
    assert_eq!(content, *expected);
}

fn is_temp(p: &Path) -> bool {
    ffsession::fs_util::is_temp_file_name(&p.file_name().unwrap().to_string_lossy())
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    ffsession_gen::files_under(dir)
        .into_iter()
        .filter(|p| is_temp(p))
        .collect()
}

/// Chunk files on disk, by name.
fn chunk_files(store: &Path) -> BTreeSet<String> {
    common::chunk_files(store)
        .into_iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// What must not change when a write fails: the catalog's snapshots and
/// counts, and the chunk files (the catalog's own size may change).
#[derive(Debug, PartialEq)]
struct StoreState {
    snapshots: Vec<SnapshotInfo>,
    stats: StoreStats,
    chunk_files: BTreeSet<String>,
}

fn state(store: &Store) -> StoreState {
    StoreState {
        snapshots: store.snapshots().unwrap(),
        stats: StoreStats {
            catalog_bytes: 0,
            ..store.stats().unwrap()
        },
        chunk_files: chunk_files(store.dir()),
    }
}

fn assert_disk_full(err: &StoreError, store: &Path) {
    match err {
        StoreError::Io(e) => {
            assert_eq!(e.source.kind(), io::ErrorKind::StorageFull, "{err}");
            assert!(e.path.starts_with(store.join("chunks")), "{err}");
        }
        other => panic!("expected a full-disk I/O error, got {other:?}"),
    }
    let text = err.to_string();
    // The system's own words for a full disk: ENOSPC, or ERROR_DISK_FULL.
    #[cfg(unix)]
    assert!(text.contains("No space left on device"), "{text}");
    #[cfg(windows)]
    assert!(
        text.contains(&io::Error::from_raw_os_error(112).to_string()),
        "{text}"
    );
    assert_eq!(
        err.hint(),
        Some(ffsession::Hint::Advice(
            "free some disk space and try again"
        ))
    );
}

#[test]
fn the_test_hook_delays_writes_and_fails_them_like_a_full_disk() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    fs::write(&path, "old").unwrap();

    let hook = Hook::set(TestHook {
        delay_per_write: Duration::from_millis(30),
        ..TestHook::default()
    });
    let start = Instant::now();
    write_atomic(&path, |w: &mut dyn Write| w.write_all(b"slow")).unwrap();
    // Once between write and fsync, once between fsync and rename.
    assert!(start.elapsed() >= Duration::from_millis(60));
    assert_eq!(fs::read(&path).unwrap(), b"slow");

    set_test_hook(Some(TestHook {
        fail_after_bytes: Some(10),
        ..TestHook::default()
    }));
    write_atomic(&path, |w: &mut dyn Write| w.write_all(b"12345")).unwrap();
    // 5 of the 10 bytes are left: a 6-byte file fails, as on a full disk.
    let err = write_atomic(&path, |w: &mut dyn Write| w.write_all(b"abcdef")).unwrap_err();
    assert_eq!(err.source.kind(), io::ErrorKind::StorageFull);
    #[cfg(unix)]
    assert_eq!(err.source.raw_os_error(), Some(28), "ENOSPC");
    assert_eq!(err.path, path);
    assert_eq!(fs::read(&path).unwrap(), b"12345", "the old file is intact");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file");
    // Empty files need no space.
    write_atomic(&path, |_| Ok(())).unwrap();

    drop(hook);
    write_atomic(&path, |w: &mut dyn Write| w.write_all(&[7; 100_000])).unwrap();
    assert_eq!(fs::read(&path).unwrap().len(), 100_000);
}

#[test]
fn a_full_disk_while_adding_a_snapshot_leaves_the_store_as_it_was() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let mut store = Store::create_or_open(&store_dir).unwrap();
    let a = session(10, 1);
    store
        .add_snapshot(source("recovery.jsonlz4", &a.packed), 1_000)
        .unwrap();
    let before = state(&store);

    // A new session of several chunks; how many bytes its chunks take.
    let b = session(40, 2);
    let needed = {
        let scratch = tempfile::tempdir().unwrap();
        let mut s = Store::create_or_open(scratch.path().join("s")).unwrap();
        let info = s
            .add_snapshot(source("recovery.jsonlz4", &b.packed), 1)
            .unwrap();
        assert!(s.stats().unwrap().chunks >= 4, "{:?}", s.stats());
        info.stored_size
    };

    // No space at all: nothing is written.
    {
        let _hook = Hook::full_disk_after(0);
        let err = store
            .add_snapshot(source("recovery.jsonlz4", &b.packed), 2_000)
            .unwrap_err();
        assert_disk_full(&err, &store_dir);
    }
    assert_eq!(state(&store), before);
    assert_eq!(temp_files(&store_dir), Vec::<PathBuf>::new());
    assert!(store.unreferenced_chunks().unwrap().is_empty());

    // Space for about half the chunks: those are written, the snapshot is not
    // catalogued, and the written chunks are leftovers that count for nothing.
    {
        let _hook = Hook::full_disk_after(needed / 2);
        let err = store
            .add_snapshot(source("recovery.jsonlz4", &b.packed), 2_000)
            .unwrap_err();
        assert_disk_full(&err, &store_dir);
    }
    let after = state(&store);
    assert_eq!(after.snapshots, before.snapshots);
    assert_eq!(after.stats, before.stats);
    assert_eq!(temp_files(&store_dir), Vec::<PathBuf>::new());
    let leftovers = store.unreferenced_chunks().unwrap();
    assert!(
        !leftovers.is_empty(),
        "some chunks fitted before the disk filled"
    );
    assert!(leftovers.iter().all(|c| !c.in_catalog));
    assert_eq!(
        after.chunk_files.len(),
        before.chunk_files.len() + leftovers.len()
    );
    assert_eq!(
        store.read_content(before.snapshots[0].id).unwrap(),
        a.json,
        "the old snapshot still restores"
    );

    // Space again: the snapshot goes in, and the leftovers become its chunks
    // or are collected.
    let info = store
        .add_snapshot(source("recovery.jsonlz4", &b.packed), 3_000)
        .unwrap();
    assert_eq!(store.read_content(info.id).unwrap(), b.json);
    store.collect_garbage().unwrap();
    assert!(store.unreferenced_chunks().unwrap().is_empty());
    assert_eq!(store.snapshots().unwrap().len(), 2);
}

#[test]
fn a_full_disk_midway_through_a_backup_leaves_the_catalog_as_it_was() {
    let _serial = serial();
    let (_dir, profile, mut store) = profile_and_store();
    let backups = profile.join("sessionstore-backups");
    let store_dir = store.dir().to_path_buf();

    let old = session(10, 10);
    fs::write(backups.join("recovery.jsonlz4"), &old.packed).unwrap();
    backup_profile(&mut store, "default", &profile, 1_000).unwrap();
    let before = state(&store);

    // Firefox order: recovery.jsonlz4 (unchanged: a catalog row only), then
    // previous.jsonlz4 (new: chunks to write, and the disk is full).
    let new = session(30, 11);
    fs::write(backups.join("previous.jsonlz4"), &new.packed).unwrap();
    let err = {
        let _hook = Hook::full_disk_after(0);
        backup_profile(&mut store, "default", &profile, 2_000).unwrap_err()
    };
    match err {
        ffsession::backup::BackupError::Store(e) => assert_disk_full(&e, &store_dir),
        other => panic!("expected a store error, got {other:?}"),
    }
    let after = state(&store);
    assert_eq!(after.chunk_files, before.chunk_files);
    assert_eq!(temp_files(&store_dir), Vec::<PathBuf>::new());
    for s in &after.snapshots {
        assert_eq!(store.read_content(s.id).unwrap(), old.json);
    }
    // A failed backup is all or nothing: the snapshot of recovery.jsonlz4,
    // taken before previous.jsonlz4 failed, must not stay catalogued.
    let added: Vec<&str> = after.snapshots[..after.snapshots.len() - before.snapshots.len()]
        .iter()
        .map(|s| s.file_name.as_str())
        .collect();
    assert_eq!(
        after.snapshots, before.snapshots,
        "the failed backup left snapshots of {added:?} in the catalog"
    );
}

/// Rewrite `path` in a loop until `stop`, cycling through `versions`, either
/// as Firefox does (a temporary file renamed over it, and now and then the
/// file moved to `recovery.baklz4` first) or in place (truncate and rewrite,
/// in two halves). Returns the number of rewrites.
fn rewrite_loop(path: &Path, versions: &[Vec<u8>], in_place: bool, stop: &AtomicBool) -> u64 {
    let tmp = path.with_extension("jsonlz4.tmp");
    let bak = path.with_file_name("recovery.baklz4");
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let bytes = &versions[(n as usize) % versions.len()];
        if in_place {
            let mut f = fs::File::create(path).unwrap();
            let half = bytes.len() / 2;
            f.write_all(&bytes[..half]).unwrap();
            std::thread::yield_now();
            f.write_all(&bytes[half..]).unwrap();
        } else {
            fs::write(&tmp, bytes).unwrap();
            if n % 5 == 4 {
                // Firefox keeps the previous recovery file as recovery.baklz4:
                // for a moment there is no recovery.jsonlz4 at all.
                rename_as_firefox(path, &bak);
            }
            rename_as_firefox(&tmp, path);
        }
        n += 1;
        std::thread::sleep(Duration::from_micros(200));
    }
    n
}

/// Rename `from` over `to` as Firefox does. On Windows a rename over a file
/// another handle has open fails (Wine, and Windows without POSIX rename
/// semantics), as it may for a moment while a backup reads the file: Firefox
/// writes again at its next save; here, after a moment.
fn rename_as_firefox(from: &Path, to: &Path) {
    let mut tries = 0;
    while let Err(e) = fs::rename(from, to) {
        tries += 1;
        assert!(
            cfg!(windows) && tries < 1000,
            "renaming {} over {}: {e}",
            from.display(),
            to.display()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Back up the profile `runs` times while another thread rewrites its
/// recovery file, and check that the file changed at least once per backup;
/// returns every snapshot taken and the number of rewrites.
fn backups_during_rewrites(
    versions: &[Session],
    in_place: bool,
    runs: u64,
) -> (Store, Vec<SnapshotInfo>, u64, tempfile::TempDir) {
    let (dir, profile, mut store) = profile_and_store();
    let recovery = profile.join("sessionstore-backups/recovery.jsonlz4");
    fs::write(&recovery, &versions[0].packed).unwrap();
    let packed: Vec<Vec<u8>> = versions.iter().map(|v| v.packed.clone()).collect();
    let stop = AtomicBool::new(false);
    let (rewrites, snapshots) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| rewrite_loop(&recovery, &packed, in_place, &stop));
        let mut snapshots = Vec::new();
        for i in 0..runs {
            let report = backup_profile(&mut store, "default", &profile, 1_000 + i).unwrap();
            snapshots.extend(report.snapshots);
        }
        stop.store(true, Ordering::Relaxed);
        (writer.join().unwrap(), snapshots)
    });
    assert!(
        rewrites >= runs,
        "the file changed during the backups ({rewrites})"
    );
    (store, snapshots, rewrites, dir)
}

#[test]
fn a_session_file_replaced_by_rename_while_read_is_never_stored_torn() {
    let _serial = serial();
    let versions = [session(3, 21), session(15, 22), session(40, 23)];
    let by_hash = by_content_hash(&versions);
    let (store, snapshots, _, _dir) = backups_during_rewrites(&versions, false, 150);
    let mut seen = BTreeSet::new();
    for s in &snapshots {
        assert!(s.is_ok(), "{} is {:?}", s.id, s.status);
        assert_is_the_version(&by_hash, s, &store.read_json(s.id).unwrap());
        seen.insert(s.content_hash);
    }
    assert!(seen.len() >= 2, "backups saw the file change");
    assert!(
        snapshots
            .iter()
            .any(|s| s.file_name == "sessionstore-backups/recovery.baklz4"),
        "the rotation to recovery.baklz4 was seen"
    );
}

#[test]
fn a_session_file_rewritten_in_place_while_read_is_never_stored_as_a_wrong_ok_session() {
    // Firefox never does this (it renames a temporary file over the old one);
    // a torn read of a file rewritten in place is stored with status
    // `corrupt` and its raw bytes, never as an `ok` session that was not there.
    let _serial = serial();
    let versions = [session(3, 31), session(15, 32), session(40, 33)];
    let by_hash = by_content_hash(&versions);
    let (store, snapshots, rewrites, _dir) = backups_during_rewrites(&versions, true, 150);
    let (mut ok, mut corrupt) = (0, 0);
    for s in &snapshots {
        let content = store.read_content(s.id).unwrap();
        if s.is_ok() {
            ok += 1;
            assert_is_the_version(&by_hash, s, &content);
        } else {
            corrupt += 1;
            match &s.status {
                SnapshotStatus::Corrupt { reason } => assert!(!reason.is_empty()),
                SnapshotStatus::Ok => unreachable!(),
            }
            assert!(s.counts.is_none(), "a torn file has no counts");
        }
    }
    assert!(ok > 0);
    eprintln!("in-place rewrites: {rewrites}; snapshots: {ok} ok, {corrupt} corrupt (torn)");
}

#[test]
fn a_corrupt_newest_file_never_gets_the_last_good_snapshot_pruned() {
    let _serial = serial();
    let (_dir, profile, mut store) = profile_and_store();
    let recovery = profile.join("sessionstore-backups/recovery.jsonlz4");
    let hour = 3_600_000;
    let t0 = 1_795_300_000_000;

    let first = session(30, 41);
    let good = session(31, 42);
    let broken = &good.packed[..good.packed.len() / 2];
    let mut taken = Vec::new();
    for (i, bytes) in [&first.packed[..], &good.packed, broken, broken, broken]
        .into_iter()
        .enumerate()
    {
        fs::write(&recovery, bytes).unwrap();
        let report = backup_profile(&mut store, "default", &profile, t0 + i as u64 * hour).unwrap();
        assert_eq!(report.alarm.is_some(), i >= 2, "backup {i}");
        taken.push(report.snapshots[0].id);
    }
    let snapshots = store.snapshots().unwrap();
    let candidates = ffsession::prune::candidates(&snapshots, &[]);
    let policy = common::keep_last(1);
    let plan = retention::plan(&policy, &candidates, &jiff::tz::TimeZone::UTC);
    let removed: Vec<i64> = plan.removed().collect();
    assert!(!removed.contains(&taken[1].0), "{plan:?}");
    assert!(removed.contains(&taken[0].0), "{plan:?}");
    for id in removed {
        store
            .remove_snapshot(ffsession::store::SnapshotId(id))
            .unwrap();
    }
    store.collect_garbage().unwrap();
    assert_eq!(store.read_json(taken[1]).unwrap(), good.json);
}
