//! Backups that heal and never lie, and `check` finding every kind of damage:
//! flipped bits, truncated, deleted and symlinked chunks, a truncated or
//! deleted catalog, a store folder that is a link or that anyone may write.

mod common;

use std::fs;
use std::path::PathBuf;

use common::{check, chunk_files, flip_a_bit, recovery_source, sized_session, NOW};
use ffsession::store::{
    check_store, SnapshotInfo, SnapshotSource, Store, StoreError, CATALOG_FILE, CHUNKS_DIR,
};
use ffsession_gen::mozlz4;

fn source(json: &str) -> SnapshotSource {
    recovery_source(
        "default-release",
        mozlz4(json.as_bytes()),
        Some(NOW - 1_000),
    )
}

fn session(seed: u64) -> String {
    sized_session(seed, 600_000)
}

/// A store holding one snapshot of a session; returns the session too.
fn one_snapshot() -> (tempfile::TempDir, PathBuf, Store, SnapshotInfo, String) {
    let (tmp, dir, mut store) = common::new_store();
    let json = session(3);
    let info = store.add_snapshot(source(&json), NOW).unwrap();
    (tmp, dir, store, info, json)
}

/// [`one_snapshot`]'s store closed, and a link to its folder: the folder
/// (removed when dropped), the store's path and the link.
fn linked_store() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (tmp, dir, store, _info, _json) = one_snapshot();
    drop(store);
    let link = tmp.path().join("link");
    ffsession_gen::link_dir(&dir, &link);
    (tmp, dir, link)
}

#[test]
fn a_whole_store_checks_whole() {
    let (_tmp, dir, mut store, _info, json) = one_snapshot();
    let other = json.replace("https://", "http://");
    store.add_snapshot(source(&other), NOW + 1).unwrap();
    let report = check(&dir);
    assert!(report.is_whole(), "{report:#?}");
    assert_eq!(report.snapshots, 2);
    assert_eq!(report.contents, 2);
    assert_eq!(report.chunks as usize, chunk_files(&dir).len());
    assert!(report.stored_bytes > 0);
    assert_eq!(report.content_bytes, (json.len() + other.len()) as u64);
    assert!(report.orphan_chunks.is_empty() && report.temp_files.is_empty());
}

/// The scenario that used to lie: one flipped bit made a snapshot
/// unrestorable, and the next backup of the same session reused the damaged
/// chunk and reported "+0 B". Now that backup rewrites the chunk, and the
/// older snapshot reads back again.
#[test]
fn a_flipped_bit_is_healed_by_the_next_backup_of_the_same_session() {
    let (_tmp, dir, mut store, old, json) = one_snapshot();
    let victim = chunk_files(&dir)[2].clone();
    flip_a_bit(&victim);
    let err = store.read_json(old.id).unwrap_err();
    assert!(matches!(err, StoreError::DamagedChunk { .. }), "{err}");
    let report = check(&dir);
    assert!(!report.is_whole());
    assert_eq!(report.damaged_snapshots.len(), 1);
    assert_eq!(report.damaged_snapshots[0].id, old.id);
    assert_eq!(report.damaged_chunks[0].path, victim);

    let new = store.add_snapshot(source(&json), NOW + 15_000).unwrap();
    assert!(new.stored_size > 0, "the healed chunk counts as written");
    assert_eq!(store.read_json(old.id).unwrap(), json.as_bytes());
    assert_eq!(store.read_json(new.id).unwrap(), json.as_bytes());
    assert!(check(&dir).is_whole());
}

#[test]
fn a_damaged_chunk_reused_by_a_new_content_is_healed_too() {
    let (_tmp, dir, mut store, old, json) = one_snapshot();
    let files = chunk_files(&dir);
    // Damage every chunk three ways; an edited session shares most of them.
    fs::remove_file(&files[0]).unwrap();
    let bytes = fs::read(&files[1]).unwrap();
    fs::write(&files[1], &bytes[..bytes.len() / 2]).unwrap();
    for f in &files[2..] {
        flip_a_bit(f);
    }
    let edited = json.replacen("https://", "https://edited.", 1);
    let new = store.add_snapshot(source(&edited), NOW + 1).unwrap();
    assert_eq!(store.read_json(new.id).unwrap(), edited.as_bytes());
    // Every chunk the two share is healed; only the few the edit replaced
    // are still damaged in the old snapshot, and check says which.
    let report = check(&dir);
    assert_eq!(report.damaged_snapshots.len(), 1, "{report:#?}");
    assert_eq!(report.damaged_snapshots[0].id, old.id);
    assert!(report.damaged_chunks.len() <= 2, "{report:#?}");
    // A backup of the old session heals the rest.
    store.add_snapshot(source(&json), NOW + 2).unwrap();
    assert_eq!(store.read_json(old.id).unwrap(), json.as_bytes());
    assert!(check(&dir).is_whole());
}

#[test]
#[cfg_attr(windows, ignore = "needs a symbolic link, which Wine 8 cannot make")]
fn a_symlinked_chunk_is_damage_never_followed_and_is_healed() {
    let (tmp, dir, mut store, old, json) = one_snapshot();
    let victim = chunk_files(&dir)[1].clone();
    let elsewhere = tmp.path().join("elsewhere.zst");
    fs::copy(&victim, &elsewhere).unwrap();
    fs::remove_file(&victim).unwrap();
    ffsession_gen::link_file(&elsewhere, &victim);
    // Even a link to the right bytes is refused: a chunk is a file we wrote.
    let err = store.read_json(old.id).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let report = check(&dir);
    assert!(!report.is_whole());
    assert!(report.damaged_chunks[0].what.contains("symbolic link"));
    store.add_snapshot(source(&json), NOW + 1).unwrap();
    assert!(!fs::symlink_metadata(&victim)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&elsewhere).unwrap(), fs::read(&victim).unwrap());
    assert!(check(&dir).is_whole());
}

#[test]
fn a_snapshot_that_cannot_be_made_whole_is_not_recorded() {
    let (_tmp, dir, mut store, old, json) = one_snapshot();
    // A folder where a chunk file should be cannot be renamed over.
    let victim = chunk_files(&dir)[0].clone();
    fs::remove_file(&victim).unwrap();
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("x"), b"x").unwrap();
    let err = store.add_snapshot(source(&json), NOW + 1).unwrap_err();
    assert!(
        err.to_string().contains(&*victim.to_string_lossy()),
        "{err}"
    );
    let listed: Vec<_> = store.snapshots().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(listed, vec![old.id]);
    let report = check(&dir);
    assert_eq!(report.damaged_snapshots.len(), 1);
    assert!(report.damaged_chunks[0].what.contains("not a file"));
}

#[test]
fn check_names_truncated_and_deleted_chunks_and_their_snapshots() {
    let (_tmp, dir, mut store, first, json) = one_snapshot();
    let second = store.add_snapshot(source(&session(4)), NOW + 1).unwrap();
    let files = chunk_files(&dir);
    let bytes = fs::read(&files[0]).unwrap();
    fs::write(&files[0], &bytes[..bytes.len() - 7]).unwrap();
    fs::remove_file(&files[files.len() - 1]).unwrap();
    let report = check(&dir);
    assert!(!report.is_whole());
    assert_eq!(report.damaged_chunks.len(), 2, "{report:#?}");
    let whats: Vec<&str> = report
        .damaged_chunks
        .iter()
        .map(|c| c.what.as_str())
        .collect();
    assert!(whats.contains(&"missing"), "{whats:?}");
    assert!(whats.iter().any(|w| w.contains("decompress")), "{whats:?}");
    for d in &report.damaged_snapshots {
        assert!([first.id, second.id].contains(&d.id));
        assert_eq!(d.file_name, "sessionstore-backups/recovery.jsonlz4");
        for c in &d.chunks {
            assert!(report.damaged_chunks.iter().any(|p| p.digest == *c));
        }
    }
    // Nothing was deleted or changed by check.
    assert_eq!(chunk_files(&dir).len(), files.len() - 1);
    assert!(store.read_json(first.id).is_err() || store.read_json(second.id).is_err());
    assert!(!json.is_empty());
}

#[test]
fn check_reports_orphans_and_temp_files_without_calling_them_damage() {
    let (_tmp, dir, _store, _info, _json) = one_snapshot();
    let fan_out = dir.join(CHUNKS_DIR).join("ab");
    let orphan = fan_out.join(format!("ab{}.zst", "0".repeat(62)));
    let temp = fan_out.join(".ffsession-x1.tmp");
    fs::create_dir_all(&fan_out).unwrap();
    #[cfg(unix)]
    fs::set_permissions(
        &fan_out,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    for (f, bytes) in [(&orphan, &b"x"[..]), (&temp, &b"partial"[..])] {
        fs::write(f, bytes).unwrap();
        #[cfg(unix)]
        fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }
    let report = check(&dir);
    assert_eq!(report.orphan_chunks, vec![orphan.clone()]);
    assert_eq!(report.temp_files, vec![temp.clone()]);
    assert!(report.is_whole(), "{report:#?}");
    assert!(orphan.exists() && temp.exists());
}

#[test]
fn check_reports_a_truncated_or_deleted_catalog() {
    let (_tmp, dir, store, _info, _json) = one_snapshot();
    drop(store);
    let catalog = dir.join(CATALOG_FILE);
    let bytes = fs::read(&catalog).unwrap();
    assert!(bytes.len() > 8192);
    fs::write(&catalog, &bytes[..bytes.len() / 3]).unwrap();
    let report = check(&dir);
    assert!(!report.is_whole());
    assert!(
        report.problems.iter().any(|p| p.path == catalog),
        "{report:#?}"
    );
    // The chunk files are still checked against their names.
    assert!(report.chunks > 0 || !report.problems.is_empty());

    fs::remove_file(&catalog).unwrap();
    let report = check(&dir);
    assert!(!report.is_whole());
    assert!(report.problems[0].what.contains("missing"), "{report:#?}");
    assert_eq!(report.chunks as usize, chunk_files(&dir).len());
    assert!(report.damaged_chunks.is_empty(), "{report:#?}");
}

#[test]
#[cfg_attr(windows, ignore = "needs a junction, which Wine 8 cannot make")]
fn check_reports_a_linked_store_folder() {
    let (_tmp, _dir, link) = linked_store();
    let report = check(&link);
    assert!(!report.is_whole());
    assert!(report.problems[0].what.contains("symbolic link"));
    assert_eq!(report.chunks, 0, "a linked store is not followed");
}

#[test]
#[cfg_attr(windows, ignore = "needs a junction, which Wine 8 cannot make")]
fn a_linked_store_folder_is_refused_by_every_open_and_nothing_is_written_through_it() {
    let (tmp, dir, link) = linked_store();
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let empty_link = tmp.path().join("empty-link");
    ffsession_gen::link_dir(&empty, &empty_link);
    let before = ffsession_gen::files_under(&dir);
    for path in [&link, &empty_link] {
        let err = Store::create_or_open(path).unwrap_err();
        assert!(matches!(err, StoreError::StoreFolderLink { .. }), "{err}");
        assert_eq!(err.hint(), Some(ffsession::Hint::StoreFolderLink), "{err}");
    }
    assert!(matches!(
        Store::open(&link).unwrap_err(),
        StoreError::StoreFolderLink { .. }
    ));
    assert!(matches!(
        Store::open_read_only(&link).unwrap_err(),
        StoreError::StoreFolderLink { .. }
    ));
    assert_eq!(ffsession_gen::files_under(&dir), before);
    assert_eq!(fs::read_dir(&empty).unwrap().count(), 0);
    // The real path still opens.
    Store::open(&dir).unwrap();
}

/// Unix modes; on Windows the store's ACL stands in for them.
#[cfg(unix)]
#[test]
fn check_reports_a_world_writable_store_folder() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, dir, store, _info, _json) = one_snapshot();
    drop(store);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let chunk = chunk_files(&dir)[0].clone();
    fs::set_permissions(&chunk, fs::Permissions::from_mode(0o644)).unwrap();
    let report = check(&dir);
    assert!(!report.is_whole());
    assert!(report
        .problems
        .iter()
        .any(|p| p.path == dir && p.what.contains("anyone may write")));
    // Readable by others: a warning, not damage.
    assert!(report
        .warnings
        .iter()
        .any(|p| p.path == chunk && p.what.contains("0644")));
    assert!(report.damaged_snapshots.is_empty());
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let report = check(&dir);
    assert!(report.is_whole(), "{:?}", report.problems);
    assert!(report.warnings.iter().any(|p| p.path == dir));
}

#[test]
fn check_of_a_missing_folder_is_not_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let err = check_store(&tmp.path().join("nope"), &mut |_, _| {}).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
}
