//! The watch cycle: unchanged files are not stored again, the retention
//! policy is applied after each snapshot with its protections, and a month of
//! the service stays within the policy's bound.

mod common;
#[path = "../benches/support/watch_sim.rs"]
mod watch_sim;

use std::fs;
use std::path::Path;
use std::time::Duration;

use common::{keep_last, packed, profile_and_store, HOUR};
use ffsession::backup::{backup_profile, UnchangedFile};
use ffsession::retention::RetentionPolicy;
use ffsession::store::{SnapshotId, SnapshotSource};
use ffsession::watch::{cycle, UnchangedNotices};
use ffsession_gen::Spec;
use jiff::tz::TimeZone;
use watch_sim::{policy_bound, run, SimConfig};

const T0: u64 = 1_767_225_600_000;

fn session(tabs: usize, seed: u64) -> Vec<u8> {
    packed(&Spec {
        tabs,
        seed,
        ..Spec::default()
    })
}

fn write(profile: &Path, name: &str, bytes: &[u8]) {
    let path = profile.join("sessionstore-backups").join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

#[test]
fn unchanged_files_are_not_stored_and_said_once_per_change() {
    let (_dir, profile, mut store) = profile_and_store();
    let policy = RetentionPolicy::DEFAULT;
    let tz = TimeZone::UTC;
    write(&profile, "recovery.jsonlz4", &session(5, 1));
    write(&profile, "previous.jsonlz4", &session(4, 2));
    let mut notices = UnchangedNotices::default();

    let first = cycle(&mut store, "p", &profile, T0, &policy, &tz).unwrap();
    assert_eq!(first.backup.snapshots.len(), 2);
    assert!(first.backup.unchanged.is_empty());
    assert!(notices.update(&first.backup).is_empty());
    let id_of = |r: &ffsession::watch::CycleReport, f: &str| {
        r.backup
            .snapshots
            .iter()
            .find(|s| s.file_name.ends_with(f))
            .unwrap()
            .id
    };
    let (rec1, prev1) = (
        id_of(&first, "recovery.jsonlz4"),
        id_of(&first, "previous.jsonlz4"),
    );

    // Nothing changed: nothing stored, said once.
    let second = cycle(&mut store, "p", &profile, T0 + HOUR, &policy, &tz).unwrap();
    assert!(second.backup.snapshots.is_empty());
    assert!(second.pruned.is_none(), "no prune when nothing was stored");
    let said: Vec<UnchangedFile> = notices
        .update(&second.backup)
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(
        said,
        vec![
            UnchangedFile {
                file: "sessionstore-backups/recovery.jsonlz4".into(),
                since: rec1
            },
            UnchangedFile {
                file: "sessionstore-backups/previous.jsonlz4".into(),
                since: prev1
            },
        ]
    );
    let third = cycle(&mut store, "p", &profile, T0 + 2 * HOUR, &policy, &tz).unwrap();
    assert_eq!(third.backup.unchanged.len(), 2);
    assert!(
        notices.update(&third.backup).is_empty(),
        "quiet until it changes"
    );

    // The recovery file changes: stored; previous stays quiet.
    write(&profile, "recovery.jsonlz4", &session(6, 3));
    let fourth = cycle(&mut store, "p", &profile, T0 + 3 * HOUR, &policy, &tz).unwrap();
    assert_eq!(fourth.backup.snapshots.len(), 1);
    let rec2 = id_of(&fourth, "recovery.jsonlz4");
    assert!(notices.update(&fourth.backup).is_empty());
    // ... and is then unchanged since its new snapshot: said again.
    let fifth = cycle(&mut store, "p", &profile, T0 + 4 * HOUR, &policy, &tz).unwrap();
    let said = notices.update(&fifth.backup);
    assert_eq!(said.len(), 1);
    assert_eq!(said[0].since, rec2);
    assert_eq!(store.snapshots().unwrap().len(), 3);

    // The same bytes written again (a new mtime) are still unchanged.
    write(&profile, "previous.jsonlz4", &session(4, 2));
    let sixth = cycle(&mut store, "p", &profile, T0 + 5 * HOUR, &policy, &tz).unwrap();
    assert!(sixth.backup.snapshots.is_empty());

    // The explicit backup stores every file, as before.
    let report = backup_profile(&mut store, "p", &profile, T0 + 6 * HOUR).unwrap();
    assert_eq!(report.snapshots.len(), 2);
    assert!(report.unchanged.is_empty());
}

#[test]
fn latest_content_is_the_content_of_the_newest_snapshot_of_that_file() {
    let (_dir, profile, mut store) = profile_and_store();
    assert_eq!(
        store
            .latest_content("p", "sessionstore-backups/recovery.jsonlz4")
            .unwrap(),
        None
    );
    for (i, bytes) in [session(3, 1), b"mozLz40\0damaged".to_vec(), session(3, 1)]
        .iter()
        .enumerate()
    {
        write(&profile, "recovery.jsonlz4", bytes);
        let r = backup_profile(&mut store, "p", &profile, T0 + i as u64).unwrap();
        let s = &r.snapshots[0];
        let (id, digest) = store
            .latest_content("p", &s.file_name)
            .unwrap()
            .expect("a snapshot of the file");
        assert_eq!(id, s.id);
        assert_eq!(digest, s.content_hash);
        let source = SnapshotSource {
            bytes: bytes.clone(),
            profile: "p".into(),
            file_name: s.file_name.clone(),
            kind: s.kind.clone(),
            mtime_ms: None,
        };
        assert_eq!(source.content_digest(), s.content_hash, "file {i}");
    }
    // Another profile's snapshots are not this one's.
    assert_eq!(
        store
            .latest_content("q", "sessionstore-backups/recovery.jsonlz4")
            .unwrap(),
        None
    );
}

#[test]
fn each_cycle_applies_the_policy_with_its_protections() {
    let (_dir, profile, mut store) = profile_and_store();
    let tz = TimeZone::UTC;
    let policy = keep_last(2);
    let mut removed = 0;
    for i in 0..5u64 {
        write(&profile, "recovery.jsonlz4", &session(20, 10 + i));
        let r = cycle(&mut store, "p", &profile, T0 + i * HOUR, &policy, &tz).unwrap();
        removed += r.pruned.unwrap().removed;
    }
    assert_eq!(removed, 3);
    let ids: Vec<SnapshotId> = store.snapshots().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(ids, vec![SnapshotId(5), SnapshotId(4)]);

    // A session that lost most of its tabs: the last good one before it is
    // protected, whatever keep_last says, for as long as it is in reach.
    write(&profile, "recovery.jsonlz4", &session(2, 99));
    let r = cycle(&mut store, "p", &profile, T0 + 5 * HOUR, &policy, &tz).unwrap();
    assert!(r.backup.alarm.is_some());
    write(&profile, "recovery.jsonlz4", &session(3, 100));
    cycle(&mut store, "p", &profile, T0 + 6 * HOUR, &policy, &tz).unwrap();
    let ids: Vec<i64> = store.snapshots().unwrap().iter().map(|s| s.id.0).collect();
    assert!(
        ids.contains(&5),
        "the last good snapshot before the shrunken one: {ids:?}"
    );
    assert_eq!(&ids[..2], &[7, 6]);
    // Garbage collection ran: no chunk file is left that no snapshot uses.
    assert!(store.unreferenced_chunks().unwrap().is_empty());
}

#[test]
fn a_simulated_day_of_unchanged_cycles_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = SimConfig {
        days: 1,
        interval: Duration::from_secs(300),
        change_every: 48,
        run_unchanged: true,
        session_bytes: 20_000,
        tabs_per_change: 3,
        checkpoints: vec![1],
        policy: RetentionPolicy::DEFAULT,
        rss_every: None,
    };
    // `run` asserts that every cycle without a change stores nothing.
    let end = run(&cfg, dir.path(), |_| {});
    assert_eq!(end.cycles_run, 288);
    assert_eq!(end.changes, 6);
    // The first change stores recovery; each later one recovery and baklz4.
    assert_eq!(end.snapshots_taken, 1 + 5 * 2);
}

#[test]
fn a_simulated_month_stays_within_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let policy = RetentionPolicy::DEFAULT;
    let cfg = SimConfig {
        days: 30,
        interval: Duration::from_secs(300),
        // Every 4 hours (the year benchmark changes hourly); a 20 KB session:
        // the bound comes from the policy, not from the session's size.
        change_every: 48,
        run_unchanged: false,
        session_bytes: 20_000,
        tabs_per_change: 3,
        checkpoints: vec![10, 20, 30],
        policy,
        rss_every: None,
    };
    let mut kept = Vec::new();
    let end = run(&cfg, dir.path(), |c| kept.push(c.snapshots_kept));
    assert_eq!(end.changes, 180);
    assert_eq!(end.snapshots_taken, 1 + 179 * 2);
    for k in &kept {
        assert!(*k <= policy_bound(&policy), "{kept:?}");
    }
    // Bounded by the policy, not by time: after a month about as many are
    // kept as after ten days (the hourly and last slots are full by then).
    assert!(kept[2] <= kept[0] + 10, "{kept:?}");
    let rows = end.rows.iter().find(|(t, _)| *t == "snapshots").unwrap().1;
    assert_eq!(rows, end.snapshots_kept);
}
