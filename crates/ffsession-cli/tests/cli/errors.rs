//! Bad input gives one line naming what is wrong, with a hint; a usage
//! error exits 2.

use std::fs;

use crate::common::{expect_error, ok_stdout, packed, stderr, Run, TestEnv};

/// Every command with arguments enough to get past its own parsing.
const COMMANDS: &[&[&str]] = &[
    &["profiles"],
    &["backup"],
    &["check"],
    &["list"],
    &["stores"],
    &["stats"],
    &["prune"],
    &["restore", "latest"],
    &["watch"],
    &["service", "install"],
    &["info"],
    &["tabs"],
    &["diff", "1", "2"],
    &["search", "x"],
    &["history", "x"],
    &["reindex"],
    &["rescue", "s.jsonlz4", "-o", "out.jsonlz4"],
    &["tidy"],
    &["extract", "s.jsonlz4", "-w", "1", "-o", "out.jsonlz4"],
    &["merge", "s.jsonlz4", "-o", "out.jsonlz4"],
    &["decompress", "s.jsonlz4"],
    &["compress", "s.json"],
];

#[test]
fn a_bad_lock_wait_is_a_usage_error_for_every_command() {
    let env = TestEnv::new();
    env.write("s.jsonlz4", &packed(3, 1_000));
    let help = ok_stdout(env.cmd().arg("--help"));
    for command in COMMANDS {
        // Every subcommand is in this list.
        assert!(help.contains(&format!("  {} ", command[0])), "{help}");
        for bad in ["abc", "-5s", "5 parsecs"] {
            let out = env
                .cmd()
                .arg(format!("--lock-wait={bad}"))
                .args(*command)
                .run();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{command:?} {bad}: {err}");
            assert!(
                err.contains("--lock-wait") && err.contains("write it like 0, 30s, 1m or 10m"),
                "{command:?}: {err}"
            );
            // Not the duration parser's own words.
            assert!(!err.contains("friendly"), "{command:?}: {err}");
            assert!(out.stdout.is_empty(), "{command:?}");
        }
    }
    let listed = help
        .lines()
        .filter(|l| l.starts_with("  ") && !l.trim_start().starts_with('-'))
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.chars().all(|c| c.is_ascii_lowercase()))
        })
        .count();
    assert!(listed >= COMMANDS.len(), "{help}");
}

#[test]
fn a_folder_given_as_a_session_file_is_one_line_with_a_hint() {
    let env = TestEnv::new();
    let dir = env.path().join("a-folder");
    fs::create_dir_all(&dir).unwrap();
    for command in ["info", "tabs"] {
        let err = expect_error(env.cmd().arg(command).arg(&dir));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("a-folder") && err.contains("hint: that is a folder"),
            "{err}"
        );
    }
    let err = expect_error(
        env.cmd()
            .arg("rescue")
            .arg(&dir)
            .args(["-o", "out.jsonlz4"]),
    );
    assert!(err.contains("hint: that is a folder"), "{err}");
}

#[test]
fn a_store_that_is_a_file_is_one_line_with_a_hint() {
    let env = TestEnv::new();
    let file = env.write("not-a-store", b"hello");
    let profile = env.profile_with_recovery(&packed(3, 1_000));
    for command in [
        &["list"][..],
        &["search", "x"],
        &["stats"],
        &["prune"],
        &["restore", "latest"],
        &["history", "x"],
        &["diff", "1", "2"],
        &["check"],
        &["reindex"],
        &["backup"],
    ] {
        let out = env.store_cmd_at(&profile, &file).args(command).run();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{command:?}: {err}");
        assert!(
            err.contains("not-a-store: is a file, not a backup store folder")
                && err.contains("hint:")
                && !err.contains("os error"),
            "{command:?}: {err}"
        );
        assert!(
            out.stdout.is_empty(),
            "{command:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert_eq!(fs::read(&file).unwrap(), b"hello");
}

#[test]
fn backing_up_a_profile_with_no_session_files_fails_and_makes_no_store() {
    let env = TestEnv::new();
    let profile = env.empty_profile();
    let out = env.store_cmd(&profile).arg("backup").run();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no session files in profile") && err.contains("hint:"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    assert!(!env.store_dir().exists(), "an empty store was created");
    // The same with --json: no report of nothing.
    let out = env.store_cmd(&profile).args(["backup", "--json"]).run();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(!env.store_dir().exists());

    // Once it has files it backs up; if they are gone later, that fails too.
    fs::write(
        profile.join("sessionstore-backups/recovery.jsonlz4"),
        packed(3, 1_000),
    )
    .unwrap();
    ok_stdout(env.store_cmd(&profile).arg("backup"));
    fs::remove_file(profile.join("sessionstore-backups/recovery.jsonlz4")).unwrap();
    expect_error(env.store_cmd(&profile).arg("backup"));
    assert_eq!(env.snapshot_ids(&profile).len(), 1);
}

#[test]
fn all_profiles_skips_a_profile_firefox_never_used_and_stores_lists_no_unknown_profile() {
    let env = TestEnv::new();
    let root = env.firefox_root();
    fs::create_dir_all(root.join("Profiles/old.default")).unwrap();
    let used = root.join("Profiles/abc.default-release/sessionstore-backups");
    fs::create_dir_all(&used).unwrap();
    fs::write(used.join("recovery.jsonlz4"), packed(3, 1_000)).unwrap();
    fs::write(
        root.join("profiles.ini"),
        "[Profile0]\nName=default-release\nIsRelative=1\nPath=Profiles/abc.default-release\nDefault=1\n\n\
         [Profile1]\nName=default\nIsRelative=1\nPath=Profiles/old.default\n",
    )
    .unwrap();
    let out = env.cmd().args(["backup", "--all-profiles"]).run();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("profile \"default\" has no session files yet") && err.contains("skipped"),
        "{err}"
    );
    let data = env.stores_root();
    assert!(data.join("default-release").is_dir());
    assert!(!data.join("default").exists(), "an empty store was created");
    // The single-profile backup of the unused one fails.
    expect_error(env.cmd().args(["--profile", "default", "backup"]));
    assert!(!data.join("default").exists());

    // An empty store (made before this was refused) is listed as empty, not
    // as a store of profile "?".
    drop(ffsession::store::Store::create_or_open(data.join("leftover")).unwrap());
    let text = ok_stdout(env.cmd().arg("stores"));
    assert!(!text.contains("profile ?"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("leftover") && l.contains("empty")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("default-release") && l.contains("(profile default-release)")),
        "{text}"
    );
}

#[test]
fn a_typo_in_the_config_file_is_an_error_naming_the_key() {
    let env = TestEnv::new();
    let profile = env.profile_with_recovery(&packed(3, 1_000));
    for (text, key, line) in [
        ("[prune]\nkeep_daily = 3\nkeep_lats = 3\n", "keep_lats", 3),
        ("keep_last = 3\n", "keep_last", 1),
        (
            "store = \"/x\"\n[watch]\nintervall = \"5m\"\n",
            "intervall",
            3,
        ),
        ("[prun]\nkeep_last = 3\n", "prun", 1),
    ] {
        let config = env.write("config.toml", text.as_bytes());
        for command in [&["prune", "--dry-run"][..], &["backup"], &["list"]] {
            let out = env
                .store_cmd(&profile)
                .arg("--config")
                .arg(&config)
                .args(command)
                .run();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{text:?} {command:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.contains(&format!("config.toml: line {line}: invalid configuration"))
                    && err.contains(&format!("unknown field `{key}`"))
                    && err.contains("hint:"),
                "{text:?}: {err}"
            );
            assert!(out.stdout.is_empty());
        }
    }
    assert!(!env.store_dir().exists());
}

#[test]
fn values_a_command_cannot_take_are_usage_errors_and_the_help_has_the_exit_codes() {
    let env = TestEnv::new();
    let profile = env.profile_with_recovery(&packed(3, 1_000));
    for (args, option) in [
        (
            &["tidy", "--archive-older-than", "30 days"][..],
            "--archive-older-than",
        ),
        (
            &["tidy", "--archive-older-than=-3d"],
            "--archive-older-than",
        ),
        // Written with a space, a negative age is still the option's value,
        // not an unknown flag `-3`.
        (
            &["tidy", "--archive-older-than", "-3d"],
            "an age is not negative",
        ),
        (&["watch", "--interval", "often"], "--interval"),
        (&["watch", "--interval", "0s"], "--interval"),
        (&["search", "x", "--since", "yesterday"], "--since"),
        (&["search", "x", "--until", "2026-02-30"], "--until"),
        (&["prune", "--keep-last", "many"], "--keep-last"),
    ] {
        let out = env.store_cmd(&profile).args(args).run();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: invalid value"), "{args:?}: {err}");
        assert!(
            err.lines().next().unwrap().contains(option),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
    assert!(!env.store_dir().exists());
    // One table in the top-level help, every code the tool uses.
    let help = ok_stdout(env.cmd().arg("--help"));
    let table = help
        .split_once("Exit status:\n")
        .expect("an exit status table")
        .1;
    let codes: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("  ")?.split_whitespace().next())
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(codes, ["0", "1", "2", "3", "4", "5", "6"], "{help}");
}
