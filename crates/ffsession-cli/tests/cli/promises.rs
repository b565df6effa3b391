//! What a person meets over days of use (issue 36, section 1): each day keeps
//! its own session, an undo point survives prune, a file that is not a
//! session is refused before anything is stored, `restore latest` says what
//! it passed over, an unreadable session file is an alarm.

use std::fs;
use std::path::Path;

use crate::common::Run;
use crate::common::*;

const NOW: u64 = 1_795_400_000_000;
const DAY: u64 = 86_400_000;

fn write_file(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// `list --json`: (id, tabs, lastUpdate) of each snapshot.
fn listed(env: &TestEnv, profile: &Path) -> Vec<(i64, u64, u64)> {
    env.list_snapshots(profile)
        .iter()
        .map(|s| {
            (
                s["id"].as_i64().unwrap(),
                s["counts"]["tabs"].as_u64().unwrap_or(0),
                s["last_update_ms"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn nine_daily_backups_keep_each_days_session_not_an_upgrade_copy() {
    let env = TestEnv::new();
    let may = NOW - 200 * DAY;
    let profile = env.profile_with(&[(
        "sessionstore-backups/upgrade.jsonlz4-20260501000000",
        &packed(3, may),
    )]);
    let recovery = profile.join("sessionstore-backups/recovery.jsonlz4");
    for day in 0..9u64 {
        // The day's session: 40 tabs and more, written that evening.
        write_file(&recovery, &packed(40 + day as usize, NOW - (8 - day) * DAY));
        let out = env
            .store_cmd(&profile)
            .args([
                "backup",
                "--prune",
                "--keep-last",
                "0",
                "--keep-hourly",
                "0",
            ])
            .args([
                "--keep-daily",
                "7",
                "--keep-weekly",
                "0",
                "--keep-monthly",
                "0",
            ])
            .args(["--keep-yearly", "0"])
            .run();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let kept = listed(&env, &profile);
    // The seven newest days each keep their session.
    for day in 2..9u64 {
        let t = NOW - (8 - day) * DAY;
        assert!(
            kept.iter()
                .any(|&(_, tabs, lu)| lu == t && tabs == 40 + day),
            "day {day} lost its session: {kept:?}"
        );
    }
    // And the May session is not kept in their place, day after day.
    let may_copies = kept.iter().filter(|&&(_, _, lu)| lu == may).count();
    assert_eq!(may_copies, 0, "{kept:?}");
}

#[test]
fn an_undo_point_survives_prune_and_says_why() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(30, NOW - 3 * DAY));
    env.back_up_recovery(&packed(31, NOW - 2 * DAY));
    // Restore the older session: the current one (31 tabs) is the undo point.
    let out = ok_stdout(env.store_cmd(&profile).args(["restore", "1"]));
    let undo: i64 = undo_id(&out).parse().unwrap();
    // Days of newer sessions, then the strictest prune.
    for day in 0..3 {
        env.back_up_recovery(&packed(32 + day, NOW - DAY + day as u64 * 3_600_000));
    }
    let plan = ok_stdout(env.store_cmd(&profile).arg("prune").args(keep_only_last(1)));
    let line = plan
        .lines()
        .find(|l| l.contains(&format!("#{undo} ")))
        .unwrap_or_else(|| panic!("snapshot {undo} not in the plan: {plan}"));
    assert!(
        line.starts_with("keep (") && line.contains("undo point"),
        "{plan}"
    );
    assert!(env.snapshot_ids(&profile).contains(&undo), "{plan}");
    // And it restores.
    ok_output(
        env.store_cmd(&profile)
            .args(["restore", &undo.to_string(), "--dry-run"]),
    );
}

#[test]
fn restore_refuses_a_file_that_is_not_a_session_before_storing_anything() {
    let env = TestEnv::new();
    let profile = env.profile_with_recovery(&packed(10, NOW));
    let files = [
        env.write("passwd", b"root:x:0:0:root:/root:/bin/bash\n"),
        env.write("empty.jsonlz4", b""),
        env.write("other.json", br#"{"name": "not a session"}"#),
    ];
    for file in &files {
        let err = expect_error(env.store_cmd(&profile).args(["restore"]).arg(file));
        assert!(err.contains("not a Firefox session file"), "{err}");
        assert!(
            err.contains(&*file.file_name().unwrap().to_string_lossy()),
            "{err}"
        );
        assert!(
            !env.store_dir().exists(),
            "a store was made for {}",
            file.display()
        );
    }
}

#[test]
fn restore_latest_names_a_newer_damaged_file_and_the_rescue_command() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(50, NOW - 5 * DAY));
    let mut cut = packed(204, NOW);
    cut.truncate(cut.len() / 2);
    env.profile_with_recovery(&cut);
    let backup = env.store_cmd(&profile).arg("backup").run();
    assert_eq!(backup.status.code(), Some(3), "{}", stderr(&backup));
    let out = env
        .store_cmd(&profile)
        .args(["restore", "latest", "--dry-run"])
        .run();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("snapshot 2") && err.contains("damaged"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "`ffsession --profile {} --store {} rescue snapshot:2 -o rescued.jsonlz4`",
            profile.display(),
            env.store_dir().display()
        )),
        "{err}"
    );
    assert!(err.contains("taking snapshot 1 (50 tabs"), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn an_unreadable_session_file_is_an_alarm() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[
        (
            "sessionstore-backups/recovery.jsonlz4",
            &packed(20, NOW - DAY),
        ),
        ("sessionstore-backups/previous.jsonlz4", &packed(30, NOW)),
    ]);
    let previous = profile.join("sessionstore-backups/previous.jsonlz4");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&previous, fs::Permissions::from_mode(0o000)).unwrap();
    // As a user without the power to read it, even when the tests run as
    // root: a user namespace maps us to an ordinary user.
    let out = env
        .sealed_cmd("unshare")
        .args(["--map-user=1000", "--map-group=1000"])
        .arg(assert_cmd::cargo::cargo_bin("ffsession"))
        .arg("--profile")
        .arg(&profile)
        .arg("--store")
        .arg(env.store_dir())
        .arg("backup")
        .run();
    let err = stderr(&out);
    assert!(
        !err.contains("unshare failed") && !err.contains("Operation not permitted"),
        "this test needs user namespaces: {err}"
    );
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("previous.jsonlz4") && err.contains("cannot be read"),
        "{err}"
    );
}
