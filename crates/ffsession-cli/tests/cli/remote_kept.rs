//! The remote's key kept on a machine (issue 47, item 1): after the
//! password opened a remote once, the next commands open it without the
//! password; a remote made again at that location does not take the kept
//! key; `remote forget` removes it; `keep_key = false` keeps none; and the
//! remote reads the same with the kept key as with the password.

use std::path::Path;

use crate::common::Run;
use crate::common::{ok_output, stderr, TestEnv};
use crate::remote_common::{day, password_cmd as cmd, PASSWORD};

fn backed_up(env: &TestEnv, tabs: usize, n: u64) {
    env.back_up_recovery(&crate::common::packed(tabs, day(n)));
}

fn copy(env: &TestEnv, remote: &Path, password: Option<&str>) -> std::process::Output {
    cmd(env, password)
        .arg("--store")
        .arg(env.store_dir())
        .arg("copy")
        .arg("--to")
        .arg(remote)
        .run()
}

fn kept_dir(env: &TestEnv) -> std::path::PathBuf {
    // The config folder (on Windows `...\\ffsession\\config`).
    ffsession::platform::Platform::CURRENT
        .config_dir(&env.folders())
        .join("remote-keys")
}

#[test]
fn a_kept_key_opens_its_remote_without_the_password_and_only_its_remote() {
    let env = TestEnv::new();
    backed_up(&env, 4, 0);
    let remote = env.path().join("remote");
    // The first copy needs the password; none is asked after it.
    assert!(!copy(&env, &remote, None).status.success());
    let first = copy(&env, &remote, Some(PASSWORD));
    assert!(first.status.success(), "{}", stderr(&first));
    backed_up(&env, 5, 1);
    let second = copy(&env, &remote, None);
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        String::from_utf8_lossy(&second.stdout).contains("copied 1 snapshot"),
        "{}",
        String::from_utf8_lossy(&second.stdout)
    );
    let list = |password| {
        cmd(&env, password)
            .args(["--store"])
            .arg(&remote)
            .args(["list", "--json"])
            .run()
    };
    let with_kept = list(None);
    assert!(with_kept.status.success(), "{}", stderr(&with_kept));
    // The remote read with the kept key is the remote read with the password,
    // by a machine that never opened it.
    let fresh = TestEnv::new();
    let with_password = ok_output(
        cmd(&fresh, Some(PASSWORD))
            .arg("--store")
            .arg(&remote)
            .args(["list", "--json"]),
    );
    let rows = |out: &std::process::Output| -> Vec<(String, u64)> {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut rows: Vec<(String, u64)> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["content_hash"].as_str().unwrap_or_default().to_owned(),
                    s["taken_at_ms"].as_u64().unwrap_or_default(),
                )
            })
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(rows(&with_kept).len(), 2);
    assert!(rows(&with_kept)
        .iter()
        .all(|(h, t)| h.len() == 64 && *t > 0));
    assert_eq!(rows(&with_kept), rows(&with_password));

    // Kept as a private key is: 0600 in a 0700 folder.
    let files: Vec<_> = std::fs::read_dir(kept_dir(&env))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&files[0]), 0o600);
        assert_eq!(mode(&kept_dir(&env)), 0o700);
    }

    // Another remote made at the same location (another password): the kept
    // key does not open it, the password is needed, and then kept anew.
    std::fs::remove_dir_all(&remote).unwrap();
    let other = TestEnv::new();
    backed_up(&other, 3, 5);
    let made = copy(&other, &remote, Some("another password"));
    assert!(made.status.success(), "{}", stderr(&made));
    let refused = list(None);
    assert!(!refused.status.success());
    let said = stderr(&refused);
    assert!(
        said.contains("does not open the remote there now") && said.contains("password"),
        "{said}"
    );
    let reopened = list(Some("another password"));
    assert!(reopened.status.success(), "{}", stderr(&reopened));
    assert!(list(None).status.success());

    // Forgotten: the password is asked again.
    let forgot = ok_output(cmd(&env, None).arg("remote").arg("forget").arg(&remote));
    assert!(String::from_utf8_lossy(&forgot.stdout).contains("forgot the key of"));
    assert!(!list(None).status.success());
    let keys = ok_output(cmd(&env, None).args(["remote", "keys"]));
    assert!(
        String::from_utf8_lossy(&keys.stdout).contains("no remote's key is kept here"),
        "{}",
        String::from_utf8_lossy(&keys.stdout)
    );
    // Forgetting what is not kept is an error that says so.
    let again = cmd(&env, None)
        .arg("remote")
        .arg("forget")
        .arg(&remote)
        .run();
    assert!(!again.status.success());
    assert!(stderr(&again).contains("no key of"), "{}", stderr(&again));
}

#[test]
fn keep_key_false_keeps_no_key() {
    let env = TestEnv::new();
    backed_up(&env, 4, 0);
    let remote = env.path().join("remote");
    let config = env.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[remotes.usb]\nlocation = {:?}\nkeep_key = false\n",
            remote.to_string_lossy()
        ),
    )
    .unwrap();
    let run = |password| {
        cmd(&env, password)
            .arg("--config")
            .arg(&config)
            .arg("--store")
            .arg(env.store_dir())
            .args(["copy", "--to", "usb"])
            .run()
    };
    let first = run(Some(PASSWORD));
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(!kept_dir(&env).exists() || std::fs::read_dir(kept_dir(&env)).unwrap().count() == 0);
    assert!(!run(None).status.success());
}
