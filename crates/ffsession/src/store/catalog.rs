//! The SQLite catalog: schema, migrations, and the mapping of SQLite errors.
//!
//! The schema version is `PRAGMA user_version`; `PRAGMA application_id` marks
//! the file as an ffsession catalog, so another program's database is refused
//! instead of being written into. [`migrate`] brings an older catalog up to
//! [`SCHEMA_VERSION`] one step at a time, each step in its own transaction.

use std::path::Path;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::{ChunkerParams, StoreError};

/// The schema version this build reads and writes.
pub(super) const SCHEMA_VERSION: i64 = 5;

/// The last version [`migrate`] reaches by SQL alone; the step to version 5
/// writes the manifests and moves the tab index out of the catalog
/// (`Store::upgrade_to_v5`), then runs [`SCHEMA_V5`].
pub(super) const LAST_SQL_VERSION: i64 = 4;

/// The oldest schema a read-only open accepts: every table but the tab index
/// (version 2) is in version 1, so commands that need no tab index still read
/// a store no writer has upgraded yet.
const OLDEST_READABLE: i64 = 1;

/// The version that added the tab index (`tab_entries`, `tab_runs`,
/// `tab_search`).
pub(super) const TAB_INDEX_VERSION: i64 = 2;

/// `PRAGMA application_id` of ffsession catalogs: "FFSS".
const APPLICATION_ID: i32 = 0x4646_5353;

/// `MIGRATIONS[n]` turns a version-`n` catalog into version `n + 1`.
const MIGRATIONS: [&str; LAST_SQL_VERSION as usize] = [SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4];

/// The version that added `archived_tabs`.
pub(super) const ARCHIVE_VERSION: i64 = 3;

const SCHEMA_V1: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE chunks (
    id          INTEGER PRIMARY KEY,
    hash        BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
    raw_size    INTEGER NOT NULL CHECK (raw_size >= 0),
    stored_size INTEGER NOT NULL CHECK (stored_size >= 0)
);

CREATE TABLE contents (
    id   INTEGER PRIMARY KEY,
    hash BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
    size INTEGER NOT NULL CHECK (size >= 0)
);

CREATE TABLE content_chunks (
    content_id INTEGER NOT NULL REFERENCES contents(id),
    seq        INTEGER NOT NULL,
    chunk_id   INTEGER NOT NULL REFERENCES chunks(id),
    PRIMARY KEY (content_id, seq)
) WITHOUT ROWID;
CREATE INDEX content_chunks_by_chunk ON content_chunks(chunk_id);

CREATE TABLE snapshots (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    taken_at       INTEGER NOT NULL,
    profile        TEXT NOT NULL,
    source_name    TEXT NOT NULL,
    source_kind    TEXT NOT NULL,
    source_mtime   INTEGER,
    last_update    INTEGER,
    windows        INTEGER,
    tabs           INTEGER,
    closed_tabs    INTEGER,
    closed_windows INTEGER,
    content_id     INTEGER NOT NULL REFERENCES contents(id),
    stored_size    INTEGER NOT NULL CHECK (stored_size >= 0),
    format         TEXT CHECK (format IN ('mozlz4', 'json')),
    status         TEXT NOT NULL CHECK (status IN ('ok', 'corrupt')),
    reason         TEXT,
    CHECK ((status = 'ok') = (reason IS NULL))
);
CREATE INDEX snapshots_by_time ON snapshots(taken_at);
CREATE INDEX snapshots_by_content ON snapshots(content_id);
";

/// The tab index. `tab_entries` holds each distinct (URL, title) once (a tab
/// without one has the empty string). `tab_runs` records where they appeared
/// as *runs*: one row per stretch of consecutive verified snapshots of one
/// source file (`source_name`) that all hold the tab in the same window, state
/// (open, closed, or closed-window), pinned, hidden and container. A run
/// covers the existing verified snapshots of its source with ids from
/// `first_snapshot` to `last_snapshot`, so the index grows with distinct tabs
/// and real changes, not with snapshots; `position` and `last_accessed`
/// (1-based, as `ffsession tabs` shows them) are the latest values seen.
/// `tab_search` is an FTS5 index over `tab_entries`, kept in step by triggers.
/// `tab_runs_by_entry` covers what search and history read of a run;
/// `snapshots_by_source` finds a source's snapshots in a run's id range.
/// Snapshots taken before this version are indexed by `ffsession reindex`.
const SCHEMA_V2: &str = "
CREATE TABLE tab_entries (
    id    INTEGER PRIMARY KEY,
    url   TEXT NOT NULL,
    title TEXT NOT NULL,
    UNIQUE (url, title)
);

CREATE TABLE tab_runs (
    id             INTEGER PRIMARY KEY,
    tab_entry_id   INTEGER NOT NULL REFERENCES tab_entries(id),
    source_name    TEXT NOT NULL,
    first_snapshot INTEGER NOT NULL,
    last_snapshot  INTEGER NOT NULL CHECK (last_snapshot >= first_snapshot),
    window         INTEGER NOT NULL,
    position       INTEGER NOT NULL,
    pinned         INTEGER NOT NULL CHECK (pinned IN (0, 1)),
    hidden         INTEGER NOT NULL CHECK (hidden IN (0, 1)),
    container      INTEGER NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('open', 'closed', 'closed-window')),
    last_accessed  INTEGER
);
CREATE INDEX tab_runs_by_entry
    ON tab_runs(tab_entry_id, source_name, first_snapshot, last_snapshot, window, state);
CREATE INDEX tab_runs_by_end ON tab_runs(source_name, last_snapshot);
CREATE INDEX snapshots_by_source ON snapshots(source_name, id, status, taken_at);

CREATE VIRTUAL TABLE tab_search USING fts5(
    title, url, content = 'tab_entries', content_rowid = 'id'
);
CREATE TRIGGER tab_entries_insert AFTER INSERT ON tab_entries BEGIN
    INSERT INTO tab_search (rowid, title, url) VALUES (new.id, new.title, new.url);
END;
CREATE TRIGGER tab_entries_delete AFTER DELETE ON tab_entries BEGIN
    INSERT INTO tab_search (tab_search, rowid, title, url)
    VALUES ('delete', old.id, old.title, old.url);
END;
";

/// Tabs `ffsession tidy` closed: each with when, why (`old`, `duplicate`),
/// its window and last access, and the snapshot that holds it (the undo
/// snapshot taken before the tidy). Retention keeps those snapshots.
/// Version 4: each chunk's `frame_hash`, the BLAKE3 digest of its file's
/// bytes (the zstd frame) as written and read back. A later read-back that
/// finds the same bytes need not decompress them; chunks catalogued before
/// have none and are decompressed.
const SCHEMA_V4: &str = "
ALTER TABLE chunks ADD COLUMN frame_hash BLOB CHECK (frame_hash IS NULL OR length(frame_hash) = 32);
";

/// Version 5: the tab index moves to `index.sqlite` (see `index.rs`; it
/// was copied there first), every snapshot and content has a manifest file
/// (see `manifest.rs`; written first), and `damaged_chunks` records the
/// chunks found damaged (by a prune, a restore, `watch` or `check`) until
/// a backup heals them, so `list` can mark the snapshots that use them.
/// Each archived tab gets its `position` in its window (1-based) in the
/// snapshot that holds it, so `extract --archived` finds exactly the tabs
/// `tidy` closed, not every tab sharing a URL with one; tabs archived before
/// have none and are found by window, URL, title and last access.
pub(super) const SCHEMA_V5: &str = "
DROP TRIGGER IF EXISTS tab_entries_insert;
DROP TRIGGER IF EXISTS tab_entries_delete;
DROP TABLE IF EXISTS tab_search;
DROP TABLE IF EXISTS tab_runs;
DROP TABLE IF EXISTS tab_entries;
CREATE TABLE damaged_chunks (
    hash     BLOB PRIMARY KEY NOT NULL CHECK (length(hash) = 32),
    found_at INTEGER NOT NULL,
    reason   TEXT NOT NULL
) WITHOUT ROWID;
ALTER TABLE archived_tabs ADD COLUMN position INTEGER;
";

const SCHEMA_V3: &str = "
CREATE TABLE archived_tabs (
    id            INTEGER PRIMARY KEY,
    url           TEXT NOT NULL,
    title         TEXT NOT NULL,
    archived_at   INTEGER NOT NULL,
    snapshot_id   INTEGER NOT NULL,
    reason        TEXT NOT NULL,
    window        INTEGER NOT NULL,
    last_accessed INTEGER
);
CREATE INDEX archived_tabs_by_url ON archived_tabs(url);
CREATE INDEX archived_tabs_by_snapshot ON archived_tabs(snapshot_id);
";

/// Turn an SQLite error into a store error naming the catalog: "not a
/// database" and "malformed" become [`StoreError::CatalogCorrupt`].
pub(super) fn sql_error(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::CatalogCorrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
        _ => StoreError::Catalog {
            path: path.to_path_buf(),
            source: e,
        },
    }
}

fn corrupt(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::CatalogCorrupt {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Open the catalog for reading and writing, creating or upgrading its schema
/// up to [`LAST_SQL_VERSION`]; returns the connection, the store's chunker
/// parameters (`init` for a new catalog, the recorded ones otherwise) and
/// the schema version.
pub(super) fn open_rw(
    path: &Path,
    init: ChunkerParams,
) -> Result<(Connection, ChunkerParams, i64), StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let mut conn = Connection::open_with_flags(crate::fs_util::long_path_for_ffi(path), flags)
        .map_err(|e| sql_error(path, e))?;
    let err = |e| sql_error(path, e);
    // WAL with synchronous=FULL: a commit returns only after the WAL is fsynced,
    // so a committed snapshot row survives a power cut.
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(corrupt(
            path,
            format!("cannot use WAL journal mode (got {mode})"),
        ));
    }
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(err)?;
    migrate(&mut conn, path, init)?;
    let params = read_params(&conn, path)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(err)?;
    Ok((conn, params, version))
}

/// How a read-only open reads the catalog.
#[derive(Debug)]
pub(super) enum ReadMode {
    /// As SQLite reads a WAL database: the catalog, its WAL and shm.
    Normal,
    /// As an immutable file: the folder cannot take the shm file (a
    /// read-only file system, a full disk) and the WAL is empty or absent,
    /// so the catalog file alone holds every commit.
    Immutable,
    /// From a copy of the catalog and its WAL in a temporary folder: the
    /// folder cannot take the shm file and the WAL holds commits the
    /// catalog file does not have yet (a writer was killed, say).
    Copy {
        /// The folder of the copy, deleted when dropped.
        _folder: tempfile::TempDir,
    },
}

/// Open the catalog read-only; it must be at least at version 1 (the tab
/// index needs version 2: see `Store::require_tab_index`). Returns the
/// connection, the store's chunker parameters, the schema version and how
/// it is read.
///
/// Reading needs nothing written: where SQLite cannot create the shm file a
/// WAL reader needs (a read-only file system, a full disk), the catalog is
/// read as immutable when its WAL is empty, or from a private copy of the
/// catalog and its WAL when it is not (an immutable read would miss the
/// commits still in the WAL).
pub(super) fn open_ro(
    path: &Path,
) -> Result<(Connection, ChunkerParams, i64, ReadMode), StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let open = |target: &str, flags: OpenFlags| -> Result<(Connection, i64), StoreError> {
        let conn = Connection::open_with_flags(target, flags).map_err(|e| sql_error(path, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| sql_error(path, e))?;
        let version = check_identity(&conn, path)?;
        Ok((conn, version))
    };
    let (conn, version, mode) = match open(&super::index::uri(path, ""), flags) {
        Ok((conn, version)) => (conn, version, ReadMode::Normal),
        Err(StoreError::Catalog { source, .. })
            if matches!(
                source.sqlite_error_code(),
                Some(
                    ErrorCode::CannotOpen
                        | ErrorCode::ReadOnly
                        | ErrorCode::SystemIoFailure
                        | ErrorCode::DiskFull
                )
            ) =>
        {
            if wal_len(path) == 0 {
                let (conn, version) = open(&super::index::uri(path, "immutable=1"), flags)?;
                (conn, version, ReadMode::Immutable)
            } else {
                let (tmp, copy) = private_copy(path)?;
                // Read-write, so SQLite may recover the copied WAL; the
                // copy is private and deleted with the folder.
                let rw = OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | OpenFlags::SQLITE_OPEN_URI;
                let (conn, version) = open(&super::index::uri(&copy, ""), rw)?;
                (conn, version, ReadMode::Copy { _folder: tmp })
            }
        }
        Err(e) => return Err(e),
    };
    if version == 0 {
        return Err(corrupt(path, "the catalog was never initialized"));
    }
    if version < OLDEST_READABLE {
        return Err(StoreError::SchemaTooOld {
            path: path.to_path_buf(),
            found: version,
            current: SCHEMA_VERSION,
        });
    }
    let params = read_params(&conn, path)?;
    Ok((conn, params, version, mode))
}

/// A copy of the database at `path` and its WAL in a new temporary folder
/// (deleted when the returned folder is dropped): for reading a database
/// whose own folder cannot take the shm file while its WAL holds commits.
pub(super) fn private_copy(
    path: &Path,
) -> Result<(tempfile::TempDir, std::path::PathBuf), StoreError> {
    let tmp = tempfile::Builder::new()
        .prefix("ffsession-read-")
        .tempdir()
        .map_err(|e| crate::error::PathError {
            path: path.to_path_buf(),
            source: e,
        })?;
    let name = path.file_name().unwrap_or(std::ffi::OsStr::new("db"));
    let copy = tmp.path().join(name);
    for suffix in ["", "-wal"] {
        let mut from = path.as_os_str().to_owned();
        from.push(suffix);
        let mut to = copy.clone().into_os_string();
        to.push(suffix);
        std::fs::copy(&from, &to).map_err(|e| crate::error::PathError {
            path: std::path::PathBuf::from(&from),
            source: e,
        })?;
    }
    Ok((tmp, copy))
}

/// The length of the WAL of the database at `path` (0 if it has none).
pub(super) fn wal_len(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(std::path::PathBuf::from(wal)).map_or(0, |m| m.len())
}

/// Check that the file is an ffsession catalog this build can read; returns
/// its schema version (0 for a new, empty database).
fn check_identity(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    let err = |e| sql_error(path, e);
    let app_id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(err)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(err)?;
    let objects: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .map_err(err)?;
    let ours = if version == 0 && app_id == 0 {
        objects == 0
    } else {
        app_id == APPLICATION_ID
    };
    if !ours {
        return Err(corrupt(
            path,
            format!("an SQLite database of another program (application id {app_id:#x}, version {version})"),
        ));
    }
    if version > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < 0 {
        return Err(corrupt(path, format!("schema version {version}")));
    }
    Ok(version)
}

/// Bring the catalog to [`LAST_SQL_VERSION`] (or leave a newer one as it
/// is), one transaction per step.
pub(super) fn migrate(
    conn: &mut Connection,
    path: &Path,
    init: ChunkerParams,
) -> Result<(), StoreError> {
    let err = |e| sql_error(path, e);
    let mut version = check_identity(conn, path)?;
    while version < LAST_SQL_VERSION {
        let tx = conn.transaction().map_err(err)?;
        tx.execute_batch(MIGRATIONS[version as usize])
            .map_err(err)?;
        if version == 0 {
            tx.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(err)?;
            let mut put = tx
                .prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")
                .map_err(err)?;
            for (key, value) in [
                ("chunker", "fastcdc-v2020".to_string()),
                ("chunk_min", init.min.to_string()),
                ("chunk_avg", init.avg.to_string()),
                ("chunk_max", init.max.to_string()),
                ("chunk_hash", "blake3".to_string()),
                ("chunk_compression", "zstd".to_string()),
            ] {
                put.execute((key, value)).map_err(err)?;
            }
        }
        version += 1;
        tx.pragma_update(None, "user_version", version)
            .map_err(err)?;
        tx.commit().map_err(err)?;
    }
    Ok(())
}

fn read_params(conn: &Connection, path: &Path) -> Result<ChunkerParams, StoreError> {
    let get = |key: &str| -> Result<usize, StoreError> {
        let value: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| sql_error(path, e))?;
        value
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| corrupt(path, format!("no valid {key} in the meta table")))
    };
    let params = ChunkerParams {
        min: get("chunk_min")?,
        avg: get("chunk_avg")?,
        max: get("chunk_max")?,
    };
    if !params.is_valid() {
        return Err(corrupt(path, format!("invalid chunk sizes {params:?}")));
    }
    Ok(params)
}
