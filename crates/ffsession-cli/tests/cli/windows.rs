//! Windows: the background service (a Task Scheduler task run by
//! `ffsessionw.exe`), under Wine in CI.
//!
//! Wine 8's schtasks registers and deletes tasks (the task's file appears
//! in `%SystemRoot%\System32\Tasks`) but cannot run, query or end them, and
//! the file it keeps has the task's settings but neither its trigger nor its
//! action; so the tests run the action of the XML handed to schtasks
//! themselves.

#![cfg(windows)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::{ok_output, ok_stdout, packed, read_service_file, service_file, Run, TestEnv};

/// The launcher next to the `ffsession.exe` under test.
fn launcher() -> PathBuf {
    assert_cmd::cargo::cargo_bin("ffsessionw")
}

/// A name no other test (nor a real profile) uses: the task is registered
/// for this Wine user, not inside the test's folder.
fn unique_name(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("ffsession-test-{what}-{}-{nanos}", std::process::id())
}

/// A profile folder called `name` under a folder with a space and
/// non-ASCII letters, holding a recovery file of `tabs` tabs.
fn profile_named(env: &TestEnv, name: &str, tabs: usize) -> PathBuf {
    let profile = env.path().join("Zoë 日本").join(name);
    let backups = profile.join("sessionstore-backups");
    fs::create_dir_all(&backups).unwrap();
    fs::write(
        backups.join("recovery.jsonlz4"),
        packed(tabs, 1_795_000_000_000),
    )
    .unwrap();
    profile
}

/// Replace the recovery file as Firefox does (a new file renamed over it).
fn rewrite(profile: &Path, tabs: usize, at: u64) {
    crate::common::replace_recovery(profile, &packed(tabs, at));
}

/// How many snapshots `store` holds (0 while it does not exist).
fn snapshots(env: &TestEnv, store: &Path) -> usize {
    let out = env
        .cmd()
        .arg("--store")
        .arg(store)
        .args(["list", "--json"])
        .run();
    if !out.status.success() {
        return 0;
    }
    crate::common::stdout_json(&out).as_array().unwrap().len()
}

fn wait_for_snapshots(env: &TestEnv, store: &Path, n: usize) {
    let start = Instant::now();
    while snapshots(env, store) < n {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no snapshot {n} in {} within 30 s",
            store.display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The launcher with `args`, in the sealed environment, restarting
/// `ffsession` 200 ms after a failure.
fn spawn_launcher(env: &TestEnv, args: &[&std::ffi::OsStr]) -> Child {
    env.sealed_cmd(launcher())
        .args(args)
        .env("FFSESSION_TEST_RESTART_DELAY_MS", "200")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// `service install` registers a task that, at logon, runs the launcher
/// with `watch` for the profile; run as registered, it backs the profile up
/// into the store; `service uninstall` removes the task.
#[test]
fn service_install_registers_a_task_that_runs_watch_and_uninstall_removes_it() {
    let env = TestEnv::new();
    let name = unique_name("service");
    let profile = profile_named(&env, &name, 4);
    let store = env.path().join("my store ü");
    let service = |action: &str| {
        let mut cmd = env.cmd();
        cmd.arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(&store)
            .args(["service", action]);
        cmd
    };
    let installed = ok_stdout(&mut service("install"));
    let task_name = format!("ffsession-watch-{name}");
    assert!(installed.contains(&task_name), "{installed}");
    // Kept beside the config file, and registered with Task Scheduler.
    let kept = service_file(&env, &name);
    assert!(kept.is_file(), "{}", kept.display());
    let registered = Path::new(&std::env::var_os("SystemRoot").unwrap())
        .join("System32")
        .join("Tasks")
        .join(&task_name);
    assert!(
        registered.is_file(),
        "{} not registered",
        registered.display()
    );

    // The task as Task Scheduler keeps it: it read our settings.
    let registered_text = read_service_file(&registered);
    let registered_doc = roxmltree::Document::parse(&registered_text).unwrap();
    let setting = |name: &str| {
        registered_doc
            .descendants()
            .find(|n| n.tag_name().name() == name)
            .and_then(|n| n.text())
            .unwrap_or_else(|| panic!("no <{name}> in {registered_text}"))
            .to_owned()
    };
    assert_eq!(setting("URI"), format!("\\{task_name}"));
    assert_eq!(setting("Hidden"), "true");
    assert_eq!(setting("ExecutionTimeLimit"), "PT0S");
    assert_eq!(setting("DisallowStartIfOnBatteries"), "false");
    assert_eq!(setting("StopIfGoingOnBatteries"), "false");

    // The task handed to schtasks: at logon, the launcher with watch.
    let text = read_service_file(&kept);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let element = |name: &str| {
        doc.descendants()
            .find(|n| n.tag_name().name() == name)
            .unwrap_or_else(|| panic!("no <{name}> in {text}"))
    };
    assert!(element("LogonTrigger")
        .children()
        .any(|n| n.tag_name().name() == "UserId"));
    let command = element("Command").text().unwrap().to_owned();
    let arguments = element("Arguments").text().unwrap().to_owned();
    assert!(
        fs_same(Path::new(&command), &launcher()),
        "{command} is not the launcher"
    );

    // Its action, as Task Scheduler would start it at logon.
    let mut action = env.sealed_cmd(&command);
    {
        use std::os::windows::process::CommandExt;
        action.raw_arg(&arguments);
    }
    let mut running = action
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_snapshots(&env, &store, 1);
    running.kill().unwrap();
    running.wait().unwrap();

    let status = ok_stdout(&mut service("status"));
    assert!(status.contains("installed"), "{status}");
    let removed = ok_stdout(&mut service("uninstall"));
    assert!(removed.contains("removed"), "{removed}");
    assert!(!registered.exists(), "the task is still registered");
    assert!(!kept.exists());
    let status = ok_stdout(&mut service("status"));
    assert!(status.contains("not installed"), "{status}");
}

fn fs_same(a: &Path, b: &Path) -> bool {
    fs::canonicalize(a).unwrap() == fs::canonicalize(b).unwrap()
}

/// `--no-enable` only writes the task's file (UTF-16, what `schtasks
/// /create /xml` reads), and registers nothing.
#[test]
fn service_install_no_enable_writes_the_task_file_only() {
    let env = TestEnv::new();
    let name = unique_name("noenable");
    let profile = profile_named(&env, &name, 2);
    let out = ok_stdout(env.cmd().arg("--profile").arg(&profile).args([
        "service",
        "install",
        "--no-enable",
    ]));
    let kept = service_file(&env, &name);
    assert!(out.contains(&format!("wrote {}", kept.display())), "{out}");
    let bytes = fs::read(&kept).unwrap();
    assert_eq!(&bytes[..2], &[0xFF, 0xFE], "UTF-16 with a byte order mark");
    let text = read_service_file(&kept);
    assert!(
        text.contains("<Command>") && text.contains("ffsessionw.exe"),
        "{text}"
    );
    let registered = Path::new(&std::env::var_os("SystemRoot").unwrap())
        .join("System32")
        .join("Tasks")
        .join(format!("ffsession-watch-{name}"));
    assert!(!registered.exists());
    ok_output(env.cmd().arg("--profile").arg(&profile).args([
        "service",
        "uninstall",
        "--no-enable",
    ]));
    assert!(!kept.exists());
}

/// The launcher runs `ffsession` again after it fails: here a backup that
/// finds the store locked, until the lock is let go.
#[test]
fn the_launcher_runs_ffsession_again_after_a_failure() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(3, 1_795_000_000_000));
    rewrite(&profile, 5, 1_795_000_100_000);
    let holder = ffsession_gen::StoreLockHolder::hold(&env.store_dir().join("lock"));
    let mut child = spawn_launcher(
        &env,
        &[
            "--profile".as_ref(),
            profile.as_os_str(),
            "--store".as_ref(),
            env.store_dir().as_os_str(),
            "--lock-wait".as_ref(),
            "0".as_ref(),
            "backup".as_ref(),
        ],
    );
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(child.try_wait().unwrap().is_none(), "the launcher gave up");
    assert_eq!(env.snapshot_ids(&profile).len(), 1);
    drop(holder);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "still running");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status}");
    assert_eq!(env.snapshot_ids(&profile).len(), 2);
}

/// `watch` ends with the launcher that started it (the job object), so
/// that ending the task, or uninstalling the service, ends the backups.
#[test]
fn watch_ends_with_the_launcher() {
    let env = TestEnv::new();
    let profile = env.profile_with_recovery(&packed(3, 1_000));
    let store = env.store_dir();
    let mut child = spawn_launcher(
        &env,
        &[
            "--profile".as_ref(),
            profile.as_os_str(),
            "--store".as_ref(),
            store.as_os_str(),
            "watch".as_ref(),
            "--interval".as_ref(),
            "1s".as_ref(),
        ],
    );
    wait_for_snapshots(&env, &store, 1);
    rewrite(&profile, 4, 2_000);
    wait_for_snapshots(&env, &store, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(1_000));
    rewrite(&profile, 5, 3_000);
    std::thread::sleep(Duration::from_millis(4_000));
    assert_eq!(snapshots(&env, &store), 2, "watch outlived its launcher");
    // The same change, seen by a backup: it was there to be stored.
    ok_output(env.store_cmd(&profile).arg("backup"));
    assert_eq!(snapshots(&env, &store), 3);
}
