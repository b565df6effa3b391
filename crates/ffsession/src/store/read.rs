//! Reading the catalog and the snapshots' contents back, every chunk verified.

use std::fs;

use rusqlite::OptionalExtension;

use super::chunk::{self, Digest};
use super::manifest;
use super::snapshot::kind_from_name;
use super::{
    SessionCounts, SnapshotId, SnapshotInfo, SnapshotStatus, Store, StoreError, StoreStats,
};
use crate::error::PathError;
use crate::format::{self, Format, SessionData};
use crate::sources::short_reason;

impl Store {
    const SELECT_INFO: &'static str = "SELECT s.id, s.taken_at, s.profile, s.source_name,
        s.source_kind, s.source_mtime, s.last_update, s.windows, s.tabs, s.closed_tabs,
        s.closed_windows, c.hash, c.size, s.stored_size, s.format, s.status, s.reason
        FROM snapshots s JOIN contents c ON c.id = s.content_id";

    fn info_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(SnapshotInfo, bool)> {
        let u = |i: usize| -> rusqlite::Result<u64> {
            Ok(u64::try_from(row.get::<_, i64>(i)?).unwrap_or(0))
        };
        let ou = |i: usize| -> rusqlite::Result<Option<u64>> {
            Ok(row
                .get::<_, Option<i64>>(i)?
                .map(|v| u64::try_from(v).unwrap_or(0)))
        };
        let counts = match (ou(7)?, ou(8)?, ou(9)?, ou(10)?) {
            (Some(windows), Some(tabs), Some(closed_tabs), Some(closed_windows)) => {
                Some(SessionCounts {
                    windows,
                    tabs,
                    closed_tabs,
                    closed_windows,
                })
            }
            _ => None,
        };
        let hash: Vec<u8> = row.get(11)?;
        let digest = Digest::from_slice(&hash);
        let format = match row.get::<_, Option<String>>(14)?.as_deref() {
            Some("mozlz4") => Some(Format::Mozlz4),
            Some("json") => Some(Format::Json),
            _ => None,
        };
        let status = match row.get::<_, String>(15)?.as_str() {
            "ok" => SnapshotStatus::Ok,
            _ => SnapshotStatus::Corrupt {
                reason: row.get::<_, Option<String>>(16)?.unwrap_or_default(),
            },
        };
        let info = SnapshotInfo {
            id: SnapshotId(row.get(0)?),
            taken_at_ms: u(1)?,
            profile: row.get(2)?,
            file_name: row.get(3)?,
            kind: kind_from_name(&row.get::<_, String>(4)?),
            mtime_ms: ou(5)?,
            last_update_ms: ou(6)?,
            counts,
            content_hash: digest.unwrap_or(Digest([0; 32])),
            json_size: u(12)?,
            stored_size: u(13)?,
            format,
            status,
        };
        Ok((info, digest.is_some()))
    }

    fn query_infos(
        &self,
        sql: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<SnapshotInfo>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.sql(e))?;
        let rows: Vec<(SnapshotInfo, bool)> = stmt
            .query_map(args, Self::info_from_row)
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        rows.into_iter()
            .map(|(info, hash_ok)| {
                if hash_ok {
                    Ok(info)
                } else {
                    Err(self.corrupt(format!(
                        "snapshot {}: its content hash is not 32 bytes",
                        info.id
                    )))
                }
            })
            .collect()
    }

    /// Every snapshot, newest first (by the time it was taken, then by id).
    /// A catalog too damaged to list them gives way to the snapshot
    /// manifests.
    pub fn snapshots(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        let listed = self.query_infos(
            &format!("{} ORDER BY s.taken_at DESC, s.id DESC", Self::SELECT_INFO),
            [],
        );
        match listed {
            Err(e @ StoreError::CatalogCorrupt { .. }) if self.schema_version >= 5 => {
                self.snapshots_from_manifests().map_err(|_| e)
            }
            other => other,
        }
    }

    /// Every snapshot a whole manifest records, newest first (by the time it
    /// was taken, then by id).
    pub(super) fn snapshots_from_manifests(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        let mut out = Vec::new();
        for id in manifest::snapshot_ids(&self.dir)? {
            if let Some(info) = manifest::read_snapshot(&self.dir, id)
                .ok()
                .and_then(|m| m.info())
            {
                out.push(info);
            }
        }
        out.sort_by(|a, b| b.taken_at_ms.cmp(&a.taken_at_ms).then(b.id.cmp(&a.id)));
        Ok(out)
    }

    /// Every snapshot, newest session first ([`super::newest_session_first`]):
    /// the order every "latest", "newest" and "before" means.
    pub fn snapshots_by_session_time(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        let mut all = self.snapshots()?;
        all.sort_by(super::newest_session_first);
        Ok(all)
    }

    /// One snapshot (from its manifest when the catalog is too damaged to
    /// say).
    pub fn snapshot(&self, id: SnapshotId) -> Result<SnapshotInfo, StoreError> {
        match self.query_infos(&format!("{} WHERE s.id = ?1", Self::SELECT_INFO), [id.0]) {
            Ok(mut rows) => rows.pop().ok_or_else(|| StoreError::UnknownSnapshot {
                dir: self.dir.clone(),
                id,
            }),
            Err(e @ StoreError::CatalogCorrupt { .. }) if self.schema_version >= 5 => {
                manifest::read_snapshot(&self.dir, id)
                    .ok()
                    .and_then(|m| m.info())
                    .ok_or(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The session JSON of snapshot `id`, byte-identical to what was stored;
    /// every chunk is checked against its digest, and the whole against the
    /// content's. A snapshot of a damaged file is [`StoreError::CorruptSnapshot`]
    /// (its bytes are in [`Store::read_content`]).
    pub fn read_json(&self, id: SnapshotId) -> Result<Vec<u8>, StoreError> {
        let info = self.snapshot(id)?;
        if let SnapshotStatus::Corrupt { reason } = info.status {
            return Err(StoreError::CorruptSnapshot { id, reason });
        }
        self.read_content(id)
    }

    /// The stored content of snapshot `id`: its session JSON, or for a
    /// snapshot of a damaged file, that file's bytes as they were. Verified as
    /// [`Store::read_json`] is.
    pub fn read_content(&self, id: SnapshotId) -> Result<Vec<u8>, StoreError> {
        let recipe = self.recipe(id)?;
        let most = recipe.chunks.len().saturating_mul(self.params.max);
        let mut out = Vec::with_capacity(usize::try_from(recipe.size).unwrap_or(0).min(most));
        let mut reader = chunk::Reader::new().map_err(|source| PathError {
            path: self.chunks_dir.clone(),
            source,
        })?;
        for (digest, raw_size) in &recipe.chunks {
            let path = chunk::chunk_path(&self.chunks_dir, digest);
            match reader.read(&path, digest, *raw_size) {
                Ok(raw) => out.extend_from_slice(raw),
                Err(failure) => return Err(self.chunk_failure(path, *digest, id, failure)),
            }
        }
        if out.len() as u64 != recipe.size || Digest::of(&out) != recipe.digest {
            return Err(self.corrupt(format!(
                "snapshot {id}: its chunks do not add up to its content {}",
                recipe.digest
            )));
        }
        Ok(out)
    }

    /// The error for chunk `digest` of snapshot `id` that did not read.
    pub(super) fn chunk_failure(
        &self,
        path: std::path::PathBuf,
        digest: Digest,
        id: SnapshotId,
        failure: chunk::ReadFailure,
    ) -> StoreError {
        match failure {
            chunk::ReadFailure::Missing => StoreError::MissingChunk {
                path,
                digest,
                snapshot: id,
            },
            chunk::ReadFailure::Damaged(reason) => StoreError::DamagedChunk {
                path,
                digest,
                snapshot: id,
                reason,
            },
            chunk::ReadFailure::Io(source) => PathError { path, source }.into(),
        }
    }

    /// Which content snapshot `id` holds and which chunks make it: from the
    /// catalog when its row agrees with the snapshot's manifest (or there is
    /// no whole manifest to ask), else from the manifests, so a damaged
    /// catalog neither stops a restore nor gives another snapshot's content.
    pub(super) fn recipe(&self, id: SnapshotId) -> Result<Recipe, StoreError> {
        let from_catalog = self.catalog_recipe(id);
        if self.schema_version < 5 {
            return from_catalog;
        }
        let Ok(m) = manifest::read_snapshot(&self.dir, id) else {
            return from_catalog;
        };
        let digest = Digest::from_hex(&m.content).ok_or_else(|| {
            self.corrupt(format!(
                "snapshot {id}: its manifest's content is not a digest"
            ))
        })?;
        if let Ok(r) = &from_catalog {
            if r.digest == digest {
                return from_catalog;
            }
        }
        // The catalog cannot say, or says another content: the manifests.
        let chunks = match manifest::read_content(&self.dir, &digest) {
            Ok(c) => c.list().unwrap_or_default(),
            Err(why) => {
                let by_hash = self
                    .conn
                    .prepare_cached("SELECT id FROM contents WHERE hash = ?1")
                    .and_then(|mut s| s.query_row([&digest.as_bytes()[..]], |r| r.get(0)))
                    .map_err(|e| self.sql(e))
                    .and_then(|cid: i64| self.content_chunks(cid));
                match by_hash {
                    Ok(list) => list,
                    Err(_) => {
                        return Err(self.corrupt(format!(
                            "snapshot {id}: the catalog does not know its content {digest} and its content manifest is {why}"
                        )))
                    }
                }
            }
        };
        Ok(Recipe {
            digest,
            size: m.content_size,
            chunks,
        })
    }

    /// [`Store::recipe`] from the catalog alone.
    fn catalog_recipe(&self, id: SnapshotId) -> Result<Recipe, StoreError> {
        let row: Option<(i64, Vec<u8>, i64)> = self
            .conn
            .prepare_cached(
                "SELECT c.id, c.hash, c.size FROM snapshots s JOIN contents c ON c.id = s.content_id
                 WHERE s.id = ?1",
            )
            .and_then(|mut s| s.query_row([id.0], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
            .map_err(|e| self.sql(e))?;
        let (content_id, hash, size) = row.ok_or_else(|| StoreError::UnknownSnapshot {
            dir: self.dir.clone(),
            id,
        })?;
        let digest = Digest::from_slice(&hash).ok_or_else(|| {
            self.corrupt(format!("snapshot {id}: its content hash is not 32 bytes"))
        })?;
        Ok(Recipe {
            digest,
            size: u64::try_from(size).unwrap_or(u64::MAX),
            chunks: self.content_chunks(content_id)?,
        })
    }

    /// The ordered chunks (digest, raw size) of content `content_id`, as the
    /// catalog lists them; a hash that is not 32 bytes or a size larger than
    /// the store's largest chunk is [`StoreError::CatalogCorrupt`].
    pub(super) fn content_chunks(
        &self,
        content_id: i64,
    ) -> Result<Vec<(Digest, usize)>, StoreError> {
        let rows: Vec<(Vec<u8>, i64)> = self
            .conn
            .prepare_cached(
                "SELECT ch.hash, ch.raw_size FROM content_chunks cc JOIN chunks ch ON ch.id = cc.chunk_id
                 WHERE cc.content_id = ?1 ORDER BY cc.seq",
            )
            .and_then(|mut s| {
                s.query_map([content_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(|e| self.sql(e))?;
        rows.into_iter()
            .map(|(hash, raw_size)| {
                let digest = Digest::from_slice(&hash)
                    .ok_or_else(|| self.corrupt("a chunk hash is not 32 bytes"))?;
                let raw_size = usize::try_from(raw_size)
                    .ok()
                    .filter(|&n| n <= self.params.max)
                    .ok_or_else(|| {
                        self.corrupt(format!("chunk {digest} has an impossible size {raw_size}"))
                    })?;
                Ok((digest, raw_size))
            })
            .collect()
    }

    /// Snapshot `id` as a mozlz4 file Firefox can read (`sessionstore.jsonlz4`).
    pub fn export_mozlz4(&self, id: SnapshotId) -> Result<Vec<u8>, StoreError> {
        let json = self.read_json(id)?;
        // A JSON file's content may carry a byte-order mark or old Firefox's
        // `( ... )`; SessionData finds the JSON value inside.
        let data = SessionData::from_bytes(format!("snapshot {id}"), json).map_err(|e| {
            StoreError::CorruptSnapshot {
                id,
                reason: short_reason(&e),
            }
        })?;
        format::compress(data.json()).map_err(|source| StoreError::Export { id, source })
    }

    /// Counts and sizes of the whole store.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let (snapshots, contents, chunks, raw, stored): (i64, i64, i64, i64, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT count(*) FROM snapshots), (SELECT count(*) FROM contents),
                        count(*), coalesce(sum(raw_size), 0), coalesce(sum(stored_size), 0)
                 FROM chunks",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .map_err(|e| self.sql(e))?;
        let mut catalog_bytes = 0;
        for suffix in ["", "-wal"] {
            let mut name = self.catalog_path.clone().into_os_string();
            name.push(suffix);
            catalog_bytes += fs::metadata(&name).map_or(0, |m| m.len());
        }
        let u = |v: i64| u64::try_from(v).unwrap_or(0);
        Ok(StoreStats {
            snapshots: u(snapshots),
            contents: u(contents),
            chunks: u(chunks),
            chunk_raw_bytes: u(raw),
            chunk_stored_bytes: u(stored),
            catalog_bytes,
        })
    }
}

/// What a snapshot's content is and which chunks make it.
#[derive(Debug, Clone)]
pub(super) struct Recipe {
    /// The content's digest.
    pub digest: Digest,
    /// Its size in bytes.
    pub size: u64,
    /// Its chunks (digest, raw size), in order.
    pub chunks: Vec<(Digest, usize)>,
}
