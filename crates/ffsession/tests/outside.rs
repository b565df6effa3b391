//! The store and the backup stay inside their own folders: no symbolic link
//! in a store is followed (to read, write, chmod or delete), and a backup
//! takes only the profile's own session files.
//!
//! The link tests run on Unix only. On Windows the store refuses reparse
//! points (symbolic links and junctions: `FILE_FLAG_OPEN_REPARSE_POINT`),
//! but Wine 8, which runs the Windows tests in CI, makes neither
//! (`CreateSymbolicLinkW` succeeds and makes nothing, `mklink /J` fails);
//! and modes (0600, 0700, chmod) are Unix's.

mod common;

use std::fs;
#[cfg(unix)]
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

#[cfg(unix)]
use common::{check, chunk_files};
use common::{packed, recovery_source, NOW};
use ffsession::backup::backup_profile;
use ffsession::sources::MAX_SESSION_BYTES;
use ffsession::store::{SnapshotSource, Store};
#[cfg(unix)]
use ffsession::store::{StoreError, CATALOG_FILE, CHUNKS_DIR, LOCK_FILE};
use ffsession_gen::Spec;

/// A session of 5 tabs (seeded) as the profile's recovery file.
fn source(seed: u64) -> SnapshotSource {
    recovery_source(
        "default-release",
        packed(&Spec {
            seed,
            tabs: 5,
            ..Spec::default()
        }),
        Some(NOW - 1_000),
    )
}

/// A store in `store/` of a temporary folder, with one snapshot: the folder
/// (removed when dropped) and the store's path.
#[cfg(unix)]
fn store_with_a_snapshot() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let mut store = Store::create_or_open(&store_dir).unwrap();
    store.add_snapshots(vec![source(1)], NOW).unwrap();
    (dir, store_dir)
}

/// A file outside the store, 0644, that a followed link would change.
#[cfg(unix)]
fn victim(dir: &Path) -> PathBuf {
    let path = dir.join("victim.txt");
    fs::write(&path, "precious\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    path
}

#[cfg(unix)]
fn assert_untouched(victim: &Path) {
    assert_eq!(fs::read_to_string(victim).unwrap(), "precious\n");
    assert_eq!(
        fs::metadata(victim).unwrap().permissions().mode() & 0o777,
        0o644,
        "the link's target was chmodded"
    );
}

/// The error of `result`, which must be the refusal of the link at `link`.
#[cfg(unix)]
fn assert_refused<T: std::fmt::Debug>(result: Result<T, StoreError>, link: &Path) {
    match result {
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains("symbolic link") && text.contains(&link.display().to_string()),
                "not the refusal of {}: {text}",
                link.display()
            );
        }
        Ok(v) => panic!("went through the link {}: {v:?}", link.display()),
    }
}

/// A reader and a writer of the store at `store_dir` both refuse the link
/// at `link`.
#[cfg(unix)]
fn assert_readers_and_writers_refuse(store_dir: &Path, link: &Path) {
    assert_refused(Store::open_read_only(store_dir), link);
    assert_refused(Store::open(store_dir), link);
}

#[cfg(unix)]
fn problems(store_dir: &Path) -> Vec<(PathBuf, String)> {
    let report = check(store_dir);
    assert!(!report.is_whole() || report.problems.is_empty());
    report
        .problems
        .into_iter()
        .map(|p| (p.path, p.what))
        .collect()
}

#[cfg(unix)]
#[test]
fn a_linked_lock_is_refused_by_every_writer_and_reported_by_check() {
    let (dir, store_dir) = store_with_a_snapshot();
    let victim = victim(dir.path());
    let lock = store_dir.join(LOCK_FILE);
    fs::remove_file(&lock).unwrap();
    symlink(&victim, &lock).unwrap();

    for open in [Store::open, Store::create_or_open] {
        assert_refused(open(&store_dir), &lock);
    }
    assert_untouched(&victim);
    // A dangling link is not followed either (it would create the target).
    fs::remove_file(&lock).unwrap();
    let absent = dir.path().join("created-through-link");
    symlink(&absent, &lock).unwrap();
    assert_refused(Store::open(&store_dir), &lock);
    assert!(!absent.exists(), "the link's target was created");

    let found = problems(&store_dir);
    assert!(
        found
            .iter()
            .any(|(p, what)| *p == lock && what.contains("symbolic link")),
        "{found:?}"
    );
    // Readers need no lock: the store still reads.
    let store = Store::open_read_only(&store_dir).unwrap();
    assert_eq!(store.snapshots().unwrap().len(), 1);
}

#[cfg(unix)]
#[test]
fn a_linked_catalog_is_refused_by_readers_and_writers() {
    let (dir, store_dir) = store_with_a_snapshot();
    let catalog = store_dir.join(CATALOG_FILE);
    let elsewhere = dir.path().join("elsewhere.sqlite");
    fs::rename(&catalog, &elsewhere).unwrap();
    symlink(&elsewhere, &catalog).unwrap();
    let before = fs::read(&elsewhere).unwrap();

    assert_readers_and_writers_refuse(&store_dir, &catalog);
    assert_refused(Store::create_or_open(&store_dir), &catalog);
    assert_eq!(fs::read(&elsewhere).unwrap(), before);
    assert!(!dir.path().join("elsewhere.sqlite-wal").exists());
    let found = problems(&store_dir);
    assert!(found.iter().any(|(p, _)| *p == catalog), "{found:?}");
}

#[cfg(unix)]
#[test]
fn a_linked_wal_is_refused_and_its_target_untouched() {
    let (dir, store_dir) = store_with_a_snapshot();
    let victim = victim(dir.path());
    let wal = store_dir.join(format!("{CATALOG_FILE}-wal"));
    let _ = fs::remove_file(&wal);
    symlink(&victim, &wal).unwrap();
    assert_readers_and_writers_refuse(&store_dir, &wal);
    assert_untouched(&victim);
    let found = problems(&store_dir);
    assert!(found.iter().any(|(p, _)| *p == wal), "{found:?}");
}

#[cfg(unix)]
#[test]
fn chunks_are_never_written_through_a_linked_folder() {
    let (dir, store_dir) = store_with_a_snapshot();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    // A linked fan-out folder: every new chunk of a new session lands in one
    // of 256 folders, so link them all.
    let chunks = store_dir.join(CHUNKS_DIR);
    for i in 0..=255u8 {
        let fan = chunks.join(format!("{i:02x}"));
        if fan.exists() {
            continue;
        }
        symlink(&outside, &fan).unwrap();
    }
    let mut store = Store::open(&store_dir).unwrap();
    let err = store.add_snapshots(vec![source(2)], NOW + 1).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    drop(store);
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    // Nor through a linked `chunks/`.
    let real = dir.path().join("real-chunks");
    fs::rename(&chunks, &real).unwrap();
    symlink(&real, &chunks).unwrap();
    assert_refused(Store::open(&store_dir), &chunks);
}

#[cfg(unix)]
#[test]
fn garbage_collection_deletes_nothing_through_a_linked_folder() {
    let (dir, store_dir) = store_with_a_snapshot();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    // A file named like a chunk, in the folder the link points to.
    let name = format!("{}.zst", "ab".repeat(32));
    fs::write(outside.join(&name), b"not ours").unwrap();
    symlink(&outside, store_dir.join(CHUNKS_DIR).join("ab")).unwrap();
    let mut store = Store::open(&store_dir).unwrap();
    store.collect_garbage().unwrap();
    assert!(outside.join(&name).exists(), "deleted through a link");
}

#[cfg(unix)]
#[test]
fn check_reports_a_link_anywhere_in_the_store() {
    let (_dir, store_dir) = store_with_a_snapshot();
    assert!(check(&store_dir).is_whole());
    let restores = store_dir.join("restores");
    fs::create_dir(&restores).unwrap();
    let link = restores.join("1-prefs.js");
    symlink("/etc/passwd", &link).unwrap();
    let report = check(&store_dir);
    assert!(!report.is_whole());
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.path == link && p.what.contains("/etc/passwd")),
        "{:?}",
        report.problems
    );
    // An orphan chunk that is a link is a problem, not just an orphan.
    let fan = fs::read_dir(store_dir.join(CHUNKS_DIR))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let prefix = fan.file_name().unwrap().to_string_lossy().into_owned();
    let orphan = fan.join(format!("{prefix}{}.zst", "0".repeat(62)));
    symlink("/etc/passwd", &orphan).unwrap();
    let report = check(&store_dir);
    assert!(
        report.problems.iter().any(|p| p.path == orphan),
        "{:?}",
        report.problems
    );
}

/// A profile in `dir/profile` with a real `sessionstore.jsonlz4`.
fn profile(dir: &Path) -> PathBuf {
    let profile = dir.join("profile");
    fs::create_dir_all(&profile).unwrap();
    fs::write(profile.join("sessionstore.jsonlz4"), source(7).bytes).unwrap();
    profile
}

/// A temporary folder holding [`profile`] with an empty
/// `sessionstore-backups/`: the folder (removed when dropped), the profile
/// and its `sessionstore-backups/`.
fn profile_with_backups() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let profile = profile(dir.path());
    let backups = profile.join("sessionstore-backups");
    fs::create_dir(&backups).unwrap();
    (dir, profile, backups)
}

fn back_up(dir: &Path, profile: &Path) -> (Vec<String>, Vec<(String, String)>) {
    let mut store = Store::create_or_open(dir.join("store")).unwrap();
    let report = backup_profile(&mut store, "p", profile, NOW).unwrap();
    let stored = report
        .snapshots
        .iter()
        .map(|s| s.file_name.clone())
        .collect();
    let skipped = report
        .skipped
        .iter()
        .map(|s| (s.name.clone(), s.reason.to_string()))
        .collect();
    (stored, skipped)
}

#[cfg(unix)]
#[test]
fn a_backup_follows_no_link_out_of_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profile(dir.path());
    // What a linked sessionstore-backups/ would bring in: session-named
    // files and anything else.
    let etc = dir.path().join("etc");
    fs::create_dir(&etc).unwrap();
    fs::write(etc.join("recovery.jsonlz4"), source(8).bytes).unwrap();
    fs::write(etc.join("shadow"), b"root:$6$secret:19000::::::\n").unwrap();
    symlink(&etc, profile.join("sessionstore-backups")).unwrap();
    let (stored, skipped) = back_up(dir.path(), &profile);
    assert_eq!(stored, ["sessionstore.jsonlz4"]);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, "sessionstore-backups");
    assert!(skipped[0].1.contains("symbolic link"), "{skipped:?}");

    // A linked session file in a real folder, and a link that loops.
    fs::remove_file(profile.join("sessionstore-backups")).unwrap();
    let backups = profile.join("sessionstore-backups");
    fs::create_dir(&backups).unwrap();
    symlink(etc.join("shadow"), backups.join("recovery.jsonlz4")).unwrap();
    symlink("recovery.baklz4", backups.join("recovery.baklz4")).unwrap();
    fs::write(backups.join("previous.jsonlz4"), source(9).bytes).unwrap();
    let (stored, skipped) = back_up(dir.path(), &profile);
    assert_eq!(
        stored,
        [
            "sessionstore.jsonlz4",
            "sessionstore-backups/previous.jsonlz4"
        ]
    );
    let names: Vec<&str> = skipped.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "sessionstore-backups/recovery.baklz4",
            "sessionstore-backups/recovery.jsonlz4"
        ]
    );
    assert!(skipped.iter().all(|s| s.1.contains("symbolic link")));
    // Nothing of the link's target is in the store.
    let store = Store::open_read_only(dir.path().join("store")).unwrap();
    for s in store.snapshots().unwrap() {
        let content = store.read_content(s.id).unwrap();
        assert!(!String::from_utf8_lossy(&content).contains("secret"));
    }
}

#[test]
fn a_backup_takes_only_session_file_names_up_to_the_bound() {
    let (dir, profile, backups) = profile_with_backups();
    fs::write(backups.join("recovery.jsonlz4"), source(8).bytes).unwrap();
    fs::write(
        backups.join("upgrade.jsonlz4-20260101123456"),
        source(9).bytes,
    )
    .unwrap();
    // Not session files: a random file, a copy the user made, a folder.
    fs::write(backups.join("random.bin"), vec![0x5a; 100_000]).unwrap();
    fs::write(backups.join("recovery.jsonlz4.old"), source(10).bytes).unwrap();
    fs::create_dir(backups.join("previous.jsonlz4")).unwrap();
    // Firefox's temporary file and hidden files: left out without a word.
    fs::write(backups.join("recovery.jsonlz4.tmp"), b"partial").unwrap();
    fs::write(backups.join(".DS_Store"), b"x").unwrap();
    // Over the bound (sparse: nothing is written).
    let big = backups.join("recovery.baklz4");
    fs::File::create(&big)
        .unwrap()
        .set_len(MAX_SESSION_BYTES + 1)
        .unwrap();
    // Other files of the profile folder are none of a backup's business.
    fs::write(profile.join("places.sqlite"), b"x").unwrap();

    let (stored, skipped) = back_up(dir.path(), &profile);
    assert_eq!(
        stored,
        [
            "sessionstore.jsonlz4",
            "sessionstore-backups/recovery.jsonlz4",
            "sessionstore-backups/upgrade.jsonlz4-20260101123456",
        ]
    );
    let got: Vec<(&str, &str)> = skipped
        .iter()
        .map(|(n, why)| (n.as_str(), why.as_str()))
        .collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[0].0, "sessionstore-backups/previous.jsonlz4");
    assert!(got[0].1.contains("a folder"), "{got:?}");
    assert_eq!(got[1].0, "sessionstore-backups/random.bin");
    assert!(got[1].1.contains("not a name Firefox gives"), "{got:?}");
    assert_eq!(got[2].0, "sessionstore-backups/recovery.baklz4");
    assert!(got[2].1.contains("more than the 512 MiB"), "{got:?}");
    assert_eq!(got[3].0, "sessionstore-backups/recovery.jsonlz4.old");
}

#[test]
fn a_file_promising_more_json_than_the_bound_is_kept_undecompressed() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profile(dir.path());
    // A small mozlz4 file whose header promises 600 MiB (as a flipped bit
    // in its size would): kept as a damaged file, never decompressed.
    let mut bytes = source(8).bytes;
    bytes[8..12].copy_from_slice(&(600u32 << 20).to_le_bytes());
    fs::write(profile.join("sessionstore.jsonlz4"), &bytes).unwrap();
    let mut store = Store::create_or_open(dir.path().join("store")).unwrap();
    let report = backup_profile(&mut store, "p", &profile, NOW).unwrap();
    let s = &report.snapshots[0];
    assert!(!s.is_ok());
    assert_eq!(s.json_size, bytes.len() as u64);
    assert!(
        format!("{:?}", s.status).contains("promises"),
        "{:?}",
        s.status
    );
    assert_eq!(store.read_content(s.id).unwrap(), bytes);
}

#[cfg(unix)]
#[test]
fn an_unreadable_file_is_a_warning_not_a_failed_backup() {
    let (dir, profile, backups) = profile_with_backups();
    let locked = backups.join("recovery.baklz4");
    fs::write(&locked, source(8).bytes).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    if fs::read(&locked).is_ok() {
        // Root reads anything: a mode cannot make a file unreadable.
        eprintln!("skipped: running as root");
        return;
    }
    let (stored, skipped) = back_up(dir.path(), &profile);
    assert_eq!(stored, ["sessionstore.jsonlz4"]);
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].1.contains("cannot be read"), "{skipped:?}");
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
#[test]
fn a_writer_makes_loose_chunk_files_private_but_never_through_a_link() {
    let (dir, store_dir) = store_with_a_snapshot();
    let files = chunk_files(&store_dir);
    assert!(files.len() >= 3);
    // As `cp -r` under a loose umask, or an archive, leaves them.
    for f in &files {
        fs::set_permissions(f, fs::Permissions::from_mode(0o666)).unwrap();
    }
    let fan = files[0].parent().unwrap().to_path_buf();
    fs::set_permissions(&fan, fs::Permissions::from_mode(0o777)).unwrap();
    fs::set_permissions(
        store_dir.join(CHUNKS_DIR),
        fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    // A file outside the store with a second name in it: not ours to chmod.
    let outside = dir.path().join("outside.txt");
    fs::write(&outside, b"x").unwrap();
    fs::set_permissions(&outside, fs::Permissions::from_mode(0o644)).unwrap();
    let linked = fan.join(format!("{}.zst", "e".repeat(64)));
    fs::hard_link(&outside, &linked).unwrap();
    let victim = victim(dir.path());
    symlink(&victim, fan.join(format!("{}.zst", "f".repeat(64)))).unwrap();

    let report = check(&store_dir);
    assert!(!report.is_whole());
    assert!(report.world_writable as usize > files.len(), "{report:?}");

    drop(Store::open(&store_dir).unwrap());
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    assert_eq!(mode(&fan), 0o700);
    assert_eq!(mode(&store_dir.join(CHUNKS_DIR)), 0o700);
    assert_eq!(mode(&outside), 0o644, "chmodded through a hard link");
    assert_untouched(&victim);
    let report = check(&store_dir);
    assert_eq!(report.world_writable, 0, "{:?}", report.problems);
}

/// Windows: a session file another program holds open without sharing (a
/// backup or sync tool, a scanner) cannot be read; the backup says so and
/// stores the rest.
#[cfg(windows)]
#[test]
fn a_file_held_open_without_sharing_is_a_warning_not_a_failed_backup() {
    use std::os::windows::fs::OpenOptionsExt;
    let (dir, profile, backups) = profile_with_backups();
    let held = backups.join("recovery.baklz4");
    fs::write(&held, source(8).bytes).unwrap();
    let _other_program = fs::File::options()
        .read(true)
        .share_mode(0)
        .open(&held)
        .unwrap();
    let (stored, skipped) = back_up(dir.path(), &profile);
    assert_eq!(stored, ["sessionstore.jsonlz4"]);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, "sessionstore-backups/recovery.baklz4");
    assert!(skipped[0].1.contains("cannot be read"), "{skipped:?}");
}
