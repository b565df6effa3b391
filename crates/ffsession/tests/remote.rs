//! Remote stores in a local folder (the same code as every backend above the
//! `Backend` trait): copy, sync into a new store, byte-identical restores,
//! only missing objects travel, a wrong password writes nothing, a deleted
//! or flipped object is named by check and healed by the next copy, two
//! writers at once, prune under the lock. The real servers (SFTP, S3,
//! WebDAV) are in the CLI tests, started by `.ci/servers.sh`.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use ffsession::machine::Machine;
use ffsession::remote::{
    check_remote, copy_to_remote, open_backend, prune_remote, sync_from_remote, CopyProgress,
    KeyParams, Location, PruneOptions, Remote, RemoteError, RemoteOptions,
};
use ffsession::sources::SourceKind;
use ffsession::store::{SnapshotSource, Store};
use ffsession_gen::{generate, mozlz4, Spec};

const NOW: u64 = 1_795_400_000_000;
const FAST: KeyParams = KeyParams { log_n: Some(4) };

fn session(seed: u64, bytes: usize) -> String {
    generate(&Spec {
        seed,
        last_update: NOW - 10_000 + seed,
        ..Spec::sized(bytes)
    })
}

fn add(store: &mut Store, json: &str, at: u64) {
    store
        .add_snapshot(
            SnapshotSource {
                bytes: mozlz4(json.as_bytes()),
                profile: "default-release".into(),
                file_name: "sessionstore-backups/recovery.jsonlz4".into(),
                kind: SourceKind::Recovery,
                mtime_ms: Some(at),
            },
            at,
        )
        .unwrap();
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
    let when = std::time::SystemTime::now() - std::time::Duration::from_millis(ago_ms);
    for f in files(&remote_dir.join("locks")) {
        fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
}

fn open(dir: &Path, password: &str) -> Result<Remote, RemoteError> {
    let backend = open_backend(&Location::Folder(dir.into()), &RemoteOptions::default())?;
    Remote::open(backend, password)
}

fn create(dir: &Path, password: &str) -> Remote {
    let backend = open_backend(&Location::Folder(dir.into()), &RemoteOptions::default()).unwrap();
    Remote::open_or_create(backend, password, FAST, "test")
        .unwrap()
        .0
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
    let tmp = tempfile::tempdir().unwrap();
    let mut local = Store::create_or_open(tmp.path().join("local")).unwrap();
    let base = session(1, 400_000);
    add(&mut local, &base, NOW);
    add(&mut local, &session(2, 200_000), NOW + 1);
    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, "pw");

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
    let again = copy_to_remote(
        &local,
        &remote,
        &machine("laptop"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        (again.snapshots_sent, again.chunks_sent, again.bytes_sent),
        (0, 0, 0)
    );
    assert_eq!(again.snapshots_present, 2);

    // One new snapshot that changes a little: a few chunks travel.
    let edited = base.replacen("https://", "https://changed.", 1);
    add(&mut local, &edited, NOW + 2);
    let third = copy_to_remote(
        &local,
        &remote,
        &machine("laptop"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
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
    let mut fresh = Store::create_or_open(tmp.path().join("cache")).unwrap();
    let remote2 = open(&remote_dir, "pw").unwrap();
    let r = sync_from_remote(&remote2, &mut fresh, &mut |_| {}).unwrap();
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
    let back = copy_to_remote(
        &fresh,
        &remote2,
        &machine("desktop"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(back.snapshots_sent + back.chunks_sent, 0, "{back:?}");
    assert!(check_remote(&remote2, true, &mut |_| {})
        .unwrap()
        .is_clean());
}

#[test]
fn a_wrong_password_is_one_error_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut local = Store::create_or_open(tmp.path().join("local")).unwrap();
    add(&mut local, &session(3, 100_000), NOW);
    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, "right");
    copy_to_remote(
        &local,
        &remote,
        &machine("h"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
    let before: Vec<_> = files(&remote_dir)
        .into_iter()
        .map(|f| (f.clone(), fs::read(&f).unwrap()))
        .collect();
    match open(&remote_dir, "wrong") {
        Err(e @ RemoteError::WrongPassword { .. }) => {
            assert!(e.to_string().contains("wrong password"), "{e}");
            assert!(e.hint().unwrap().contains("nothing was written"));
        }
        other => panic!("{other:?}"),
    }
    let backend = open_backend(
        &Location::Folder(remote_dir.clone()),
        &RemoteOptions::default(),
    )
    .unwrap();
    assert!(matches!(
        Remote::open_or_create(backend, "wrong", FAST, "t"),
        Err(RemoteError::WrongPassword { .. })
    ));
    let after: Vec<_> = files(&remote_dir)
        .into_iter()
        .map(|f| (f.clone(), fs::read(&f).unwrap()))
        .collect();
    assert_eq!(before, after);
    // A folder that holds other files is not made a remote.
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("x"), b"x").unwrap();
    let backend = open_backend(&Location::Folder(other), &RemoteOptions::default()).unwrap();
    assert!(matches!(
        Remote::open_or_create(backend, "pw", FAST, "t"),
        Err(RemoteError::NotARemote { .. })
    ));
}

#[test]
fn check_names_a_snapshot_whose_object_was_deleted_or_flipped_and_copy_heals_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut local = Store::create_or_open(tmp.path().join("local")).unwrap();
    add(&mut local, &session(4, 300_000), NOW);
    add(&mut local, &session(5, 300_000), NOW + 1);
    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, "pw");
    copy_to_remote(
        &local,
        &remote,
        &machine("h"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
    let chunks: Vec<PathBuf> = files(&remote_dir.join("chunks"));
    assert!(chunks.len() > 20);

    // One chunk deleted, one flipped.
    fs::remove_file(&chunks[3]).unwrap();
    let mut bytes = fs::read(&chunks[7]).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    fs::write(&chunks[7], &bytes).unwrap();

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
    let mut fresh = Store::create_or_open(tmp.path().join("cache")).unwrap();
    let r = sync_from_remote(&remote, &mut fresh, &mut |_| {}).unwrap();
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
    assert!(check_remote(&remote, true, &mut |_| {}).unwrap().is_clean());
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
                let backend =
                    open_backend(&Location::Folder(dir), &RemoteOptions::default()).unwrap();
                let (r, _) = Remote::open_or_create(backend, "pw", FAST, "t").unwrap();
                copy_to_remote(
                    &s,
                    &r,
                    &machine(["a", "b"][i]),
                    &HashSet::new(),
                    NOW,
                    &mut |_| {},
                )
                .unwrap();
            });
        }
    });
    let remote = open(&remote_dir, "pw").unwrap();
    assert_eq!(
        fs::read_dir(remote_dir.join("keys")).unwrap().count(),
        2,
        "the key and its copy"
    );
    assert!(check_remote(&remote, true, &mut |_| {}).unwrap().is_clean());
    let mut fresh = Store::create_or_open(tmp.path().join("cache")).unwrap();
    let r = sync_from_remote(&remote, &mut fresh, &mut |_| {}).unwrap();
    assert_eq!(r.snapshots_new, 4);
    assert_eq!(contents(&fresh), all);
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

#[test]
fn prune_waits_for_writers_and_removes_unused_objects_a_margin_later_by_the_servers_clock() {
    const DAY: u64 = 24 * 3_600_000;
    let tmp = tempfile::tempdir().unwrap();
    let mut local = Store::create_or_open(tmp.path().join("local")).unwrap();
    add(&mut local, &session(9, 300_000), NOW);
    add(&mut local, &session(10, 300_000), NOW + 1);
    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, "pw");
    copy_to_remote(
        &local,
        &remote,
        &machine("h"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
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
    let mut lock = remote.lock(true, &pruner, NOW).unwrap();
    let r = prune_remote(&mut lock, &[oldest], PruneOptions::default()).unwrap();
    drop(lock);
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
    let mut lock = remote.lock(true, &pruner, NOW).unwrap();
    let again = prune_remote(&mut lock, &[], PruneOptions::default()).unwrap();
    drop(lock);
    assert_eq!(
        (again.chunks_removed, again.unused_found),
        (0, 0),
        "{again:?}"
    );
    assert_eq!(again.unused_kept, r.unused_kept);

    // A day and a half later by the server's clock: gone.
    age_files(&remote_dir, DAY + DAY / 2);
    let mut lock = remote.lock(true, &pruner, NOW).unwrap();
    let later = prune_remote(&mut lock, &[], PruneOptions::default()).unwrap();
    drop(lock);
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
    assert!(check_remote(&remote, true, &mut |_| {}).unwrap().is_clean());
    let mut fresh = Store::create_or_open(tmp.path().join("cache")).unwrap();
    assert_eq!(
        sync_from_remote(&remote, &mut fresh, &mut |_| {})
            .unwrap()
            .snapshots_new,
        1
    );
    // A local copy made before the prune follows it.
    let r = sync_from_remote(&remote, &mut cache, &mut |_| {}).unwrap();
    assert_eq!((r.snapshots_gone, r.snapshots_known), (1, 1), "{r:?}");
    assert_eq!(contents(&cache), contents(&fresh));
}

#[test]
fn an_unused_object_a_snapshot_names_again_is_kept_and_its_time_starts_again() {
    const DAY: u64 = 24 * 3_600_000;
    let tmp = tempfile::tempdir().unwrap();
    let mut local = Store::create_or_open(tmp.path().join("local")).unwrap();
    add(&mut local, &session(21, 200_000), NOW);
    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, "pw");
    let laptop = machine("laptop");
    copy_to_remote(&local, &remote, &laptop, &HashSet::new(), NOW, &mut |_| {}).unwrap();
    let name = remote.snapshot_name(&local.snapshots().unwrap()[0]);
    // Pruned: its objects are noted unused.
    let mut lock = remote.lock(true, &laptop, NOW).unwrap();
    let r = prune_remote(&mut lock, &[name], PruneOptions::default()).unwrap();
    drop(lock);
    assert!(r.unused_found > 0);
    // A copy sends the snapshot again: its record is new, its chunks and
    // content record were there (not sent again) and are named again.
    let c = copy_to_remote(&local, &remote, &laptop, &HashSet::new(), NOW, &mut |_| {}).unwrap();
    assert_eq!((c.snapshots_sent, c.chunks_sent), (1, 0), "{c:?}");
    // Long after, a prune removes nothing the snapshot needs, and drops the
    // finding.
    age_files(&remote_dir, 3 * DAY);
    let mut lock = remote.lock(true, &laptop, NOW).unwrap();
    let later = prune_remote(&mut lock, &[], PruneOptions::default()).unwrap();
    drop(lock);
    assert_eq!(
        (later.chunks_removed, later.contents_removed),
        (0, 0),
        "{later:?}"
    );
    assert!(files(&remote_dir.join("unused")).is_empty());
    assert!(check_remote(&remote, true, &mut |_| {}).unwrap().is_clean());
    let mut fresh = Store::create_or_open(tmp.path().join("fresh")).unwrap();
    let s = sync_from_remote(&remote, &mut fresh, &mut |_| {}).unwrap();
    assert_eq!(s.snapshots_new, 1);
    assert_eq!(contents(&fresh), contents(&local));
}

#[test]
fn a_damaged_local_chunk_is_never_sent_and_skips_only_its_snapshots() {
    let tmp = tempfile::tempdir().unwrap();
    let local_dir = tmp.path().join("local");
    let mut local = Store::create_or_open(&local_dir).unwrap();
    add(&mut local, &session(11, 200_000), NOW);
    add(&mut local, &session(12, 200_000), NOW + 1);
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
    let hex = d.to_hex();
    let path = local_dir
        .join("chunks")
        .join(&hex[..2])
        .join(format!("{hex}.zst"));
    let mut bytes = fs::read(&path).unwrap();
    bytes[10] ^= 0x01;
    fs::write(&path, &bytes).unwrap();

    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, "pw");
    let r = copy_to_remote(
        &local,
        &remote,
        &machine("h"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.snapshots_sent, 1, "{r:?}");
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    assert_eq!(r.skipped[0].0, victim.id);
    assert!(check_remote(&remote, true, &mut |_| {}).unwrap().is_clean());
    let mut fresh = Store::create_or_open(tmp.path().join("cache")).unwrap();
    let s = sync_from_remote(&remote, &mut fresh, &mut |_| {}).unwrap();
    assert_eq!(s.snapshots_new, 1);
    assert!(s.damaged.is_empty());
}

#[test]
fn archived_tabs_and_undo_points_travel_and_a_copys_prune_keeps_them() {
    use ffsession::retention::RetentionPolicy;
    use ffsession::store::{ArchivedTab, UndoAction, UndoPoint};
    let tmp = tempfile::tempdir().unwrap();
    let mut local = Store::create_or_open(tmp.path().join("local")).unwrap();
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
    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, "pw");
    let first = copy_to_remote(
        &local,
        &remote,
        &machine("laptop"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
    // The archive, the undo point, and where each of the 4 snapshots was taken.
    assert_eq!(first.marks_sent, 2 + 4, "{first:?}");
    let again = copy_to_remote(
        &local,
        &remote,
        &machine("laptop"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
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
    let none = RetentionPolicy {
        keep_last: 1,
        keep_hourly: 0,
        keep_daily: 0,
        keep_weekly: 0,
        keep_monthly: 0,
        keep_yearly: 0,
    };
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
    let mut lock = remote.lock(true, &machine("laptop"), NOW).unwrap();
    let report = prune_remote(&mut lock, &[name], PruneOptions { keep_unused_ms: 0 }).unwrap();
    drop(lock);
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
    let tmp = tempfile::tempdir().unwrap();
    let mut local = Store::create_or_open(tmp.path().join("local")).unwrap();
    add(&mut local, &session(21, 200_000), NOW);
    let remote_dir = tmp.path().join("remote");
    let remote = create(&remote_dir, "pw");
    copy_to_remote(
        &local,
        &remote,
        &machine("h"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
    let before: HashSet<PathBuf> = files(&remote_dir.join("chunks")).into_iter().collect();
    add(&mut local, &session(22, 200_000), NOW + 1);
    copy_to_remote(
        &local,
        &remote,
        &machine("h"),
        &HashSet::new(),
        NOW,
        &mut |_| {},
    )
    .unwrap();
    let mut only_second: Vec<PathBuf> = files(&remote_dir.join("chunks"))
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    only_second.sort();
    let bad = only_second[only_second.len() / 2].clone();
    let kept = fs::read(&bad).unwrap();
    fs::remove_file(&bad).unwrap();
    fs::create_dir(&bad).unwrap();

    let mut fresh = Store::create_or_open(tmp.path().join("cache")).unwrap();
    let r = sync_from_remote(&remote, &mut fresh, &mut |_| {}).unwrap();
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
