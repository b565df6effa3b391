//! Profile discovery and choosing the newest session file.

use std::fs;

use crate::common::{session, stderr, stdout_json, TestEnv};
use ffsession_gen::Spec;

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

fn spec(tabs: usize, last_update: u64) -> Spec {
    Spec {
        tabs,
        last_update,
        ..Spec::default()
    }
}

#[test]
fn commands_without_a_file_use_the_newest_valid_session() {
    let env = TestEnv::new();
    let profile = with_profile(&env);
    let backups = profile.join("sessionstore-backups");
    fs::write(
        backups.join("previous.jsonlz4"),
        session(spec(5, 1_795_000_000_000)).packed,
    )
    .unwrap();
    fs::write(
        backups.join("recovery.jsonlz4"),
        session(spec(7, 1_795_300_000_000)).packed,
    )
    .unwrap();
    fs::write(
        backups.join("recovery.baklz4"),
        session(spec(6, 1_795_200_000_000)).packed,
    )
    .unwrap();
    fs::write(profile.join("sessionstore.jsonlz4"), b"mozLz40\0garbage").unwrap();

    let out = env.cmd().args(["info", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
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

    let out = env
        .cmd()
        .args(["tabs", "--format", "urls", "--profile", "default"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no readable session file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn profiles_lists_files_defaults_and_locks() {
    let env = TestEnv::new();
    let profile = with_profile(&env);
    fs::write(
        profile.join("sessionstore-backups/recovery.jsonlz4"),
        session(spec(9, 1_795_300_000_000)).packed,
    )
    .unwrap();
    fs::write(profile.join("sessionstore-backups/previous.jsonlz4"), b"").unwrap();
    #[cfg(target_os = "linux")]
    std::os::unix::fs::symlink(
        format!("127.0.0.1:+{}", std::process::id()),
        profile.join("lock"),
    )
    .unwrap();

    let out = env.cmd().args(["profiles", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = stdout_json(&out);
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

    let out = env.cmd().arg("profiles").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("default-release (default): "), "{text}");
    assert!(text.contains("UNREADABLE: the file is empty"), "{text}");
}

#[test]
fn no_profile_is_said_clearly() {
    let env = TestEnv::new();
    for args in [&["info"][..], &["tabs"], &["profiles"]] {
        let out = env.cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(err.contains("no Firefox profile found"), "{err}");
        assert!(err.contains("samples/session.jsonlz4"), "{err}");
    }
}

#[test]
fn firefox_dir_option_and_environment_variable() {
    let env = TestEnv::new();
    let profile = with_profile(&env);
    fs::write(
        profile.join("sessionstore.jsonlz4"),
        session(spec(4, 1)).packed,
    )
    .unwrap();
    let elsewhere = env.path().join("elsewhere");
    fs::rename(env.firefox_root(), &elsewhere).unwrap();
    let out = env
        .cmd()
        .args(["info", "--json"])
        .env("FFSESSION_FIREFOX_DIR", &elsewhere)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["tabs"], 4);
    let out = env
        .cmd()
        .args(["info", "--json", "--firefox-dir"])
        .arg(&elsewhere)
        .output()
        .unwrap();
    assert_eq!(stdout_json(&out)["tabs"], 4);
    let out = env
        .cmd()
        .args(["info", "--json", "--profile"])
        .arg(elsewhere.join("Profiles/abc.default-release"))
        .output()
        .unwrap();
    assert_eq!(stdout_json(&out)["tabs"], 4);
}
