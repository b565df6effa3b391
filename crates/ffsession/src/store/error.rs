//! The errors of the backup store.
//!
//! Every error names the store folder, the catalog or the chunk file it is
//! about; [`StoreError::hint`] says what the user can do.

use std::io;

use crate::Hint;
use std::path::PathBuf;

use super::{ChunkerParams, Digest, SnapshotId};
use crate::error::{FormatError, PathError};

/// What went wrong in the backup store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file of the store failed.
    #[error(transparent)]
    Io(#[from] PathError),
    /// The store folder cannot be created or written (permissions, read-only
    /// file system).
    #[error("{}: the store folder is not writable: {source}", dir.display())]
    NotWritable {
        /// The store folder.
        dir: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The folder holds no catalog (and, when creating, is not empty).
    #[error("{}: not an ffsession store (it has no catalog.sqlite)", dir.display())]
    NotAStore {
        /// The folder that was opened.
        dir: PathBuf,
    },
    /// The catalog is missing or empty but the store holds chunks: a new
    /// catalog would list none of them, and the next prune would delete them.
    #[error("{}: the store's catalog.sqlite is missing or empty, but the store holds chunk files; nothing was changed", dir.display())]
    CatalogLost {
        /// The store folder.
        dir: PathBuf,
    },
    /// A new store was asked for with chunk sizes FastCDC does not accept.
    #[error("{}: invalid chunk sizes {params:?} (they must be even, min <= avg <= max, within FastCDC's limits)", dir.display())]
    InvalidChunkerParams {
        /// The store folder.
        dir: PathBuf,
        /// The sizes asked for.
        params: ChunkerParams,
    },
    /// Another process holds the store's lock.
    #[error("another ffsession is using the store {}", dir.display())]
    Locked {
        /// The store folder.
        dir: PathBuf,
    },
    /// A file or folder of the store that ffsession opens or writes into is a
    /// symbolic link; the store follows none, so nothing was opened through it.
    #[error("{}: a symbolic link in the store; ffsession follows none, so nothing was read or changed through it", path.display())]
    SymbolicLink {
        /// The link.
        path: PathBuf,
    },
    /// The store folder itself is a symbolic link: not followed, as no link
    /// in a store is (`check` calls it damage).
    #[error("{}: the store folder is a symbolic link{}; ffsession follows none in a store, so nothing was read or changed through it", dir.display(), target.as_ref().map_or_else(String::new, |t| format!(" (to {})", t.display())))]
    StoreFolderLink {
        /// The store folder as given.
        dir: PathBuf,
        /// What the link points to, as written in it.
        target: Option<PathBuf>,
    },
    /// A change was asked of a store opened with [`Store::open_read_only`](super::Store::open_read_only).
    #[error("{}: the store is open read-only", dir.display())]
    ReadOnly {
        /// The store folder.
        dir: PathBuf,
    },
    /// The catalog is not an SQLite database, is damaged, or is not an
    /// ffsession catalog.
    #[error("{}: the catalog is damaged or is not an ffsession catalog: {reason}", path.display())]
    CatalogCorrupt {
        /// The catalog file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The catalog was written by a newer ffsession.
    #[error("{}: the catalog has schema version {found}, newer than this ffsession understands (up to {supported})", path.display())]
    SchemaTooNew {
        /// The catalog file.
        path: PathBuf,
        /// The catalog's `user_version`.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The tab index (derived data, `index.sqlite`) cannot be read.
    #[error("{}: the tab index cannot be read: {reason}", path.display())]
    IndexUnavailable {
        /// The index file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A read-only open found a catalog that needs an upgrade first.
    #[error("{}: the catalog has schema version {found} and needs an upgrade to {current}", path.display())]
    SchemaTooOld {
        /// The catalog file.
        path: PathBuf,
        /// The catalog's `user_version`.
        found: i64,
        /// The version this build writes.
        current: i64,
    },
    /// Any other SQLite failure (disk full, I/O error, ...).
    #[error("{}: {source}", path.display())]
    Catalog {
        /// The catalog file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// No snapshot has this id.
    #[error("{}: no snapshot with id {id}", dir.display())]
    UnknownSnapshot {
        /// The store folder.
        dir: PathBuf,
        /// The id asked for.
        id: SnapshotId,
    },
    /// A chunk the catalog references has no file.
    #[error("{}: chunk {digest} of snapshot {snapshot} is missing", path.display())]
    MissingChunk {
        /// Where the chunk file should be.
        path: PathBuf,
        /// The chunk's BLAKE3 digest.
        digest: Digest,
        /// The snapshot being read.
        snapshot: SnapshotId,
    },
    /// A chunk file does not decompress, or its content does not match its digest.
    #[error("{}: chunk {digest} of snapshot {snapshot} is damaged: {reason}", path.display())]
    DamagedChunk {
        /// The chunk file.
        path: PathBuf,
        /// The chunk's BLAKE3 digest.
        digest: Digest,
        /// The snapshot being read.
        snapshot: SnapshotId,
        /// What is wrong with it.
        reason: String,
    },
    /// A snapshot just written did not read back byte-identical, even after
    /// its damaged or missing chunks were written again; it was not recorded.
    #[error("{}: the snapshot of {file} does not read back as written ({reason}); nothing of this backup was recorded", path.display())]
    ReadBack {
        /// The chunk file at fault, or the store folder.
        path: PathBuf,
        /// The source file of the snapshot.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// Session JSON was asked of a snapshot whose file was not a valid session.
    #[error("snapshot {id} is of a damaged file ({reason}); it holds that file's bytes, not session JSON")]
    CorruptSnapshot {
        /// The snapshot.
        id: SnapshotId,
        /// Why the file was not a valid session when it was stored.
        reason: String,
    },
    /// The snapshot's JSON could not be turned into a mozlz4 file.
    #[error("snapshot {id}: {source}")]
    Export {
        /// The snapshot.
        id: SnapshotId,
        /// What is wrong.
        #[source]
        source: FormatError,
    },
}

impl StoreError {
    /// What the user can do about this error, if there is something useful to say.
    pub fn hint(&self) -> Option<crate::Hint> {
        match self {
            StoreError::Io(e) => io_hint(e.source.kind()),
            StoreError::NotWritable { .. } => Some(Hint::Advice("choose a store folder on a writable disk that you own, or fix its permissions")),
            StoreError::NotAStore { .. } => {
                Some(Hint::Advice("check the path; a new store is created only in a new or empty folder"))
            }
            StoreError::Locked { .. } => Some(Hint::Advice("wait for the other ffsession to finish (its lock is released when it exits), then try again")),
            StoreError::ReadOnly { .. } => Some(Hint::Advice("open the store for writing")),
            StoreError::SymbolicLink { .. } => Some(Hint::StoreLink),
            StoreError::StoreFolderLink { .. } => Some(Hint::StoreFolderLink),
            StoreError::InvalidChunkerParams { .. } => Some(Hint::Advice("use ChunkerParams::default()")),
            StoreError::CatalogLost { .. } => Some(Hint::Advice("put back catalog.sqlite from a copy of this store (without it no snapshot can be listed or restored), or move the folder aside to start a new store")),
            StoreError::CatalogCorrupt { .. } => Some(Hint::Advice("put back a copy of catalog.sqlite, or move the store folder aside and start a new store (its chunk files stay readable)")),
            StoreError::SchemaTooNew { .. } => Some(Hint::Advice("use the newer ffsession that wrote this store")),
            StoreError::IndexUnavailable { .. } => Some(Hint::Reindex),
            StoreError::SchemaTooOld { .. } => {
                Some(Hint::Advice("open the store for writing once (take a backup) to upgrade its catalog"))
            }
            StoreError::Catalog { source, .. } => match source.sqlite_error_code() {
                Some(rusqlite::ErrorCode::DiskFull) => Some(Hint::Advice("free some disk space and try again")),
                Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::PermissionDenied) => {
                    Some(Hint::Advice("check the permissions of the store folder and of catalog.sqlite"))
                }
                _ => None,
            },
            StoreError::UnknownSnapshot { .. } => Some(Hint::Advice("list the snapshots to see which ids exist")),
            StoreError::MissingChunk { .. } | StoreError::DamagedChunk { .. } => Some(Hint::Advice("this snapshot cannot be restored from this store; other snapshots may still be intact")),
            StoreError::ReadBack { .. } => Some(Hint::ReadBack),
            StoreError::CorruptSnapshot { .. } => Some(Hint::Advice("restore another snapshot, or read this one's original bytes to salvage what you can")),
            StoreError::Export { .. } => None,
        }
    }
}

fn io_hint(kind: io::ErrorKind) -> Option<crate::Hint> {
    match kind {
        io::ErrorKind::NotFound => Some(Hint::Advice("check the path")),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => Some(Hint::Advice(
            "check the permissions of the store folder, and that its disk is writable",
        )),
        io::ErrorKind::StorageFull => Some(Hint::Advice("free some disk space and try again")),
        io::ErrorKind::ResourceBusy => Some(crate::error::HELD_OPEN_HINT),
        _ => None,
    }
}
