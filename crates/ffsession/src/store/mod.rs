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
//!   lock                        the writer's pid; exclusively locked while open for writing
//!   profile                     the profile folder it backs up (`owner.rs`)
//!   catalog.sqlite              the catalog (+ -wal, -shm while open), 0600
//!   chunks/<2 hex>/<digest>.zst one zstd frame per chunk, 0600; rewritten only
//!                               when found damaged, with the same content
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
//! Before the transaction begins, each snapshot is read back from disk (every
//! chunk decoded and checked against its name, the whole against the
//! content's digest; `add.rs`). A chunk found missing or damaged is written
//! again from the fresh bytes through `write_atomic`, which heals every older
//! snapshot sharing it; a crash during that rewrite leaves the old file or the
//! new one under the chunk's name, and both name the same content, so a
//! reader tells them apart by hashing. A snapshot still not whole after that
//! is [`StoreError::ReadBack`] and the batch records nothing.
//! [`check_store`] reads everything and changes nothing.
//!
//! # Concurrency
//!
//! [`Store::open`] and [`Store::create_or_open`] take an exclusive,
//! non-blocking lock on `lock` for as long as the [`Store`] lives; a second
//! writer gets [`StoreError::Locked`]. [`Store::open_read_only`] takes no lock:
//! chunk files are immutable and committed before any row names them, and
//! SQLite isolates the catalog reads (a reader racing the garbage collection
//! of the very snapshot it reads gets [`StoreError::MissingChunk`]).

#[cfg(windows)]
mod acl;
mod add;
mod archive;
mod catalog;
mod check;
mod chunk;
mod error;
mod forget;
mod gc;
mod hygiene;
mod index;
mod layout;
mod manifest;
mod origin;
pub mod owner;
mod queries;
mod read;
mod rebuild;
mod search;
pub(crate) mod snapshot;
mod tabs;
mod transfer;
mod undo;
mod upgrade;
mod verify;

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

#[cfg(windows)]
pub use acl::{current_user_sid, dacl_sddl, make_private};
pub use archive::{ArchiveMark, ArchivedTab};
pub use check::{
    check_store, CheckProgress, CheckReport, ChunkProblem, DamagedSnapshot, StoreProblem,
};
pub use chunk::{ChunkerParams, Digest};
pub use error::StoreError;
pub use index::{IndexNote, INDEX_FILE};
pub use layout::lock_holder;
pub use manifest::{ARCHIVES_DIR, CONTENTS_DIR, SNAPSHOTS_DIR, STORE_FILE};
pub use origin::{Origin, ORIGINS_DIR};
pub use rebuild::{rebuild_catalog, RebuildReport};
pub use search::{literal_query, OpenStretch, SearchError, SearchHit, TimeRange};
pub use snapshot::{
    newest_session_first, unix_ms, GcReport, SessionCounts, SnapshotId, SnapshotInfo,
    SnapshotSource, SnapshotStatus, StoreStats, UnreferencedChunk,
};
pub use tabs::ReindexReport;
pub use transfer::ImportedSnapshot;
pub use undo::{UndoAction, UndoPoint, UNDO_DIR, UNDO_KEEP_AFTER_NEXT_MS, UNDO_KEEP_MS};
pub use verify::SnapshotDamage;

use crate::fs_util::write_atomic;
use layout::{
    create_private_dir, make_dir, not_writable, refuse_foreign_folder, require_store, take_lock,
    tighten_dir, tighten_file,
};

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
    /// Where the tab index is.
    index: index::IndexState,
    /// The last note about the tab index, for the caller to show once.
    index_note: Option<index::IndexNote>,
    /// How a read-only open reads the catalog (a private copy is deleted
    /// with the store).
    #[allow(dead_code)]
    read_mode: catalog::ReadMode,
    /// A private copy of the tab index, when it could not be read in place.
    _index_copy: Option<tempfile::TempDir>,
    /// Read every snapshot back before recording it (always, but for the
    /// benchmark that measures what the read-back costs).
    read_back: bool,
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
        let (conn, params, schema_version, read_mode) = catalog::open_ro(&catalog_path)?;
        let (index, index_copy) = if schema_version >= 5 {
            let degraded = !matches!(read_mode, catalog::ReadMode::Normal);
            index::attach_ro(&conn, dir, degraded)
        } else if schema_version >= catalog::TAB_INDEX_VERSION {
            (index::IndexState::InCatalog, None)
        } else {
            let why = format!(
                "the catalog has schema version {schema_version}, from before the tab index"
            );
            (index::IndexState::Unavailable(why), None)
        };
        Ok(Store {
            dir: dir.to_path_buf(),
            chunks_dir: dir.join(CHUNKS_DIR),
            catalog_path,
            conn,
            params,
            schema_version,
            lock: None,
            index,
            index_note: None,
            read_mode,
            _index_copy: index_copy,
            read_back: true,
        })
    }

    fn open_locked(dir: &Path, lock: File, init: ChunkerParams) -> Result<Store, StoreError> {
        // Under the lock: an empty catalog is made a new one below.
        layout::refuse_lost_catalog(dir)?;
        let catalog_path = dir.join(CATALOG_FILE);
        for suffix in ["", "-wal", "-shm"] {
            let mut name = catalog_path.clone().into_os_string();
            name.push(suffix);
            tighten_file(Path::new(&name))?;
        }
        let (conn, params, schema_version) = catalog::open_rw(&catalog_path, init)?;
        let chunks_dir = dir.join(CHUNKS_DIR);
        make_dir(&chunks_dir, dir)?;
        let (index, index_note) = index::attach_rw(&conn, dir);
        let mut store = Store {
            dir: dir.to_path_buf(),
            chunks_dir,
            catalog_path,
            conn,
            params,
            schema_version,
            lock: Some(lock),
            index,
            index_note: index_note.map(index::IndexNote::from),
            read_mode: catalog::ReadMode::Normal,
            _index_copy: None,
            read_back: true,
        };
        if store.schema_version < catalog::SCHEMA_VERSION {
            store.upgrade_to_v5()?;
        }
        // The index may lag the catalog (a crash after a commit, an index
        // deleted or rebuilt above): index what it lacks.
        store.catch_up_index(std::collections::HashMap::new());
        Ok(store)
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

    /// **For the benchmark only**: `false` records snapshots without reading
    /// them back and without looking for damaged chunks to heal, as ffsession
    /// did before it read back, so the cost of the read-back can be measured.
    #[doc(hidden)]
    pub fn set_read_back_for_bench(&mut self, on: bool) {
        self.read_back = on;
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
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
