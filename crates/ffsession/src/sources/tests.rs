use super::*;
use crate::format::compress;

fn write(dir: &Path, name: &str, last_update: u64) {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let json = format!(r#"{{"windows":[],"session":{{"lastUpdate":{last_update}}}}}"#);
    fs::write(path, compress(json.as_bytes()).unwrap()).unwrap();
}

#[test]
fn lists_in_firefox_order_and_picks_the_newest_valid() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "sessionstore-backups/previous.jsonlz4", 100);
    write(p, "sessionstore-backups/recovery.jsonlz4", 300);
    write(p, "sessionstore-backups/recovery.baklz4", 200);
    write(p, "sessionstore-backups/upgrade.jsonlz4-20260101", 50);
    fs::write(
        p.join("sessionstore-backups/recovery.jsonlz4.tmp"),
        b"partial",
    )
    .unwrap();
    fs::write(p.join("sessionstore.jsonlz4"), b"mozLz40\0broken").unwrap();
    let names: Vec<_> = list(p).unwrap().into_iter().map(|f| f.name).collect();
    assert_eq!(
        names,
        [
            "sessionstore.jsonlz4",
            "sessionstore-backups/recovery.jsonlz4",
            "sessionstore-backups/recovery.baklz4",
            "sessionstore-backups/previous.jsonlz4",
            "sessionstore-backups/upgrade.jsonlz4-20260101",
        ]
    );
    let newest = newest(p).unwrap();
    assert_eq!(newest.source.name, "sessionstore-backups/recovery.jsonlz4");
    assert_eq!(newest.candidates, 5);
    assert_eq!(newest.skipped.len(), 1);
    assert!(newest.skipped[0].0.ends_with("sessionstore.jsonlz4"));
}

#[test]
fn zens_files_have_roles_of_their_own_and_are_never_the_newest_session() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "sessionstore-backups/recovery.jsonlz4", 300);
    let zen = |name: &str, at: u64| {
        let path = p.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let json = format!(r#"{{"lastCollected":{at},"tabs":[],"spaces":[]}}"#);
        fs::write(path, compress(json.as_bytes()).unwrap()).unwrap();
    };
    zen("zen-sessions.jsonlz4", 9_000);
    zen("zen-sessions-backup/recovery.baklz4", 8_000);
    zen("zen-sessions-backup/clean.jsonlz4", 8_500);
    zen(
        "zen-sessions-backup/zen-sessions-2026-11-28-09.jsonlz4",
        7_000,
    );
    fs::write(p.join("zen-sessions.jsonlz4.tmp"), b"partial").unwrap();
    fs::write(p.join("zen-sessions-backup/notes.txt"), b"x").unwrap();
    let listing = scan(p).unwrap();
    let got: Vec<_> = listing
        .files
        .iter()
        .map(|f| (f.name.as_str(), f.kind.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "sessionstore-backups/recovery.jsonlz4",
                SourceKind::Recovery
            ),
            ("zen-sessions.jsonlz4", SourceKind::ZenSessions),
            ("zen-sessions-backup/recovery.baklz4", SourceKind::ZenBackup),
            ("zen-sessions-backup/clean.jsonlz4", SourceKind::ZenClean),
            (
                "zen-sessions-backup/zen-sessions-2026-11-28-09.jsonlz4",
                SourceKind::ZenDated
            ),
        ]
    );
    assert!(listing.files[1..].iter().all(|f| f.kind.is_zen()));
    let skipped: Vec<_> = listing.skipped.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(skipped, ["zen-sessions-backup/notes.txt"]);
    // Zen's files are newer, but hold no Firefox session: neither taken
    // nor reported as unreadable.
    let newest = newest(p).unwrap();
    assert_eq!(newest.source.name, "sessionstore-backups/recovery.jsonlz4");
    assert_eq!((newest.candidates, newest.skipped.len()), (1, 1));
}

#[test]
fn a_profile_without_readable_sessions_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("sessionstore.jsonlz4"), b"").unwrap();
    let err = newest(dir.path()).unwrap_err();
    assert!(
        err.to_string()
            .contains("sessionstore.jsonlz4: the file is empty"),
        "{err}"
    );
}
