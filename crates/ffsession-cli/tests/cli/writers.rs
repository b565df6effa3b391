//! Writers wait their turn for the store lock; readers never wait; several
//! profiles at once (`backup --all-profiles`, `service install --all-profiles`).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use ffsession_gen::StoreLockHolder;

use crate::common::{
    assert_contains_all, expect_error, keep_only_last, ok_json, ok_output, ok_stdout, packed,
    stderr, Run, TestEnv,
};

/// A store with one backup, and a child process holding its lock.
fn locked_store(env: &TestEnv) -> (std::path::PathBuf, StoreLockHolder) {
    let profile = env.back_up_recovery(&packed(3, 1_795_000_000_000));
    let holder = StoreLockHolder::hold(&env.store_dir().join("lock"));
    (profile, holder)
}

#[test]
fn a_second_backup_waits_for_the_lock_then_proceeds() {
    let env = TestEnv::new();
    let (profile, holder) = locked_store(&env);
    let mut child = env
        .std_store_cmd_at(&profile, &env.store_dir())
        .args(["backup", "--lock-wait", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    // Linux names the holder's command (a python3 child here); Windows has
    // no /proc, and this test process holds the lock there.
    let expected = format!(
        "ffsession: waiting for the store lock held by pid {}{}",
        holder.pid(),
        if cfg!(target_os = "linux") {
            " (python3"
        } else {
            " "
        }
    );
    assert!(
        line.starts_with(&expected) && line.ends_with(" (up to 1m, --lock-wait)\n"),
        "{line}"
    );
    // Still waiting, no snapshot taken yet.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "backup gave up early");
    assert_eq!(env.snapshot_ids(&profile).len(), 1);
    drop(holder);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(status.success(), "{status}: {rest}");
    assert_eq!(rest, "", "said once only");
    assert_eq!(env.snapshot_ids(&profile).len(), 2);
}

#[test]
fn a_second_backup_times_out_with_a_hint() {
    let env = TestEnv::new();
    let (profile, holder) = locked_store(&env);
    let start = Instant::now();
    let err = expect_error(
        env.store_cmd(&profile)
            .args(["backup", "--lock-wait", "1s"]),
    );
    let took = start.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with("ffsession: waiting for the store lock held by pid "));
    let expected = format!(
        "ffsession: error: {}: the store is still locked by pid {}",
        env.store_dir().display(),
        holder.pid()
    );
    assert!(lines[1].starts_with(&expected), "{err}");
    assert!(
        lines[1].ends_with(
            "after waiting 1s (hint: try again when it has finished, or pass a longer --lock-wait (like 10m))"
        ),
        "{err}"
    );
    assert_eq!(env.snapshot_ids(&profile).len(), 1, "nothing was added");

    // --lock-wait 0: at once, and the same with `prune`.
    for args in [
        &["backup", "--lock-wait", "0"][..],
        &["prune", "--lock-wait=0"],
    ] {
        let start = Instant::now();
        let err = expect_error(env.store_cmd(&profile).args(args));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(
            err.starts_with(&format!(
                "ffsession: error: {}: the store is locked by pid {}",
                env.store_dir().display(),
                holder.pid()
            )) && err.contains("(hint: pass --lock-wait 1m to wait for it")
                && err.lines().count() == 1,
            "{err}"
        );
    }
}

#[test]
fn readers_never_wait_for_a_writer() {
    let env = TestEnv::new();
    let (profile, _holder) = locked_store(&env);
    let start = Instant::now();
    let list = ok_json(env.store_cmd(&profile).args(["list", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 1);
    let hits = ok_json(
        env.store_cmd(&profile)
            .args(["search", "--json", "Example"]),
    );
    assert!(hits.as_array().is_some());
    let out = ok_output(env.store_cmd(&profile).args(["list"]));
    assert!(!stderr(&out).contains("waiting"), "{}", stderr(&out));
    assert!(start.elapsed() < Duration::from_secs(10));
}

/// Two profiles in profiles.ini; the second one's folder is missing when
/// `broken`.
fn two_profiles(env: &TestEnv, broken: bool) {
    let work = (!broken).then_some(4);
    crate::common::firefox_profiles(
        &env.firefox_root(),
        &[
            ("default", "Profiles/a.default", Some(2)),
            ("work", "Profiles/b.work", work),
        ],
        1_795_000_000_000,
    );
}

#[test]
fn backup_all_profiles_stores_each_profile_into_its_own_store() {
    let env = TestEnv::new();
    two_profiles(&env, false);
    let out = ok_stdout(env.cmd().args(["backup", "--all-profiles"]));
    let data = env.stores_root();
    // Each heading names the browser and the folder (two browsers' profiles
    // often share a name).
    let root = env.firefox_root();
    let heading = |name: &str, folder: &str| {
        format!(
            "Firefox profile {name} ({}):\n#1 ",
            root.join("Profiles").join(folder).display()
        )
    };
    assert!(out.starts_with(&heading("default", "a.default")), "{out}");
    assert!(out.contains(&heading("work", "b.work")), "{out}");
    for (name, tabs) in [("default", 2), ("work", 4)] {
        assert!(
            out.contains(&format!(
                "1 snapshot stored in {}",
                data.join(name).display()
            )),
            "{out}"
        );
        let list = ok_json(env.cmd().args(["--profile", name, "list", "--json"]));
        let list = list.as_array().unwrap();
        assert_eq!(list.len(), 1, "{name}");
        assert_eq!(list[0]["counts"]["tabs"], tabs, "{name}");
    }
    // A single store cannot take several profiles.
    let err = expect_error(env.cmd().args(["--store", "x", "backup", "--all-profiles"]));
    assert_contains_all(
        &err,
        &["--all-profiles puts each profile into its own store"],
    );
}

#[test]
fn backup_all_profiles_goes_on_after_a_failure_and_exits_non_zero() {
    let env = TestEnv::new();
    two_profiles(&env, true);
    let out = env.cmd().args(["backup", "--all-profiles"]).run();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("ffsession: error: profile \"work\": ") && lines[0].contains("b.work"),
        "{err}"
    );
    assert_eq!(
        lines[1],
        "ffsession: error: 1 of 2 profiles failed: work (hint: the other profiles were backed up; see the errors above)"
    );
    let list = ok_json(env.cmd().args(["--profile", "default", "list", "--json"]));
    assert_eq!(
        list.as_array().unwrap().len(),
        1,
        "the good profile was backed up"
    );
}

#[test]
fn service_install_all_profiles_writes_one_unit_per_profile() {
    let env = TestEnv::new();
    two_profiles(&env, false);
    let out = ok_stdout(
        env.cmd()
            .args(["service", "install", "--all-profiles", "--no-enable"]),
    );
    let mut units = None;
    for (name, dir) in [("default", "a.default"), ("work", "b.work")] {
        let path = crate::common::service_file(&env, name);
        units = path.parent().map(Path::to_path_buf);
        let unit = crate::common::read_service_file(&path);
        let profile = env.firefox_root().join("Profiles").join(dir);
        let words = if cfg!(windows) {
            // The task's command line (XML text; no quotes needed here).
            format!(
                "<Arguments>watch --profile {}</Arguments>",
                profile.display()
            )
        } else if cfg!(target_os = "macos") {
            format!(
                "<string>--profile</string>\n    <string>{}</string>\n",
                profile.display()
            )
        } else {
            format!("\"watch\" \"--profile\" \"{}\"\n", profile.display())
        };
        assert!(unit.contains(&words), "{unit}");
        assert!(out.contains(&format!("wrote {}", path.display())), "{out}");
    }
    let units = units.unwrap();
    env.uninstall_all_services(2);
    assert!(fs::read_dir(&units).unwrap().next().is_none());
}

#[test]
fn watch_prunes_skips_unchanged_files_and_lets_a_backup_in() {
    let env = TestEnv::new();
    let profile = env.profile_with_recovery(&packed(5, 1_000));
    let mut child = env
        .watch_cmd(&profile)
        .args(keep_only_last(2))
        .spawn()
        .unwrap();
    let ids = |env: &TestEnv| -> Vec<i64> {
        let out = env.store_cmd(&profile).args(["list", "--json"]).run();
        if !out.status.success() {
            return Vec::new();
        }
        crate::common::stdout_json(&out)
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_i64().unwrap())
            .collect()
    };
    let wait_for = |id: i64| {
        for _ in 0..200 {
            if ids(&env).first() == Some(&id) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no snapshot {id} within 10 s: {:?}", ids(&env));
    };
    wait_for(1);
    // The service does not hold the store between snapshots: a backup runs.
    ok_output(
        env.store_cmd(&profile)
            .args(["backup", "--lock-wait", "10s"]),
    );
    let replace = |bytes: &[u8]| crate::common::replace_recovery(&profile, bytes);
    for (i, tabs) in [6, 7, 8].into_iter().enumerate() {
        replace(&packed(tabs, 2_000));
        wait_for(3 + i as i64);
    }
    // Firefox writes the same session again, twice: two unchanged cycles.
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(1_300));
        replace(&packed(8, 2_000));
    }
    std::thread::sleep(Duration::from_millis(1_500));
    ffsession_gen::interrupt(&mut child);
    let out = child.wait_with_output().unwrap();
    // Ctrl-C reaches it on Unix only (see `ffsession_gen::interrupt`).
    if cfg!(unix) {
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        ids(&env),
        vec![5, 4],
        "keep-last 2 applied by watch: {text}"
    );
    let said = |id: i64| {
        text.matches(&format!(
            "sessionstore-backups/recovery.jsonlz4 unchanged since #{id}, not stored"
        ))
        .count()
    };
    assert_eq!(said(5), 1, "said once, then quiet: {text}");
    assert!(text.matches(" pruned 1 snapshot ").count() >= 2, "{text}");
    if cfg!(unix) {
        assert!(text.trim_end().ends_with("stopped"), "{text}");
    }
}

/// Without a systemd user session (no D-Bus: `systemctl --user` fails with
/// "Failed to connect to bus"), `service status` says the service is
/// installed but its state unknown, and exits 1; `service uninstall`
/// removes the unit file anyway and names the command that finishes the
/// job once a session exists.
#[cfg(target_os = "linux")]
#[test]
fn service_without_a_user_session_is_honest_and_uninstall_removes_the_unit() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[]);
    let path = crate::common::path_with_first(&crate::common::systemctl_without_a_bus(&env));
    let service = |args: &[&str]| {
        let mut cmd = env.store_cmd(&profile);
        cmd.arg("service").args(args).env("PATH", &path);
        cmd.run()
    };
    let unit = env
        .home()
        .join(".config/systemd/user/ffsession-watch-profile.service");
    let out = service(&["install", "--no-enable"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(unit.exists());

    let out = service(&["status"]);
    let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    assert!(
        err.contains("installed, but cannot tell whether it runs") && err.contains("hint:"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("ffsession:")).count(),
        1,
        "{err}"
    );

    let out = service(&["uninstall"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!unit.exists(), "the unit file is left: {err}");
    assert!(
        err.contains("systemctl --user disable ffsession-watch-profile.service")
            && !err.contains("the file is written"),
        "{err}"
    );
    // Nothing left to do: uninstall again says so.
    let out = service(&["uninstall"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
