//! The store never deletes the last good copy and a damaged catalog or tab
//! index stops neither a backup nor a restore (issue 21, items 1-5), and
//! "latest" means the session's own time (issue 20, item 1).

mod common;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use common::{check, chunk_path, flip_a_bit, keep_last, new_store, packed, DAY, NOW};
use ffsession::backup::{backup_profile, backup_profile_with, Alarm, UnchangedFiles};
use ffsession::retention::Reason;
use ffsession::sources::SourceKind;
use ffsession::store::{SnapshotId, SnapshotInfo, Store, CATALOG_FILE};
use ffsession_gen::Spec;

/// A session of `tabs` tabs (seeded) whose `session.lastUpdate` is `last_update`.
fn session(seed: u64, tabs: usize, last_update: u64) -> Vec<u8> {
    packed(&Spec {
        seed,
        tabs,
        windows: 2,
        last_update,
        ..Spec::default()
    })
}

/// Add a session of `tabs` tabs (seeded) last updated at `at` as the
/// recovery file of profile "default", taken at `at`.
fn add(store: &mut Store, seed: u64, tabs: usize, at: u64) -> SnapshotInfo {
    let source = common::recovery_source("default", session(seed, tabs, at), Some(NOW));
    store.add_snapshot(source, at).unwrap()
}

/// A new store holding two sessions of 40 tabs: one a day old, one of now.
fn two_snapshots() -> (
    tempfile::TempDir,
    PathBuf,
    Store,
    SnapshotInfo,
    SnapshotInfo,
) {
    let (tmp, dir, mut store) = new_store();
    let one = add(&mut store, 1, 40, NOW - DAY);
    let two = add(&mut store, 2, 40, NOW);
    (tmp, dir, store, one, two)
}

/// The chunk files snapshot `id` uses.
fn chunk_files(dir: &Path, id: SnapshotId) -> Vec<PathBuf> {
    let conn = rusqlite::Connection::open(dir.join(CATALOG_FILE)).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT ch.hash FROM snapshots s JOIN content_chunks cc ON cc.content_id = s.content_id
             JOIN chunks ch ON ch.id = cc.chunk_id WHERE s.id = ?1 ORDER BY cc.seq",
        )
        .unwrap();
    let hashes: Vec<Vec<u8>> = stmt
        .query_map([id.0], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    hashes
        .iter()
        .map(|h| {
            let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
            chunk_path(dir, &hex)
        })
        .collect()
}

/// A chunk file snapshot `newer` uses and `older` does not.
fn chunk_only_in(dir: &Path, newer: SnapshotId, older: SnapshotId) -> PathBuf {
    let old: HashSet<PathBuf> = chunk_files(dir, older).into_iter().collect();
    chunk_files(dir, newer)
        .into_iter()
        .find(|c| !old.contains(c))
        .expect("the newer snapshot has a chunk of its own")
}

#[test]
fn prune_never_removes_the_only_intact_snapshot_for_a_damaged_one() {
    let (_tmp, dir, mut store, one, two) = two_snapshots();
    flip_a_bit(&chunk_only_in(&dir, two.id, one.id));

    let (_, plan) =
        ffsession::prune::plan_store(&store, &keep_last(1), &jiff::tz::TimeZone::UTC, NOW).unwrap();
    let reasons = |id: SnapshotId| {
        plan.decisions
            .iter()
            .find(|d| d.id == id.0)
            .unwrap()
            .reasons
            .clone()
    };
    assert_eq!(reasons(one.id), [Reason::NewestVerified], "{plan:?}");
    assert_eq!(reasons(two.id), [Reason::Last, Reason::FoundDamaged]);
    assert_eq!(plan.found_damaged.len(), 1);
    assert_eq!(plan.found_damaged[0].0, two.id.0);
    assert!(plan.found_damaged[0].1.contains("damaged"), "{plan:?}");

    ffsession::prune::carry_out(&mut store, &plan).unwrap();
    assert_eq!(store.snapshots().unwrap().len(), 2);
    assert!(store.read_json(one.id).is_ok());
    // The damage is remembered: list marks it.
    assert!(store.damage_marks().unwrap().contains_key(&two.id));
}

#[test]
fn restore_latest_takes_the_newest_snapshot_that_reads_back() {
    let (_tmp, dir, store, one, two) = two_snapshots();
    assert_eq!(ffsession::restore::latest(&store).unwrap().0.id, two.id);
    flip_a_bit(&chunk_only_in(&dir, two.id, one.id));
    let (chosen, skipped) = ffsession::restore::latest(&store).unwrap();
    assert_eq!(chosen.id, one.id);
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].id, two.id);
    // Nothing whole at all: an error that says so, not a damaged restore.
    for c in chunk_files(&dir, one.id) {
        flip_a_bit(&c);
    }
    let err = ffsession::restore::latest(&store).unwrap_err();
    assert!(err.to_string().contains("reads back whole"), "{err}");
}

/// A profile holding the current session in recovery.jsonlz4 and an
/// upgrade copy: an old, small session whose file Firefox wrote after.
fn lived_in_profile(dir: &Path, current_tabs: usize) {
    let backups = dir.join("sessionstore-backups");
    fs::create_dir_all(&backups).unwrap();
    let upgrade = backups.join("upgrade.jsonlz4-20261101000000");
    fs::write(&upgrade, session(9, 3, NOW - 30 * DAY)).unwrap();
    fs::write(
        backups.join("recovery.jsonlz4"),
        session(10, current_tabs, NOW),
    )
    .unwrap();
    // Written after the recovery file: newest by modification time.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    fs::File::options()
        .write(true)
        .open(&upgrade)
        .unwrap()
        .set_modified(later)
        .unwrap();
}

#[test]
fn latest_and_the_alarm_follow_the_sessions_own_clock() {
    let (_tmp, profile, mut store) = common::profile_and_store();
    lived_in_profile(&profile, 50);
    let first = backup_profile(&mut store, "default", &profile, NOW).unwrap();
    assert_eq!(first.snapshots.len(), 2);
    assert_eq!(first.alarm, None);
    // The upgrade copy was stored last (the highest id) ...
    let upgrade = first
        .snapshots
        .iter()
        .find(|s| s.kind == SourceKind::Upgrade)
        .unwrap();
    assert_eq!(
        upgrade.id,
        first.snapshots.iter().map(|s| s.id).max().unwrap()
    );
    // ... but `restore latest` takes the current session.
    let (latest, _) = ffsession::restore::latest(&store).unwrap();
    assert_eq!(latest.kind, SourceKind::Recovery);
    assert_eq!(latest.counts.unwrap().tabs, 50);
    // A second backup: no shrink alarm from comparing with the old copy.
    let second = backup_profile(&mut store, "default", &profile, NOW + 1).unwrap();
    assert_eq!(second.alarm, None);
    // The current session really losing its tabs still raises it.
    fs::write(
        profile.join("sessionstore-backups/recovery.jsonlz4"),
        session(11, 4, NOW + 2),
    )
    .unwrap();
    let third = backup_profile(&mut store, "default", &profile, NOW + 2).unwrap();
    assert!(
        matches!(
            third.alarm,
            Some(Alarm::Shrunken {
                tabs: 4,
                previous_tabs: 50,
                ..
            })
        ),
        "{:?}",
        third.alarm
    );
}

#[test]
fn watch_verifies_and_stores_a_damaged_unchanged_file_again() {
    let (_tmp, profile, mut store) = common::profile_and_store();
    let dir = store.dir().to_path_buf();
    fs::create_dir_all(profile.join("sessionstore-backups")).unwrap();
    fs::write(
        profile.join("sessionstore-backups/recovery.jsonlz4"),
        session(3, 30, NOW),
    )
    .unwrap();
    let first = backup_profile(&mut store, "default", &profile, NOW).unwrap();
    let id = first.snapshots[0].id;
    // Unchanged: a watch cycle stores nothing.
    let skip = |store: &mut Store, at| {
        backup_profile_with(store, "default", &profile, at, UnchangedFiles::Skip).unwrap()
    };
    assert!(skip(&mut store, NOW + 1).snapshots.is_empty());
    flip_a_bit(&chunk_files(&dir, id)[0]);
    // Still "unchanged" until the damage is found ...
    assert!(skip(&mut store, NOW + 2).snapshots.is_empty());
    let found = ffsession::watch::verify_newest(&store, "default").unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, id);
    // ... then the file is stored again, which heals the older snapshot.
    let healed = skip(&mut store, NOW + 3);
    assert_eq!(healed.snapshots.len(), 1);
    assert!(store.read_json(id).is_ok());
    assert!(store.damage_marks().unwrap().is_empty());
    assert!(ffsession::watch::verify_newest(&store, "default")
        .unwrap()
        .is_empty());
}

/// Overwrite 512 bytes in the middle of `file` with garbage.
fn garbage(file: &Path) {
    let mut bytes = fs::read(file).unwrap();
    let at = bytes.len() / 2;
    for (i, b) in bytes[at..at + 512].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37) ^ 0xA5;
    }
    fs::write(file, bytes).unwrap();
}

#[test]
fn a_damaged_tab_index_stops_neither_a_backup_nor_a_restore() {
    let (_tmp, dir, mut store) = new_store();
    let one = add(&mut store, 1, 200, NOW - DAY);
    drop(store);
    // The index file is checkpointed into one file at close.
    let index = dir.join(ffsession::store::INDEX_FILE);
    assert!(fs::metadata(&index).unwrap().len() > 4096 * 4);
    garbage(&index);

    // A reader can still list and restore; search says what to do.
    let ro = Store::open_read_only(&dir).unwrap();
    assert_eq!(ro.snapshots().unwrap().len(), 1);
    assert!(ro.read_json(one.id).is_ok());
    drop(ro);
    // A writer finds the damage, builds the index again, and backs up.
    let mut store = Store::open(&dir).unwrap();
    let note = store.take_index_note().expect("a note about the index");
    assert!(note.what.contains("damaged"), "{note:?}");
    let two = add(&mut store, 2, 200, NOW);
    assert!(store.read_json(two.id).is_ok());
    let url = {
        let json = store.read_json(one.id).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        v["windows"][0]["tabs"][0]["entries"][0]["url"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let history = store.tab_history(&url).unwrap();
    assert!(
        !history.is_empty(),
        "the rebuilt index holds snapshot 1's tabs"
    );
    // reindex rebuilds it whatever state it is in.
    drop(store);
    garbage(&index);
    let mut store = Store::open(&dir).unwrap();
    let report = store.reindex_tabs(|_, _| {}).unwrap();
    assert_eq!(report.snapshots, 2);
}

/// Make the first page of table `table` unreadable (SQLite then calls the
/// catalog "malformed" whenever that table is read).
fn break_table(catalog: &Path, table: &str) {
    let (root, page_size): (i64, i64) = {
        let conn = rusqlite::Connection::open(catalog).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        (
            conn.query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap(),
            conn.query_row("PRAGMA page_size", [], |r| r.get(0))
                .unwrap(),
        )
    };
    let mut bytes = fs::read(catalog).unwrap();
    // The b-tree page type byte: no valid type.
    bytes[((root - 1) * page_size) as usize] = 0xFF;
    fs::write(catalog, bytes).unwrap();
}

#[test]
fn a_damaged_catalog_table_stops_no_restore_and_is_rebuilt_from_the_manifests() {
    let (_tmp, dir, store, one, two) = two_snapshots();
    let json = store.read_json(two.id).unwrap();
    drop(store);
    break_table(&dir.join(CATALOG_FILE), "content_chunks");

    let ro = Store::open_read_only(&dir).unwrap();
    // The catalog cannot list a content's chunks any more ...
    let catalog_error = rusqlite::Connection::open(dir.join(CATALOG_FILE))
        .unwrap()
        .query_row("SELECT count(*) FROM content_chunks", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap_err();
    assert!(
        catalog_error.to_string().contains("malformed"),
        "{catalog_error}"
    );
    // ... but the manifests can: every snapshot still restores.
    assert_eq!(ro.read_json(two.id).unwrap(), json);
    assert!(ro.read_json(one.id).is_ok());
    assert_eq!(ffsession::restore::latest(&ro).unwrap().0.id, two.id);
    drop(ro);

    let report = ffsession::store::rebuild_catalog(&dir, NOW + 5).unwrap();
    assert_eq!(report.snapshots, 2);
    assert!(report.unusable.is_empty(), "{report:?}");
    assert!(report.old_catalog.as_ref().unwrap().exists());
    let mut store = Store::open(&dir).unwrap();
    assert_eq!(store.read_json(two.id).unwrap(), json);
    let infos = store.snapshots().unwrap();
    assert_eq!(
        infos.iter().map(|s| s.id).collect::<Vec<_>>(),
        [two.id, one.id]
    );
    assert_eq!(infos[0], two);
    // New snapshots continue after the highest id.
    let three = add(&mut store, 3, 40, NOW + 1);
    assert!(three.id > two.id);
    let whole = check(&dir);
    assert!(whole.is_whole(), "{whole:?}");
}

#[test]
fn a_catalog_row_that_no_longer_matches_its_manifest_is_found() {
    let (_tmp, dir, mut store) = new_store();
    let one = add(&mut store, 1, 40, NOW);
    assert_eq!(store.verify_snapshot(one.id).unwrap(), None);
    drop(store);
    for (column, value) in [
        ("source_kind", "'other'"),
        ("last_update", "10515000000000"),
    ] {
        let conn = rusqlite::Connection::open(dir.join(CATALOG_FILE)).unwrap();
        let before: String = conn
            .query_row(
                &format!("SELECT CAST({column} AS TEXT) FROM snapshots WHERE id = ?1"),
                [one.id.0],
                |r| r.get(0),
            )
            .unwrap();
        conn.execute(
            &format!("UPDATE snapshots SET {column} = {value} WHERE id = ?1"),
            [one.id.0],
        )
        .unwrap();
        drop(conn);
        let store = Store::open_read_only(&dir).unwrap();
        let damage = store.verify_snapshot(one.id).unwrap().expect("found");
        assert!(damage.what.contains("manifest"), "{damage:?}");
        let report = check(&dir);
        assert!(!report.is_whole(), "{column}: {report:?}");
        drop(store);
        let conn = rusqlite::Connection::open(dir.join(CATALOG_FILE)).unwrap();
        conn.execute(
            &format!("UPDATE snapshots SET {column} = ?2 WHERE id = ?1"),
            rusqlite::params![one.id.0, before],
        )
        .unwrap();
    }
}

#[test]
fn a_rebuilt_catalog_never_gives_an_id_twice_nor_writes_over_a_manifest() {
    let (_tmp, dir, mut store) = new_store();
    let manifest = |id: SnapshotId| dir.join("snapshots").join(format!("{}.json", id.0));
    let _one = add(&mut store, 1, 20, NOW - 2 * DAY);
    let two = add(&mut store, 2, 20, NOW - DAY);
    let three = add(&mut store, 3, 20, NOW);
    // Snapshot three forgotten and collected: only the catalog knows its id.
    store.remove_snapshot(three.id).unwrap();
    store.collect_garbage().unwrap();
    assert!(!manifest(three.id).exists());
    drop(store);
    // Snapshot two's manifest damaged: the rebuild cannot use it.
    fs::write(manifest(two.id), b"damaged").unwrap();

    let report = ffsession::store::rebuild_catalog(&dir, NOW + 5).unwrap();
    assert_eq!(report.snapshots, 1);
    assert_eq!(report.unusable.len(), 1, "{report:?}");
    let mut store = Store::open(&dir).unwrap();
    let four = add(&mut store, 4, 20, NOW + 1);
    assert!(four.id > three.id, "{:?} given again", four.id);
    assert_eq!(fs::read(manifest(two.id)).unwrap(), b"damaged");
    drop(store);

    // The catalog lost as well, and the newest manifest damaged: the
    // manifests' own ids still count.
    fs::write(manifest(four.id), b"damaged too").unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = fs::remove_file(dir.join(format!("{CATALOG_FILE}{suffix}")));
    }
    ffsession::store::rebuild_catalog(&dir, NOW + 6).unwrap();
    let mut store = Store::open(&dir).unwrap();
    let five = add(&mut store, 5, 20, NOW + 2);
    assert!(five.id > four.id, "{:?} given again", five.id);
    assert_eq!(fs::read(manifest(two.id)).unwrap(), b"damaged");
    assert_eq!(fs::read(manifest(four.id)).unwrap(), b"damaged too");
}
