//! One remote object that does not read (issue 38, item 5), against the
//! real servers of `.ci/servers.sh`: on the server's disk, one chunk that
//! only the newest of several snapshots needs is replaced by a named pipe
//! (the server opens it and waits for a writer that never comes: the read
//! hangs) or by a folder (`sftp-server` fails the read; rclone, whose
//! directory cache still lists the file, fails it mid-answer); and a
//! WebDAV read that hangs whatever rclone's cache holds, through a proxy
//! in front of the real server that never answers a request for that
//! chunk. A new machine then lists every other snapshot,
//! restores each byte-identical, `restore latest` takes the newest intact
//! one, the warning names the object and says what to do, `check` names
//! it and fails, and each command ends within a bound (the per-object read
//! timeout shortened to 2 s).

#![cfg(unix)]

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ffsession_gen::Spec;

use crate::common::{session, stderr, Run, TestEnv};
use crate::remote_common::{
    assert_same_sessions, cmd, copied, copy, restored_sessions, servers, sftp_dir, var, webdav_dir,
    Kind,
};

/// The per-object read timeout the commands get here.
const READ_TIMEOUT_MS: u64 = 2000;
/// The longest one command may take: a hanging read costs two timeouts
/// (tried again alone on a new connection), and the rest is quick.
const BOUND: Duration = Duration::from_secs(40);

/// What the chunk on the server's disk becomes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// A named pipe.
    Fifo,
    /// A folder.
    Folder,
    /// Left as it is, but a proxy before the WebDAV server never answers
    /// its read.
    Stalled,
}

/// Where a location's objects are on this machine's disk.
fn disk_dir(kind: Kind, loc: &str) -> PathBuf {
    match kind {
        Kind::Sftp => sftp_dir(loc),
        Kind::WebDav => webdav_dir(loc),
        other => panic!("no disk for {other:?}"),
    }
}

/// The chunk files under `dir`.
fn chunk_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = ffsession_gen::files_under(&dir.join("chunks"));
    files.retain(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'));
    files.sort();
    files
}

/// The fault in place; when dropped, a pipe is opened for writing (every
/// `sftp-server` waiting in its open goes on and reads an empty file) and
/// removed, so nothing stays stuck on it.
struct Placed {
    path: PathBuf,
    fault: Fault,
}

impl Drop for Placed {
    fn drop(&mut self) {
        if self.fault == Fault::Fifo {
            // O_RDWR never waits for a reader (Linux), and wakes the
            // readers waiting for a writer.
            let held = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&self.path);
            std::thread::sleep(Duration::from_millis(200));
            drop(held);
            let _ = fs::remove_file(&self.path);
        } else if self.fault == Fault::Folder {
            let _ = fs::remove_dir(&self.path);
        }
    }
}

fn place(path: &Path, fault: Fault) -> Placed {
    match fault {
        Fault::Fifo => {
            fs::remove_file(path).unwrap();
            let made = std::process::Command::new("mkfifo")
                .arg(path)
                .status()
                .unwrap();
            assert!(made.success());
        }
        Fault::Folder => {
            fs::remove_file(path).unwrap();
            fs::create_dir(path).unwrap();
        }
        Fault::Stalled => {}
    }
    Placed {
        path: path.to_owned(),
        fault,
    }
}

/// A proxy before the WebDAV server at `upstream` that passes everything
/// but a request naming `stall`: that connection is held, unanswered, until
/// the proxy is dropped.
struct Proxy {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    fn start(upstream: String, stall: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let (upstream, stall, stopped) =
                    (upstream.clone(), stall.clone(), Arc::clone(&stopped));
                std::thread::spawn(move || relay(client, &upstream, &stall, &stopped));
            }
        });
        Proxy { port, stop }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One client connection: requests go up as they come, answers come back,
/// until a request names `stall`.
fn relay(mut client: TcpStream, upstream: &str, stall: &str, stop: &AtomicBool) {
    let Ok(mut server) = TcpStream::connect(upstream) else {
        return;
    };
    let (Ok(mut client_back), Ok(mut server_back)) = (client.try_clone(), server.try_clone())
    else {
        return;
    };
    let stalled = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&stalled);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = server_back.read(&mut buf) {
            if n == 0 || seen.load(Ordering::SeqCst) || client_back.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n) = client.read(&mut buf) {
        if n == 0 {
            break;
        }
        if String::from_utf8_lossy(&buf[..n]).contains(stall) {
            stalled.store(true, Ordering::SeqCst);
            // Never answered: held until the test ends.
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            return;
        }
        if server.write_all(&buf[..n]).is_err() {
            break;
        }
    }
}

/// A command from the new machine, its output, and its time, which must
/// stay within [`BOUND`].
fn timed(fresh: &TestEnv, args: &[&str], extra: &[&Path]) -> std::process::Output {
    let mut c = cmd(fresh);
    c.env(
        "FFSESSION_TEST_REMOTE_READ_TIMEOUT_MS",
        READ_TIMEOUT_MS.to_string(),
    )
    .args(args)
    .args(extra);
    let started = Instant::now();
    let out = c.run();
    let took = started.elapsed();
    assert!(took < BOUND, "{args:?} took {took:?}: {}", stderr(&out));
    out
}

/// Four snapshots copied to `kind`; the one chunk of the newest (one only
/// it needs) made `fault`; then a new machine reads the remote.
fn one_object_does_not_read(kind: Kind, fault: Fault) {
    let Some(_servers) = servers() else { return };
    let (env, profile, jsons, mut loc) = copied(kind, 3, 60_000);
    let dir = disk_dir(kind, &loc);
    let before = chunk_files(&dir);
    let newest = session(Spec {
        seed: 900,
        last_update: 1_795_300_000_000 + 3_600_000,
        ..Spec::sized(60_000)
    });
    env.back_up_recovery(&newest.packed);
    let sent = copy(&env, &profile, &loc);
    assert_eq!(sent["snapshots_sent"], 1, "{sent}");
    let only_newest: Vec<PathBuf> = chunk_files(&dir)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(!only_newest.is_empty(), "the newest snapshot sent no chunk");
    let bad = &only_newest[only_newest.len() / 2];
    let bad_name = bad.file_name().unwrap().to_string_lossy().into_owned();
    let _placed = place(bad, fault);
    let _proxy = (fault == Fault::Stalled).then(|| {
        let webdav = var("FFSESSION_TEST_WEBDAV");
        let upstream = webdav
            .split('@')
            .nth(1)
            .and_then(|h| h.split('/').next())
            .unwrap()
            .to_owned();
        let proxy = Proxy::start(upstream.clone(), bad_name.clone());
        loc = loc.replace(&upstream, &format!("127.0.0.1:{}", proxy.port));
        proxy
    });

    let fresh = TestEnv::new();
    // list: the three others, and a warning naming the chunk.
    let out = timed(&fresh, &["--store", &loc, "list", "--json"], &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "{kind:?} {fault:?}: {err}");
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 3, "{list}\n{err}");
    let warning = err
        .lines()
        .find(|l| l.contains(&bad_name))
        .unwrap_or_else(|| panic!("{kind:?} {fault:?}: no warning names {bad_name}: {err}"));
    assert!(warning.contains("warning:"), "{warning}");
    assert!(warning.contains("left out"), "{warning}");
    assert!(warning.contains("check --read-data"), "{warning}");

    // restore latest: the newest snapshot that reads (the third).
    let target = fresh.path().join("latest");
    let out = timed(
        &fresh,
        &["--store", &loc, "restore", "latest", "--profile"],
        &[&target],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let restored = fs::read(target.join("sessionstore.jsonlz4")).unwrap();
    assert_eq!(
        ffsession::format::decompress(&restored).unwrap(),
        jsons[2].as_bytes(),
        "restore latest took another session than the newest intact one"
    );

    // Every snapshot listed restores byte-identical.
    let got = restored_sessions(&fresh, &loc, &list, |args, target| {
        let out = timed(&fresh, args, &[target]);
        assert!(out.status.success(), "{}", stderr(&out));
    });
    assert_same_sessions(got, &jsons);

    // check: names the chunk and fails. A read that fails or hangs is
    // unreadable (exit 1), never noted on the remote as damage; a chunk the
    // listing does not show (`sftp-server` lists a folder as a folder) is
    // missing (exit 5). rclone lists what its directory cache saw (the
    // file that was there), and then fails or hangs its read.
    let out = timed(&fresh, &["--store", &loc, "check", "--read-data"], &[]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(text.contains(&bad_name), "{kind:?} {fault:?}: {text}");
    let listed_as_missing = (kind, fault) == (Kind::Sftp, Fault::Folder)
        || (kind == Kind::WebDav && fault != Fault::Stalled && out.status.code() == Some(5));
    if listed_as_missing {
        assert_eq!(out.status.code(), Some(5), "{text}");
        assert!(text.contains("missing"), "{text}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{kind:?} {fault:?}: {text}");
        assert!(text.contains("unreadable"), "{text}");
        assert!(text.contains("not proven whole"), "{text}");
        assert!(
            ffsession_gen::files_under(&dir.join("damaged")).is_empty(),
            "a read that failed was noted as damage on the remote"
        );
    }
}

#[test]
fn remote_sftp_chunk_that_hangs_leaves_out_only_its_snapshot() {
    one_object_does_not_read(Kind::Sftp, Fault::Fifo);
}

#[test]
fn remote_sftp_chunk_whose_read_fails_leaves_out_only_its_snapshot() {
    one_object_does_not_read(Kind::Sftp, Fault::Folder);
}

#[test]
fn remote_webdav_chunk_that_hangs_leaves_out_only_its_snapshot() {
    one_object_does_not_read(Kind::WebDav, Fault::Stalled);
}

#[test]
fn remote_webdav_chunk_whose_read_fails_leaves_out_only_its_snapshot() {
    one_object_does_not_read(Kind::WebDav, Fault::Folder);
}

#[test]
fn remote_webdav_chunk_made_a_pipe_leaves_out_only_its_snapshot() {
    one_object_does_not_read(Kind::WebDav, Fault::Fifo);
}
