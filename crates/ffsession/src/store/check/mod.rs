//! Checking a whole store, as `restic check --read-data` does: the folder and
//! its permissions, the catalog (SQLite's own `integrity_check`, then its
//! rows), and every chunk file read, decompressed and hashed, each snapshot's
//! content reassembled and compared with its recorded size and hash.
//!
//! Changes nothing and takes no lock. Symbolic links are reported, never
//! followed: a chunk is a file the store wrote, and a store folder that is a
//! link is checked only when named by its real path.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

mod catalog;
mod chunks;

use super::chunk::{self, Digest};
use super::{SnapshotId, Store, StoreError, CATALOG_FILE, CHUNKS_DIR};
use crate::fs_util::is_temp_file_name;
use chunks::{check_files_alone, check_with_catalog};

/// A problem with the store as a whole: its folder, permissions or catalog.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoreProblem {
    /// The file or folder at fault.
    pub path: PathBuf,
    /// What is wrong.
    pub what: String,
    /// What to do about it, when there is more to say than what is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<crate::Hint>,
}

/// A chunk file that is missing or does not hold what its name says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChunkProblem {
    /// The chunk's digest (its name).
    pub digest: Digest,
    /// Where its file is, or should be.
    pub path: PathBuf,
    /// What is wrong: missing, a symbolic link, does not decompress, ...
    pub what: String,
}

/// A snapshot that cannot be restored byte-identical.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DamagedSnapshot {
    /// Its id.
    pub id: SnapshotId,
    /// When it was taken (ms since the Unix epoch).
    pub taken_at_ms: u64,
    /// The session file it was taken of, relative to its profile.
    pub file_name: String,
    /// Its damaged or missing chunks (details in [`CheckReport::damaged_chunks`]).
    pub chunks: Vec<Digest>,
    /// What is wrong, in a few words.
    pub what: String,
}

/// What [`check_store`] found. The store is whole when [`CheckReport::is_whole`].
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CheckReport {
    /// The store folder checked.
    pub dir: PathBuf,
    /// Problems of the folder, its permissions and the catalog.
    pub problems: Vec<StoreProblem>,
    /// What should be fixed but leaves the store whole: files and folders
    /// others may read (a store copied with `cp -r`, say).
    pub warnings: Vec<StoreProblem>,
    /// Snapshots in the catalog.
    pub snapshots: u64,
    /// Distinct contents whose reassembly was checked.
    pub contents: u64,
    /// Chunk files read and verified.
    pub chunks: u64,
    /// Bytes of chunk files read (compressed, as stored).
    pub stored_bytes: u64,
    /// Bytes of content reassembled and hashed.
    pub content_bytes: u64,
    /// Chunk files the catalog names that are missing or damaged.
    pub damaged_chunks: Vec<ChunkProblem>,
    /// Snapshots that cannot be restored, oldest first.
    pub damaged_snapshots: Vec<DamagedSnapshot>,
    /// Chunk files no catalog row names (left by an interrupted backup;
    /// harmless, removed by garbage collection).
    pub orphan_chunks: Vec<PathBuf>,
    /// Chunks the catalog lists that no snapshot references any more
    /// (removed by garbage collection).
    pub unreferenced_chunks: u64,
    /// Temporary files left by interrupted writes (harmless, removed by
    /// garbage collection).
    pub temp_files: Vec<PathBuf>,
    /// Problems of the tab index (`index.sqlite`): derived data, which
    /// `ffsession reindex` builds again; no snapshot is lost with it.
    pub index_problems: Vec<StoreProblem>,
    /// Files that could not be read (an I/O error, not damage: a failing or
    /// full disk, permissions). The store is not known to be whole.
    pub unreadable: Vec<StoreProblem>,
    /// Manifest files of snapshots or contents no catalog row names (left by
    /// an interrupted backup or prune; harmless, removed by garbage
    /// collection).
    pub stale_manifests: u64,
    /// Every symbolic link in the store, at any depth (each one also in
    /// [`CheckReport::problems`]): ffsession follows none.
    pub links: Vec<PathBuf>,
    /// Files and folders whose mode lets others read or write them (each
    /// one also in [`CheckReport::problems`] or [`CheckReport::warnings`]);
    /// the next writer (a backup) makes them private.
    pub loose_modes: u64,
    /// Of those, the ones anyone may write to (each also a problem).
    pub world_writable: u64,
}

impl CheckReport {
    /// True if every snapshot reads back byte-identical and nothing is wrong
    /// with the folder or the catalog. Orphan chunks and temporary files,
    /// which a crash leaves and garbage collection removes, and warnings
    /// (permissions that let others read), do not count.
    pub fn is_whole(&self) -> bool {
        self.problems.is_empty()
            && self.damaged_chunks.is_empty()
            && self.damaged_snapshots.is_empty()
            && self.index_problems.is_empty()
    }

    /// True if something could not be read at all (then a whole store is
    /// not proven whole).
    pub fn is_complete(&self) -> bool {
        self.unreadable.is_empty()
    }
}

/// Progress of a check: bytes of chunk files read so far, of a total.
pub type CheckProgress<'a> = &'a mut dyn FnMut(u64, u64);

/// Check the store in `dir` without changing anything: the folder and its
/// permissions, the catalog (SQLite's `integrity_check` and
/// `foreign_key_check`), every chunk file read, decompressed and hashed
/// against its name, and every snapshot's content reassembled and compared
/// with its recorded size and hash. Symbolic links are reported, never
/// followed. `progress` gets (bytes of chunk files read, total). Damage is reported in the [`CheckReport`]; an error
/// is returned only when `dir` is not a store at all (or cannot be listed).
pub fn check_store(dir: &Path, progress: CheckProgress<'_>) -> Result<CheckReport, StoreError> {
    let mut report = check_folder(dir, progress)?;
    // Every symbolic link anywhere in the store, besides those named above.
    super::hygiene::report_links(&mut report);
    Ok(report)
}

/// [`check_store`] but for the links it does not meet on its way.
fn check_folder(dir: &Path, progress: CheckProgress<'_>) -> Result<CheckReport, StoreError> {
    let mut report = CheckReport {
        dir: dir.to_path_buf(),
        ..CheckReport::default()
    };
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(StoreError::NotAStore {
                dir: dir.to_path_buf(),
            })
        }
        Err(e) => {
            return Err(crate::error::PathError {
                path: dir.to_path_buf(),
                source: e,
            }
            .into())
        }
    };
    if meta.file_type().is_symlink() {
        let target = fs::read_link(dir).map_or_else(|_| "?".into(), |t| t.display().to_string());
        report.problems.push(StoreProblem {
            path: dir.to_path_buf(),
            what: format!(
                "the store folder is a symbolic link (to {target}); not followed: check the real folder by its own path"
            ),
            hint: None,
        });
        return Ok(report);
    }
    if !meta.is_dir() {
        return Err(StoreError::NotAStore {
            dir: dir.to_path_buf(),
        });
    }
    permissions(&mut report, dir, &meta, 0o700);
    let catalog_path = dir.join(CATALOG_FILE);
    match fs::symlink_metadata(&catalog_path) {
        Ok(m) if m.file_type().is_symlink() => {
            report.problems.push(StoreProblem {
                path: catalog_path.clone(),
                what: "the catalog is a symbolic link; not followed".into(),
                hint: None,
            });
            return Ok(report);
        }
        Ok(m) => permissions(&mut report, &catalog_path, &m, 0o600),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if !dir.join(CHUNKS_DIR).exists() {
                return Err(StoreError::NotAStore {
                    dir: dir.to_path_buf(),
                });
            }
            report.problems.push(StoreProblem {
                path: catalog_path.clone(),
                what: "the catalog is missing".into(),
                hint: Some(crate::Hint::RebuildCatalog),
            });
        }
        Err(e) => report.problems.push(StoreProblem {
            path: catalog_path.clone(),
            what: e.to_string(),
            hint: None,
        }),
    }
    let files = scan(&mut report, dir)?;
    let store = if catalog_path.exists() {
        match Store::open_read_only(dir) {
            Ok(store) => Some(store),
            Err(e) => {
                report.problems.push(StoreProblem {
                    path: catalog_path.clone(),
                    what: format!("the catalog cannot be read: {e}"),
                    hint: None,
                });
                None
            }
        }
    } else {
        None
    };
    match store {
        Some(store) => check_with_catalog(&store, &mut report, files, progress)?,
        None => check_files_alone(&mut report, dir, files, progress),
    }
    catalog::index_file(dir, &mut report);
    Ok(report)
}

/// Report a folder or file whose permissions are looser than `mode`, above
/// all one anyone may write to.
fn permissions(report: &mut CheckReport, path: &Path, meta: &fs::Metadata, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let found = meta.permissions().mode() & 0o777;
        if found & 0o077 != 0 {
            report.loose_modes += 1;
        }
        if found & 0o002 != 0 {
            report.world_writable += 1;
            report.problems.push(StoreProblem {
                path: path.to_path_buf(),
                what: format!(
                    "anyone may write here (mode {found:04o}, should be {mode:04o}): chunks could be replaced; the next backup makes it {mode:04o}"
                ),
                hint: None,
            });
        } else if found & 0o077 != 0 {
            report.warnings.push(StoreProblem {
                path: path.to_path_buf(),
                what: format!(
                    "mode {found:04o} lets others read it (should be {mode:04o}): sessions hold cookies and form data"
                ),
                hint: None,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = (report, path, meta, mode);
}

/// A file found under `chunks/`, by the digest its name claims.
pub(super) struct Found {
    pub(super) path: PathBuf,
    /// `None` for a plain file; otherwise why it is not one.
    pub(super) not_a_file: Option<String>,
}

/// Walk `chunks/` without following links; note temporary files and
/// permission problems on the way.
fn scan(report: &mut CheckReport, dir: &Path) -> Result<HashMap<Digest, Found>, StoreError> {
    let mut found = HashMap::new();
    for entry in read_dir(report, dir) {
        if is_temp_file_name(&entry.file_name().to_string_lossy()) {
            report.temp_files.push(entry.path());
        }
    }
    let chunks_dir = dir.join(CHUNKS_DIR);
    match fs::symlink_metadata(&chunks_dir) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => {
            report.problems.push(StoreProblem {
                path: chunks_dir,
                what: "not a folder (a symbolic link or a file); not followed".into(),
                hint: None,
            });
            return Ok(found);
        }
        Ok(m) => permissions(report, &chunks_dir, &m, 0o700),
        Err(_) => return Ok(found),
    }
    for sub in read_dir(report, &chunks_dir) {
        let sub_path = sub.path();
        let Ok(meta) = fs::symlink_metadata(&sub_path) else {
            continue;
        };
        let name = sub.file_name().to_string_lossy().into_owned();
        if name.len() != 2 {
            continue;
        }
        if meta.file_type().is_symlink() {
            report.problems.push(StoreProblem {
                path: sub_path,
                what: "a chunk folder is a symbolic link; not followed".into(),
                hint: None,
            });
            continue;
        }
        if !meta.is_dir() {
            continue;
        }
        permissions(report, &sub_path, &meta, 0o700);
        for entry in read_dir(report, &sub_path) {
            let file = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if is_temp_file_name(&file) {
                report.temp_files.push(path);
                continue;
            }
            let Some(digest) = chunk::digest_of_file_name(&file) else {
                continue;
            };
            if digest.to_hex()[..2] != name {
                continue;
            }
            let not_a_file = match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    Some("it is a symbolic link, not a chunk file (not followed)".to_owned())
                }
                Ok(m) if !m.is_file() => Some("it is not a file".to_owned()),
                Ok(m) => {
                    permissions(report, &path, &m, 0o600);
                    None
                }
                Err(e) => Some(e.to_string()),
            };
            found.insert(digest, Found { path, not_a_file });
        }
    }
    report.temp_files.sort();
    Ok(found)
}

fn read_dir(report: &mut CheckReport, dir: &Path) -> Vec<fs::DirEntry> {
    match fs::read_dir(dir).and_then(|it| it.collect::<Result<Vec<_>, _>>()) {
        Ok(mut entries) => {
            entries.sort_by_key(|e| e.file_name());
            entries
        }
        Err(e) => {
            report.problems.push(StoreProblem {
                path: dir.to_path_buf(),
                what: format!("cannot be listed: {e}"),
                hint: None,
            });
            Vec::new()
        }
    }
}
