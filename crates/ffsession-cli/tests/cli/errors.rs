//! Bad input gives one line naming what is wrong, with a hint; a usage
//! error exits 2.

use std::fs;

use crate::common::{expect_error, ok_stdout, packed, stderr, TestEnv};

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
                .output()
                .unwrap();
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
        let out = env
            .store_cmd_at(&profile, &file)
            .args(command)
            .output()
            .unwrap();
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
