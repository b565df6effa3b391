//! Remote stores when things go wrong, against the real servers of
//! `.ci/servers.sh` (issue 38): a full disk over SFTP and over WebDAV (a 2
//! MiB tmpfs the script mounts, filled by the test but for a little room),
//! objects left cut short by an older ffsession, `copy` killed with SIGKILL
//! (no `ssh` left behind, no password in any child). After each, what the
//! remote lists is whole, and once the fault is gone a copy completes and
//! every snapshot restores byte-identical on a new machine. The errors a
//! user meets (host keys, mistyped locations) are in `remote_errors.rs`.

#[cfg(unix)]
use std::fs;
#[cfg(unix)]
use std::io::Write;
#[cfg(unix)]
use std::path::{Path, PathBuf};

#[cfg(unix)]
use crate::common::{failed_quietly, stderr, Run, TestEnv};
#[cfg(unix)]
use crate::remote_common::{
    assert_remote_restores, backed_up, cmd, copied, copy, is_temporary, servers, servers_alone,
    sftp_dir, store_cmd, unavailable, unique, var, Kind, Servers, PASSWORD,
};
#[cfg(target_os = "linux")]
use crate::remote_common::{prepared, std_store_cmd};

/// The small disk `.ci/servers.sh` mounts (`FFSESSION_TEST_SMALL_DISK`),
/// with the servers held (see [`Servers`]), or `None` (said; a failure
/// under CI) where it could not.
#[cfg(unix)]
fn small_disk() -> Option<(PathBuf, Servers)> {
    let servers = servers_alone()?;
    let Some(disk) = std::env::var_os("FFSESSION_TEST_SMALL_DISK") else {
        unavailable(
            "CI: .ci/servers.sh mounted no small disk (FFSESSION_TEST_SMALL_DISK)",
            "full-disk tests skipped: no small disk (.ci/servers.sh mounts one as root)",
        );
        return None;
    };
    Some((PathBuf::from(disk), servers))
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
    let password = SecretString::from(PASSWORD.to_owned());
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
        return files.into_iter().filter(|p| !is_temporary(p)).collect();
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
fn full_disk(disk: &Path, loc: &str, disk_dir: &Path) {
    let env = TestEnv::new();
    let (profile, jsons) = backed_up(&env, 6, 60_000);
    let filler = Filler::leaving(disk, 64 * 1024);
    let out = store_cmd(&env, &profile).args(["copy", "--to", loc]).run();
    let err = failed_quietly(&out);
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
    let Some((disk, _servers)) = small_disk() else {
        return;
    };
    let loc = format!("{}/{}", var("FFSESSION_TEST_SFTP_SMALL"), unique());
    let dir = sftp_dir(&loc);
    let _clean = Cleanup(dir.clone());
    assert!(dir.starts_with(&disk), "{}", dir.display());
    full_disk(&disk, &loc, &dir);
}

#[cfg(unix)]
#[test]
fn remote_full_webdav_disk_fails_the_copy_and_the_next_one_completes() {
    let Some((disk, _servers)) = small_disk() else {
        return;
    };
    let name = unique();
    let loc = format!("{}/{name}", var("FFSESSION_TEST_WEBDAV_SMALL"));
    let dir = disk.join("webdav").join("store").join(&name);
    let _clean = Cleanup(dir.clone());
    full_disk(&disk, &loc, &dir);
}

/// Objects an older ffsession left cut short on a full disk (empty files
/// under their final names): a new machine is told the records do not
/// read, never that the remote is empty, and the next copy sends them
/// again instead of counting them as there already.
#[cfg(unix)]
#[test]
fn remote_objects_cut_short_are_sent_again_and_never_read_as_an_empty_remote() {
    let Some(_servers) = servers() else { return };
    let (env, profile, jsons, loc) = copied(Kind::Sftp, 3, 100_000);
    let dir = sftp_dir(&loc);
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
    let Some(_servers) = servers() else { return };
    let (env, profile, jsons, loc) = prepared(Kind::Sftp, 3, 150_000);
    let mark = format!("FFSESSION_TEST_MARK={}", unique());
    let (mark_name, mark_value) = mark.split_once('=').unwrap();
    let start = |to: &str, delay: bool| {
        let mut c = std_store_cmd(&env, &profile);
        c.env(mark_name, mark_value)
            .args(["copy", "--to", to])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if delay {
            c.env("FFSESSION_TEST_REMOTE_WRITE_DELAY_MS", "30");
        }
        c.spawn().unwrap()
    };
    // Kill `child` (SIGKILL): every ssh it started must be gone within 5 s
    // (`says` names it otherwise).
    let kill_leaves_no_ssh = |mut child: std::process::Child, says: &str| {
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            wait_for(5, || marked_ssh(&mark).is_empty()),
            "{says}: {:?}",
            marked_ssh(&mark)
        );
    };
    for round in 0..3u64 {
        let child = start(&loc, true);
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
        kill_leaves_no_ssh(
            child,
            &format!("round {round}: ssh left running after kill -9"),
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
    let child = start(&format!("sftp://127.0.0.1:{port}/away"), false);
    assert!(wait_for(20, || !marked_ssh(&mark).is_empty()));
    kill_leaves_no_ssh(child, "ssh left running at an unanswering server");
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
