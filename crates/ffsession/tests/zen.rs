//! A Zen profile in the store: Zen's files verified as Zen's, never taken
//! for a Firefox session, kept by a prune with the sessions they go with,
//! and restored with them.

mod common;

use std::fs;
use std::path::Path;

use common::HOUR;
use ffsession::backup::backup_profile;
use ffsession::retention::Reason;
use ffsession::sources::SourceKind;
use ffsession::store::{SnapshotInfo, Store};
use ffsession::zen::companion;
use ffsession_gen::{mozlz4, zen_files, ZenFiles, ZenSpec};

const T0: u64 = 1_790_000_000_000;

fn moment(at: u64, tag: &str) -> ZenFiles {
    zen_files(&ZenSpec {
        last_collected: at,
        tag: tag.to_owned(),
        ..ZenSpec::default()
    })
}

/// Write a moment into `profile` as a save writes it, and back it up at `at`.
fn save_and_back_up(store: &mut Store, profile: &Path, files: &ZenFiles, at: u64) {
    for (name, json) in [
        ("sessionstore.jsonlz4", &files.sessionstore),
        ("zen-sessions.jsonlz4", &files.zen_sessions),
    ] {
        fs::write(profile.join(name), mozlz4(json.as_bytes())).unwrap();
    }
    let report = backup_profile(store, "zen", profile, at + 1_000).unwrap();
    assert!(report.alarm.is_none(), "{:?}", report.alarm);
}

/// Save and back up a moment tagged with each of `tags`, an hour apart from `T0`.
fn save_hourly(store: &mut Store, profile: &Path, tags: &[&str]) {
    for (i, tag) in tags.iter().enumerate() {
        let at = T0 + i as u64 * HOUR;
        save_and_back_up(store, profile, &moment(at, tag), at);
    }
}

fn by_name<'s>(snapshots: &'s [SnapshotInfo], name: &str) -> Vec<&'s SnapshotInfo> {
    snapshots.iter().filter(|s| s.file_name == name).collect()
}

#[test]
fn zens_files_are_verified_as_zens_and_never_a_firefox_session() {
    let (_tmp, profile, mut store) = common::profile_and_store();
    save_and_back_up(&mut store, &profile, &moment(T0, "a"), T0);

    let all = store.snapshots().unwrap();
    let zen = by_name(&all, "zen-sessions.jsonlz4")[0];
    assert_eq!(zen.kind, SourceKind::ZenSessions);
    assert!(zen.is_ok());
    let counts = zen.counts.unwrap();
    assert_eq!((counts.windows, counts.tabs), (3, 11), "spaces and tabs");
    assert_eq!(zen.last_update_ms, Some(T0), "lastCollected");
    // Its content is its JSON, as a session's.
    let json = store.read_json(zen.id).unwrap();
    assert_eq!(json, moment(T0, "a").zen_sessions.as_bytes());

    // Newer than Firefox's session (Zen collects after Firefox), yet
    // `restore latest` takes Firefox's, and Zen's alone is refused.
    let (latest, _) = ffsession::restore::latest(&store).unwrap();
    assert_eq!(latest.file_name, "sessionstore.jsonlz4");
    let err = ffsession::restore::plan(&store, zen.id, &profile).unwrap_err();
    assert!(err.to_string().contains("Zen's sessions file"), "{err}");

    // A damaged Zen file is marked, and raises no alarm about the session.
    fs::write(profile.join("zen-sessions.jsonlz4"), b"mozLz40\0\xff\xff").unwrap();
    let report = backup_profile(&mut store, "zen", &profile, T0 + HOUR).unwrap();
    assert!(report.alarm.is_none(), "{:?}", report.alarm);
    let damaged = report
        .snapshots
        .iter()
        .find(|s| s.kind == SourceKind::ZenSessions)
        .unwrap();
    assert!(!damaged.is_ok());
}

#[test]
fn the_zen_file_of_a_session_is_the_newest_collected_by_its_save() {
    let (_tmp, profile, mut store) = common::profile_and_store();
    save_hourly(&mut store, &profile, &["a", "b", "c"]);
    let all = store.snapshots().unwrap();
    let sessions = by_name(&all, "sessionstore.jsonlz4");
    let zens = by_name(&all, "zen-sessions.jsonlz4");
    for s in &sessions {
        // Firefox stamps its session 3 ms before Zen collects its file.
        let chosen = companion::candidates_for(s, &all);
        let zen = zens
            .iter()
            .find(|z| z.last_update_ms == Some(s.last_update_ms.unwrap() + 3))
            .unwrap();
        assert_eq!(chosen[0].id, zen.id, "session {}", s.id);
        // Never a later save's.
        assert!(chosen
            .iter()
            .all(|z| z.last_update_ms <= zen.last_update_ms));
    }
    // Before every Zen file: none. Another profile's: none. A file restored
    // from elsewhere takes the store's.
    assert!(companion::candidates(T0 - 10_000, "zen", &all).is_empty());
    assert!(companion::candidates(T0 + 2 * HOUR, "other", &all).is_empty());
    assert_eq!(
        companion::candidates(T0 + HOUR + 10, companion::IMPORTED, &all)[0].last_update_ms,
        Some(T0 + HOUR)
    );
    // A Zen file without spaces (Zen would not use it) is passed over.
    let empty = br#"{"lastCollected":1790007300000,"tabs":[],"spaces":[]}"#;
    fs::write(profile.join("zen-sessions.jsonlz4"), mozlz4(empty)).unwrap();
    backup_profile(&mut store, "zen", &profile, T0 + 3 * HOUR).unwrap();
    let all = store.snapshots().unwrap();
    let chosen = companion::candidates(T0 + 3 * HOUR, "zen", &all);
    assert_eq!(chosen[0].last_update_ms, Some(T0 + 2 * HOUR));

    // The restore plan of session b names Zen's file of b.
    let b = sessions[1];
    let plan = ffsession::restore::plan(&store, b.id, &profile).unwrap();
    let zen = plan.zen.expect("Zen's file of the same moment");
    assert_eq!(zen.snapshot.last_update_ms, Some(T0 + HOUR));
    assert_eq!(zen.write, profile.join("zen-sessions.jsonlz4"));
}

#[test]
fn a_prune_keeps_zens_file_with_each_session_it_keeps() {
    let (_tmp, profile, mut store) = common::profile_and_store();
    save_hourly(&mut store, &profile, &["a", "b", "c", "d"]);
    let keep_two = common::keep_last(2);
    let (snapshots, plan) =
        ffsession::prune::plan_store(&store, &keep_two, &jiff::tz::TimeZone::UTC, T0 + 5 * HOUR)
            .unwrap();
    let kept: Vec<&SnapshotInfo> = plan
        .decisions
        .iter()
        .filter(|d| d.keep)
        .map(|d| snapshots.iter().find(|s| s.id.0 == d.id).unwrap())
        .collect();
    // The two newest Firefox sessions (Zen's newer files do not push them
    // out of `keep_last`), and Zen's file of each.
    let mut times: Vec<(String, u64)> = kept
        .iter()
        .map(|s| (s.file_name.clone(), s.last_update_ms.unwrap()))
        .collect();
    times.sort();
    assert_eq!(
        times,
        [
            ("sessionstore.jsonlz4".into(), T0 + 2 * HOUR - 3),
            ("sessionstore.jsonlz4".into(), T0 + 3 * HOUR - 3),
            ("zen-sessions.jsonlz4".into(), T0 + 2 * HOUR),
            ("zen-sessions.jsonlz4".into(), T0 + 3 * HOUR),
        ]
    );
    let zen_of_c = plan
        .decisions
        .iter()
        .find(|d| {
            let s = snapshots.iter().find(|s| s.id.0 == d.id).unwrap();
            s.kind.is_zen() && s.last_update_ms == Some(T0 + 2 * HOUR)
        })
        .unwrap();
    assert!(
        matches!(zen_of_c.reasons[..], [Reason::ZenCompanion { .. }]),
        "{:?}",
        zen_of_c.reasons
    );
    assert_eq!(plan.decisions.len(), snapshots.len());
    // Carried out, every kept session still restores with its Zen file.
    ffsession::prune::carry_out(&mut store, &plan).unwrap();
    for s in store
        .snapshots()
        .unwrap()
        .iter()
        .filter(|s| !s.kind.is_zen())
    {
        let plan = ffsession::restore::plan(&store, s.id, &profile).unwrap();
        assert_eq!(
            plan.zen.unwrap().snapshot.last_update_ms,
            Some(s.last_update_ms.unwrap() + 3)
        );
    }
}
