//! Remote stores in a local folder (the same code as every backend above the
//! `Backend` trait): copy, sync into a new store, byte-identical restores,
//! only missing objects travel, a wrong password writes nothing, a deleted
//! or flipped object is named by check and healed by the next copy, two
//! writers at once, prune under the lock. The real servers (SFTP, S3,
//! WebDAV) are in the CLI tests, started by `.ci/servers.sh`.

mod common;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use common::{flip_a_bit, recovery_source, DAY, NOW};
use ffsession::machine::Machine;
use ffsession::remote::{
    check_remote, copy_to_remote, open_backend, prune_remote, sync_from_remote, CopyProgress,
    CopyReport, KeyParams, Location, PruneOptions, Remote, RemoteError, RemoteOptions,
    RemotePruneReport, SyncReport,
};
use ffsession::store::Store;
use ffsession_gen::{generate, mozlz4, Spec};

const FAST: KeyParams = KeyParams { log_n: Some(4) };

fn session(seed: u64, bytes: usize) -> String {
    generate(&Spec {
        seed,
        last_update: NOW - 10_000 + seed,
        ..Spec::sized(bytes)
    })
}

fn add(store: &mut Store, json: &str, at: u64) {
    let source = recovery_source("default-release", mozlz4(json.as_bytes()), Some(at));
    store.add_snapshot(source, at).unwrap();
}

/// A store in `local/` of a temporary folder holding a snapshot of each
/// `(seed, bytes)` session, taken a millisecond apart from `NOW`, and a new
/// remote in `remote/` with `password`: the folder (removed when dropped),
/// the store, the remote's path and the remote.
fn local_and_remote(
    sessions: &[(u64, usize)],
    password: &str,
) -> (tempfile::TempDir, Store, PathBuf, Remote) {
    let tmp = tempfile::tempdir().unwrap();
    let mut local = Store::create_or_open(tmp.path().join("local")).unwrap();
    for (i, &(seed, bytes)) in sessions.iter().enumerate() {
        add(&mut local, &session(seed, bytes), NOW + i as u64);
    }
    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, password);
    (tmp, local, remote_dir, remote)
}

/// Copy `local` to `remote` as the machine labelled `host` at `NOW`,
/// healing nothing, without progress.
fn copy(local: &Store, remote: &Remote, host: &str) -> CopyReport {
    copy_to_remote(
        local,
        remote,
        &machine(host),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap()
}

/// A new store at `dir` and its first sync from `remote`.
fn sync_new(remote: &Remote, dir: &Path) -> (Store, SyncReport) {
    let mut store = Store::create_or_open(dir).unwrap();
    let report = sync_from_remote(remote, &mut store, &mut |_| {}).unwrap();
    (store, report)
}

/// Whether a check of `remote` that reads every object finds it clean.
fn is_clean(remote: &Remote) -> bool {
    check_remote(remote, true, &mut |_| {}).unwrap().is_clean()
}

/// Prune the snapshots `names` from `remote` under `by`'s exclusive lock.
fn prune(
    remote: &Remote,
    by: &Machine,
    names: &[String],
    options: PruneOptions,
) -> RemotePruneReport {
    let mut lock = remote.lock(true, by, NOW).unwrap();
    prune_remote(&mut lock, names, options).unwrap()
}

/// A machine whose identity follows from its label: the same label is the
/// same machine, in every test.
fn machine(label: &str) -> Machine {
    let hex: String = label.bytes().map(|b| format!("{b:02x}")).collect();
    Machine {
        id: format!("{hex:0<32}")[..32].to_owned(),
        label: label.to_owned(),
    }
}

/// Set the server's time of every lock to `ago_ms` before now (the folder
/// backend's server clock is the file system's).
fn age_locks(remote_dir: &Path, ago_ms: u64) {
    age_files(&remote_dir.join("locks"), ago_ms);
}

/// Set the server's time of every file under `dir` to `ago_ms` before now.
fn age_files(dir: &Path, ago_ms: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_millis(ago_ms);
    for f in files(dir) {
        fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
}

/// The remote in the folder `dir`, which must hold one.
fn open(dir: &Path, password: &str) -> Result<Remote, RemoteError> {
    let backend = open_backend(&Location::Folder(dir.into()), &RemoteOptions::default())?;
    Remote::open(backend, password)
}

/// The remote in the folder `dir`, made there (by `creator`) if the folder
/// holds none.
fn open_or_create(dir: &Path, password: &str, creator: &str) -> Result<Remote, RemoteError> {
    let backend = open_backend(&Location::Folder(dir.into()), &RemoteOptions::default())?;
    Ok(Remote::open_or_create(backend, password, FAST, creator)?.0)
}

fn create(dir: &Path, password: &str) -> Remote {
    open_or_create(dir, password, "test").unwrap()
}

/// Every snapshot's content, keyed by what it is (not its id).
fn contents(store: &Store) -> Vec<(u64, String, Vec<u8>)> {
    let mut out: Vec<_> = store
        .snapshots()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s.taken_at_ms,
                s.file_name.clone(),
                store.read_content(s.id).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// A copy's progress as a bar shows it: every object sent is counted
/// against a plan that already holds it ("23/21 objects" never shows).
#[derive(Default)]
struct Bar {
    planned: u64,
    sent: u64,
}

impl Bar {
    fn see(&mut self, p: CopyProgress) {
        match p {
            CopyProgress::Planned { objects } => {
                assert!(objects >= self.planned, "the plan shrank");
                self.planned = objects;
            }
            CopyProgress::Sent { .. } => {
                self.sent += 1;
                assert!(self.sent <= self.planned, "{}/{}", self.sent, self.planned);
            }
        }
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    ffsession_gen::files_under(dir)
}

#[test]
fn a_copy_syncs_back_byte_identical_and_only_missing_objects_travel() {
    let (tmp, mut local, remote_dir, remote) =
        local_and_remote(&[(1, 400_000), (2, 200_000)], "pw");
    let base = session(1, 400_000);

    let mut bar = Bar::default();
    let first = copy_to_remote(
        &local,
        &remote,
        &machine("laptop"),
        &HashSet::new(),
        NOW,
        &mut |p| bar.see(p),
    )
    .unwrap();
    assert_eq!(bar.sent, bar.planned);
    assert!(bar.sent > 10);
    assert_eq!(first.snapshots_sent, 2);
    assert!(first.chunks_sent > 10);
    let again = copy(&local, &remote, "laptop");
    assert_eq!(
        (again.snapshots_sent, again.chunks_sent, again.bytes_sent),
        (0, 0, 0)
    );
    assert_eq!(again.snapshots_present, 2);

    // One new snapshot that changes a little: a few chunks travel.
    let edited = base.replacen("https://", "https://changed.", 1);
    add(&mut local, &edited, NOW + 2);
    let third = copy(&local, &remote, "laptop");
    assert_eq!(third.snapshots_sent, 1);
    assert!(third.chunks_sent <= 4, "{third:?}");
    assert!(
        third.bytes_sent < first.bytes_sent / 10,
        "{third:?} vs {first:?}"
    );

    // No plaintext digest, URL or title on the remote.
    for f in files(&remote_dir) {
        let bytes = fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("https://"), "{}", f.display());
        for s in local.snapshots().unwrap() {
            assert!(!f.to_string_lossy().contains(&s.content_hash.to_hex()));
            assert!(!text.contains(&s.content_hash.to_hex()));
        }
    }

    // A new machine: sync into an empty store, same contents.
    let remote2 = open(&remote_dir, "pw").unwrap();
    let (mut fresh, r) = sync_new(&remote2, &tmp.path().join("cache"));
    assert_eq!(r.snapshots_new, 3);
    assert!(r.damaged.is_empty());
    assert_eq!(r.hosts.values().collect::<Vec<_>>(), ["laptop"; 3]);
    assert_eq!(contents(&fresh), contents(&local));
    // Each snapshot says what it added to the cache, as a backup does: the
    // first one all its chunks, the edited one only its few new ones, and
    // together the chunk files' bytes.
    let added: Vec<u64> = fresh
        .snapshots()
        .unwrap()
        .iter()
        .map(|s| s.stored_size)
        .collect();
    let on_disk: u64 = files(&tmp.path().join("cache").join("chunks"))
        .iter()
        .map(|f| fs::metadata(f).unwrap().len())
        .sum();
    assert_eq!(added.iter().sum::<u64>(), on_disk, "{added:?}");
    assert!(added.iter().filter(|&&n| n > 0).count() >= 2, "{added:?}");
    let r = sync_from_remote(&remote2, &mut fresh, &mut |_| {}).unwrap();
    assert_eq!(
        (r.snapshots_new, r.snapshots_known, r.chunks_fetched),
        (0, 3, 0)
    );
    // The tab index was built: search works on the cache.
    assert!(!fresh
        .search_tabs("example", ffsession::store::TimeRange::default(), 10)
        .unwrap()
        .is_empty());

    // Copying the synced store back sends nothing.
    let back = copy(&fresh, &remote2, "desktop");
    assert_eq!(back.snapshots_sent + back.chunks_sent, 0, "{back:?}");
    assert!(is_clean(&remote2));
}

#[test]
fn a_wrong_password_is_one_error_and_writes_nothing() {
    let (tmp, local, remote_dir, remote) = local_and_remote(&[(3, 100_000)], "right");
    copy(&local, &remote, "h");
    // Every file of the remote and what it holds.
    let on_remote = || -> Vec<_> {
        files(&remote_dir)
            .into_iter()
            .map(|f| (f.clone(), fs::read(&f).unwrap()))
            .collect()
    };
    let before = on_remote();
    match open(&remote_dir, "wrong") {
        Err(e @ RemoteError::WrongPassword { .. }) => {
            assert!(e.to_string().contains("wrong password"), "{e}");
            assert_eq!(e.hint(), Some(ffsession::Hint::WrongPassword));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        open_or_create(&remote_dir, "wrong", "t"),
        Err(RemoteError::WrongPassword { .. })
    ));
    assert_eq!(before, on_remote());
    // A folder that holds other files is not made a remote.
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("x"), b"x").unwrap();
    assert!(matches!(
        open_or_create(&other, "pw", "t"),
        Err(RemoteError::NotARemote { .. })
    ));
}

#[test]
fn check_names_a_snapshot_whose_object_was_deleted_or_flipped_and_copy_heals_it() {
    let (tmp, local, remote_dir, remote) = local_and_remote(&[(4, 300_000), (5, 300_000)], "pw");
    copy(&local, &remote, "h");
    let chunks: Vec<PathBuf> = files(&remote_dir.join("chunks"));
    assert!(chunks.len() > 20);

    // One chunk deleted, one flipped.
    fs::remove_file(&chunks[3]).unwrap();
    flip_a_bit(&chunks[7]);

    // Without --read-data: the deleted one is found by listing.
    let quick = check_remote(&remote, false, &mut |_| {}).unwrap();
    assert_eq!(quick.damaged_objects.len(), 1, "{quick:?}");
    let full = check_remote(&remote, true, &mut |_| {}).unwrap();
    assert_eq!(full.damaged_objects.len(), 2, "{full:?}");
    assert!(!full.damaged_snapshots.is_empty());
    for d in &full.damaged_snapshots {
        let r = d.record.as_ref().unwrap();
        assert_eq!(r.host, "h");
        assert_eq!(r.profile, "default-release");
    }
    // A sync skips what it cannot verify, and says which objects.
    let (mut fresh, r) = sync_new(&remote, &tmp.path().join("cache"));
    assert_eq!(r.damaged.len(), 2, "{r:?}");
    assert_eq!(
        r.snapshots_new as usize + full.damaged_snapshots.len(),
        2,
        "{r:?}"
    );

    // The next copy heals both: the deleted by listing, the flipped by name.
    let heal: HashSet<String> = full
        .damaged_objects
        .iter()
        .map(|o| o.name.clone())
        .collect();
    let mut bar = Bar::default();
    let c = copy_to_remote(&local, &remote, &machine("h"), &heal, NOW, &mut |p| {
        bar.see(p)
    })
    .unwrap();
    assert_eq!(c.healed, 2, "{c:?}");
    assert_eq!((bar.sent, bar.planned), (2, 2));
    assert!(is_clean(&remote));
    let r = sync_from_remote(&remote, &mut fresh, &mut |_| {}).unwrap();
    assert!(r.damaged.is_empty());
    assert_eq!(contents(&fresh), contents(&local));
}

#[test]
fn two_machines_copy_into_one_remote_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let remote_dir = tmp.path().join("remote");
    let shared = session(6, 300_000);
    let mut stores = Vec::new();
    for (i, name) in ["a", "b"].iter().enumerate() {
        let mut s = Store::create_or_open(tmp.path().join(name)).unwrap();
        add(&mut s, &shared, NOW + i as u64 * 1000);
        add(&mut s, &session(7 + i as u64, 300_000), NOW + 10 + i as u64);
        stores.push(s);
    }
    let mut all: Vec<_> = contents(&stores[0]);
    all.extend(contents(&stores[1]));
    all.sort();
    std::thread::scope(|scope| {
        for (i, s) in stores.into_iter().enumerate() {
            let dir = remote_dir.clone();
            scope.spawn(move || {
                let r = open_or_create(&dir, "pw", "t").unwrap();
                copy(&s, &r, ["a", "b"][i]);
            });
        }
    });
    let remote = open(&remote_dir, "pw").unwrap();
    assert_eq!(
        fs::read_dir(remote_dir.join("keys")).unwrap().count(),
        2,
        "the key and its copy"
    );
    assert!(is_clean(&remote));
    let (fresh, r) = sync_new(&remote, &tmp.path().join("cache"));
    assert_eq!(r.snapshots_new, 4);
    assert_eq!(contents(&fresh), all);
}

#[test]
fn prune_waits_for_writers_and_removes_unused_objects_a_margin_later_by_the_servers_clock() {
    let (tmp, local, remote_dir, remote) = local_and_remote(&[(9, 300_000), (10, 300_000)], "pw");
    copy(&local, &remote, "h");
    let before = files(&remote_dir.join("chunks")).len();
    let pruner = machine("pruner");

    // A copy holds its lock: prune refuses, whatever the clocks say (the
    // lock's own time is this machine's; staleness is the server's).
    let held = remote.lock(false, &machine("other"), NOW).unwrap();
    assert!(matches!(
        remote.lock(true, &pruner, NOW),
        Err(RemoteError::Locked { .. })
    ));
    // The server wrote it 2 stale periods ago: stale, ignored.
    age_locks(&remote_dir, 2 * ffsession::remote::LOCK_STALE_MS);
    let mut cache = Store::create_or_open(tmp.path().join("c")).unwrap();
    sync_from_remote(&remote, &mut cache, &mut |_| {}).unwrap();
    let oldest = {
        let infos = cache.snapshots().unwrap();
        let o = infos.iter().min_by_key(|s| s.taken_at_ms).unwrap();
        remote.snapshot_name(o)
    };
    // What an interrupted copy left: a temporary file, never listed.
    let fan = fs::read_dir(remote_dir.join("chunks"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let leftover = fan.join(".tmp-0123456789abcdef-leftover");
    fs::write(&leftover, b"torn").unwrap();
    let r = prune(&remote, &pruner, &[oldest], PruneOptions::default());
    drop(held);
    // The snapshot goes at once; what it alone used is only noted, and the
    // temporary file (the server wrote it just now) stays: a copy may still
    // be writing it.
    assert_eq!(r.snapshots_removed, 1);
    assert_eq!((r.chunks_removed, r.contents_removed), (0, 0), "{r:?}");
    assert!(
        r.unused_found > 5 && r.unused_kept == r.unused_found,
        "{r:?}"
    );
    assert_eq!(r.temporary_removed, 0);
    assert!(leftover.exists());
    assert_eq!(files(&remote_dir.join("chunks")).len(), before + 1);
    assert_eq!(files(&remote_dir.join("unused")).len(), 1);
    // A prune the next moment removes nothing more: the margin has not
    // passed on the server's clock.
    let again = prune(&remote, &pruner, &[], PruneOptions::default());
    assert_eq!(
        (again.chunks_removed, again.unused_found),
        (0, 0),
        "{again:?}"
    );
    assert_eq!(again.unused_kept, r.unused_kept);

    // A day and a half later by the server's clock: gone.
    age_files(&remote_dir, DAY + DAY / 2);
    let later = prune(&remote, &pruner, &[], PruneOptions::default());
    assert_eq!(
        later.chunks_removed,
        r.unused_kept - later.contents_removed - later.marks_removed
    );
    assert!(later.chunks_removed > 5, "{later:?}");
    assert_eq!(
        (later.unused_kept, later.temporary_removed),
        (0, 1),
        "{later:?}"
    );
    assert!(!leftover.exists());
    assert!(files(&remote_dir.join("chunks")).len() < before);
    assert!(files(&remote_dir.join("unused")).is_empty());
    assert!(is_clean(&remote));
    let (fresh, r) = sync_new(&remote, &tmp.path().join("cache"));
    assert_eq!(r.snapshots_new, 1);
    // A local copy made before the prune follows it.
    let r = sync_from_remote(&remote, &mut cache, &mut |_| {}).unwrap();
    assert_eq!((r.snapshots_gone, r.snapshots_known), (1, 1), "{r:?}");
    assert_eq!(contents(&cache), contents(&fresh));
}

#[test]
fn an_unused_object_a_snapshot_names_again_is_kept_and_its_time_starts_again() {
    let (tmp, local, remote_dir, remote) = local_and_remote(&[(21, 200_000)], "pw");
    let laptop = machine("laptop");
    copy(&local, &remote, "laptop");
    let name = remote.snapshot_name(&local.snapshots().unwrap()[0]);
    // Pruned: its objects are noted unused.
    let r = prune(&remote, &laptop, &[name], PruneOptions::default());
    assert!(r.unused_found > 0);
    // A copy sends the snapshot again: its record is new, its chunks and
    // content record were there (not sent again) and are named again.
    let c = copy(&local, &remote, "laptop");
    assert_eq!((c.snapshots_sent, c.chunks_sent), (1, 0), "{c:?}");
    // Long after, a prune removes nothing the snapshot needs, and drops the
    // finding.
    age_files(&remote_dir, 3 * DAY);
    let later = prune(&remote, &laptop, &[], PruneOptions::default());
    assert_eq!(
        (later.chunks_removed, later.contents_removed),
        (0, 0),
        "{later:?}"
    );
    assert!(files(&remote_dir.join("unused")).is_empty());
    assert!(is_clean(&remote));
    let (fresh, s) = sync_new(&remote, &tmp.path().join("fresh"));
    assert_eq!(s.snapshots_new, 1);
    assert_eq!(contents(&fresh), contents(&local));
}

#[test]
fn a_damaged_local_chunk_is_never_sent_and_skips_only_its_snapshots() {
    let (tmp, local, _remote_dir, remote) = local_and_remote(&[(11, 200_000), (12, 200_000)], "pw");
    let snaps = local.snapshots().unwrap();
    let victim = snaps.iter().find(|s| s.taken_at_ms == NOW).unwrap().clone();
    // A chunk only the first snapshot uses, flipped on disk.
    let other: HashSet<_> = local
        .snapshot_chunks(snaps.iter().find(|s| s.taken_at_ms == NOW + 1).unwrap().id)
        .unwrap()
        .into_iter()
        .map(|(d, _)| d)
        .collect();
    let (d, _) = local
        .snapshot_chunks(victim.id)
        .unwrap()
        .into_iter()
        .find(|(d, _)| !other.contains(d))
        .unwrap();
    let path = common::chunk_path(local.dir(), &d.to_hex());
    let mut bytes = fs::read(&path).unwrap();
    bytes[10] ^= 0x01;
    fs::write(&path, &bytes).unwrap();

    let r = copy(&local, &remote, "h");
    assert_eq!(r.snapshots_sent, 1, "{r:?}");
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    assert_eq!(r.skipped[0].0, victim.id);
    assert!(is_clean(&remote));
    let (_fresh, s) = sync_new(&remote, &tmp.path().join("cache"));
    assert_eq!(s.snapshots_new, 1);
    assert!(s.damaged.is_empty());
}

#[test]
fn archived_tabs_and_undo_points_travel_and_a_copys_prune_keeps_them() {
    use ffsession::store::{ArchivedTab, UndoAction, UndoPoint};
    let (tmp, mut local, remote_dir, remote) = local_and_remote(&[], "pw");
    for i in 0..4 {
        add(&mut local, &session(10 + i, 20_000), NOW + i * 60_000);
    }
    let ids: Vec<_> = local.snapshots().unwrap().iter().map(|s| s.id).collect();
    let (oldest, second) = (*ids.iter().min().unwrap(), ids[ids.len() - 2]);
    let tab = ArchivedTab {
        url: "https://archived.test/".into(),
        title: "Archived".into(),
        archived_at_ms: NOW,
        snapshot: oldest,
        reason: "old".into(),
        window: 1,
        last_accessed: Some(NOW - 1),
        position: Some(2),
    };
    local.record_archived(std::slice::from_ref(&tab)).unwrap();
    local
        .record_undo_point(&UndoPoint {
            made_at_ms: NOW + 5 * 60_000,
            profile: "default-release".into(),
            action: UndoAction::Restore,
            snapshots: vec![second],
            restored: Some(oldest),
            restored_content: None,
        })
        .unwrap();
    let first = copy(&local, &remote, "laptop");
    // The archive, the undo point, and where each of the 4 snapshots was taken.
    assert_eq!(first.marks_sent, 2 + 4, "{first:?}");
    let again = copy(&local, &remote, "laptop");
    assert_eq!((again.marks_sent, again.bytes_sent), (0, 0), "{again:?}");

    // A new machine's copy knows them, under its own ids, once.
    let mut cache = Store::create_or_open(tmp.path().join("cache")).unwrap();
    for _ in 0..2 {
        let report = sync_from_remote(&remote, &mut cache, &mut |_| {}).unwrap();
        assert!(report.damaged.is_empty(), "{report:?}");
    }
    let same = |id| {
        let info = local.snapshot(id).unwrap();
        cache
            .snapshots()
            .unwrap()
            .into_iter()
            .find(|s| s.content_hash == info.content_hash && s.taken_at_ms == info.taken_at_ms)
            .unwrap()
            .id
    };
    let archived = cache.archived_tabs().unwrap();
    assert_eq!(
        archived,
        [ArchivedTab {
            snapshot: same(oldest),
            ..tab
        }]
    );
    // Each snapshot says where it was taken: the machine and its id there.
    let origins = cache.origins().unwrap();
    for id in &ids {
        let there = origins.get(&same(*id)).unwrap();
        assert_eq!((there.host.as_str(), there.id), ("laptop", Some(*id)));
        assert_eq!(
            there.machine.as_deref(),
            Some(machine("laptop").id.as_str())
        );
    }
    let undo = cache.undo_points().unwrap();
    assert_eq!(undo.len(), 1, "{undo:?}");
    assert_eq!(undo[0].snapshots, [same(second)]);
    assert_eq!(undo[0].restored, Some(same(oldest)));

    // The strictest prune of the copy keeps them, as a local prune would.
    let none = common::keep_last(1);
    let (_, plan) =
        ffsession::prune::plan_store(&cache, &none, &jiff::tz::TimeZone::UTC, NOW + 60_000)
            .unwrap();
    let removed: Vec<_> = plan.removed().collect();
    assert_eq!(removed.len(), 1, "{plan:?}");
    assert!(!removed.contains(&same(oldest).0) && !removed.contains(&same(second).0));

    // Carried out on the remote, the removed snapshot's origin mark goes
    // with it; the archive, the undo point and the other origins stay.
    let gone = cache
        .snapshot(ffsession::store::SnapshotId(removed[0]))
        .unwrap();
    let name = remote.snapshot_name(&gone);
    let report = prune(
        &remote,
        &machine("laptop"),
        &[name],
        PruneOptions { keep_unused_ms: 0 },
    );
    assert_eq!(
        (report.snapshots_removed, report.marks_removed),
        (1, 1),
        "{report:?}"
    );
    let marks = fs::read_dir(remote_dir.join("marks")).unwrap().count();
    assert_eq!(marks, 2 + 3);
}

/// One chunk that does not read (a folder where its file should be) holds
/// up only the snapshot that needs it: it is left out, not imported, and
/// named as unreadable (not damaged); once the object reads again, the
/// next sync brings that snapshot in.
#[test]
fn a_chunk_that_does_not_read_holds_up_only_its_snapshot_until_it_reads() {
    let (tmp, mut local, remote_dir, remote) = local_and_remote(&[(21, 200_000)], "pw");
    copy(&local, &remote, "h");
    let before: HashSet<PathBuf> = files(&remote_dir.join("chunks")).into_iter().collect();
    add(&mut local, &session(22, 200_000), NOW + 1);
    copy(&local, &remote, "h");
    let mut only_second: Vec<PathBuf> = files(&remote_dir.join("chunks"))
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    only_second.sort();
    let bad = only_second[only_second.len() / 2].clone();
    let kept = fs::read(&bad).unwrap();
    fs::remove_file(&bad).unwrap();
    fs::create_dir(&bad).unwrap();

    let (mut fresh, r) = sync_new(&remote, &tmp.path().join("cache"));
    assert_eq!((r.snapshots_new, r.snapshots_left_out), (1, 1), "{r:?}");
    assert!(r.damaged.is_empty(), "{r:?}");
    let name = bad.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(r.unreadable.len(), 1, "{r:?}");
    assert!(r.unreadable[0].0.ends_with(&name), "{r:?}");
    let first: Vec<_> = contents(&fresh);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].0, NOW);

    // It reads again: the next sync brings the second snapshot in.
    fs::remove_dir(&bad).unwrap();
    fs::write(&bad, kept).unwrap();
    let r = sync_from_remote(&remote, &mut fresh, &mut |_| {}).unwrap();
    assert_eq!((r.snapshots_new, r.snapshots_known), (1, 1), "{r:?}");
    assert!(r.unreadable.is_empty(), "{r:?}");
    assert_eq!(contents(&fresh), contents(&local));
}
