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
//!
//! "Copied" means readable by any machine: before it says so, a copy
//! writes its lock again (which fails if a prune started meanwhile: a
//! laptop that slept past its lock's time) and lists the remote once more;
//! whatever a local snapshot needs and the remote does not hold (a prune
//! elsewhere removed an unused chunk this copy counted on, or a snapshot
//! its retention did not keep), and the marks that go with them, is sent
//! again and listed again, and what still is not there after that fails the
//! copy, by name.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::backend::{Entry, Kind};
use super::crypto::Keys;
use super::lock::RemoteLock;
use super::objects::{chunk_name, RemoteContent, RemoteSnapshot};
use super::{Remote, RemoteError};
use crate::machine::Machine;
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
    /// Objects found gone when the copy listed the remote again at its
    /// end (removed meanwhile by a prune elsewhere), and sent again.
    pub resent: u64,
}

/// Progress of a copy, for a bar.
#[derive(Debug, Clone, Copy)]
pub enum CopyProgress {
    /// The plan: this many objects to send in all, so far (said again when
    /// marks or objects sent again add to it).
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

/// How many times the copy lists the remote again to find what went
/// missing meanwhile and sends it.
const VERIFY_ROUNDS: usize = 2;

/// Send every snapshot of `store` that `remote` lacks; `machine` is this
/// machine (its identity and label go into the records), whose clock says
/// `now_ms` (only shown in its lock); `heal` names
/// objects to replace even if listed. Fails, naming them, if objects a
/// local snapshot needs are still not on the remote at the end.
pub fn copy_to_remote(
    store: &Store,
    remote: &Remote,
    machine: &Machine,
    heal: &HashSet<String>,
    now_ms: u64,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<CopyReport, RemoteError> {
    let mut lock = remote.lock(false, machine, now_ms)?;
    let mut report = CopyReport::default();
    let mut copy = Copy {
        store,
        remote,
        machine,
        unusable: HashMap::new(),
        planned: 0,
    };
    let first = Listing::of(remote)?;
    let plan = copy.plan(&first, heal, &mut report)?;
    let listing_snapshots: Vec<String> = first.snapshots.into_keys().collect();
    copy.planned = plan.len();
    progress(CopyProgress::Planned {
        objects: copy.planned,
    });
    copy.send(&plan, &mut lock, &mut report, progress)?;
    // What the last look confirms: the contents of what this copy sent.
    let mut targets: HashSet<Digest> = plan.snapshots.iter().map(|s| s.1).collect();
    targets.extend(plan.contents.iter().map(|c| c.0));
    targets.extend(plan.chunks.iter().map(|c| c.3));
    // Marks (archived tabs, undo points), after every snapshot they name;
    // the last look confirms those snapshots too: a prune that ran before
    // the marks arrived did not know to keep them.
    let mut on_remote: HashSet<String> = plan.snapshots.iter().map(|s| s.2.clone()).collect();
    on_remote.extend(listing_snapshots);
    targets.extend(copy.send_marks(&on_remote, &mut report, progress)?);

    // Readable by any machine: no prune ran meanwhile (`renew` fails if one
    // holds its lock), and everything the snapshots this copy sent name is
    // there, and their marks: one listing (of the chunk folders those
    // snapshots use); what is gone (a prune elsewhere took this copy for
    // dead and removed it) is sent again, and listed again.
    // A copy that sent nothing found everything there in the listing it
    // made under its lock a moment ago: nothing of its own to confirm.
    let sent_anything = report.chunks_sent
        + report.contents_sent
        + report.snapshots_sent
        + report.marks_sent
        + report.healed
        > 0;
    for round in 0..=VERIFY_ROUNDS {
        if round == 0 && !sent_anything {
            break;
        }
        lock.renew_if_old()?;
        let mut scratch = CopyReport::default();
        let listing = Listing::of_contents(remote, store, &targets)?;
        let missing = copy.plan_of(&listing, &HashSet::new(), &mut scratch, Some(&targets))?;
        let on_remote: HashSet<String> = listing.snapshots.into_keys().collect();
        let super::marks::ToSend {
            items: marks,
            named,
        } = super::marks::marks_to_send(store, remote, &machine.label, &on_remote)?;
        // Snapshots the marks still to send name: looked at next round.
        targets.extend(named);
        if missing.is_empty() && marks.is_empty() {
            break;
        }
        if round == VERIFY_ROUNDS {
            let mut paths = missing.paths(&remote.keys);
            paths.extend(marks.iter().map(|(k, n, _)| k.path(n)));
            return Err(RemoteError::Incomplete {
                location: remote.location(),
                missing: paths,
            });
        }
        report.resent += missing.len() + marks.len() as u64;
        copy.planned += missing.len();
        progress(CopyProgress::Planned {
            objects: copy.planned,
        });
        let mut again = CopyReport::default();
        copy.send(&missing, &mut lock, &mut again, progress)?;
        report.bytes_sent += again.bytes_sent;
        report.chunks_sent += again.chunks_sent;
        report.contents_sent += again.contents_sent;
        copy.write_marks(marks, &mut report, progress)?;
    }
    drop(lock);
    Ok(report)
}

/// One listing of what a copy compares with: objects by name, with sizes.
struct Listing {
    snapshots: HashMap<String, u64>,
    contents: HashMap<String, u64>,
    chunks: HashMap<String, u64>,
}

impl Listing {
    fn of(remote: &Remote) -> Result<Listing, RemoteError> {
        Ok(Listing {
            snapshots: listed(remote, Kind::Snapshots)?,
            contents: listed(remote, Kind::Contents)?,
            chunks: listed(remote, Kind::Chunks)?,
        })
    }

    /// Snapshot and content records, and of the chunks only the fan-out
    /// folders the chunks of `contents` are in: what a copy's last look
    /// needs to confirm the snapshots it sent.
    fn of_contents(
        remote: &Remote,
        store: &Store,
        contents: &HashSet<Digest>,
    ) -> Result<Listing, RemoteError> {
        let mut fans = std::collections::BTreeSet::new();
        for d in contents {
            if let Some(list) = store.content_list(d)? {
                for (c, _) in list {
                    let name = chunk_name(&remote.keys, &c);
                    fans.insert(name[..2].to_owned());
                }
            }
        }
        Ok(Listing {
            snapshots: listed(remote, Kind::Snapshots)?,
            contents: listed(remote, Kind::Contents)?,
            chunks: remote
                .backend
                .list_chunks_in(&fans)?
                .into_iter()
                .map(|Entry { name, size, .. }| (name, size))
                .collect(),
        })
    }
}

/// What to send: chunks (digest, raw size, a snapshot that has it, its
/// content), content records, snapshot records; and the objects to remove
/// first (damaged or cut short).
#[derive(Default)]
struct Plan {
    chunks: Vec<(Digest, usize, SnapshotId, Digest)>,
    contents: Vec<(Digest, Vec<(Digest, usize)>)>,
    snapshots: Vec<(SnapshotId, Digest, String, RemoteSnapshot)>,
    replace: HashSet<String>,
    /// Contents the remote had and lost one of the chunks of.
    lost_chunks_of: HashSet<Digest>,
}

impl Plan {
    fn len(&self) -> u64 {
        (self.chunks.len() + self.contents.len() + self.snapshots.len()) as u64
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The remote paths of everything planned.
    fn paths(&self, keys: &Keys) -> Vec<String> {
        let chunks = self
            .chunks
            .iter()
            .map(|(d, ..)| Kind::Chunks.path(&chunk_name(keys, d)));
        let contents = self
            .contents
            .iter()
            .map(|(d, _)| Kind::Contents.path(&RemoteContent::name_of(keys, d)));
        let snapshots = self
            .snapshots
            .iter()
            .map(|(_, _, n, _)| Kind::Snapshots.path(n));
        chunks.chain(contents).chain(snapshots).collect()
    }
}

struct Copy<'a> {
    store: &'a Store,
    remote: &'a Remote,
    machine: &'a Machine,
    /// Contents that cannot be read here (a damaged local chunk): their
    /// snapshots are skipped, never planned again.
    unusable: HashMap<Digest, String>,
    /// Objects planned so far, for progress.
    planned: u64,
}

impl Copy<'_> {
    /// Send the marks the remote lacks whose snapshots are all in
    /// `on_remote`.
    /// Send the marks the remote lacks ([`super::marks::marks_to_send`]);
    /// returns the contents of the snapshots they name.
    fn send_marks(
        &mut self,
        on_remote: &HashSet<String>,
        report: &mut CopyReport,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<HashSet<Digest>, RemoteError> {
        let marks =
            super::marks::marks_to_send(self.store, self.remote, &self.machine.label, on_remote)?;
        self.write_marks(marks.items, report, progress)?;
        Ok(marks.named)
    }

    /// Write sealed marks (from `marks::marks_to_send`).
    fn write_marks(
        &mut self,
        marks: Vec<(Kind, String, Vec<u8>)>,
        report: &mut CopyReport,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<(), RemoteError> {
        if marks.is_empty() {
            return Ok(());
        }
        self.planned += marks.len() as u64;
        progress(CopyProgress::Planned {
            objects: self.planned,
        });
        report.marks_sent += marks.len() as u64;
        report.bytes_sent += marks.iter().map(|i| i.2.len() as u64).sum::<u64>();
        self.remote
            .backend
            .write_many(marks, &mut |bytes| progress(CopyProgress::Sent { bytes }))
    }

    /// What the remote (as `have` lists it) lacks of the local snapshots:
    /// missing, named in `heal`, or cut short.
    fn plan(
        &mut self,
        have: &Listing,
        heal: &HashSet<String>,
        report: &mut CopyReport,
    ) -> Result<Plan, RemoteError> {
        self.plan_of(have, heal, report, None)
    }

    /// [`Copy::plan`] for the local snapshots of `only`'s contents (all when
    /// `None`).
    fn plan_of(
        &mut self,
        have: &Listing,
        heal: &HashSet<String>,
        report: &mut CopyReport,
        only: Option<&HashSet<Digest>>,
    ) -> Result<Plan, RemoteError> {
        let keys = &self.remote.keys;
        let mut plan = Plan::default();
        let mut needed =
            |name: &str, listed: &HashMap<String, u64>, least: u64, most: Option<u64>| {
                if heal.contains(name) {
                    plan.replace.insert(name.to_owned());
                    return true;
                }
                match listed.get(name) {
                    None => true,
                    Some(&size) if size < least || most.is_some_and(|m| size > m) => {
                        plan.replace.insert(name.to_owned());
                        true
                    }
                    Some(_) => false,
                }
            };
        // Every content a local snapshot holds, and the snapshots to send.
        let mut contents: BTreeMap<Digest, Vec<SnapshotId>> = BTreeMap::new();
        let mut snapshots = Vec::new();
        for info in self.store.snapshots()? {
            if self.unusable.contains_key(&info.content_hash)
                || only.is_some_and(|o| !o.contains(&info.content_hash))
            {
                continue;
            }
            let record = RemoteSnapshot::of(&info, self.machine);
            let name = record.name(keys);
            contents.entry(info.content_hash).or_default().push(info.id);
            // The same snapshot sent from another machine names another
            // machine: only the least size is known.
            let (least, _) = sealed_range(&RemoteSnapshot::bare(&info));
            if needed(&name, &have.snapshots, least, None) {
                snapshots.push((info.id, info.content_hash, name, record));
            } else {
                report.snapshots_present += 1;
            }
        }
        let mut planned_chunks = HashSet::new();
        for (digest, ids) in &contents {
            let list = match self.store.snapshot_chunks(ids[0]) {
                Ok(l) => l,
                Err(e) => {
                    self.unusable.insert(*digest, e.to_string());
                    continue;
                }
            };
            let content_there = have
                .contents
                .contains_key(&RemoteContent::name_of(keys, digest));
            for (d, n) in &list {
                let name = chunk_name(keys, d);
                // A chunk's sealed size follows from its stored frame's.
                let (least, most) = self.store.chunk_frame_len(d).map_or((0, None), |len| {
                    let (l, m) = Keys::sealed_size_range(len);
                    (l, Some(m))
                });
                if planned_chunks.contains(d) || !needed(&name, &have.chunks, least, most) {
                    continue;
                }
                planned_chunks.insert(*d);
                if content_there {
                    plan.lost_chunks_of.insert(*digest);
                }
                plan.chunks.push((*d, *n, ids[0], *digest));
            }
            let (least, most) = sealed_range(&RemoteContent::new(digest, &list));
            if needed(
                &RemoteContent::name_of(keys, digest),
                &have.contents,
                least,
                Some(most),
            ) {
                plan.contents.push((*digest, list));
            }
        }
        plan.snapshots = snapshots;
        Ok(plan)
    }

    /// Send `plan`: chunks (each read back from the local store first),
    /// then content records, then snapshot records.
    fn send(
        &mut self,
        plan: &Plan,
        lock: &mut RemoteLock<'_>,
        report: &mut CopyReport,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<(), RemoteError> {
        let remote = self.remote;
        let keys = &remote.keys;
        let mut sent = |bytes: u64| progress(CopyProgress::Sent { bytes });
        let replace = |kind: Kind, name: &str, report: &mut CopyReport| {
            if plan.replace.contains(name) {
                remote.backend.remove(kind, name)?;
                report.healed += 1;
                report.healed_names.push(name.to_owned());
            }
            Ok::<(), RemoteError>(())
        };
        for batch in plan.chunks.chunks(BATCH) {
            let mut items = Vec::with_capacity(batch.len());
            for (d, n, of, content) in batch {
                if self.unusable.contains_key(content) {
                    continue;
                }
                let frame = match self.store.read_chunk_frame(d, *n, *of) {
                    Ok(f) => f,
                    Err(e) => {
                        self.unusable.insert(*content, e.to_string());
                        continue;
                    }
                };
                let name = chunk_name(keys, d);
                if !plan.replace.contains(&name) && plan.lost_chunks_of.contains(content) {
                    // The remote had this content and lost one of its chunks.
                    report.healed += 1;
                }
                replace(Kind::Chunks, &name, report)?;
                items.push((Kind::Chunks, name, remote.seal(&frame)?));
            }
            report.chunks_sent += items.len() as u64;
            report.bytes_sent += items.iter().map(|i| i.2.len() as u64).sum::<u64>();
            remote.backend.write_many(items, &mut sent)?;
            lock.refresh()?;
        }

        let mut items = Vec::new();
        for (digest, list) in &plan.contents {
            if self.unusable.contains_key(digest) {
                continue;
            }
            let name = RemoteContent::name_of(keys, digest);
            replace(Kind::Contents, &name, report)?;
            let plain = serde_json::to_vec(&RemoteContent::new(digest, list)).unwrap_or_default();
            items.push((Kind::Contents, name, remote.seal(&plain)?));
        }
        report.contents_sent += items.len() as u64;
        report.bytes_sent += items.iter().map(|i| i.2.len() as u64).sum::<u64>();
        remote.backend.write_many(items, &mut sent)?;
        lock.refresh()?;

        // Snapshot records, last.
        let mut items = Vec::new();
        for (id, content, name, record) in &plan.snapshots {
            if let Some(why) = self.unusable.get(content) {
                report.skipped.push((
                    *id,
                    format!("not sent: its content cannot be read here: {why}"),
                ));
                continue;
            }
            replace(Kind::Snapshots, name, report)?;
            let plain = serde_json::to_vec(record).unwrap_or_default();
            items.push((Kind::Snapshots, name.clone(), remote.seal(&plain)?));
        }
        report.snapshots_sent += items.len() as u64;
        report.bytes_sent += items.iter().map(|i| i.2.len() as u64).sum::<u64>();
        remote.backend.write_many(items, &mut sent)?;
        lock.refresh()
    }
}

/// The objects of `kind` on the remote, by name, with their sizes.
fn listed(remote: &Remote, kind: Kind) -> Result<HashMap<String, u64>, RemoteError> {
    Ok(remote
        .backend
        .list(kind)?
        .into_iter()
        .map(|Entry { name, size, .. }| (name, size))
        .collect())
}

/// The sizes `record` may have once sealed.
pub(super) fn sealed_range(record: &impl Serialize) -> (u64, u64) {
    let plain = serde_json::to_vec(record).unwrap_or_default();
    Keys::sealed_size_range(plain.len() as u64)
}
