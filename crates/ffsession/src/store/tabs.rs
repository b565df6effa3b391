//! The tab index: every tab of every verified snapshot, searchable.
//!
//! Schema version 2 adds three objects to the catalog (see `catalog.rs`):
//! `tab_entries` holds each distinct (URL, title) once, `tab_runs` records
//! where each appeared as runs, and `tab_search` is an FTS5 index over the
//! titles and URLs of `tab_entries` (external content, kept in step by
//! triggers).
//!
//! # Runs
//!
//! A run is a maximal sequence of consecutive verified snapshots of one
//! source file (`sessionstore-backups/recovery.jsonlz4`, say) that all hold a
//! tab (one entry) with the same window, state, pinned, hidden and container:
//! the *run key*. Position and last access are not part of the key (opening a
//! tab shifts the position of every tab after it); a run keeps the latest
//! values. When a snapshot of source S is added, its *predecessor* is the
//! newest verified snapshot of S before it; each of its tabs extends the run
//! of the same key that covers the predecessor (its `last_snapshot` becomes
//! the new snapshot) or starts a new run. A snapshot whose content is that of
//! its predecessor extends every run covering the predecessor, unparsed.
//!
//! A run covers the existing verified snapshots of its source with ids from
//! `first_snapshot` to `last_snapshot` (ids only grow: `AUTOINCREMENT`), so
//! counts and dates are joins against `snapshots`, and removing a snapshot
//! changes no run. A run that covers no existing snapshot is garbage, deleted
//! by [`Store::collect_garbage`] with the entries no run names any more.
//!
//! The same entry twice in one snapshot with the same run key (the same page
//! open twice in one window) is one run: the index answers "which snapshots
//! held this tab", not "how many copies". Twice in different windows or
//! states, it is two runs.
//!
//! The index lives in its own database (`index.sqlite`, see `index.rs`): a
//! snapshot's tabs are indexed right after the transaction that adds its row,
//! in a transaction of the index alone, and a damaged index is built again
//! from the snapshots ([`Store::reindex_tabs`]).

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{catalog, to_i64, SnapshotId, Store, StoreError};
use crate::session::Session;
use crate::session::{TabFilter, TabState};
use crate::SessionData;

/// One tab of a snapshot, as read for `tab_runs`.
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
/// when it does not parse as a session. With `zen`, the JSON is Zen's
/// sessions file ([`crate::zen`]), whose tabs are indexed as the open tabs of
/// window 1 (Zen puts them in every synced window).
pub(super) fn tab_rows(json: &[u8], zen: bool) -> Option<Vec<TabRow>> {
    if zen {
        let zen = crate::zen::ZenSessions::from_json(json).ok()?;
        return Some(zen.tab_records().map(row).collect());
    }
    let all = TabFilter {
        window: None,
        include_closed: true,
    };
    let collect =
        |session: &Session<'_>| -> Vec<TabRow> { session.tab_records(all).map(row).collect() };
    if let Ok(session) = Session::from_json(json) {
        return Some(collect(&session));
    }
    // A JSON file's content may carry a byte-order mark or old Firefox's
    // `( ... )`; SessionData finds the JSON value inside.
    let data = SessionData::from_bytes("session", json.to_vec()).ok()?;
    let session = data.parse().ok()?;
    Some(collect(&session))
}

/// The index's row of one tab.
fn row(r: crate::session::TabRecord<'_>) -> TabRow {
    TabRow {
        url: r.url.unwrap_or_default().to_owned(),
        title: r.title.unwrap_or_default().to_owned(),
        window: r.window as u64,
        position: r.position as u64,
        pinned: r.pinned,
        hidden: r.hidden,
        container: r.container,
        last_accessed: r.last_accessed,
        state: r.state,
    }
}

/// The newest verified snapshot of source `source_name` before snapshot `id`.
fn predecessor(
    tx: &rusqlite::Connection,
    source_name: &str,
    id: SnapshotId,
) -> rusqlite::Result<Option<i64>> {
    tx.prepare_cached(
        "SELECT max(id) FROM snapshots
         WHERE source_name = ?1 AND id < ?2 AND status = 'ok'",
    )?
    .query_row(params![source_name, id.0], |r| r.get(0))
}

/// The run key: what must stay the same for a tab to extend its run.
type RunKey = (i64, i64, &'static str, bool, bool, i64);

/// Index the tabs `rows` of snapshot `id` of source `source_name`: extend
/// the runs covering its predecessor, start new ones (and new `tab_entries`)
/// for the rest.
pub(super) fn insert_tab_rows(
    tx: &rusqlite::Connection,
    path: &Path,
    id: SnapshotId,
    source_name: &str,
    rows: &[TabRow],
) -> Result<(), StoreError> {
    let err = |e| catalog::sql_error(path, e);
    let mut open_runs: HashMap<RunKey, i64> = HashMap::new();
    if let Some(pred) = predecessor(tx, source_name, id).map_err(err)? {
        let mut stmt = tx
            .prepare_cached(
                "SELECT id, tab_entry_id, window, state, pinned, hidden, container
                 FROM tab_runs
                 WHERE source_name = ?1 AND last_snapshot >= ?2 AND first_snapshot <= ?2",
            )
            .map_err(err)?;
        let mut q = stmt.query(params![source_name, pred]).map_err(err)?;
        while let Some(r) = q.next().map_err(err)? {
            let state: String = r.get(3).map_err(err)?;
            let Some(state) = [TabState::Open, TabState::Closed, TabState::ClosedWindow]
                .into_iter()
                .find(|s| s.as_str() == state)
            else {
                continue;
            };
            let key = (
                r.get(1).map_err(err)?,
                r.get(2).map_err(err)?,
                state.as_str(),
                r.get(4).map_err(err)?,
                r.get(5).map_err(err)?,
                r.get(6).map_err(err)?,
            );
            open_runs.insert(key, r.get(0).map_err(err)?);
        }
    }
    let mut find_entry = tx
        .prepare_cached("SELECT id FROM tab_entries WHERE url = ?1 AND title = ?2")
        .map_err(err)?;
    let mut put_entry = tx
        .prepare_cached("INSERT INTO tab_entries (url, title) VALUES (?1, ?2)")
        .map_err(err)?;
    let mut extend = tx
        .prepare_cached(
            "UPDATE tab_runs SET last_snapshot = ?2, position = ?3, last_accessed = ?4
             WHERE id = ?1",
        )
        .map_err(err)?;
    let mut start = tx
        .prepare_cached(
            "INSERT INTO tab_runs (tab_entry_id, source_name, first_snapshot, last_snapshot,
                 window, position, pinned, hidden, container, state, last_accessed)
             VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .map_err(err)?;
    // Runs this snapshot already extended or started: a duplicate is one run.
    let mut done: HashMap<RunKey, ()> = HashMap::new();
    for r in rows {
        let entry: i64 = match find_entry
            .query_row((&r.url, &r.title), |row| row.get(0))
            .optional()
            .map_err(err)?
        {
            Some(entry) => entry,
            None => {
                put_entry.execute((&r.url, &r.title)).map_err(err)?;
                tx.last_insert_rowid()
            }
        };
        let key = (
            entry,
            to_i64(r.window),
            r.state.as_str(),
            r.pinned,
            r.hidden,
            to_i64(r.container),
        );
        if done.insert(key, ()).is_some() {
            continue;
        }
        let last_accessed = r.last_accessed.map(to_i64);
        match open_runs.get(&key) {
            Some(&run) => {
                extend
                    .execute(params![run, id.0, to_i64(r.position), last_accessed])
                    .map_err(err)?;
            }
            None => {
                start
                    .execute(params![
                        entry,
                        source_name,
                        id.0,
                        key.1,
                        to_i64(r.position),
                        r.pinned,
                        r.hidden,
                        key.5,
                        key.2,
                        last_accessed,
                    ])
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// Index snapshot `id` of source `source_name` whose content is that of its
/// predecessor: extend every run covering the predecessor. False if it has
/// no predecessor of content `content_id`.
pub(super) fn extend_all_runs(
    tx: &rusqlite::Connection,
    path: &Path,
    id: SnapshotId,
    source_name: &str,
    content_id: i64,
) -> Result<bool, StoreError> {
    let err = |e| catalog::sql_error(path, e);
    let Some(pred) = predecessor(tx, source_name, id).map_err(err)? else {
        return Ok(false);
    };
    let same: bool = tx
        .prepare_cached("SELECT content_id = ?2 FROM snapshots WHERE id = ?1")
        .and_then(|mut s| s.query_row(params![pred, content_id], |r| r.get(0)))
        .map_err(err)?;
    if !same {
        return Ok(false);
    }
    // A predecessor the index does not hold (left out as damaged, or of no
    // tabs) has no runs to extend: the snapshot is read instead.
    let covered: bool = tx
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM tab_runs
                            WHERE source_name = ?1 AND last_snapshot >= ?2 AND first_snapshot <= ?2)",
        )
        .and_then(|mut s| s.query_row(params![source_name, pred], |r| r.get(0)))
        .map_err(err)?;
    if !covered {
        return Ok(false);
    }
    tx.prepare_cached(
        "UPDATE tab_runs SET last_snapshot = ?3
         WHERE source_name = ?1 AND last_snapshot >= ?2 AND first_snapshot <= ?2",
    )
    .and_then(|mut s| s.execute(params![source_name, pred, id.0]))
    .map_err(err)?;
    Ok(true)
}

/// Delete the runs that cover no existing verified snapshot, then the
/// entries no run names (their `tab_search` rows go with them).
pub(super) fn collect_garbage(tx: &rusqlite::Connection, path: &Path) -> Result<(), StoreError> {
    let err = |e| catalog::sql_error(path, e);
    tx.execute(
        "DELETE FROM tab_runs WHERE NOT EXISTS (
                 SELECT 1 FROM snapshots s
                 WHERE s.source_name = tab_runs.source_name AND s.status = 'ok'
                   AND s.id BETWEEN tab_runs.first_snapshot AND tab_runs.last_snapshot)",
        [],
    )
    .map_err(err)?;
    tx.execute(
        "DELETE FROM tab_entries WHERE NOT EXISTS (
             SELECT 1 FROM tab_runs r WHERE r.tab_entry_id = tab_entries.id)",
        [],
    )
    .map_err(err)?;
    Ok(())
}

/// What [`Store::reindex_tabs`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReindexReport {
    /// Snapshots indexed.
    pub snapshots: u64,
    /// Runs in the index (see the module documentation): they grow with
    /// distinct tabs and real changes, not with snapshots.
    pub runs: u64,
    /// Distinct (URL, title) pairs in the index.
    pub entries: u64,
    /// Snapshots left out because they do not read back whole, with why.
    pub skipped: Vec<(SnapshotId, String)>,
}

impl Store {
    /// Rebuild the tab index from the stored snapshots: the index file is
    /// deleted (it is derived data, and may be damaged) and every verified
    /// snapshot's JSON is read (and checked) again, in id order. A snapshot
    /// that does not read back whole is left out and counted in
    /// [`ReindexReport::skipped`]. `progress(done, total)` is called after each
    /// snapshot.
    pub fn reindex_tabs(
        &mut self,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<ReindexReport, StoreError> {
        let done = self.rebuild_index(&mut progress)?;
        let (runs, entries): (i64, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT count(*) FROM idx.tab_runs), (SELECT count(*) FROM idx.tab_entries)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| catalog::sql_error(&self.dir.join(super::index::INDEX_FILE), e))?;
        Ok(ReindexReport {
            snapshots: done.indexed - done.skipped.len() as u64,
            runs: u64::try_from(runs).unwrap_or(0),
            entries: u64::try_from(entries).unwrap_or(0),
            skipped: done.skipped,
        })
    }
}
