//! Manifests: each snapshot's record and each content's chunk list as small
//! immutable files beside the chunks, so the catalog can be checked row by
//! row and rebuilt from the store itself.
//!
//! ```text
//! store.json                         the store's own parameters (chunk sizes)
//! snapshots/<id>.json                one per snapshot: what its catalog row says
//! contents/<2 hex>/<digest>.json     one per content: its ordered chunks
//! ```
//!
//! Each file is a JSON object `{"manifest": {...}, "blake3": "<hex>"}` whose
//! `blake3` is the digest of the exact bytes of the `manifest` value, so a
//! flipped bit in a manifest is found by reading it alone. A content manifest
//! is also named by its content's digest, which the chunks it lists must hash
//! to. Manifests are written (through `write_atomic`) before the catalog
//! transaction that names them, and deleted after the rows that named them
//! (garbage collection deletes the manifests no row names before any chunk
//! file), so a committed row always has its manifests, and a manifest whose
//! row never committed names only chunks that are on disk.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::chunk::{ChunkerParams, Digest};
use super::snapshot::{kind_from_name, kind_name};
use super::{SessionCounts, SnapshotId, SnapshotInfo, SnapshotStatus, StoreError};
use crate::error::{IoResultExt, PathError};
use crate::format::Format;
use crate::fs_util::write_atomic;

/// The folder of snapshot manifests.
pub const SNAPSHOTS_DIR: &str = "snapshots";
/// The folder of content manifests.
pub const CONTENTS_DIR: &str = "contents";
/// The store's parameters.
pub const STORE_FILE: &str = "store.json";
/// The folder of archive manifests (tabs `tidy` closed).
pub const ARCHIVES_DIR: &str = "archives";

const SNAPSHOT_FORMAT: &str = "ffsession-snapshot/1";
const CONTENT_FORMAT: &str = "ffsession-content/1";
const STORE_FORMAT: &str = "ffsession-store/1";
const ARCHIVE_FORMAT: &str = "ffsession-archive/1";

/// Tabs one `tidy` closed, all held by one snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchiveManifest {
    format: String,
    tabs: Vec<super::ArchivedTab>,
}

/// `archives/<snapshot id>-<archived at>.json`; `None` for no tabs.
pub(super) fn archive_path(dir: &Path, tabs: &[super::ArchivedTab]) -> Option<PathBuf> {
    let first = tabs.first()?;
    Some(dir.join(ARCHIVES_DIR).join(format!(
        "{}-{}.json",
        first.snapshot.0, first.archived_at_ms
    )))
}

/// Write (durably) the manifest of the tabs one `tidy` archived.
pub(super) fn write_archive(dir: &Path, tabs: &[super::ArchivedTab]) -> Result<(), StoreError> {
    let Some(path) = archive_path(dir, tabs) else {
        return Ok(());
    };
    write_sealed(
        dir,
        ARCHIVES_DIR,
        &path,
        &ArchiveManifest {
            format: ARCHIVE_FORMAT.into(),
            tabs: tabs.to_vec(),
        },
    )
}

/// Every archive manifest (path, its tabs or why they cannot be read).
#[allow(clippy::type_complexity)]
pub(super) fn archive_files(
    dir: &Path,
) -> Result<Vec<(PathBuf, Result<Vec<super::ArchivedTab>, String>)>, PathError> {
    Ok(sealed_files::<ArchiveManifest>(dir, ARCHIVES_DIR)?
        .into_iter()
        .map(|(path, m)| {
            let tabs = m.and_then(|m| {
                if m.format == ARCHIVE_FORMAT {
                    Ok(m.tabs)
                } else {
                    Err(format!("unknown format {:?}", m.format))
                }
            });
            (path, tabs)
        })
        .collect())
}

/// Write `value` sealed (with its checksum) as `path`, a file of the
/// store's folder `folder` (made if missing), durably.
pub(super) fn write_sealed(
    dir: &Path,
    folder: &str,
    path: &Path,
    value: &impl Serialize,
) -> Result<(), StoreError> {
    super::layout::make_dir(&dir.join(folder), dir)?;
    let bytes = seal(value).with_path(path)?;
    write_atomic(path, |w: &mut dyn Write| w.write_all(&bytes))?;
    Ok(())
}

/// Every sealed `.json` file of the store's folder `folder`, by name (path,
/// its value or why it cannot be read).
#[allow(clippy::type_complexity)]
pub(super) fn sealed_files<T: for<'de> Deserialize<'de>>(
    dir: &Path,
    folder: &str,
) -> Result<Vec<(PathBuf, Result<T, String>)>, PathError> {
    let folder = dir.join(folder);
    let entries = match fs::read_dir(&folder) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(PathError {
                path: folder,
                source: e,
            })
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.with_path(&folder)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") || crate::fs_util::is_temp_file_name(&name) {
            continue;
        }
        let path = entry.path();
        let value = read_file(&path, CONTENT_MOST)
            .and_then(|b| open::<T>(&b))
            .map_err(|e| e.to_string());
        out.push((path, value));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// What a snapshot manifest records: everything its catalog row holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SnapshotManifest {
    pub format: String,
    pub id: i64,
    pub taken_at: u64,
    pub profile: String,
    pub source_name: String,
    pub source_kind: String,
    pub source_mtime: Option<u64>,
    pub last_update: Option<u64>,
    pub counts: Option<ManifestCounts>,
    pub content: String,
    pub content_size: u64,
    pub stored_size: u64,
    pub file_format: Option<String>,
    pub status: String,
    pub reason: Option<String>,
}

/// [`SessionCounts`], as a manifest writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ManifestCounts {
    pub windows: u64,
    pub tabs: u64,
    pub closed_tabs: u64,
    pub closed_windows: u64,
}

impl SnapshotManifest {
    /// The manifest of a catalog row.
    pub(super) fn of(info: &SnapshotInfo) -> SnapshotManifest {
        let (status, reason) = match &info.status {
            SnapshotStatus::Ok => ("ok", None),
            SnapshotStatus::Corrupt { reason } => ("corrupt", Some(reason.clone())),
        };
        SnapshotManifest {
            format: SNAPSHOT_FORMAT.into(),
            id: info.id.0,
            taken_at: info.taken_at_ms,
            profile: info.profile.clone(),
            source_name: info.file_name.clone(),
            source_kind: kind_name(&info.kind).into(),
            source_mtime: info.mtime_ms,
            last_update: info.last_update_ms,
            counts: info.counts.map(|c| ManifestCounts {
                windows: c.windows,
                tabs: c.tabs,
                closed_tabs: c.closed_tabs,
                closed_windows: c.closed_windows,
            }),
            content: info.content_hash.to_hex(),
            content_size: info.json_size,
            stored_size: info.stored_size,
            file_format: info.format.map(|f| f.to_string()),
            status: status.into(),
            reason,
        }
    }

    /// The catalog row this manifest records; `None` if a field is not one a
    /// row can hold.
    pub(super) fn info(&self) -> Option<SnapshotInfo> {
        let status = match (self.status.as_str(), &self.reason) {
            ("ok", None) => SnapshotStatus::Ok,
            ("corrupt", Some(reason)) => SnapshotStatus::Corrupt {
                reason: reason.clone(),
            },
            _ => return None,
        };
        let format = match self.file_format.as_deref() {
            None => None,
            Some("mozlz4") => Some(Format::Mozlz4),
            Some("json") => Some(Format::Json),
            Some(_) => return None,
        };
        Some(SnapshotInfo {
            id: SnapshotId(self.id),
            taken_at_ms: self.taken_at,
            profile: self.profile.clone(),
            file_name: self.source_name.clone(),
            kind: kind_from_name(&self.source_kind),
            mtime_ms: self.source_mtime,
            last_update_ms: self.last_update,
            counts: self.counts.map(|c| SessionCounts {
                windows: c.windows,
                tabs: c.tabs,
                closed_tabs: c.closed_tabs,
                closed_windows: c.closed_windows,
            }),
            content_hash: Digest::from_hex(&self.content)?,
            json_size: self.content_size,
            stored_size: self.stored_size,
            format,
            status,
        })
    }
}

/// A content's ordered chunks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ContentManifest {
    pub format: String,
    pub size: u64,
    /// (digest in hex, raw size) per chunk, in order.
    pub chunks: Vec<(String, u64)>,
}

impl ContentManifest {
    pub(super) fn new(list: &[(Digest, usize)]) -> ContentManifest {
        ContentManifest {
            format: CONTENT_FORMAT.into(),
            size: list.iter().map(|(_, n)| *n as u64).sum(),
            chunks: list.iter().map(|(d, n)| (d.to_hex(), *n as u64)).collect(),
        }
    }

    /// The chunk list; `None` if a digest is malformed or the sizes do not
    /// add up.
    pub(super) fn list(&self) -> Option<Vec<(Digest, usize)>> {
        let list: Option<Vec<(Digest, usize)>> = self
            .chunks
            .iter()
            .map(|(d, n)| Some((Digest::from_hex(d)?, usize::try_from(*n).ok()?)))
            .collect();
        let list = list?;
        (list.iter().map(|(_, n)| *n as u64).sum::<u64>() == self.size).then_some(list)
    }
}

/// The store's own parameters, so a store can be read (and its catalog
/// rebuilt) from its files alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StoreManifest {
    pub format: String,
    pub chunker: String,
    pub chunk_min: usize,
    pub chunk_avg: usize,
    pub chunk_max: usize,
    pub chunk_hash: String,
    pub chunk_compression: String,
}

impl StoreManifest {
    pub(super) fn new(params: ChunkerParams) -> StoreManifest {
        StoreManifest {
            format: STORE_FORMAT.into(),
            chunker: "fastcdc-v2020".into(),
            chunk_min: params.min,
            chunk_avg: params.avg,
            chunk_max: params.max,
            chunk_hash: "blake3".into(),
            chunk_compression: "zstd".into(),
        }
    }

    pub(super) fn params(&self) -> ChunkerParams {
        ChunkerParams {
            min: self.chunk_min,
            avg: self.chunk_avg,
            max: self.chunk_max,
        }
    }
}

/// Why a manifest could not be used.
#[derive(Debug)]
pub(super) enum ManifestFailure {
    /// No such file.
    Missing,
    /// It is there but not a whole manifest of its kind: what is wrong.
    Damaged(String),
    /// It could not be read.
    Io(io::Error),
}

impl std::fmt::Display for ManifestFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ManifestFailure::Missing => f.write_str("missing"),
            ManifestFailure::Damaged(why) => f.write_str(why),
            ManifestFailure::Io(e) => e.fmt(f),
        }
    }
}

#[derive(Serialize)]
struct EnvelopeOut<'a> {
    manifest: &'a RawValue,
    blake3: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvelopeIn<'a> {
    #[serde(borrow)]
    manifest: &'a RawValue,
    blake3: String,
}

/// The bytes of a manifest file holding `value`.
fn seal(value: &impl Serialize) -> io::Result<Vec<u8>> {
    let body = serde_json::to_string(value).map_err(io::Error::other)?;
    let raw = RawValue::from_string(body).map_err(io::Error::other)?;
    let digest = Digest::of(raw.get().as_bytes()).to_hex();
    let mut out = serde_json::to_vec(&EnvelopeOut {
        manifest: &raw,
        blake3: digest,
    })
    .map_err(io::Error::other)?;
    out.push(b'\n');
    Ok(out)
}

/// The value of a manifest file, its checksum verified.
fn open<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, ManifestFailure> {
    let env: EnvelopeIn<'_> = serde_json::from_slice(bytes)
        .map_err(|e| ManifestFailure::Damaged(format!("not a manifest: {e}")))?;
    if Digest::of(env.manifest.get().as_bytes()).to_hex() != env.blake3 {
        return Err(ManifestFailure::Damaged(
            "its checksum does not match its content".into(),
        ));
    }
    serde_json::from_str(env.manifest.get())
        .map_err(|e| ManifestFailure::Damaged(format!("not a manifest of this kind: {e}")))
}

/// Read a manifest file (a plain file: a symbolic link is not followed).
fn read_file(path: &Path, most: u64) -> Result<Vec<u8>, ManifestFailure> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(ManifestFailure::Damaged(
                "it is a symbolic link (not followed)".into(),
            ))
        }
        Ok(m) if !m.is_file() => return Err(ManifestFailure::Damaged("not a file".into())),
        Ok(m) if m.len() > most => {
            return Err(ManifestFailure::Damaged(format!(
                "{} bytes, more than a manifest can be",
                m.len()
            )))
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ManifestFailure::Missing),
        Err(e) => return Err(ManifestFailure::Io(e)),
    }
    fs::read(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => ManifestFailure::Missing,
        _ => ManifestFailure::Io(e),
    })
}

/// `snapshots/<id>.json`
pub(super) fn snapshot_path(dir: &Path, id: SnapshotId) -> PathBuf {
    dir.join(SNAPSHOTS_DIR).join(format!("{}.json", id.0))
}

/// `contents/<2 hex>/<digest>.json`
pub(super) fn content_path(dir: &Path, digest: &Digest) -> PathBuf {
    let hex = digest.to_hex();
    dir.join(CONTENTS_DIR)
        .join(&hex[..2])
        .join(format!("{hex}.json"))
}

/// The snapshot id a file name in `snapshots/` stands for.
pub(super) fn snapshot_id_of_file_name(name: &str) -> Option<SnapshotId> {
    let digits = name.strip_suffix(".json")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok().map(SnapshotId)
}

/// The content digest a file name in `contents/<2 hex>/` stands for.
pub(super) fn content_digest_of_file_name(name: &str) -> Option<Digest> {
    Digest::from_hex(name.strip_suffix(".json")?)
}

/// A snapshot manifest is a few hundred bytes; a content manifest about 80
/// bytes per chunk.
const SNAPSHOT_MOST: u64 = 1 << 20;
const CONTENT_MOST: u64 = 1 << 30;

/// Write (durably) the manifest of snapshot `info` into store `dir`.
pub(super) fn write_snapshot(dir: &Path, info: &SnapshotInfo) -> Result<(), StoreError> {
    let bytes = seal(&SnapshotManifest::of(info)).with_path(dir)?;
    let path = snapshot_path(dir, info.id);
    write_atomic(&path, |w: &mut dyn Write| w.write_all(&bytes))?;
    Ok(())
}

/// Write (durably) the manifest of content `digest` whose chunks are `list`,
/// unless a whole one is there already.
pub(super) fn write_content(
    dir: &Path,
    digest: &Digest,
    list: &[(Digest, usize)],
) -> Result<(), StoreError> {
    let path = content_path(dir, digest);
    let manifest = ContentManifest::new(list);
    if read_content(dir, digest).is_ok_and(|m| m == manifest) {
        return Ok(());
    }
    let bytes = seal(&manifest).with_path(&path)?;
    if let Some(fan_out) = path.parent() {
        super::layout::make_dir(fan_out, &dir.join(CONTENTS_DIR))?;
        super::hygiene::require_real_dir(fan_out)?;
    }
    write_atomic(&path, |w: &mut dyn Write| w.write_all(&bytes))?;
    Ok(())
}

/// The manifest of snapshot `id` in store `dir`, checksum verified and
/// naming that very id.
pub(super) fn read_snapshot(
    dir: &Path,
    id: SnapshotId,
) -> Result<SnapshotManifest, ManifestFailure> {
    let m: SnapshotManifest = open(&read_file(&snapshot_path(dir, id), SNAPSHOT_MOST)?)?;
    if m.id != id.0 {
        return Err(ManifestFailure::Damaged(format!(
            "it records snapshot {} under the name of snapshot {id}",
            m.id
        )));
    }
    if m.format != SNAPSHOT_FORMAT {
        return Err(ManifestFailure::Damaged(format!(
            "unknown format {:?}",
            m.format
        )));
    }
    Ok(m)
}

/// The manifest of content `digest` in store `dir`, checksum verified.
pub(super) fn read_content(
    dir: &Path,
    digest: &Digest,
) -> Result<ContentManifest, ManifestFailure> {
    let m: ContentManifest = open(&read_file(&content_path(dir, digest), CONTENT_MOST)?)?;
    if m.format != CONTENT_FORMAT {
        return Err(ManifestFailure::Damaged(format!(
            "unknown format {:?}",
            m.format
        )));
    }
    if m.list().is_none() {
        return Err(ManifestFailure::Damaged(
            "its chunk list is malformed or does not add up to its size".into(),
        ));
    }
    Ok(m)
}

/// Write (durably) the store's parameters.
pub(super) fn write_store(dir: &Path, params: ChunkerParams) -> Result<(), StoreError> {
    let path = dir.join(STORE_FILE);
    let manifest = StoreManifest::new(params);
    if read_store(dir).is_ok_and(|m| m == manifest) {
        return Ok(());
    }
    let bytes = seal(&manifest).with_path(&path)?;
    write_atomic(&path, |w: &mut dyn Write| w.write_all(&bytes))?;
    Ok(())
}

/// The store's parameters, from `store.json`.
pub(super) fn read_store(dir: &Path) -> Result<StoreManifest, ManifestFailure> {
    let m: StoreManifest = open(&read_file(&dir.join(STORE_FILE), SNAPSHOT_MOST)?)?;
    if m.format != STORE_FORMAT || !m.params().is_valid() {
        return Err(ManifestFailure::Damaged(format!(
            "unknown format {:?} or invalid chunk sizes",
            m.format
        )));
    }
    Ok(m)
}

/// Every snapshot id that has a manifest file in store `dir` (whole or not).
pub(super) fn snapshot_ids(dir: &Path) -> Result<Vec<SnapshotId>, PathError> {
    let folder = dir.join(SNAPSHOTS_DIR);
    let entries = match fs::read_dir(&folder) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(PathError {
                path: folder,
                source: e,
            })
        }
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.with_path(&folder)?;
        if let Some(id) = snapshot_id_of_file_name(&entry.file_name().to_string_lossy()) {
            ids.push(id);
        }
    }
    ids.sort();
    Ok(ids)
}

/// Every content digest that has a manifest file in store `dir`, with its path.
pub(super) fn content_files(dir: &Path) -> Result<Vec<(Digest, PathBuf)>, PathError> {
    let top = dir.join(CONTENTS_DIR);
    let fans = match fs::read_dir(&top) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(PathError {
                path: top,
                source: e,
            })
        }
    };
    let mut out = Vec::new();
    for fan in fans {
        let fan = fan.with_path(&top)?;
        let prefix = fan.file_name().to_string_lossy().into_owned();
        let fan_path = fan.path();
        if prefix.len() != 2 || !fs::symlink_metadata(&fan_path).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        for entry in fs::read_dir(&fan_path).with_path(&fan_path)? {
            let entry = entry.with_path(&fan_path)?;
            if let Some(d) = content_digest_of_file_name(&entry.file_name().to_string_lossy()) {
                if d.to_hex()[..2] == prefix {
                    out.push((d, entry.path()));
                }
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> SnapshotInfo {
        SnapshotInfo {
            id: SnapshotId(7),
            taken_at_ms: 1_795_000_000_000,
            profile: "default-release".into(),
            file_name: "sessionstore-backups/recovery.jsonlz4".into(),
            kind: crate::sources::SourceKind::Recovery,
            mtime_ms: Some(1_794_999_999_000),
            last_update_ms: Some(1_794_999_998_000),
            counts: Some(SessionCounts {
                windows: 2,
                tabs: 40,
                closed_tabs: 3,
                closed_windows: 1,
            }),
            content_hash: Digest::of(b"content"),
            json_size: 1234,
            stored_size: 567,
            format: Some(Format::Mozlz4),
            status: SnapshotStatus::Ok,
        }
    }

    #[test]
    fn a_snapshot_manifest_round_trips_and_a_flipped_bit_is_found() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(SNAPSHOTS_DIR)).unwrap();
        write_snapshot(dir.path(), &info()).unwrap();
        let back = read_snapshot(dir.path(), SnapshotId(7)).unwrap();
        assert_eq!(back.info().unwrap(), info());
        assert_eq!(snapshot_ids(dir.path()).unwrap(), [SnapshotId(7)]);

        // Every single-bit flip of the file is found, never read as a row.
        let path = snapshot_path(dir.path(), SnapshotId(7));
        let good = fs::read(&path).unwrap();
        for i in 0..good.len() * 8 {
            let mut bad = good.clone();
            bad[i / 8] ^= 1 << (i % 8);
            fs::write(&path, &bad).unwrap();
            match read_snapshot(dir.path(), SnapshotId(7)) {
                Err(ManifestFailure::Damaged(_)) => {}
                // A flip in the trailing newline leaves the manifest whole.
                Ok(m) if i / 8 == good.len() - 1 => assert_eq!(m.info().unwrap(), info()),
                other => panic!("bit {i}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_content_manifest_lists_its_chunks_in_order() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(CONTENTS_DIR)).unwrap();
        let list = vec![(Digest::of(b"a"), 10), (Digest::of(b"b"), 20)];
        let content = Digest::of(b"ab");
        write_content(dir.path(), &content, &list).unwrap();
        let back = read_content(dir.path(), &content).unwrap();
        assert_eq!(back.list().unwrap(), list);
        assert_eq!(back.size, 30);
        let files = content_files(dir.path()).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, content);
    }

    #[test]
    fn names_are_strict() {
        assert_eq!(snapshot_id_of_file_name("12.json"), Some(SnapshotId(12)));
        for bad in ["012.json", ".json", "12.json.tmp", "-1.json", "1x.json"] {
            assert_eq!(snapshot_id_of_file_name(bad), None, "{bad}");
        }
    }
}
