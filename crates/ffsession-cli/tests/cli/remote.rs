//! Remote stores against real servers on 127.0.0.1 (OpenSSH's sshd, Garage,
//! rclone's WebDAV), started by `.ci/servers.sh`, which `.ci/run` sources:
//! copy, `--store LOCATION` for list and restore, a wrong password, a full
//! remote, objects deleted and flipped, a copy killed at 50+ points and the
//! server killed mid-copy, two machines at once. After each, every snapshot
//! listed restores byte-identical.
//!
//! Without the servers (FFSESSION_TEST_SERVERS unset) these tests say so and
//! pass, except under CI (CI=true), where the servers must be there.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::Mutex;

use assert_cmd::Command;
use ffsession_gen::Spec;

use crate::common::{ok_json, ok_output, ok_stdout, session, stderr, Run, TestEnv};

/// Tests that stop or fill a server run one at a time.
pub(crate) static SERVERS: Mutex<()> = Mutex::new(());

pub(crate) fn servers() -> Option<PathBuf> {
    match std::env::var_os("FFSESSION_TEST_SERVERS") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI: the remote-store servers are not running (.ci/servers.sh)"
            );
            eprintln!("remote tests skipped: no servers (source .ci/servers.sh first)");
            None
        }
    }
}

pub(crate) fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set by .ci/servers.sh"))
}

/// A fresh, unique location on each kind of server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Kind {
    Folder,
    Sftp,
    S3,
    WebDav,
    /// WebDAV over HTTPS (its test trusts the server's CA on Linux only).
    #[cfg(target_os = "linux")]
    WebDavs,
}

pub(crate) fn unique() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "t{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            % 1_000_000_007
    )
}

pub(crate) fn location(kind: Kind, env: &TestEnv) -> String {
    match kind {
        Kind::Folder => env.path().join("remote").to_string_lossy().into_owned(),
        Kind::Sftp => format!("{}/{}", var("FFSESSION_TEST_SFTP"), unique()),
        Kind::S3 => format!("s3://ffs/{}", unique()),
        Kind::WebDav => format!("{}/{}", var("FFSESSION_TEST_WEBDAV"), unique()),
        #[cfg(target_os = "linux")]
        Kind::WebDavs => format!("{}/{}", var("FFSESSION_TEST_WEBDAVS"), unique()),
    }
}

#[cfg(unix)]
/// Where an SFTP location's objects are on this machine's disk.
pub(crate) fn sftp_dir(loc: &str) -> PathBuf {
    PathBuf::from(loc.strip_prefix("sftp://127.0.0.1/").unwrap())
}

/// The password of the remotes the tests make.
pub(crate) const PASSWORD: &str = "correct horse battery staple";

/// `ffsession` in the sealed environment, with the servers' settings and a
/// password; `ssh` is the wrapper that reads the test's SSH config.
pub(crate) fn cmd(env: &TestEnv) -> Command {
    Command::from_std(std_cmd(env))
}

pub(crate) fn std_cmd(env: &TestEnv) -> StdCommand {
    let mut c = env.std_cmd();
    let path = format!(
        "{}:{}",
        var("FFSESSION_TEST_SSH_BIN"),
        std::env::var("PATH").unwrap_or_default()
    );
    c.env("PATH", path)
        .env("FFSESSION_PASSWORD", PASSWORD)
        .env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
        .env("AWS_ACCESS_KEY_ID", var("FFSESSION_TEST_S3_KEY_ID"))
        .env("AWS_SECRET_ACCESS_KEY", var("FFSESSION_TEST_S3_SECRET"))
        .env("AWS_ENDPOINT_URL", var("FFSESSION_TEST_S3_ENDPOINT"))
        .env("AWS_REGION", var("FFSESSION_TEST_S3_REGION"))
        .env(
            "FFSESSION_WEBDAV_PASSWORD",
            var("FFSESSION_TEST_WEBDAV_PASSWORD"),
        );
    // The CA of the HTTPS server's certificate, trusted through the file
    // the system's verifier reads on Linux (on Windows and macOS it asks
    // the system's own store).
    #[cfg(target_os = "linux")]
    c.env("SSL_CERT_FILE", var("FFSESSION_TEST_CA"));
    c
}

/// A profile with `n` snapshots backed up into the test store (each a
/// session of about `bytes`); returns the profile and each snapshot's JSON.
pub(crate) fn backed_up(env: &TestEnv, n: u64, bytes: usize) -> (PathBuf, Vec<String>) {
    let mut jsons = Vec::new();
    let mut profile = PathBuf::new();
    for i in 0..n {
        let g = session(Spec {
            seed: 100 + i,
            last_update: 1_795_300_000_000 + i * 60_000,
            ..Spec::sized(bytes)
        });
        profile = env.back_up_recovery(&g.packed);
        jsons.push(g.json);
    }
    (profile, jsons)
}

pub(crate) fn copy(env: &TestEnv, profile: &Path, to: &str) -> serde_json::Value {
    let mut c = cmd(env);
    c.arg("--profile")
        .arg(profile)
        .arg("--store")
        .arg(env.store_dir())
        .args(["copy", "--json", "--to", to]);
    ok_json(&mut c)
}

/// Every snapshot the remote lists, read through a new machine's cache
/// (a fresh HOME), each restored into a new profile folder and compared
/// byte for byte with `expected` (JSON texts, any order).
pub(crate) fn assert_remote_restores(loc: &str, expected: &[String]) {
    let fresh = TestEnv::new();
    let list = ok_json(cmd(&fresh).args(["--store", loc, "list", "--json"]));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), expected.len(), "{list:?}");
    let mut got = Vec::new();
    for s in list {
        let id = s["id"].as_i64().unwrap().to_string();
        let target = fresh.path().join(format!("profile-{id}"));
        ok_stdout(
            cmd(&fresh)
                .args(["--store", loc, "restore", &id, "--profile"])
                .arg(&target),
        );
        let bytes = fs::read(target.join("sessionstore.jsonlz4")).unwrap();
        got.push(String::from_utf8(ffsession::format::decompress(&bytes).unwrap()).unwrap());
    }
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert!(
        got == want,
        "a restored session differs from the one backed up"
    );
}

fn round_trip(kind: Kind) {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let (profile, mut jsons) = backed_up(&env, 2, 300_000);
    let loc = location(kind, &env);
    let first = copy(&env, &profile, &loc);
    assert_eq!(first["snapshots_sent"], 2, "{first}");
    let again = copy(&env, &profile, &loc);
    assert_eq!(again["snapshots_sent"], 0, "{again}");
    assert_eq!(again["bytes_sent"], 0, "{again}");

    // One new snapshot: it alone travels.
    let g = session(Spec {
        seed: 100,
        last_update: 1_795_400_000_000,
        tabs: 31,
        ..Spec::sized(300_000)
    });
    env.back_up_recovery(&g.packed);
    jsons.push(g.json.clone());
    let third = copy(&env, &profile, &loc);
    assert_eq!(third["snapshots_sent"], 1, "{third}");
    assert!(
        third["bytes_sent"].as_u64().unwrap() < first["bytes_sent"].as_u64().unwrap(),
        "{third} {first}"
    );
    assert_remote_restores(&loc, &jsons);

    // restore latest on a brand-new machine brings the newest session back.
    let fresh = TestEnv::new();
    let target = fresh.path().join("new-profile");
    let text = ok_stdout(
        cmd(&fresh)
            .args(["--store", &loc, "restore", "latest", "--profile"])
            .arg(&target),
    );
    assert!(text.contains("firefox -profile"), "{text}");
    let bytes = fs::read(target.join("sessionstore.jsonlz4")).unwrap();
    assert_eq!(
        ffsession::format::decompress(&bytes).unwrap(),
        g.json.as_bytes()
    );
    // search and history work on the remote too.
    let hits = ok_json(cmd(&fresh).args(["--store", &loc, "search", "example", "--json"]));
    assert!(!hits.as_array().unwrap().is_empty(), "{hits}");
    let check = cmd(&fresh)
        .args(["--store", &loc, "check", "--read-data"])
        .run();
    assert!(check.status.success(), "{}", stderr(&check));

    // prune on the remote: the newest session stays, the others go, and
    // with them the chunks only they used; a machine's local copy follows.
    if kind == Kind::S3 {
        let keep_one = [
            "prune",
            "--keep-last",
            "1",
            "--keep-hourly",
            "0",
            "--keep-daily",
            "0",
            "--keep-weekly",
            "0",
            "--keep-monthly",
            "0",
            "--keep-yearly",
            "0",
        ];
        let out = ok_output(cmd(&fresh).args(["--store", &loc]).args(keep_one));
        assert!(
            stderr(&out).contains("removed 2 snapshot records"),
            "{}",
            stderr(&out)
        );
        assert_remote_restores(&loc, std::slice::from_ref(&g.json));
        let list = ok_json(cmd(&fresh).args(["--store", &loc, "list", "--json"]));
        assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
        ok_stdout(cmd(&fresh).args(["--store", &loc, "check", "--read-data"]));
    }
}

#[test]
fn remote_round_trip_folder() {
    round_trip(Kind::Folder);
}

// SFTP is Unix-only (ffsession speaks it through OpenSSH's `ssh`), and
// the test reads or kills the server's side directly.
#[cfg(unix)]
#[test]
fn remote_round_trip_sftp() {
    round_trip(Kind::Sftp);
}

#[test]
fn remote_round_trip_s3() {
    round_trip(Kind::S3);
}

#[test]
fn remote_round_trip_webdav() {
    round_trip(Kind::WebDav);
}

/// HTTPS, through rustls with ring (the workspace Cargo.toml): the round
/// trip over `webdavs://`, to a server whose certificate comes from a CA
/// the commands trust. Before it, the same copy trusting only another
/// certificate is refused, and with no CA certificates at all (which made
/// OpenDAL's HTTP client panic) it is one clear error; neither sends
/// anything.
#[cfg(target_os = "linux")]
#[test]
fn remote_round_trip_webdav_over_https() {
    let Some(servers) = servers() else { return };
    {
        let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
        let env = TestEnv::new();
        let (profile, _) = backed_up(&env, 1, 10_000);
        let loc = location(Kind::WebDavs, &env);
        let no_ca = env.path().join("no-ca.pem");
        fs::write(&no_ca, "").unwrap();
        // The server's own certificate as the only one trusted: not the CA
        // that issued it.
        let other = servers.join("tls.pem");
        for (trusted, says) in [(&other, "UnknownIssuer"), (&no_ca, "CA certificates")] {
            let out = cmd(&env)
                .env("SSL_CERT_FILE", trusted)
                .arg("--profile")
                .arg(&profile)
                .arg("--store")
                .arg(env.store_dir())
                .args(["copy", "--to", &loc])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(&loc) && err.contains(says), "{err}");
            let written = servers
                .join("webdav/store")
                .join(loc.rsplit('/').next().unwrap());
            assert!(!written.exists(), "{}", written.display());
        }
    }
    round_trip(Kind::WebDavs);
}

/// On Windows, where SFTP is not available, `sftp://` is one clear error.
#[cfg(windows)]
#[test]
fn remote_sftp_on_windows_is_one_clear_error() {
    let env = TestEnv::new();
    let (profile, _) = backed_up(&env, 1, 10_000);
    let out = env
        .cmd()
        .env("FFSESSION_PASSWORD", "pw")
        .arg("--profile")
        .arg(&profile)
        .arg("--store")
        .arg(env.store_dir())
        .args(["copy", "--to", "sftp://127.0.0.1:9/nowhere"])
        .run();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("SFTP is not available on this system"),
        "{err}"
    );
}

// SFTP is Unix-only (ffsession speaks it through OpenSSH's `ssh`), and
// the test reads or kills the server's side directly.
#[cfg(unix)]
#[test]
fn remote_wrong_password_is_one_error_and_nothing_is_written() {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let (profile, _) = backed_up(&env, 1, 100_000);
    let loc = location(Kind::Sftp, &env);
    copy(&env, &profile, &loc);
    let dir = sftp_dir(&loc);
    let before = ffsession_gen::files_under(&dir);
    let store = env.store_dir().to_string_lossy().into_owned();
    // This machine kept the remote's key (no password is asked then):
    // forgotten, so that the password is what opens it.
    ok_stdout(cmd(&env).args(["remote", "forget", &loc]));
    for args in [
        vec!["--store", store.as_str(), "copy", "--to", loc.as_str()],
        vec!["--store", loc.as_str(), "list"],
    ] {
        let mut c = cmd(&env);
        c.env("FFSESSION_PASSWORD", "wrong")
            .arg("--profile")
            .arg(&profile)
            .args(&args);
        let out = c.run();
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("wrong password"), "{err}");
        assert!(err.contains("nothing was written"), "{err}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(ffsession_gen::files_under(&dir), before);
}

#[test]
fn remote_full_bucket_is_a_clear_error_and_the_remote_stays_readable() {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let (profile, jsons) = backed_up(&env, 1, 100_000);
    // A bucket of its own per platform: CI runs this test on Linux, then
    // under Wine against the same server, and the first run fills its bucket.
    let bucket = if cfg!(windows) {
        "ffs-small-windows"
    } else {
        "ffs-small"
    };
    // What earlier runs against these servers left in the bucket (a run by
    // hand after others) would leave no room: empty it first (Unix: the
    // servers' own rclone; CI's Wine run finds its bucket new).
    #[cfg(unix)]
    empty_bucket(bucket);
    let loc = format!("s3://{bucket}/{}", unique());
    // The first small snapshot fits in the 300 KB quota...
    copy(&env, &profile, &loc);
    // ... a large one does not.
    let big = session(Spec {
        seed: 7,
        last_update: 1_795_500_000_000,
        ..Spec::sized(1_500_000)
    });
    env.back_up_recovery(&big.packed);
    let mut c = cmd(&env);
    c.arg("--profile")
        .arg(&profile)
        .arg("--store")
        .arg(env.store_dir())
        .args(["copy", "--to", &loc]);
    let out = c.run();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("out of space"), "{err}");
    assert_remote_restores(&loc, &jsons);
}

/// Remove every object of `bucket` on the test's S3 server, with rclone
/// (which `.ci/servers.sh` installs).
#[cfg(unix)]
fn empty_bucket(bucket: &str) {
    let out = std::process::Command::new("rclone")
        .env_remove("AWS_CA_BUNDLE") // rclone fails on one set for its HTTP client
        .args(["delete", &format!(":s3:{bucket}"), "--s3-provider", "Other"])
        .arg(format!(
            "--s3-endpoint={}",
            var("FFSESSION_TEST_S3_ENDPOINT")
        ))
        .arg(format!(
            "--s3-access-key-id={}",
            var("FFSESSION_TEST_S3_KEY_ID")
        ))
        .arg(format!(
            "--s3-secret-access-key={}",
            var("FFSESSION_TEST_S3_SECRET")
        ))
        .arg(format!("--s3-region={}", var("FFSESSION_TEST_S3_REGION")))
        .output()
        .expect("rclone (installed by .ci/servers.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// SFTP is Unix-only (ffsession speaks it through OpenSSH's `ssh`), and
// the test reads or kills the server's side directly.
#[cfg(unix)]
#[test]
fn remote_object_deleted_or_flipped_is_named_by_check_and_healed_by_copy() {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let (profile, jsons) = backed_up(&env, 2, 300_000);
    let loc = location(Kind::Sftp, &env);
    copy(&env, &profile, &loc);
    let chunks = ffsession_gen::files_under(&sftp_dir(&loc).join("chunks"));
    assert!(chunks.len() > 10);
    fs::remove_file(&chunks[2]).unwrap();
    let mut b = fs::read(&chunks[5]).unwrap();
    let at = b.len() - 20;
    b[at] ^= 0x04;
    fs::write(&chunks[5], &b).unwrap();

    let mut c = cmd(&env);
    c.args(["--store", &loc, "check", "--read-data"]);
    let out = c.run();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("damaged snapshot"), "{text}");
    assert!(
        text.contains("default-release") || text.contains("profile"),
        "{text}"
    );

    let healed = copy(&env, &profile, &loc);
    assert_eq!(healed["healed"], 2, "{healed}");
    ok_stdout(cmd(&env).args(["--store", &loc, "check", "--read-data"]));
    assert_remote_restores(&loc, &jsons);
}

#[test]
fn remote_copy_killed_at_many_points_resumes_and_loses_nothing() {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    // SFTP is Unix-only (ffsession speaks it through OpenSSH's `ssh`).
    let kinds: &[Kind] = if cfg!(unix) {
        &[Kind::Sftp, Kind::S3]
    } else {
        &[Kind::S3]
    };
    for &kind in kinds {
        let env = TestEnv::new();
        let (profile, jsons) = backed_up(&env, 2, 200_000);
        let loc = location(kind, &env);
        // Count the objects a whole copy writes, into a throwaway location.
        let total = copy(&env, &profile, &location(kind, &env));
        let objects = (total["chunks_sent"].as_u64().unwrap()
            + total["contents_sent"].as_u64().unwrap()
            + total["snapshots_sent"].as_u64().unwrap()) as usize;
        assert!(objects >= 25, "{total}");
        // Kill points spread over the whole copy, each run resuming the last.
        let mut killed = 0;
        let points: Vec<usize> = (1..=30).map(|i| i * objects / 30).collect();
        let mut done_before = 0usize;
        let reader = TestEnv::new();
        for &p in &points {
            let n = p.saturating_sub(done_before).max(1);
            let mut c = std_cmd(&env);
            c.arg("--profile")
                .arg(&profile)
                .arg("--store")
                .arg(env.store_dir())
                .args(["copy", "--json", "--to", &loc])
                .env("FFSESSION_TEST_REMOTE_KILL_AFTER_WRITES", n.to_string());
            let out = c.run();
            if !out.status.success() {
                killed += 1;
                done_before += n;
            }
            // After each kill the remote reads: every snapshot it lists is
            // whole (fetched and verified by one reader, as it grows).
            let list = cmd(&reader).args(["--store", &loc, "list", "--json"]).run();
            assert!(
                list.status.success(),
                "{kind:?} after {p}: {}",
                stderr(&list)
            );
        }
        assert!(killed >= 25, "{kind:?}: only {killed} runs were killed");
        let last = copy(&env, &profile, &loc);
        assert_eq!(last["skipped"].as_array().unwrap().len(), 0, "{last}");
        assert_remote_restores(&loc, &jsons);
        // prune clears what the kills left (temporary files on SFTP) and
        // keeps every snapshot.
        ok_stdout(cmd(&env).args(["--store", &loc, "prune", "--keep-last", "100"]));
        #[cfg(unix)]
        if kind == Kind::Sftp {
            let left: Vec<_> = ffsession_gen::files_under(&sftp_dir(&loc))
                .into_iter()
                .filter(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with(".tmp-")
                })
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
        assert_remote_restores(&loc, &jsons);
    }
}

#[cfg(unix)]
/// The children of process `pid` (Linux).
pub(crate) fn children(pid: u32) -> Vec<u32> {
    fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

// SFTP is Unix-only (ffsession speaks it through OpenSSH's `ssh`), and
// the test reads or kills the server's side directly.
#[cfg(unix)]
#[test]
fn remote_server_killed_mid_copy_then_the_next_copy_finishes() {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let (profile, _) = backed_up(&env, 1, 100_000);
    let loc = location(Kind::Sftp, &env);
    copy(&env, &profile, &loc);
    let (_, _) = backed_up(&env, 3, 300_000);
    let jsons = backed_up_jsons(&env);
    let mut interrupted = 0;
    for round in 0..3u64 {
        let mut c = std_cmd(&env);
        c.arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(env.store_dir())
            .args(["copy", "--to", &loc])
            .env("FFSESSION_TEST_REMOTE_WRITE_DELAY_MS", "20")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500 + round * 400));
        kill_sshd();
        let out = child.wait_with_output().unwrap();
        start_sshd();
        if !out.status.success() {
            interrupted += 1;
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains("sftp://"), "{err}");
        }
        let fresh = TestEnv::new();
        ok_stdout(cmd(&fresh).args(["--store", &loc, "list"]));
    }
    assert!(
        interrupted >= 1,
        "no copy was cut short by the server's death"
    );
    copy(&env, &profile, &loc);
    assert_remote_restores(&loc, &jsons);

    // Offline, a machine that read the remote before reads its local copy.
    let laptop = TestEnv::new();
    ok_stdout(cmd(&laptop).args(["--store", &loc, "list"]));
    kill_sshd();
    let out = cmd(&laptop).args(["--store", &loc, "list", "--json"]).run();
    start_sshd();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("reading the local copy"),
        "{}",
        stderr(&out)
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), jsons.len());
    // A machine that never read it has nothing to show: one clear error.
    kill_sshd();
    let out = cmd(&TestEnv::new()).args(["--store", &loc, "list"]).run();
    start_sshd();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("sftp://"), "{}", stderr(&out));
}

#[cfg(unix)]
/// Kill the test sshd: its listener and every connection's processes.
pub(crate) fn kill_sshd() {
    let sshd: u32 = fs::read_to_string(var("FFSESSION_TEST_SSHD_PID"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut doomed = children(sshd);
    doomed.push(sshd);
    for p in doomed {
        let _ = StdCommand::new("kill")
            .arg("-9")
            .arg(p.to_string())
            .status();
    }
    let _ = fs::remove_file(var("FFSESSION_TEST_SSHD_PID"));
}

#[cfg(unix)]
/// Start the test sshd again, with the config `.ci/servers.sh` wrote.
pub(crate) fn start_sshd() {
    let servers = PathBuf::from(var("FFSESSION_TEST_SERVERS"));
    let started = StdCommand::new("/usr/sbin/sshd")
        .arg("-f")
        .arg(servers.join("sshd_config"))
        .arg("-E")
        .arg(servers.join("sshd.log"))
        .status()
        .unwrap();
    assert!(started.success());
    // sshd leaves the foreground before it listens, and writes its pid file
    // once it does: wait for that, on a slow machine too.
    let pid_file = PathBuf::from(var("FFSESSION_TEST_SSHD_PID"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !fs::read_to_string(&pid_file).is_ok_and(|p| p.trim().parse::<u32>().is_ok()) {
        assert!(
            std::time::Instant::now() < deadline,
            "sshd did not start again (no pid in {})",
            pid_file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn remote_two_machines_copy_at_once() {
    let Some(_) = servers() else { return };
    let _serial = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let loc = format!("s3://ffs/{}", unique());
    let a = TestEnv::new();
    let b = TestEnv::new();
    let (pa, ja) = backed_up(&a, 2, 200_000);
    let (pb, _) = backed_up(&b, 1, 200_000);
    // b's second snapshot is a's first session: shared content, one copy.
    let shared = b.back_up_recovery(&ffsession_gen::mozlz4(ja[0].as_bytes()));
    let mut jb = vec![];
    jb.extend(backed_up_jsons(&b));
    let handles: Vec<_> = [(&a, &pa, "alpha"), (&b, &shared, "beta")]
        .iter()
        .map(|(env, profile, host)| {
            let config = env.write("config.toml", format!("host = \"{host}\"\n").as_bytes());
            let mut c = std_cmd(env);
            c.arg("--config")
                .arg(&config)
                .arg("--profile")
                .arg(profile)
                .arg("--store")
                .arg(env.store_dir())
                .args(["copy", "--to", &loc]);
            c.spawn().unwrap()
        })
        .collect();
    for h in handles {
        let out = h.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let _ = pb;
    let mut all = ja.clone();
    all.extend(jb);
    assert_remote_restores(&loc, &all);
    ok_stdout(cmd(&a).args(["--store", &loc, "check", "--read-data"]));
}

/// The session JSON of every snapshot in `env`'s store.
pub(crate) fn backed_up_jsons(env: &TestEnv) -> Vec<String> {
    let store = ffsession::store::Store::open_read_only(env.store_dir()).unwrap();
    store
        .snapshots()
        .unwrap()
        .iter()
        .map(|s| String::from_utf8(store.read_json(s.id).unwrap()).unwrap())
        .collect()
}

/// Files in `dir` (none if it is not there).
/// Files under their final names: a snapshot being written sits under a
/// dot-prefixed temporary name until it is whole, and a watch killed then
/// (Windows has no Ctrl-C for it) leaves only the snapshots already linked.
fn count_files(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .count()
    })
}

#[test]
fn watch_copies_after_each_cycle_and_says_once_when_a_remote_is_away() {
    let env = TestEnv::new();
    let pw = env.write("pw", b"watch password\n");
    let usb = env.path().join("usb");
    let config = env.write(
        "config.toml",
        format!(
            "[remotes.usb]\nlocation = {:?}\npassword_file = {:?}\nwatch = true\n\n\
             [remotes.away]\nlocation = \"sftp://127.0.0.1:9/nowhere\"\npassword_file = {:?}\nwatch = true\n",
            usb.to_string_lossy(),
            pw.to_string_lossy(),
            pw.to_string_lossy()
        )
        .as_bytes(),
    );
    let g = |tabs: usize| {
        session(Spec {
            tabs,
            last_update: 1_795_300_000_000 + tabs as u64,
            ..Spec::default()
        })
    };
    let profile = env.profile_with_recovery(&g(5).packed);
    let mut c = env.std_store_cmd_at(&profile, &env.store_dir());
    c.env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
        .arg("--config")
        .arg(&config)
        .args(["watch", "--interval", "1s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let wait_for = |n: usize| {
        for _ in 0..300 {
            if count_files(&usb.join("snapshots")) >= n {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the remote did not get {n} snapshots within 15 s");
    };
    wait_for(1);
    let backups = profile.join("sessionstore-backups");
    for tabs in [6, 7] {
        fs::write(backups.join("r.tmp"), g(tabs).packed).unwrap();
        fs::rename(backups.join("r.tmp"), backups.join("recovery.jsonlz4")).unwrap();
        wait_for(tabs - 4);
    }
    ffsession_gen::interrupt(&mut child);
    let out = child.wait_with_output().unwrap();
    // Ctrl-C reaches it on Unix only (see `ffsession_gen::interrupt`).
    if cfg!(unix) {
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let err = stderr(&out);
    assert_eq!(
        err.matches("copy to away failed").count(),
        1,
        "said once, then quiet: {err}"
    );
    assert!(err.contains("copied 1 snapshot to usb"), "{err}");
    // What watch copied reads back from the remote.
    let fresh = TestEnv::new();
    let mut l = fresh.cmd();
    l.env("FFSESSION_PASSWORD", "watch password")
        .arg("--store")
        .arg(&usb)
        .args(["list", "--json"]);
    assert_eq!(ok_json(&mut l).as_array().unwrap().len(), 3);
}

#[test]
fn restore_from_a_remote_keeps_the_undo_in_the_profiles_own_store() {
    let env = TestEnv::new();
    let old = session(Spec {
        tabs: 4,
        last_update: 1_795_300_000_000,
        ..Spec::default()
    });
    let profile = env.back_up_recovery(&old.packed);
    let usb = env.path().join("usb");
    let mut c = env.store_cmd(&profile);
    c.env("FFSESSION_PASSWORD", "pw")
        .env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
        .args(["copy", "--to"])
        .arg(&usb);
    ok_stdout(&mut c);
    // The profile moves on; then the remote's session is restored into it.
    let newer = session(Spec {
        tabs: 9,
        last_update: 1_795_400_000_000,
        ..Spec::default()
    });
    env.profile_with_recovery(&newer.packed);
    let mut r = env.cmd();
    r.env("FFSESSION_PASSWORD", "pw")
        .arg("--profile")
        .arg(&profile)
        .arg("--store")
        .arg(&usb)
        .args(["restore", "latest"]);
    let text = ok_stdout(&mut r);
    let undo = text
        .lines()
        .find(|l| l.starts_with("to undo: "))
        .unwrap_or_else(|| panic!("{text}"))
        .to_owned();
    let own = env.stores_root().join("profile");
    assert!(undo.contains(&own.display().to_string()), "{text}");
    let restored = fs::read(profile.join("sessionstore.jsonlz4")).unwrap();
    assert_eq!(
        ffsession::format::decompress(&restored).unwrap(),
        old.json.as_bytes()
    );
    // The undo snapshot holds the newer session, in the profile's own store.
    let store = ffsession::store::Store::open_read_only(&own).unwrap();
    let held: Vec<Vec<u8>> = store
        .snapshots()
        .unwrap()
        .iter()
        .filter_map(|s| store.read_json(s.id).ok())
        .collect();
    assert!(held.contains(&newer.json.clone().into_bytes()), "{undo}");
    // The remote's local copy still mirrors the remote: one snapshot.
    let mut l = env.cmd();
    l.env("FFSESSION_PASSWORD", "pw")
        .arg("--store")
        .arg(&usb)
        .args(["list", "--json"]);
    assert_eq!(ok_json(&mut l).as_array().unwrap().len(), 1);
}
