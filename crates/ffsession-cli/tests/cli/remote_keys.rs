//! The remote's key (issue 38, item 6): one damaged object never loses a
//! remote. It keeps two copies of its key file, each machine that opened it
//! keeps a spare in its cache folder, and a copy from a machine that knows
//! the key puts intact copies back.

use std::fs;
use std::path::Path;

use crate::common::ok_output;
use crate::remote_prune::Machine;

/// The key files of a remote in a folder.
fn key_files(remote: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fs::read_dir(remote.join("keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn flip(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 0x01;
    fs::write(path, bytes).unwrap();
}

#[test]
fn a_damaged_key_file_loses_nothing_and_a_copy_repairs_it() {
    let a = Machine::new("laptop-a", 0, &[10, 11]);
    let remote = a.env.path().join("remote");
    let copy = || {
        let out = ok_output(
            a.cmd()
                .arg("--store")
                .arg(a.env.store_dir())
                .arg("copy")
                .arg("--to")
                .arg(&remote),
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    copy();
    assert_eq!(key_files(&remote).len(), 2, "two copies of the key");
    let list = |m: &Machine| {
        m.cmd()
            .arg("--store")
            .arg(&remote)
            .arg("list")
            .output()
            .unwrap()
    };

    // One copy damaged: any machine still opens the remote.
    flip(&key_files(&remote)[0]);
    let c = Machine::new("laptop-c", 30, &[]);
    let out = list(&c);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);

    // Every copy damaged: a machine that opened it before reads on with
    // its spare; a new one cannot.
    flip(&key_files(&remote)[1]);
    let out = list(&a);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new = Machine::new("laptop-d", 40, &[]);
    assert!(!list(&new).status.success());
    // The next copy from a machine that knows the key repairs it.
    let said = copy();
    assert!(said.contains("of the remote's key"), "{said}");
    let out = list(&new);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    // Nothing more to repair.
    assert!(!copy().contains("of the remote's key"));
}
