//! Bringing a remote's snapshots into a local store (the cache every read
//! command and `restore` then use unchanged). Only what the local store
//! lacks travels: snapshot records it has no snapshot for, content records
//! of contents it lacks, chunks it lacks. Every object is decrypted and
//! checked against its name, every chunk against its digest, and each
//! snapshot is imported (under a fresh local id) only once all its chunks
//! are on disk and its content reads back whole (`Store::import_snapshots`).
//!
//! One object that does not read (the server fails its read, or it hangs
//! past the read timeout, `backend.rs`) holds up only the snapshots that
//! need it: they are left out and tried again by the next sync, the rest
//! is imported, and the report names the object. Only a server that is
//! gone fails the sync.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::backend::Kind;
use super::objects::{check_chunk, chunk_name, RemoteContent, RemoteSnapshot};
use super::{Remote, RemoteError};
use crate::store::{Digest, ImportedSnapshot, SnapshotId, Store};

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// Snapshots new to the local store.
    pub snapshots_new: u64,
    /// Snapshots it had already.
    pub snapshots_known: u64,
    /// Snapshots it had that a prune removed from the remote: removed
    /// from the local store, which mirrors the remote.
    pub snapshots_gone: u64,
    /// Snapshots it had (local ids) that the remote no longer lists with no
    /// prune saying it removed them (the remote was rolled back, emptied or
    /// damaged): kept.
    pub snapshots_missing: Vec<i64>,
    /// Chunks fetched.
    pub chunks_fetched: u64,
    /// Bytes fetched.
    pub bytes_fetched: u64,
    /// Snapshot records on the remote that could not be brought in (a
    /// record, or an object it needs, is damaged or missing).
    pub snapshots_left_out: u64,
    /// Remote objects that could not be used: (path, why); the snapshots
    /// that need them are left out.
    pub damaged: Vec<(String, String)>,
    /// Remote objects whose read failed or hung while the server answered
    /// others: (path, why). The snapshots that need them are left out for
    /// now, not imported, so the next sync tries them again; nothing is
    /// said to be damaged (a read can fail for a moment).
    pub unreadable: Vec<(String, String)>,
    /// The host each new snapshot was taken on, by its local id.
    pub hosts: BTreeMap<i64, String>,
}

/// Progress of a sync, for a bar.
#[derive(Debug, Clone, Copy)]
pub enum SyncProgress {
    /// This many objects to fetch.
    Planned {
        /// Objects.
        objects: u64,
    },
    /// One more fetched, of this many bytes.
    Fetched {
        /// Its size.
        bytes: u64,
    },
}

const BATCH: usize = 256;

/// Why one object's read failed, without the location and path the
/// report says beside it.
pub(super) fn reason_of(e: RemoteError) -> String {
    match e {
        RemoteError::Backend { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// The snapshots of `store` (a remote's local copy) the remote no longer
/// lists with no prune saying it removed them (`pruned.rs`): lost on the
/// remote since this copy saw them (rolled back, emptied, damaged).
pub fn missing_on_remote(
    remote: &Remote,
    store: &Store,
) -> Result<Vec<crate::store::SnapshotInfo>, RemoteError> {
    let listed: HashSet<String> = remote
        .backend
        .list(Kind::Snapshots)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let gone: Vec<(crate::store::SnapshotInfo, String)> = store
        .snapshots()?
        .into_iter()
        .map(|info| {
            let name = remote.snapshot_name(&info);
            (info, name)
        })
        .filter(|(_, n)| !listed.contains(n))
        .collect();
    let names: Vec<String> = gone.iter().map(|(_, n)| n.clone()).collect();
    let pruned = super::pruned::pruned_of(remote, &names)?;
    Ok(gone
        .into_iter()
        .filter(|(_, n)| !pruned.contains(n))
        .map(|(info, _)| info)
        .collect())
}

/// Make `store` hold what `remote` holds: bring in every snapshot it lacks,
/// remove the ones the remote no longer has.
pub fn sync_from_remote(
    remote: &Remote,
    store: &mut Store,
    progress: &mut dyn FnMut(SyncProgress),
) -> Result<SyncReport, RemoteError> {
    let mut report = SyncReport::default();
    let local: Vec<(SnapshotId, String)> = store
        .snapshots()?
        .iter()
        .map(|info| (info.id, remote.snapshot_name(info)))
        .collect();
    let known: HashSet<String> = local.iter().map(|(_, n)| n.clone()).collect();
    let listed = remote.backend.list(Kind::Snapshots)?;
    let on_remote: HashSet<&str> = listed.iter().map(|e| e.name.as_str()).collect();
    // A snapshot the remote stopped listing is forgotten only when a prune
    // said it removed it; else the remote lost it (rolled back, emptied):
    // kept, and reported.
    let gone: Vec<String> = local
        .iter()
        .filter(|(_, n)| !on_remote.contains(n.as_str()))
        .map(|(_, n)| n.clone())
        .collect();
    let pruned = super::pruned::pruned_of(remote, &gone)?;
    for (id, name) in &local {
        if on_remote.contains(name.as_str()) {
            continue;
        }
        if pruned.contains(name) {
            store.remove_snapshot(*id)?;
            report.snapshots_gone += 1;
        } else {
            report.snapshots_missing.push(id.0);
        }
    }
    if report.snapshots_gone > 0 {
        store.collect_garbage()?;
    }
    let wanted: Vec<String> = listed
        .into_iter()
        .map(|e| e.name)
        .filter(|n| {
            let k = known.contains(n);
            report.snapshots_known += u64::from(k);
            !k
        })
        .collect();
    progress(SyncProgress::Planned {
        objects: wanted.len() as u64,
    });
    let mut fetched = |bytes: u64| progress(SyncProgress::Fetched { bytes });

    // Snapshot records.
    let mut records: Vec<(String, RemoteSnapshot)> = Vec::new();
    let got = remote.backend.read_many(
        wanted
            .iter()
            .map(|n| (Kind::Snapshots, n.clone()))
            .collect(),
        &mut fetched,
    )?;
    for (name, bytes) in wanted.iter().zip(got) {
        let path = Kind::Snapshots.path(name);
        let bytes = match bytes {
            Ok(Some(b)) => b,
            Ok(None) => continue,
            Err(e) => {
                report.unreadable.push((path, reason_of(e)));
                continue;
            }
        };
        report.bytes_fetched += bytes.len() as u64;
        match remote
            .open_object(Kind::Snapshots, name, &bytes)
            .and_then(|p| RemoteSnapshot::parse(&p, &remote.keys, name))
        {
            Ok(r) => records.push((name.clone(), r)),
            Err(why) => report.damaged.push((path, why)),
        }
    }

    // Content records of the contents the store lacks.
    let mut lists: BTreeMap<Digest, Vec<(Digest, usize)>> = BTreeMap::new();
    let mut to_fetch = Vec::new();
    for (_, r) in &records {
        let Some(d) = Digest::from_hex(&r.content) else {
            continue;
        };
        if lists.contains_key(&d) || to_fetch.contains(&d) {
            continue;
        }
        match store.content_list(&d)? {
            Some(list) => {
                lists.insert(d, list);
            }
            None => to_fetch.push(d),
        }
    }
    let names: Vec<String> = to_fetch
        .iter()
        .map(|d| RemoteContent::name_of(&remote.keys, d))
        .collect();
    let got = remote.backend.read_many(
        names.iter().map(|n| (Kind::Contents, n.clone())).collect(),
        &mut fetched,
    )?;
    for (name, bytes) in names.iter().zip(got) {
        let path = Kind::Contents.path(name);
        let bytes = match bytes {
            Ok(Some(b)) => b,
            Ok(None) => {
                report.damaged.push((path, "missing".into()));
                continue;
            }
            Err(e) => {
                report.unreadable.push((path, reason_of(e)));
                continue;
            }
        };
        report.bytes_fetched += bytes.len() as u64;
        match remote
            .open_object(Kind::Contents, name, &bytes)
            .and_then(|p| RemoteContent::parse(&p, &remote.keys, name))
        {
            Ok((d, list)) => {
                lists.insert(d, list);
            }
            Err(why) => report.damaged.push((path, why)),
        }
    }

    // Chunks the store lacks.
    let mut missing: Vec<(Digest, usize)> = Vec::new();
    let mut seen = HashSet::new();
    for list in lists.values() {
        for (d, n) in list {
            if seen.insert(*d) && !store.has_chunk(d)? {
                missing.push((*d, *n));
            }
        }
    }
    let mut bad_chunks = HashSet::new();
    for batch in missing.chunks(BATCH) {
        let names: Vec<String> = batch
            .iter()
            .map(|(d, _)| chunk_name(&remote.keys, d))
            .collect();
        let got = remote.backend.read_many(
            names.iter().map(|n| (Kind::Chunks, n.clone())).collect(),
            &mut fetched,
        )?;
        for ((name, bytes), (d, n)) in names.iter().zip(got).zip(batch) {
            let path = Kind::Chunks.path(name);
            let bytes = match bytes {
                Ok(Some(b)) => b,
                Ok(None) => {
                    report.damaged.push((path, "missing".into()));
                    bad_chunks.insert(*d);
                    continue;
                }
                Err(e) => {
                    report.unreadable.push((path, reason_of(e)));
                    bad_chunks.insert(*d);
                    continue;
                }
            };
            report.bytes_fetched += bytes.len() as u64;
            let frame = match remote.open_object(Kind::Chunks, name, &bytes) {
                Ok(f) => f,
                Err(why) => {
                    report.damaged.push((path, why));
                    bad_chunks.insert(*d);
                    continue;
                }
            };
            if let Err(why) = check_chunk(&frame, d, *n) {
                report.damaged.push((path, why));
                bad_chunks.insert(*d);
                continue;
            }
            store.put_chunk_frame(d, *n, &frame)?;
            report.chunks_fetched += 1;
        }
    }

    // Import the snapshots whose content is whole, oldest first.
    records.sort_by_key(|(_, r)| r.taken_at);
    let mut items = Vec::new();
    let mut hosts = Vec::new();
    for (_, r) in &records {
        let Some(info) = r.info() else { continue };
        let Some(list) = lists.get(&info.content_hash) else {
            continue;
        };
        if list.iter().any(|(d, _)| bad_chunks.contains(d)) {
            continue;
        }
        hosts.push(r.host.clone());
        items.push(ImportedSnapshot {
            info,
            chunks: list.clone(),
        });
    }
    report.snapshots_left_out = (wanted.len() - items.len()) as u64;
    if !items.is_empty() {
        let infos = store.import_snapshots(items)?;
        report.snapshots_new = infos.len() as u64;
        for (info, host) in infos.iter().zip(hosts) {
            let SnapshotId(id) = info.id;
            report.hosts.insert(id, host);
        }
    }
    // What the remote knows of its snapshots besides their records.
    let hosts: std::collections::HashMap<String, (String, Option<String>)> = records
        .iter()
        .map(|(name, r)| (name.clone(), (r.host.clone(), r.machine.clone())))
        .collect();
    let damaged_marks = super::marks::receive_marks(remote, store, &hosts)?;
    report.damaged.extend(damaged_marks);
    Ok(report)
}
