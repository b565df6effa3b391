//! Building the catalog again from the store's own files: `store.json`, the
//! snapshot and content manifests, and the chunk files.
//!
//! The catalog is an index over those files; when it is damaged (a flipped
//! bit in a table `check` names, a catalog lost or truncated), everything a
//! restore needs is still in the folder. [`rebuild_catalog`] writes a new
//! catalog beside the old one, then swaps them: the old catalog and its WAL
//! are renamed to `catalog.sqlite.damaged-<ms>` (never deleted), and the new
//! one is renamed into place, so a crash leaves either catalog or none (and
//! then the rebuild runs again). The tab index is built again at the next
//! open for writing. What the manifests do not hold is lost with the old
//! catalog: the frame digests (the next read-back decompresses instead) and
//! the damage marks; tabs `tidy` archived are kept in manifests of their own.
//! No id is given twice: new snapshots' ids follow the highest of the old
//! catalog (when it still reads), of every snapshot manifest (usable or not)
//! and of the snapshots archived tabs name.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::params;
use serde::Serialize;

use super::chunk;
use super::layout::take_lock;
use super::manifest::{self, ManifestFailure};
use super::{catalog, index, to_i64, StoreError, CATALOG_FILE, CHUNKS_DIR};
use crate::error::PathError;
use crate::fs_util::sync_dir;

/// What [`rebuild_catalog`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RebuildReport {
    /// Snapshots recorded in the new catalog.
    pub snapshots: u64,
    /// Contents recorded.
    pub contents: u64,
    /// Chunks recorded.
    pub chunks: u64,
    /// Manifests that could not be used (path, why).
    pub unusable: Vec<(PathBuf, String)>,
    /// Where the old catalog was kept, if there was one.
    pub old_catalog: Option<PathBuf>,
    /// Tabs archived by `tidy`, recorded again.
    pub archived_tabs: u64,
}

/// Build the catalog of the store in `dir` again from its manifests (see the
/// module documentation); `now_ms` names the kept old catalog. Takes the
/// store's lock.
pub fn rebuild_catalog(dir: &Path, now_ms: u64) -> Result<RebuildReport, StoreError> {
    let _lock = take_lock(dir)?;
    let store_manifest = manifest::read_store(dir).map_err(|why| StoreError::CatalogCorrupt {
        path: dir.join(manifest::STORE_FILE),
        reason: format!("the store's parameters cannot be read ({why}): the catalog cannot be rebuilt without them"),
    })?;
    let params = store_manifest.params();
    let mut report = RebuildReport::default();

    let new_path = dir.join(format!("{CATALOG_FILE}.rebuild"));
    for suffix in ["", "-wal", "-shm"] {
        remove_if_there(&with_suffix(&new_path, suffix))?;
    }
    crate::fs_util::write_atomic(&new_path, |_| Ok(()))?;
    {
        let (mut conn, _, _) = catalog::open_rw(&new_path, params)?;
        let err = |e| catalog::sql_error(&new_path, e);
        let tx = conn.transaction().map_err(err)?;
        tx.execute_batch(catalog::SCHEMA_V5).map_err(err)?;
        tx.pragma_update(None, "user_version", catalog::SCHEMA_VERSION)
            .map_err(err)?;
        let chunks_dir = dir.join(CHUNKS_DIR);
        let mut known_contents = std::collections::HashMap::new();
        for (digest, path) in manifest::content_files(dir)? {
            let m = match manifest::read_content(dir, &digest) {
                Ok(m) => m,
                Err(why) => {
                    report.unusable.push((path, why.to_string()));
                    continue;
                }
            };
            let Some(list) = m.list() else { continue };
            tx.execute(
                "INSERT INTO contents (hash, size) VALUES (?1, ?2)",
                params![&digest.as_bytes()[..], to_i64(m.size)],
            )
            .map_err(err)?;
            let content_id = tx.last_insert_rowid();
            for (seq, (d, raw)) in list.iter().enumerate() {
                let stored =
                    fs::symlink_metadata(chunk::chunk_path(&chunks_dir, d)).map_or(0, |m| m.len());
                let inserted = tx
                    .execute(
                        "INSERT INTO chunks (hash, raw_size, stored_size) VALUES (?1, ?2, ?3)
                         ON CONFLICT (hash) DO NOTHING",
                        params![&d.as_bytes()[..], to_i64(*raw as u64), to_i64(stored)],
                    )
                    .map_err(err)?;
                report.chunks += inserted as u64;
                tx.execute(
                    "INSERT INTO content_chunks (content_id, seq, chunk_id)
                     SELECT ?1, ?2, id FROM chunks WHERE hash = ?3",
                    params![content_id, to_i64(seq as u64), &d.as_bytes()[..]],
                )
                .map_err(err)?;
            }
            known_contents.insert(digest, content_id);
            report.contents += 1;
        }
        // The highest snapshot id this store has given, so that no new
        // snapshot takes the id of one forgotten, or of a manifest that
        // could not be used (its file stays for a person to look at).
        let mut highest = old_highest_id(&dir.join(CATALOG_FILE));
        for id in manifest::snapshot_ids(dir)? {
            highest = highest.max(id.0);
            let path = manifest::snapshot_path(dir, id);
            let info = match manifest::read_snapshot(dir, id) {
                Ok(m) => match m.info() {
                    Some(info) => info,
                    None => {
                        report
                            .unusable
                            .push((path, "a field holds no value a catalog row can".into()));
                        continue;
                    }
                },
                Err(ManifestFailure::Missing) => continue,
                Err(why) => {
                    report.unusable.push((path, why.to_string()));
                    continue;
                }
            };
            let Some(&content_id) = known_contents.get(&info.content_hash) else {
                report.unusable.push((
                    path,
                    format!("its content {} has no usable manifest", info.content_hash),
                ));
                continue;
            };
            super::add::insert_snapshot_row(&tx, &new_path, &info, content_id)?;
            report.snapshots += 1;
        }
        for (path, tabs) in manifest::archive_files(dir)? {
            match tabs {
                Ok(tabs) => {
                    highest = tabs.iter().fold(highest, |h, t| h.max(t.snapshot.0));
                    let known: Vec<_> = tabs
                        .into_iter()
                        .filter(|t| manifest::snapshot_path(dir, t.snapshot).exists())
                        .collect();
                    report.archived_tabs += known.len() as u64;
                    super::archive::insert_archived(&tx, &new_path, &known)?;
                }
                Err(why) => report.unusable.push((path, why)),
            }
        }
        keep_ids_above(&tx, highest).map_err(err)?;
        tx.commit().map_err(err)?;
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(err)?;
    }

    // Swap: the old catalog (and its WAL and shm, which must never meet the
    // new one) aside, then the new one into place.
    let old = dir.join(CATALOG_FILE);
    let kept = dir.join(format!("{CATALOG_FILE}.damaged-{now_ms}"));
    if fs::symlink_metadata(&old).is_ok() {
        for suffix in ["", "-wal", "-shm"] {
            let from = with_suffix(&old, suffix);
            if fs::symlink_metadata(&from).is_ok() {
                let to = with_suffix(&kept, suffix);
                fs::rename(&from, &to).map_err(|source| PathError { path: from, source })?;
            }
        }
        report.old_catalog = Some(kept);
    }
    for suffix in ["-wal", "-shm"] {
        remove_if_there(&with_suffix(&new_path, suffix))?;
    }
    fs::rename(&new_path, &old).map_err(|source| PathError {
        path: new_path.clone(),
        source,
    })?;
    sync_dir(dir)?;
    // Derived from the old catalog's ids: built again at the next open.
    index::delete(dir)?;
    Ok(report)
}

/// The highest snapshot id the catalog at `path` has given, if it still
/// reads: a snapshot forgotten and collected leaves no manifest, only this.
/// Read read-only with its WAL, and as immutable (the file alone) where
/// that fails; 0 where neither reads, or where it is not a regular file
/// (a symbolic link is not followed, as nowhere in a store).
fn old_highest_id(path: &Path) -> i64 {
    if !fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return 0;
    }
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
        | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
        | rusqlite::OpenFlags::SQLITE_OPEN_URI;
    let highest = |query: &str| -> Option<i64> {
        let conn = rusqlite::Connection::open_with_flags(index::uri(path, query), flags).ok()?;
        let read = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0));
        let seq = read("SELECT max(seq) FROM sqlite_sequence WHERE name = 'snapshots'").ok()?;
        let id = read("SELECT max(id) FROM snapshots").ok()?;
        Some(seq.unwrap_or(0).max(id.unwrap_or(0)))
    };
    highest("").or_else(|| highest("immutable=1")).unwrap_or(0)
}

/// Make the next snapshot id of the catalog being written `highest + 1` or
/// more.
fn keep_ids_above(tx: &rusqlite::Transaction<'_>, highest: i64) -> rusqlite::Result<()> {
    let raised = tx.execute(
        "UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'snapshots'",
        [highest],
    )?;
    if raised == 0 && highest > 0 {
        tx.execute(
            "INSERT INTO sqlite_sequence (name, seq) VALUES ('snapshots', ?1)",
            [highest],
        )?;
    }
    Ok(())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn remove_if_there(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(PathError {
            path: path.to_path_buf(),
            source,
        }
        .into()),
    }
}
