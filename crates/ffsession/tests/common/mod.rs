//! Helpers the library's integration tests share: sessions made as Firefox
//! writes them, stores in temporary folders, what a store holds on disk, and
//! the fixtures. Each test file that uses them says `mod common;`.

// Every test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use ffsession::retention::RetentionPolicy;
use ffsession::sources::SourceKind;
use ffsession::store::{check_store, CheckReport, SnapshotSource, Store, CHUNKS_DIR};
use ffsession_gen::{generate, mozlz4, Spec};

/// The time most tests take as now (milliseconds since the epoch).
pub const NOW: u64 = 1_795_400_000_000;
/// An hour in milliseconds.
pub const HOUR: u64 = 3_600_000;
/// A day in milliseconds.
pub const DAY: u64 = 86_400_000;

/// `spec`'s generated session, compressed as Firefox writes it (mozlz4).
pub fn packed(spec: &Spec) -> Vec<u8> {
    mozlz4(generate(spec).as_bytes())
}

/// A generated session of about `json_bytes` bytes of JSON, seeded.
pub fn sized_session(seed: u64, json_bytes: usize) -> String {
    generate(&Spec {
        seed,
        ..Spec::sized(json_bytes)
    })
}

/// `bytes` as a backup finds them in `profile`'s recovery file, last
/// modified at `mtime_ms`.
pub fn recovery_source(profile: &str, bytes: Vec<u8>, mtime_ms: Option<u64>) -> SnapshotSource {
    SnapshotSource {
        bytes,
        profile: profile.into(),
        file_name: "sessionstore-backups/recovery.jsonlz4".into(),
        kind: SourceKind::Recovery,
        mtime_ms,
    }
}

/// A new store in `store/` of a temporary folder: the folder (removed when
/// dropped), the store's path and the store.
pub fn new_store() -> (tempfile::TempDir, PathBuf, Store) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let store = Store::create_or_open(&dir).unwrap();
    (tmp, dir, store)
}

/// A temporary folder holding an empty profile folder (`profile/`) and a new
/// store (`store/`): the folder (removed when dropped), the profile and the
/// store.
pub fn profile_and_store() -> (tempfile::TempDir, PathBuf, Store) {
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("profile");
    fs::create_dir_all(&profile).unwrap();
    let store = Store::create_or_open(tmp.path().join("store")).unwrap();
    (tmp, profile, store)
}

/// The chunk files on disk in the store at `store_dir`, sorted, leaving out
/// temporary files (none when there is no chunks folder).
pub fn chunk_files(store_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(fans) = fs::read_dir(store_dir.join(CHUNKS_DIR)) else {
        return out;
    };
    for fan in fans {
        for f in fs::read_dir(fan.unwrap().path()).unwrap() {
            let f = f.unwrap();
            if !ffsession::fs_util::is_temp_file_name(&f.file_name().to_string_lossy()) {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

/// Where the store at `store_dir` keeps the chunk whose digest is `hex`.
pub fn chunk_path(store_dir: &Path, hex: &str) -> PathBuf {
    store_dir
        .join(CHUNKS_DIR)
        .join(&hex[..2])
        .join(format!("{hex}.zst"))
}

/// Flip one bit in the middle of `file`.
pub fn flip_a_bit(file: &Path) {
    let mut bytes = fs::read(file).unwrap();
    let i = bytes.len() / 2;
    bytes[i] ^= 0x10;
    fs::write(file, bytes).unwrap();
}

/// `check` of the store at `dir`, without progress.
pub fn check(dir: &Path) -> CheckReport {
    check_store(dir, &mut |_, _| {}).unwrap()
}

/// A retention policy that keeps the last `n` snapshots and nothing by period.
pub fn keep_last(n: u32) -> RetentionPolicy {
    RetentionPolicy {
        keep_last: n,
        keep_hourly: 0,
        keep_daily: 0,
        keep_weekly: 0,
        keep_monthly: 0,
        keep_yearly: 0,
    }
}

/// The path of `rel` in the tests' fixtures folder.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// The mozlz4 (`.jsonlz4`) files in `dir`, in the order the folder lists
/// them (tests that draw random damage file by file depend on it).
pub fn jsonlz4_files(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonlz4"))
        .collect()
}
