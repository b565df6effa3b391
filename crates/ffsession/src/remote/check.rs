//! Reading a remote back. Every snapshot record and content record is
//! downloaded, decrypted and checked against its name; every chunk a
//! content names must be listed; with `read_data`, every chunk is downloaded
//! too, decrypted and checked against its digest (as restic's `check
//! --read-data`). A snapshot whose record, content or any chunk is missing
//! or damaged is named, with the objects at fault: the next `copy` from a
//! machine that has the snapshot sends them again.
//!
//! An object whose read fails or hangs (past the read timeout,
//! `backend.rs`) while the server answers the others is *unreadable*, not
//! damaged: the check cannot say what it holds, and the failure may be the
//! server's or the network's for a moment. It is reported apart
//! ([`RemoteCheckReport::unreadable_objects`], with the snapshots that need
//! it), so the CLI neither notes it in the remote's `damaged/` records
//! (which tell every machine's copy to send an object again) nor counts
//! it as damage; the check is then not clean (the remote is not proven
//! whole). What a listing shows is not there (a folder where an object
//! should be is not an object) is missing, which is damage.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::backend::Kind;
use super::objects::{check_chunk, chunk_name, RemoteContent, RemoteSnapshot};
use super::{Remote, RemoteError};
use crate::store::Digest;

/// A remote object found missing or damaged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedObject {
    /// `snapshots`, `contents` or `chunks`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

/// A snapshot that does not read back whole from the remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedRemoteSnapshot {
    /// Its record's name.
    pub name: String,
    /// Its record, if that reads.
    pub record: Option<RemoteSnapshot>,
    /// What is wrong.
    pub reason: String,
}

/// What checking a remote found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RemoteCheckReport {
    /// Snapshot records read.
    pub snapshots: u64,
    /// Content records read.
    pub contents: u64,
    /// Chunks named by contents.
    pub chunks: u64,
    /// Chunks downloaded and verified (`read_data`).
    pub chunks_read: u64,
    /// Bytes downloaded.
    pub bytes_read: u64,
    /// Objects no snapshot needs (left by an interrupted copy or prune).
    pub unreferenced: u64,
    /// Content records no snapshot record names: left by a prune cut short,
    /// or the sign of snapshot records that went missing.
    pub contents_unnamed: u64,
    /// Objects missing or damaged.
    pub damaged_objects: Vec<DamagedObject>,
    /// Snapshots that do not read back whole.
    pub damaged_snapshots: Vec<DamagedRemoteSnapshot>,
    /// Objects whose read failed or hung while the server answered others
    /// (see the module documentation): not proven whole, not damaged.
    pub unreadable_objects: Vec<DamagedObject>,
    /// Snapshots not damaged that need an unreadable object.
    pub unreadable_snapshots: Vec<DamagedRemoteSnapshot>,
}

impl RemoteCheckReport {
    /// True if nothing is missing or damaged (some objects may still be
    /// unreadable: [`RemoteCheckReport::is_complete`]).
    pub fn is_clean(&self) -> bool {
        self.damaged_objects.is_empty() && self.damaged_snapshots.is_empty()
    }

    /// True if every object needed was read (none unreadable).
    pub fn is_complete(&self) -> bool {
        self.unreadable_objects.is_empty()
    }
}

/// Progress of a check, for a bar.
#[derive(Debug, Clone, Copy)]
pub enum RemoteCheckProgress {
    /// This many objects to read.
    Planned {
        /// Objects.
        objects: u64,
    },
    /// One more read, of this many bytes.
    Read {
        /// Its size.
        bytes: u64,
    },
}

const BATCH: usize = 256;

/// Check `remote` (see the module documentation).
pub fn check_remote(
    remote: &Remote,
    read_data: bool,
    progress: &mut dyn FnMut(RemoteCheckProgress),
) -> Result<RemoteCheckReport, RemoteError> {
    let mut report = RemoteCheckReport::default();
    let snapshots = remote.backend.list(Kind::Snapshots)?;
    let contents = remote.backend.list(Kind::Contents)?;
    let chunks: HashSet<String> = remote
        .backend
        .list(Kind::Chunks)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let planned = snapshots.len() + contents.len() + if read_data { chunks.len() } else { 0 };
    progress(RemoteCheckProgress::Planned {
        objects: planned as u64,
    });
    let mut read = |bytes: u64| progress(RemoteCheckProgress::Read { bytes });
    let mut damaged = |kind, name: &str, reason: String| {
        report.damaged_objects.push(DamagedObject {
            kind,
            name: name.to_owned(),
            reason,
        })
    };

    let names: Vec<String> = snapshots.iter().map(|e| e.name.clone()).collect();
    let got = remote.backend.read_many(
        names.iter().map(|n| (Kind::Snapshots, n.clone())).collect(),
        &mut read,
    )?;
    let mut records: Vec<(String, Result<RemoteSnapshot, String>)> = Vec::new();
    let mut unreadable: HashMap<String, String> = HashMap::new();
    let mut bytes_read = 0u64;
    for (name, bytes) in names.iter().zip(got) {
        let parsed = match bytes {
            Err(e) => {
                unreadable.insert(Kind::Snapshots.path(name), super::sync::reason_of(e));
                report.unreadable_snapshots.push(DamagedRemoteSnapshot {
                    name: name.clone(),
                    record: None,
                    reason: "its record does not read".into(),
                });
                continue;
            }
            Ok(None) => Err("missing (removed while checking?)".to_owned()),
            Ok(Some(b)) => {
                bytes_read += b.len() as u64;
                remote
                    .open_object(Kind::Snapshots, name, &b)
                    .and_then(|p| RemoteSnapshot::parse(&p, &remote.keys, name))
            }
        };
        if let Err(why) = &parsed {
            damaged("snapshots", name, why.clone());
        }
        records.push((name.clone(), parsed));
    }
    report.snapshots = (records.len() + report.unreadable_snapshots.len()) as u64;

    // Every content record, named or not.
    let content_names: Vec<String> = contents.iter().map(|e| e.name.clone()).collect();
    let got = remote.backend.read_many(
        content_names
            .iter()
            .map(|n| (Kind::Contents, n.clone()))
            .collect(),
        &mut read,
    )?;
    let mut lists: HashMap<String, Vec<(Digest, usize)>> = HashMap::new();
    for (name, bytes) in content_names.iter().zip(got) {
        let parsed = match bytes {
            Err(e) => {
                unreadable.insert(Kind::Contents.path(name), super::sync::reason_of(e));
                continue;
            }
            Ok(None) => Err("missing (removed while checking?)".to_owned()),
            Ok(Some(b)) => {
                bytes_read += b.len() as u64;
                remote
                    .open_object(Kind::Contents, name, &b)
                    .and_then(|p| RemoteContent::parse(&p, &remote.keys, name))
            }
        };
        match parsed {
            Ok((_, list)) => {
                lists.insert(name.clone(), list);
            }
            Err(why) => damaged("contents", name, why),
        }
    }
    report.contents = lists.len() as u64;
    let named: HashSet<String> = records
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .filter_map(|r| Digest::from_hex(&r.content))
        .map(|d| RemoteContent::name_of(&remote.keys, &d))
        .collect();
    report.contents_unnamed = content_names.iter().filter(|n| !named.contains(*n)).count() as u64;

    // Chunks: listed, and with read_data, read.
    let mut chunk_state: BTreeMap<String, (Digest, usize, Option<String>)> = BTreeMap::new();
    for list in lists.values() {
        for (d, n) in list {
            let name = chunk_name(&remote.keys, d);
            let why = (!chunks.contains(&name)).then(|| "missing".to_owned());
            chunk_state.entry(name).or_insert((*d, *n, why));
        }
    }
    report.chunks = chunk_state.len() as u64;
    report.unreferenced = chunks
        .iter()
        .filter(|n| !chunk_state.contains_key(*n))
        .count() as u64;
    if read_data {
        let present: Vec<String> = chunk_state
            .iter()
            .filter(|(_, (_, _, why))| why.is_none())
            .map(|(n, _)| n.clone())
            .collect();
        for batch in present.chunks(BATCH) {
            let got = remote.backend.read_many(
                batch.iter().map(|n| (Kind::Chunks, n.clone())).collect(),
                &mut read,
            )?;
            for (name, bytes) in batch.iter().zip(got) {
                let Some(state) = chunk_state.get_mut(name) else {
                    continue;
                };
                let verdict = match bytes {
                    Err(e) => {
                        unreadable.insert(Kind::Chunks.path(name), super::sync::reason_of(e));
                        continue;
                    }
                    Ok(None) => Err("missing".to_owned()),
                    Ok(Some(b)) => {
                        bytes_read += b.len() as u64;
                        remote
                            .open_object(Kind::Chunks, name, &b)
                            .and_then(|frame| check_chunk(&frame, &state.0, state.1))
                    }
                };
                report.chunks_read += 1;
                if let Err(why) = verdict {
                    state.2 = Some(why);
                }
            }
        }
    }
    for (name, (_, _, why)) in &chunk_state {
        if let Some(why) = why {
            damaged("chunks", name, why.clone());
        }
    }
    report.bytes_read = bytes_read;

    // Which snapshots that leaves damaged, or not proven whole.
    for (name, record) in records {
        let verdict = match &record {
            Err(why) => Some(Err(format!("its record: {why}"))),
            Ok(r) => {
                let digest = Digest::from_hex(&r.content).unwrap_or(Digest::of(b""));
                let cname = RemoteContent::name_of(&remote.keys, &digest);
                let cpath = Kind::Contents.path(&cname);
                match lists.get(&cname) {
                    None if unreadable.contains_key(&cpath) => {
                        Some(Ok(format!("its content record {cpath} does not read")))
                    }
                    None => Some(Err(format!(
                        "its content record {cpath} is {}",
                        if contents.iter().any(|e| e.name == cname) {
                            "damaged"
                        } else {
                            "missing"
                        }
                    ))),
                    Some(list) => {
                        let paths = || list.iter().map(|(d, _)| chunk_name(&remote.keys, d));
                        let damage = paths().find_map(|n| {
                            chunk_state
                                .get(&n)
                                .and_then(|s| s.2.as_ref())
                                .map(|why| format!("chunk {}: {why}", Kind::Chunks.path(&n)))
                        });
                        damage.map(Err).or_else(|| {
                            paths()
                                .map(|n| Kind::Chunks.path(&n))
                                .find(|p| unreadable.contains_key(p))
                                .map(|p| Ok(format!("chunk {p} does not read")))
                        })
                    }
                }
            }
        };
        match verdict {
            Some(Err(reason)) => report.damaged_snapshots.push(DamagedRemoteSnapshot {
                name,
                record: record.ok(),
                reason,
            }),
            Some(Ok(reason)) => report.unreadable_snapshots.push(DamagedRemoteSnapshot {
                name,
                record: record.ok(),
                reason,
            }),
            None => {}
        }
    }
    let mut unreadable: Vec<(String, String)> = unreadable.into_iter().collect();
    unreadable.sort();
    for (path, reason) in unreadable {
        let (kind, name) = path.split_once('/').unwrap_or(("", &path));
        let kind = match kind {
            "snapshots" => "snapshots",
            "contents" => "contents",
            _ => "chunks",
        };
        report.unreadable_objects.push(DamagedObject {
            kind,
            name: name.rsplit('/').next().unwrap_or(name).to_owned(),
            reason,
        });
    }
    Ok(report)
}
