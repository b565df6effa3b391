//! Snapshots: what the caller hands in, what the catalog records, and the
//! verification that decides between `ok` and `corrupt`.

use std::io::Read;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Digest;
use crate::error::{IoResultExt, PathError};
use crate::format::{self, Format, SessionData};
use crate::sources::{short_reason, SourceFile, SourceKind};

/// The id of a snapshot in its store's catalog; ids are never reused.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct SnapshotId(pub i64);

impl std::fmt::Display for SnapshotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A session file to take a snapshot of: its bytes and where they came from.
#[derive(Debug, Clone)]
pub struct SnapshotSource {
    /// The file's bytes, as read from disk.
    pub bytes: Vec<u8>,
    /// The profile's name, or its path.
    pub profile: String,
    /// The file's path relative to the profile (`sessionstore-backups/recovery.jsonlz4`).
    pub file_name: String,
    /// The file's role.
    pub kind: SourceKind,
    /// The file's modification time, in ms since the Unix epoch.
    pub mtime_ms: Option<u64>,
}

impl SnapshotSource {
    /// Read `file` of `profile`, with the modification time of the very file
    /// read (Firefox replaces session files by renaming over them). A link is
    /// not followed and only a regular file of at most
    /// [`MAX_SESSION_BYTES`](crate::sources::MAX_SESSION_BYTES) is read,
    /// whatever was put in its place since it was listed.
    pub fn read(
        profile: impl Into<String>,
        file: &SourceFile,
    ) -> Result<SnapshotSource, PathError> {
        let path = &file.path;
        let limit = crate::sources::MAX_SESSION_BYTES;
        let f = crate::fs_util::open_no_follow(path, std::fs::OpenOptions::new().read(true))
            .with_path(path)?;
        let meta = f.metadata().with_path(path)?;
        let refuse = |why: String| PathError {
            path: path.clone(),
            source: std::io::Error::other(why),
        };
        if !meta.is_file() {
            return Err(refuse("not a regular file".into()));
        }
        if meta.len() > limit {
            return Err(refuse(format!(
                "{} bytes, more than the {} MiB a session file can be",
                meta.len(),
                limit >> 20
            )));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        // One byte past the bound tells a file that grew while being read.
        f.take(limit + 1).read_to_end(&mut bytes).with_path(path)?;
        if bytes.len() as u64 > limit {
            return Err(refuse(format!(
                "it grew past the {} MiB a session file can be while being read",
                limit >> 20
            )));
        }
        Ok(SnapshotSource {
            bytes,
            profile: profile.into(),
            file_name: file.name.clone(),
            kind: file.kind.clone(),
            mtime_ms: meta.modified().ok().and_then(unix_ms),
        })
    }
}

/// Milliseconds since the Unix epoch; `None` before 1970.
pub fn unix_ms(t: SystemTime) -> Option<u64> {
    let ms = t.duration_since(UNIX_EPOCH).ok()?.as_millis();
    u64::try_from(ms).ok()
}

/// What a verified session holds, in numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SessionCounts {
    /// Open windows; for one of Zen's files ([`SourceKind::is_zen`]), its
    /// spaces.
    pub windows: u64,
    /// Tabs in open windows; for one of Zen's files, its tabs.
    pub tabs: u64,
    /// Recently closed tabs of open windows.
    pub closed_tabs: u64,
    /// Recently closed windows.
    pub closed_windows: u64,
}

/// Whether a snapshot's file was a readable session when it was taken.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum SnapshotStatus {
    /// It decompressed and parsed; the stored content is its session JSON.
    Ok,
    /// It did not; the stored content is the file's raw bytes.
    Corrupt {
        /// Why it is not a readable session.
        reason: String,
    },
}

/// One snapshot, as the catalog records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotInfo {
    /// Its id.
    pub id: SnapshotId,
    /// When it was taken (ms since the Unix epoch), as the caller said.
    pub taken_at_ms: u64,
    /// The profile's name or path.
    pub profile: String,
    /// The file's path relative to the profile.
    pub file_name: String,
    /// The file's role.
    pub kind: SourceKind,
    /// The file's modification time (ms since the Unix epoch).
    pub mtime_ms: Option<u64>,
    /// The session's own `session.lastUpdate` (ms since the Unix epoch); for
    /// one of Zen's files, its `lastCollected`.
    pub last_update_ms: Option<u64>,
    /// Windows and tabs; `None` for a corrupt snapshot.
    pub counts: Option<SessionCounts>,
    /// BLAKE3 digest of the stored content.
    pub content_hash: Digest,
    /// Bytes of the stored content: the session JSON, or the raw file when corrupt.
    pub json_size: u64,
    /// Compressed bytes this snapshot added to the store (0 when all its chunks were there).
    pub stored_size: u64,
    /// The file's container format; `None` if it was neither.
    pub format: Option<Format>,
    /// `ok`, or `corrupt` with the reason.
    #[serde(flatten)]
    pub status: SnapshotStatus,
}

impl SnapshotInfo {
    /// True if the file was a readable session.
    pub fn is_ok(&self) -> bool {
        self.status == SnapshotStatus::Ok
    }

    /// The session's own time: Firefox's `session.lastUpdate`; for a file
    /// that did not read as a session, the file's modification time; failing
    /// both, when the snapshot was taken. Sessions are ordered by this, never
    /// by snapshot id or backup time: `upgrade.jsonlz4-*` and
    /// `previous.jsonlz4` hold older sessions than the files backed up
    /// beside them.
    pub fn session_time_ms(&self) -> u64 {
        self.last_update_ms
            .or(self.mtime_ms)
            .unwrap_or(self.taken_at_ms)
    }
}

/// Newest session first: by [`SnapshotInfo::session_time_ms`], then by the
/// file's role in the order Firefox tries the files (`sessionstore.jsonlz4`
/// before `recovery.jsonlz4` before `previous.jsonlz4` before an upgrade
/// copy), then by backup time and id.
pub fn newest_session_first(a: &SnapshotInfo, b: &SnapshotInfo) -> std::cmp::Ordering {
    b.session_time_ms()
        .cmp(&a.session_time_ms())
        .then_with(|| a.kind.cmp(&b.kind))
        .then_with(|| b.taken_at_ms.cmp(&a.taken_at_ms))
        .then_with(|| b.id.cmp(&a.id))
}

/// Sizes and counts of a whole store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct StoreStats {
    /// Snapshots in the catalog.
    pub snapshots: u64,
    /// Distinct contents in the catalog.
    pub contents: u64,
    /// Chunks in the catalog.
    pub chunks: u64,
    /// Uncompressed bytes of those chunks.
    pub chunk_raw_bytes: u64,
    /// Compressed bytes of those chunks (their files' sizes).
    pub chunk_stored_bytes: u64,
    /// Bytes of `catalog.sqlite` and its write-ahead log.
    pub catalog_bytes: u64,
}

/// A chunk file that no snapshot references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreferencedChunk {
    /// The chunk's digest (from its file name).
    pub digest: Digest,
    /// The chunk file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// True if the catalog still lists the chunk (its snapshots were removed);
    /// false if no catalog row ever committed (a crash while adding).
    pub in_catalog: bool,
}

/// What [`Store::collect_garbage`](super::Store::collect_garbage) removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct GcReport {
    /// Chunk files deleted.
    pub chunks_removed: u64,
    /// Bytes of those files.
    pub bytes_removed: u64,
    /// Catalog rows of contents no snapshot referenced any more.
    pub contents_removed: u64,
    /// Temporary files left by interrupted writes.
    pub temp_files_removed: u64,
    /// Manifest files of snapshots and contents no longer in the catalog.
    pub manifests_removed: u64,
}

/// The verdict on a source file's bytes.
pub(super) struct Checked {
    pub(super) content: Vec<u8>,
    pub(super) format: Option<Format>,
    pub(super) verdict: Result<(SessionCounts, Option<u64>), String>,
}

/// Decompress and parse `bytes`; keep the session JSON if that works, the raw
/// bytes and the reason if not. A file of one of Zen's roles
/// ([`SourceKind::is_zen`]) is parsed as Zen's sessions file
/// ([`crate::zen`]): its counts are its spaces (as `windows`) and tabs, its
/// time `lastCollected`.
pub(super) fn check(file_name: &str, kind: &SourceKind, bytes: Vec<u8>) -> Checked {
    let detected = format::detect(&bytes).ok();
    if let Some(promised) = mozlz4_promise(&bytes) {
        let limit = crate::sources::MAX_SESSION_BYTES;
        if promised > limit {
            // Damaged or not Firefox's: kept as it is, never decompressed.
            return Checked {
                content: bytes,
                format: detected,
                verdict: Err(format!(
                    "its header promises {promised} bytes of session JSON, more than the {} MiB a session can be",
                    limit >> 20
                )),
            };
        }
    }
    if kind.is_zen() {
        return check_zen(file_name, bytes, detected);
    }
    let read = SessionData::from_bytes(file_name, bytes.clone()).and_then(|data| {
        let summary = data.parse()?.summary();
        Ok((data, summary))
    });
    match read {
        Ok((data, s)) => {
            let content = match data.format() {
                Format::Mozlz4 => data.json().to_vec(),
                Format::Json => bytes,
            };
            let counts = SessionCounts {
                windows: s.windows as u64,
                tabs: s.tabs as u64,
                closed_tabs: s.closed_tabs as u64,
                closed_windows: s.closed_windows as u64,
            };
            Checked {
                content,
                format: Some(data.format()),
                verdict: Ok((counts, s.timestamps.last_update)),
            }
        }
        Err(e) => Checked {
            content: bytes,
            format: detected,
            verdict: Err(short_reason(&e)),
        },
    }
}

/// [`check`] for one of Zen's files.
fn check_zen(file_name: &str, bytes: Vec<u8>, detected: Option<Format>) -> Checked {
    let read = SessionData::from_bytes(file_name, bytes.clone()).and_then(|data| {
        let s = data.parse_zen()?.summary();
        Ok((data, s))
    });
    match read {
        Ok((data, s)) => {
            let content = match data.format() {
                Format::Mozlz4 => data.json().to_vec(),
                Format::Json => bytes,
            };
            let counts = SessionCounts {
                windows: s.spaces as u64,
                tabs: s.tabs as u64,
                closed_tabs: 0,
                closed_windows: 0,
            };
            Checked {
                content,
                format: Some(data.format()),
                verdict: Ok((counts, s.last_collected)),
            }
        }
        Err(e) => Checked {
            content: bytes,
            format: detected,
            verdict: Err(short_reason(&e)),
        },
    }
}

/// The JSON size a mozlz4 file's header promises; `None` for other files.
fn mozlz4_promise(bytes: &[u8]) -> Option<u64> {
    let size = bytes
        .strip_prefix(format::MOZLZ4_MAGIC)?
        .get(..format::MOZLZ4_HEADER_LEN - format::MOZLZ4_MAGIC.len())?;
    Some(u64::from(u32::from_le_bytes(size.try_into().ok()?)))
}

pub(crate) fn kind_name(kind: &SourceKind) -> &'static str {
    match kind {
        SourceKind::SessionStore => "session-store",
        SourceKind::Recovery => "recovery",
        SourceKind::RecoveryBackup => "recovery-backup",
        SourceKind::Previous => "previous",
        SourceKind::Upgrade => "upgrade",
        SourceKind::Legacy => "legacy",
        SourceKind::Other => "other",
        SourceKind::ZenSessions => "zen-sessions",
        SourceKind::ZenBackup => "zen-backup",
        SourceKind::ZenClean => "zen-clean",
        SourceKind::ZenDated => "zen-dated",
    }
}

pub(crate) fn kind_from_name(name: &str) -> SourceKind {
    match name {
        "session-store" => SourceKind::SessionStore,
        "recovery" => SourceKind::Recovery,
        "recovery-backup" => SourceKind::RecoveryBackup,
        "previous" => SourceKind::Previous,
        "upgrade" => SourceKind::Upgrade,
        "legacy" => SourceKind::Legacy,
        "zen-sessions" => SourceKind::ZenSessions,
        "zen-backup" => SourceKind::ZenBackup,
        "zen-clean" => SourceKind::ZenClean,
        "zen-dated" => SourceKind::ZenDated,
        _ => SourceKind::Other,
    }
}
