//! What a remote store's objects hold, and their names.
//!
//! ```text
//! ffsession-remote.json          plain JSON: {"format": "ffsession-remote/1", ...}; no secret
//! keys/<16 hex>                  the identity, age-encrypted with a password (scrypt)
//! locks/<16 hex>                 age: who copies or prunes, since when
//! snapshots/<64 hex>             age: one snapshot's record (host, profile, file, times, content)
//! contents/<64 hex>              age: one content's digest, size and ordered chunks
//! chunks/<2 hex>/<64 hex>        age: one chunk's zstd frame, as the local store keeps it
//! ```
//!
//! Names are keyed digests ([`Keys::name`]): a chunk's of its BLAKE3, a
//! content's of its BLAKE3, a snapshot's of its record without the host
//! (so the same snapshot sent twice, from a store moved to a new machine
//! too, is one object). Local snapshot ids stay local: each machine gives
//! the snapshots it reads from a remote ids of its own.

use serde::{Deserialize, Serialize};

use super::crypto::Keys;
use crate::format::Format;
use crate::machine::{valid_id, Machine, MachineKey};
use crate::store::snapshot::{kind_from_name, kind_name};
use crate::store::{Digest, SessionCounts, SnapshotId, SnapshotInfo, SnapshotStatus};

/// The marker's file name.
pub const MARKER: &str = "ffsession-remote.json";
/// The marker's format.
pub const REMOTE_FORMAT: &str = "ffsession-remote/1";
const SNAPSHOT_FORMAT: &str = "ffsession-remote-snapshot/1";
const CONTENT_FORMAT: &str = "ffsession-remote-content/1";

/// The plain marker at the top of a remote store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// [`REMOTE_FORMAT`].
    pub format: String,
    /// How objects are encrypted.
    pub encryption: String,
    /// Where the keys are and how they are wrapped.
    pub keys: String,
}

impl Marker {
    /// The marker of a new remote.
    pub fn new() -> Marker {
        Marker {
            format: REMOTE_FORMAT.into(),
            encryption: "age (X25519), every object; names are keyed BLAKE3".into(),
            keys: "keys/*: an age identity file, age-encrypted with the password (scrypt)".into(),
        }
    }
}

impl Default for Marker {
    fn default() -> Self {
        Self::new()
    }
}

/// A snapshot's record on a remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteSnapshot {
    /// `ffsession-remote-snapshot/1`.
    pub format: String,
    /// The label of the machine it was taken on (its host name).
    pub host: String,
    /// That machine's identity ([`crate::machine::Machine`]); records made
    /// before identities have none and go by `host`. Not part of the name:
    /// the same snapshot sent from a store moved to a new machine is one
    /// object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// When it was taken (ms since the epoch).
    pub taken_at: u64,
    /// The profile's name.
    pub profile: String,
    /// The file's path in the profile.
    pub source_name: String,
    /// The file's role.
    pub source_kind: String,
    /// The file's modification time.
    pub source_mtime: Option<u64>,
    /// The session's own `lastUpdate`.
    pub last_update: Option<u64>,
    /// windows, tabs, closed tabs, closed windows.
    pub counts: Option<[u64; 4]>,
    /// The content's BLAKE3 (hex).
    pub content: String,
    /// The content's size.
    pub content_size: u64,
    /// `mozlz4` or `json`.
    pub file_format: Option<String>,
    /// `ok` or `corrupt`.
    pub status: String,
    /// Why corrupt.
    pub reason: Option<String>,
}

/// The fields that make a snapshot what it is (not the host, not the local
/// id or the bytes it added to one store).
#[derive(Serialize)]
struct Identity<'a> {
    taken_at: u64,
    profile: &'a str,
    source_name: &'a str,
    source_kind: &'a str,
    source_mtime: Option<u64>,
    last_update: Option<u64>,
    counts: Option<[u64; 4]>,
    content: &'a str,
    content_size: u64,
    file_format: Option<&'a str>,
    status: &'a str,
    reason: Option<&'a str>,
}

impl RemoteSnapshot {
    /// The record of local snapshot `info`, taken on `machine`.
    pub fn of(info: &SnapshotInfo, machine: &Machine) -> RemoteSnapshot {
        RemoteSnapshot {
            host: machine.label.clone(),
            machine: Some(machine.id.clone()),
            ..Self::bare(info)
        }
    }

    /// The record of `info` without a machine: its name is every
    /// machine's record's name, and it is the smallest such record.
    pub(super) fn bare(info: &SnapshotInfo) -> RemoteSnapshot {
        let (status, reason) = match &info.status {
            SnapshotStatus::Ok => ("ok", None),
            SnapshotStatus::Corrupt { reason } => ("corrupt", Some(reason.clone())),
        };
        RemoteSnapshot {
            format: SNAPSHOT_FORMAT.into(),
            host: String::new(),
            machine: None,
            taken_at: info.taken_at_ms,
            profile: info.profile.clone(),
            source_name: info.file_name.clone(),
            source_kind: kind_name(&info.kind).into(),
            source_mtime: info.mtime_ms,
            last_update: info.last_update_ms,
            counts: info
                .counts
                .map(|c| [c.windows, c.tabs, c.closed_tabs, c.closed_windows]),
            content: info.content_hash.to_hex(),
            content_size: info.json_size,
            file_format: info.format.map(|f| f.to_string()),
            status: status.into(),
            reason,
        }
    }

    /// The local record this stands for (id 0: the importer gives one).
    pub fn info(&self) -> Option<SnapshotInfo> {
        let status = match (self.status.as_str(), &self.reason) {
            ("ok", None) => SnapshotStatus::Ok,
            ("corrupt", Some(r)) => SnapshotStatus::Corrupt { reason: r.clone() },
            _ => return None,
        };
        let format = match self.file_format.as_deref() {
            None => None,
            Some("mozlz4") => Some(Format::Mozlz4),
            Some("json") => Some(Format::Json),
            Some(_) => return None,
        };
        Some(SnapshotInfo {
            id: SnapshotId(0),
            taken_at_ms: self.taken_at,
            profile: self.profile.clone(),
            file_name: self.source_name.clone(),
            kind: kind_from_name(&self.source_kind),
            mtime_ms: self.source_mtime,
            last_update_ms: self.last_update,
            counts: self.counts.map(|[w, t, ct, cw]| SessionCounts {
                windows: w,
                tabs: t,
                closed_tabs: ct,
                closed_windows: cw,
            }),
            content_hash: Digest::from_hex(&self.content)?,
            json_size: self.content_size,
            stored_size: 0,
            format,
            status,
        })
    }

    /// Its object name under `keys`.
    pub fn name(&self, keys: &Keys) -> String {
        let id = Identity {
            taken_at: self.taken_at,
            profile: &self.profile,
            source_name: &self.source_name,
            source_kind: &self.source_kind,
            source_mtime: self.source_mtime,
            last_update: self.last_update,
            counts: self.counts,
            content: &self.content,
            content_size: self.content_size,
            file_format: self.file_format.as_deref(),
            status: &self.status,
            reason: self.reason.as_deref(),
        };
        let bytes = serde_json::to_vec(&id).unwrap_or_default();
        keys.name("snapshot", blake3::hash(&bytes).as_bytes())
    }

    /// Its object name on `remote`.
    pub fn name_for(&self, remote: &super::Remote) -> String {
        self.name(&remote.keys)
    }

    /// The key its machine's snapshots are grouped under.
    pub fn machine_key(&self) -> MachineKey {
        MachineKey::of(self.machine.as_deref(), &self.host)
    }

    /// Parse a decrypted snapshot object, checking it is the one `name` says.
    pub fn parse(plain: &[u8], keys: &Keys, name: &str) -> Result<RemoteSnapshot, String> {
        let s: RemoteSnapshot =
            serde_json::from_slice(plain).map_err(|e| format!("not a snapshot record: {e}"))?;
        if s.format != SNAPSHOT_FORMAT {
            return Err(format!("unknown format {:?}", s.format));
        }
        if s.name(keys) != name {
            return Err("it is not the snapshot its name says".into());
        }
        if s.info().is_none() || s.machine.as_deref().is_some_and(|m| !valid_id(m)) {
            return Err("a field holds a value no snapshot can".into());
        }
        Ok(s)
    }
}

/// A content's record on a remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteContent {
    /// `ffsession-remote-content/1`.
    pub format: String,
    /// The content's BLAKE3 (hex).
    pub content: String,
    /// Its size.
    pub size: u64,
    /// (chunk BLAKE3 hex, raw size), in order.
    pub chunks: Vec<(String, u64)>,
}

impl RemoteContent {
    /// The record of content `digest` made of `list`.
    pub fn new(digest: &Digest, list: &[(Digest, usize)]) -> RemoteContent {
        RemoteContent {
            format: CONTENT_FORMAT.into(),
            content: digest.to_hex(),
            size: list.iter().map(|(_, n)| *n as u64).sum(),
            chunks: list.iter().map(|(d, n)| (d.to_hex(), *n as u64)).collect(),
        }
    }

    /// The object name of content `digest`.
    pub fn name_of(keys: &Keys, digest: &Digest) -> String {
        keys.name("content", digest.as_bytes())
    }

    /// The chunk list, if well formed and adding up to the size.
    pub fn list(&self) -> Option<Vec<(Digest, usize)>> {
        let list: Option<Vec<(Digest, usize)>> = self
            .chunks
            .iter()
            .map(|(d, n)| Some((Digest::from_hex(d)?, usize::try_from(*n).ok()?)))
            .collect();
        let list = list?;
        (list.iter().map(|(_, n)| *n as u64).sum::<u64>() == self.size).then_some(list)
    }

    /// Parse a decrypted content object, checking it is the one `name` says.
    pub fn parse(
        plain: &[u8],
        keys: &Keys,
        name: &str,
    ) -> Result<(Digest, Vec<(Digest, usize)>), String> {
        let c: RemoteContent =
            serde_json::from_slice(plain).map_err(|e| format!("not a content record: {e}"))?;
        if c.format != CONTENT_FORMAT {
            return Err(format!("unknown format {:?}", c.format));
        }
        let digest = Digest::from_hex(&c.content).ok_or("its content digest is malformed")?;
        if Self::name_of(keys, &digest) != name {
            return Err("it is not the content its name says".into());
        }
        let list = c
            .list()
            .ok_or("its chunk list is malformed or does not add up to its size")?;
        Ok((digest, list))
    }
}

/// The object name of chunk `digest`.
pub fn chunk_name(keys: &Keys, digest: &Digest) -> String {
    keys.name("chunk", digest.as_bytes())
}

/// Check a decrypted chunk frame: it decompresses to `raw_size` bytes whose
/// BLAKE3 is `digest`.
pub fn check_chunk(frame: &[u8], digest: &Digest, raw_size: usize) -> Result<(), String> {
    match zstd::bulk::decompress(frame, raw_size) {
        Ok(raw) if raw.len() == raw_size && Digest::of(&raw) == *digest => Ok(()),
        Ok(_) => Err("its content does not match its digest".into()),
        Err(e) => Err(format!("zstd: {e}")),
    }
}
