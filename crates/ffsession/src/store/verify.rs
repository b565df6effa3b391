//! Reading one snapshot back now, as a restore would, and remembering what
//! was found damaged.
//!
//! "Verified" at backup time says the file was a readable session and its
//! chunks read back then; a chunk can rot afterwards. Before prune (and so
//! `watch`) removes anything, the snapshots its protections keep are read back
//! with [`Store::verify_snapshot`]; `restore latest` skips a snapshot that does
//! not read back; `watch` reads the newest snapshot of each file at start and
//! daily. What a writer finds is recorded in `damaged_chunks` (catalog version
//! 5), so `list` can mark the snapshots that use a damaged chunk, until a
//! backup of the same content rewrites the chunk and clears the mark.

use std::collections::{BTreeMap, HashSet};

use rusqlite::params;
use serde::Serialize;

use super::chunk::{self, Digest};
use super::manifest::{self, SnapshotManifest};
use super::{to_i64, SnapshotId, Store, StoreError};

/// What reading a snapshot back found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotDamage {
    /// The snapshot.
    pub id: SnapshotId,
    /// What is wrong, in a few words.
    pub what: String,
}

impl Store {
    /// Read snapshot `id` back now: its catalog row against its manifest
    /// (when it has a whole one), then every chunk, each against the digest
    /// of its file's bytes recorded when it was read back last (a cheap hash
    /// of the compressed bytes) or, failing that, decompressed and checked
    /// against its name. `None` when it reads back whole. A chunk found
    /// missing or damaged is recorded (when the store is open for writing)
    /// so `list` marks the snapshots that use it; a snapshot found whole
    /// clears its chunks' marks. An I/O error is an error, not damage.
    pub fn verify_snapshot(&self, id: SnapshotId) -> Result<Option<SnapshotDamage>, StoreError> {
        let damage = |what: String| Ok(Some(SnapshotDamage { id, what }));
        if self.schema_version >= 5 {
            if let Ok(m) = manifest::read_snapshot(&self.dir, id) {
                let row = self.snapshot(id)?;
                if SnapshotManifest::of(&row) != m {
                    return damage(format!(
                        "its catalog row does not match its manifest ({})",
                        differences(&SnapshotManifest::of(&row), &m)
                    ));
                }
            }
        }
        let recipe = match self.recipe(id) {
            Ok(r) => r,
            Err(e @ (StoreError::UnknownSnapshot { .. } | StoreError::Io(_))) => return Err(e),
            Err(e) => return damage(e.to_string()),
        };
        let frames = self.frames_of(&recipe.chunks)?;
        let mut reader = chunk::Reader::new().map_err(|source| crate::error::PathError {
            path: self.chunks_dir.clone(),
            source,
        })?;
        let mut bad: BTreeMap<Digest, String> = BTreeMap::new();
        let mut seen = HashSet::new();
        for ((digest, raw_size), frame) in recipe.chunks.iter().zip(&frames) {
            if !seen.insert(*digest) {
                continue;
            }
            let path = chunk::chunk_path(&self.chunks_dir, digest);
            if let Some(frame) = frame {
                match reader.frame_matches(&path, frame, *raw_size) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(chunk::ReadFailure::Io(source)) => {
                        return Err(crate::error::PathError { path, source }.into())
                    }
                    Err(failure) => {
                        bad.insert(*digest, failure.to_string());
                        continue;
                    }
                }
            }
            match reader.read(&path, digest, *raw_size) {
                Ok(_) => {}
                Err(chunk::ReadFailure::Io(source)) => {
                    return Err(crate::error::PathError { path, source }.into())
                }
                Err(failure) => {
                    bad.insert(*digest, failure.to_string());
                }
            }
        }
        let total: u64 = recipe.chunks.iter().map(|(_, n)| *n as u64).sum();
        self.record_marks(&recipe.chunks, &bad);
        if let Some((digest, why)) = bad.iter().next() {
            return damage(format!(
                "{} of its {} chunks {} missing or damaged (chunk {digest}: {why})",
                bad.len(),
                seen.len(),
                if bad.len() == 1 { "is" } else { "are" }
            ));
        }
        if total != recipe.size {
            return damage(format!(
                "its chunks add up to {total} bytes, its content has {}",
                recipe.size
            ));
        }
        Ok(None)
    }

    /// Record the chunks of `list` found bad, clear the marks of the others
    /// (only when open for writing; marks are a note, so a failure to write
    /// them is not an error).
    fn record_marks(&self, list: &[(Digest, usize)], bad: &BTreeMap<Digest, String>) {
        if self.is_read_only() || self.schema_version < 5 {
            return;
        }
        let now = super::unix_ms(std::time::SystemTime::now()).unwrap_or(0);
        let result = self.conn.unchecked_transaction().and_then(|tx| {
            {
                let mut put = tx.prepare_cached(
                    "INSERT INTO damaged_chunks (hash, found_at, reason) VALUES (?1, ?2, ?3)
                     ON CONFLICT (hash) DO UPDATE SET reason = excluded.reason",
                )?;
                let mut clear = tx.prepare_cached("DELETE FROM damaged_chunks WHERE hash = ?1")?;
                for (digest, _) in list {
                    match bad.get(digest) {
                        Some(why) => {
                            put.execute(params![&digest.as_bytes()[..], to_i64(now), why])?
                        }
                        None => clear.execute([&digest.as_bytes()[..]])?,
                    };
                }
            }
            tx.commit()
        });
        drop(result);
    }

    /// The snapshots that use a chunk found damaged (and not healed since),
    /// with what was found.
    pub fn damage_marks(&self) -> Result<BTreeMap<SnapshotId, String>, StoreError> {
        if self.schema_version < 5 {
            return Ok(BTreeMap::new());
        }
        let rows: Vec<(i64, Vec<u8>, String)> = self
            .conn
            .prepare_cached(
                "SELECT s.id, d.hash, d.reason FROM damaged_chunks d
                 JOIN chunks ch ON ch.hash = d.hash
                 JOIN content_chunks cc ON cc.chunk_id = ch.id
                 JOIN snapshots s ON s.content_id = cc.content_id
                 ORDER BY s.id",
            )
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(|e| self.sql(e))?;
        let mut out = BTreeMap::new();
        for (id, hash, reason) in rows {
            let chunk = Digest::from_slice(&hash).map_or_else(|| "?".into(), |d| d.to_hex());
            out.entry(SnapshotId(id))
                .or_insert_with(|| format!("chunk {chunk} found damaged: {reason}"));
        }
        Ok(out)
    }
}

/// The fields in which two manifests differ, named.
pub(super) fn differences(a: &SnapshotManifest, b: &SnapshotManifest) -> String {
    let a = serde_json::to_value(a).unwrap_or_default();
    let b = serde_json::to_value(b).unwrap_or_default();
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return "?".into();
    };
    let names: Vec<&str> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .collect();
    names.join(", ")
}
