//! Pruned records: how a reader tells a prune from a rollback.
//!
//! A remote prune writes, before it removes a snapshot record, a small
//! record `pruned/<name>` saying that snapshot was pruned (encrypted like
//! every object, and named by a keyed digest of the snapshot's name, so only
//! a holder of the remote's key can write one that reads). A reader's copy
//! forgets a snapshot the remote stopped listing only when such a record
//! says it was pruned; otherwise (the records were rolled back to an older
//! copy, deleted, or lost) it keeps it, and says so: a snapshot once seen is
//! never lost because the remote stopped listing it.
//!
//! Old readers ignore `pruned/` (they never list it); they forget pruned
//! snapshots as before.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::backend::Kind;
use super::crypto::Keys;
use super::{Remote, RemoteError};

const PRUNED_FORMAT: &str = "ffsession-remote-pruned/1";

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrunedRecord {
    format: String,
    /// The snapshot's remote name.
    snapshot: String,
    /// The machine that pruned it.
    host: String,
    /// When (ms since the epoch).
    pruned_at_ms: u64,
}

/// The name of the pruned record of snapshot `snapshot` (its remote name).
fn pruned_name(keys: &Keys, snapshot: &str) -> String {
    keys.name("pruned", blake3::hash(snapshot.as_bytes()).as_bytes())
}

/// Record that `snapshots` (remote names) are pruned, durably, before
/// their records are removed.
pub(super) fn record_pruned(
    remote: &Remote,
    snapshots: &[String],
    host: &str,
) -> Result<(), RemoteError> {
    // Shown to people, never compared: this machine's clock.
    let now_ms = crate::store::unix_ms(std::time::SystemTime::now()).unwrap_or(0);
    let mut items = Vec::new();
    for s in snapshots {
        let record = PrunedRecord {
            format: PRUNED_FORMAT.into(),
            snapshot: s.clone(),
            host: host.to_owned(),
            pruned_at_ms: now_ms,
        };
        let plain = serde_json::to_vec(&record).unwrap_or_default();
        items.push((
            Kind::Pruned,
            pruned_name(&remote.keys, s),
            remote.seal(&plain)?,
        ));
    }
    remote.backend.write_many(items, &mut |_| {})
}

/// Of `gone` (remote names of snapshots the remote no longer lists), those
/// a pruned record that reads says were pruned.
pub(super) fn pruned_of(remote: &Remote, gone: &[String]) -> Result<HashSet<String>, RemoteError> {
    if gone.is_empty() {
        return Ok(HashSet::new());
    }
    let listed: HashSet<String> = remote
        .backend
        .list(Kind::Pruned)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let wanted: Vec<(&String, String)> = gone
        .iter()
        .map(|s| (s, pruned_name(&remote.keys, s)))
        .filter(|(_, n)| listed.contains(n))
        .collect();
    let got = remote.backend.read_many(
        wanted
            .iter()
            .map(|(_, n)| (Kind::Pruned, n.clone()))
            .collect(),
        &mut |_| {},
    )?;
    let mut pruned = HashSet::new();
    for ((snapshot, name), bytes) in wanted.iter().zip(got) {
        // A record that does not read proves nothing: the snapshot is kept.
        let Ok(Some(bytes)) = bytes else { continue };
        let record = remote
            .open_object(Kind::Pruned, name, &bytes)
            .ok()
            .and_then(|p| serde_json::from_slice::<PrunedRecord>(&p).ok());
        if record.is_some_and(|r| r.format == PRUNED_FORMAT && &r.snapshot == *snapshot) {
            pruned.insert((*snapshot).clone());
        }
    }
    Ok(pruned)
}
