//! The remote's key (issue 38, item 6): one damaged object never loses a
//! remote. It keeps two copies of its key file, each machine that opened it
//! keeps a spare in its cache folder, and a copy from a machine that knows
//! the key puts intact copies back. Two machines creating one remote at
//! the same moment agree on one key (item 2).

use std::fs;
use std::path::Path;

use crate::common::ok_output;
use crate::common::Run;
use crate::remote_common::Machine;

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
        let out = ok_output(&mut a.copy_to(&remote));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    copy();
    assert_eq!(key_files(&remote).len(), 2, "two copies of the key");
    let list = |m: &Machine| m.on(&remote).arg("list").run();
    // `list` from `m`, which must succeed: what it printed.
    let lists = |m: &Machine| {
        let out = list(m);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    // One copy damaged: any machine still opens the remote.
    flip(&key_files(&remote)[0]);
    let c = Machine::new("laptop-c", 30, &[]);
    assert_eq!(lists(&c).lines().count(), 2);

    // Every copy damaged: a machine that opened it before reads on with
    // its spare; a new one cannot.
    flip(&key_files(&remote)[1]);
    lists(&a);
    let new = Machine::new("laptop-d", 40, &[]);
    assert!(!list(&new).status.success());
    // The next copy from a machine that knows the key repairs it.
    let said = copy();
    assert!(said.contains("of the remote's key"), "{said}");
    assert_eq!(lists(&new).lines().count(), 2);
    // Nothing more to repair.
    assert!(!copy().contains("of the remote's key"));
}

/// Two machines creating one new remote at the same moment (issue 38,
/// item 2), against the real servers: two `copy` processes started
/// together at a fresh location, several rounds on each service (SFTP: an
/// exclusive hard link of the first key; WebDAV and S3: each writes a key,
/// and the one the server stored first wins). Both succeed, only one
/// says it created the remote, the key files there are copies of one key,
/// and a third machine restores every snapshot of both byte-identical.
#[test]
fn two_machines_creating_one_remote_at_once_agree_on_one_key() {
    use crate::remote_common::{servers, Kind};
    let Some(_servers) = servers() else { return };
    let (a, b, all) = racers();
    let mut kinds = vec![Kind::WebDav, Kind::S3];
    if cfg!(unix) {
        kinds.insert(0, Kind::Sftp);
    }
    for kind in kinds {
        for round in 0..3 {
            create_at_once(kind, &format!("round {round}"), &a, &b, &all, None);
        }
    }
}

/// The same, where the machine whose clock named its key first has it
/// stored last (its first write held back 4 s: a slow link, a loaded
/// server): the other machine, listing before that key arrives, keeps its
/// own, so the late one must take the key stored first, not the one named
/// first by a clock. Before, both said they created the remote, each with
/// a key of its own, and the late one's snapshots could be read by no
/// other machine.
#[test]
fn a_key_stored_late_loses_to_the_one_stored_first_whatever_its_name() {
    use crate::remote_common::{servers, Kind};
    let Some(_servers) = servers() else { return };
    let (a, b, all) = racers();
    for kind in [Kind::WebDav, Kind::S3] {
        create_at_once(kind, "late key", &a, &b, &all, Some(4000));
    }
}

/// Two machines, each with snapshots of its own, and every session of both.
fn racers() -> (Machine, Machine, Vec<String>) {
    use crate::remote_common::backed_up_jsons;
    let a = Machine::new("race-a", 0, &[10, 11]);
    let b = Machine::new("race-b", 10, &[20]);
    let mut all = backed_up_jsons(&a.env);
    all.extend(backed_up_jsons(&b.env));
    (a, b, all)
}

/// `a` and `b` copy to one new location of `kind` at once (`a` first, its
/// first write held back `a_late` ms, and `b` 300 ms after it when given);
/// exactly one says it created the remote, the key files are copies of
/// one key, and every session of both restores.
fn create_at_once(
    kind: crate::remote_common::Kind,
    what: &str,
    a: &Machine,
    b: &Machine,
    all: &[String],
    a_late: Option<u64>,
) {
    use crate::remote_common::assert_remote_restores;
    #[cfg(unix)]
    use crate::remote_common::Kind;
    let loc = crate::remote_common::location(kind, &a.env);
    let copies: Vec<_> = [a, b]
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut c = m.server_cmd();
            c.arg("--profile")
                .arg(&m.profile)
                .arg("--store")
                .arg(m.env.store_dir())
                .args(["copy", "--to", &loc])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped());
            if let Some(ms) = a_late {
                if i == 0 {
                    c.env("FFSESSION_TEST_REMOTE_FIRST_WRITE_DELAY_MS", ms.to_string());
                } else {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                }
            }
            c.spawn().unwrap()
        })
        .collect();
    let mut created = 0;
    for child in copies {
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{kind:?} {what}: {err}");
        created += err.matches("created a remote store").count();
    }
    assert_eq!(created, 1, "{kind:?} {what}: said created {created} times");
    // The key files on the server's disk (Unix: the folders the servers
    // serve): copies of one key file.
    #[cfg(unix)]
    let keys = match kind {
        Kind::Sftp => Some(crate::remote_common::sftp_dir(&loc).join("keys")),
        Kind::WebDav => Some(crate::remote_common::webdav_dir(&loc).join("keys")),
        _ => None,
    };
    #[cfg(not(unix))]
    let keys: Option<std::path::PathBuf> = None;
    if let Some(keys) = keys {
        let files: Vec<Vec<u8>> = fs::read_dir(&keys)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .map(|p| fs::read(p).unwrap())
            .collect();
        assert!(
            files.len() >= 2,
            "{kind:?} {what}: {} key files",
            files.len()
        );
        assert!(
            files.iter().all(|f| *f == files[0]),
            "{kind:?} {what}: {} key files, not all one key",
            files.len()
        );
    }
    assert_remote_restores(&loc, all);
}
