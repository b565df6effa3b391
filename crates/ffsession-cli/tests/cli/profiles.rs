//! Profile discovery and choosing the newest session file.

use std::fs;

use crate::common::{
    expect_error, ok_json, ok_output, ok_stdout, packed, stderr, stdout_json, TestEnv,
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
    let profile = with_profile(&env);
    fs::write(
        profile.join("sessionstore-backups/recovery.jsonlz4"),
        packed(9, 1_795_300_000_000),
    )
    .unwrap();
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
        assert!(err.contains("no Firefox profile found"), "{err}");
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
