//! Backing up a profile: every session file snapshotted and verified, and the
//! alarm for a damaged or shrunken newest file.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use common::profile_and_store;
use ffsession::backup::{backup_profile, Alarm};
use ffsession_gen::Spec;

fn session(tabs: usize, last_update: u64) -> Vec<u8> {
    common::packed(&Spec {
        tabs,
        last_update,
        ..Spec::default()
    })
}

fn write_at(path: &Path, bytes: &[u8], secs_ago: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[test]
fn every_file_is_snapshotted_and_a_healthy_profile_raises_no_alarm() {
    let (_dir, profile, mut store) = profile_and_store();
    write_at(
        &profile.join("sessionstore-backups/recovery.jsonlz4"),
        &session(30, 3_000),
        10,
    );
    write_at(
        &profile.join("sessionstore-backups/previous.jsonlz4"),
        &session(28, 1_000),
        100,
    );
    let report = backup_profile(&mut store, "default", &profile, 1_000_000).unwrap();
    assert_eq!(report.snapshots.len(), 2);
    assert!(report.snapshots.iter().all(|s| s.is_ok()));
    assert_eq!(
        report.snapshots[0].file_name,
        "sessionstore-backups/recovery.jsonlz4"
    );
    assert_eq!(report.alarm, None);
    assert_eq!(store.snapshots().unwrap().len(), 2);
}

#[test]
fn a_corrupt_newest_file_is_kept_and_raises_the_alarm() {
    let (_dir, profile, mut store) = profile_and_store();
    let good = session(30, 3_000);
    write_at(
        &profile.join("sessionstore-backups/previous.jsonlz4"),
        &good,
        100,
    );
    write_at(
        &profile.join("sessionstore-backups/recovery.jsonlz4"),
        &good[..good.len() / 2],
        1,
    );
    let report = backup_profile(&mut store, "default", &profile, 1_000_000).unwrap();
    match &report.alarm {
        Some(Alarm::NewestCorrupt { file, reason }) => {
            assert_eq!(file, "sessionstore-backups/recovery.jsonlz4");
            assert!(!reason.is_empty());
        }
        other => panic!("expected a corrupt alarm, got {other:?}"),
    }
    let corrupt = report.snapshots.iter().find(|s| !s.is_ok()).unwrap();
    assert_eq!(
        store.read_content(corrupt.id).unwrap(),
        &good[..good.len() / 2]
    );
}

#[test]
fn losing_more_than_half_the_tabs_raises_the_alarm() {
    let (_dir, profile, mut store) = profile_and_store();
    let recovery = profile.join("sessionstore-backups/recovery.jsonlz4");
    write_at(&recovery, &session(40, 1_000), 50);
    let first = backup_profile(&mut store, "default", &profile, 1_000).unwrap();
    assert_eq!(first.alarm, None);
    write_at(&recovery, &session(19, 2_000), 1);
    let second = backup_profile(&mut store, "default", &profile, 2_000).unwrap();
    assert_eq!(
        second.alarm,
        Some(Alarm::Shrunken {
            file: "sessionstore-backups/recovery.jsonlz4".into(),
            tabs: 19,
            previous_tabs: 40,
            previous_id: first.snapshots[0].id.0,
        })
    );
    // Exactly half is not an alarm.
    write_at(&recovery, &session(10, 3_000), 0);
    let third = backup_profile(&mut store, "default", &profile, 3_000).unwrap();
    assert_eq!(third.alarm, None, "19 -> 10 keeps more than half");
}
