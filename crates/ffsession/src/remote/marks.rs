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
//!
//! An *origin* mark says where one snapshot was taken: the machine and the
//! snapshot's id in the store it was copied from. It is named by a keyed
//! digest of the snapshot's name alone, so a reader fetches the origin of
//! each snapshot new to it without reading the others, and records it in its
//! copy ([`Store::record_origins`]): `list` on a remote shows both ids.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::backend::Kind;
use super::crypto::Keys;
use super::objects::RemoteSnapshot;
use super::{Remote, RemoteError};
use crate::store::{ArchivedTab, Origin, SnapshotId, Store, UndoAction, UndoPoint};

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

/// Where one snapshot was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoteOrigin {
    snapshot: String,
    host: String,
    id: i64,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<RemoteOrigin>,
}

/// The name of the origin mark of snapshot `snapshot` (its remote name).
fn origin_name(keys: &Keys, snapshot: &str) -> String {
    keys.name("origin", blake3::hash(snapshot.as_bytes()).as_bytes())
}

impl RemoteMark {
    fn name(&self, keys: &Keys) -> String {
        if let Some(o) = &self.origin {
            return origin_name(keys, &o.snapshot);
        }
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        keys.name("mark", blake3::hash(&bytes).as_bytes())
    }

    /// The remote snapshot names it needs.
    fn needs(&self) -> impl Iterator<Item = &String> {
        self.archived
            .iter()
            .map(|a| &a.snapshot)
            .chain(
                self.undo
                    .iter()
                    .flat_map(|u| u.snapshots.iter().chain(u.restored.iter())),
            )
            .chain(self.origin.iter().map(|o| &o.snapshot))
    }

    /// Decrypt and parse mark `name`, checking it is the one its name says.
    fn open(remote: &Remote, name: &str, bytes: &[u8]) -> Result<RemoteMark, String> {
        let plain = remote.open_object(Kind::Marks, name, bytes)?;
        let m: RemoteMark =
            serde_json::from_slice(&plain).map_err(|e| format!("not a mark record: {e}"))?;
        if m.format != MARK_FORMAT {
            return Err(format!("unknown format {:?}", m.format));
        }
        if m.name(&remote.keys) != name {
            return Err("it is not the mark its name says".into());
        }
        Ok(m)
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
            origin: None,
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
            origin: None,
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
        .map(|s| (s.id, RemoteSnapshot::bare(s).name(keys)))
        .collect())
}

/// Marks ready to send ([`marks_to_send`]).
#[derive(Default)]
pub(super) struct ToSend {
    /// Each mark: its kind, name and sealed bytes.
    pub items: Vec<(Kind, String, Vec<u8>)>,
    /// The contents of the local snapshots the archive and undo marks among
    /// them name: a copy confirms those are on the remote too, since a
    /// prune that ran before these marks arrived did not know to keep them.
    pub named: HashSet<crate::store::Digest>,
}

/// The marks of `store` the remote lacks, sealed, ready to send: each only
/// when every snapshot it names is on the remote (`on_remote`, listed after
/// the snapshot records were sent), and the origin (`host`, local id) of
/// every snapshot of `store` on the remote. A mark listed cut short is
/// removed, to be sent again.
pub(super) fn marks_to_send(
    store: &Store,
    remote: &Remote,
    host: &str,
    on_remote: &HashSet<String>,
) -> Result<ToSend, RemoteError> {
    let listed: HashMap<String, u64> = remote
        .backend
        .list(Kind::Marks)?
        .into_iter()
        .map(|e| (e.name, e.size))
        .collect();
    // A mark listed at a size its sealed record cannot have was cut short:
    // it is sent again. (An origin sent from another machine names another
    // host and id: only its least size is known.)
    let whole = |name: &str, mark: &RemoteMark| {
        let Some(&size) = listed.get(name) else {
            return false;
        };
        let (least, most) = match &mark.origin {
            Some(o) => {
                let bare = RemoteMark {
                    origin: Some(RemoteOrigin {
                        snapshot: o.snapshot.clone(),
                        host: String::new(),
                        id: 0,
                    }),
                    ..mark.clone()
                };
                (super::copy::sealed_range(&bare).0, u64::MAX)
            }
            None => super::copy::sealed_range(mark),
        };
        (least..=most).contains(&size)
    };
    let names = remote_names(store, &remote.keys)?;
    let mut marks = marks_of(store, &names, &remote.keys)?;
    for (id, snapshot) in &names {
        let name = origin_name(&remote.keys, snapshot);
        let origin = RemoteMark {
            format: MARK_FORMAT.into(),
            archived: Vec::new(),
            undo: None,
            origin: Some(RemoteOrigin {
                snapshot: snapshot.clone(),
                host: host.to_owned(),
                id: id.0,
            }),
        };
        if !whole(&name, &origin) {
            marks.push((name, origin));
        }
    }
    let contents: HashMap<&String, crate::store::Digest> = store
        .snapshots()?
        .into_iter()
        .filter_map(|s| names.get(&s.id).map(|n| (n, s.content_hash)))
        .collect();
    let mut out = ToSend::default();
    for (name, mark) in marks {
        if whole(&name, &mark) || !mark.needs().all(|n| on_remote.contains(n)) {
            continue;
        }
        if listed.contains_key(&name) {
            remote.backend.remove(Kind::Marks, &name)?;
        }
        if mark.origin.is_none() {
            out.named
                .extend(mark.needs().filter_map(|n| contents.get(n).copied()));
        }
        let plain = serde_json::to_vec(&mark).unwrap_or_default();
        out.items.push((Kind::Marks, name, remote.seal(&plain)?));
    }
    Ok(out)
}

/// Bring the remote's marks into `store` (its local copy): each mark whose
/// snapshots the store holds, archived tabs not recorded yet and undo points
/// (written again unchanged when known), and the origin of each snapshot
/// that has none recorded (`hosts`: the machine each snapshot record names,
/// its label and identity, by remote name). Returns
/// the marks that did not read (path, why).
pub(super) fn receive_marks(
    remote: &Remote,
    store: &mut Store,
    hosts: &HashMap<String, (String, Option<String>)>,
) -> Result<Vec<(String, String)>, RemoteError> {
    let listed: HashSet<String> = remote
        .backend
        .list(Kind::Marks)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let ids: HashMap<String, SnapshotId> = remote_names(store, &remote.keys)?
        .into_iter()
        .map(|(id, name)| (name, id))
        .collect();
    let mut damaged = receive_origins(remote, store, &ids, &listed, hosts)?;
    // Every other mark (an origin's name is known from its snapshot's).
    let origins: HashSet<String> = ids.keys().map(|n| origin_name(&remote.keys, n)).collect();
    let listed: Vec<String> = listed
        .into_iter()
        .filter(|n| !origins.contains(n))
        .collect();
    if listed.is_empty() {
        return Ok(damaged);
    }
    let got = remote.backend.read_many(
        listed.iter().map(|n| (Kind::Marks, n.clone())).collect(),
        &mut |_| {},
    )?;
    let known_undo: HashSet<(u64, String, Vec<SnapshotId>)> = store
        .undo_points()?
        .into_iter()
        .map(|u| (u.made_at_ms, u.profile, u.snapshots))
        .collect();
    for (name, bytes) in listed.iter().zip(got) {
        let path = Kind::Marks.path(name);
        // A mark that does not read now is read by the next sync.
        let Ok(Some(bytes)) = bytes else { continue };
        let mark = match RemoteMark::open(remote, name, &bytes) {
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

/// Record the origin of each snapshot of `store` that has none yet: the
/// machine its record names (identity and label), and its id in the store
/// it came from, which its origin mark says when the remote has one.
fn receive_origins(
    remote: &Remote,
    store: &mut Store,
    ids: &HashMap<String, SnapshotId>,
    listed: &HashSet<String>,
    hosts: &HashMap<String, (String, Option<String>)>,
) -> Result<Vec<(String, String)>, RemoteError> {
    let known = store.origins()?;
    let wanted: Vec<(&String, SnapshotId)> = ids
        .iter()
        .filter(|(_, id)| !known.contains_key(id))
        .map(|(n, id)| (n, *id))
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<String> = wanted
        .iter()
        .map(|(n, _)| origin_name(&remote.keys, n))
        .collect();
    let reads: Vec<(Kind, String)> = names
        .iter()
        .filter(|n| listed.contains(*n))
        .map(|n| (Kind::Marks, n.clone()))
        .collect();
    let mut got: HashMap<String, Vec<u8>> = HashMap::new();
    // Origins whose mark does not read now: recorded by the next sync.
    let mut unread: HashSet<String> = HashSet::new();
    let read_names: Vec<String> = reads.iter().map(|(_, n)| n.clone()).collect();
    for (name, bytes) in read_names
        .into_iter()
        .zip(remote.backend.read_many(reads, &mut |_| {})?)
    {
        match bytes {
            Ok(Some(b)) => {
                got.insert(name, b);
            }
            Ok(None) => {}
            Err(_) => {
                unread.insert(name);
            }
        }
    }
    let mut damaged = Vec::new();
    let mut origins = Vec::new();
    for ((snapshot, id), name) in wanted.into_iter().zip(names) {
        if unread.contains(&name) {
            continue;
        }
        let from_mark = match got.get(&name) {
            Some(bytes) => match RemoteMark::open(remote, &name, bytes) {
                Ok(RemoteMark {
                    origin: Some(o), ..
                }) => Some(Origin {
                    host: o.host,
                    id: Some(SnapshotId(o.id)),
                    machine: hosts.get(snapshot).and_then(|(_, m)| m.clone()),
                }),
                Ok(_) => None,
                Err(why) => {
                    damaged.push((Kind::Marks.path(&name), why));
                    None
                }
            },
            None => None,
        };
        let origin = from_mark.or_else(|| {
            hosts.get(snapshot).map(|(h, m)| Origin {
                host: h.clone(),
                id: None,
                machine: m.clone(),
            })
        });
        if let Some(o) = origin {
            origins.push((id, o));
        }
    }
    store.record_origins(&origins)?;
    Ok(damaged)
}

/// The marks that name no snapshot in `remaining` (the remote's snapshot
/// records after a prune removed some): the origin of each snapshot gone,
/// and every archive or undo point none of whose snapshots is left. A mark
/// that does not read is not among them (kept).
pub(super) fn stale_marks(
    remote: &Remote,
    remaining: &HashSet<String>,
) -> Result<Vec<super::backend::Entry>, RemoteError> {
    let listed = remote.backend.list(Kind::Marks)?;
    let live_origins: HashSet<String> = remaining
        .iter()
        .map(|n| origin_name(&remote.keys, n))
        .collect();
    let others: Vec<super::backend::Entry> = listed
        .into_iter()
        .filter(|e| !live_origins.contains(&e.name))
        .collect();
    let got = remote.backend.read_many(
        others
            .iter()
            .map(|e| (Kind::Marks, e.name.clone()))
            .collect(),
        &mut |_| {},
    )?;
    let mut stale = Vec::new();
    for (entry, bytes) in others.into_iter().zip(got) {
        let Ok(Some(bytes)) = bytes else { continue };
        let Ok(mark) = RemoteMark::open(remote, &entry.name, &bytes) else {
            continue;
        };
        if !mark.needs().any(|n| remaining.contains(n)) {
            stale.push(entry);
        }
    }
    Ok(stale)
}
