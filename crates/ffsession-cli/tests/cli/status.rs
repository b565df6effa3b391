//! `ffsession status` (issue 47): one screen for "is it working?", and its
//! exit code for scripts: 6 when something needs the person, 0 when all is
//! well. The service manager is a stand-in `systemctl` first on PATH, so
//! the answer does not depend on the machine's user session.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::Run;
use crate::common::{assert_contains_all, fake_program, packed, path_with_first, TestEnv};

/// A `systemctl` that answers `is-active` with `answer` (exit 0 when
/// "active", 3 otherwise), in a folder to put first on PATH.
fn fake_systemctl(env: &TestEnv, answer: &str) -> PathBuf {
    let code = if answer == "active" { 0 } else { 3 };
    fake_program(
        &env.path().join(format!("bin-{answer}")),
        "systemctl",
        &format!("#!/bin/sh\necho {answer}\nexit {code}\n"),
    )
}

/// `status` (`--json` when `json`) with `bin` first on PATH: (exit code,
/// stdout).
fn status(env: &TestEnv, profile: &Path, bin: &Path, json: bool) -> (i32, String) {
    let path = path_with_first(bin);
    let mut cmd = env.store_cmd(profile);
    cmd.arg("status").env("PATH", path);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.run();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The profile's service unit file, so that `status` asks systemctl.
fn install_unit(env: &TestEnv) {
    let unit = env
        .home()
        .join(".config/systemd/user/ffsession-watch-profile.service");
    fs::create_dir_all(unit.parent().unwrap()).unwrap();
    fs::write(unit, "[Service]\n").unwrap();
}

#[test]
fn status_says_what_needs_you_and_exits_6_until_all_is_well() {
    let env = TestEnv::new();
    let active = fake_systemctl(&env, "active");
    let profile = env.back_up_recovery(&packed(30, 1_790_000_000_000));

    // No service: nothing backs the profile up when Firefox writes.
    let (code, out) = status(&env, &profile, &active, true);
    assert_eq!(code, 6, "{out}");
    let s = json(&out);
    let p = &s["profiles"][0];
    assert_eq!(p["service"]["state"], "not-installed", "{out}");
    assert_eq!(p["last_snapshot"]["id"], 1, "{out}");
    assert_eq!(p["last_snapshot"]["tabs"], 30, "{out}");
    let need = p["needs_you"][0].as_str().unwrap();
    let install = crate::common::printed_command(need, "install").expect(need);
    assert!(
        install.ends_with(&["service".into(), "install".into()]),
        "{need}"
    );
    assert_eq!(s["needs_you"], true);

    // Installed and running, a snapshot, nothing lost: all is well.
    install_unit(&env);
    let (code, out) = status(&env, &profile, &active, false);
    assert_eq!(code, 0, "{out}");
    for line in [
        "  service:        running",
        "  last snapshot:  #1, ",
        "  alarms:         none in the last 7 days",
        "  last check:     never",
    ] {
        assert!(out.contains(line), "{line:?} in\n{out}");
    }
    assert!(out.trim_end().ends_with("all is well"), "{out}");

    // A check is remembered.
    crate::common::ok_output(env.store_cmd(&profile).arg("check"));
    let (code, out) = status(&env, &profile, &active, true);
    assert_eq!(code, 0, "{out}");
    assert_eq!(json(&out)["profiles"][0]["last_check"]["outcome"], "whole");

    // The service stopped.
    let inactive = fake_systemctl(&env, "inactive");
    let (code, out) = status(&env, &profile, &inactive, false);
    assert_eq!(code, 6, "{out}");
    assert!(out.contains("  service:        STOPPED"), "{out}");
    assert!(
        out.contains("needs you:\n  - the service is not running"),
        "{out}"
    );

    // The newest session lost most of its tabs: the way back is named.
    let profile = env.profile_with_recovery(&packed(3, 1_790_000_060_000));
    let backup = env.store_cmd(&profile).arg("backup").run();
    assert_eq!(backup.status.code(), Some(3));
    let (code, out) = status(&env, &profile, &active, true);
    assert_eq!(code, 6, "{out}");
    let alarm = &json(&out)["profiles"][0]["session_alarm"];
    assert_eq!(alarm["snapshot"], 1, "{out}");
    let message = alarm["message"].as_str().unwrap();
    assert!(message.contains("went from 30 to 3 tabs"), "{message}");
    // The way back names the snapshot (never a file of the folder it is
    // run in) and the profile: status shows several.
    let restore = crate::common::printed_command(message, "restore").expect(message);
    assert!(
        restore.ends_with(&["restore".into(), "snapshot:1".into()]),
        "{message}"
    );
    assert!(restore.iter().any(|w| w == "--profile"), "{message}");

    // Once the session is whole again (restored, backed up), all is well.
    let profile = env.profile_with_recovery(&packed(30, 1_790_000_120_000));
    crate::common::ok_output(env.store_cmd(&profile).arg("backup"));
    let (code, out) = status(&env, &profile, &active, false);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn status_shows_failing_backups_and_copies_watch_remembered() {
    let env = TestEnv::new();
    let active = fake_systemctl(&env, "active");
    install_unit(&env);
    let profile = env.back_up_recovery(&packed(30, 1_790_000_000_000));
    let config = env.write(
        "config.toml",
        b"[remotes.nas]\nlocation = \"/nowhere/nas\"\nwatch = true\n",
    );
    // What a watch that has seen both fail for two days remembers.
    let key = ffsession::store::owner::folder_key(&env.store_dir());
    let state = env
        .home()
        .join(".local/state/ffsession")
        .join(format!("store-{key}"));
    let day = 24 * 60 * 60 * 1000;
    let now = ffsession::store::unix_ms(std::time::SystemTime::now()).unwrap();
    let mut w = ffsession::watch::state::WatchState::default();
    w.backups.failed(now - 2 * day, "disk full".into());
    w.remotes
        .entry("nas".into())
        .or_default()
        .failed(now - 2 * day, "no route to host".into());
    w.save(&state.join("watch.json")).unwrap();
    let path = std::env::join_paths(std::iter::once(active).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let out = env
        .store_cmd(&profile)
        .arg("--config")
        .arg(&config)
        .args(["status"])
        .env("PATH", path)
        .run();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(6), "{text}");
    assert_contains_all(
        &text,
        &[
            "  backups:        FAILING since 2 days ago",
            "remote nas (/nowhere/nas), copied by watch",
            "  copies:         FAILING since 2 days ago",
            "copies to nas have failed since",
            "no route to host",
        ],
    );
}

/// What `watch` remembers of each copy to a `watch = true` remote, as
/// `status` shows it: the last copy to a remote that works, and since when
/// the copies to one that is away fail.
#[test]
fn status_shows_the_copies_watch_made() {
    let env = TestEnv::new();
    let (_usb, config) = env.watch_remotes_config();
    let profile = env.profile_with_recovery(&packed(5, 1_790_000_000_000));
    let mut child = env
        .watch_cmd(&profile)
        .env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
        .arg("--config")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = || {
        let out = env
            .store_cmd(&profile)
            .arg("--config")
            .arg(&config)
            .args(["status", "--json"])
            .run();
        json(&String::from_utf8(out.stdout).unwrap())
    };
    let remote = |s: &serde_json::Value, name: &str| {
        s["remotes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut s = status();
    while std::time::Instant::now() < deadline
        && !(remote(&s, "usb")["last_copy_ms"].is_u64()
            && remote(&s, "away")["failing_since_ms"].is_u64())
    {
        std::thread::sleep(std::time::Duration::from_millis(200));
        s = status();
    }
    ffsession_gen::interrupt(&mut child);
    let _ = child.wait();
    let (usb, away) = (remote(&s, "usb"), remote(&s, "away"));
    assert!(usb["last_copy_ms"].is_u64(), "{s}");
    assert!(usb["failing_since_ms"].is_null(), "{s}");
    assert!(away["last_copy_ms"].is_null(), "{s}");
    assert!(away["failing_since_ms"].is_u64(), "{s}");
    assert!(
        away["last_error"].as_str().is_some_and(|e| !e.is_empty()),
        "{s}"
    );
    // Failing for less than a day: shown, but no alarm yet (a laptop off
    // its network); the two-day case is the test above.
    assert_eq!(away["needs_you"], serde_json::json!([]), "{s}");
}
