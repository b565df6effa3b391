//! The backup store, end to end in temporary folders: round trips, dedup,
//! corrupt input, permissions, the lock, damaged catalogs and chunks, and
//! garbage collection after a simulated crash.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{chunk_files, new_store, recovery_source, NOW};
use ffsession::format::decompress;
use ffsession::sources::SourceKind;
use ffsession::store::{
    ChunkerParams, SnapshotId, SnapshotInfo, SnapshotSource, SnapshotStatus, Store, StoreError,
    CATALOG_FILE,
};
use ffsession::SessionData;
use ffsession_gen::{generate, mozlz4, Spec};
use serde_json::Value;

fn source(bytes: Vec<u8>) -> SnapshotSource {
    recovery_source("default-release", bytes, Some(NOW - 1_000))
}

/// A ~1 MB session (about 100 tabs in 2 windows of 50).
fn session(seed: u64) -> String {
    common::sized_session(seed, 1_000_000)
}

/// The same session with `tabs` tabs pointed at new URLs and a new lastUpdate.
fn edited(json: &str, tabs: &[usize], last_update: u64) -> String {
    let mut v: Value = serde_json::from_str(json).unwrap();
    let window = &mut v["windows"][0]["tabs"];
    for &t in tabs {
        let entry = &mut window[t]["entries"][0];
        entry["url"] = Value::from(format!("https://changed.example/{t}/{last_update}"));
        entry["title"] = Value::from(format!("Changed tab {t}"));
    }
    v["session"]["lastUpdate"] = Value::from(last_update);
    ffsession_gen::firefox_json(&v)
}

/// Add `bytes` as the profile's recovery file (see [`source`]), taken at `at`.
fn add_recovery(store: &mut Store, bytes: Vec<u8>, at: u64) -> SnapshotInfo {
    store.add_snapshot(source(bytes), at).unwrap()
}

#[test]
fn mozlz4_round_trip_is_byte_identical() {
    let (_tmp, _dir, mut store) = new_store();
    let json = session(1);
    let packed = mozlz4(json.as_bytes());
    let info = add_recovery(&mut store, packed.clone(), NOW);

    let expected = SessionData::from_bytes("x", packed.clone())
        .unwrap()
        .parse()
        .unwrap()
        .summary();
    assert_eq!(info.status, SnapshotStatus::Ok);
    assert_eq!(info.format, Some(ffsession::Format::Mozlz4));
    assert_eq!(info.json_size, json.len() as u64);
    assert_eq!(info.taken_at_ms, NOW);
    assert_eq!(info.mtime_ms, Some(NOW - 1_000));
    assert_eq!(info.kind, SourceKind::Recovery);
    assert_eq!(info.profile, "default-release");
    assert_eq!(info.file_name, "sessionstore-backups/recovery.jsonlz4");
    assert_eq!(info.last_update_ms, expected.timestamps.last_update);
    let counts = info.counts.unwrap();
    assert_eq!(counts.windows, expected.windows as u64);
    assert_eq!(counts.tabs, expected.tabs as u64);
    assert_eq!(counts.closed_tabs, expected.closed_tabs as u64);
    assert_eq!(counts.closed_windows, expected.closed_windows as u64);
    assert!(info.stored_size > 0 && info.stored_size < packed.len() as u64);

    assert_eq!(store.read_json(info.id).unwrap(), json.as_bytes());
    assert_eq!(store.read_content(info.id).unwrap(), json.as_bytes());
    let exported = store.export_mozlz4(info.id).unwrap();
    assert_eq!(decompress(&exported).unwrap(), json.as_bytes());
    SessionData::from_bytes("exported", exported)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(store.snapshot(info.id).unwrap(), info);
    assert_eq!(store.snapshots().unwrap(), vec![info]);
}

#[test]
fn json_round_trip_keeps_the_file_exactly() {
    let (_tmp, _dir, mut store) = new_store();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(session(2).as_bytes());
    bytes.extend_from_slice(b"\n");
    let mut src = source(bytes.clone());
    src.file_name = "sessionstore.js".into();
    src.kind = SourceKind::Legacy;
    src.mtime_ms = None;
    let info = store.add_snapshot(src, NOW).unwrap();
    assert!(info.is_ok());
    assert_eq!(info.format, Some(ffsession::Format::Json));
    assert_eq!(info.kind, SourceKind::Legacy);
    assert_eq!(info.mtime_ms, None);
    assert_eq!(store.read_json(info.id).unwrap(), bytes);
    // The mozlz4 export holds the JSON value alone, as Firefox writes it.
    let exported = decompress(&store.export_mozlz4(info.id).unwrap()).unwrap();
    assert_eq!(exported, &bytes[3..bytes.len() - 1]);
}

#[test]
fn identical_content_adds_a_row_but_no_chunks() {
    let (_tmp, dir, mut store) = new_store();
    let json = session(3);
    let first = add_recovery(&mut store, mozlz4(json.as_bytes()), NOW);
    let files = chunk_files(&dir);
    assert!(files.len() > 3, "{} chunks", files.len());

    // The same file again, and the same JSON as a plain JSON file.
    let again = add_recovery(&mut store, mozlz4(json.as_bytes()), NOW + 15_000);
    let as_json = add_recovery(&mut store, json.clone().into_bytes(), NOW + 30_000);
    assert_eq!(chunk_files(&dir), files);
    for info in [&again, &as_json] {
        assert_eq!(info.stored_size, 0);
        assert_eq!(info.content_hash, first.content_hash);
    }
    let stats = store.stats().unwrap();
    assert_eq!(stats.snapshots, 3);
    assert_eq!(stats.contents, 1);
    assert_eq!(stats.chunks, files.len() as u64);
    assert_eq!(stats.chunk_raw_bytes, json.len() as u64);
    // Newest first.
    let ids: Vec<SnapshotId> = store.snapshots().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(ids, [as_json.id, again.id, first.id]);
}

#[test]
fn near_identical_sessions_add_only_a_few_chunks() {
    let (_tmp, dir, mut store) = new_store();
    let base = session(4);
    let first = add_recovery(&mut store, mozlz4(base.as_bytes()), NOW);
    let before = chunk_files(&dir).len();

    let next = edited(&base, &[3, 25, 47], 1_795_300_015_000);
    assert_ne!(next, base);
    let second = add_recovery(&mut store, mozlz4(next.as_bytes()), NOW + 15_000);
    let added = chunk_files(&dir).len() - before;
    assert!(
        (1..=8).contains(&added),
        "{added} new chunks of {before} for 3 edited tabs and lastUpdate"
    );
    assert!(
        second.stored_size * 4 < first.stored_size,
        "second snapshot stored {} bytes, the first {}",
        second.stored_size,
        first.stored_size
    );
    assert_eq!(second.last_update_ms, Some(1_795_300_015_000));
    assert_eq!(store.read_json(first.id).unwrap(), base.as_bytes());
    assert_eq!(store.read_json(second.id).unwrap(), next.as_bytes());
}

#[test]
fn corrupt_input_is_kept_and_marked_with_the_reason() {
    let (_tmp, _dir, mut store) = new_store();
    let packed = mozlz4(session(5).as_bytes());
    let truncated = packed[..packed.len() / 2].to_vec();
    let cases: Vec<(Vec<u8>, Option<ffsession::Format>, &str)> = vec![
        (truncated, Some(ffsession::Format::Mozlz4), "LZ4"),
        (
            b"{\"windows\": [".to_vec(),
            Some(ffsession::Format::Json),
            "not a valid session",
        ),
        (
            vec![0x89, b'P', b'N', b'G', 0, 1, 2],
            None,
            "not a session file",
        ),
        (Vec::new(), None, "empty"),
        (
            mozlz4(b"{\"windows\": 3}"),
            Some(ffsession::Format::Mozlz4),
            "not a valid session",
        ),
    ];
    for (bytes, format, reason) in cases {
        let info = add_recovery(&mut store, bytes.clone(), NOW);
        match &info.status {
            SnapshotStatus::Corrupt { reason: why } => {
                assert!(why.contains(reason), "{why:?} should mention {reason:?}")
            }
            SnapshotStatus::Ok => panic!("{bytes:?} stored as ok"),
        }
        assert_eq!(info.format, format);
        assert_eq!(info.counts, None);
        assert_eq!(info.json_size, bytes.len() as u64);
        assert_eq!(store.read_content(info.id).unwrap(), bytes);
        let err = store.read_json(info.id).unwrap_err();
        assert!(matches!(err, StoreError::CorruptSnapshot { .. }), "{err}");
        assert!(err.hint().is_some());
        assert!(store.export_mozlz4(info.id).is_err());
    }
    assert_eq!(store.snapshots().unwrap().len(), 5);
}

#[cfg(unix)]
#[test]
fn folders_are_0700_and_files_0600() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nested/store");
    {
        let mut store = Store::create_or_open(&dir).unwrap();
        add_recovery(&mut store, mozlz4(session(6).as_bytes()), NOW);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&tmp.path().join("nested")), 0o700);
        assert_eq!(mode(&dir.join(ffsession::store::CHUNKS_DIR)), 0o700);
        for name in [
            CATALOG_FILE,
            "catalog.sqlite-wal",
            ffsession::store::LOCK_FILE,
        ] {
            assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
        }
        let chunks = chunk_files(&dir);
        assert!(!chunks.is_empty());
        for c in &chunks {
            assert_eq!(mode(c), 0o600, "{}", c.display());
            assert_eq!(mode(c.parent().unwrap()), 0o700);
        }
    }
    // Loosened by hand: opening for writing tightens them again.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(dir.join(CATALOG_FILE), fs::Permissions::from_mode(0o644)).unwrap();
    drop(Store::open(&dir).unwrap());
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(CATALOG_FILE)), 0o600);

    // An existing, looser folder given to create_or_open is tightened too.
    let existing = tmp.path().join("existing");
    fs::create_dir(&existing).unwrap();
    fs::set_permissions(&existing, fs::Permissions::from_mode(0o775)).unwrap();
    drop(Store::create_or_open(&existing).unwrap());
    assert_eq!(mode(&existing), 0o700);
}

#[test]
fn a_second_writer_gets_the_lock_error() {
    let (_tmp, dir, mut store) = new_store();
    let info = add_recovery(&mut store, mozlz4(session(7).as_bytes()), NOW);
    for second in [Store::open(&dir), Store::create_or_open(&dir)] {
        let err = second.unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!("another ffsession is using the store {}", dir.display())
        );
        assert!(err.hint().is_some());
    }
    // Readers need no lock, and cannot write.
    let mut reader = Store::open_read_only(&dir).unwrap();
    assert!(reader.is_read_only());
    assert_eq!(reader.read_json(info.id).unwrap(), session(7).as_bytes());
    let err = reader
        .add_snapshot(source(b"{}".to_vec()), NOW)
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    assert!(reader.remove_snapshot(info.id).is_err());
    assert!(reader.collect_garbage().is_err());
    drop(store);
    let mut store = Store::open(&dir).unwrap();
    assert_eq!(store.snapshots().unwrap().len(), 1);
    store.remove_snapshot(info.id).unwrap();
}

#[test]
fn a_garbage_catalog_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    drop(Store::create_or_open(&dir).unwrap());
    let catalog = dir.join(CATALOG_FILE);
    let _ = fs::remove_file(dir.join("catalog.sqlite-wal"));
    let _ = fs::remove_file(dir.join("catalog.sqlite-shm"));
    fs::write(
        &catalog,
        b"this is not an SQLite database, just garbage bytes".repeat(200),
    )
    .unwrap();
    for result in [
        Store::open(&dir),
        Store::create_or_open(&dir),
        Store::open_read_only(&dir),
    ] {
        let err = result.unwrap_err();
        assert!(matches!(err, StoreError::CatalogCorrupt { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&catalog.display().to_string()), "{msg}");
        assert!(msg.contains("not a database"), "{msg}");
        assert!(err.hint().is_some());
    }
    // The garbage is still there: nothing was written over it.
    assert!(fs::read(&catalog).unwrap().starts_with(b"this is not"));
}

#[test]
fn another_programs_database_or_a_newer_schema_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    fs::create_dir(&dir).unwrap();
    let catalog = dir.join(CATALOG_FILE);
    {
        let conn = rusqlite::Connection::open(&catalog).unwrap();
        conn.execute_batch("CREATE TABLE bookmarks (url TEXT)")
            .unwrap();
    }
    let err = Store::create_or_open(&dir).unwrap_err();
    assert!(matches!(err, StoreError::CatalogCorrupt { .. }), "{err}");
    assert!(err.to_string().contains("another program"), "{err}");

    let newer = tmp.path().join("newer");
    drop(Store::create_or_open(&newer).unwrap());
    {
        let conn = rusqlite::Connection::open(newer.join(CATALOG_FILE)).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(&newer).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("schema version 99"), "{err}");
}

#[test]
fn a_missing_or_damaged_chunk_is_named_on_read() {
    let (_tmp, dir, mut store) = new_store();
    let json = session(8);
    let info = add_recovery(&mut store, mozlz4(json.as_bytes()), NOW);
    let files = chunk_files(&dir);
    let victim = &files[files.len() / 2];
    let name = victim.file_stem().unwrap().to_string_lossy().into_owned();
    fs::remove_file(victim).unwrap();
    let err = store.read_json(info.id).unwrap_err();
    match &err {
        StoreError::MissingChunk {
            path,
            digest,
            snapshot,
        } => {
            assert_eq!(path, victim);
            assert_eq!(digest.to_hex(), name);
            assert_eq!(*snapshot, info.id);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(&name), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
    assert!(err.hint().is_some());
    assert!(store.export_mozlz4(info.id).is_err());

    // Taking the same session again writes the missing chunk back.
    let again = add_recovery(&mut store, mozlz4(json.as_bytes()), NOW + 1);
    assert!(again.stored_size > 0);
    assert_eq!(store.read_json(info.id).unwrap(), json.as_bytes());

    // A chunk whose bytes changed is caught by its digest.
    fs::write(victim, zstd::bulk::compress(b"other bytes", 3).unwrap()).unwrap();
    let err = store.read_json(info.id).unwrap_err();
    assert!(matches!(err, StoreError::DamagedChunk { .. }), "{err}");
    assert!(err.to_string().contains(&name), "{err}");
    // And one that is not zstd at all.
    fs::write(victim, b"garbage").unwrap();
    let err = store.read_json(info.id).unwrap_err();
    assert!(matches!(err, StoreError::DamagedChunk { .. }), "{err}");
}

#[test]
fn gc_removes_only_unreferenced_chunks() {
    let (tmp, dir, mut store) = new_store();
    let keep_json = session(9);
    let kept = add_recovery(&mut store, mozlz4(keep_json.as_bytes()), NOW);
    let kept_files = chunk_files(&dir);
    assert!(store.unreferenced_chunks().unwrap().is_empty());

    // A crash after the chunks of a snapshot were written but before its row
    // committed: the same files another store wrote for a different session,
    // dropped into this store with no catalog row.
    let other_dir = tmp.path().join("other");
    let mut other = Store::create_or_open(&other_dir).unwrap();
    add_recovery(&mut other, mozlz4(session(10).as_bytes()), NOW);
    drop(other);
    let mut orphans = Vec::new();
    for f in chunk_files(&other_dir) {
        let rel = f.strip_prefix(&other_dir).unwrap();
        let target = dir.join(rel);
        if !target.exists() {
            fs::create_dir_all(target.parent().unwrap()).unwrap();
            fs::copy(&f, &target).unwrap();
            orphans.push(target);
        }
    }
    assert!(!orphans.is_empty());
    // And a temporary file an interrupted write left behind.
    let temp = kept_files[0].parent().unwrap().join(".ffsession-crash.tmp");
    fs::write(&temp, b"partial").unwrap();

    let found = store.unreferenced_chunks().unwrap();
    let found_paths: Vec<PathBuf> = found.iter().map(|c| c.path.clone()).collect();
    let mut expected = orphans.clone();
    expected.sort();
    assert_eq!(found_paths, expected);
    assert!(found.iter().all(|c| !c.in_catalog && c.size > 0));
    assert_eq!(store.read_json(kept.id).unwrap(), keep_json.as_bytes());

    // A snapshot that shares most chunks with the kept one, then removed.
    let edit = edited(&keep_json, &[10, 40], 1_795_300_099_000);
    let removed = add_recovery(&mut store, mozlz4(edit.as_bytes()), NOW + 1);
    let with_removed = chunk_files(&dir);
    store.remove_snapshot(removed.id).unwrap();
    let err = store.snapshot(removed.id).unwrap_err();
    assert!(matches!(err, StoreError::UnknownSnapshot { .. }), "{err}");
    assert!(store.remove_snapshot(removed.id).is_err());
    let found = store.unreferenced_chunks().unwrap();
    let only_removed: Vec<_> = found.iter().filter(|c| c.in_catalog).collect();
    assert_eq!(
        only_removed.len(),
        with_removed.len() - kept_files.len() - orphans.len()
    );

    let report = store.collect_garbage().unwrap();
    assert_eq!(report.chunks_removed as usize, found.len());
    assert_eq!(
        report.bytes_removed,
        found.iter().map(|c| c.size).sum::<u64>()
    );
    assert_eq!(report.contents_removed, 1);
    assert_eq!(report.temp_files_removed, 1);
    assert!(!temp.exists());
    assert_eq!(chunk_files(&dir), kept_files);
    assert!(store.unreferenced_chunks().unwrap().is_empty());
    assert_eq!(store.read_json(kept.id).unwrap(), keep_json.as_bytes());
    assert_eq!(store.stats().unwrap().chunks, kept_files.len() as u64);

    // Nothing referenced is ever removed, even with every snapshot sharing chunks.
    let report = store.collect_garbage().unwrap();
    assert_eq!(report.chunks_removed, 0);
    assert_eq!(store.read_json(kept.id).unwrap(), keep_json.as_bytes());
}

#[test]
fn unknown_ids_not_a_store_and_not_writable() {
    let (tmp, _dir, store) = new_store();
    let err = store.read_json(SnapshotId(42)).unwrap_err();
    assert!(matches!(err, StoreError::UnknownSnapshot { .. }), "{err}");
    assert!(err.to_string().contains("42"), "{err}");

    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    for result in [
        Store::open(&empty),
        Store::open_read_only(&empty),
        Store::open(tmp.path().join("nowhere")),
    ] {
        let err = result.unwrap_err();
        assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    }
    // `open` must not have turned the empty folder into a store.
    assert_eq!(fs::read_dir(&empty).unwrap().count(), 0);

    #[cfg(target_os = "linux")]
    {
        let err = Store::create_or_open("/sys/ffsession-store-test").unwrap_err();
        assert!(matches!(err, StoreError::NotWritable { .. }), "{err:?}");
        assert!(
            err.to_string().contains("/sys/ffsession-store-test"),
            "{err}"
        );
        assert!(err.hint().is_some());
    }

    // A folder with other files is never turned into a store.
    let docs = tmp.path().join("documents");
    fs::create_dir(&docs).unwrap();
    fs::write(docs.join("notes.txt"), b"mine").unwrap();
    let err = Store::create_or_open(&docs).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    assert_eq!(fs::read_dir(&docs).unwrap().count(), 1);

    let file = tmp.path().join("a-file");
    fs::write(&file, b"x").unwrap();
    assert!(Store::create_or_open(file.join("store")).is_err());
}

#[cfg(unix)]
#[test]
fn a_folder_without_write_permission_is_not_writable() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let parent = tmp.path().join("ro");
    fs::create_dir(&parent).unwrap();
    fs::set_permissions(&parent, fs::Permissions::from_mode(0o500)).unwrap();
    if fs::write(parent.join("probe"), b"").is_ok() {
        // Running as root: permissions do not apply.
        return;
    }
    let err = Store::create_or_open(parent.join("store")).unwrap_err();
    assert!(matches!(err, StoreError::NotWritable { .. }), "{err:?}");
}

#[test]
fn chunker_params_are_recorded_at_creation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let small = ChunkerParams {
        min: 2048,
        avg: 8192,
        max: 32768,
    };
    let mut store = Store::create_or_open_with(&dir, small).unwrap();
    assert_eq!(store.chunker_params(), small);
    let json = session(11);
    let info = add_recovery(&mut store, json.clone().into_bytes(), NOW);
    drop(store);
    let store = Store::open(&dir).unwrap();
    assert_eq!(store.chunker_params(), small);
    assert_eq!(store.read_json(info.id).unwrap(), json.as_bytes());
    drop(store);
    let reopened = Store::create_or_open(&dir).unwrap();
    assert_eq!(reopened.chunker_params(), small);

    let bad = ChunkerParams {
        min: 1,
        avg: 2,
        max: 3,
    };
    let err = Store::create_or_open_with(tmp.path().join("bad"), bad).unwrap_err();
    assert!(
        matches!(err, StoreError::InvalidChunkerParams { .. }),
        "{err}"
    );
    assert!(!tmp.path().join("bad").exists());
}

#[test]
fn snapshots_are_listed_newest_first() {
    let (_tmp, _dir, mut store) = new_store();
    let json = session(12);
    let mut ids = Vec::new();
    for at in [NOW + 20, NOW, NOW + 10] {
        ids.push(add_recovery(&mut store, json.clone().into_bytes(), at).id);
    }
    let listed: Vec<(SnapshotId, u64)> = store
        .snapshots()
        .unwrap()
        .iter()
        .map(|s| (s.id, s.taken_at_ms))
        .collect();
    assert_eq!(
        listed,
        [(ids[0], NOW + 20), (ids[2], NOW + 10), (ids[1], NOW)]
    );
    let info = serde_json::to_value(store.snapshot(ids[0]).unwrap()).unwrap();
    assert_eq!(info["status"], "ok");
    assert_eq!(info["kind"], "recovery");
    assert_eq!(info["format"], "json");
    assert_eq!(info["content_hash"].as_str().unwrap().len(), 64);
}

/// A generated session whose first window holds exactly `tabs` (URL, title),
/// each with one history entry.
fn with_tabs(seed: u64, tabs: &[(&str, &str)]) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(&generate(&Spec {
        seed,
        tabs: 4,
        windows: 2,
        ..Spec::default()
    }))
    .unwrap();
    v["windows"][0]["tabs"] = tab_list(tabs);
    mozlz4(ffsession_gen::firefox_json(&v).as_bytes())
}

/// Tabs of `(URL, title)`, each with one history entry, as a window holds them.
fn tab_list(tabs: &[(&str, &str)]) -> Value {
    tabs.iter()
        .map(|(url, title)| serde_json::json!({"entries": [{"url": url, "title": title}], "index": 1}))
        .collect()
}

/// `packed` (a mozlz4 session) with its `session.lastUpdate` set to `ms`:
/// search and history go by the session's own time.
fn updated_at(packed: Vec<u8>, ms: u64) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&decompress(&packed).unwrap()).unwrap();
    v["session"]["lastUpdate"] = ms.into();
    mozlz4(ffsession_gen::firefox_json(&v).as_bytes())
}

fn search(store: &Store, query: &str) -> Vec<ffsession::store::SearchHit> {
    store
        .search_tabs(query, ffsession::store::TimeRange::default(), 100)
        .unwrap()
}

#[test]
fn backups_index_tabs_for_search_with_first_and_last_seen() {
    let (_tmp, _dir, mut store) = new_store();
    let a = ("https://zebra.example/stripes", "Zebrafish husbandry notes");
    let b = ("https://quokka.example/smile", "Quokka selfies");
    let one = add_recovery(&mut store, updated_at(with_tabs(1, &[a, b]), NOW), NOW);
    let second = updated_at(with_tabs(1, &[a]), NOW + 1_000);
    let two = add_recovery(&mut store, second.clone(), NOW + 1_000);
    // The same content again: it extends the runs, unparsed. Its session was
    // last updated when the second one was: last seen then.
    let three = add_recovery(&mut store, second, NOW + 2_000);

    let hits = search(&store, "zebrafish");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].url, a.0);
    assert_eq!(hits[0].title, a.1);
    assert_eq!(hits[0].first_seen_ms, NOW);
    assert_eq!(hits[0].last_seen_ms, NOW + 1_000);
    assert_eq!(hits[0].snapshots, 3);
    assert_eq!(hits[0].newest_snapshot, three.id);

    let hits = search(&store, "quokka");
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].snapshots, hits[0].newest_snapshot), (1, one.id));
    assert_eq!(hits[0].last_seen_ms, NOW);

    // A URL fragment, and a range that leaves out the first snapshot.
    let hits = store
        .search_tabs(
            "stripes",
            ffsession::store::TimeRange {
                since_ms: Some(NOW + 500),
                until_ms: Some(NOW + 1_500),
            },
            100,
        )
        .unwrap();
    // (the second and third snapshots hold the same session, of NOW + 1_000)
    assert_eq!(hits.len(), 1);
    assert_eq!(
        (hits[0].snapshots, hits[0].newest_snapshot),
        (2, three.id.max(two.id))
    );

    // Removing a snapshot removes its tab rows.
    store.remove_snapshot(one.id).unwrap();
    assert!(search(&store, "quokka").is_empty());
}

#[test]
fn search_text_is_a_bound_parameter_and_bad_syntax_is_a_typed_error() {
    let (_tmp, dir, mut store) = new_store();
    let tricky = ("https://x.example/", "Robert'); DROP TABLE snapshots;--");
    add_recovery(&mut store, with_tabs(2, &[tricky]), NOW);
    assert_eq!(search(&store, "\"DROP TABLE\"").len(), 1);
    let r = store.search_tabs("\"unbalanced", Default::default(), 10);
    assert!(
        matches!(r, Err(ffsession::store::SearchError::BadQuery { .. })),
        "{r:?}"
    );
    let err = store
        .search_tabs("'); DROP TABLE snapshots;--", Default::default(), 10)
        .unwrap_err();
    assert!(err.hint().is_some());
    drop(store);
    let store = Store::open_read_only(&dir).unwrap();
    assert_eq!(store.snapshots().unwrap().len(), 1);
}

#[test]
fn a_literal_query_matches_punctuated_words_as_written() {
    use ffsession::store::literal_query;
    let (_tmp, _dir, mut store) = new_store();
    let local = ("http://127.0.0.1:8080/admin/login", "Local admin");
    let example = ("https://example.com/docs/path", "Narwhal domain OR NOT");
    let other = ("https://example.org/127/0/0/2", "Other narwhal");
    add_recovery(&mut store, with_tabs(6, &[local, example, other]), NOW);
    let urls = |text: &str| -> Vec<String> {
        let query = literal_query(text).unwrap();
        let mut urls: Vec<String> = search(&store, &query).into_iter().map(|h| h.url).collect();
        urls.sort();
        urls
    };
    assert_eq!(urls("127.0.0.1"), [local.0]);
    assert_eq!(urls("127.0.0.1:8080"), [local.0]);
    assert_eq!(urls("example.com"), [example.0]);
    assert_eq!(urls("https://example.com/docs/path"), [example.0]);
    assert_eq!(urls("http://127.0.0.1:8080/admin"), [local.0]);
    // FTS5 operators and quotes are text; every word must match.
    assert_eq!(urls("OR NOT"), [example.0]);
    assert_eq!(urls("\"narwhal"), [example.0, other.0]);
    assert_eq!(urls("title:admin"), Vec::<String>::new());
    assert_eq!(urls("narwhal local"), Vec::<String>::new());
    // A trailing `*` is a prefix.
    assert_eq!(urls("adm*"), [local.0]);
    assert_eq!(urls("adm"), Vec::<String>::new());
    assert_eq!(literal_query("  \t "), None);
}

#[test]
fn search_and_history_go_by_the_session_s_own_time() {
    let (_tmp, _dir, mut store) = new_store();
    let x = ("https://upgrade.example/", "Upgraded tab");
    // The current session, then an upgrade copy of a session a week older
    // stored after it (a file Firefox wrote at its last update).
    let week = 7 * 86_400_000;
    let current = add_recovery(&mut store, updated_at(with_tabs(8, &[x]), NOW), NOW);
    let mut old = source(updated_at(with_tabs(9, &[x]), NOW - week));
    old.file_name = "sessionstore-backups/upgrade.jsonlz4-20261101000000".into();
    old.kind = SourceKind::Upgrade;
    let upgrade = store.add_snapshot(old, NOW + 60_000).unwrap();
    let hits = search(&store, "upgraded");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].snapshots, 2);
    assert_eq!(hits[0].first_seen_ms, NOW - week);
    assert_eq!(
        hits[0].last_seen_ms, NOW,
        "not the backup time of the upgrade copy"
    );
    assert_eq!(
        hits[0].newest_snapshot, current.id,
        "not the one stored last"
    );
    // A range by session time.
    let in_range = |since, until| {
        store
            .search_tabs(
                "upgraded",
                ffsession::store::TimeRange {
                    since_ms: Some(since),
                    until_ms: Some(until),
                },
                10,
            )
            .unwrap()
    };
    let last_week = in_range(NOW - week - 1, NOW - week + 1);
    assert_eq!(last_week.len(), 1);
    assert_eq!(last_week[0].newest_snapshot, upgrade.id);
    assert!(in_range(NOW + 30_000, NOW + 90_000).is_empty());
    // History in the session's order: the upgrade copy first.
    let stretches = store.tab_history(x.0).unwrap();
    assert_eq!(stretches.len(), 1, "{stretches:?}");
    assert_eq!(stretches[0].first_snapshot, upgrade.id);
    assert_eq!(stretches[0].last_snapshot, current.id);
    assert_eq!(
        (stretches[0].from_ms, stretches[0].to_ms),
        (NOW - week, NOW)
    );
}

#[test]
fn history_finds_stretches_and_windows() {
    let (_tmp, _dir, mut store) = new_store();
    let x = ("https://stretch.example/", "Stretchy");
    let y = ("https://other.example/", "Other");
    let mut ids = Vec::new();
    for (i, tabs) in [vec![x, y], vec![x], vec![y], vec![y, x]]
        .iter()
        .enumerate()
    {
        let at = NOW + i as u64 * 1_000;
        let info = add_recovery(&mut store, updated_at(with_tabs(3, tabs), at), at);
        ids.push(info.id);
    }
    let stretches = store.tab_history(x.0).unwrap();
    assert_eq!(stretches.len(), 2, "{stretches:?}");
    assert_eq!(stretches[0].from_ms, NOW);
    assert_eq!(stretches[0].to_ms, NOW + 1_000);
    assert_eq!(stretches[0].snapshots, 2);
    assert_eq!(stretches[0].windows, vec![1]);
    assert_eq!(stretches[1].first_snapshot, ids[3]);
    assert_eq!(stretches[1].last_snapshot, ids[3]);
    assert!(store
        .tab_history("https://never.example/")
        .unwrap()
        .is_empty());
}

#[test]
fn reindex_matches_the_index_built_at_backup_time() {
    let (_tmp, _dir, mut store) = new_store();
    let a = ("https://alpha.example/", "Alphabet soup recipes");
    let b = ("https://beta.example/", "Beta soup");
    add_recovery(&mut store, with_tabs(4, &[a, b]), NOW);
    add_recovery(&mut store, with_tabs(4, &[b]), NOW + 1);
    add_recovery(&mut store, with_tabs(4, &[b]), NOW + 2);
    add_recovery(&mut store, b"garbage".to_vec(), NOW + 3);
    let before = search(&store, "soup");
    assert_eq!(before.len(), 2);
    let mut calls = Vec::new();
    let report = store
        .reindex_tabs(|done, total| calls.push((done, total)))
        .unwrap();
    assert_eq!(report.snapshots, 3);
    assert_eq!(calls.last(), Some(&(3, 3)));
    assert_eq!(search(&store, "soup"), before);
}

/// Turn the (closed) current store in `dir` into one an older ffsession
/// wrote with catalog schema `version` (1 to 4): no manifests, no
/// `index.sqlite`, and (from version 2) the tab index inside the catalog.
fn make_old_store(dir: &Path, version: i64) {
    let conn = rusqlite::Connection::open(dir.join(CATALOG_FILE)).unwrap();
    conn.execute(
        "ATTACH DATABASE ?1 AS idx",
        [dir.join(ffsession::store::INDEX_FILE).to_str().unwrap()],
    )
    .unwrap();
    conn.execute_batch(
        "DROP TABLE damaged_chunks;
         ALTER TABLE archived_tabs DROP COLUMN position;
         CREATE TABLE main.tab_entries (
             id INTEGER PRIMARY KEY, url TEXT NOT NULL, title TEXT NOT NULL, UNIQUE (url, title));
         CREATE TABLE main.tab_runs (
             id INTEGER PRIMARY KEY,
             tab_entry_id INTEGER NOT NULL REFERENCES tab_entries(id),
             source_name TEXT NOT NULL, first_snapshot INTEGER NOT NULL,
             last_snapshot INTEGER NOT NULL CHECK (last_snapshot >= first_snapshot),
             window INTEGER NOT NULL, position INTEGER NOT NULL,
             pinned INTEGER NOT NULL CHECK (pinned IN (0, 1)),
             hidden INTEGER NOT NULL CHECK (hidden IN (0, 1)), container INTEGER NOT NULL,
             state TEXT NOT NULL CHECK (state IN ('open', 'closed', 'closed-window')),
             last_accessed INTEGER);
         CREATE VIRTUAL TABLE main.tab_search USING fts5(
             title, url, content = 'tab_entries', content_rowid = 'id');
         CREATE TRIGGER main.tab_entries_insert AFTER INSERT ON tab_entries BEGIN
             INSERT INTO tab_search (rowid, title, url) VALUES (new.id, new.title, new.url);
         END;
         CREATE TRIGGER main.tab_entries_delete AFTER DELETE ON tab_entries BEGIN
             INSERT INTO tab_search (tab_search, rowid, title, url)
             VALUES ('delete', old.id, old.title, old.url);
         END;
         INSERT INTO main.tab_entries SELECT id, url, title FROM idx.tab_entries;
         INSERT INTO main.tab_runs SELECT * FROM idx.tab_runs;
         DETACH DATABASE idx;",
    )
    .unwrap();
    if version < 4 {
        conn.execute_batch("ALTER TABLE chunks DROP COLUMN frame_hash;")
            .unwrap();
    }
    if version < 3 {
        conn.execute_batch("DROP TABLE archived_tabs;").unwrap();
    }
    if version < 2 {
        conn.execute_batch(
            "DROP TABLE tab_search; DROP TABLE tab_runs; DROP TABLE tab_entries;
             DROP INDEX snapshots_by_source;",
        )
        .unwrap();
    }
    conn.pragma_update(None, "user_version", version).unwrap();
    drop(conn);
    for name in [
        "index.sqlite",
        "index.sqlite-wal",
        "index.sqlite-shm",
        "store.json",
    ] {
        let _ = fs::remove_file(dir.join(name));
    }
    for folder in ["snapshots", "contents"] {
        fs::remove_dir_all(dir.join(folder)).unwrap();
    }
}

#[test]
fn a_version_1_catalog_reads_without_the_index_and_upgrades_when_written() {
    let (_tmp, dir, mut store) = new_store();
    let a = ("https://old.example/", "Oldfashioned tab");
    add_recovery(&mut store, with_tabs(5, &[a]), NOW);
    drop(store);
    make_old_store(&dir, 1);
    let ro = Store::open_read_only(&dir).unwrap();
    assert_eq!(ro.snapshots().unwrap().len(), 1);
    assert!(matches!(
        ro.search_tabs("old", Default::default(), 10),
        Err(ffsession::store::SearchError::Store(
            StoreError::SchemaTooOld { found: 1, .. }
        ))
    ));
    drop(ro);
    let mut store = Store::open(&dir).unwrap();
    assert!(search(&store, "oldfashioned").is_empty());
    // The same content again after the upgrade: its predecessor has no runs
    // to extend, so it is parsed and indexed.
    add_recovery(&mut store, with_tabs(5, &[a]), NOW + 1_000);
    assert_eq!(search(&store, "oldfashioned")[0].snapshots, 1);
    store.reindex_tabs(|_, _| {}).unwrap();
    let hits = search(&store, "oldfashioned");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].snapshots, 2);
}

#[test]
fn a_version_2_catalog_reads_with_no_archived_tabs_and_upgrades_when_written() {
    let (_tmp, dir, mut store) = new_store();
    let a = ("https://old.example/", "Oldfashioned tab");
    let first = add_recovery(&mut store, with_tabs(5, &[a]), NOW);
    drop(store);
    make_old_store(&dir, 2);
    let ro = Store::open_read_only(&dir).unwrap();
    assert!(ro.archived_tabs().unwrap().is_empty());
    assert_eq!(search(&ro, "oldfashioned")[0].archived, None);
    drop(ro);
    let mut store = Store::open(&dir).unwrap();
    let tab = ffsession::store::ArchivedTab {
        url: a.0.to_owned(),
        title: a.1.to_owned(),
        archived_at_ms: NOW + 5,
        snapshot: first.id,
        reason: "old".to_owned(),
        window: 1,
        last_accessed: Some(NOW - 1),
        position: Some(1),
    };
    store.record_archived(std::slice::from_ref(&tab)).unwrap();
    assert_eq!(store.archived_tabs().unwrap(), vec![tab]);
    let hit = &search(&store, "oldfashioned")[0];
    assert_eq!(hit.archived.as_ref().unwrap().snapshot, first.id);
    assert_eq!(store.archive_snapshots().unwrap(), vec![first.id]);
}

/// A generated session whose two windows hold exactly `first` and `second`.
fn with_windows(seed: u64, first: &[(&str, &str)], second: &[(&str, &str)]) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&decompress(&with_tabs(seed, first)).unwrap()).unwrap();
    v["windows"][1]["tabs"] = tab_list(second);
    mozlz4(ffsession_gen::firefox_json(&v).as_bytes())
}

/// `(tab_runs, tab_entries)` rows in the tab index of `dir`.
fn index_rows(dir: &Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(dir.join(ffsession::store::INDEX_FILE)).unwrap();
    conn.query_row(
        "SELECT (SELECT count(*) FROM tab_runs), (SELECT count(*) FROM tab_entries)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

#[test]
fn the_index_grows_with_distinct_tabs_not_with_snapshots() {
    let (_tmp, dir, mut store) = new_store();
    let a = ("https://anchovy.example/", "Anchovy");
    let b = ("https://barracuda.example/", "Barracuda");
    let c = ("https://cod.example/", "Cod");
    // Twenty snapshots of the same three tabs, their positions shifting and
    // `a` open twice in one window: three runs, whatever the order.
    for i in 0..20u64 {
        let tabs = match i % 3 {
            0 => vec![a, b, c],
            1 => vec![c, a, b, a],
            _ => vec![b, c, a],
        };
        add_recovery(&mut store, with_tabs(6, &tabs), NOW + i * 1_000);
    }
    // The same content again only extends the runs.
    add_recovery(&mut store, with_tabs(6, &[b, c, a]), NOW + 20_000);
    // So does a batch whose second file's predecessor is the first.
    store
        .add_snapshots(
            vec![
                source(with_tabs(6, &[a, b, c])),
                source(with_tabs(6, &[a, b, c])),
            ],
            NOW + 21_000,
        )
        .unwrap();
    let hits = search(&store, "anchovy");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].snapshots, 23);
    // Every session here was last updated at the same time.
    let session_time = Spec::default().last_update;
    assert_eq!(hits[0].first_seen_ms, session_time);
    assert_eq!(hits[0].last_seen_ms, session_time);
    // The first window's three tabs plus the generated closed tabs and
    // windows: the count of runs equals the count of entries.
    let (runs, entries) = index_rows(&dir);
    assert_eq!(runs, entries, "one run per distinct tab");
    let report = store.reindex_tabs(|_, _| {}).unwrap();
    assert_eq!((report.runs, report.entries), (runs as u64, entries as u64));
    assert_eq!(search(&store, "anchovy"), hits);
}

#[test]
fn runs_break_on_a_move_and_per_source_and_survive_removal() {
    let (_tmp, dir, mut store) = new_store();
    let x = ("https://xiphias.example/", "Xiphias swordfish");
    let y = ("https://yellowtail.example/", "Yellowtail");
    let one = add_recovery(&mut store, with_windows(7, &[x, y], &[]), NOW);
    let two = add_recovery(&mut store, with_windows(7, &[y], &[x]), NOW + 1_000);
    // Another source with the same tab: its own runs, counted too.
    let mut other = source(with_windows(7, &[x], &[]));
    other.file_name = "sessionstore-backups/previous.jsonlz4".into();
    other.kind = SourceKind::Previous;
    let three = store.add_snapshot(other, NOW + 2_000).unwrap();
    let four = add_recovery(&mut store, with_windows(7, &[y], &[x]), NOW + 3_000);
    let stretches = store.tab_history(x.0).unwrap();
    assert_eq!(stretches.len(), 1, "{stretches:?}");
    assert_eq!(stretches[0].snapshots, 4);
    assert_eq!(stretches[0].windows, vec![1, 2]);
    let hits = search(&store, "swordfish");
    assert_eq!((hits[0].snapshots, hits[0].newest_snapshot), (4, four.id));

    // Removing the middle snapshot of a run leaves the rest of it counted;
    // garbage collection removes the runs of removed snapshots only.
    store.remove_snapshot(two.id).unwrap();
    store.remove_snapshot(three.id).unwrap();
    let hits = search(&store, "swordfish");
    assert_eq!(
        (hits[0].snapshots, hits[0].first_seen_ms),
        (2, Spec::default().last_update)
    );
    let stretches = store.tab_history(x.0).unwrap();
    assert_eq!(stretches.len(), 1, "{stretches:?}");
    assert_eq!(
        (stretches[0].first_snapshot, stretches[0].last_snapshot),
        (one.id, four.id)
    );
    let (runs_before, _) = index_rows(&dir);
    store.collect_garbage().unwrap();
    let (runs_after, _) = index_rows(&dir);
    assert!(runs_after < runs_before, "{runs_before} -> {runs_after}");
    assert_eq!(search(&store, "swordfish")[0].snapshots, 2);
    store.remove_snapshot(one.id).unwrap();
    store.remove_snapshot(four.id).unwrap();
    store.collect_garbage().unwrap();
    assert_eq!(index_rows(&dir), (0, 0));
    assert!(search(&store, "swordfish").is_empty());
}

#[test]
fn chunks_record_their_frame_and_a_version_3_catalog_gets_frames_as_it_is_written() {
    let (_tmp, dir, mut store) = new_store();
    add_recovery(
        &mut store,
        with_tabs(5, &[("https://a.example/", "A")]),
        NOW,
    );
    drop(store);
    let frames = |dir: &std::path::Path| -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let conn = rusqlite::Connection::open(dir.join(CATALOG_FILE)).unwrap();
        let mut stmt = conn.prepare("SELECT hash, frame_hash FROM chunks").unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        rows
    };
    // Every chunk's frame digest is the BLAKE3 of its file's bytes.
    let rows = frames(&dir);
    assert!(!rows.is_empty());
    for (hash, frame) in &rows {
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        let file = dir
            .join("chunks")
            .join(&hex[..2])
            .join(format!("{hex}.zst"));
        let bytes = fs::read(&file).unwrap();
        assert_eq!(frame.as_deref(), Some(&blake3::hash(&bytes).as_bytes()[..]));
    }
    // A version 3 catalog (no frames): read back the old way, and upgraded.
    make_old_store(&dir, 3);
    let mut store = Store::open(&dir).unwrap();
    assert!(frames(&dir).iter().all(|(_, f)| f.is_none()));
    // The same session again: its chunks are read back by decompressing them.
    let again = add_recovery(
        &mut store,
        with_tabs(5, &[("https://a.example/", "A")]),
        NOW + 1,
    );
    assert_eq!(
        store.read_content(again.id).unwrap().len() as u64,
        again.json_size
    );
    // A changed one: its new chunks get frames.
    add_recovery(
        &mut store,
        with_tabs(6, &[("https://b.example/", "B")]),
        NOW + 2,
    );
    assert!(frames(&dir).iter().any(|(_, f)| f.is_some()));
}

/// The access control entries of an SDDL access list (`D:P(A;...)(A;...)`).
#[cfg(windows)]
fn aces(sddl: &str) -> Vec<String> {
    let body = &sddl[sddl.find('(').unwrap_or(sddl.len())..];
    body.split_terminator(')')
        .map(|ace| ace.trim_start_matches('(').to_owned())
        .collect()
}

/// What stands in for 0700 on Windows: a store folder ffsession creates gets
/// an access list of its own, for the user, SYSTEM and the Administrators
/// only (where the temporary folder it is made in lets Everyone read, under
/// Wine). A folder that exists already keeps its own.
///
/// Wine keeps access lists as Unix modes: the protection bit and what files
/// inside inherit on Windows are not seen here (see `store/acl.rs`).
#[cfg(windows)]
#[test]
fn the_store_folder_is_private_to_its_user() {
    use ffsession::store::{current_user_sid, dacl_sddl};
    let user = current_user_sid().unwrap();
    assert!(user.starts_with("S-1-"), "{user}");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nested").join("store");
    let mut store = Store::create_or_open(&dir).unwrap();
    add_recovery(&mut store, mozlz4(session(6).as_bytes()), NOW);
    drop(store);
    for folder in [&dir, &tmp.path().join("nested")] {
        let sddl = dacl_sddl(folder).unwrap();
        let found = aces(&sddl);
        assert!(
            found.contains(&format!("A;OICI;FA;;;{user}")),
            "{}: {sddl}",
            folder.display()
        );
        for ace in &found {
            let who = ace.rsplit(';').next().unwrap();
            assert!(
                [user.as_str(), "SY", "BA"].contains(&who),
                "{}: {who} may open it: {sddl}",
                folder.display()
            );
        }
    }
    // A folder the user made keeps the list the user gave it.
    let mine = tmp.path().join("mine");
    fs::create_dir(&mine).unwrap();
    let before = dacl_sddl(&mine).unwrap();
    drop(Store::create_or_open(&mine).unwrap());
    assert_eq!(dacl_sddl(&mine).unwrap(), before);
}
