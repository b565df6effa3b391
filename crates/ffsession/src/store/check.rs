//! Checking a whole store, as `restic check --read-data` does: the folder and
//! its permissions, the catalog (SQLite's own `integrity_check`, then its
//! rows), and every chunk file read, decompressed and hashed, each snapshot's
//! content reassembled and compared with its recorded size and hash.
//!
//! Changes nothing and takes no lock. Symbolic links are reported, never
//! followed: a chunk is a file the store wrote, and a store folder that is a
//! link is checked only when named by its real path.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::chunk::{self, Digest};
use super::{SnapshotId, Store, StoreError, CATALOG_FILE, CHUNKS_DIR};
use crate::fs_util::is_temp_file_name;

/// A problem with the store as a whole: its folder, permissions or catalog.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoreProblem {
    /// The file or folder at fault.
    pub path: PathBuf,
    /// What is wrong.
    pub what: String,
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
                what: "the catalog is missing; no snapshot can be listed or restored".into(),
            });
        }
        Err(e) => report.problems.push(StoreProblem {
            path: catalog_path.clone(),
            what: e.to_string(),
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
                });
                None
            }
        }
    } else {
        None
    };
    match store {
        Some(store) => check_with_catalog(&store, &mut report, files, progress)?,
        None => check_files_alone(&mut report, files, progress),
    }
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
            });
        } else if found & 0o077 != 0 {
            report.warnings.push(StoreProblem {
                path: path.to_path_buf(),
                what: format!(
                    "mode {found:04o} lets others read it (should be {mode:04o}): sessions hold cookies and form data"
                ),
            });
        }
    }
    #[cfg(not(unix))]
    let _ = (report, path, meta, mode);
}

/// A file found under `chunks/`, by the digest its name claims.
struct Found {
    path: PathBuf,
    /// `None` for a plain file; otherwise why it is not one.
    not_a_file: Option<String>,
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
            });
            Vec::new()
        }
    }
}

/// Read and verify one chunk file; `raw_size` from the catalog, or `None`
/// when there is no catalog (then the frame may be as large as FastCDC's
/// largest chunk).
fn verify(
    found: Option<&Found>,
    digest: &Digest,
    raw_size: Option<usize>,
) -> (Result<Vec<u8>, String>, u64) {
    let Some(found) = found else {
        return (Err("missing".into()), 0);
    };
    if let Some(why) = &found.not_a_file {
        return (Err(why.clone()), 0);
    }
    let packed = match fs::read(&found.path) {
        Ok(p) => p,
        Err(e) => return (Err(format!("cannot be read: {e}")), 0),
    };
    let len = packed.len() as u64;
    let capacity = raw_size.unwrap_or(fastcdc::v2020::MAXIMUM_MAX);
    let raw = match zstd::bulk::decompress(&packed, capacity) {
        Ok(raw) => raw,
        Err(e) => return (Err(format!("does not decompress (zstd: {e})")), len),
    };
    if let Some(n) = raw_size {
        if raw.len() != n {
            return (
                Err(format!("holds {} bytes, the catalog says {n}", raw.len())),
                len,
            );
        }
    }
    if Digest::of(&raw) != *digest {
        return (
            Err("its content does not match its name (BLAKE3 digest)".into()),
            len,
        );
    }
    (Ok(raw), len)
}

/// Without a catalog only the chunk files can be checked, each against its
/// name.
fn check_files_alone(
    report: &mut CheckReport,
    files: HashMap<Digest, Found>,
    progress: CheckProgress<'_>,
) {
    let total: u64 = files
        .values()
        .filter_map(|f| fs::symlink_metadata(&f.path).ok().map(|m| m.len()))
        .sum();
    let mut sorted: Vec<_> = files.into_iter().collect();
    sorted.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    for (digest, found) in &sorted {
        let (result, len) = verify(Some(found), digest, None);
        report.chunks += 1;
        report.stored_bytes += len;
        progress(report.stored_bytes, total);
        if let Err(what) = result {
            report.damaged_chunks.push(ChunkProblem {
                digest: *digest,
                path: found.path.clone(),
                what,
            });
        }
    }
}

fn check_with_catalog(
    store: &Store,
    report: &mut CheckReport,
    files: HashMap<Digest, Found>,
    progress: CheckProgress<'_>,
) -> Result<(), StoreError> {
    let catalog = store.catalog_path.clone();
    let problem = |what: String| StoreProblem {
        path: catalog.clone(),
        what,
    };
    // SQLite's own check of its pages and indexes, then the references.
    let lines: Vec<String> = store
        .conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| store.sql(e))?;
    for line in lines.into_iter().filter(|l| l != "ok") {
        report
            .problems
            .push(problem(format!("integrity_check: {line}")));
    }
    let broken: i64 = store
        .conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .map_err(|e| store.sql(e))?;
    if broken > 0 {
        report.problems.push(problem(format!(
            "{broken} row(s) reference rows that do not exist (foreign_key_check)"
        )));
    }

    let snapshots = store.snapshots()?;
    report.snapshots = snapshots.len() as u64;
    let cataloged: HashMap<Digest, (u64, u64)> = {
        let rows: Vec<(Vec<u8>, i64, i64)> = store
            .conn
            .prepare("SELECT hash, raw_size, stored_size FROM chunks")
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(|e| store.sql(e))?;
        let mut map = HashMap::with_capacity(rows.len());
        for (hash, raw, stored) in rows {
            match Digest::from_slice(&hash) {
                Some(d) => {
                    map.insert(d, (raw.max(0) as u64, stored.max(0) as u64));
                }
                None => report
                    .problems
                    .push(problem("a chunk hash is not 32 bytes".into())),
            }
        }
        map
    };
    let total: u64 = cataloged.values().map(|&(_, stored)| stored).sum();

    // Contents by id (consecutive contents share most chunks), each with the
    // snapshots that hold it.
    let mut by_content: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    let content_of: Vec<(i64, i64, Vec<u8>, i64)> = store
        .conn
        .prepare(
            "SELECT s.id, c.id, c.hash, c.size FROM snapshots s JOIN contents c ON c.id = s.content_id",
        )
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect()
        })
        .map_err(|e| store.sql(e))?;
    let index: HashMap<i64, usize> = snapshots
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.0, i))
        .collect();
    let mut content_meta = HashMap::new();
    for (sid, cid, hash, size) in content_of {
        if let Some(&i) = index.get(&sid) {
            by_content.entry(cid).or_default().push(i);
        }
        content_meta.insert(cid, (hash, size));
    }

    let mut verdicts: HashMap<Digest, Result<(), String>> = HashMap::new();
    let mut previous: HashMap<Digest, Vec<u8>> = HashMap::new();
    let mut damaged = Vec::new();
    for (cid, holders) in &by_content {
        report.contents += 1;
        let (hash, size) = &content_meta[cid];
        let mut bad: Vec<Digest> = Vec::new();
        let mut current: HashMap<Digest, Vec<u8>> = HashMap::new();
        let mut hasher = blake3::Hasher::new();
        let mut length = 0u64;
        let list = match store.content_chunks(*cid) {
            Ok(list) => list,
            Err(e) => {
                report.problems.push(problem(e.to_string()));
                continue;
            }
        };
        for (digest, raw_size) in &list {
            if let Some(Err(_)) = verdicts.get(digest) {
                if !bad.contains(digest) {
                    bad.push(*digest);
                }
                continue;
            }
            let raw = match previous.remove(digest).or_else(|| current.remove(digest)) {
                Some(raw) => raw,
                None => {
                    let (result, len) = verify(files.get(digest), digest, Some(*raw_size));
                    if !verdicts.contains_key(digest) {
                        report.chunks += 1;
                        report.stored_bytes += len;
                        progress(report.stored_bytes, total);
                    }
                    match result {
                        Ok(raw) => {
                            verdicts.insert(*digest, Ok(()));
                            raw
                        }
                        Err(what) => {
                            report.damaged_chunks.push(ChunkProblem {
                                digest: *digest,
                                path: chunk::chunk_path(&store.chunks_dir, digest),
                                what: what.clone(),
                            });
                            verdicts.insert(*digest, Err(what));
                            bad.push(*digest);
                            continue;
                        }
                    }
                }
            };
            hasher.update(&raw);
            length += raw.len() as u64;
            current.insert(*digest, raw);
        }
        previous = current;
        report.content_bytes += length;
        let what = if !bad.is_empty() {
            Some(format!(
                "{} of its {} chunks {} missing or damaged",
                bad.len(),
                list.len(),
                if bad.len() == 1 { "is" } else { "are" }
            ))
        } else if i64::try_from(length).ok() != Some(*size) {
            Some(format!(
                "its chunks add up to {length} bytes, the catalog says {size}"
            ))
        } else if hasher.finalize().as_bytes()[..] != hash[..] {
            Some("its chunks do not hash to its recorded content hash".into())
        } else {
            None
        };
        if let Some(what) = what {
            for &i in holders {
                let s = &snapshots[i];
                damaged.push(DamagedSnapshot {
                    id: s.id,
                    taken_at_ms: s.taken_at_ms,
                    file_name: s.file_name.clone(),
                    chunks: bad.clone(),
                    what: what.clone(),
                });
            }
        }
    }
    damaged.sort_by_key(|d| (d.taken_at_ms, d.id));
    report.damaged_snapshots = damaged;

    // Chunks the catalog lists that no snapshot uses: verified too (a later
    // backup may reuse them), and counted.
    let used: HashSet<Digest> = verdicts.keys().copied().collect();
    let mut spare: Vec<(&Digest, &(u64, u64))> = cataloged
        .iter()
        .filter(|(d, _)| !used.contains(*d))
        .collect();
    spare.sort();
    report.unreferenced_chunks = spare.len() as u64;
    for (digest, &(raw, _)) in spare {
        let Some(found) = files.get(digest) else {
            continue;
        };
        let (result, len) = verify(Some(found), digest, usize::try_from(raw).ok());
        report.chunks += 1;
        report.stored_bytes += len;
        progress(report.stored_bytes, total);
        if let Err(what) = result {
            report.damaged_chunks.push(ChunkProblem {
                digest: *digest,
                path: found.path.clone(),
                what,
            });
        }
    }
    let mut orphans: Vec<PathBuf> = files
        .iter()
        .filter(|(d, _)| !cataloged.contains_key(*d))
        .map(|(_, f)| f.path.clone())
        .collect();
    orphans.sort();
    report.orphan_chunks = orphans;
    Ok(())
}
