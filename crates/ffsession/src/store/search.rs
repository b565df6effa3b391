//! Searching the tab index: FTS5 queries over every tab ever backed up
//! ([`Store::search_tabs`]) and the stretches of time one URL was open
//! ([`Store::tab_history`]). The index itself, and how it is kept, is in
//! `tabs.rs`.

use std::collections::HashMap;

use rusqlite::params;
use serde::Serialize;

use super::{catalog, to_i64, ArchiveMark, SnapshotId, Store, StoreError};
use crate::session::TabState;

/// A span of the sessions' own time (each snapshot's `session.lastUpdate`,
/// or when it was taken if the file has none), in ms since the Unix epoch:
/// `since` inclusive, `until` exclusive; `None` is unbounded.
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
    /// The session time (its `lastUpdate`, else when it was backed up) of
    /// the first snapshot in range that holds it (ms since the epoch).
    pub first_seen_ms: u64,
    /// The session time of the last snapshot in range that holds it.
    pub last_seen_ms: u64,
    /// How many snapshots in range hold it (open or recently closed).
    pub snapshots: u64,
    /// The snapshot in range holding it whose session is the newest.
    pub newest_snapshot: SnapshotId,
    /// FTS5's bm25 rank: lower is a better match.
    pub rank: f64,
    /// Set when `tidy` closed a tab with this URL: when, why, and the
    /// snapshot holding it.
    pub archived: Option<ArchiveMark>,
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

/// The FTS5 query that finds `text` as written: every whitespace-separated
/// word must match, each as a phrase of its own (so `127.0.0.1`,
/// `example.com` and `https://host/path` match those tokens in that order,
/// and `OR`, `NOT`, `title:` and quotes are ordinary text); a word ending in
/// `*` matches as a prefix. `None` when `text` holds no word.
pub fn literal_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| {
            let (word, prefix) = match word.strip_suffix('*') {
                Some(stem) if !stem.is_empty() => (stem, "*"),
                _ => (word, ""),
            };
            format!("\"{}\"{prefix}", word.replace('"', "\"\""))
        })
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

impl SearchError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<crate::Hint> {
        match self {
            SearchError::Store(e) => e.hint(),
            SearchError::BadQuery { .. } => Some(crate::Hint::Advice(
                "in FTS5 syntax, put a phrase or text with punctuation in double quotes, \
                 e.g. '\"c++ tips\"', and close every quote",
            )),
        }
    }
}

/// One stretch of time a URL was in the snapshots in one state: consecutive
/// snapshots that all hold it open, or all hold it only as a recently closed
/// tab, or only in a recently closed window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenStretch {
    /// `open`, `closed` (a recently closed tab of an open window) or
    /// `closed-window` (a tab of a recently closed window); a snapshot that
    /// holds it both open and closed counts as open.
    pub state: TabState,
    /// The session time (`lastUpdate`, else when it was backed up) of the
    /// first snapshot of the stretch (ms since the epoch).
    pub from_ms: u64,
    /// The session time of the last snapshot of the stretch.
    pub to_ms: u64,
    /// The first snapshot of the stretch.
    pub first_snapshot: SnapshotId,
    /// The last snapshot of the stretch.
    pub last_snapshot: SnapshotId,
    /// Number of snapshots in the stretch.
    pub snapshots: u64,
    /// The 1-based windows it was in during the stretch, ascending (for
    /// `closed-window`, the closed windows: `_closedWindows`).
    pub windows: Vec<u64>,
    /// Set when the stretch ended with `tidy` closing the tab (the snapshot
    /// holding it is the stretch's).
    pub archived: Option<ArchiveMark>,
}

impl Store {
    pub(super) fn require_tab_index(&self) -> Result<(), StoreError> {
        if self.schema_version < catalog::TAB_INDEX_VERSION {
            return Err(StoreError::SchemaTooOld {
                path: self.catalog_path.clone(),
                found: self.schema_version,
                current: catalog::SCHEMA_VERSION,
            });
        }
        self.index_available()
            .map_err(|reason| StoreError::IndexUnavailable {
                path: self.dir.join(super::INDEX_FILE),
                reason,
            })
    }

    /// The tabs whose title or URL match the FTS5 `query`, best match first,
    /// counting only snapshots whose session time is within `range`; at most
    /// `limit`.
    pub fn search_tabs(
        &self,
        query: &str,
        range: TimeRange,
        limit: usize,
    ) -> Result<Vec<SearchHit>, SearchError> {
        self.require_tab_index()?;
        let (since, until) = range.bounds();
        // Matches best first; each is then counted against the snapshots in
        // range (through its runs), and the first `limit` found in range are
        // the answer, so a broad query costs `limit` counts, not one per match.
        let mut matches = self
            .conn
            .prepare_cached(
                "SELECT rowid, bm25(tab_search) AS rank FROM tab_search
                 WHERE tab_search MATCH ?1 ORDER BY rank, rowid",
            )
            .map_err(|e| self.sql(e))?;
        let mut entry_text = self
            .conn
            .prepare_cached("SELECT title, url FROM tab_entries WHERE id = ?1")
            .map_err(|e| self.sql(e))?;
        // Per source, the ids of the first and last verified snapshot in
        // range: a run outside them holds no snapshot in range (when snapshot
        // times grow with ids; the count below decides either way).
        let bounds: HashMap<String, (i64, i64)> = if range == TimeRange::default() {
            HashMap::new()
        } else {
            self.conn
                .prepare_cached(
                    "SELECT source_name, min(id), max(id) FROM snapshots
                     WHERE status = 'ok' AND coalesce(last_update, taken_at) >= ?1
                       AND coalesce(last_update, taken_at) < ?2
                     GROUP BY source_name",
                )
                .and_then(|mut s| {
                    s.query_map([since, until], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?
                        .collect()
                })
                .map_err(|e| self.sql(e))?
        };
        let mut runs_of = self
            .conn
            .prepare_cached(
                "SELECT source_name, first_snapshot, last_snapshot FROM tab_runs
                 WHERE tab_entry_id = ?1",
            )
            .map_err(|e| self.sql(e))?;
        let mut may_be_in_range = |entry: i64| -> rusqlite::Result<bool> {
            if range == TimeRange::default() {
                return Ok(true);
            }
            let mut rows = runs_of.query([entry])?;
            while let Some(r) = rows.next()? {
                let source: String = r.get(0)?;
                let (first, last): (i64, i64) = (r.get(1)?, r.get(2)?);
                if let Some(&(lo, hi)) = bounds.get(&source) {
                    if last >= lo && first <= hi {
                        return Ok(true);
                    }
                }
            }
            Ok(false)
        };
        let mut seen = self
            .conn
            .prepare_cached(
                "SELECT min(coalesce(s.last_update, s.taken_at)),
                        max(coalesce(s.last_update, s.taken_at)), count(DISTINCT s.id)
                 FROM tab_runs r JOIN snapshots s ON s.source_name = r.source_name
                      AND s.id BETWEEN r.first_snapshot AND r.last_snapshot
                 WHERE r.tab_entry_id = ?1 AND s.status = 'ok'
                   AND coalesce(s.last_update, s.taken_at) >= ?2
                   AND coalesce(s.last_update, s.taken_at) < ?3",
            )
            .map_err(|e| self.sql(e))?;
        // The newest snapshot by the session's own time (an upgrade copy
        // stored last holds an old session).
        let mut newest = self
            .conn
            .prepare_cached(
                "SELECT s.id FROM tab_runs r JOIN snapshots s ON s.source_name = r.source_name
                      AND s.id BETWEEN r.first_snapshot AND r.last_snapshot
                 WHERE r.tab_entry_id = ?1 AND s.status = 'ok'
                   AND coalesce(s.last_update, s.taken_at) >= ?2
                   AND coalesce(s.last_update, s.taken_at) < ?3
                 ORDER BY coalesce(s.last_update, s.taken_at) DESC, s.id DESC LIMIT 1",
            )
            .map_err(|e| self.sql(e))?;
        let bad_query = |e: rusqlite::Error| -> SearchError {
            if is_query_error(&e) {
                SearchError::BadQuery {
                    query: query.to_owned(),
                    reason: e.to_string(),
                }
            } else {
                self.sql(e).into()
            }
        };
        let u = |v: i64| u64::try_from(v).unwrap_or(0);
        let mut hits = Vec::new();
        let mut rows = matches.query([query]).map_err(bad_query)?;
        while hits.len() < limit {
            let Some(r) = rows.next().map_err(bad_query)? else {
                break;
            };
            let entry: i64 = r.get(0).map_err(|e| self.sql(e))?;
            if !may_be_in_range(entry).map_err(|e| self.sql(e))? {
                continue;
            }
            let (first, last, count): (Option<i64>, Option<i64>, i64) = seen
                .query_row(params![entry, since, until], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .map_err(|e| self.sql(e))?;
            let (Some(first), Some(last)) = (first, last) else {
                continue;
            };
            let newest_snapshot = newest
                .query_row(params![entry, since, until], |r| r.get(0))
                .map_err(|e| self.sql(e))?;
            let (title, url): (String, String) = entry_text
                .query_row([entry], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| self.sql(e))?;
            let archived = self.archive_mark(&url)?;
            hits.push(SearchHit {
                title,
                url,
                first_seen_ms: u(first),
                last_seen_ms: u(last),
                snapshots: u(count),
                newest_snapshot: SnapshotId(newest_snapshot),
                rank: r.get(1).map_err(|e| self.sql(e))?,
                archived,
            });
        }
        Ok(hits)
    }

    /// Every stretch of time `url` was in the snapshots: runs of consecutive
    /// verified snapshots (by the session's own time) that hold it in the same state
    /// (open, or only recently closed, or only in a closed window), oldest
    /// first: the snapshots `search` counts for it.
    pub fn tab_history(&self, url: &str) -> Result<Vec<OpenStretch>, StoreError> {
        self.require_tab_index()?;
        let snapshots: Vec<(i64, i64)> = self
            .conn
            .prepare_cached(
                "SELECT id, coalesce(last_update, taken_at) AS at FROM snapshots
                 WHERE status = 'ok' ORDER BY at, id",
            )
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .map_err(|e| self.sql(e))?;
        // Per snapshot: its state for the URL (the first of open, closed,
        // closed-window it holds) and the windows of that state.
        let mut seen: HashMap<i64, (TabState, Vec<u64>)> = HashMap::new();
        {
            let mut stmt = self
                .conn
                .prepare_cached(
                    "SELECT DISTINCT s.id, r.window, r.state FROM tab_entries e
                     JOIN tab_runs r ON r.tab_entry_id = e.id
                     JOIN snapshots s ON s.source_name = r.source_name
                          AND s.id BETWEEN r.first_snapshot AND r.last_snapshot
                     WHERE e.url = ?1 AND s.status = 'ok'",
                )
                .map_err(|e| self.sql(e))?;
            let rows = stmt
                .query_map([url], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.sql(e))?;
            for (snapshot, window, state) in rows {
                let state = match state.as_str() {
                    "open" => TabState::Open,
                    "closed" => TabState::Closed,
                    _ => TabState::ClosedWindow,
                };
                let window = u64::try_from(window).unwrap_or(0);
                let rank = |s: TabState| match s {
                    TabState::Open => 0,
                    TabState::Closed => 1,
                    _ => 2,
                };
                match seen.get_mut(&snapshot) {
                    Some((best, windows)) if *best == state => windows.push(window),
                    Some((best, _)) if rank(*best) < rank(state) => {}
                    _ => {
                        seen.insert(snapshot, (state, vec![window]));
                    }
                }
            }
        }
        let u = |v: i64| u64::try_from(v).unwrap_or(0);
        let mut stretches: Vec<OpenStretch> = Vec::new();
        let mut in_stretch = false;
        for (id, at) in snapshots {
            let Some((state, windows)) = seen.get(&id) else {
                in_stretch = false;
                continue;
            };
            match stretches.last_mut() {
                Some(s) if in_stretch && s.state == *state => {
                    s.to_ms = u(at);
                    s.last_snapshot = SnapshotId(id);
                    s.snapshots += 1;
                    s.windows.extend(windows);
                }
                _ => stretches.push(OpenStretch {
                    state: *state,
                    from_ms: u(at),
                    to_ms: u(at),
                    first_snapshot: SnapshotId(id),
                    last_snapshot: SnapshotId(id),
                    snapshots: 1,
                    windows: windows.clone(),
                    archived: None,
                }),
            }
            in_stretch = true;
        }
        let mark = self.archive_mark(url)?;
        for s in &mut stretches {
            s.windows.sort_unstable();
            s.windows.dedup();
            if let Some(m) = &mark {
                if (s.first_snapshot..=s.last_snapshot).contains(&m.snapshot) {
                    s.archived = Some(m.clone());
                }
            }
        }
        Ok(stretches)
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
