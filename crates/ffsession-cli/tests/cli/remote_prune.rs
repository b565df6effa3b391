//! `prune` on a remote store (a local folder: no server needed) shows its
//! plan as a local prune does: every snapshot, kept or removed, and why.

use std::path::Path;

use assert_cmd::Command;

use crate::common::{ok_output, packed, TestEnv};

/// `ffsession` with the remote's password (and quick key stretching).
fn cmd(env: &TestEnv) -> Command {
    let mut c = env.cmd();
    c.env("FFSESSION_PASSWORD", "correct horse battery staple")
        .env("FFSESSION_TEST_SCRYPT_LOG_N", "10");
    c
}

/// The plan lines of `prune` output (the lines before the count), as
/// (verdict, snapshot id) with the verdict's reasons.
fn plan(stdout: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| l.starts_with("keep") || l.starts_with("remove"))
        .map(|l| {
            let hash = l.find(" #").unwrap_or_else(|| panic!("no id in {l:?}"));
            let id = l[hash + 1..].split_whitespace().next().unwrap().to_owned();
            (l[..hash].trim().to_owned(), id)
        })
        .collect()
}

#[test]
fn prune_dry_run_on_a_remote_lists_keep_lines_with_reasons_as_local_prune_does() {
    let env = TestEnv::new();
    let mut profile = Path::new("").to_path_buf();
    for i in 0..3u64 {
        profile = env.back_up_recovery(&packed(3 + i as usize, 1_795_300_000_000 + i * 86_400_000));
    }
    let remote = env.path().join("remote");
    ok_output(
        cmd(&env)
            .arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(env.store_dir())
            .arg("copy")
            .arg("--to")
            .arg(&remote),
    );
    let policy = [
        "prune",
        "--dry-run",
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
    let local = ok_output(env.store_cmd(&profile).args(policy));
    let on_remote = ok_output(cmd(&env).arg("--store").arg(&remote).args(policy));
    let (local, on_remote) = (plan(&local.stdout), plan(&on_remote.stdout));
    assert_eq!(local.len(), 3, "{local:?}");
    // Every snapshot, with the same verdicts and reasons as a local prune.
    assert_eq!(on_remote.len(), 3, "{on_remote:?}");
    let verdicts = |p: &[(String, String)]| -> Vec<String> {
        let mut v: Vec<String> = p.iter().map(|(verdict, _)| verdict.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(verdicts(&on_remote), verdicts(&local));
    assert!(
        on_remote
            .iter()
            .any(|(v, _)| v.starts_with("keep (") && v.contains("last")),
        "{on_remote:?}"
    );
    assert_eq!(
        on_remote.iter().filter(|(v, _)| v == "remove").count(),
        2,
        "{on_remote:?}"
    );
}
