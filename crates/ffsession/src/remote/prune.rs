//! Removing snapshots from a remote, then what no remaining snapshot needs.
//!
//! Under an exclusive lock (no copy runs meanwhile, see `lock.rs`): the
//! chosen snapshot records go first, then every remaining record and
//! content record is read, and only content records and chunks that none of
//! them names are removed (content records before chunks). Anything that
//! does not read (a damaged record) stops the collection of chunks: what a
//! damaged record might name is never removed. A crash at any point leaves
//! objects no record names, which the next prune removes.

use std::collections::HashSet;

use serde::Serialize;

use super::backend::Kind;
use super::objects::{chunk_name, RemoteContent, RemoteSnapshot};
use super::{Remote, RemoteError};
use crate::store::Digest;

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
    /// Why chunks were kept that may be unused (a record did not read).
    pub kept_because: Option<String>,
    /// Temporary files interrupted copies left, removed.
    pub temporary_removed: u64,
    /// Marks removed: those of no remaining snapshot.
    pub marks_removed: u64,
}

/// Remove the snapshot records named `remove`, then collect garbage.
pub fn prune_remote(
    remote: &Remote,
    remove: &[String],
    host: &str,
    now_ms: u64,
) -> Result<RemotePruneReport, RemoteError> {
    let _lock = remote.lock(true, host, now_ms)?;
    // No copy runs while this lock is held: every temporary file is a
    // leftover.
    let mut report = RemotePruneReport {
        temporary_removed: remote.backend.remove_temporary()?,
        ..RemotePruneReport::default()
    };
    let listed = remote.backend.list(Kind::Snapshots)?;
    let doomed: HashSet<&String> = remove.iter().collect();
    // Said first: a reader forgets only what a pruned record says a prune
    // removed (`pruned.rs`).
    let removing: Vec<String> = listed
        .iter()
        .filter(|e| doomed.contains(&e.name))
        .map(|e| e.name.clone())
        .collect();
    super::pruned::record_pruned(remote, &removing, host, now_ms)?;
    for e in &listed {
        if doomed.contains(&e.name) {
            remote.backend.remove(Kind::Snapshots, &e.name)?;
            report.snapshots_removed += 1;
            report.bytes_freed += e.size;
        }
    }

    // What the remaining records name.
    let mut keep_contents = HashSet::new();
    let mut unreadable = None;
    for e in listed.iter().filter(|e| !doomed.contains(&e.name)) {
        let parsed = remote
            .backend
            .read(Kind::Snapshots, &e.name)?
            .ok_or_else(|| "missing".to_owned())
            .and_then(|b| remote.open_object(Kind::Snapshots, &e.name, &b))
            .and_then(|p| RemoteSnapshot::parse(&p, &remote.keys, &e.name));
        match parsed {
            Ok(r) => match Digest::from_hex(&r.content) {
                Some(d) => {
                    keep_contents.insert(RemoteContent::name_of(&remote.keys, &d));
                }
                None => unreadable = Some(format!("{}: malformed", e.name)),
            },
            Err(why) => unreadable = Some(format!("{}: {why}", Kind::Snapshots.path(&e.name))),
        }
    }
    if let Some(why) = unreadable {
        report.kept_because = Some(format!(
            "a snapshot record does not read ({why}): nothing else is removed"
        ));
        return Ok(report);
    }
    // Marks that name no remaining snapshot (before any content: a mark
    // never outlives what it names by more than one prune).
    let remaining: HashSet<String> = listed
        .iter()
        .filter(|e| !doomed.contains(&e.name))
        .map(|e| e.name.clone())
        .collect();
    report.marks_removed = super::marks::remove_stale_marks(remote, &remaining)?;
    let mut keep_chunks = HashSet::new();
    let contents = remote.backend.list(Kind::Contents)?;
    for e in &contents {
        if !keep_contents.contains(&e.name) {
            continue;
        }
        let parsed = remote
            .backend
            .read(Kind::Contents, &e.name)?
            .ok_or_else(|| "missing".to_owned())
            .and_then(|b| remote.open_object(Kind::Contents, &e.name, &b))
            .and_then(|p| RemoteContent::parse(&p, &remote.keys, &e.name));
        match parsed {
            Ok((_, list)) => {
                for (d, _) in list {
                    keep_chunks.insert(chunk_name(&remote.keys, &d));
                }
            }
            Err(why) => {
                report.kept_because = Some(format!(
                    "a content record does not read ({}: {why}): no chunk is removed",
                    Kind::Contents.path(&e.name)
                ));
                return Ok(report);
            }
        }
    }
    for e in &contents {
        if !keep_contents.contains(&e.name) {
            remote.backend.remove(Kind::Contents, &e.name)?;
            report.contents_removed += 1;
            report.bytes_freed += e.size;
        }
    }
    for e in remote.backend.list(Kind::Chunks)? {
        if !keep_chunks.contains(&e.name) {
            remote.backend.remove(Kind::Chunks, &e.name)?;
            report.chunks_removed += 1;
            report.bytes_freed += e.size;
        }
    }
    Ok(report)
}
