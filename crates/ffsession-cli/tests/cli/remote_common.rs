//! What the remote-store tests share: the real servers on 127.0.0.1
//! (OpenSSH's sshd, Garage, rclone's WebDAV) started by `.ci/servers.sh`,
//! which `.ci/run` sources, found through its `FFSESSION_TEST_*` variables;
//! the lock that keeps a test that stops a server or fills its disk alone
//! (the others share the servers, each in locations of its own); a fresh location on each
//! kind of server; `ffsession` with the servers' settings; and the check
//! that every snapshot of a remote restores byte-identical.
//!
//! Without the servers (FFSESSION_TEST_SERVERS unset) these tests say so and
//! pass, except under CI (CI=true), where the servers must be there.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use assert_cmd::Command;
use ffsession_gen::Spec;

use crate::common::{ok_json, ok_output, ok_stdout, packed, session, TestEnv};

/// Something a test needs is not on this machine: under CI (CI=true) that
/// fails the test with `ci_says`, elsewhere `skipped` is said (the caller
/// then passes without running).
pub(crate) fn unavailable(ci_says: &str, skipped: &str) {
    assert!(std::env::var_os("CI").is_none(), "{ci_says}");
    eprintln!("{skipped}");
}

/// The folder of the servers (`FFSESSION_TEST_SERVERS`), or `None` (said;
/// a failure under CI) where they are not running.
pub(crate) fn servers_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("FFSESSION_TEST_SERVERS").map(PathBuf::from);
    if dir.is_none() {
        unavailable(
            "CI: the remote-store servers are not running (.ci/servers.sh)",
            "remote tests skipped: no servers (source .ci/servers.sh first)",
        );
    }
    dir
}

/// The servers, held for one test: their folder, and a lock on
/// `tests.lock` in it until dropped (bind it to a name, not `_`, to keep
/// it). Tests that stop a server or fill its disk hold it alone
/// ([`servers_alone`]); the others share it ([`servers`]), each in
/// locations of its own ([`unique`]). A file lock, not a mutex: it holds
/// between the threads of `cargo test` and the processes of `cargo nextest`.
pub(crate) struct Servers {
    /// Read by the Unix-only tests (the servers' keys and certificates).
    #[cfg_attr(windows, allow(dead_code))]
    pub(crate) dir: PathBuf,
    _held: fs::File,
}

/// [`servers_dir`], shared with the other tests that use the servers
/// without stopping one or filling its disk.
pub(crate) fn servers() -> Option<Servers> {
    held(false)
}

/// [`servers_dir`], held alone: for a test that stops a server or fills
/// its disk, which the others must not see.
#[cfg(unix)]
pub(crate) fn servers_alone() -> Option<Servers> {
    held(true)
}

fn held(alone: bool) -> Option<Servers> {
    let dir = servers_dir()?;
    let path = dir.join("tests.lock");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if alone {
        file.lock()
    } else {
        file.lock_shared()
    }
    .unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
    Some(Servers { dir, _held: file })
}

/// A variable `.ci/servers.sh` sets.
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

/// A name no other location of this run, or of another, has.
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

/// A new location of `kind` (a folder remote: `remote/` in `env`).
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

#[cfg(unix)]
/// Whether `path` is a temporary file of a write not finished (`.tmp-…`).
pub(crate) fn is_temporary(path: &Path) -> bool {
    path.file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with(".tmp-")
}

/// The password of the remotes the tests make.
pub(crate) const PASSWORD: &str = "correct horse battery staple";

/// `ffsession` in the sealed environment, with the servers' settings and a
/// password; `ssh` is the wrapper that reads the test's SSH config.
pub(crate) fn cmd(env: &TestEnv) -> Command {
    Command::from_std(std_cmd(env))
}

/// The same as a `std::process::Command`, for tests that spawn or kill it.
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

/// [`std_cmd`] `--profile PROFILE --store <env's test store>`.
pub(crate) fn std_store_cmd(env: &TestEnv, profile: &Path) -> StdCommand {
    let mut c = std_cmd(env);
    c.arg("--profile")
        .arg(profile)
        .arg("--store")
        .arg(env.store_dir());
    c
}

/// [`std_store_cmd`] as an `assert_cmd` command.
pub(crate) fn store_cmd(env: &TestEnv, profile: &Path) -> Command {
    Command::from_std(std_store_cmd(env, profile))
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

/// `copy --json --to TO` of the test store, which must succeed; its report.
pub(crate) fn copy(env: &TestEnv, profile: &Path, to: &str) -> serde_json::Value {
    ok_json(store_cmd(env, profile).args(["copy", "--json", "--to", to]))
}

/// A test store and where it goes: the test environment, its profile, the
/// JSON of each snapshot (oldest first) and a location on a server.
pub(crate) type Prepared = (TestEnv, PathBuf, Vec<String>, String);

/// A new test environment with [`backed_up`] `n` snapshots of about
/// `bytes`, and a new location of `kind` (not copied to yet).
pub(crate) fn prepared(kind: Kind, n: u64, bytes: usize) -> Prepared {
    let env = TestEnv::new();
    let (profile, jsons) = backed_up(&env, n, bytes);
    let loc = location(kind, &env);
    (env, profile, jsons, loc)
}

#[cfg(unix)]
/// [`prepared`], copied to its location.
pub(crate) fn copied(kind: Kind, n: u64, bytes: usize) -> Prepared {
    let (env, profile, jsons, loc) = prepared(kind, n, bytes);
    copy(&env, &profile, &loc);
    (env, profile, jsons, loc)
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

/// Every snapshot of `list` (a `list --json` of the remote at `loc`)
/// restored into a new profile folder under `fresh` by `restore` (given the
/// `--store … restore ID --profile` arguments and the folder; it checks the
/// restore succeeded); the sessions they hold.
pub(crate) fn restored_sessions(
    fresh: &TestEnv,
    loc: &str,
    list: &serde_json::Value,
    mut restore: impl FnMut(&[&str], &Path),
) -> Vec<String> {
    let mut got = Vec::new();
    for s in list.as_array().unwrap() {
        let id = s["id"].as_i64().unwrap().to_string();
        let target = fresh.path().join(format!("profile-{id}"));
        restore(&["--store", loc, "restore", &id, "--profile"], &target);
        let bytes = fs::read(target.join("sessionstore.jsonlz4")).unwrap();
        got.push(String::from_utf8(ffsession::format::decompress(&bytes).unwrap()).unwrap());
    }
    got
}

/// `got` and `expected` hold the same sessions, in any order.
pub(crate) fn assert_same_sessions(mut got: Vec<String>, expected: &[String]) {
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert!(
        got == want,
        "a restored session differs from the one backed up"
    );
}

/// Every snapshot the remote lists, read through a new machine's cache
/// (a fresh HOME), each restored into a new profile folder and compared
/// byte for byte with `expected` (JSON texts, any order).
pub(crate) fn assert_remote_restores(loc: &str, expected: &[String]) {
    let fresh = TestEnv::new();
    let list = ok_json(cmd(&fresh).args(["--store", loc, "list", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), expected.len(), "{list:?}");
    let got = restored_sessions(&fresh, loc, &list, |args, target| {
        ok_stdout(cmd(&fresh).args(args).arg(target));
    });
    assert_same_sessions(got, expected);
}

#[cfg(unix)]
/// The children of process `pid` (Linux).
fn children(pid: u32) -> Vec<u32> {
    fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
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

#[cfg(unix)]
/// Where a WebDAV location's objects are on this machine's disk.
pub(crate) fn webdav_dir(loc: &str) -> PathBuf {
    PathBuf::from(var("FFSESSION_TEST_SERVERS"))
        .join("webdav/store")
        .join(loc.rsplit('/').next().unwrap())
}

/// `ffsession` with quick key stretching and, when given, the password of
/// a remote (for remotes in a folder: no server needed).
pub(crate) fn password_cmd(env: &TestEnv, password: Option<&str>) -> Command {
    let mut c = env.cmd();
    c.env("FFSESSION_TEST_SCRYPT_LOG_N", "10");
    if let Some(p) = password {
        c.env("FFSESSION_PASSWORD", p);
    }
    c
}

/// One machine of a household: its own home, profile and store, and a
/// config file naming it.
pub(crate) struct Machine {
    pub(crate) env: TestEnv,
    pub(crate) profile: PathBuf,
    pub(crate) config: PathBuf,
}

impl Machine {
    /// `host` backs up a session of `tabs[i]` tabs on each day `first + i`.
    pub(crate) fn new(host: &str, first: u64, tabs: &[usize]) -> Machine {
        let env = TestEnv::new();
        let config = env.path().join("config.toml");
        fs::write(&config, format!("host = \"{host}\"\n")).unwrap();
        let profile = env.profile_with(&[]);
        let m = Machine {
            env,
            profile,
            config,
        };
        for (i, t) in tabs.iter().enumerate() {
            m.back_up(&packed(*t, day(first + i as u64)));
        }
        m
    }

    /// Write `recovery` as its profile's recovery file and back it up into
    /// its store (which must succeed).
    pub(crate) fn back_up(&self, recovery: &[u8]) {
        let profile = self.env.profile_with_recovery(recovery);
        assert_eq!(profile, self.profile);
        ok_output(
            self.env
                .store_cmd(&self.profile)
                .arg("--config")
                .arg(&self.config)
                .arg("backup"),
        );
    }

    /// `ffsession --config <its config> --profile <its profile>` and the
    /// remote's password.
    pub(crate) fn cmd(&self) -> Command {
        let mut c = password_cmd(&self.env, Some(PASSWORD));
        c.arg("--config")
            .arg(&self.config)
            .arg("--profile")
            .arg(&self.profile);
        c
    }

    /// [`Machine::cmd`] on the remote `remote` (`--store REMOTE`).
    pub(crate) fn on(&self, remote: &Path) -> Command {
        let mut c = self.cmd();
        c.arg("--store").arg(remote);
        c
    }

    /// `copy --to REMOTE` of its store.
    pub(crate) fn copy_to(&self, remote: &Path) -> Command {
        let mut c = self.cmd();
        c.arg("--store")
            .arg(self.env.store_dir())
            .arg("copy")
            .arg("--to")
            .arg(remote);
        c
    }

    /// `ffsession --config <its config>` with the servers' settings
    /// ([`std_cmd`]).
    pub(crate) fn server_cmd(&self) -> StdCommand {
        let mut c = std_cmd(&self.env);
        c.arg("--config").arg(&self.config);
        c
    }
}

/// The time (ms) of day `n` of the machines' sessions.
pub(crate) fn day(n: u64) -> u64 {
    1_795_000_000_000 + n * 86_400_000
}
