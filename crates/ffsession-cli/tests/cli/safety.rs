//! The store on a full disk and on a read-only one, a damaged snapshot met
//! by prune and restore, and "latest" by the session's own clock (issues 20
//! and 21), each through the command line.

use std::fs;
use std::path::Path;
#[cfg(target_os = "linux")]
use std::process::Output;

use crate::common::*;

const NOW: u64 = 1_795_400_000_000;
const DAY: u64 = 86_400_000;

/// Run `script` with sh in a new user and mount namespace (`unshare -rm`),
/// where it may mount a file system of its own; `$BIN` is ffsession.
#[cfg(target_os = "linux")]
fn in_namespace(env: &TestEnv, script: &str) -> Output {
    let out = env
        .sealed_cmd("unshare")
        .args(["-rm", "sh", "-c", script])
        .env("BIN", assert_cmd::cargo::cargo_bin("ffsession"))
        .env("T", env.path())
        .output()
        .expect("unshare runs");
    assert!(
        !stderr(&out).contains("unshare failed")
            && !stderr(&out).contains("Operation not permitted"),
        "this test needs user and mount namespaces: {}",
        stderr(&out)
    );
    out
}

/// The exit status `name=N` lines of a script's stdout give.
#[cfg(target_os = "linux")]
fn status(out: &Output, name: &str) -> i32 {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name}= in {text}\nstderr: {}", stderr(out)))
        .trim()
        .parse()
        .unwrap()
}

/// Two snapshots in the test store, the second with a WAL the catalog file
/// does not have yet (the restore that took it was killed right after
/// writing the session, before the catalog was checkpointed).
#[cfg(target_os = "linux")]
fn store_with_a_live_wal(env: &TestEnv) -> std::path::PathBuf {
    let profile = env.back_up_recovery(&packed(30, NOW));
    // Renames: the undo snapshot's manifest (its content and chunks are
    // stored already), then sessionstore.jsonlz4.
    let killed = env
        .store_cmd(&profile)
        .args(["restore", "1"])
        .env("FFSESSION_TEST_KILL_AFTER_WRITES", "2")
        .run();
    assert!(!killed.status.success(), "{}", stderr(&killed));
    let wal = env.store_dir().join("catalog.sqlite-wal");
    assert!(
        fs::metadata(&wal).map_or(0, |m| m.len()) > 0,
        "the kill left the WAL with the undo snapshot's commit"
    );
    profile
}

/// Linux only: a small or read-only file system mounted in a user namespace
/// (`unshare`, `mount`, `sh`).
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_still_lists_checks_and_restores() {
    let env = TestEnv::new();
    let profile = store_with_a_live_wal(&env);
    // A second store, closed as every command closes it (no WAL, no shm).
    ok_output(
        env.store_cmd_at(&profile, &env.path().join("clean"))
            .arg("backup"),
    );
    assert!(!env.path().join("clean/catalog.sqlite-shm").exists());
    fs::create_dir_all(env.path().join("disk")).unwrap();
    let out = in_namespace(
        &env,
        r#"
        mount -t tmpfs -o size=8m tmpfs "$T/disk" || exit 90
        cp -a "$T/clean" "$T/disk/clean"
        # As after a crash on another machine: the WAL without its shm.
        cp -a "$T/store" "$T/disk/wal" && rm -f "$T/disk/wal/catalog.sqlite-shm" "$T/disk/wal/index.sqlite-shm"
        dd if=/dev/zero of="$T/disk/fill" bs=4k 2>/dev/null
        df -k "$T/disk" | tail -n 1
        for s in clean wal; do
            "$BIN" --store "$T/disk/$s" list --json > "$T/$s-list.json"; echo "$s-list=$?"
            "$BIN" --store "$T/disk/$s" check > "$T/$s-check.txt" 2>&1; echo "$s-check=$?"
            "$BIN" --store "$T/disk/$s" --profile "$T/new-$s" restore latest > "$T/$s-restore.txt" 2>&1; echo "$s-restore=$?"
            "$BIN" --store "$T/disk/$s" search example > "$T/$s-search.txt" 2>&1; echo "$s-search=$?"
        done
        "#,
    );
    let df = String::from_utf8_lossy(&out.stdout);
    assert!(df.contains(" 100% "), "the disk is full: {df}");
    let read = |name: &str| fs::read_to_string(env.path().join(name)).unwrap_or_default();
    for (store, snapshots) in [("clean", 1), ("wal", 2)] {
        assert_eq!(
            status(&out, &format!("{store}-list")),
            0,
            "{}",
            stderr(&out)
        );
        let list: serde_json::Value =
            serde_json::from_str(&read(&format!("{store}-list.json"))).unwrap();
        assert_eq!(
            list.as_array().unwrap().len(),
            snapshots,
            "{store}: every committed snapshot is listed, the one still only in the WAL too"
        );
        let check = read(&format!("{store}-check.txt"));
        assert_eq!(
            status(&out, &format!("{store}-check")),
            0,
            "a full disk is not damage: {check}"
        );
        assert!(check.contains("no errors were found"), "{check}");
        let restore = read(&format!("{store}-restore.txt"));
        assert_eq!(status(&out, &format!("{store}-restore")), 0, "{restore}");
        assert!(env
            .path()
            .join(format!("new-{store}/sessionstore.jsonlz4"))
            .is_file());
        let search = read(&format!("{store}-search.txt"));
        assert_eq!(status(&out, &format!("{store}-search")), 0, "{search}");
    }
}

/// Linux only: a small or read-only file system mounted in a user namespace
/// (`unshare`, `mount`, `sh`).
#[cfg(target_os = "linux")]
#[test]
fn a_read_only_store_restores_into_a_new_profile_and_asks_where_an_undo_goes() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(30, NOW));
    fs::create_dir_all(env.path().join("ro")).unwrap();
    let out = in_namespace(
        &env,
        r#"
        mount --bind "$T/store" "$T/ro" && mount -o remount,ro,bind "$T/ro" || exit 90
        touch "$T/ro/x" 2>/dev/null; echo "writable=$?"
        "$BIN" --store "$T/ro" --profile "$T/new" restore 1 > "$T/new.txt" 2>&1; echo "new=$?"
        "$BIN" --store "$T/ro" --profile "$T/profile" restore 1 > "$T/undo.txt" 2>&1; echo "undo=$?"
        test -f "$T/profile/sessionstore-backups/recovery.jsonlz4"; echo "kept=$?"
        "$BIN" --store "$T/ro" --profile "$T/profile" restore 1 --undo-store "$T/undo" > "$T/elsewhere.txt" 2>&1; echo "elsewhere=$?"
        "#,
    );
    assert_ne!(status(&out, "writable"), 0, "the store is read-only");
    let read = |name: &str| fs::read_to_string(env.path().join(name)).unwrap();
    assert_eq!(status(&out, "new"), 0, "{}", read("new.txt"));
    assert!(env.path().join("new/sessionstore.jsonlz4").is_file());
    // The profile has a session to keep for the undo: said, with the way.
    assert_eq!(status(&out, "undo"), 1, "{}", read("undo.txt"));
    let err = read("undo.txt");
    assert!(
        err.contains("undo") && err.contains("--undo-store"),
        "{err}"
    );
    assert_eq!(status(&out, "kept"), 0, "nothing changed");
    assert_eq!(status(&out, "elsewhere"), 0, "{}", read("elsewhere.txt"));
    let undo = crate::common::undo_command(&read("elsewhere.txt"));
    let store_at = undo.iter().position(|w| w == "--store").unwrap();
    assert_eq!(
        std::path::Path::new(&undo[store_at + 1]),
        env.path().join("undo")
    );
    assert_eq!(undo[undo.len() - 2..], ["restore", "snapshot:1"]);
    assert!(!profile
        .join("sessionstore-backups/recovery.jsonlz4")
        .exists());
    assert!(profile.join("sessionstore.jsonlz4").is_file());
}

/// Flip one bit in the middle of every chunk file snapshot `id` uses that
/// the others do not (from the content manifests).
fn damage_only(store: &Path, id: i64, others: &[i64]) {
    let chunks = |id: i64| -> Vec<String> {
        let m: serde_json::Value =
            serde_json::from_slice(&fs::read(store.join(format!("snapshots/{id}.json"))).unwrap())
                .unwrap();
        let content = m["manifest"]["content"].as_str().unwrap().to_owned();
        let c: serde_json::Value = serde_json::from_slice(
            &fs::read(store.join(format!("contents/{}/{content}.json", &content[..2]))).unwrap(),
        )
        .unwrap();
        c["manifest"]["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e[0].as_str().unwrap().to_owned())
            .collect()
    };
    let keep: Vec<String> = others.iter().flat_map(|&o| chunks(o)).collect();
    let mut flipped = 0;
    for hex in chunks(id) {
        if keep.contains(&hex) {
            continue;
        }
        let path = store.join(format!("chunks/{}/{hex}.zst", &hex[..2]));
        let mut bytes = fs::read(&path).unwrap();
        let i = bytes.len() / 2;
        bytes[i] ^= 0x08;
        fs::write(&path, bytes).unwrap();
        flipped += 1;
    }
    assert!(flipped > 0);
}

#[test]
fn prune_keeps_the_only_intact_snapshot_and_says_why() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(40, NOW - DAY));
    env.back_up_recovery(&packed(40, NOW));
    let ids = env.snapshot_ids(&profile);
    assert_eq!(ids, [2, 1]);
    damage_only(&env.store_dir(), 2, &[1]);
    fs::remove_file(profile.join("sessionstore-backups/recovery.jsonlz4")).unwrap();
    let out = ok_stdout(env.store_cmd(&profile).args(["prune", "--keep-last", "1"]));
    assert!(
        out.contains("#1") && out.contains("newest verified"),
        "{out}"
    );
    assert!(out.contains("found damaged"), "{out}");
    assert_eq!(env.snapshot_ids(&profile), [2, 1], "nothing removed: {out}");
    let listed = ok_stdout(env.store_cmd(&profile).arg("list"));
    let line2 = listed.lines().find(|l| l.starts_with("#2")).unwrap();
    assert!(line2.contains("DAMAGED"), "{listed}");
    // restore latest takes #1 and says why.
    let out = env
        .store_cmd(&profile)
        .args(["restore", "latest", "--dry-run"])
        .run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("restore #1 "));
    assert_contains_all(&stderr(&out), &["snapshot 2 does not read back whole"]);
}

#[test]
fn restore_latest_takes_the_current_session_not_an_upgrade_copy() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[
        ("sessionstore-backups/recovery.jsonlz4", &packed(50, NOW)),
        (
            "sessionstore-backups/upgrade.jsonlz4-20261101000000",
            &packed(3, NOW - 30 * DAY),
        ),
    ]);
    let backup = env.store_cmd(&profile).arg("backup").run();
    assert_eq!(
        backup.status.code(),
        Some(0),
        "no alarm: {}",
        stderr(&backup)
    );
    let out = ok_stdout(
        env.store_cmd(&profile)
            .args(["restore", "latest", "--dry-run"]),
    );
    let first = out.lines().next().unwrap();
    assert!(
        first.contains("recovery.jsonlz4") && first.contains("50 tabs"),
        "{out}"
    );
}

#[test]
fn diff_latest_is_the_newest_session_and_a_newer_a_is_said() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(30, NOW - DAY));
    env.back_up_recovery(&packed(32, NOW));
    let out = env.store_cmd(&profile).args(["diff", "1", "latest"]).run();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("b: snapshot #2"), "{text}");
    assert!(!stderr(&out).contains("newer"), "{}", stderr(&out));
    let out = env.store_cmd(&profile).args(["diff", "latest", "1"]).run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_contains_all(&stderr(&out), &["A is the newer session"]);
}

#[test]
fn identical_files_in_one_backup_are_stored_and_counted_once() {
    let env = TestEnv::new();
    let session = packed(40, NOW);
    let profile = env.profile_with(&[
        ("sessionstore-backups/recovery.jsonlz4", &session),
        ("sessionstore-backups/recovery.baklz4", &session),
    ]);
    let report = ok_json(env.store_cmd(&profile).args(["backup", "--json"]));
    let snapshots = report["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 2);
    let sizes: Vec<u64> = snapshots
        .iter()
        .map(|s| s["stored_size"].as_u64().unwrap())
        .collect();
    assert!(sizes[0] > 0, "{sizes:?}");
    assert_eq!(sizes[1], 0, "the second copy adds nothing: {sizes:?}");
    let text = ok_stdout(env.store_cmd(&profile).arg("backup"));
    assert!(text.contains("(0 B new)"), "{text}");
}
