//! The tab index: every tab of every verified snapshot, searchable.
//!
//! Schema version 2 adds three objects to the catalog (see `catalog.rs`):
//! `tab_entries` holds each distinct (URL, title) once, `snapshot_tabs` links
//! a snapshot to the tabs it holds (window, position, state, pinned, hidden,
//! container, last access), and `tab_search` is an FTS5 index over the titles
//! and URLs of `tab_entries` (external content, kept in step by triggers).
//!
//! A snapshot's tabs are indexed in the transaction that adds its row, so the
//! index never lags the catalog. Snapshots taken before the upgrade to
//! version 2 are indexed by [`Store::reindex_tabs`].

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{catalog, to_i64, SnapshotId, Store, StoreError};
use crate::session::Session;
use crate::session::{TabFilter, TabState};
use crate::SessionData;

/// One tab of a snapshot, as stored in `snapshot_tabs`.
#[derive(Debug, Clone)]
pub(super) struct TabRow {
    url: String,
    title: String,
    window: u64,
    position: u64,
    pinned: bool,
    hidden: bool,
    container: u64,
    last_accessed: Option<u64>,
    state: TabState,
}

/// The tabs of session JSON (open, closed, and in closed windows), or `None`
/// when it does not parse as a session.
pub(super) fn tab_rows(json: &[u8]) -> Option<Vec<TabRow>> {
    let all = TabFilter {
        window: None,
        include_closed: true,
    };
    let collect = |session: &Session<'_>| -> Vec<TabRow> {
        session
            .tab_records(all)
            .map(|r| TabRow {
                url: r.url.unwrap_or_default().to_owned(),
                title: r.title.unwrap_or_default().to_owned(),
                window: r.window as u64,
                position: r.position as u64,
                pinned: r.pinned,
                hidden: r.hidden,
                container: r.container,
                last_accessed: r.last_accessed,
                state: r.state,
            })
            .collect()
    };
    if let Ok(session) = Session::from_json(json) {
        return Some(collect(&session));
    }
    // A JSON file's content may carry a byte-order mark or old Firefox's
    // `( ... )`; SessionData finds the JSON value inside.
    let data = SessionData::from_bytes("session", json.to_vec()).ok()?;
    let session = data.parse().ok()?;
    Some(collect(&session))
}

/// Add the `snapshot_tabs` rows (and new `tab_entries`) of snapshot `id`.
pub(super) fn insert_tab_rows(
    tx: &rusqlite::Connection,
    path: &Path,
    id: SnapshotId,
    rows: &[TabRow],
) -> Result<(), StoreError> {
    let err = |e| catalog::sql_error(path, e);
    let mut put_entry = tx
        .prepare_cached(
            "INSERT INTO tab_entries (url, title) VALUES (?1, ?2)
             ON CONFLICT (url, title) DO NOTHING",
        )
        .map_err(err)?;
    let mut find_entry = tx
        .prepare_cached("SELECT id FROM tab_entries WHERE url = ?1 AND title = ?2")
        .map_err(err)?;
    let mut link = tx
        .prepare_cached(
            "INSERT INTO snapshot_tabs (snapshot_id, tab_entry_id, window, position, pinned,
                 hidden, container, last_accessed, state)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .map_err(err)?;
    for r in rows {
        put_entry.execute((&r.url, &r.title)).map_err(err)?;
        let entry: i64 = find_entry
            .query_row((&r.url, &r.title), |row| row.get(0))
            .map_err(err)?;
        link.execute(params![
            id.0,
            entry,
            to_i64(r.window),
            to_i64(r.position),
            r.pinned,
            r.hidden,
            to_i64(r.container),
            r.last_accessed.map(to_i64),
            r.state.as_str(),
        ])
        .map_err(err)?;
    }
    Ok(())
}

/// Give snapshot `id` the tab rows of another snapshot of content
/// `content_id`; false if no such snapshot has any.
pub(super) fn copy_tab_rows(
    tx: &rusqlite::Connection,
    path: &Path,
    id: SnapshotId,
    content_id: i64,
) -> Result<bool, StoreError> {
    let err = |e| catalog::sql_error(path, e);
    let Some(from) = indexed_snapshot_of(tx, content_id).map_err(err)? else {
        return Ok(false);
    };
    tx.prepare_cached(
        "INSERT INTO snapshot_tabs (snapshot_id, tab_entry_id, window, position, pinned,
             hidden, container, last_accessed, state)
         SELECT ?1, tab_entry_id, window, position, pinned, hidden, container,
             last_accessed, state
         FROM snapshot_tabs WHERE snapshot_id = ?2",
    )
    .and_then(|mut s| s.execute([id.0, from]))
    .map_err(err)?;
    Ok(true)
}

/// A snapshot of content `content_id` that has tab rows.
pub(super) fn indexed_snapshot_of(
    conn: &rusqlite::Connection,
    content_id: i64,
) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT s.id FROM snapshots s WHERE s.content_id = ?1
           AND EXISTS (SELECT 1 FROM snapshot_tabs st WHERE st.snapshot_id = s.id)
         LIMIT 1",
    )?
    .query_row([content_id], |r| r.get(0))
    .optional()
}

/// A span of time, in ms since the Unix epoch: `since` inclusive, `until`
/// exclusive; `None` is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeRange {
    /// Earliest time included.
    pub since_ms: Option<u64>,
    /// First time no longer included.
    pub until_ms: Option<u64>,
}

impl TimeRange {
    fn bounds(self) -> (i64, i64) {
        (
            self.since_ms.map_or(i64::MIN, to_i64),
            self.until_ms.map_or(i64::MAX, to_i64),
        )
    }
}

/// A tab (a distinct URL and title) found by [`Store::search_tabs`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The tab's title (empty when it has none).
    pub title: String,
    /// The tab's URL (empty when it has none).
    pub url: String,
    /// When the first snapshot in range that holds it was taken (ms since the epoch).
    pub first_seen_ms: u64,
    /// When the last snapshot in range that holds it was taken.
    pub last_seen_ms: u64,
    /// How many snapshots in range hold it (open or recently closed).
    pub snapshots: u64,
    /// The newest snapshot in range that holds it.
    pub newest_snapshot: SnapshotId,
    /// FTS5's bm25 rank: lower is a better match.
    pub rank: f64,
}

/// What went wrong in a search.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The query is not valid FTS5 query syntax.
    #[error("invalid search query {query:?}: {reason}")]
    BadQuery {
        /// The query as given.
        query: String,
        /// What SQLite said.
        reason: String,
    },
}

impl SearchError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<&str> {
        match self {
            SearchError::Store(e) => e.hint(),
            SearchError::BadQuery { .. } => Some(
                "put a phrase or text with punctuation in double quotes, e.g. '\"c++ tips\"', \
                 and close every quote",
            ),
        }
    }
}

/// One stretch of time a URL was open: consecutive snapshots that all hold it open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenStretch {
    /// When the first snapshot of the stretch was taken (ms since the epoch).
    pub from_ms: u64,
    /// When the last snapshot of the stretch was taken.
    pub to_ms: u64,
    /// The first snapshot of the stretch.
    pub first_snapshot: SnapshotId,
    /// The last snapshot of the stretch.
    pub last_snapshot: SnapshotId,
    /// Number of snapshots in the stretch.
    pub snapshots: u64,
    /// The 1-based windows it was open in during the stretch, ascending.
    pub windows: Vec<u64>,
}

/// What [`Store::reindex_tabs`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReindexReport {
    /// Snapshots indexed.
    pub snapshots: u64,
    /// Tab rows written (one per tab per snapshot).
    pub tabs: u64,
    /// Distinct (URL, title) pairs in the index.
    pub entries: u64,
}

impl Store {
    fn require_tab_index(&self) -> Result<(), StoreError> {
        if self.schema_version < catalog::TAB_INDEX_VERSION {
            return Err(StoreError::SchemaTooOld {
                path: self.catalog_path.clone(),
                found: self.schema_version,
                current: catalog::SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    /// The tabs whose title or URL match the FTS5 `query`, best match first,
    /// counting only snapshots taken within `range`; at most `limit`.
    pub fn search_tabs(
        &self,
        query: &str,
        range: TimeRange,
        limit: usize,
    ) -> Result<Vec<SearchHit>, SearchError> {
        self.require_tab_index()?;
        let (since, until) = range.bounds();
        let mut stmt = self
            .conn
            .prepare_cached(
                "WITH m AS MATERIALIZED (SELECT rowid AS id, bm25(tab_search) AS rank
                            FROM tab_search WHERE tab_search MATCH ?1)
                 SELECT e.id, e.title, e.url, min(s.taken_at), max(s.taken_at),
                        count(DISTINCT s.id), m.rank
                 FROM m JOIN tab_entries e ON e.id = m.id
                 JOIN snapshot_tabs st ON st.tab_entry_id = e.id
                 JOIN snapshots s ON s.id = st.snapshot_id
                 WHERE s.taken_at >= ?2 AND s.taken_at < ?3
                 GROUP BY e.id
                 ORDER BY m.rank, e.id
                 LIMIT ?4",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![query, since, until, to_i64(limit as u64)], |r| {
                let u = |v: i64| u64::try_from(v).unwrap_or(0);
                let hit = SearchHit {
                    title: r.get(1)?,
                    url: r.get(2)?,
                    first_seen_ms: u(r.get(3)?),
                    last_seen_ms: u(r.get(4)?),
                    snapshots: u(r.get(5)?),
                    newest_snapshot: SnapshotId(0),
                    rank: r.get(6)?,
                };
                Ok((r.get::<_, i64>(0)?, hit))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>());
        let hits = match rows {
            Ok(hits) => hits,
            Err(e) if is_query_error(&e) => {
                return Err(SearchError::BadQuery {
                    query: query.to_owned(),
                    reason: e.to_string(),
                })
            }
            Err(e) => return Err(self.sql(e).into()),
        };
        // The newest snapshot by time taken (ids grow with time, but a clock
        // may have been set back): look it up per hit.
        let mut newest = self
            .conn
            .prepare_cached(
                "SELECT s.id FROM snapshot_tabs st JOIN snapshots s ON s.id = st.snapshot_id
                 WHERE st.tab_entry_id = ?1 AND s.taken_at >= ?2 AND s.taken_at < ?3
                 ORDER BY s.taken_at DESC, s.id DESC LIMIT 1",
            )
            .map_err(|e| self.sql(e))?;
        hits.into_iter()
            .map(|(entry, mut hit)| {
                hit.newest_snapshot = SnapshotId(
                    newest
                        .query_row(params![entry, since, until], |r| r.get(0))
                        .map_err(|e| self.sql(e))?,
                );
                Ok(hit)
            })
            .collect()
    }

    /// Every stretch of time `url` was open: runs of consecutive verified
    /// snapshots (by time taken) that hold it as an open tab, oldest first.
    pub fn tab_history(&self, url: &str) -> Result<Vec<OpenStretch>, StoreError> {
        self.require_tab_index()?;
        let snapshots: Vec<(i64, i64)> = self
            .conn
            .prepare_cached(
                "SELECT id, taken_at FROM snapshots WHERE status = 'ok' ORDER BY taken_at, id",
            )
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .map_err(|e| self.sql(e))?;
        let mut open: HashMap<i64, Vec<u64>> = HashMap::new();
        {
            let mut stmt = self
                .conn
                .prepare_cached(
                    "SELECT DISTINCT st.snapshot_id, st.window FROM snapshot_tabs st
                     JOIN tab_entries e ON e.id = st.tab_entry_id
                     WHERE e.url = ?1 AND st.state = 'open'",
                )
                .map_err(|e| self.sql(e))?;
            let rows = stmt
                .query_map([url], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.sql(e))?;
            for (snapshot, window) in rows {
                open.entry(snapshot)
                    .or_default()
                    .push(u64::try_from(window).unwrap_or(0));
            }
        }
        let u = |v: i64| u64::try_from(v).unwrap_or(0);
        let mut stretches: Vec<OpenStretch> = Vec::new();
        let mut in_stretch = false;
        for (id, taken_at) in snapshots {
            let Some(windows) = open.get(&id) else {
                in_stretch = false;
                continue;
            };
            match stretches.last_mut() {
                Some(s) if in_stretch => {
                    s.to_ms = u(taken_at);
                    s.last_snapshot = SnapshotId(id);
                    s.snapshots += 1;
                    s.windows.extend(windows);
                }
                _ => stretches.push(OpenStretch {
                    from_ms: u(taken_at),
                    to_ms: u(taken_at),
                    first_snapshot: SnapshotId(id),
                    last_snapshot: SnapshotId(id),
                    snapshots: 1,
                    windows: windows.clone(),
                }),
            }
            in_stretch = true;
        }
        for s in &mut stretches {
            s.windows.sort_unstable();
            s.windows.dedup();
        }
        Ok(stretches)
    }

    /// Rebuild the tab index from the stored snapshots, all in one
    /// transaction: every verified snapshot's JSON is read (and checked) again.
    /// `progress(done, total)` is called after each snapshot.
    pub fn reindex_tabs(
        &mut self,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<ReindexReport, StoreError> {
        self.writable()?;
        let path = self.catalog_path.clone();
        let err = |e| catalog::sql_error(&path, e);
        let snapshots: Vec<(i64, i64)> = self
            .conn
            .prepare_cached("SELECT id, content_id FROM snapshots WHERE status = 'ok' ORDER BY id")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .map_err(err)?;
        let total = snapshots.len() as u64;
        let tx = self.conn.unchecked_transaction().map_err(err)?;
        tx.execute_batch(
            "DELETE FROM snapshot_tabs;
             DELETE FROM tab_entries;
             INSERT INTO tab_search (tab_search) VALUES ('delete-all');",
        )
        .map_err(err)?;
        let mut report = ReindexReport::default();
        let mut done_contents: HashMap<i64, bool> = HashMap::new();
        for (n, (id, content_id)) in snapshots.into_iter().enumerate() {
            let id = SnapshotId(id);
            let copied = match done_contents.get(&content_id) {
                Some(true) => copy_tab_rows(&tx, &path, id, content_id)?,
                Some(false) => true, // the content holds no tabs
                None => false,
            };
            if !copied {
                let json = self.read_json(id)?;
                let rows = tab_rows(&json).unwrap_or_default();
                insert_tab_rows(&tx, &path, id, &rows)?;
                done_contents.insert(content_id, !rows.is_empty());
            }
            report.snapshots += 1;
            progress(n as u64 + 1, total);
        }
        let (tabs, entries): (i64, i64) = tx
            .query_row(
                "SELECT (SELECT count(*) FROM snapshot_tabs), (SELECT count(*) FROM tab_entries)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(err)?;
        tx.commit().map_err(err)?;
        report.tabs = u64::try_from(tabs).unwrap_or(0);
        report.entries = u64::try_from(entries).unwrap_or(0);
        Ok(report)
    }
}

/// True for errors in the FTS5 query text itself (syntax, unknown column).
fn is_query_error(e: &rusqlite::Error) -> bool {
    match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            f.code == rusqlite::ErrorCode::Unknown
                && msg.as_deref().is_some_and(|m| {
                    m.starts_with("fts5:")
                        || m.starts_with("unterminated string")
                        || m.starts_with("no such column")
                        || m.contains("syntax error")
                })
        }
        _ => false,
    }
}
