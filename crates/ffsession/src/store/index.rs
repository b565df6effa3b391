//! Where the tab index lives: `index.sqlite`, a database of its own beside
//! the catalog, attached to the catalog's connection as schema `idx`.
//!
//! The index is derived data: everything in it comes from the snapshots, so
//! damage to it must never stop a backup or a restore. Keeping it in its own
//! file means a damaged index never touches a catalog page, and rebuilding it
//! is deleting the file and reading the snapshots again. Its `meta` table
//! records `covers_through`, the highest snapshot id whose tabs it holds:
//! after every catalog transaction that adds snapshots, a writer indexes the
//! verified snapshots above that mark in id order ([`Store::catch_up_index`]),
//! in a transaction of the index alone. If that fails (the index is damaged,
//! say) the index is deleted and built again from the snapshots; if even
//! that fails, the backup still stands and the failure is a note
//! ([`Store::take_index_note`]). Schema 2-4 catalogs held the index in the
//! catalog itself; a read-only open of one reads it there.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};

use super::tabs::{self, TabRow};
use super::{catalog, SnapshotId, Store, StoreError};

/// File name of the tab index inside the store folder.
pub const INDEX_FILE: &str = "index.sqlite";

/// `PRAGMA application_id` of ffsession tab indexes: "FFSI".
const APPLICATION_ID: i32 = 0x4646_5349;

/// The index schema's version.
const VERSION: i64 = 1;

/// The index: the tables `catalog.rs` describes under schema version 2, and
/// `meta` with `covers_through`.
const SCHEMA: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('covers_through', '0');

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

/// Where the open store finds its tab index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum IndexState {
    /// `index.sqlite`, attached as `idx`.
    Attached,
    /// In the catalog itself (a schema 2-4 catalog opened read-only).
    InCatalog,
    /// None: why.
    Unavailable(String),
}

/// The index files of the store in `dir` (the database, its WAL and shm).
pub(super) fn files(dir: &Path) -> [PathBuf; 3] {
    let base = dir.join(INDEX_FILE);
    let with = |suffix: &str| {
        let mut name = base.clone().into_os_string();
        name.push(suffix);
        PathBuf::from(name)
    };
    [base.clone(), with("-wal"), with("-shm")]
}

/// Delete the index files (derived data, rebuilt from the snapshots).
pub(super) fn delete(dir: &Path) -> Result<(), crate::error::PathError> {
    for path in files(dir) {
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(crate::error::PathError { path, source: e }),
        }
    }
    crate::fs_util::sync_dir(dir)
}

/// `file:<path>` with the characters URIs reserve escaped, and `query`.
pub(super) fn uri(path: &Path, query: &str) -> String {
    let mut uri = String::from("file:");
    let path = crate::fs_util::long_path_for_ffi(path);
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3F"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    if !query.is_empty() {
        uri.push('?');
        uri.push_str(query);
    }
    uri
}

/// Create the index in `path` if the file is new, and check that it is an
/// ffsession index of this version; a file that is not (or is damaged) is an
/// error.
fn create_or_check(path: &Path) -> rusqlite::Result<Result<(), String>> {
    // Created empty first, 0600 like every store file (SQLite gives its WAL
    // and shm the same mode); an existing one is tightened.
    let made = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            crate::fs_util::write_atomic(path, |_| Ok(())).map_err(|e| e.to_string())
        }
        Ok(m) if !m.is_file() => Err("index.sqlite is not a file (not followed)".to_owned()),
        _ => super::layout::tighten_file(path).map_err(|e| e.to_string()),
    };
    if let Err(why) = made {
        return Ok(Err(why));
    }
    let mut conn = Connection::open(crate::fs_util::long_path_for_ffi(path))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Ok(Err(format!("cannot use WAL journal mode (got {mode})")));
    }
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    if app_id == 0 && version == 0 && objects == 0 {
        let tx = conn.transaction()?;
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", VERSION)?;
        tx.commit()?;
        return Ok(Ok(()));
    }
    if app_id != APPLICATION_ID || version != VERSION {
        return Ok(Err(format!(
            "not an ffsession tab index of version {VERSION} (application id {app_id:#x}, version {version})"
        )));
    }
    // Reading every page finds damage before a backup relies on it.
    let verdict: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if verdict != "ok" {
        return Ok(Err(format!("quick_check: {verdict}")));
    }
    Ok(Ok(()))
}

/// Attach the index of the store in `dir` to a writer's connection,
/// creating it if missing and making a new one if it is damaged. Never
/// fails: an index that cannot be had is [`IndexState::Unavailable`].
pub(super) fn attach_rw(conn: &Connection, dir: &Path) -> (IndexState, Option<String>) {
    let path = dir.join(INDEX_FILE);
    let mut note = None;
    let ready = match create_or_check(&path) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(why),
        Err(e) => Err(e.to_string()),
    };
    if let Err(why) = ready {
        // Derived data: delete it and start again from the snapshots.
        if let Err(e) = delete(dir) {
            return (
                IndexState::Unavailable(format!(
                    "the tab index is damaged ({why}) and cannot be deleted: {e}"
                )),
                None,
            );
        }
        match create_or_check(&path) {
            Ok(Ok(())) => {
                note = Some(format!(
                    "the tab index was damaged ({why}); it is built again from the snapshots"
                ))
            }
            Ok(Err(e)) => return (IndexState::Unavailable(e), None),
            Err(e) => return (IndexState::Unavailable(e.to_string()), None),
        }
    }
    match conn.execute("ATTACH DATABASE ?1 AS idx", [uri(&path, "")]) {
        Ok(_) => {}
        Err(e) => return (IndexState::Unavailable(e.to_string()), note),
    }
    // Derived data: a crash may lose the last transactions (the next writer
    // indexes them again), never consistency.
    if let Err(e) = conn.execute_batch("PRAGMA idx.synchronous = NORMAL;") {
        return (IndexState::Unavailable(e.to_string()), note);
    }
    (IndexState::Attached, note)
}

/// Attach the index read-only to a reader's connection. `degraded`: the
/// catalog could not be read in place (a read-only file system, a full
/// disk), so neither can the index: read it as immutable when its WAL is
/// empty, else from a private copy (returned, to keep while attached).
pub(super) fn attach_ro(
    conn: &Connection,
    dir: &Path,
    degraded: bool,
) -> (IndexState, Option<tempfile::TempDir>) {
    let path = dir.join(INDEX_FILE);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => {
            return (
                IndexState::Unavailable("index.sqlite is not a file".into()),
                None,
            )
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return (
                IndexState::Unavailable("the store has no tab index yet".into()),
                None,
            )
        }
        Err(e) => return (IndexState::Unavailable(e.to_string()), None),
    }
    let (target, copy) = if !degraded {
        (uri(&path, "mode=ro"), None)
    } else if super::catalog::wal_len(&path) == 0 {
        (uri(&path, "mode=ro&immutable=1"), None)
    } else {
        match super::catalog::private_copy(&path) {
            Ok((tmp, copy)) => (uri(&copy, "mode=ro"), Some(tmp)),
            Err(e) => return (IndexState::Unavailable(e.to_string()), None),
        }
    };
    if let Err(e) = conn.execute("ATTACH DATABASE ?1 AS idx", [target]) {
        return (IndexState::Unavailable(e.to_string()), None);
    }
    let id: rusqlite::Result<i32> = conn.query_row("PRAGMA idx.application_id", [], |r| r.get(0));
    let state = match id {
        Ok(APPLICATION_ID) => return (IndexState::Attached, copy),
        Ok(other) => IndexState::Unavailable(format!(
            "index.sqlite is not an ffsession tab index ({other:#x})"
        )),
        Err(e) => IndexState::Unavailable(e.to_string()),
    };
    let _ = conn.execute("DETACH DATABASE idx", []);
    (state, None)
}

/// The highest snapshot id the index holds the tabs of.
fn covers_through(conn: &Connection) -> rusqlite::Result<i64> {
    let v: Option<String> = conn
        .query_row(
            "SELECT value FROM idx.meta WHERE key = 'covers_through'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// What indexing did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct CatchUp {
    /// Snapshots indexed.
    pub indexed: u64,
    /// Snapshots that could not be read (damaged), left out of the index.
    pub skipped: Vec<(SnapshotId, String)>,
}

/// What a writer found about the tab index, for the front end to tell:
/// the index is derived data, so backups are not affected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexNote {
    /// What happened.
    pub what: String,
    /// What to do, when something is left to do.
    pub hint: Option<crate::Hint>,
}

impl From<String> for IndexNote {
    fn from(what: String) -> Self {
        IndexNote { what, hint: None }
    }
}

impl Store {
    /// The last note about the tab index (damaged and rebuilt, or not
    /// available), once.
    pub fn take_index_note(&mut self) -> Option<IndexNote> {
        self.index_note.take()
    }

    /// Index, in id order, every verified snapshot the index does not cover
    /// yet; `fresh` holds the tabs of snapshots just parsed (the others are
    /// read from the store). Never fails: a failure deletes the index and
    /// builds it again once, and what still fails becomes the index note.
    pub(super) fn catch_up_index(&mut self, fresh: HashMap<SnapshotId, Vec<TabRow>>) {
        if self.index != IndexState::Attached {
            return;
        }
        let first = self.try_catch_up(fresh, &mut |_, _| {});
        if let Err(e) = first {
            let why = e.to_string();
            match self.rebuild_index(&mut |_, _| {}) {
                Ok(_) => {
                    self.index_note = Some(IndexNote::from(format!(
                        "the tab index could not be updated ({why}); it was built again from the snapshots"
                    )))
                }
                Err(e) => {
                    self.index_note = Some(IndexNote {
                        what: format!(
                            "the tab index could not be updated ({why}) nor built again ({e}); backups are not affected"
                        ),
                        hint: Some(crate::Hint::Reindex),
                    })
                }
            }
        }
    }

    fn index_sql(&self, e: rusqlite::Error) -> StoreError {
        catalog::sql_error(&self.dir.join(INDEX_FILE), e)
    }

    /// [`Store::catch_up_index`] without the fallback; `progress(done,
    /// total)` after each snapshot.
    fn try_catch_up(
        &mut self,
        mut fresh: HashMap<SnapshotId, Vec<TabRow>>,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<CatchUp, StoreError> {
        let through = covers_through(&self.conn).map_err(|e| self.index_sql(e))?;
        let pending: Vec<(i64, i64, String, String)> = self
            .conn
            .prepare_cached(
                "SELECT id, content_id, source_name, source_kind FROM main.snapshots
                 WHERE status = 'ok' AND id > ?1 ORDER BY id",
            )
            .and_then(|mut s| {
                s.query_map([through], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect()
            })
            .map_err(|e| self.sql(e))?;
        let mut report = CatchUp::default();
        let Some(last) = pending.last().map(|p| p.0) else {
            return Ok(report);
        };
        let total = pending.len() as u64;
        let path = self.dir.join(INDEX_FILE);
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(|e| catalog::sql_error(&path, e))?;
        for (n, (id, content_id, source_name, kind)) in pending.into_iter().enumerate() {
            let zen = super::snapshot::kind_from_name(&kind).is_zen();
            let id = SnapshotId(id);
            let rows = match fresh.remove(&id) {
                Some(rows) => Some(rows),
                None if tabs::extend_all_runs(&tx, &path, id, &source_name, content_id)? => None,
                None => match self.read_json(id) {
                    Ok(json) => Some(tabs::tab_rows(&json, zen).unwrap_or_default()),
                    Err(e) => {
                        report.skipped.push((id, e.to_string()));
                        None
                    }
                },
            };
            if let Some(rows) = rows {
                tabs::insert_tab_rows(&tx, &path, id, &source_name, &rows)?;
            }
            report.indexed += 1;
            progress(n as u64 + 1, total);
        }
        tx.execute(
            "UPDATE idx.meta SET value = ?1 WHERE key = 'covers_through'",
            [last.to_string()],
        )
        .map_err(|e| catalog::sql_error(&path, e))?;
        tx.commit().map_err(|e| catalog::sql_error(&path, e))?;
        Ok(report)
    }

    /// Delete the index and build it again from every verified snapshot.
    pub(super) fn rebuild_index(
        &mut self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<CatchUp, StoreError> {
        self.writable()?;
        let _ = self.conn.execute("DETACH DATABASE idx", []);
        self.index = IndexState::Unavailable("being rebuilt".into());
        delete(&self.dir)?;
        let (state, _) = attach_rw(&self.conn, &self.dir);
        if let IndexState::Unavailable(why) = &state {
            return Err(StoreError::CatalogCorrupt {
                path: self.dir.join(INDEX_FILE),
                reason: why.clone(),
            });
        }
        self.index = state;
        self.try_catch_up(HashMap::new(), progress)
    }

    /// Delete the runs and entries no snapshot holds any more, in a
    /// transaction of the index alone; a failure becomes the index note.
    pub(super) fn collect_index_garbage(&mut self) {
        if self.index != IndexState::Attached {
            return;
        }
        let path = self.dir.join(INDEX_FILE);
        let result = self
            .conn
            .unchecked_transaction()
            .map_err(|e| catalog::sql_error(&path, e))
            .and_then(|tx| {
                tabs::collect_garbage(&tx, &path)?;
                tx.commit().map_err(|e| catalog::sql_error(&path, e))
            });
        if let Err(e) = result {
            self.index_note = Some(IndexNote {
                what: format!("the tab index could not be cleaned ({e}); backups are not affected"),
                hint: Some(crate::Hint::Reindex),
            });
        }
    }

    /// The tab index can be read, or why not.
    pub(super) fn index_available(&self) -> Result<(), String> {
        match &self.index {
            IndexState::Attached | IndexState::InCatalog => Ok(()),
            IndexState::Unavailable(why) => Err(why.clone()),
        }
    }
}
