//! Reaching outside its folders: links in the store, links and foreign files
//! in the profile, names that would write to the terminal, and the store's
//! small hygiene (modes, orphan chunks, a store without its catalog).
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};

use crate::common::{packed, stderr, TestEnv};

const NOW: u64 = 1_795_400_000_000;

#[test]
fn a_linked_lock_in_the_store_is_refused_and_check_names_it() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(5, NOW));
    let victim = env.write("victim.txt", b"precious\n");
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
    let lock = env.store_dir().join("lock");
    fs::remove_file(&lock).unwrap();
    symlink(&victim, &lock).unwrap();

    let out = env.store_cmd(&profile).arg("backup").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&*lock.to_string_lossy()) && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        fs::metadata(&victim).unwrap().permissions().mode() & 0o777,
        0o644
    );

    let out = env.store_cmd(&profile).arg("check").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{text}{}", stderr(&out));
    assert!(
        text.contains(&format!(
            "error: {}: the lock is a symbolic link",
            lock.display()
        )),
        "{text}"
    );
    // Reading needs no lock.
    let list = env.store_cmd(&profile).arg("list").output().unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
}
