//! `backup`, `list` and `prune` on a store in a temp folder.

use std::fs;
use std::path::{Path, PathBuf};

use ffsession_gen::Spec;

use crate::common::{
    expect_error, keep_only_last, ok_json, ok_stdout, packed, seeded_session, session, session_of,
    stderr, stdout_json, undo_id, Run, TestEnv,
};

#[test]
fn backup_then_list_then_backup_again_stores_nothing_new() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[
        ("sessionstore-backups/recovery.jsonlz4", &packed(20, 2_000)),
        ("sessionstore-backups/previous.jsonlz4", &packed(18, 1_000)),
    ]);
    let report = ok_json(env.store_cmd(&profile).args(["backup", "--json"]));
    let snaps = report["snapshots"].as_array().unwrap();
    assert_eq!(snaps.len(), 2);
    assert!(snaps.iter().all(|s| s["status"] == "ok"));
    assert!(snaps.iter().all(|s| s["stored_size"].as_u64().unwrap() > 0));

    let again = ok_json(env.store_cmd(&profile).args(["backup", "--json"]));
    assert!(again["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["stored_size"] == 0));

    // Newest session first (as `restore latest` reads them), not by id: the
    // recovery file's two snapshots (session at 2,000) before previous's
    // (1,000), whichever was backed up first.
    let listed = env.list_snapshots(&profile);
    let order: Vec<(u64, &str)> = listed
        .iter()
        .map(|s| {
            (
                s["last_update_ms"].as_u64().unwrap(),
                s["file_name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            (2_000, "sessionstore-backups/recovery.jsonlz4"),
            (2_000, "sessionstore-backups/recovery.jsonlz4"),
            (1_000, "sessionstore-backups/previous.jsonlz4"),
            (1_000, "sessionstore-backups/previous.jsonlz4")
        ],
        "{listed:?}"
    );
    let ids = env.snapshot_ids(&profile);
    assert!(ids[0] > ids[1] && ids[2] > ids[3], "{ids:?}");
    let text = ok_stdout(env.store_cmd(&profile).arg("list"));
    assert!(
        text.contains(" recovery.jsonlz4 ") && text.contains("20 tabs"),
        "{text}"
    );

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let store = env.store_dir();
        assert_eq!(
            fs::metadata(&store).unwrap().permissions().mode() & 0o777,
            0o700
        );
        for entry in walk(&store) {
            let mode = fs::metadata(&entry).unwrap().permissions().mode() & 0o777;
            let want = if entry.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode, want, "{}", entry.display());
        }
    }
}

/// `list` fits in 100 columns, even for an upgrade file's long name and a
/// big session; `--long` shows what the short line leaves out (when it was
/// taken, the file's folder, the bytes added); `--json` is unchanged.
#[test]
fn list_lines_fit_in_100_columns_and_long_shows_the_rest() {
    let env = TestEnv::new();
    let big = session(Spec {
        tabs: 1234,
        windows: 12,
        last_update: 1_795_300_000_000,
        ..Spec::default()
    });
    let profile = env.profile_with(&[
        ("sessionstore-backups/recovery.jsonlz4", &big.packed),
        (
            "sessionstore-backups/upgrade.jsonlz4-20261101123456",
            &packed(3, 1_795_200_000_000),
        ),
    ]);
    ok_json(env.store_cmd(&profile).args(["backup", "--json"]));
    let text = ok_stdout(env.store_cmd(&profile).arg("list"));
    assert_eq!(text.lines().count(), 2, "{text}");
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
        assert!(line.contains(" session 2026-11-"), "{line}");
    }
    assert!(text.contains("12 windows, 1234 tabs"), "{text}");
    assert!(text.contains("upgrade.jsonlz4-20261101123456"), "{text}");

    let long = ok_stdout(env.store_cmd(&profile).args(["list", "--long"]));
    let snaps = env.list_snapshots(&profile);
    for (line, snap) in long.lines().zip(&snaps) {
        let name = snap["file_name"].as_str().unwrap();
        assert!(line.contains(name) && line.contains(" +"), "{line}");
        assert!(line.contains(" session 2026-11-"), "{line}");
    }
    assert_eq!(long.lines().count(), 2, "{long}");
    assert!(
        long.contains("sessionstore-backups/upgrade.jsonlz4-"),
        "{long}"
    );

    // --json keeps every field, --long or not.
    let keys: Vec<&String> = snaps[0].as_object().unwrap().keys().collect();
    for key in ["id", "taken_at_ms", "file_name", "stored_size", "status"] {
        assert!(keys.iter().any(|k| *k == key), "{key}: {keys:?}");
    }
    let long_json = ok_json(env.store_cmd(&profile).args(["list", "--long", "--json"]));
    assert_eq!(long_json, serde_json::Value::Array(snaps));
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn a_damaged_or_shrunken_newest_file_exits_3_and_is_kept() {
    let env = TestEnv::new();
    let good = packed(40, 1_000);
    let profile = env.back_up_recovery(&good);

    env.profile_with_recovery(&good[..good.len() / 3]);
    let out = env.store_cmd(&profile).arg("backup").run();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "warning: the newest session file sessionstore-backups/recovery.jsonlz4 is damaged"
        ),
        "{err}"
    );

    env.profile_with_recovery(&packed(12, 2_000));
    let out = env.store_cmd(&profile).arg("backup").run();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("has 12 tabs, down from 40 in snapshot 1"),
        "{}",
        stderr(&out)
    );

    let list = env.list_snapshots(&profile);
    let statuses: Vec<&str> = list.iter().map(|s| s["status"].as_str().unwrap()).collect();
    // Newest session first: the damaged file has no session time of its
    // own and counts as of when it was taken (now, after the sessions of
    // 1970 these fixtures hold), the 12-tab session (2,000) before the
    // 40-tab one (1,000).
    assert_eq!(statuses, ["corrupt", "ok", "ok"]);
    let tabs: Vec<u64> = list[1..]
        .iter()
        .map(|s| s["counts"]["tabs"].as_u64().unwrap())
        .collect();
    assert_eq!(tabs, [12, 40]);
}

#[test]
fn prune_shows_its_plan_and_keeps_what_it_must() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[]);
    let recovery = profile.join("sessionstore-backups/recovery.jsonlz4");
    fs::create_dir_all(recovery.parent().unwrap()).unwrap();
    for (i, tabs) in [30, 31, 32, 5, 6].into_iter().enumerate() {
        fs::write(&recovery, packed(tabs, 1_000 + i as u64)).unwrap();
        let out = env.store_cmd(&profile).arg("backup").run();
        assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    }
    let none = keep_only_last(1);
    let plan = ok_json(
        env.store_cmd(&profile)
            .arg("prune")
            .args(&none)
            .args(["--dry-run", "--json"]),
    );
    let kept: Vec<i64> = plan["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["keep"] == true)
        .map(|d| d["id"].as_i64().unwrap())
        .collect();
    // 5: the newest (keep-last, newest verified); 3: the last good before 4 lost most tabs.
    assert_eq!(kept, [5, 3]);
    assert_eq!(
        env.list_snapshots(&profile).len(),
        5,
        "dry run removed something"
    );

    let text = ok_stdout(env.store_cmd(&profile).arg("prune").args(&none));
    assert!(
        text.contains("keep (last good before damaged #4)"),
        "{text}"
    );
    assert!(text.contains("removing 3 snapshots of 5"), "{text}");
    assert_eq!(env.snapshot_ids(&profile), [5, 3]);
}

#[test]
fn a_store_that_is_not_a_store_is_a_clear_error() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[("sessionstore.jsonlz4", &packed(3, 1))]);
    fs::create_dir_all(env.store_dir()).unwrap();
    fs::write(
        env.store_dir().join("catalog.sqlite"),
        b"this is not sqlite at all, just text",
    )
    .unwrap();
    for args in [&["list"][..], &["backup"], &["prune", "--dry-run"]] {
        let err = expect_error(env.store_cmd(&profile).args(args));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("catalog") && err.contains("(hint: "),
            "{args:?}: {err}"
        );
    }
}

/// An existing empty folder given as --store is a new store: a reader says
/// "no backups yet" (as for a folder not made yet), never "not an ffsession
/// store", and the first backup makes the store in it. A folder holding
/// other files is still refused.
#[test]
fn an_empty_folder_as_store_is_a_new_store() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[("sessionstore.jsonlz4", &packed(3, 1))]);
    fs::create_dir_all(env.store_dir()).unwrap();
    for args in [
        &["list"][..],
        &["check"],
        &["stats"],
        &["search", "example"],
        &["history", "https://example.org/"],
        &["prune", "--dry-run"],
        &["reindex"],
    ] {
        let out = env.store_cmd(&profile).args(args).run();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("no backups yet") && err.contains("is an empty folder"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("not an ffsession store"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    ok_stdout(env.store_cmd(&profile).arg("backup"));
    assert_eq!(env.snapshot_ids(&profile), [1]);

    let other = env.path().join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("notes.txt"), b"mine").unwrap();
    let err = expect_error(env.store_cmd_at(&profile, &other).arg("list"));
    assert!(err.contains("not an ffsession store"), "{err}");
}

/// `ffsession decompress PROFILE/sessionstore.jsonlz4`: the session Firefox
/// opens next.
fn current_session_json(env: &TestEnv, profile: &Path) -> String {
    ok_stdout(
        env.cmd()
            .arg("decompress")
            .arg(profile.join("sessionstore.jsonlz4")),
    )
}

fn snapshot_files(profile: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = walk(profile)
        .into_iter()
        // Firefox's lock on Windows: nobody can read it while it is held.
        .filter(|p| p.is_file() && !p.ends_with("parent.lock"))
        .map(|p| {
            (
                p.strip_prefix(profile).unwrap().display().to_string(),
                fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn restore_puts_the_snapshot_back_and_can_be_undone() {
    let env = TestEnv::new();
    let old = session_of(25, 1_000);
    let profile = env.profile_with_recovery(&old.packed);
    fs::write(profile.join("prefs.js"), "user_pref(\"browser.startup.page\", 1);\nuser_pref(\"browser.sessionstore.resuming_after_os_restart\", true);\n").unwrap();
    env.store_cmd(&profile).arg("backup").assert().success();
    // The session moves on: another recovery file and a previous one.
    let newer = seeded_session(7, 2_000, 7);
    env.profile_with_recovery(&newer.packed);
    fs::write(
        profile.join("sessionstore-backups/previous.jsonlz4"),
        packed(6, 1_500),
    )
    .unwrap();

    let before = snapshot_files(&profile);
    let plan = ok_stdout(env.store_cmd(&profile).args(["restore", "1", "--dry-run"]));
    assert!(plan.contains("would remove sessionstore-backups/recovery.jsonlz4"));
    assert_eq!(
        snapshot_files(&profile),
        before,
        "dry run changed the profile"
    );

    let text = ok_stdout(env.store_cmd(&profile).args(["restore", "1"]));
    assert!(text.contains("done: Firefox reopens snapshot 1"), "{text}");
    assert!(!profile
        .join("sessionstore-backups/recovery.jsonlz4")
        .exists());
    assert!(!profile
        .join("sessionstore-backups/previous.jsonlz4")
        .exists());
    assert_eq!(
        current_session_json(&env, &profile),
        old.json,
        "restored JSON differs from the snapshot"
    );
    let prefs = fs::read_to_string(profile.join("prefs.js")).unwrap();
    assert_eq!(prefs, "user_pref(\"browser.startup.page\", 1);\nuser_pref(\"browser.sessionstore.resume_session_once\", true);\n");

    // Undo: the session that was current is in the store.
    let undo = undo_id(&text);
    env.store_cmd(&profile)
        .args(["restore", &undo])
        .assert()
        .success();
    assert_eq!(current_session_json(&env, &profile), newer.json);
}

#[test]
fn restore_refuses_bad_snapshots_and_a_running_firefox() {
    let env = TestEnv::new();
    let good = packed(10, 1_000);
    let profile = env.back_up_recovery(&good);
    env.profile_with_recovery(&good[..100]);
    let _ = env.store_cmd(&profile).arg("backup").run();
    for (id, msg) in [
        ("2", "cannot be restored: its file was damaged"),
        ("99", "no snapshot with id 99"),
        ("abc", "\"abc\" is neither a snapshot id nor a file"),
    ] {
        let err = expect_error(env.store_cmd(&profile).args(["restore", id]));
        assert!(err.contains(msg), "{id}: {err}");
    }

    // Firefox holds an fcntl lock on .parentlock while it runs (on Windows,
    // parent.lock open without sharing); a holder plays Firefox here.
    {
        let holder = ffsession_gen::FirefoxLockHolder::hold(&profile);
        let before = snapshot_files(&profile);
        let err = expect_error(env.store_cmd(&profile).args(["restore", "1"]));
        drop(holder);
        assert!(err.contains("Firefox is running on this profile"), "{err}");
        assert!(err.contains("hint: quit Firefox"), "{err}");
        assert_eq!(
            snapshot_files(&profile),
            before,
            "a refused restore changed the profile"
        );
        env.store_cmd(&profile)
            .args(["restore", "1"])
            .assert()
            .success();
    }
}

#[test]
fn watch_backs_up_on_change_and_stops_on_interrupt() {
    let env = TestEnv::new();
    let profile = env.profile_with_recovery(&packed(5, 1_000));
    let mut child = env.watch_cmd(&profile).spawn().unwrap();
    let list = |env: &TestEnv| -> Vec<serde_json::Value> {
        let out = env.store_cmd(&profile).args(["list", "--json"]).run();
        if !out.status.success() {
            return Vec::new();
        }
        stdout_json(&out).as_array().cloned().unwrap_or_default()
    };
    let wait_for = |n: usize| {
        for _ in 0..100 {
            if list(&env).len() >= n {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("no snapshot {n} within 10 s");
    };
    wait_for(1);
    // Firefox replaces the file with tmp + rename.
    crate::common::replace_recovery(&profile, &packed(9, 2_000));
    wait_for(2);
    let newest = &list(&env)[0];
    assert_eq!(newest["counts"]["tabs"], 9);
    ffsession_gen::interrupt(&mut child);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.starts_with("watching "), "{text}");
    // Ctrl-C reaches it on Unix only (see `ffsession_gen::interrupt`).
    if cfg!(unix) {
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(text.trim_end().ends_with("stopped"), "{text}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn service_install_writes_a_systemd_user_unit() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[]);
    let installed = ok_stdout(
        env.store_cmd(&profile)
            .args(["service", "install", "--no-enable"]),
    );
    let unit_path = env
        .home()
        .join(".config/systemd/user/ffsession-watch-profile.service");
    let unit = fs::read_to_string(&unit_path).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("ffsession");
    assert!(
        unit.contains(&format!(
            "ExecStart=\"{}\" \"watch\" \"--profile\" \"{}\" \"--store\" \"{}\"",
            exe.display(),
            profile.display(),
            env.store_dir().display()
        )),
        "{unit}"
    );
    assert!(installed.contains(&unit_path.display().to_string()));
    crate::common::ok_output(
        env.store_cmd(&profile)
            .args(["service", "uninstall", "--no-enable"]),
    );
    assert!(!unit_path.exists());
}

/// Without a user session systemctl cannot reach its manager ("Failed to
/// connect to bus"): the error says the file is written, how to finish from
/// a session, and the other way (the watch command to start at login).
#[cfg(target_os = "linux")]
#[test]
fn service_install_without_a_user_bus_says_how_to_finish() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[]);
    let path = crate::common::path_with_first(&crate::common::systemctl_without_a_bus(&env));
    let err = expect_error(
        env.store_cmd(&profile)
            .env("PATH", path)
            .args(["service", "install"]),
    );
    // systemctl's own line, then ffsession's one.
    let ours: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("ffsession:"))
        .collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(
        err.contains("systemctl --user daemon-reload && systemctl --user enable --now ffsession-watch-profile.service")
            && err.contains("loginctl enable-linger")
            && err.contains(" watch --profile ")
            && err.contains("autostart"),
        "{err}"
    );
    assert!(env
        .home()
        .join(".config/systemd/user/ffsession-watch-profile.service")
        .exists());
}

#[test]
fn a_missing_or_unusable_profile_is_a_clear_error_for_every_store_command() {
    let env = TestEnv::new();
    let not_a_dir = env.path().join("a-file");
    fs::write(&not_a_dir, b"x").unwrap();
    for profile in [env.path().join("does/not/exist"), not_a_dir.clone()] {
        // Commands that work on the profile itself need one. (`restore` into
        // a folder that does not exist creates it: see standalone.rs.)
        let mut commands = vec![&["backup"][..], &["watch"]];
        if profile == not_a_dir {
            commands.push(&["restore", "1"]);
        }
        for args in commands {
            let err = expect_error(env.store_cmd(&profile).args(args));
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(
                err.contains("not a profile folder") && err.contains("(hint: "),
                "{args:?}: {err}"
            );
        }
        // With --store, the store commands need no profile: here the store
        // does not exist, and that is what they say.
        for args in [&["list"][..], &["prune", "--dry-run"]] {
            let err = expect_error(env.store_cmd(&profile).args(args));
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(
                err.contains("no backups yet") && err.contains("(hint: "),
                "{args:?}: {err}"
            );
        }
    }
}
