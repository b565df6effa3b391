//! The backup store: snapshots of session files, stored once, catalogued in SQLite.
//!
//! A content-addressed, deduplicating store in the manner of restic and borg,
//! sized for Firefox sessions: a 1-40 MB JSON file that changes a few tabs at a
//! time, every 15 seconds.
//!
//! # On disk
//!
//! ```text
//! <store>/                      0700 (tightened to 0700 when opened for writing)
//!   lock                        empty; exclusively locked while open for writing
//!   catalog.sqlite              the catalog (+ -wal, -shm while open), 0600
//!   chunks/<2 hex>/<digest>.zst one zstd frame per chunk, 0600, never rewritten
//! ```
//!
//! The catalog (schema version in `PRAGMA user_version`, see `catalog.rs`)
//! has four tables: `snapshots` (one row per file taken: when, profile, source
//! file and kind, mtime, the session's `lastUpdate` and counts, format, status
//! `ok`/`corrupt` with the reason, bytes newly stored), `contents` (one row per
//! distinct content, by BLAKE3 digest), `content_chunks` (a content's ordered
//! chunk list, shared by every snapshot of that content) and `chunks` (digest,
//! raw and stored size); `meta` records the chunker parameters. Since
//! schema version 2 it also holds the tab index (`tab_entries`, `tab_runs`
//! and the FTS5 table `tab_search`, see `tabs.rs`), written
//! in the same transaction as each snapshot row. A read-only open accepts a
//! version-1 catalog for everything but the tab index; opening for writing
//! upgrades it, and [`Store::reindex_tabs`] indexes the older snapshots.
//!
//! # What is stored
//!
//! The *content* of a snapshot is the session JSON exactly as the file holds
//! it: the decompressed block of a mozlz4 file, or a JSON file's bytes
//! unchanged. A file that does not decompress or parse as a session is kept
//! anyway, as its raw bytes, with status `corrupt` and the reason, so nothing
//! handed to the store is ever lost. A content already stored adds a catalog
//! row only. A new content is split by FastCDC (v2020) content-defined
//! chunking, so an edit moves only the chunk boundaries near it and a session
//! that changed a few tabs shares all its other chunks with the one before;
//! only chunks not yet stored are compressed (zstd level 3) and written.
//!
//! Chunks and contents are named by BLAKE3: a cryptographic hash, so two
//! different chunks never share a name in practice and a name verifies its
//! file on every read, and several times faster than SHA-256 on CPUs without
//! SHA instructions, so hashing 40 MB costs milliseconds.
//!
//! # Durability: why a crash at any point loses nothing
//!
//! Adding a snapshot writes every new chunk file through
//! [`fs_util::write_atomic`](crate::fs_util::write_atomic) (temporary file,
//! fsync, rename, fsync of its folder; a new fan-out folder is fsynced into
//! `chunks/` first) *before* the catalog transaction that references those
//! chunks begins; that transaction commits with `synchronous=FULL` in WAL
//! mode, so a row that committed is on disk and so is every chunk it names. A
//! crash before the commit leaves chunk files no row references: harmless,
//! found by [`Store::unreferenced_chunks`] and removed by
//! [`Store::collect_garbage`]. Garbage collection works the other way round:
//! it first deletes the catalog rows nothing references (one transaction),
//! then only the chunk files that no remaining row names, so a crash during it
//! again leaves only unreferenced files. A chunk some snapshot references is
//! never deleted; [`Store::remove_snapshot`] removes a catalog row only.
//!
//! # Concurrency
//!
//! [`Store::open`] and [`Store::create_or_open`] take an exclusive,
//! non-blocking lock on `lock` for as long as the [`Store`] lives; a second
//! writer gets [`StoreError::Locked`]. [`Store::open_read_only`] takes no lock:
//! chunk files are immutable and committed before any row names them, and
//! SQLite isolates the catalog reads (a reader racing the garbage collection
//! of the very snapshot it reads gets [`StoreError::MissingChunk`]).

mod archive;
mod catalog;
mod chunk;
mod error;
mod layout;
mod snapshot;
mod tabs;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

pub use archive::{ArchiveMark, ArchivedTab};
pub use chunk::{ChunkerParams, Digest};
pub use error::StoreError;
pub use snapshot::{
    unix_ms, GcReport, SessionCounts, SnapshotId, SnapshotInfo, SnapshotSource, SnapshotStatus,
    StoreStats, UnreferencedChunk,
};
pub use tabs::{OpenStretch, ReindexReport, SearchError, SearchHit, TimeRange};

use crate::error::{IoResultExt, PathError};
use crate::format::{self, Format, SessionData};
use crate::fs_util::{sync_dir, write_atomic};
use crate::sources::short_reason;
use layout::{
    create_private_dir, make_dir, not_writable, refuse_foreign_folder, require_store, take_lock,
    tighten_dir, tighten_file,
};
use snapshot::{check, kind_from_name, kind_name};

/// File name of the catalog inside the store folder.
pub const CATALOG_FILE: &str = "catalog.sqlite";
/// Folder of the chunk files inside the store folder.
pub const CHUNKS_DIR: &str = "chunks";
/// File name of the lock inside the store folder.
pub const LOCK_FILE: &str = "lock";

/// An open backup store. See the [module documentation](self) for the layout
/// and the durability argument.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    chunks_dir: PathBuf,
    catalog_path: PathBuf,
    conn: Connection,
    params: ChunkerParams,
    /// The catalog's schema version (`SCHEMA_VERSION` once opened for
    /// writing; a read-only open may find an older one).
    schema_version: i64,
    /// The exclusively locked `lock` file; `None` when read-only. Dropping it
    /// releases the lock.
    lock: Option<File>,
}

impl Store {
    /// Open the store in `dir` for writing, creating the folder and an empty
    /// catalog if they do not exist yet. Takes the store's lock. A folder that
    /// holds other files but no catalog is refused ([`StoreError::NotAStore`]),
    /// so a mistyped path never turns someone's folder into a store.
    pub fn create_or_open(dir: impl AsRef<Path>) -> Result<Store, StoreError> {
        Self::create_or_open_with(dir, ChunkerParams::default())
    }

    /// Like [`Store::create_or_open`], with the chunk sizes a new store gets
    /// (an existing store keeps the ones it was created with).
    pub fn create_or_open_with(
        dir: impl AsRef<Path>,
        params: ChunkerParams,
    ) -> Result<Store, StoreError> {
        let dir = dir.as_ref();
        if !params.is_valid() {
            return Err(StoreError::InvalidChunkerParams {
                dir: dir.to_path_buf(),
                params,
            });
        }
        create_private_dir(dir)?;
        refuse_foreign_folder(dir)?;
        tighten_dir(dir)?;
        let lock = take_lock(dir)?;
        let catalog_path = dir.join(CATALOG_FILE);
        if !catalog_path.exists() {
            // An empty file is an empty SQLite database; creating it here makes
            // it 0600, and SQLite gives its -wal and -shm the same mode.
            write_atomic(&catalog_path, |_| Ok(())).map_err(|e| not_writable(dir, e))?;
        }
        Self::open_locked(dir, lock, params)
    }

    /// Open the existing store in `dir` for writing. Takes the store's lock.
    pub fn open(dir: impl AsRef<Path>) -> Result<Store, StoreError> {
        let dir = dir.as_ref();
        require_store(dir)?;
        tighten_dir(dir)?;
        let lock = take_lock(dir)?;
        Self::open_locked(dir, lock, ChunkerParams::default())
    }

    /// Open the existing store in `dir` for reading only, without taking its
    /// lock; changes return [`StoreError::ReadOnly`].
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Store, StoreError> {
        let dir = dir.as_ref();
        let catalog_path = require_store(dir)?;
        let (conn, params, schema_version) = catalog::open_ro(&catalog_path)?;
        Ok(Store {
            dir: dir.to_path_buf(),
            chunks_dir: dir.join(CHUNKS_DIR),
            catalog_path,
            conn,
            params,
            schema_version,
            lock: None,
        })
    }

    fn open_locked(dir: &Path, lock: File, init: ChunkerParams) -> Result<Store, StoreError> {
        let catalog_path = dir.join(CATALOG_FILE);
        for suffix in ["", "-wal", "-shm"] {
            let mut name = catalog_path.clone().into_os_string();
            name.push(suffix);
            tighten_file(Path::new(&name))?;
        }
        let (conn, params) = catalog::open_rw(&catalog_path, init)?;
        let chunks_dir = dir.join(CHUNKS_DIR);
        make_dir(&chunks_dir, dir)?;
        Ok(Store {
            dir: dir.to_path_buf(),
            chunks_dir,
            catalog_path,
            conn,
            params,
            schema_version: catalog::SCHEMA_VERSION,
            lock: Some(lock),
        })
    }

    /// The store folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True if opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.lock.is_none()
    }

    /// The chunk sizes this store splits contents with.
    pub fn chunker_params(&self) -> ChunkerParams {
        self.params
    }

    fn writable(&self) -> Result<(), StoreError> {
        match self.lock {
            Some(_) => Ok(()),
            None => Err(StoreError::ReadOnly {
                dir: self.dir.clone(),
            }),
        }
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        catalog::sql_error(&self.catalog_path, e)
    }

    fn corrupt(&self, reason: impl Into<String>) -> StoreError {
        StoreError::CatalogCorrupt {
            path: self.catalog_path.clone(),
            reason: reason.into(),
        }
    }

    /// Take a snapshot of `source` at `now_ms` (ms since the Unix epoch).
    ///
    /// The bytes are verified first (decompressed and parsed as a session): a
    /// readable session stores its JSON with status `ok`; anything else stores
    /// the raw bytes with status `corrupt` and the reason. Only chunks the
    /// store does not hold yet are written, all of them durably before the
    /// catalog row that references them commits.
    pub fn add_snapshot(
        &mut self,
        source: SnapshotSource,
        now_ms: u64,
    ) -> Result<SnapshotInfo, StoreError> {
        let mut infos = self.add_snapshots(vec![source], now_ms)?;
        Ok(infos.remove(0))
    }

    /// Take snapshots of several files at once, all or nothing: every new
    /// chunk of every file is written durably first, then one catalog
    /// transaction adds all the rows. If anything fails (a full disk, say),
    /// the catalog is as it was; chunk files already written are unreferenced
    /// and garbage collection removes them.
    pub fn add_snapshots(
        &mut self,
        sources: Vec<SnapshotSource>,
        now_ms: u64,
    ) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.writable()?;
        // The content of the newest verified file per source earlier in this
        // batch: the predecessor of the next one of that source.
        let mut batch_newest: HashMap<String, Digest> = HashMap::new();
        let mut prepared = Vec::with_capacity(sources.len());
        for source in sources {
            let p = self.prepare(source, &batch_newest)?;
            if p.verdict.is_ok() {
                batch_newest.insert(p.file_name.clone(), p.digest);
            }
            prepared.push(p);
        }

        // Every chunk file named below is durable now; commit the rows.
        let path = self.catalog_path.clone();
        let err = |e| catalog::sql_error(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        let mut ids = Vec::with_capacity(prepared.len());
        for p in &prepared {
            ids.push(insert_rows(&tx, &path, p, now_ms)?);
        }
        tx.commit().map_err(err)?;
        ids.into_iter().map(|id| self.snapshot(id)).collect()
    }

    /// Verify and chunk one source, writing the chunks the store lacks;
    /// `batch_newest` holds the content of the newest verified file of each
    /// source added earlier in the same batch.
    fn prepare(
        &self,
        source: SnapshotSource,
        batch_newest: &HashMap<String, Digest>,
    ) -> Result<Prepared, StoreError> {
        let SnapshotSource {
            bytes,
            profile,
            file_name,
            kind,
            mtime_ms,
        } = source;
        let checked = check(&file_name, bytes);
        let content = &checked.content;
        let digest = Digest::of(content);
        let existing: Option<i64> = self
            .conn
            .prepare_cached("SELECT id FROM contents WHERE hash = ?1")
            .and_then(|mut s| {
                s.query_row([&digest.as_bytes()[..]], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| self.sql(e))?;
        let (order, new_chunks, stored_size) = match existing {
            Some(id) if self.content_files_present(id)? => (Vec::new(), Vec::new(), 0),
            _ => self.write_chunks(content)?,
        };
        // The content of its predecessor (the newest verified snapshot of the
        // same source) only extends the predecessor's runs; anything else
        // verified is parsed (once) for the tab index.
        let same_as_predecessor = match (batch_newest.get(&file_name), existing) {
            (Some(newest), _) => *newest == digest,
            (None, Some(id)) => {
                tabs::indexed_newest_content_of(&self.conn, &file_name).map_err(|e| self.sql(e))?
                    == Some(id)
            }
            (None, None) => false,
        };
        let tabs = match (&checked.verdict, same_as_predecessor) {
            (Ok(_), false) => tabs::tab_rows(content),
            _ => None,
        };
        Ok(Prepared {
            digest,
            content_len: content.len() as u64,
            order,
            new_chunks,
            stored_size,
            verdict: checked.verdict,
            tabs,
            format: checked.format,
            profile,
            file_name,
            kind,
            mtime_ms,
        })
    }

    /// True if every chunk file of content `id` exists (a missing one is
    /// written again from the new snapshot's bytes).
    fn content_files_present(&self, id: i64) -> Result<bool, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT ch.hash FROM content_chunks cc JOIN chunks ch ON ch.id = cc.chunk_id
                 WHERE cc.content_id = ?1",
            )
            .map_err(|e| self.sql(e))?;
        let hashes: Vec<Vec<u8>> = stmt
            .query_map([id], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        for h in hashes {
            let d = Digest::from_slice(&h)
                .ok_or_else(|| self.corrupt("a chunk hash is not 32 bytes"))?;
            if !chunk::chunk_path(&self.chunks_dir, &d).is_file() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Split `content`, write the chunks the store lacks (durably), and return
    /// the ordered chunk digests, the chunks written (digest, raw size, stored
    /// size) and the bytes written.
    #[allow(clippy::type_complexity)]
    fn write_chunks(
        &self,
        content: &[u8],
    ) -> Result<(Vec<Digest>, Vec<(Digest, u64, u64)>, u64), StoreError> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut written = Vec::new();
        let mut stored = 0u64;
        let mut known = self
            .conn
            .prepare_cached("SELECT 1 FROM chunks WHERE hash = ?1")
            .map_err(|e| self.sql(e))?;
        for piece in self.params.split(content) {
            let digest = Digest::of(piece);
            order.push(digest);
            if !seen.insert(digest) {
                continue;
            }
            let path = chunk::chunk_path(&self.chunks_dir, &digest);
            let in_catalog = known
                .exists([&digest.as_bytes()[..]])
                .map_err(|e| self.sql(e))?;
            if in_catalog && path.is_file() {
                continue;
            }
            if let Some(fan_out) = path.parent() {
                make_dir(fan_out, &self.chunks_dir)?;
            }
            let packed = chunk::compress(piece, &path)?;
            chunk::write(&path, &packed)?;
            stored += packed.len() as u64;
            written.push((digest, piece.len() as u64, packed.len() as u64));
        }
        Ok((order, written, stored))
    }

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
    pub fn snapshots(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.query_infos(
            &format!("{} ORDER BY s.taken_at DESC, s.id DESC", Self::SELECT_INFO),
            [],
        )
    }

    /// One snapshot.
    pub fn snapshot(&self, id: SnapshotId) -> Result<SnapshotInfo, StoreError> {
        self.query_infos(&format!("{} WHERE s.id = ?1", Self::SELECT_INFO), [id.0])?
            .pop()
            .ok_or_else(|| StoreError::UnknownSnapshot {
                dir: self.dir.clone(),
                id,
            })
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
        let content_digest = Digest::from_slice(&hash).ok_or_else(|| {
            self.corrupt(format!("snapshot {id}: its content hash is not 32 bytes"))
        })?;
        let chunks: Vec<(Vec<u8>, i64)> = self
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
        let most = chunks.len().saturating_mul(self.params.max);
        let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0).min(most));
        for (hash, raw_size) in chunks {
            let digest = Digest::from_slice(&hash)
                .ok_or_else(|| self.corrupt("a chunk hash is not 32 bytes"))?;
            let raw_size = usize::try_from(raw_size)
                .ok()
                .filter(|&n| n <= self.params.max)
                .ok_or_else(|| {
                    self.corrupt(format!("chunk {digest} has an impossible size {raw_size}"))
                })?;
            let path = chunk::chunk_path(&self.chunks_dir, &digest);
            match chunk::read(&path, &digest, raw_size) {
                Ok(raw) => out.extend_from_slice(&raw),
                Err(chunk::ReadFailure::Missing) => {
                    return Err(StoreError::MissingChunk {
                        path,
                        digest,
                        snapshot: id,
                    })
                }
                Err(chunk::ReadFailure::Damaged(reason)) => {
                    return Err(StoreError::DamagedChunk {
                        path,
                        digest,
                        snapshot: id,
                        reason,
                    })
                }
                Err(chunk::ReadFailure::Io(source)) => {
                    return Err(PathError { path, source }.into())
                }
            }
        }
        if i64::try_from(out.len()).ok() != Some(size) || Digest::of(&out) != content_digest {
            return Err(self.corrupt(format!(
                "snapshot {id}: its chunks do not add up to its content {content_digest}"
            )));
        }
        Ok(out)
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

    /// Remove snapshot `id` from the catalog. Its chunks stay until
    /// [`Store::collect_garbage`] finds that no snapshot references them.
    pub fn remove_snapshot(&mut self, id: SnapshotId) -> Result<(), StoreError> {
        self.writable()?;
        let n = self
            .conn
            .execute("DELETE FROM snapshots WHERE id = ?1", [id.0])
            .map_err(|e| self.sql(e))?;
        if n == 0 {
            return Err(StoreError::UnknownSnapshot {
                dir: self.dir.clone(),
                id,
            });
        }
        Ok(())
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
            if prefix.len() != 2 || !sub_path.is_dir() {
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

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A source verified and chunked, its chunk files durable, not yet catalogued.
struct Prepared {
    digest: Digest,
    content_len: u64,
    order: Vec<Digest>,
    new_chunks: Vec<(Digest, u64, u64)>,
    stored_size: u64,
    verdict: Result<(SessionCounts, Option<u64>), String>,
    /// The tabs of a verified session, for the tab index; `None` when its
    /// content is that of its predecessor, whose runs it extends.
    tabs: Option<Vec<tabs::TabRow>>,
    format: Option<Format>,
    profile: String,
    file_name: String,
    kind: crate::sources::SourceKind,
    mtime_ms: Option<u64>,
}

/// Add the catalog rows of one prepared snapshot inside `tx`.
fn insert_rows(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    p: &Prepared,
    now_ms: u64,
) -> Result<SnapshotId, StoreError> {
    let err = |e| catalog::sql_error(path, e);
    {
        let mut put_chunk = tx
            .prepare_cached(
                "INSERT INTO chunks (hash, raw_size, stored_size) VALUES (?1, ?2, ?3)
                 ON CONFLICT (hash) DO UPDATE SET stored_size = excluded.stored_size",
            )
            .map_err(err)?;
        for (d, raw, stored) in &p.new_chunks {
            put_chunk
                .execute(params![&d.as_bytes()[..], to_i64(*raw), to_i64(*stored)])
                .map_err(err)?;
        }
    }
    // Looked up again inside the transaction: two files of one batch may share
    // a content.
    let existing: Option<i64> = tx
        .prepare_cached("SELECT id FROM contents WHERE hash = ?1")
        .and_then(|mut s| {
            s.query_row([&p.digest.as_bytes()[..]], |r| r.get(0))
                .optional()
        })
        .map_err(err)?;
    let content_id = match existing {
        Some(id) => id,
        None => {
            tx.execute(
                "INSERT INTO contents (hash, size) VALUES (?1, ?2)",
                params![&p.digest.as_bytes()[..], to_i64(p.content_len)],
            )
            .map_err(err)?;
            let id = tx.last_insert_rowid();
            let mut link = tx
                .prepare_cached(
                    "INSERT INTO content_chunks (content_id, seq, chunk_id)
                     SELECT ?1, ?2, id FROM chunks WHERE hash = ?3",
                )
                .map_err(err)?;
            for (seq, d) in p.order.iter().enumerate() {
                let n = link
                    .execute(params![id, to_i64(seq as u64), &d.as_bytes()[..]])
                    .map_err(err)?;
                if n != 1 {
                    return Err(StoreError::CatalogCorrupt {
                        path: path.to_path_buf(),
                        reason: format!("chunk {d} vanished from the catalog while adding"),
                    });
                }
            }
            id
        }
    };
    let (counts, last_update, status, reason) = match &p.verdict {
        Ok((c, lu)) => (Some(*c), *lu, "ok", None),
        Err(why) => (None, None, "corrupt", Some(why.as_str())),
    };
    tx.execute(
        "INSERT INTO snapshots (taken_at, profile, source_name, source_kind, source_mtime,
             last_update, windows, tabs, closed_tabs, closed_windows, content_id,
             stored_size, format, status, reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            to_i64(now_ms),
            p.profile,
            p.file_name,
            kind_name(&p.kind),
            p.mtime_ms.map(to_i64),
            last_update.map(to_i64),
            counts.map(|c| to_i64(c.windows)),
            counts.map(|c| to_i64(c.tabs)),
            counts.map(|c| to_i64(c.closed_tabs)),
            counts.map(|c| to_i64(c.closed_windows)),
            content_id,
            to_i64(p.stored_size),
            p.format.map(|f| f.to_string()),
            status,
            reason,
        ],
    )
    .map_err(err)?;
    let id = SnapshotId(tx.last_insert_rowid());
    if p.verdict.is_ok() {
        match &p.tabs {
            Some(rows) => tabs::insert_tab_rows(tx, path, id, &p.file_name, rows)?,
            None => {
                if !tabs::extend_all_runs(tx, path, id, &p.file_name, content_id)? {
                    // Only possible if the source's newest snapshot changed
                    // between prepare and commit, which the lock prevents.
                    return Err(StoreError::CatalogCorrupt {
                        path: path.to_path_buf(),
                        reason: format!(
                            "snapshot {id}'s predecessor changed while adding it to the tab index"
                        ),
                    });
                }
            }
        }
    }
    Ok(id)
}
