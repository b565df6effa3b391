//! Archived tabs: the tabs `tidy` closed, each with the snapshot that holds it.
//!
//! Schema version 3 adds `archived_tabs` (see `catalog.rs`). A tab closed by
//! a tidy stays in the undo snapshot taken just before; this table says
//! which tabs those are, when and why they were closed, so `search`,
//! `history` and `tabs --archived` can show them.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{catalog, to_i64, SnapshotId, Store, StoreError};

/// A tab closed by `tidy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ArchivedTab {
    /// URL of its current entry.
    pub url: String,
    /// Its title.
    pub title: String,
    /// When it was archived (ms since the epoch).
    pub archived_at_ms: u64,
    /// The snapshot that holds it (restore it to get the tab back).
    pub snapshot: SnapshotId,
    /// Why: `old` or `duplicate`.
    pub reason: String,
    /// The window it was in (1-based).
    pub window: u64,
    /// Its `lastAccessed` when archived.
    pub last_accessed: Option<u64>,
    /// Its position in the window (1-based) in the snapshot that holds it,
    /// so `extract --archived` finds exactly this tab (none for tabs
    /// archived before it was recorded).
    #[serde(default)]
    pub position: Option<u64>,
}

/// How a search hit or a stretch of history is marked when its tab was archived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchiveMark {
    /// When it was archived (ms since the epoch).
    pub archived_at_ms: u64,
    /// The snapshot that holds it.
    pub snapshot: SnapshotId,
    /// Why: `old` or `duplicate`.
    pub reason: String,
    /// A tab of the same URL stayed open: tidy closed a duplicate (or an old
    /// copy), not the page: a duplicate's twin always does, another is known
    /// once a snapshot taken after the tidy has it open (with the store's
    /// tab index).
    pub stayed_open: bool,
}

const COLUMNS: &str =
    "url, title, archived_at, snapshot_id, reason, window, last_accessed, position";
/// [`COLUMNS`] in a catalog without `position`.
const COLUMNS_WITHOUT_POSITION: &str =
    "url, title, archived_at, snapshot_id, reason, window, last_accessed, NULL";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ArchivedTab> {
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    Ok(ArchivedTab {
        url: r.get(0)?,
        title: r.get(1)?,
        archived_at_ms: u(r.get(2)?),
        snapshot: SnapshotId(r.get(3)?),
        reason: r.get(4)?,
        window: u(r.get(5)?),
        last_accessed: r.get::<_, Option<i64>>(6)?.map(u),
        position: r.get::<_, Option<i64>>(7)?.map(u),
    })
}

/// Insert `tabs` into `archived_tabs` inside `tx`.
pub(super) fn insert_archived(
    tx: &rusqlite::Transaction<'_>,
    path: &std::path::Path,
    tabs: &[ArchivedTab],
) -> Result<(), StoreError> {
    let err = |e| catalog::sql_error(path, e);
    let mut put = tx
        .prepare_cached(&format!(
            "INSERT INTO archived_tabs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        ))
        .map_err(err)?;
    for t in tabs {
        put.execute(params![
            t.url,
            t.title,
            to_i64(t.archived_at_ms),
            t.snapshot.0,
            t.reason,
            to_i64(t.window),
            t.last_accessed.map(to_i64),
            t.position.map(to_i64),
        ])
        .map_err(err)?;
    }
    Ok(())
}

impl Store {
    fn has_archive(&self) -> bool {
        self.schema_version >= catalog::ARCHIVE_VERSION
    }

    /// The columns of [`ArchivedTab`] this catalog has (`position` came
    /// with version 5; a read-only open of an older catalog reads none).
    fn archive_columns(&self) -> &'static str {
        if self.schema_version >= 5 {
            COLUMNS
        } else {
            COLUMNS_WITHOUT_POSITION
        }
    }

    /// The tabs archived in `snapshot` (the snapshot that holds them), in
    /// window order.
    pub fn archived_in(&self, snapshot: SnapshotId) -> Result<Vec<ArchivedTab>, StoreError> {
        if !self.has_archive() {
            return Ok(Vec::new());
        }
        self.conn
            .prepare_cached(&format!(
                "SELECT {} FROM archived_tabs WHERE snapshot_id = ?1 ORDER BY id",
                self.archive_columns()
            ))
            .and_then(|mut s| s.query_map([snapshot.0], from_row)?.collect())
            .map_err(|e| self.sql(e))
    }

    /// Record `tabs` as archived, in one transaction (and, first, in an
    /// archive manifest beside the snapshots, from which a rebuilt catalog
    /// gets them back).
    pub fn record_archived(&mut self, tabs: &[ArchivedTab]) -> Result<(), StoreError> {
        self.writable()?;
        if self.schema_version >= 5 {
            super::manifest::write_archive(&self.dir, tabs)?;
        }
        let path = self.catalog_path.clone();
        let err = |e| catalog::sql_error(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        insert_archived(&tx, &path, tabs)?;
        tx.commit().map_err(err)
    }

    /// Every archived tab, newest archive first, then in window order (a
    /// store older than schema version 3 has none).
    pub fn archived_tabs(&self) -> Result<Vec<ArchivedTab>, StoreError> {
        if !self.has_archive() {
            return Ok(Vec::new());
        }
        self.conn
            .prepare_cached(&format!(
                "SELECT {} FROM archived_tabs ORDER BY archived_at DESC, id",
                self.archive_columns()
            ))
            .and_then(|mut s| s.query_map([], from_row)?.collect())
            .map_err(|e| self.sql(e))
    }

    /// The snapshots that hold archived tabs.
    pub fn archive_snapshots(&self) -> Result<Vec<SnapshotId>, StoreError> {
        if !self.has_archive() {
            return Ok(Vec::new());
        }
        self.conn
            .prepare_cached("SELECT DISTINCT snapshot_id FROM archived_tabs ORDER BY snapshot_id")
            .and_then(|mut s| s.query_map([], |r| Ok(SnapshotId(r.get(0)?)))?.collect())
            .map_err(|e| self.sql(e))
    }

    /// The latest archive of `url`, if it was archived.
    pub fn archive_mark(&self, url: &str) -> Result<Option<ArchiveMark>, StoreError> {
        if !self.has_archive() {
            return Ok(None);
        }
        self.conn
            .prepare_cached(
                "SELECT archived_at, snapshot_id, reason FROM archived_tabs WHERE url = ?1
                 ORDER BY archived_at DESC, id DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row([url], |r| {
                    Ok(ArchiveMark {
                        archived_at_ms: u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                        snapshot: SnapshotId(r.get(1)?),
                        reason: r.get(2)?,
                        stayed_open: false,
                    })
                })
                .optional()
            })
            .map_err(|e| self.sql(e))
            .and_then(|mark| match mark {
                Some(mut m) if self.require_tab_index().is_ok() => {
                    m.stayed_open = self.stayed_open(url, &m)?;
                    Ok(Some(m))
                }
                other => Ok(other),
            })
    }

    /// Whether a tab of `url` stayed open after tidy archived one from
    /// `snapshot`: a duplicate's twin always does; otherwise a later
    /// snapshot of the same file (taken after the tidy) has it open.
    fn stayed_open(&self, url: &str, mark: &ArchiveMark) -> Result<bool, StoreError> {
        if mark.reason == "duplicate" {
            return Ok(true);
        }
        self.conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM tab_runs r
                    JOIN tab_entries e ON e.id = r.tab_entry_id
                    JOIN snapshots s ON s.id = ?2 AND s.source_name = r.source_name
                    WHERE e.url = ?1 AND r.state = 'open' AND r.last_snapshot > ?2)",
            )
            .and_then(|mut s| s.query_row(rusqlite::params![url, mark.snapshot.0], |r| r.get(0)))
            .map_err(|e| self.sql(e))
    }
}
