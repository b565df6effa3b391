//! Issue 47: a loss between two snapshots is stored at once and told on the
//! desktop. `watch` runs against a D-Bus session bus of the test's own
//! (`dbus-daemon --session`) on which a notification server of the test's
//! own (zbus) records every call, as a desktop's would receive them.

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zbus::zvariant::OwnedValue;

use crate::common::Run;
use crate::common::TestEnv;

/// A session of `tabs` tabs written at `last_update` by one Firefox run
/// (every write of a test has the same `startTime`: a loss within a run, as
/// when tabs are closed by mistake or a write goes wrong).
fn packed(tabs: usize, last_update: u64) -> Vec<u8> {
    crate::common::session(ffsession_gen::Spec {
        tabs,
        last_update,
        start_time: Some(1_700_000_000_000),
        ..ffsession_gen::Spec::default()
    })
    .packed
}

/// One `Notify` call the server received.
#[derive(Debug, Clone)]
struct Call {
    summary: String,
    body: String,
    actions: Vec<String>,
    id: u32,
}

/// The notification server: says it supports actions, records each call.
struct Recorder {
    calls: Arc<Mutex<Vec<Call>>>,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Recorder {
    fn get_capabilities(&self) -> Vec<String> {
        vec!["actions".into(), "body".into()]
    }

    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        _hints: HashMap<String, OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        let mut calls = self.calls.lock().unwrap();
        let id = calls.len() as u32 + 1;
        calls.push(Call {
            summary,
            body,
            actions,
            id,
        });
        id
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        ("test".into(), "ffsession".into(), "1".into(), "1.2".into())
    }
}

/// A session bus and the recording notification server on it; the bus
/// daemon is killed when dropped.
struct Desktop {
    daemon: Child,
    address: String,
    calls: Arc<Mutex<Vec<Call>>>,
    conn: zbus::blocking::Connection,
}

impl Desktop {
    /// `None` where `dbus-daemon` is missing (fails under CI, which
    /// installs it: e2e/install.sh).
    fn start(dir: &Path) -> Option<Desktop> {
        let socket = dir.join("bus");
        let daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .arg(format!("--address=unix:path={}", socket.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut daemon = match daemon {
            Ok(d) => d,
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!("skipped: cannot run dbus-daemon ({e}); `apt-get install dbus`");
                return None;
            }
            Err(e) => panic!("cannot run dbus-daemon under CI: {e}"),
        };
        let mut line = String::new();
        BufReader::new(daemon.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line.trim().to_owned();
        assert!(address.starts_with("unix:"), "dbus-daemon said {line:?}");
        let calls = Arc::new(Mutex::new(Vec::new()));
        let conn = zbus::blocking::connection::Builder::address(address.as_str())
            .unwrap()
            .name("org.freedesktop.Notifications")
            .unwrap()
            .serve_at(
                "/org/freedesktop/Notifications",
                Recorder {
                    calls: calls.clone(),
                },
            )
            .unwrap()
            .build()
            .unwrap();
        Some(Desktop {
            daemon,
            address,
            calls,
            conn,
        })
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// The person clicks notification `id`.
    fn click(&self, id: u32) {
        self.conn
            .emit_signal(
                None::<&str>,
                "/org/freedesktop/Notifications",
                "org.freedesktop.Notifications",
                "ActionInvoked",
                &(id, "default"),
            )
            .unwrap();
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// Write `bytes` as Firefox writes its recovery file: the one before moved
/// to `recovery.baklz4`, the new one written aside and renamed in.
fn firefox_writes(profile: &Path, bytes: &[u8]) {
    let dir = profile.join("sessionstore-backups");
    let recovery = dir.join("recovery.jsonlz4");
    if recovery.exists() {
        fs::rename(&recovery, dir.join("recovery.baklz4")).unwrap();
    }
    fs::write(dir.join("recovery.jsonlz4.tmp"), bytes).unwrap();
    fs::rename(dir.join("recovery.jsonlz4.tmp"), &recovery).unwrap();
}

/// Poll `what` every 100 ms up to `secs` seconds (generous: CI is a loaded
/// 2-core machine).
fn wait_until(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: not within {secs} s");
}

/// `(file, tabs)` of every snapshot, newest first, with ids.
fn snapshots(env: &TestEnv, profile: &Path) -> Vec<(i64, String, u64)> {
    let out = env.store_cmd(profile).args(["list", "--json"]).run();
    if !out.status.success() {
        return Vec::new();
    }
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_i64().unwrap(),
                s["file_name"].as_str().unwrap().to_owned(),
                s["counts"]["tabs"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// `watch --interval 1h` on the test bus, with `bin` first on PATH.
fn watch(env: &TestEnv, profile: &Path, desktop: &Desktop, bin: &Path) -> Child {
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    env.std_store_cmd_at(profile, &env.store_dir())
        .args(["watch", "--interval", "1h"])
        .env("DBUS_SESSION_BUS_ADDRESS", &desktop.address)
        .env("PATH", path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn stop(mut child: Child) {
    ffsession_gen::interrupt(&mut child);
    let _ = child.wait();
}

/// A stand-in for `xdg-open` that records what `ffsession ui` gives it (the
/// page in its private folder that leads to the address), the `ui`'s pid
/// (to end it), and that page, as a browser reads it (`RECORD.html`).
fn fake_opener(dir: &Path) -> (PathBuf, PathBuf) {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let record = dir.join("opened");
    let script = bin.join("xdg-open");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat \"$1\" > '{r}.html'\nprintf '%s %s\\n' \"$PPID\" \"$1\" > '{r}.tmp' && mv '{r}.tmp' '{r}'\n",
            r = record.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    (bin, record)
}

#[test]
fn a_loss_is_stored_at_once_and_told_once_an_hour_with_the_way_back() {
    let env = TestEnv::new();
    let Some(desktop) = Desktop::start(env.path()) else {
        return;
    };
    let (bin, opened) = fake_opener(env.path());
    let t0 = 1_790_000_000_000;
    let profile = env.profile_with_recovery(&packed(40, t0));
    let child = watch(&env, &profile, &desktop, &bin);
    wait_until(60, "the first snapshot", || {
        !snapshots(&env, &profile).is_empty()
    });
    // Firefox writes 46 tabs, then a write that lost them: 3 tabs. The
    // interval (an hour) allows no snapshot between the two.
    firefox_writes(&profile, &packed(46, t0 + 15_000));
    std::thread::sleep(Duration::from_secs(3));
    firefox_writes(&profile, &packed(3, t0 + 30_000));
    let lost_at = Instant::now();
    wait_until(60, "a notification of the loss", || {
        !desktop.calls().is_empty()
    });
    let told_after = lost_at.elapsed();
    let call = desktop.calls()[0].clone();
    eprintln!("told after {told_after:?}: {call:?}");
    assert!(
        told_after < Duration::from_secs(30),
        "told only after {told_after:?}"
    );
    // The good copy Firefox still had, recovery.baklz4, is in the store.
    let stored = snapshots(&env, &profile);
    let good = stored
        .iter()
        .find(|(_, file, tabs)| file.ends_with("recovery.baklz4") && *tabs == 46)
        .unwrap_or_else(|| panic!("the good recovery.baklz4 is not stored: {stored:?}"));
    assert!(
        stored.iter().any(|(_, _, tabs)| *tabs == 3),
        "the loss is stored too: {stored:?}"
    );
    // What was lost, and the way back: the command and an action.
    assert!(
        call.summary == "Firefox's session went from 46 to 3 tabs"
            || call.summary == "Firefox's session went from 40 to 3 tabs",
        "{}",
        call.summary
    );
    assert!(
        call.body.contains(&format!("restore snapshot:{}", good.0)),
        "the command naming the good copy: {}",
        call.body
    );
    assert!(call.body.contains("46 tabs"), "{}", call.body);
    assert_eq!(call.actions.first().map(String::as_str), Some("default"));

    // Clicking it opens `ffsession ui` at that snapshot.
    desktop.click(call.id);
    wait_until(60, "the page opened by the notification's action", || {
        opened.exists()
    });
    let line = fs::read_to_string(&opened).unwrap();
    let (pid, given) = line.trim().split_once(' ').unwrap();
    let _ = Command::new("kill").arg(pid).status();
    // The opener gets a page that leads to the address, never the address
    // (its secret would be on a command line).
    assert!(given.ends_with("open.html"), "{given}");
    let page = fs::read_to_string(opened.with_extension("html")).unwrap();
    let url = page
        .split_once("url=")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(url, _)| url)
        .unwrap_or_else(|| panic!("no address in the page: {page}"));
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with(&format!("/snapshot/{}", good.0)),
        "{url}"
    );

    // A second loss within the hour is stored and logged, but not told;
    // nor after watch restarts (remembered in the state folder).
    let second_loss = |tabs_back: usize, lost: usize, at: u64| {
        firefox_writes(&profile, &packed(tabs_back, at));
        std::thread::sleep(Duration::from_secs(3));
        firefox_writes(&profile, &packed(lost, at + 15_000));
        wait_until(60, "the second loss stored", || {
            snapshots(&env, &profile)
                .iter()
                .any(|(_, _, tabs)| *tabs == lost as u64)
        });
    };
    second_loss(50, 2, t0 + 60_000);
    stop(child);
    let child = watch(&env, &profile, &desktop, &bin);
    wait_until(60, "watch's first cycle after its restart", || {
        alarms(&env).len() >= 2
    });
    second_loss(60, 1, t0 + 120_000);
    wait_until(60, "the third alarm recorded", || alarms(&env).len() >= 3);
    stop(child);
    assert_eq!(desktop.calls().len(), 1, "{:?}", desktop.calls());
    let alarms = alarms(&env);
    let notified: Vec<bool> = alarms.iter().map(|a| a["notified"] == true).collect();
    assert_eq!(notified, [true, false, false], "{alarms:?}");
}

/// The alarms `watch` remembered, from `status --json`.
fn alarms(env: &TestEnv) -> Vec<serde_json::Value> {
    let profile = env.path().join("profile");
    let out = env.store_cmd(&profile).args(["status", "--json"]).run();
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
        return Vec::new();
    };
    v["profiles"][0]["alarms"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn notify_false_keeps_alarms_off_the_desktop() {
    let env = TestEnv::new();
    let Some(desktop) = Desktop::start(env.path()) else {
        return;
    };
    let config = env.write("config.toml", b"[watch]\nnotify = false\n");
    let t0 = 1_790_000_000_000;
    let profile = env.profile_with_recovery(&packed(40, t0));
    let mut cmd = env.std_store_cmd_at(&profile, &env.store_dir());
    let child = cmd
        .arg("--config")
        .arg(&config)
        .args(["watch", "--interval", "1h"])
        .env("DBUS_SESSION_BUS_ADDRESS", &desktop.address)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(60, "the first snapshot", || {
        !snapshots(&env, &profile).is_empty()
    });
    firefox_writes(&profile, &packed(2, t0 + 15_000));
    wait_until(60, "the loss stored", || {
        snapshots(&env, &profile).iter().any(|(_, _, t)| *t == 2)
    });
    wait_until(60, "the alarm recorded", || !alarms(&env).is_empty());
    stop(child);
    assert!(desktop.calls().is_empty(), "{:?}", desktop.calls());
}
