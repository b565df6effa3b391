//! Profile discovery and choosing the newest session file.

use std::fs;

use crate::common::{
    expect_error, firefox_profiles, ok_json, ok_output, ok_stdout, packed, stderr, stdout_json,
    TestEnv,
};

fn with_profile(env: &TestEnv) -> std::path::PathBuf {
    let root = env.firefox_root();
    fs::create_dir_all(root.join("Profiles/abc.default-release/sessionstore-backups")).unwrap();
    fs::create_dir_all(root.join("Profiles/old.default")).unwrap();
    fs::write(
        root.join("profiles.ini"),
        "[Profile1]\nName=default\nIsRelative=1\nPath=Profiles/old.default\nDefault=1\n\n\
         [Profile0]\nName=default-release\nIsRelative=1\nPath=Profiles/abc.default-release\n\n\
         [General]\nStartWithLastProfile=1\nVersion=2\n",
    )
    .unwrap();
    fs::write(
        root.join("installs.ini"),
        "[308046B0AF4A39CB]\nDefault=Profiles/abc.default-release\nLocked=1\n",
    )
    .unwrap();
    root.join("Profiles/abc.default-release")
}

/// [`with_profile`], its recovery file a session of `tabs` tabs.
fn with_recovery(env: &TestEnv, tabs: usize) -> std::path::PathBuf {
    let profile = with_profile(env);
    fs::write(
        profile.join("sessionstore-backups/recovery.jsonlz4"),
        packed(tabs, 1_795_300_000_000),
    )
    .unwrap();
    profile
}

#[test]
fn commands_without_a_file_use_the_newest_valid_session() {
    let env = TestEnv::new();
    let profile = with_profile(&env);
    let backups = profile.join("sessionstore-backups");
    fs::write(
        backups.join("previous.jsonlz4"),
        packed(5, 1_795_000_000_000),
    )
    .unwrap();
    fs::write(
        backups.join("recovery.jsonlz4"),
        packed(7, 1_795_300_000_000),
    )
    .unwrap();
    fs::write(
        backups.join("recovery.baklz4"),
        packed(6, 1_795_200_000_000),
    )
    .unwrap();
    fs::write(profile.join("sessionstore.jsonlz4"), b"mozLz40\0garbage").unwrap();

    let out = ok_output(env.cmd().args(["info", "--json"]));
    assert_eq!(stdout_json(&out)["tabs"], 7);
    let err = stderr(&out);
    assert!(
        err.contains("using ")
            && err.contains(
                "recovery.jsonlz4 (newest of 4 session files in profile \"default-release\")"
            ),
        "{err}"
    );
    assert!(
        err.contains("skipped ") && err.contains("sessionstore.jsonlz4"),
        "{err}"
    );

    let err = expect_error(
        env.cmd()
            .args(["tabs", "--format", "urls", "--profile", "default"]),
    );
    assert!(err.contains("no readable session file"), "{err}");
}

#[test]
fn profiles_lists_files_defaults_and_locks() {
    let env = TestEnv::new();
    let profile = with_recovery(&env, 9);
    fs::write(profile.join("sessionstore-backups/previous.jsonlz4"), b"").unwrap();
    #[cfg(target_os = "linux")]
    std::os::unix::fs::symlink(
        format!("127.0.0.1:+{}", std::process::id()),
        profile.join("lock"),
    )
    .unwrap();

    let v = ok_json(env.cmd().args(["profiles", "--json"]));
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let release = list
        .iter()
        .find(|p| p["name"] == "default-release")
        .unwrap();
    assert_eq!(release["is_default"], true);
    let files = release["session_files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["name"], "sessionstore-backups/recovery.jsonlz4");
    assert_eq!(files[0]["tabs"], 9);
    assert_eq!(files[1]["error"], "the file is empty");
    #[cfg(target_os = "linux")]
    assert_eq!(release["lock"]["state"], "running");

    let text = ok_stdout(env.cmd().arg("profiles"));
    assert!(text.contains("default-release (default): "), "{text}");
    assert!(text.contains("UNREADABLE: the file is empty"), "{text}");
}

#[test]
fn no_profile_is_said_clearly() {
    let env = TestEnv::new();
    for args in [&["info"][..], &["tabs"], &["profiles"]] {
        let err = expect_error(env.cmd().args(args));
        assert!(err.contains("no browser profile found"), "{err}");
        assert!(err.contains("samples/session.jsonlz4"), "{err}");
    }
}

#[test]
fn firefox_dir_option_and_environment_variable() {
    let env = TestEnv::new();
    let profile = with_profile(&env);
    fs::write(profile.join("sessionstore.jsonlz4"), packed(4, 1)).unwrap();
    let elsewhere = env.path().join("elsewhere");
    fs::rename(env.firefox_root(), &elsewhere).unwrap();
    let from_env = ok_json(
        env.cmd()
            .args(["info", "--json"])
            .env("FFSESSION_FIREFOX_DIR", &elsewhere),
    );
    assert_eq!(from_env["tabs"], 4);
    let from_option = ok_json(
        env.cmd()
            .args(["info", "--json", "--firefox-dir"])
            .arg(&elsewhere),
    );
    assert_eq!(from_option["tabs"], 4);
    let from_profile = ok_json(
        env.cmd()
            .args(["info", "--json", "--profile"])
            .arg(elsewhere.join("Profiles/abc.default-release")),
    );
    assert_eq!(from_profile["tabs"], 4);
}

/// A profiles.ini in `root` listing one profile, `default-release`, in
/// `folder` (relative to `root`), whose recovery file holds `tabs` tabs.
fn one_profile(root: &std::path::Path, folder: &str, tabs: usize, last_update: u64) {
    firefox_profiles(
        root,
        &[("default-release", folder, Some(tabs))],
        last_update,
    );
}

/// The tab counts of the snapshots `list --json` shows, newest first.
fn listed_tabs(cmd: &mut assert_cmd::Command) -> Vec<u64> {
    let list = ok_json(cmd.args(["list", "--json"]));
    let list = list.as_array().unwrap();
    list.iter()
        .map(|s| s["counts"]["tabs"].as_u64().unwrap())
        .collect()
}

#[test]
fn profiles_of_one_name_in_two_firefox_folders_keep_their_own_stores() {
    // A distribution's Firefox and a Snap one, each with a profile named
    // default-release: the second's backups must not land in the first's
    // store, where `restore latest` would take the newest of either.
    let env = TestEnv::new();
    let deb = env.firefox_root();
    let snap = ["snap", "firefox", "common", ".mozilla", "firefox"]
        .iter()
        .fold(env.path().to_path_buf(), |p, c| p.join(c));
    one_profile(&deb, "abc.default-release", 3, 1_795_000_000_000);
    one_profile(&snap, "xyz.default-release", 7, 1_795_100_000_000);
    let in_snap = |cmd: &mut assert_cmd::Command| {
        cmd.arg("--firefox-dir").arg(&snap);
    };

    ok_output(env.cmd().arg("backup"));
    let mut cmd = env.cmd();
    in_snap(&mut cmd);
    let output = ok_output(cmd.arg("backup"));
    let out = String::from_utf8(output.stdout.clone()).unwrap();
    // Said once, when the profile's own store is made.
    let note = format!(
        "backs up {}, another profile named \"default-release\"; this profile's backups go to ",
        deb.join("abc.default-release").display()
    );
    assert!(stderr(&output).contains(&note), "{}", stderr(&output));
    let mut cmd = env.cmd();
    in_snap(&mut cmd);
    let again = ok_output(cmd.arg("list"));
    assert!(
        !stderr(&again).contains("another profile"),
        "{}",
        stderr(&again)
    );
    let stores = ok_json(env.cmd().args(["stores", "--json"]));
    let stores = stores.as_array().unwrap();
    assert_eq!(stores.len(), 2, "{stores:?}");
    assert_eq!(stores[0]["name"], "default-release");
    let second = stores[1]["name"].as_str().unwrap();
    assert!(
        second.starts_with("default-release-") && second.len() == "default-release-".len() + 8,
        "{second}"
    );
    assert!(
        out.contains(&format!(
            "stored in {}",
            env.stores_root().join(second).display()
        )),
        "{out}"
    );
    for (row, folder) in [
        (&stores[0], deb.join("abc.default-release")),
        (&stores[1], snap.join("xyz.default-release")),
    ] {
        assert_eq!(row["profile_folder"], folder.to_str().unwrap(), "{row}");
    }

    // Each profile lists, and would restore, only its own snapshots.
    assert_eq!(listed_tabs(&mut env.cmd()), [3]);
    let mut cmd = env.cmd();
    in_snap(&mut cmd);
    assert_eq!(listed_tabs(&mut cmd), [7]);
    let text = ok_stdout(env.cmd().arg("stores"));
    assert!(
        text.contains(&format!(
            "  backs up {}",
            snap.join("xyz.default-release").display()
        )),
        "{text}"
    );

    // A profile that moved keeps its store, which then names the new folder.
    fs::rename(
        deb.join("abc.default-release"),
        deb.join("moved.default-release"),
    )
    .unwrap();
    one_profile(&deb, "moved.default-release", 4, 1_795_200_000_000);
    ok_output(env.cmd().arg("backup"));
    assert_eq!(listed_tabs(&mut env.cmd()), [4, 3]);
    assert_eq!(
        ffsession::store::owner::bound_profile(&env.stores_root().join("default-release")),
        Some(deb.join("moved.default-release"))
    );
}

#[test]
fn all_profiles_keeps_two_profiles_of_one_name_in_their_own_stores() {
    let env = TestEnv::new();
    let root = env.firefox_root();
    firefox_profiles(
        &root,
        &[
            ("default", "Profiles/a.default", Some(2)),
            ("default", "Profiles/b.default", Some(5)),
        ],
        1_795_000_000_000,
    );
    // Twice: the second run finds each profile's store as the first made it.
    for run in 1..=2 {
        ok_output(env.cmd().args(["backup", "--all-profiles"]));
        let stores = ok_json(env.cmd().args(["stores", "--json"]));
        let stores = stores.as_array().unwrap();
        assert_eq!(stores.len(), 2, "run {run}: {stores:?}");
        for (row, folder, tabs) in [(&stores[0], "a.default", 2), (&stores[1], "b.default", 5)] {
            assert_eq!(row["snapshots"], run, "run {run}: {row}");
            assert_eq!(
                row["profile_folder"],
                root.join("Profiles").join(folder).to_str().unwrap(),
                "{row}"
            );
            let mut cmd = env.cmd();
            cmd.arg("--profile")
                .arg(root.join("Profiles").join(folder))
                .args(["list", "--json"]);
            assert_eq!(ok_json(&mut cmd)[0]["counts"]["tabs"], tabs, "run {run}");
        }
    }
}

/// Firefox (ESR too) leaves the `lock` symlink behind on Linux after a clean
/// quit, naming its dead pid, with `.parentlock` free: not running, not a
/// "stale lock". A `.parentlock` held with fcntl is still running.
#[cfg(unix)]
#[test]
fn a_lock_symlink_left_by_a_clean_quit_is_not_running() {
    let env = TestEnv::new();
    let profile = with_recovery(&env, 3);
    fs::write(profile.join(".parentlock"), b"").unwrap();
    std::os::unix::fs::symlink("127.0.1.1:+4294967", profile.join("lock")).unwrap();
    let args = ["--profile", "default-release", "profiles"];
    let text = ok_stdout(env.cmd().args(args));
    assert!(
        text.starts_with("default-release (default): not running\n"),
        "{text}"
    );
    assert!(!text.contains("stale"), "{text}");
    let v = ok_json(env.cmd().args(args).arg("--json"));
    assert_eq!(v[0]["lock"]["state"], "not-running", "{v}");

    let holder = ffsession_gen::FcntlLockHolder::hold(&profile.join(".parentlock"));
    let text = ok_stdout(env.cmd().args(args));
    assert!(
        text.starts_with("default-release (default): Firefox running"),
        "{text}"
    );
    drop(holder);
}

/// The session files of a profile are listed newest session first, by the
/// session's own time (`session.lastUpdate`), not by name, kind or file
/// time; unreadable files last.
#[test]
fn profiles_lists_session_files_newest_session_first() {
    let env = TestEnv::new();
    let profile = with_profile(&env);
    let backups = profile.join("sessionstore-backups");
    // Written newest session first, so file times disagree with session times.
    for (name, tabs, last_update) in [
        ("upgrade.jsonlz4-20261101000000", 4, 1_795_200_000_000),
        ("previous.jsonlz4", 5, 1_795_300_000_000),
        ("recovery.jsonlz4", 2, 1_795_100_000_000),
    ] {
        fs::write(backups.join(name), packed(tabs, last_update)).unwrap();
    }
    fs::write(backups.join("recovery.baklz4"), b"").unwrap();
    let args = ["--profile", "default-release", "profiles"];
    let v = ok_json(env.cmd().args(args).arg("--json"));
    let names: Vec<&str> = v[0]["session_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let want = [
        "sessionstore-backups/previous.jsonlz4",
        "sessionstore-backups/upgrade.jsonlz4-20261101000000",
        "sessionstore-backups/recovery.jsonlz4",
        "sessionstore-backups/recovery.baklz4",
    ];
    assert_eq!(names, want);
    let text = ok_stdout(env.cmd().args(args));
    let at: Vec<usize> = want.iter().map(|n| text.find(n).unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
}
