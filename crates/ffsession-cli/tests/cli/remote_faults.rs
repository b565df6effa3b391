//! Remote stores when things go wrong, against the real servers of
//! `.ci/servers.sh` (issue 38): a full disk over SFTP and over WebDAV (a 2
//! MiB tmpfs the script mounts, filled by the test but for a little room),
//! objects left cut short by an older ffsession, `copy` killed with SIGKILL
//! (no `ssh` left behind, no password in any child), an unknown or changed
//! host key, and the small errors of a mistyped location. After each, what
//! the remote lists is whole, and once the fault is gone a copy completes
//! and every snapshot restores byte-identical on a new machine.

use std::fs;
#[cfg(unix)]
use std::io::Write;
#[cfg(unix)]
use std::path::{Path, PathBuf};

use crate::common::{ok_output, stderr, Run, TestEnv};
use crate::remote::backed_up;
#[cfg(target_os = "linux")]
use crate::remote::std_cmd;
#[cfg(unix)]
use crate::remote::{assert_remote_restores, cmd, copy, location, servers, unique, Kind, SERVERS};

/// The small disk `.ci/servers.sh` mounts (`FFSESSION_TEST_SMALL_DISK`), or
/// `None` (said; a failure under CI) where it could not.
#[cfg(unix)]
fn small_disk() -> Option<PathBuf> {
    servers()?;
    match std::env::var_os("FFSESSION_TEST_SMALL_DISK") {
        Some(d) => Some(PathBuf::from(d)),
        None => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI: .ci/servers.sh mounted no small disk (FFSESSION_TEST_SMALL_DISK)"
            );
            eprintln!("full-disk tests skipped: no small disk (.ci/servers.sh mounts one as root)");
            None
        }
    }
}

/// A file that fills the small disk but for `room` bytes, removed when
/// dropped.
#[cfg(unix)]
struct Filler(PathBuf);

#[cfg(unix)]
impl Filler {
    fn leaving(disk: &Path, room: u64) -> Filler {
        let path = disk.join("filler");
        let mut f = fs::File::create(&path).unwrap();
        let block = vec![0u8; 64 * 1024];
        while matches!(f.write(&block), Ok(n) if n > 0) {}
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(room)).unwrap();
        f.sync_all().unwrap();
        Filler(path)
    }
}

#[cfg(unix)]
impl Drop for Filler {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// A folder on the small disk, removed when dropped (the disk is small).
#[cfg(unix)]
struct Cleanup(PathBuf);

#[cfg(unix)]
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Every object under the remote store `dir` (but temporary files, which
/// are never listed, and the plain marker) that does not decrypt whole with
/// the remote's key, opened with the tests' password: what a copy left cut
/// short under its final name.
#[cfg(unix)]
fn not_whole(dir: &Path) -> Vec<PathBuf> {
    use age::secrecy::SecretString;
    let files = ffsession_gen::files_under(dir);
    let password = SecretString::from(crate::remote::PASSWORD.to_owned());
    let identity = files
        .iter()
        .filter(|p| p.parent().is_some_and(|d| d.ends_with("keys")))
        .find_map(|key| {
            let text = age::decrypt(
                &age::scrypt::Identity::new(password.clone()),
                &fs::read(key).ok()?,
            )
            .ok()?;
            let text = String::from_utf8(text).ok()?;
            text.lines()
                .find(|l| l.starts_with("AGE-SECRET-KEY-"))?
                .parse::<age::x25519::Identity>()
                .ok()
        });
    let Some(identity) = identity else {
        // No key: then nothing else may be there.
        return files
            .into_iter()
            .filter(|p| {
                !p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(".tmp-")
            })
            .collect();
    };
    files
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let in_keys = p.parent().is_some_and(|d| d.ends_with("keys"));
            if name.starts_with(".tmp-") || name == "ffsession-remote.json" || in_keys {
                return false;
            }
            age::decrypt(&identity, &fs::read(p).unwrap_or_default()).is_err()
        })
        .collect()
}

/// The copy onto a full disk fails and says so; nothing it leaves is cut
/// short; a machine reading the remote then is not told a lie; once there
/// is room, the next copy completes and every snapshot restores.
#[cfg(unix)]
fn full_disk(loc: &str, disk_dir: &Path) {
    let env = TestEnv::new();
    let (profile, jsons) = backed_up(&env, 6, 60_000);
    let filler = Filler::leaving(&small_disk().unwrap(), 64 * 1024);
    let mut c = cmd(&env);
    c.arg("--profile")
        .arg(&profile)
        .arg("--store")
        .arg(env.store_dir())
        .args(["copy", "--to", loc]);
    let out = c.run();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let error = err.lines().find(|l| l.contains("error:")).unwrap_or("");
    assert!(error.contains("disk is full"), "{err}");
    assert!(error.contains("free some"), "{err}");
    assert!(not_whole(disk_dir).is_empty(), "{:?}", not_whole(disk_dir));
    // A new machine reads what is there: every snapshot it lists is whole.
    let fresh = TestEnv::new();
    let out = cmd(&fresh).args(["--store", loc, "list", "--json"]).run();
    assert!(out.status.success(), "{}", stderr(&out));
    drop(filler);
    let done = copy(&env, &profile, loc);
    assert_eq!(done["snapshots_sent"], 6, "{done}");
    assert_remote_restores(loc, &jsons);
}

#[cfg(unix)]
#[test]
fn remote_full_sftp_disk_fails_the_copy_and_the_next_one_completes() {
    let Some(disk) = small_disk() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let loc = format!(
        "{}/{}",
        crate::remote::var("FFSESSION_TEST_SFTP_SMALL"),
        unique()
    );
    let dir = crate::remote::sftp_dir(&loc);
    let _clean = Cleanup(dir.clone());
    assert!(dir.starts_with(&disk), "{}", dir.display());
    full_disk(&loc, &dir);
}

#[cfg(unix)]
#[test]
fn remote_full_webdav_disk_fails_the_copy_and_the_next_one_completes() {
    let Some(disk) = small_disk() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let name = unique();
    let loc = format!(
        "{}/{name}",
        crate::remote::var("FFSESSION_TEST_WEBDAV_SMALL")
    );
    let dir = disk.join("webdav").join("store").join(&name);
    let _clean = Cleanup(dir.clone());
    full_disk(&loc, &dir);
}

/// Objects an older ffsession left cut short on a full disk (empty files
/// under their final names): a new machine is told the records do not
/// read, never that the remote is empty, and the next copy sends them
/// again instead of counting them as there already.
#[cfg(unix)]
#[test]
fn remote_objects_cut_short_are_sent_again_and_never_read_as_an_empty_remote() {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let (profile, jsons) = backed_up(&env, 3, 100_000);
    let loc = location(Kind::Sftp, &env);
    copy(&env, &profile, &loc);
    let dir = crate::remote::sftp_dir(&loc);
    // Every snapshot record, and every other object of the rest.
    let mut emptied = 0;
    let mut marks = 0;
    for kind in ["snapshots", "contents", "chunks", "marks"] {
        for (i, f) in ffsession_gen::files_under(&dir.join(kind))
            .iter()
            .enumerate()
        {
            if kind == "snapshots" || i % 2 == 0 {
                fs::write(f, b"").unwrap();
                if kind == "marks" {
                    marks += 1;
                } else {
                    emptied += 1;
                }
            }
        }
    }
    let fresh = TestEnv::new();
    let out = cmd(&fresh).args(["--store", &loc, "list"]).run();
    let err = stderr(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    assert!(!text.contains("no snapshots yet"), "{text}");
    assert!(err.contains("none of its snapshots reads"), "{err}");
    assert!(err.contains("check --read-data"), "{err}");

    let again = copy(&env, &profile, &loc);
    assert_eq!(again["snapshots_sent"], 3, "{again}");
    assert_eq!(again["snapshots_present"], 0, "{again}");
    assert_eq!(again["healed"].as_u64().unwrap(), emptied, "{again}");
    assert!(again["marks_sent"].as_u64().unwrap() >= marks, "{again}");
    assert!(not_whole(&dir).is_empty(), "{:?}", not_whole(&dir));
    assert_remote_restores(&loc, &jsons);
    // And the one after sends nothing.
    let last = copy(&env, &profile, &loc);
    assert_eq!(last["bytes_sent"], 0, "{last}");
}

/// The `ssh` processes (not zombies) whose environment holds `mark`: every
/// one a command started with it, wherever it went since (Linux).
#[cfg(target_os = "linux")]
fn marked_ssh(mark: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "ssh" {
            continue;
        }
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").map(|(_, s)| s.chars().next());
        if state == Some(Some('Z')) {
            continue;
        }
        let environ = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if environ.split(|&b| b == 0).any(|v| v == mark.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

#[cfg(target_os = "linux")]
fn environ(pid: u32) -> Vec<String> {
    fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

/// Wait up to `secs` for `f` to hold.
#[cfg(target_os = "linux")]
fn wait_for(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    f()
}

/// `copy` killed with SIGKILL while it sends: no `ssh` it started lives on
/// (no control master, none kept by ControlPersist), and none of them ever
/// had the password in its environment. The same at a server that never
/// answers (a laptop away from home) and one that refuses. The next copy
/// completes.
#[cfg(target_os = "linux")]
#[test]
fn remote_copy_killed_leaves_no_ssh_behind_and_no_child_has_the_password() {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let (profile, jsons) = backed_up(&env, 3, 150_000);
    let loc = location(Kind::Sftp, &env);
    let mark = format!("FFSESSION_TEST_MARK={}", unique());
    let (mark_name, mark_value) = mark.split_once('=').unwrap();
    let start = |to: &str, delay: bool| {
        let mut c = std_cmd(&env);
        c.env(mark_name, mark_value)
            .arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(env.store_dir())
            .args(["copy", "--to", to])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if delay {
            c.env("FFSESSION_TEST_REMOTE_WRITE_DELAY_MS", "30");
        }
        c.spawn().unwrap()
    };
    for round in 0..3u64 {
        let mut child = start(&loc, true);
        assert!(
            wait_for(20, || !marked_ssh(&mark).is_empty()),
            "round {round}: no ssh started"
        );
        std::thread::sleep(std::time::Duration::from_millis(150 * round));
        let ssh = marked_ssh(&mark);
        assert!(
            environ(child.id())
                .iter()
                .any(|v| v.starts_with("FFSESSION_PASSWORD=")),
            "the test gives the copy its password"
        );
        for pid in &ssh {
            let vars = environ(*pid);
            assert!(
                !vars.iter().any(|v| v.contains("PASSWORD")),
                "ssh {pid} has a password variable: {vars:?}"
            );
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            wait_for(5, || marked_ssh(&mark).is_empty()),
            "round {round}: ssh left running after kill -9: {:?}",
            marked_ssh(&mark)
        );
    }
    // A server that takes the connection and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let conns: Vec<_> = silent.incoming().take(1).flatten().collect();
        std::thread::sleep(std::time::Duration::from_secs(10));
        drop(conns);
    });
    let mut child = start(&format!("sftp://127.0.0.1:{port}/away"), false);
    assert!(wait_for(20, || !marked_ssh(&mark).is_empty()));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_for(5, || marked_ssh(&mark).is_empty()),
        "ssh left running at an unanswering server: {:?}",
        marked_ssh(&mark)
    );
    drop(held);
    // A port nobody listens on: one clear error, and no ssh left.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = start(&format!("sftp://127.0.0.1:{port}/away"), false)
        .wait_with_output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("Connection refused"), "{err}");
    assert!(marked_ssh(&mark).is_empty(), "{:?}", marked_ssh(&mark));

    copy(&env, &profile, &loc);
    assert_remote_restores(&loc, &jsons);
}

/// A folder of its own with an `ssh` that reads the servers' SSH config but
/// the known hosts file `known_hosts`.
#[cfg(unix)]
fn ssh_with_known_hosts(env: &TestEnv, known_hosts: &Path) -> PathBuf {
    let servers = servers().unwrap();
    let config = fs::read_to_string(servers.join("ssh_config"))
        .unwrap()
        .replace(
            &servers.join("known_hosts").to_string_lossy().into_owned(),
            &known_hosts.to_string_lossy(),
        );
    let bin = env.path().join("ssh-bin");
    fs::create_dir_all(&bin).unwrap();
    let config_path = env.write("ssh_config", config.as_bytes());
    let script = bin.join("ssh");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec /usr/bin/ssh -F {} \"$@\"\n",
            config_path.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// A server whose host key is not known yet: the error says so and gives
/// the `ssh` command that shows the key and accepts it; once accepted, the
/// copy works. A key that differs from the known one is named as such.
#[cfg(unix)]
#[test]
fn remote_unknown_host_key_is_named_with_the_command_that_accepts_it() {
    let Some(servers) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let (profile, jsons) = backed_up(&env, 1, 50_000);
    let loc = location(Kind::Sftp, &env);
    let known = env.write("known_hosts", b"");
    let bin = ssh_with_known_hosts(&env, &known);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |env: &TestEnv| {
        let mut c = cmd(env);
        c.env("PATH", &path)
            .arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(env.store_dir())
            .args(["copy", "--to", &loc]);
        c.run()
    };
    let out = run(&env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("host key of 127.0.0.1 is not known yet"),
        "{err}"
    );
    let command = "ssh -o StrictHostKeyChecking=ask 127.0.0.1 exit";
    assert!(err.contains(command), "{err}");
    assert!(!err.contains("check the connection"), "{err}");
    assert!(!crate::remote::sftp_dir(&loc).exists());

    // The command works (here without its question: accept-new).
    let accepted = std::process::Command::new(bin.join("ssh"))
        .args(command.replace("=ask", "=accept-new").split(' ').skip(1))
        .output()
        .unwrap();
    assert!(accepted.status.success(), "{}", stderr(&accepted));
    assert!(!fs::read(&known).unwrap().is_empty());
    let out = run(&env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_remote_restores(&loc, &jsons);

    // A key other than the one known: named as such, with what to do.
    let other = env.path().join("other_key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .status()
        .unwrap();
    assert!(made.success());
    let known_line = fs::read_to_string(servers.join("known_hosts")).unwrap();
    let host = known_line.split(' ').next().unwrap();
    let other_pub = fs::read_to_string(other.with_extension("pub")).unwrap();
    let fields: Vec<&str> = other_pub.split(' ').take(2).collect();
    fs::write(&known, format!("{host} {}\n", fields.join(" "))).unwrap();
    let out = run(&env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("differs from the one known_hosts holds"),
        "{err}"
    );
    assert!(err.contains("ssh-keygen -R"), "{err}");
}

/// The small errors of a location: a bare word that names no remote, a
/// URL missing its `//`, an empty location, a port out of range: each one
/// error, and no folder made in the current one. A server that cannot be
/// reached while reading says nothing of a copy.
#[test]
fn remote_mistyped_locations_are_one_error_each_and_make_no_folder() {
    let env = TestEnv::new();
    let (profile, _) = backed_up(&env, 1, 10_000);
    for (to, says) in [
        ("nas", "no remote named \"nas\" in the config file"),
        (
            "sftp:/127.0.0.1/tmp/x",
            "did you mean sftp://127.0.0.1/tmp/x?",
        ),
        ("", "an empty location"),
        ("sftp://127.0.0.1:99999/x", "not a number from 1 to 65535"),
    ] {
        let before = env.files();
        let out = env
            .cmd()
            .env("FFSESSION_PASSWORD", "pw")
            .arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(env.store_dir())
            .args(["copy", "--to", to])
            .run();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{to:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{to:?}: {err}");
        assert!(err.contains(says), "{to:?}: {err}");
        assert!(!err.contains("created a remote store"), "{err}");
        assert_eq!(env.files(), before, "{to:?} made files");
    }
    // `./nas` is a folder, and becomes a remote store.
    let out = env
        .cmd()
        .env("FFSESSION_PASSWORD", "pw")
        .env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
        .arg("--profile")
        .arg(&profile)
        .arg("--store")
        .arg(env.store_dir())
        .args(["copy", "--to", "./nas"])
        .run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.path().join("nas/ffsession-remote.json").is_file());
}

/// A read of a server that refuses the connection names what ssh said, and
/// its hint speaks of the connection, not of a copy cut short.
#[cfg(unix)]
#[test]
fn remote_read_errors_say_what_ssh_said_without_a_copy_hint() {
    let Some(_) = servers() else { return };
    let env = TestEnv::new();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = cmd(&env)
        .args(["--store", &format!("sftp://127.0.0.1:{port}/x"), "list"])
        .run();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("Connection refused"), "{err}");
    assert!(!err.contains("a copy cut short"), "{err}");
}

/// age's messages come on two lines ("Unknown age format.\nHave you tried
/// upgrading..."): a damaged record is named on one line by `check` (no
/// literal `\n`) and by the warning of a read, a damaged key by its error.
#[test]
fn remote_age_errors_are_one_line_without_a_literal_newline() {
    let env = TestEnv::new();
    let (profile, _) = backed_up(&env, 2, 10_000);
    let usb = env.path().join("usb");
    let mut c = env.store_cmd(&profile);
    c.env("FFSESSION_PASSWORD", "pw")
        .env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
        .args(["copy", "--to"])
        .arg(&usb);
    ok_output(&mut c);
    let newer = b"age-encryption.org/v9\nfrom the future\n";
    let record = ffsession_gen::files_under(&usb.join("snapshots"))[0].clone();
    fs::write(&record, newer).unwrap();
    let run = |args: &[&str]| {
        env.cmd()
            .env("FFSESSION_PASSWORD", "pw")
            .arg("--store")
            .arg(&usb)
            .args(args)
            .run()
    };
    let out = run(&["check"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let named: Vec<&str> = text.lines().filter(|l| l.contains("age format")).collect();
    assert!(!named.is_empty(), "{text}");
    for line in named {
        assert!(!line.contains("\\n"), "{line}");
        assert!(line.contains("Have you tried upgrading"), "{line}");
    }
    let out = run(&["list"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("warning")).count(),
        1,
        "{err}"
    );
    assert!(
        err.lines().all(|l| l.starts_with("ffsession:")),
        "a warning on two lines: {err}"
    );

    // Every copy of the key damaged, and no spare of it on this machine
    // (a machine that opened the remote before keeps one: remote_keys.rs).
    for key in ffsession_gen::files_under(&usb.join("keys")) {
        fs::write(&key, newer).unwrap();
    }
    for spare in ffsession_gen::files_under(&env.home())
        .into_iter()
        .filter(|p| p.ends_with("key.age"))
    {
        fs::remove_file(spare).unwrap();
    }
    let out = run(&["list"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("\\n"), "{err}");
    assert!(err.contains("keys/"), "{err}");
}
