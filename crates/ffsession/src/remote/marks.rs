//! Marks: what a store knows of its snapshots besides their records, on a
//! remote. The tabs `tidy` archived (and which snapshot holds them) and the
//! undo points of `restore` and `tidy` travel with the snapshots they name,
//! so a copy's `tabs --archived` and `search` find what the local store
//! finds, and a prune of the remote (planned on its local copy, like a local
//! prune) keeps what a local prune keeps.
//!
//! One object per archive or undo point, `marks/<name>`, age-encrypted like
//! every object and named by a keyed digest of its record, so the same mark
//! sent twice, from two machines too, is one object. A mark names snapshots
//! by their remote names, never by local ids, and is sent after every
//! snapshot it names: a mark is never on the remote before them.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::backend::Kind;
use super::crypto::Keys;
use super::objects::RemoteSnapshot;
use super::{Remote, RemoteError};
use crate::store::{ArchivedTab, SnapshotId, Store, UndoAction, UndoPoint};

const MARK_FORMAT: &str = "ffsession-remote-mark/1";

/// A tab `tidy` archived, naming its snapshot by remote name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoteArchived {
    url: String,
    title: String,
    archived_at_ms: u64,
    snapshot: String,
    reason: String,
    window: u64,
    last_accessed: Option<u64>,
    position: Option<u64>,
}

/// An undo point, naming its snapshots by remote name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoteUndo {
    made_at_ms: u64,
    profile: String,
    action: UndoAction,
    snapshots: Vec<String>,
    restored: Option<String>,
    #[serde(default)]
    restored_content: Option<crate::store::Digest>,
}

/// One mark's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoteMark {
    format: String,
    #[serde(default)]
    archived: Vec<RemoteArchived>,
    #[serde(default)]
    undo: Option<RemoteUndo>,
}

impl RemoteMark {
    fn name(&self, keys: &Keys) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        keys.name("mark", blake3::hash(&bytes).as_bytes())
    }

    /// The remote snapshot names it needs.
    fn needs(&self) -> impl Iterator<Item = &String> {
        self.archived.iter().map(|a| &a.snapshot).chain(
            self.undo
                .iter()
                .flat_map(|u| u.snapshots.iter().chain(u.restored.iter())),
        )
    }
}

/// The local store's marks, each with its object name; snapshots by their
/// remote names (`names`).
fn marks_of(
    store: &Store,
    names: &HashMap<SnapshotId, String>,
    keys: &Keys,
) -> Result<Vec<(String, RemoteMark)>, RemoteError> {
    let mut out = Vec::new();
    let mut archives: BTreeMap<(SnapshotId, u64), Vec<ArchivedTab>> = BTreeMap::new();
    for t in store.archived_tabs()? {
        archives
            .entry((t.snapshot, t.archived_at_ms))
            .or_default()
            .push(t);
    }
    for ((id, _), tabs) in archives {
        let Some(snapshot) = names.get(&id) else {
            continue;
        };
        let archived = tabs
            .into_iter()
            .map(|t| RemoteArchived {
                url: t.url,
                title: t.title,
                archived_at_ms: t.archived_at_ms,
                snapshot: snapshot.clone(),
                reason: t.reason,
                window: t.window,
                last_accessed: t.last_accessed,
                position: t.position,
            })
            .collect();
        let mark = RemoteMark {
            format: MARK_FORMAT.into(),
            archived,
            undo: None,
        };
        out.push((mark.name(keys), mark));
    }
    for u in store.undo_points()? {
        let snapshots: Vec<String> = u
            .snapshots
            .iter()
            .filter_map(|id| names.get(id).cloned())
            .collect();
        let restored = u.restored.and_then(|id| names.get(&id).cloned());
        if snapshots.is_empty() && restored.is_none() {
            continue;
        }
        let mark = RemoteMark {
            format: MARK_FORMAT.into(),
            archived: Vec::new(),
            undo: Some(RemoteUndo {
                made_at_ms: u.made_at_ms,
                profile: u.profile,
                action: u.action,
                snapshots,
                restored,
                restored_content: u.restored_content,
            }),
        };
        out.push((mark.name(keys), mark));
    }
    Ok(out)
}

/// Every local snapshot's remote name.
fn remote_names(store: &Store, keys: &Keys) -> Result<HashMap<SnapshotId, String>, RemoteError> {
    Ok(store
        .snapshots()?
        .iter()
        .map(|s| (s.id, RemoteSnapshot::of(s, "").name(keys)))
        .collect())
}

/// Send the marks of `store` the remote lacks, each only when every
/// snapshot it names is on the remote (`on_remote`, listed after the
/// snapshot records were sent). Returns (marks sent, bytes).
pub(super) fn send_marks(
    store: &Store,
    remote: &Remote,
    on_remote: &HashSet<String>,
    sent: &mut dyn FnMut(u64),
) -> Result<(u64, u64), RemoteError> {
    let have: HashSet<String> = remote
        .backend
        .list(Kind::Marks)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let names = remote_names(store, &remote.keys)?;
    let mut items = Vec::new();
    for (name, mark) in marks_of(store, &names, &remote.keys)? {
        if have.contains(&name) || !mark.needs().all(|n| on_remote.contains(n)) {
            continue;
        }
        let plain = serde_json::to_vec(&mark).unwrap_or_default();
        items.push((Kind::Marks, name, remote.seal(&plain)?));
    }
    let count = items.len() as u64;
    let bytes = items.iter().map(|i| i.2.len() as u64).sum();
    remote.backend.write_many(items, sent)?;
    Ok((count, bytes))
}

/// Bring the remote's marks into `store` (its local copy): each mark whose
/// snapshots the store holds, archived tabs not recorded yet and undo points
/// (written again unchanged when known). Returns the marks that did not read
/// (path, why).
pub(super) fn receive_marks(
    remote: &Remote,
    store: &mut Store,
) -> Result<Vec<(String, String)>, RemoteError> {
    let listed: Vec<String> = remote
        .backend
        .list(Kind::Marks)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    let ids: HashMap<String, SnapshotId> = remote_names(store, &remote.keys)?
        .into_iter()
        .map(|(id, name)| (name, id))
        .collect();
    let got = remote.backend.read_many(
        listed.iter().map(|n| (Kind::Marks, n.clone())).collect(),
        &mut |_| {},
    )?;
    let mut damaged = Vec::new();
    let known_undo: HashSet<(u64, String, Vec<SnapshotId>)> = store
        .undo_points()?
        .into_iter()
        .map(|u| (u.made_at_ms, u.profile, u.snapshots))
        .collect();
    for (name, bytes) in listed.iter().zip(got) {
        let path = Kind::Marks.path(name);
        let Some(bytes) = bytes else { continue };
        let mark = match remote.open_object(Kind::Marks, name, &bytes).and_then(|p| {
            let m: RemoteMark =
                serde_json::from_slice(&p).map_err(|e| format!("not a mark record: {e}"))?;
            if m.format != MARK_FORMAT {
                return Err(format!("unknown format {:?}", m.format));
            }
            if m.name(&remote.keys) != *name {
                return Err("it is not the mark its name says".into());
            }
            Ok(m)
        }) {
            Ok(m) => m,
            Err(why) => {
                damaged.push((path, why));
                continue;
            }
        };
        // A mark whose snapshots this copy does not hold (yet) waits.
        if !mark.needs().all(|n| ids.contains_key(n)) {
            continue;
        }
        let tabs: Vec<ArchivedTab> = mark
            .archived
            .iter()
            .map(|a| ArchivedTab {
                url: a.url.clone(),
                title: a.title.clone(),
                archived_at_ms: a.archived_at_ms,
                snapshot: ids[&a.snapshot],
                reason: a.reason.clone(),
                window: a.window,
                last_accessed: a.last_accessed,
                position: a.position,
            })
            .collect();
        if let Some(first) = tabs.first() {
            let have = store.archived_in(first.snapshot)?;
            let new: Vec<ArchivedTab> = tabs.into_iter().filter(|t| !have.contains(t)).collect();
            if !new.is_empty() {
                store.record_archived(&new)?;
            }
        }
        if let Some(u) = mark.undo {
            let point = UndoPoint {
                made_at_ms: u.made_at_ms,
                profile: u.profile,
                action: u.action,
                snapshots: u.snapshots.iter().map(|n| ids[n]).collect(),
                restored: u.restored.as_ref().map(|n| ids[n]),
                restored_content: u.restored_content,
            };
            let key = (
                point.made_at_ms,
                point.profile.clone(),
                point.snapshots.clone(),
            );
            if !known_undo.contains(&key) {
                store.record_undo_point(&point)?;
            }
        }
    }
    Ok(damaged)
}
