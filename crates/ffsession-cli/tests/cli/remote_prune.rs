//! `prune` on a remote store (a local folder: no server needed) shows its
//! plan as a local prune does: every snapshot, kept or removed, and why.

use std::path::Path;

use assert_cmd::Command;

use crate::common::Run;
use crate::common::{keep_only_last, ok_output, packed, undo_id, TestEnv};
use crate::remote_common::{day, password_cmd, Machine, PASSWORD};

/// `ffsession` with the remote's password (and quick key stretching).
fn cmd(env: &TestEnv) -> Command {
    password_cmd(env, Some(PASSWORD))
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
    let mut policy = vec!["prune".to_owned(), "--dry-run".to_owned()];
    policy.extend(keep_only_last(1));
    let local = ok_output(env.store_cmd(&profile).args(&policy));
    let on_remote = ok_output(cmd(&env).arg("--store").arg(&remote).args(&policy));
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

/// A session of 30 tabs, every other one last used 90 days ago.
fn aged_session() -> Vec<u8> {
    use serde_json::{json, Value};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut v: Value =
        serde_json::from_str(&ffsession_gen::generate(&ffsession_gen::Spec::default())).unwrap();
    for w in v["windows"].as_array_mut().unwrap() {
        let selected = w["selected"].as_u64().unwrap_or(1) as usize;
        for (i, t) in w["tabs"].as_array_mut().unwrap().iter_mut().enumerate() {
            let old = i % 2 == 1 && i + 1 != selected;
            t["lastAccessed"] = json!(now - if old { 90 } else { 1 } * 86_400_000);
            t["pinned"] = json!(false);
        }
    }
    ffsession_gen::mozlz4(serde_json::to_string(&v).unwrap().as_bytes())
}

#[test]
fn a_copy_on_a_new_machine_knows_archived_tabs_undo_points_and_where_each_snapshot_came_from() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[("sessionstore.jsonlz4", &aged_session())]);
    let store = |c: &mut Command| {
        c.arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(env.store_dir());
    };
    let mut tidy = cmd(&env);
    store(&mut tidy);
    let done =
        String::from_utf8(ok_output(tidy.args(["tidy", "--archive-older-than", "30d"])).stdout)
            .unwrap();
    let undo = undo_id(&done);
    let mut local_archived = cmd(&env);
    store(&mut local_archived);
    let local_archived: serde_json::Value = serde_json::from_slice(
        &ok_output(local_archived.args(["tabs", "--archived", "--json"])).stdout,
    )
    .unwrap();
    let remote = env.path().join("remote");
    let mut copy = cmd(&env);
    store(&mut copy);
    ok_output(copy.arg("copy").arg("--to").arg(&remote));

    // A new machine: no profile, no store of its own.
    let fresh = TestEnv::new();
    let loc = remote.to_str().unwrap();
    let archived: serde_json::Value = serde_json::from_slice(
        &ok_output(cmd(&fresh).args(["--store", loc, "tabs", "--archived", "--json"])).stdout,
    )
    .unwrap();
    let urls = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t["url"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!urls(&local_archived).is_empty());
    assert_eq!(urls(&archived), urls(&local_archived));
    // Each snapshot says where it came from, with its id there.
    let list =
        String::from_utf8(ok_output(cmd(&fresh).args(["--store", loc, "list"])).stdout).unwrap();
    assert!(list.contains(&format!(" #{undo}]")), "{list}");
    assert!(list.lines().all(|l| l.contains("  [")), "{list}");
    // The strictest prune of the remote keeps the tidy's undo point.
    let out = ok_output(
        cmd(&fresh)
            .args(["--store", loc, "prune", "--dry-run"])
            .args(keep_only_last(0)),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("keep (")
            && l.contains("holds archived tabs")
            && l.contains("undo point")),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("remove")), "{text}");
}

/// Two laptops copy their profiles of one name to one remote (issue
/// 38, item 3 and 9): a prune of the remote keeps each one's newest
/// sessions, and `restore latest` from it takes this machine's newest
/// unless told otherwise; `list` says whose each snapshot is.
#[test]
fn two_laptops_sharing_a_remote_each_keep_and_restore_their_own_newest_session() {
    // Laptop A's sessions are older than all of laptop B's.
    let a = Machine::new("laptop-a", 0, &[10, 11, 12, 13]);
    let b = Machine::new("laptop-b", 10, &[20, 21, 22, 23]);
    let remote = a.env.path().join("remote");
    for m in [&a, &b] {
        ok_output(&mut m.copy_to(&remote));
    }
    let on_remote = |m: &Machine| m.on(&remote);
    let list = String::from_utf8(ok_output(on_remote(&a).arg("list")).stdout).unwrap();
    assert_eq!(list.lines().count(), 8, "{list}");
    assert_eq!(
        list.lines()
            .filter(|l| l.contains("[profile on laptop-b #"))
            .count(),
        4,
        "{list}"
    );
    // restore latest: this machine's newest, though the other's is newer.
    let restore = |m: &Machine, extra: &[&str]| restore_latest(on_remote(m), extra);
    let text = restore(&a, &[]);
    assert!(
        text.contains("13 tabs") && !text.contains("23 tabs"),
        "{text}"
    );
    let text = restore(&a, &["--any-machine"]);
    assert!(text.contains("23 tabs"), "{text}");
    let text = restore(&a, &["--from-machine", "laptop-b"]);
    assert!(text.contains("23 tabs"), "{text}");
    assert!(restore(&b, &[]).contains("23 tabs"));
    // A new machine is told whose snapshots there are.
    let c = Machine::new("laptop-c", 30, &[]);
    let text = restore(&c, &[]);
    assert!(
        text.contains("no snapshot of this machine (laptop-c ")
            && text.contains("its snapshots come from ")
            && ["laptop-a (", "laptop-b ("].iter().all(|m| {
                text.split(m)
                    .nth(1)
                    .is_some_and(|rest| rest.split(')').nth(1) == Some(" (4"))
            })
            && text.contains("--from-machine"),
        "{text}"
    );
    // The strictest prune, from laptop B, keeps each laptop's newest.
    ok_output(on_remote(&b).arg("prune").args(keep_only_last(1)));
    let left: serde_json::Value =
        serde_json::from_slice(&ok_output(on_remote(&a).args(["list", "--json"])).stdout).unwrap();
    assert_eq!(tab_counts(&left), [13, 23], "{left}");
}

/// The tab counts of the snapshots of `list` (a `list --json`), sorted.
fn tab_counts(list: &serde_json::Value) -> Vec<u64> {
    let mut tabs: Vec<u64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["counts"]["tabs"].as_u64().unwrap())
        .collect();
    tabs.sort_unstable();
    tabs
}

/// Replace `dir` with a copy of `from` (a remote's folder put back from an
/// older copy).
fn put_back(from: &Path, dir: &Path) {
    std::fs::remove_dir_all(dir).unwrap();
    crate::common::copy_tree(from, dir);
}

/// The records of a remote rolled back to an older copy, or emptied (issue
/// 38, item 4): a reader that saw a snapshot never forgets it for that,
/// says so, and `check` names what went missing; only a prune's pruned
/// records make a reader forget; a copy from the machine that has them
/// heals the remote.
#[test]
fn a_rolled_back_remote_loses_no_snapshot_a_reader_has_seen() {
    let a = Machine::new("laptop-a", 0, &[10, 11]);
    let remote = a.env.path().join("remote");
    let copy = |m: &Machine| ok_output(&mut m.copy_to(&remote));
    copy(&a);
    let old_records = a.env.path().join("old-records");
    crate::common::copy_tree(&remote.join("snapshots"), &old_records);
    // Two more sessions, copied; a reader (another laptop) sees all four.
    for (i, tabs) in [12usize, 13].iter().enumerate() {
        a.back_up(&packed(*tabs, day(5 + i as u64)));
    }
    copy(&a);
    let reader = Machine::new("laptop-b", 20, &[]);
    let on_remote = |m: &Machine| m.on(&remote);
    let tabs = |m: &Machine| -> Vec<u64> {
        let out = ok_output(on_remote(m).args(["list", "--json"]));
        tab_counts(&serde_json::from_slice(&out.stdout).unwrap())
    };
    assert_eq!(tabs(&reader), [10, 11, 12, 13]);

    // Rolled back: the records of the first copy put back.
    put_back(&old_records, &remote.join("snapshots"));
    let out = ok_output(on_remote(&reader).args(["list", "--json"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("2 snapshots this machine's copy holds")
            && err.contains("no prune removed them"),
        "{err}"
    );
    assert_eq!(tabs(&reader), [10, 11, 12, 13]);
    // Laptop A's newest.
    let text = restore_latest(on_remote(&reader), &["--from-machine", "laptop-a"]);
    assert!(text.contains("13 tabs"), "{text}");
    let check = on_remote(&reader).arg("check").run();
    let said = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(5), "{said}");
    assert_eq!(said.matches("missing snapshot (#").count(), 2, "{said}");
    assert!(said.contains("13 tabs"), "{said}");
    // The machine that took them sends them again; the remote is whole.
    copy(&a);
    let check = on_remote(&reader).arg("check").run();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    // Emptied: every record gone; the reader keeps all four.
    std::fs::remove_dir_all(remote.join("snapshots")).unwrap();
    std::fs::create_dir(remote.join("snapshots")).unwrap();
    assert_eq!(tabs(&reader), [10, 11, 12, 13]);
    copy(&a);

    // A prune is believed: another reader that saw all four forgets what
    // it removed.
    let other = Machine::new("laptop-c", 30, &[]);
    assert_eq!(tabs(&other), [10, 11, 12, 13]);
    ok_output(on_remote(&reader).arg("prune").args(keep_only_last(1)));
    assert_eq!(tabs(&other), [13]);
    assert_eq!(tabs(&reader), [13]);
}

/// `restore latest --dry-run` by `c` with the options `extra`, and what it
/// said (stdout, then stderr).
fn restore_latest(mut c: Command, extra: &[&str]) -> String {
    let out = c.args(["restore", "latest", "--dry-run"]).args(extra).run();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Damage any machine's check finds, the next copy of any machine that has
/// the data sends again, in one round (issue 38, item 7).
#[test]
fn damage_a_third_machine_found_is_healed_by_the_next_copy_of_the_source() {
    let a = Machine::new("laptop-a", 0, &[10, 11, 12]);
    let remote = a.env.path().join("remote");
    let copy = || {
        let out = ok_output(a.copy_to(&remote).arg("--json"));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    copy();
    // One chunk on the remote gets a flipped byte.
    let chunk = walk(&remote.join("chunks"))
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&chunk).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&chunk, bytes).unwrap();
    // A third machine's check finds it.
    let c = Machine::new("nas-checker", 30, &[]);
    let check = |m: &Machine| m.on(&remote).args(["check", "--read-data"]).run();
    let found = check(&c);
    assert_eq!(
        found.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&found.stdout)
    );
    // The source's next copy sends it again; the checker then finds none.
    let report = copy();
    assert!(report["healed"].as_u64().unwrap() >= 1, "{report}");
    let again = check(&c);
    assert!(
        again.status.success(),
        "{}{}",
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr)
    );
    // Nothing left to heal: the note is gone.
    assert_eq!(copy()["healed"], 0);
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
