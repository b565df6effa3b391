//! Garbage collection: the chunk files and catalog rows no snapshot
//! references, and temporary files left by interrupted writes.

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::chunk::{self, Digest};
use super::{catalog, manifest, GcReport, Store, StoreError, UnreferencedChunk};
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
        if self.schema_version >= 5 {
            tx.execute(
                "DELETE FROM damaged_chunks WHERE hash NOT IN (SELECT hash FROM chunks)",
                [],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)?;

        // The manifests no row names, before any chunk file: a manifest
        // left behind names only chunks that are still there.
        let mut touched = BTreeSet::new();
        let mut report = GcReport {
            contents_removed: contents_removed as u64,
            ..GcReport::default()
        };
        self.remove_stale_manifests(&mut touched, &mut report)?;
        for dir in std::mem::take(&mut touched) {
            sync_dir(&dir)?;
        }

        // Every chunk row left is referenced by a snapshot; delete only files
        // that no row names.
        let keep = self.digests("SELECT hash FROM chunks")?;
        let (files, temps) = self.scan_chunk_files()?;
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
        self.collect_index_garbage();
        Ok(report)
    }

    /// Delete the snapshot manifests whose snapshot is not in the catalog
    /// (removed, or never committed) and the content manifests whose
    /// content is not.
    fn remove_stale_manifests(
        &self,
        touched: &mut BTreeSet<PathBuf>,
        report: &mut GcReport,
    ) -> Result<(), StoreError> {
        if self.schema_version < 5 {
            return Ok(());
        }
        let ids: HashSet<i64> = self
            .conn
            .prepare("SELECT id FROM snapshots")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| self.sql(e))?;
        for id in manifest::snapshot_ids(&self.dir)? {
            if !ids.contains(&id.0) {
                let path = manifest::snapshot_path(&self.dir, id);
                remove_if_there(&path)?;
                report.manifests_removed += 1;
                touched.extend(path.parent().map(Path::to_path_buf));
            }
        }
        let contents = self.digests("SELECT hash FROM contents")?;
        for (digest, path) in manifest::content_files(&self.dir)? {
            if !contents.contains(&digest) {
                remove_if_there(&path)?;
                report.manifests_removed += 1;
                touched.extend(path.parent().map(Path::to_path_buf));
            }
        }
        Ok(())
    }

    /// Chunk files (digest, path, size) and leftover temporary files under
    /// `chunks/` and in the store folder. Files of any other name are not ours
    /// and are left out.
    #[allow(clippy::type_complexity)]
    fn scan_chunk_files(&self) -> Result<(Vec<(Digest, PathBuf, u64)>, Vec<PathBuf>), StoreError> {
        let mut files = Vec::new();
        let mut temps = Vec::new();
        // Temporary files of interrupted writes: in the store folder, and in
        // the manifest folders (chunks/ follows).
        let mut folders = vec![
            self.dir.clone(),
            self.dir.join(manifest::SNAPSHOTS_DIR),
            self.dir.join(manifest::ARCHIVES_DIR),
            self.dir.join(super::UNDO_DIR),
            self.dir.join(super::ORIGINS_DIR),
        ];
        let contents = self.dir.join(manifest::CONTENTS_DIR);
        if let Ok(fans) = fs::read_dir(&contents) {
            for fan in fans.flatten() {
                if fan.file_type().is_ok_and(|t| t.is_dir()) {
                    folders.push(fan.path());
                }
            }
        }
        for folder in folders {
            let entries = match fs::read_dir(&folder) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(PathError {
                        path: folder,
                        source: e,
                    }
                    .into())
                }
            };
            for entry in entries {
                let entry = entry.with_path(&folder)?;
                if crate::fs_util::is_temp_file_name(&entry.file_name().to_string_lossy()) {
                    temps.push(entry.path());
                }
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

/// Remove `path`; a file already gone is fine.
fn remove_if_there(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(PathError {
            path: path.to_path_buf(),
            source: e,
        }
        .into()),
    }
}
