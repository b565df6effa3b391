//! Remote stores against real servers on 127.0.0.1 (OpenSSH's sshd, Garage,
//! rclone's WebDAV), started by `.ci/servers.sh`, which `.ci/run` sources:
//! copy, `--store LOCATION` for list and restore, a wrong password, a full
//! remote, objects deleted and flipped, a copy killed at 50+ points and the
//! server killed mid-copy, two machines at once. After each, every snapshot
//! listed restores byte-identical. What these tests share with the other
//! remote tests is in `remote_common.rs`.

use std::fs;
use std::path::Path;

use ffsession_gen::Spec;

use crate::common::{
    keep_only_last, ok_json, ok_output, ok_stdout, session, session_of, stderr, Run, TestEnv,
};
#[cfg(target_os = "linux")]
use crate::remote_common::webdav_dir;
use crate::remote_common::{
    assert_remote_restores, backed_up, backed_up_jsons, cmd, copy, location, prepared, servers,
    std_store_cmd, store_cmd, unique, Kind,
};
#[cfg(unix)]
use crate::remote_common::{
    copied, is_temporary, kill_sshd, servers_alone, sftp_dir, start_sshd, var,
};

fn round_trip(kind: Kind) {
    let Some(_servers) = servers() else { return };
    let (env, profile, mut jsons, loc) = prepared(kind, 2, 300_000);
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
        let out = ok_output(
            cmd(&fresh)
                .args(["--store", &loc, "prune"])
                .args(keep_only_last(1)),
        );
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
    {
        let Some(servers) = servers() else { return };
        let (env, profile, _, loc) = prepared(Kind::WebDavs, 1, 10_000);
        let no_ca = env.path().join("no-ca.pem");
        fs::write(&no_ca, "").unwrap();
        // The server's own certificate as the only one trusted: not the CA
        // that issued it.
        let other = servers.dir.join("tls.pem");
        for (trusted, says) in [(&other, "UnknownIssuer"), (&no_ca, "CA certificates")] {
            let out = store_cmd(&env, &profile)
                .env("SSL_CERT_FILE", trusted)
                .args(["copy", "--to", &loc])
                .run();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(&loc) && err.contains(says), "{err}");
            let written = webdav_dir(&loc);
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
        .store_cmd(&profile)
        .env("FFSESSION_PASSWORD", "pw")
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
    let Some(_servers) = servers() else { return };
    let (env, profile, _, loc) = copied(Kind::Sftp, 1, 100_000);
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
    let Some(_servers) = servers() else { return };
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
    let out = store_cmd(&env, &profile).args(["copy", "--to", &loc]).run();
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
    let Some(_servers) = servers() else { return };
    let (env, profile, jsons, loc) = copied(Kind::Sftp, 2, 300_000);
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
    let Some(_servers) = servers() else { return };
    // SFTP is Unix-only (ffsession speaks it through OpenSSH's `ssh`).
    let kinds: &[Kind] = if cfg!(unix) {
        &[Kind::Sftp, Kind::S3]
    } else {
        &[Kind::S3]
    };
    for &kind in kinds {
        let (env, profile, jsons, loc) = prepared(kind, 2, 200_000);
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
            let out = std_store_cmd(&env, &profile)
                .args(["copy", "--json", "--to", &loc])
                .env("FFSESSION_TEST_REMOTE_KILL_AFTER_WRITES", n.to_string())
                .run();
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
                .filter(|p| is_temporary(p))
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
        assert_remote_restores(&loc, &jsons);
    }
}

// SFTP is Unix-only (ffsession speaks it through OpenSSH's `ssh`), and
// the test reads or kills the server's side directly.
#[cfg(unix)]
#[test]
fn remote_server_killed_mid_copy_then_the_next_copy_finishes() {
    let Some(_servers) = servers_alone() else {
        return;
    };
    let (env, profile, _, loc) = copied(Kind::Sftp, 1, 100_000);
    let (_, _) = backed_up(&env, 3, 300_000);
    let jsons = backed_up_jsons(&env);
    let mut interrupted = 0;
    for round in 0..3u64 {
        let mut c = std_store_cmd(&env, &profile);
        c.args(["copy", "--to", &loc])
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

#[test]
fn remote_two_machines_copy_at_once() {
    let Some(_servers) = servers() else { return };
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
            std_store_cmd(env, profile)
                .arg("--config")
                .arg(&config)
                .args(["copy", "--to", &loc])
                .spawn()
                .unwrap()
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
    let (usb, config) = env.watch_remotes_config();
    let g = |tabs: usize| {
        session(Spec {
            tabs,
            last_update: 1_795_300_000_000 + tabs as u64,
            ..Spec::default()
        })
    };
    let profile = env.profile_with_recovery(&g(5).packed);
    let mut child = env
        .watch_cmd(&profile)
        .env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
        .arg("--config")
        .arg(&config)
        .spawn()
        .unwrap();
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
    for tabs in [6, 7] {
        crate::common::replace_recovery(&profile, &g(tabs).packed);
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
    let old = session_of(4, 1_795_300_000_000);
    let profile = env.back_up_recovery(&old.packed);
    let usb = env.path().join("usb");
    env.copy_to_folder(&profile, &usb, "pw");
    // The profile moves on; then the remote's session is restored into it.
    let newer = session_of(9, 1_795_400_000_000);
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
