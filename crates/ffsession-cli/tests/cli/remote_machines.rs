//! Several machines sharing one remote, as they live (issue 44): clocks
//! that disagree by hours, two machines with one host name, a copy paused
//! mid-way (SIGSTOP, as a laptop that sleeps) while another machine
//! prunes, a copy killed, twenty machines creating one remote at once.
//! Each against a folder remote and the CI's sshd. The promise checked
//! after each: a copy that said "copied" is restorable, byte for byte, by a
//! machine that never saw it, and each machine's newest session survives
//! any prune.
//!
//! A machine's clock is moved with `faketime` (libfaketime: the process's
//! clock only; the server's file times stay the server's). Unix only:
//! SIGSTOP, SIGKILL, faketime, and SFTP.

use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use ffsession_gen::Spec;

use crate::common::Run;
use crate::common::{keep_only_last, session, TestEnv};
use crate::remote_common::{
    assert_remote_restores, day, is_temporary, location, servers, sftp_dir, std_cmd, unavailable,
    Kind, Machine, Servers,
};

/// A machine named `host` (a config file says so) with `n` sessions of
/// about 300 KB backed up on days `first..first + n`; returns it and each
/// session's JSON.
fn machine(host: &str, first: u64, n: u64) -> WithSessions {
    let m = Machine::new(host, first, &[]);
    let mut jsons = Vec::new();
    for i in 0..n {
        let g = session(Spec {
            seed: first * 100 + i,
            last_update: day(first + i),
            ..Spec::sized(300_000)
        });
        m.back_up(&g.packed);
        jsons.push(g.json);
    }
    (m, jsons)
}

/// `ffsession` as machine `m` (its config and home), with the
/// servers' settings, under `faketime` when `clock` says so.
fn ffs(m: &Machine, clock: Option<&str>) -> StdCommand {
    let Some(offset) = clock else {
        return m.server_cmd();
    };
    let mut c = m.env.sealed_cmd("faketime");
    c.args(["-f", offset])
        .arg(assert_cmd::cargo::cargo_bin("ffsession"));
    for (k, v) in std_cmd(&m.env).get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.arg("--config").arg(&m.config);
    c
}

/// `copy --to LOC` of `m`'s store, as [`ffs`] runs it.
fn copy_cmd(m: &Machine, clock: Option<&str>, loc: &str) -> StdCommand {
    let mut c = ffs(m, clock);
    c.arg("--store")
        .arg(m.env.store_dir())
        .args(["copy", "--to", loc]);
    c
}

/// [`copy_cmd`], run: it must succeed (`what` heads what it said if not).
fn copies(m: &Machine, clock: Option<&str>, loc: &str, what: &str) {
    let out = run(&mut copy_cmd(m, clock, loc));
    assert!(out.status.success(), "{what}{}", said(&out));
}

fn run(c: &mut StdCommand) -> std::process::Output {
    c.run()
}

fn said(out: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Where the remote at `loc` keeps its objects on this machine's disk.
fn on_disk(loc: &str) -> PathBuf {
    if loc.starts_with("sftp://") {
        return sftp_dir(loc);
    }
    PathBuf::from(loc)
}

fn count_files(dir: &Path) -> usize {
    if !dir.exists() {
        return 0;
    }
    ffsession_gen::files_under(dir)
        .into_iter()
        .filter(|p| !is_temporary(p))
        .count()
}

/// Start `copy --to loc` from `m`, slowed to 60 ms an object, and stop it
/// (SIGSTOP) once it has written `chunks` new chunks: a copy paused mid-way.
fn start_paused_copy(m: &Machine, loc: &str, chunks: usize) -> Child {
    let mut c = copy_cmd(m, None, loc);
    c.env("FFSESSION_TEST_REMOTE_WRITE_DELAY_MS", "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let dir = on_disk(loc).join("chunks");
    let before = count_files(&dir);
    let child = c.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while count_files(&dir) < before + chunks {
        assert!(Instant::now() < deadline, "the copy wrote no chunks");
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(child.id(), "STOP");
    child
}

fn signal(pid: u32, sig: &str) {
    let ok = StdCommand::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

/// Set the server's time of every lock of the remote at `loc` to `ago`
/// before now: a copy asleep that long (its lock stale on the server).
fn age_locks(loc: &str, ago: Duration) {
    let when = std::time::SystemTime::now() - ago;
    for f in ffsession_gen::files_under(&on_disk(loc).join("locks")) {
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
}

/// What a machine that never saw the remote finds there: `check` says it
/// is whole, and every snapshot restores as one of `expected`.
fn assert_whole_and_restorable(loc: &str, expected: &[String]) {
    let fresh = TestEnv::new();
    let out = run(std_cmd(&fresh).args(["--store", loc, "check"]));
    assert!(
        out.status.success(),
        "check on a new machine: {}",
        said(&out)
    );
    assert_remote_restores(loc, expected);
}

/// The servers, held (see [`servers`]), where `faketime` is installed too;
/// `None` (said; a failure under CI) where either is missing.
fn servers_and_faketime() -> Option<Servers> {
    let servers = servers()?;
    let there = StdCommand::new("faketime")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !there {
        unavailable(
            "CI: faketime is not installed (.ci/run installs it)",
            "skipped: no faketime",
        );
        return None;
    }
    Some(servers)
}

/// A machine and the JSON of each session it backed up.
type WithSessions = (Machine, Vec<String>);

/// Machines A and B, each a [`machine`] of (host, first day, sessions),
/// and a new location of `kind` to which B (its clock as `clock` says) has
/// copied its sessions.
fn b_copied_first(
    kind: Kind,
    a: (&str, u64, u64),
    b: (&str, u64, u64),
    clock: Option<&str>,
) -> (WithSessions, WithSessions, String) {
    let a = machine(a.0, a.1, a.2);
    let b = machine(b.0, b.1, b.2);
    let loc = location(kind, &a.0.env);
    copies(&b.0, clock, &loc, "");
    (a, b, loc)
}

fn kinds() -> Vec<Kind> {
    vec![Kind::Folder, Kind::Sftp]
}

/// Laptop A copies; laptop B, whose clock runs two hours ahead, prunes
/// the remote meanwhile. B must not take A's lock for a dead one (time is
/// the server's), and A's "copied" must be true for a third machine.
#[test]
fn a_prune_from_a_clock_two_hours_ahead_during_a_copy_loses_nothing_the_copy_sent() {
    let Some(_servers) = servers_and_faketime() else {
        return;
    };
    for kind in kinds() {
        // B's sessions are there first; then A's copy starts, and pauses.
        let ((a, a_jsons), (b, b_jsons), loc) =
            b_copied_first(kind, ("laptop-a", 0, 3), ("laptop-b", 20, 2), Some("+2h"));
        let mut copy = start_paused_copy(&a, &loc, 4);
        let prune = run(ffs(&b, Some("+2h")).args(["--store", &loc, "prune", "--keep-last", "1"]));
        signal(copy.id(), "CONT");
        let copied = wait(&mut copy);
        // B's prune refused: A's lock is live by the server's clock,
        // whatever B's says. A's copy says copied; a new machine agrees.
        assert!(copied.status.success(), "{kind:?}: {}", said(&copied));
        assert!(
            !prune.status.success() && said(&prune).contains("locked by a copy on laptop-a"),
            "{kind:?}: {}",
            said(&prune)
        );
        let mut all = a_jsons.clone();
        all.extend(b_jsons.clone());
        assert_whole_and_restorable(&loc, &all);
    }
}

/// A copy that slept past its lock's time (its lock stale on the server)
/// while another machine pruned with no margin (`--keep-unused 0`): the
/// prune removed the chunks the copy had sent but not yet named. The copy,
/// on waking, finds them gone and sends them again before it says copied.
#[test]
fn a_copy_that_slept_past_its_lock_sends_again_what_a_prune_removed_meanwhile() {
    let Some(_servers) = servers_and_faketime() else {
        return;
    };
    for kind in kinds() {
        let ((a, a_jsons), (b, b_jsons), loc) =
            b_copied_first(kind, ("laptop-a", 0, 3), ("laptop-b", 20, 1), None);
        let mut copy = start_paused_copy(&a, &loc, 4);
        // Two hours pass while A sleeps: on the server (its lock's time),
        // and on B's clock.
        age_locks(&loc, Duration::from_secs(2 * 3600));
        let prune = run(ffs(&b, Some("+2h")).args([
            "--store",
            &loc,
            "prune",
            "--keep-last",
            "1",
            "--keep-unused",
            "0",
        ]));
        assert!(prune.status.success(), "{kind:?}: {}", said(&prune));
        signal(copy.id(), "CONT");
        let copied = wait(&mut copy);
        if copied.status.success() {
            assert!(
                said(&copied).contains("sent again"),
                "{kind:?}: {}",
                said(&copied)
            );
            let mut all = a_jsons.clone();
            all.extend(b_jsons.clone());
            assert_whole_and_restorable(&loc, &all);
        } else {
            // Or it fails, saying so: never "copied" over a hole.
            assert!(!said(&copied).contains("copied "), "{}", said(&copied));
        }
    }
}

/// Two machines called "laptop" (a distribution's default name, a config
/// copied between laptops): a lock one of them left (its copy killed) is
/// never taken for dead by the other, whose process table does not have
/// that pid; and a prune keeps each one's newest session, each restorable
/// by its identity.
#[test]
fn two_machines_with_one_host_name_are_two_machines() {
    let Some(_servers) = servers() else { return };
    for kind in kinds() {
        let ((a, a_jsons), (b, b_jsons), loc) =
            b_copied_first(kind, ("laptop", 0, 4), ("laptop", 20, 4), None);
        // A's copy dies mid-way (SIGKILL): its lock stays, of a pid that is
        // not running. B, of the same name, must not remove it as dead.
        let mut copy = start_paused_copy(&a, &loc, 3);
        signal(copy.id(), "KILL");
        let _ = copy.wait();
        let prune = run(ffs(&b, None).args(["--store", &loc, "prune", "--keep-last", "1"]));
        assert!(
            !prune.status.success() && said(&prune).contains("locked by a copy on laptop ("),
            "{kind:?}: {}",
            said(&prune)
        );
        // A's next copy removes its own dead lock and finishes.
        copies(&a, None, &loc, &format!("{kind:?}: "));
        let prune = run(ffs(&b, None)
            .args(["--store", &loc, "prune"])
            .args(keep_only_last(1)));
        assert!(prune.status.success(), "{kind:?}: {}", said(&prune));
        // Each machine's newest is there, and only that: one each.
        let newest = [
            a_jsons.last().unwrap().clone(),
            b_jsons.last().unwrap().clone(),
        ];
        assert_whole_and_restorable(&loc, &newest);
        // `list` tells them apart; `restore latest` from each takes its own.
        let fresh = TestEnv::new();
        let list = run(std_cmd(&fresh).args(["--store", &loc, "list"]));
        let text = String::from_utf8_lossy(&list.stdout).into_owned();
        let ids: std::collections::BTreeSet<&str> = text
            .lines()
            .filter_map(|l| l.split("on laptop (").nth(1))
            .filter_map(|rest| rest.split(')').next())
            .collect();
        assert_eq!(ids.len(), 2, "{text}");
        for (m, want) in [(&a, &newest[0]), (&b, &newest[1])] {
            let target = m.env.path().join("restored");
            let out = run(ffs(m, None)
                .args(["--store", &loc, "restore", "latest", "--profile"])
                .arg(&target));
            assert!(out.status.success(), "{}", said(&out));
            let bytes = std::fs::read(target.join("sessionstore.jsonlz4")).unwrap();
            let got = String::from_utf8(ffsession::format::decompress(&bytes).unwrap()).unwrap();
            assert!(
                &got == want,
                "{kind:?}: restore latest took another machine's session"
            );
        }
    }
}

/// Twenty machines creating one remote at the same moment: every copy
/// succeeds (a listing that meets another's temporary file as it vanishes
/// is no error), one says it created the remote, and a new machine
/// restores every session of all twenty.
#[test]
fn twenty_machines_creating_one_remote_at_once_all_succeed() {
    let Some(_servers) = servers() else { return };
    for kind in kinds() {
        let machines: Vec<(Machine, Vec<String>)> = (0..20)
            .map(|i| {
                let m = Machine::new(&format!("m{i}"), i, &[]);
                let g = session(Spec {
                    seed: 500 + i,
                    last_update: 1_795_000_000_000 + i * 60_000,
                    ..Spec::sized(20_000)
                });
                m.back_up(&g.packed);
                (m, vec![g.json])
            })
            .collect();
        let loc = location(kind, &machines[0].0.env);
        let mut children: Vec<Child> = machines
            .iter()
            .map(|(m, _)| {
                copy_cmd(m, None, &loc)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outs: Vec<_> = children.iter_mut().map(wait).collect();
        for o in &outs {
            assert!(o.status.success(), "{kind:?}: {}", said(o));
        }
        let created = outs
            .iter()
            .filter(|o| said(o).contains("created a remote store"))
            .count();
        assert_eq!(created, 1, "{kind:?}");
        let all: Vec<String> = machines.iter().flat_map(|(_, j)| j.clone()).collect();
        assert_whole_and_restorable(&loc, &all);
        drop(machines);
    }
}

fn wait(child: &mut Child) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            break;
        }
        assert!(Instant::now() < deadline, "a copy hung");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out).unwrap();
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    std::process::Output {
        status: child.wait().unwrap(),
        stdout: out.into_bytes(),
        stderr: err.into_bytes(),
    }
}
