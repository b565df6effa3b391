//! Garbage collection: the chunk files and catalog rows no snapshot
//! references, and temporary files left by interrupted writes.

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::chunk::{self, Digest};
use super::{catalog, tabs, GcReport, Store, StoreError, UnreferencedChunk};
use crate::error::{IoResultExt, PathError};
use crate::fs_util::sync_dir;

impl Store {
    /// Digests of the chunks some snapshot references.
    fn live_chunks(&self) -> Result<HashSet<Digest>, StoreError> {
        self.digests(
            "SELECT DISTINCT ch.hash FROM chunks ch
             JOIN content_chunks cc ON cc.chunk_id = ch.id
             JOIN snapshots s ON s.content_id = cc.content_id",
        )
    }

    fn digests(&self, sql: &str) -> Result<HashSet<Digest>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.sql(e))?;
        let hashes: Vec<Vec<u8>> = stmt
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        hashes
            .iter()
            .map(|h| {
                Digest::from_slice(h).ok_or_else(|| self.corrupt("a chunk hash is not 32 bytes"))
            })
            .collect()
    }

    /// Every chunk file on disk that no snapshot references: left by a crash
    /// before its snapshot's row committed, or by removed snapshots. Changes
    /// nothing.
    pub fn unreferenced_chunks(&self) -> Result<Vec<UnreferencedChunk>, StoreError> {
        let live = self.live_chunks()?;
        let cataloged = self.digests("SELECT hash FROM chunks")?;
        let (files, _) = self.scan_chunk_files()?;
        Ok(files
            .into_iter()
            .filter(|(d, _, _)| !live.contains(d))
            .map(|(digest, path, size)| UnreferencedChunk {
                in_catalog: cataloged.contains(&digest),
                digest,
                path,
                size,
            })
            .collect())
    }

    /// Delete what no snapshot references: first the catalog rows (one
    /// transaction), then the chunk files no remaining row names, and
    /// temporary files left by interrupted writes. Referenced chunks are never
    /// touched.
    pub fn collect_garbage(&mut self) -> Result<GcReport, StoreError> {
        self.writable()?;
        let path = self.catalog_path.clone();
        let err = |e| catalog::sql_error(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute(
            "DELETE FROM content_chunks WHERE content_id NOT IN (SELECT content_id FROM snapshots)",
            [],
        )
        .map_err(err)?;
        let contents_removed = tx
            .execute(
                "DELETE FROM contents WHERE id NOT IN (SELECT content_id FROM snapshots)",
                [],
            )
            .map_err(err)?;
        tx.execute(
            "DELETE FROM chunks WHERE id NOT IN (SELECT chunk_id FROM content_chunks)",
            [],
        )
        .map_err(err)?;
        tabs::collect_garbage(&tx, &path)?;
        tx.commit().map_err(err)?;

        // Every chunk row left is referenced by a snapshot; delete only files
        // that no row names.
        let keep = self.digests("SELECT hash FROM chunks")?;
        let (files, temps) = self.scan_chunk_files()?;
        let mut report = GcReport {
            contents_removed: contents_removed as u64,
            ..GcReport::default()
        };
        let mut touched = BTreeSet::new();
        for (digest, file, size) in files {
            if keep.contains(&digest) {
                continue;
            }
            fs::remove_file(&file).with_path(&file)?;
            report.chunks_removed += 1;
            report.bytes_removed += size;
            touched.extend(file.parent().map(Path::to_path_buf));
        }
        for file in temps {
            match fs::remove_file(&file) {
                Ok(()) => report.temp_files_removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(PathError {
                        path: file,
                        source: e,
                    }
                    .into())
                }
            }
            touched.extend(file.parent().map(Path::to_path_buf));
        }
        for dir in touched {
            sync_dir(&dir)?;
        }
        Ok(report)
    }

    /// Chunk files (digest, path, size) and leftover temporary files under
    /// `chunks/` and in the store folder. Files of any other name are not ours
    /// and are left out.
    #[allow(clippy::type_complexity)]
    fn scan_chunk_files(&self) -> Result<(Vec<(Digest, PathBuf, u64)>, Vec<PathBuf>), StoreError> {
        let mut files = Vec::new();
        let mut temps = Vec::new();
        for entry in fs::read_dir(&self.dir).with_path(&self.dir)? {
            let entry = entry.with_path(&self.dir)?;
            if crate::fs_util::is_temp_file_name(&entry.file_name().to_string_lossy()) {
                temps.push(entry.path());
            }
        }
        let top = match fs::read_dir(&self.chunks_dir) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((files, temps)),
            Err(e) => {
                return Err(PathError {
                    path: self.chunks_dir.clone(),
                    source: e,
                }
                .into())
            }
        };
        for sub in top {
            let sub = sub.with_path(&self.chunks_dir)?;
            let prefix = sub.file_name().to_string_lossy().into_owned();
            let sub_path = sub.path();
            // `file_type` does not follow a link: a linked fan-out folder is
            // not ours to delete from (`check` reports it).
            let real_dir = sub.file_type().is_ok_and(|t| t.is_dir());
            if prefix.len() != 2 || !real_dir {
                continue;
            }
            for entry in fs::read_dir(&sub_path).with_path(&sub_path)? {
                let entry = entry.with_path(&sub_path)?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = entry.path();
                if crate::fs_util::is_temp_file_name(&name) {
                    temps.push(path);
                } else if let Some(d) = chunk::digest_of_file_name(&name) {
                    if d.to_hex()[..2] == prefix {
                        let size = entry.metadata().with_path(&path)?.len();
                        files.push((d, path, size));
                    }
                }
            }
        }
        files.sort_by(|a, b| a.1.cmp(&b.1));
        temps.sort();
        Ok((files, temps))
    }
}
