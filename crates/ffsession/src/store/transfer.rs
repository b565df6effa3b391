//! What copying snapshots between stores needs of a store (the remote
//! module's side door): a snapshot's chunk list, a chunk's stored frame
//! read back and verified, a frame received from elsewhere written after it
//! is verified, and snapshots imported under fresh ids once every chunk they
//! name is on disk.
//!
//! Imports keep the store's order: chunk files first (durably, through
//! `write_atomic`), then, for each snapshot, its content read back whole
//! from disk, then the manifests, then one catalog transaction. A crash at
//! any point leaves only files no row names.

use std::collections::HashSet;

use rusqlite::params;

use super::chunk::{self, Digest};
use super::layout::make_dir;
use super::{catalog, manifest, to_i64, SnapshotId, SnapshotInfo, Store, StoreError};
use crate::error::PathError;

/// A snapshot to import: its record (the id is replaced by a fresh one) and
/// its content's ordered chunks (digest, raw size), every one already in the
/// store.
#[derive(Debug, Clone)]
pub struct ImportedSnapshot {
    /// What the snapshot records; `id` and `stored_size` are the importer's.
    pub info: SnapshotInfo,
    /// Its content's chunks, in order.
    pub chunks: Vec<(Digest, usize)>,
}

impl Store {
    /// The ordered chunks (digest, raw size) of snapshot `id`'s content.
    pub fn snapshot_chunks(&self, id: SnapshotId) -> Result<Vec<(Digest, usize)>, StoreError> {
        Ok(self.recipe(id)?.chunks)
    }

    /// The ordered chunks of content `digest`, if the store has it.
    pub fn content_list(
        &self,
        digest: &Digest,
    ) -> Result<Option<Vec<(Digest, usize)>>, StoreError> {
        let id: Option<i64> = self
            .conn
            .prepare_cached("SELECT id FROM contents WHERE hash = ?1")
            .and_then(|mut s| {
                rusqlite::OptionalExtension::optional(
                    s.query_row([&digest.as_bytes()[..]], |r| r.get(0)),
                )
            })
            .map_err(|e| self.sql(e))?;
        id.map(|id| self.content_chunks(id)).transpose()
    }

    /// The stored frame (the zstd bytes of the chunk file) of chunk `digest`
    /// of `raw_size` bytes, read back now: it must decompress to bytes whose
    /// BLAKE3 is `digest`. `of` names the snapshot in an error.
    pub fn read_chunk_frame(
        &self,
        digest: &Digest,
        raw_size: usize,
        of: SnapshotId,
    ) -> Result<Vec<u8>, StoreError> {
        let path = chunk::chunk_path(&self.chunks_dir, digest);
        let mut reader = chunk::Reader::new().map_err(|source| PathError {
            path: self.chunks_dir.clone(),
            source,
        })?;
        match reader.read(&path, digest, raw_size) {
            Ok(_) => Ok(std::mem::take(reader.packed_mut())),
            Err(failure) => Err(self.chunk_failure(path, *digest, of, failure)),
        }
    }

    /// True if the store has a sound-looking chunk file for `digest` (named,
    /// catalogued; not decoded: imports read every content back whole).
    pub fn has_chunk(&self, digest: &Digest) -> Result<bool, StoreError> {
        let known: bool = self
            .conn
            .prepare_cached("SELECT 1 FROM chunks WHERE hash = ?1")
            .and_then(|mut s| s.exists([&digest.as_bytes()[..]]))
            .map_err(|e| self.sql(e))?;
        Ok(known && chunk::chunk_path(&self.chunks_dir, digest).is_file())
    }

    /// The size of chunk `digest`'s stored frame (its chunk file), without
    /// reading it; `None` if there is no such file.
    pub fn chunk_frame_len(&self, digest: &Digest) -> Option<u64> {
        std::fs::symlink_metadata(chunk::chunk_path(&self.chunks_dir, digest))
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len())
    }

    /// Write chunk `digest` (`raw_size` bytes) from `frame`, its zstd bytes
    /// received from elsewhere, once they decompress to bytes of that digest;
    /// returns the bytes written. The chunk's row is added by the import
    /// that names it.
    pub fn put_chunk_frame(
        &mut self,
        digest: &Digest,
        raw_size: usize,
        frame: &[u8],
    ) -> Result<u64, StoreError> {
        self.writable()?;
        let path = chunk::chunk_path(&self.chunks_dir, digest);
        match zstd::bulk::decompress(frame, raw_size) {
            Ok(raw) if raw.len() == raw_size && Digest::of(&raw) == *digest => {}
            _ => {
                return Err(StoreError::ReadBack {
                    path,
                    file: format!("chunk {digest}"),
                    reason: "the received chunk does not decode to its digest".into(),
                })
            }
        }
        if let Some(fan_out) = path.parent() {
            make_dir(fan_out, &self.chunks_dir)?;
        }
        chunk::write(&path, frame)?;
        Ok(frame.len() as u64)
    }

    /// Add `items` as new snapshots with fresh ids, all or nothing: each
    /// content is read back whole from the chunk files first, then the
    /// manifests are written, then one transaction adds the rows, and the
    /// tab index catches up. Returns the new records, in the order given.
    pub fn import_snapshots(
        &mut self,
        items: Vec<ImportedSnapshot>,
    ) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.writable()?;
        let mut reader = chunk::Reader::new().map_err(|source| PathError {
            path: self.chunks_dir.clone(),
            source,
        })?;
        let mut frames = Vec::new();
        let mut checked = HashSet::new();
        for item in &items {
            if !checked.insert(item.info.content_hash) {
                continue;
            }
            let mut hasher = blake3::Hasher::new();
            let mut size = 0u64;
            for (d, n) in &item.chunks {
                let path = chunk::chunk_path(&self.chunks_dir, d);
                let raw = reader
                    .read(&path, d, *n)
                    .map_err(|why| StoreError::ReadBack {
                        path: path.clone(),
                        file: item.info.file_name.clone(),
                        reason: format!("chunk {d}: {why}"),
                    })?;
                hasher.update(raw);
                size += raw.len() as u64;
                let packed = reader.packed_mut();
                frames.push((*d, *n, packed.len() as u64, Digest::of(packed)));
            }
            if size != item.info.json_size
                || Digest(*hasher.finalize().as_bytes()) != item.info.content_hash
            {
                return Err(StoreError::ReadBack {
                    path: self.dir.clone(),
                    file: item.info.file_name.clone(),
                    reason: format!(
                        "its chunks do not add up to its content {}",
                        item.info.content_hash
                    ),
                });
            }
        }

        let base: i64 = self
            .conn
            .query_row(
                "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'snapshots'), 0)",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        // What each snapshot adds to this store, as for a backup: the stored
        // bytes of the chunks no earlier row or earlier item has.
        let frame_size: std::collections::HashMap<Digest, u64> = frames
            .iter()
            .map(|(d, _, stored, _)| (*d, *stored))
            .collect();
        let mut counted = HashSet::new();
        let mut infos = Vec::with_capacity(items.len());
        let mut written = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let mut info = item.info.clone();
            info.id = SnapshotId(base + 1 + i as i64);
            info.stored_size = 0;
            for (d, _) in &item.chunks {
                if let Some(stored) = frame_size.get(d) {
                    let catalogued: bool = self
                        .conn
                        .prepare_cached("SELECT 1 FROM chunks WHERE hash = ?1")
                        .and_then(|mut s| s.exists([&d.as_bytes()[..]]))
                        .map_err(|e| self.sql(e))?;
                    if !catalogued && counted.insert(*d) {
                        info.stored_size += stored;
                    }
                }
            }
            if written.insert(info.content_hash) {
                manifest::write_content(&self.dir, &info.content_hash, &item.chunks)?;
            }
            manifest::write_snapshot(&self.dir, &info)?;
            infos.push(info);
        }

        let path = self.catalog_path.clone();
        let err = |e| catalog::sql_error(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        {
            let mut put_chunk = tx
                .prepare_cached(
                    "INSERT INTO chunks (hash, raw_size, stored_size, frame_hash) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (hash) DO UPDATE SET stored_size = excluded.stored_size,
                                                      frame_hash = excluded.frame_hash",
                )
                .map_err(err)?;
            let mut healed = tx
                .prepare_cached("DELETE FROM damaged_chunks WHERE hash = ?1")
                .map_err(err)?;
            for (d, raw, stored, frame) in &frames {
                healed.execute([&d.as_bytes()[..]]).map_err(err)?;
                put_chunk
                    .execute(params![
                        &d.as_bytes()[..],
                        to_i64(*raw as u64),
                        to_i64(*stored),
                        &frame.as_bytes()[..]
                    ])
                    .map_err(err)?;
            }
        }
        for (item, info) in items.iter().zip(&infos) {
            let existing: Option<i64> = tx
                .query_row(
                    "SELECT id FROM contents WHERE hash = ?1",
                    [&info.content_hash.as_bytes()[..]],
                    |r| r.get(0),
                )
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })
                .map_err(err)?;
            let content_id = match existing {
                Some(id) => id,
                None => {
                    tx.execute(
                        "INSERT INTO contents (hash, size) VALUES (?1, ?2)",
                        params![&info.content_hash.as_bytes()[..], to_i64(info.json_size)],
                    )
                    .map_err(err)?;
                    let id = tx.last_insert_rowid();
                    for (seq, (d, _)) in item.chunks.iter().enumerate() {
                        let n = tx
                            .execute(
                                "INSERT INTO content_chunks (content_id, seq, chunk_id)
                                 SELECT ?1, ?2, id FROM chunks WHERE hash = ?3",
                                params![id, to_i64(seq as u64), &d.as_bytes()[..]],
                            )
                            .map_err(err)?;
                        if n != 1 {
                            return Err(self_corrupt(&path, format!("chunk {d} has no row")));
                        }
                    }
                    id
                }
            };
            super::add::insert_snapshot_row(&tx, &path, info, content_id)?;
        }
        tx.commit().map_err(err)?;
        self.catch_up_index(std::collections::HashMap::new());
        Ok(infos)
    }
}

fn self_corrupt(path: &std::path::Path, reason: String) -> StoreError {
    StoreError::CatalogCorrupt {
        path: path.to_path_buf(),
        reason,
    }
}
