//! Removing snapshots from a remote, then what no remaining snapshot needs,
//! in two passes.
//!
//! Under an exclusive lock ([`RemoteLock`]): the chosen snapshot records go
//! first (after their `pruned/` records), then every remaining record and
//! content record is read. What none of them names (content records,
//! chunks, marks of no remaining snapshot, temporary files) is *unused*.
//! An unused object is not removed at once: this prune writes the names
//! of the unused objects no earlier prune noted into an `unused/` record,
//! and a later prune removes an object only when it is still unused, an
//! `unused/` record has named it for at least the safety margin, and the
//! object itself is older than the margin, every age measured on the
//! server's own clock (modification times from its listings; the margin
//! defaults to [`KEEP_UNUSED_MS`]). This is Kopia's margin and rustic's
//! two-phase delete: a copy that is still sending (one whose lock looked
//! stale: a laptop asleep for an hour) names its objects within the margin,
//! and a prune that then runs finds them named. A copy checks, before it
//! says it is done, that everything it named is there
//! ([`super::copy_to_remote`]), so even a copy asleep past the margin
//! fails or sends again instead of leaving a snapshot that does not read.
//!
//! Anything that does not read (a damaged record) stops the collection:
//! what a damaged record might name is never removed. A crash at any point
//! leaves objects no record names, which later prunes remove.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::backend::{Entry, Kind};
use super::lock::RemoteLock;
use super::objects::{chunk_name, RemoteContent, RemoteSnapshot};
use super::{Remote, RemoteError};
use crate::store::Digest;

/// How long an unused object is kept, at least, after a prune first found
/// it unused (and after the server wrote it): one day, Kopia's
/// `BlobDeleteMinAge`.
pub const KEEP_UNUSED_MS: u64 = 24 * 3_600_000;

const UNUSED_FORMAT: &str = "ffsession-remote-unused/1";

/// How a remote prune goes about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneOptions {
    /// How long, on the server's clock, an object must have been found
    /// unused (and written) before it is removed; 0 removes unused objects
    /// at once, safe only when no other machine copies to the remote.
    pub keep_unused_ms: u64,
}

impl Default for PruneOptions {
    fn default() -> Self {
        PruneOptions {
            keep_unused_ms: KEEP_UNUSED_MS,
        }
    }
}

/// What a remote prune did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RemotePruneReport {
    /// Snapshot records removed.
    pub snapshots_removed: u64,
    /// Content records removed.
    pub contents_removed: u64,
    /// Chunks removed.
    pub chunks_removed: u64,
    /// Bytes freed (as listed).
    pub bytes_freed: u64,
    /// Why unused objects were kept that could have gone (a record did not
    /// read).
    pub kept_because: Option<String>,
    /// Temporary files interrupted copies left, removed.
    pub temporary_removed: u64,
    /// Marks removed: those of no remaining snapshot.
    pub marks_removed: u64,
    /// Unused objects kept for now (younger than the margin, or found
    /// unused by this prune): a later prune removes them.
    pub unused_kept: u64,
    /// Their bytes (as listed).
    pub unused_kept_bytes: u64,
    /// Of those, the ones this prune found unused first.
    pub unused_found: u64,
    /// The margin used (ms on the server's clock).
    pub keep_unused_ms: u64,
}

/// One `unused/` record: what a prune found no snapshot names.
#[derive(Debug, Serialize, Deserialize)]
struct UnusedRecord {
    format: String,
    /// The machine that found them (its label and identity).
    host: String,
    machine: String,
    /// When they were first found unused, by the server's clock (the
    /// prune's lock's time): a record written again, with fewer objects,
    /// keeps it.
    found_at_ms: Option<u64>,
    /// (kind folder, name) of each object.
    objects: Vec<(String, String)>,
}

/// An object: its kind and name.
type Object = (Kind, String);

/// Remove the snapshot records named `remove`, then collect what no
/// remaining snapshot needs, in two passes (see the module). `lock` must be
/// exclusive.
pub fn prune_remote(
    lock: &mut RemoteLock<'_>,
    remove: &[String],
    options: PruneOptions,
) -> Result<RemotePruneReport, RemoteError> {
    let remote = lock.remote();
    if !lock.is_exclusive() {
        return Err(RemoteError::Locked {
            location: remote.location(),
            holder: "this process: a prune needs the exclusive lock".into(),
        });
    }
    let machine = lock.machine().clone();
    let keep = options.keep_unused_ms;
    let mut report = RemotePruneReport {
        keep_unused_ms: keep,
        ..RemotePruneReport::default()
    };
    // An object may go once the server's clock says it is `keep` old.
    let due_before: Option<u64> = match (keep, lock.server_now_ms()) {
        (0, _) => None,
        (_, Some(now)) => Some(now.saturating_sub(keep)),
        // A server that gives no times: nothing is old enough.
        (_, None) => Some(0),
    };
    report.temporary_removed = remote.backend.remove_temporary(due_before)?;

    let listed = remote.backend.list(Kind::Snapshots)?;
    let doomed: HashSet<&String> = remove.iter().collect();
    // Said first: a reader forgets only what a pruned record says a prune
    // removed (`pruned.rs`).
    let removing: Vec<String> = listed
        .iter()
        .filter(|e| doomed.contains(&e.name))
        .map(|e| e.name.clone())
        .collect();
    super::pruned::record_pruned(remote, &removing, &machine.label)?;
    for e in &listed {
        if doomed.contains(&e.name) {
            remote.backend.remove(Kind::Snapshots, &e.name)?;
            report.snapshots_removed += 1;
            report.bytes_freed += e.size;
        }
    }
    lock.refresh()?;

    // What the remaining records name.
    let remaining: Vec<&Entry> = listed
        .iter()
        .filter(|e| !doomed.contains(&e.name))
        .collect();
    let keep_contents = match named_contents(remote, &remaining)? {
        Ok(k) => k,
        Err(why) => {
            report.kept_because = Some(format!(
                "a snapshot record does not read ({why}): nothing else is removed"
            ));
            return Ok(report);
        }
    };
    let contents = remote.backend.list(Kind::Contents)?;
    let keep_chunks = match named_chunks(remote, &contents, &keep_contents)? {
        Ok(k) => k,
        Err(why) => {
            report.kept_because = Some(format!(
                "a content record does not read ({why}): no chunk is removed"
            ));
            return Ok(report);
        }
    };
    lock.refresh()?;

    // Every unused object, with its listing (size, server time).
    let remaining_names: HashSet<String> = remaining.iter().map(|e| e.name.clone()).collect();
    let mut unused: Vec<(Object, Entry)> = Vec::new();
    for e in super::marks::stale_marks(remote, &remaining_names)? {
        unused.push(((Kind::Marks, e.name.clone()), e));
    }
    for e in contents {
        if !keep_contents.contains(&e.name) {
            unused.push(((Kind::Contents, e.name.clone()), e));
        }
    }
    for e in remote.backend.list(Kind::Chunks)? {
        if !keep_chunks.contains(&e.name) {
            unused.push(((Kind::Chunks, e.name.clone()), e));
        }
    }

    // The objects earlier prunes found unused, with the server's time of
    // each finding.
    let records = read_unused_records(remote)?;
    let noted: HashMap<&Object, u64> = {
        let mut m: HashMap<&Object, u64> = HashMap::new();
        for (_, at, objects) in &records {
            for o in objects {
                let t = m.entry(o).or_insert(*at);
                *t = (*t).min(*at);
            }
        }
        m
    };
    let old_enough = |t: Option<u64>| match (due_before, t) {
        (None, _) => true,
        (Some(b), Some(t)) => t < b,
        (Some(_), None) => false,
    };
    let mut doomed_objects: Vec<&(Object, Entry)> = Vec::new();
    let mut waiting: Vec<&(Object, Entry)> = Vec::new();
    let mut new_found: Vec<Object> = Vec::new();
    for item in &unused {
        let (object, entry) = item;
        let found = noted.get(object).copied();
        if keep == 0 || (old_enough(found) && old_enough(entry.modified_ms)) {
            doomed_objects.push(item);
        } else {
            if found.is_none() {
                new_found.push(object.clone());
            }
            waiting.push(item);
        }
    }
    // The new finding is durable before anything it might protect goes.
    let write_record = |objects: &[Object], found_at_ms: Option<u64>| {
        let record = UnusedRecord {
            format: UNUSED_FORMAT.into(),
            host: machine.label.clone(),
            machine: machine.id.clone(),
            found_at_ms,
            objects: objects
                .iter()
                .map(|(k, n)| (k.dir().to_owned(), n.clone()))
                .collect(),
        };
        let bytes = remote.seal(&serde_json::to_vec(&record).unwrap_or_default())?;
        remote.backend.write(
            Kind::Unused,
            &format!("{:016x}", super::opendal::random_u64()),
            &bytes,
        )
    };
    if !new_found.is_empty() {
        write_record(&new_found, lock.server_now_ms())?;
    }
    report.unused_found = new_found.len() as u64;
    report.unused_kept = waiting.len() as u64;
    report.unused_kept_bytes = waiting.iter().map(|(_, e)| e.size).sum();

    // Marks, then content records, then chunks: nothing is ever left
    // naming what went before it.
    for kind in [Kind::Marks, Kind::Contents, Kind::Chunks] {
        for ((k, name), e) in doomed_objects.iter().map(|i| (&i.0, &i.1)) {
            if *k != kind {
                continue;
            }
            remote.backend.remove(kind, name)?;
            report.bytes_freed += e.size;
            match kind {
                Kind::Marks => report.marks_removed += 1,
                Kind::Contents => report.contents_removed += 1,
                _ => report.chunks_removed += 1,
            }
        }
        lock.refresh()?;
    }
    // A record keeps only the objects that still wait: one that was
    // removed, or that a snapshot names again, is no longer its to date (if
    // it is unused again one day, its time starts again then). A record
    // with none left has done its work.
    let still: HashSet<&Object> = waiting.iter().map(|(o, _)| o).collect();
    for (name, at, objects) in &records {
        let left: Vec<Object> = objects
            .iter()
            .filter(|o| still.contains(o))
            .cloned()
            .collect();
        if left.len() < objects.len() {
            if !left.is_empty() {
                write_record(&left, Some(*at))?;
            }
            remote.backend.remove(Kind::Unused, name)?;
        }
    }
    Ok(report)
}

/// The content records the snapshot records `remaining` name; `Err(why)`
/// inside when one does not read.
fn named_contents(
    remote: &Remote,
    remaining: &[&Entry],
) -> Result<Result<HashSet<String>, String>, RemoteError> {
    let mut keep = HashSet::new();
    let got = remote.backend.read_many(
        remaining
            .iter()
            .map(|e| (Kind::Snapshots, e.name.clone()))
            .collect(),
        &mut |_| {},
    )?;
    for (e, bytes) in remaining.iter().zip(got) {
        let parsed = match bytes {
            Ok(Some(b)) => remote
                .open_object(Kind::Snapshots, &e.name, &b)
                .and_then(|p| RemoteSnapshot::parse(&p, &remote.keys, &e.name)),
            // Removed since the listing: by whom, if no prune runs? Not read.
            Ok(None) => Err("missing".to_owned()),
            Err(e) => Err(super::sync::reason_of(e)),
        };
        match parsed.map(|r| Digest::from_hex(&r.content)) {
            Ok(Some(d)) => {
                keep.insert(RemoteContent::name_of(&remote.keys, &d));
            }
            Ok(None) => return Ok(Err(format!("{}: malformed", e.name))),
            Err(why) => return Ok(Err(format!("{}: {why}", Kind::Snapshots.path(&e.name)))),
        }
    }
    Ok(Ok(keep))
}

/// The chunks the content records `keep` (of `contents`, listed) name;
/// `Err(why)` inside when one does not read.
fn named_chunks(
    remote: &Remote,
    contents: &[Entry],
    keep: &HashSet<String>,
) -> Result<Result<HashSet<String>, String>, RemoteError> {
    let wanted: Vec<&Entry> = contents.iter().filter(|e| keep.contains(&e.name)).collect();
    let got = remote.backend.read_many(
        wanted
            .iter()
            .map(|e| (Kind::Contents, e.name.clone()))
            .collect(),
        &mut |_| {},
    )?;
    let mut chunks = HashSet::new();
    for (e, bytes) in wanted.iter().zip(got) {
        let parsed = match bytes {
            Ok(Some(b)) => remote
                .open_object(Kind::Contents, &e.name, &b)
                .and_then(|p| RemoteContent::parse(&p, &remote.keys, &e.name)),
            Ok(None) => Err("missing".to_owned()),
            Err(e) => Err(super::sync::reason_of(e)),
        };
        match parsed {
            Ok((_, list)) => {
                for (d, _) in list {
                    chunks.insert(chunk_name(&remote.keys, &d));
                }
            }
            Err(why) => return Ok(Err(format!("{}: {why}", Kind::Contents.path(&e.name)))),
        }
    }
    Ok(Ok(chunks))
}

/// Every `unused/` record that reads: its name, the server's time of its
/// finding, and the objects it names. A record without a time counts as
/// made now; one
/// that does not read is left alone (it protects nothing: an object it
/// named is noted again by this prune).
fn read_unused_records(remote: &Remote) -> Result<Vec<(String, u64, Vec<Object>)>, RemoteError> {
    let listed = remote.backend.list(Kind::Unused)?;
    let got = remote.backend.read_many(
        listed
            .iter()
            .map(|e| (Kind::Unused, e.name.clone()))
            .collect(),
        &mut |_| {},
    )?;
    let mut out = Vec::new();
    for (e, bytes) in listed.iter().zip(got) {
        let Ok(Some(bytes)) = bytes else { continue };
        let Some(record) = remote
            .open_object(Kind::Unused, &e.name, &bytes)
            .ok()
            .and_then(|p| serde_json::from_slice::<UnusedRecord>(&p).ok())
            .filter(|r| r.format == UNUSED_FORMAT)
        else {
            continue;
        };
        let objects = record
            .objects
            .into_iter()
            .filter_map(|(dir, name)| {
                let kind = [Kind::Marks, Kind::Contents, Kind::Chunks]
                    .into_iter()
                    .find(|k| k.dir() == dir)?;
                Some((kind, name))
            })
            .collect();
        // The finding's time, kept when the record is written again; the
        // server's time of the record itself where that is earlier.
        let at = match (record.found_at_ms, e.modified_ms) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(u64::MAX),
        };
        out.push((e.name.clone(), at, objects));
    }
    Ok(out)
}
