//! `copy`: send every local snapshot the remote lacks. Only missing objects
//! travel: the remote is listed once, and every chunk, content record and
//! snapshot record whose name is not there is sent, in that order (chunks,
//! then contents, then snapshot records), so a snapshot record is never on
//! the remote before everything it names. A chunk the remote lost is sent
//! again for every local snapshot that uses it, a damaged object named in
//! `heal` (by `check --read-data`) is replaced, and so is an object listed
//! at a size its sealed bytes cannot have (one cut short, as a full disk
//! left them before writes were checked): only a whole object counts as
//! there already. Every chunk is read back from the local store and
//! verified before it is sent: a damaged local chunk skips the snapshots
//! that use it, never reaches the remote.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::backend::{Entry, Kind};
use super::crypto::Keys;
use super::objects::{chunk_name, RemoteContent, RemoteSnapshot};
use super::{Remote, RemoteError};
use crate::store::{Digest, SnapshotId, Store};

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Snapshots sent now.
    pub snapshots_sent: u64,
    /// Snapshots the remote had already.
    pub snapshots_present: u64,
    /// Content records sent.
    pub contents_sent: u64,
    /// Chunks sent.
    pub chunks_sent: u64,
    /// Objects the remote had lost or held damaged, sent again.
    pub healed: u64,
    /// The names of the objects of `heal` sent again.
    pub healed_names: Vec<String>,
    /// Bytes sent (encrypted objects).
    pub bytes_sent: u64,
    /// Local snapshots not sent: (id, why).
    pub skipped: Vec<(SnapshotId, String)>,
    /// Marks sent (the tabs one `tidy` archived, an undo point).
    pub marks_sent: u64,
}

/// Progress of a copy, for a bar.
#[derive(Debug, Clone, Copy)]
pub enum CopyProgress {
    /// The plan: this many objects to send.
    Planned {
        /// Objects to send.
        objects: u64,
    },
    /// One more object sent, of this many bytes.
    Sent {
        /// Its size.
        bytes: u64,
    },
}

/// How many objects are read, encrypted and sent per batch (bounded memory).
const BATCH: usize = 256;

/// Send every snapshot of `store` that `remote` lacks; `host` names this
/// machine in the records; `heal` names objects to replace even if listed.
pub fn copy_to_remote(
    store: &Store,
    remote: &Remote,
    host: &str,
    heal: &HashSet<String>,
    now_ms: u64,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<CopyReport, RemoteError> {
    let mut lock = remote.lock(false, host, now_ms)?;
    let mut report = CopyReport::default();
    let have_snapshots = listed(remote, Kind::Snapshots)?;
    let have_contents = listed(remote, Kind::Contents)?;
    let have_chunks = listed(remote, Kind::Chunks)?;
    // Objects to send: missing, named in `heal`, or cut short.
    let mut cut_short: HashSet<String> = HashSet::new();
    let mut needed = |name: &str, have: &HashMap<String, u64>, least: u64, most: Option<u64>| {
        if heal.contains(name) {
            return true;
        }
        match have.get(name) {
            None => true,
            Some(&size) if size < least || most.is_some_and(|m| size > m) => {
                cut_short.insert(name.to_owned());
                true
            }
            Some(_) => false,
        }
    };

    // Every content a local snapshot holds, and the snapshots to send.
    let mut contents: BTreeMap<Digest, Vec<SnapshotId>> = BTreeMap::new();
    let mut to_send: Vec<(SnapshotId, Digest, String, RemoteSnapshot)> = Vec::new();
    for info in store.snapshots()? {
        let record = RemoteSnapshot::of(&info, host);
        let name = record.name(&remote.keys);
        contents.entry(info.content_hash).or_default().push(info.id);
        // The same snapshot sent from another machine names another host:
        // only the least size is known.
        let (least, _) = sealed_range(&RemoteSnapshot::of(&info, ""));
        if needed(&name, &have_snapshots, least, None) {
            to_send.push((info.id, info.content_hash, name, record));
        } else {
            report.snapshots_present += 1;
        }
    }

    // The chunks and content records the remote lacks.
    let mut chunk_plan: Vec<(Digest, usize, SnapshotId, Digest)> = Vec::new();
    let mut content_plan: Vec<(Digest, Vec<(Digest, usize)>)> = Vec::new();
    let mut planned_chunks = HashSet::new();
    let mut unusable: HashMap<Digest, String> = HashMap::new();
    for (digest, ids) in &contents {
        let list = match store.snapshot_chunks(ids[0]) {
            Ok(l) => l,
            Err(e) => {
                unusable.insert(*digest, e.to_string());
                continue;
            }
        };
        for (d, n) in &list {
            let name = chunk_name(&remote.keys, d);
            // A chunk's sealed size follows from its stored frame's.
            let (least, most) = store.chunk_frame_len(d).map_or((0, None), |len| {
                let (l, m) = Keys::sealed_size_range(len);
                (l, Some(m))
            });
            if planned_chunks.contains(d) || !needed(&name, &have_chunks, least, most) {
                continue;
            }
            planned_chunks.insert(*d);
            chunk_plan.push((*d, *n, ids[0], *digest));
        }
        let (least, most) = sealed_range(&RemoteContent::new(digest, &list));
        if needed(
            &RemoteContent::name_of(&remote.keys, digest),
            &have_contents,
            least,
            Some(most),
        ) {
            content_plan.push((*digest, list));
        }
    }
    progress(CopyProgress::Planned {
        objects: (chunk_plan.len() + content_plan.len() + to_send.len()) as u64,
    });

    // Chunks, each read back from the local store first.
    let mut sent = |bytes: u64| {
        progress(CopyProgress::Sent { bytes });
    };
    for batch in chunk_plan.chunks(BATCH) {
        let mut items = Vec::with_capacity(batch.len());
        for (d, n, of, content) in batch {
            if unusable.contains_key(content) {
                continue;
            }
            let frame = match store.read_chunk_frame(d, *n, *of) {
                Ok(f) => f,
                Err(e) => {
                    unusable.insert(*content, e.to_string());
                    continue;
                }
            };
            let name = chunk_name(&remote.keys, d);
            if heal.contains(&name) || cut_short.contains(&name) {
                remote.backend.remove(Kind::Chunks, &name)?;
                report.healed += 1;
                report.healed_names.push(name.clone());
            } else if have_contents.contains_key(&RemoteContent::name_of(&remote.keys, content)) {
                // The remote had this content and lost one of its chunks.
                report.healed += 1;
            }
            items.push((Kind::Chunks, name, remote.seal(&frame)?));
        }
        report.chunks_sent += items.len() as u64;
        report.bytes_sent += items.iter().map(|i| i.2.len() as u64).sum::<u64>();
        remote.backend.write_many(items, &mut sent)?;
        lock.refresh(crate::store::unix_ms(std::time::SystemTime::now()).unwrap_or(now_ms))?;
    }

    // Content records.
    let mut items = Vec::new();
    for (digest, list) in &content_plan {
        if unusable.contains_key(digest) {
            continue;
        }
        let name = RemoteContent::name_of(&remote.keys, digest);
        if heal.contains(&name) || cut_short.contains(&name) {
            remote.backend.remove(Kind::Contents, &name)?;
            report.healed += 1;
            report.healed_names.push(name.clone());
        }
        let plain = serde_json::to_vec(&RemoteContent::new(digest, list)).unwrap_or_default();
        items.push((Kind::Contents, name, remote.seal(&plain)?));
    }
    report.contents_sent += items.len() as u64;
    report.bytes_sent += items.iter().map(|i| i.2.len() as u64).sum::<u64>();
    remote.backend.write_many(items, &mut sent)?;

    // Snapshot records, last.
    let mut items = Vec::new();
    for (id, content, name, record) in &to_send {
        if let Some(why) = unusable.get(content) {
            report.skipped.push((
                *id,
                format!("not sent: its content cannot be read here: {why}"),
            ));
            continue;
        }
        if heal.contains(name) || cut_short.contains(name) {
            remote.backend.remove(Kind::Snapshots, name)?;
            report.healed += 1;
            report.healed_names.push(name.clone());
        }
        let plain = serde_json::to_vec(record).unwrap_or_default();
        items.push((Kind::Snapshots, name.clone(), remote.seal(&plain)?));
    }
    report.snapshots_sent += items.len() as u64;
    report.bytes_sent += items.iter().map(|i| i.2.len() as u64).sum::<u64>();
    remote.backend.write_many(items, &mut sent)?;

    // Marks (archived tabs, undo points), after every snapshot they name.
    let on_remote: HashSet<String> = listed(remote, Kind::Snapshots)?.into_keys().collect();
    let (marks, bytes) = super::marks::send_marks(store, remote, host, &on_remote, &mut sent)?;
    report.marks_sent += marks;
    report.bytes_sent += bytes;
    drop(lock);
    Ok(report)
}

/// The objects of `kind` on the remote, by name, with their sizes.
fn listed(remote: &Remote, kind: Kind) -> Result<HashMap<String, u64>, RemoteError> {
    Ok(remote
        .backend
        .list(kind)?
        .into_iter()
        .map(|Entry { name, size }| (name, size))
        .collect())
}

/// The sizes `record` may have once sealed.
pub(super) fn sealed_range(record: &impl Serialize) -> (u64, u64) {
    let plain = serde_json::to_vec(record).unwrap_or_default();
    Keys::sealed_size_range(plain.len() as u64)
}
