//! The catalog's own checks: SQLite's page check (naming the damaged
//! tables), each snapshot row against its manifest, each content's chunk list
//! against its manifest, and the tab index (derived data, in its own file).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::super::chunk::Digest;
use super::super::index;
use super::super::manifest::{self, ManifestFailure, SnapshotManifest};
use super::{CheckReport, StoreProblem};
use crate::store::{SnapshotInfo, Store};

/// A problem of the catalog file.
pub(super) fn problem(store: &Store, what: String) -> StoreProblem {
    StoreProblem {
        path: store.catalog_path.clone(),
        what,
        hint: None,
    }
}

/// SQLite's `integrity_check` (each line naming the table it is about) and
/// `foreign_key_check`; a check that cannot run is a problem, not the end.
pub(super) fn integrity(store: &Store, report: &mut CheckReport) {
    let lines: Result<Vec<String>, _> = store
        .conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect());
    match lines {
        Ok(lines) => {
            let tables = tables_by_root(&store.conn);
            for line in lines.into_iter().filter(|l| l != "ok") {
                let what = name_tree(&line, &tables);
                report
                    .problems
                    .push(problem(store, format!("integrity_check: {what}")));
            }
        }
        Err(e) => report
            .problems
            .push(problem(store, format!("integrity_check cannot run: {e}"))),
    }
    let broken: Result<i64, _> =
        store
            .conn
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            });
    match broken {
        Ok(0) => {}
        Ok(n) => report.problems.push(problem(
            store,
            format!("{n} row(s) reference rows that do not exist (foreign_key_check)"),
        )),
        Err(e) => report
            .problems
            .push(problem(store, format!("foreign_key_check cannot run: {e}"))),
    }
}

/// Table and index names by their root page.
fn tables_by_root(conn: &Connection) -> HashMap<i64, String> {
    conn.prepare("SELECT rootpage, name FROM sqlite_schema WHERE rootpage > 0")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .unwrap_or_default()
}

/// `Tree 5 page 5 ...` -> `Tree 5 (table content_chunks) page 5 ...`.
fn name_tree(line: &str, tables: &HashMap<i64, String>) -> String {
    let Some(rest) = line.strip_prefix("Tree ") else {
        return line.to_owned();
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    match digits.parse::<i64>().ok().and_then(|n| tables.get(&n)) {
        Some(name) => format!("Tree {digits} (table {name}){}", &rest[digits.len()..]),
        None => line.to_owned(),
    }
}

/// Each snapshot row against its manifest: a missing or damaged manifest, or
/// a row that says something else (a flipped bit in a kind or a time), is a
/// problem naming the fields.
pub(super) fn rows_against_manifests(
    store: &Store,
    report: &mut CheckReport,
    snapshots: &[SnapshotInfo],
) {
    if store.schema_version < 5 {
        return;
    }
    for s in snapshots {
        let path = manifest::snapshot_path(&store.dir, s.id);
        let (what, hint) = match manifest::read_snapshot(&store.dir, s.id) {
            Ok(m) if m == SnapshotManifest::of(s) => continue,
            Ok(m) => (
                format!(
                    "snapshot {}: its catalog row does not match its manifest ({})",
                    s.id,
                    super::super::verify::differences(&SnapshotManifest::of(s), &m)
                ),
                Some(crate::Hint::RebuildCatalog),
            ),
            Err(ManifestFailure::Io(e)) => {
                report.unreadable.push(StoreProblem {
                    path,
                    what: format!("cannot be read: {e}"),
                    hint: None,
                });
                continue;
            }
            Err(why) => (format!("the manifest of snapshot {} is {why}", s.id), None),
        };
        report.problems.push(StoreProblem { path, what, hint });
    }
}

/// The catalog's chunks: digest -> (raw size, stored size).
pub(super) fn cataloged_chunks(
    store: &Store,
    report: &mut CheckReport,
) -> HashMap<Digest, (u64, u64)> {
    let rows: Result<Vec<(Vec<u8>, i64, i64)>, _> = store
        .conn
        .prepare("SELECT hash, raw_size, stored_size FROM chunks")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        });
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => {
            report
                .problems
                .push(problem(store, format!("the chunks cannot be listed: {e}")));
            return HashMap::new();
        }
    };
    let mut map = HashMap::with_capacity(rows.len());
    for (hash, raw, stored) in rows {
        match Digest::from_slice(&hash) {
            Some(d) => {
                map.insert(d, (raw.max(0) as u64, stored.max(0) as u64));
            }
            None => report
                .problems
                .push(problem(store, "a chunk hash is not 32 bytes".into())),
        }
    }
    map
}

/// Each content's chunk list in the catalog against its manifest.
pub(super) fn contents_against_manifests(store: &Store, report: &mut CheckReport) {
    if store.schema_version < 5 {
        return;
    }
    let contents: Result<Vec<(i64, Vec<u8>)>, _> = store
        .conn
        .prepare("SELECT id, hash FROM contents ORDER BY id")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect());
    let Ok(contents) = contents else {
        return;
    };
    for (id, hash) in contents {
        let Some(digest) = Digest::from_slice(&hash) else {
            continue;
        };
        let path = manifest::content_path(&store.dir, &digest);
        let listed = store.content_chunks(id);
        let what = match (manifest::read_content(&store.dir, &digest), listed) {
            (Ok(m), Ok(list)) if m.list().as_deref() == Some(&list[..]) => continue,
            (Ok(_), Ok(_)) => {
                format!("content {digest}: the catalog's chunk list differs from its manifest")
            }
            // The catalog cannot say: the integrity check has said why.
            (Ok(_), Err(_)) => continue,
            (Err(ManifestFailure::Io(e)), _) => {
                report.unreadable.push(StoreProblem {
                    path,
                    what: format!("cannot be read: {e}"),
                    hint: None,
                });
                continue;
            }
            (Err(why), _) => format!("the manifest of content {digest} is {why}"),
        };
        report.problems.push(StoreProblem {
            path,
            what,
            hint: None,
        });
    }
}

/// Manifest files no catalog row names (harmless leftovers).
pub(super) fn stale_manifests(store: &Store) -> u64 {
    if store.schema_version < 5 {
        return 0;
    }
    let ids: HashSet<i64> = store
        .conn
        .prepare("SELECT id FROM snapshots")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_default();
    let hashes: HashSet<Vec<u8>> = store
        .conn
        .prepare("SELECT hash FROM contents")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_default();
    let snapshots = manifest::snapshot_ids(&store.dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|id| !ids.contains(&id.0))
        .count();
    let contents = manifest::content_files(&store.dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|(d, _)| !hashes.contains(&d.as_bytes()[..]))
        .count();
    (snapshots + contents) as u64
}

/// The tab index: readable, an ffsession index, and whole (SQLite's
/// `integrity_check`). Derived data: a problem here says to run `reindex`.
pub(super) fn index_file(dir: &Path, report: &mut CheckReport) {
    let path = dir.join(index::INDEX_FILE);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(_) => return,
    };
    let problem = |what: String| StoreProblem {
        path: path.clone(),
        what: format!("{what}; the tab index is derived data"),
        hint: Some(crate::Hint::Reindex),
    };
    if !meta.is_file() {
        report
            .index_problems
            .push(problem("not a file (not followed)".into()));
        return;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let run = |path: &Path, query: &str| -> rusqlite::Result<Vec<String>> {
        let conn = Connection::open_with_flags(index::uri(path, query), flags)?;
        let mut stmt = conn.prepare("PRAGMA integrity_check")?;
        let lines = stmt.query_map([], |r| r.get(0))?.collect();
        lines
    };
    let io_failure = |e: &rusqlite::Error| {
        matches!(
            e.sqlite_error_code(),
            Some(
                rusqlite::ErrorCode::CannotOpen
                    | rusqlite::ErrorCode::ReadOnly
                    | rusqlite::ErrorCode::SystemIoFailure
                    | rusqlite::ErrorCode::DiskFull
            )
        )
    };
    let mut lines = run(&path, "mode=ro");
    // As the catalog: where the shm file cannot be made (a full disk, a
    // read-only one), an index whose WAL is empty is read as immutable, one
    // whose WAL holds commits from a private copy.
    if lines.as_ref().is_err_and(io_failure) {
        if super::super::catalog::wal_len(&path) == 0 {
            lines = run(&path, "mode=ro&immutable=1");
        } else if let Ok((_tmp, copy)) = super::super::catalog::private_copy(&path) {
            lines = run(&copy, "mode=ro");
        }
    }
    match lines {
        Ok(lines) => {
            for line in lines.into_iter().filter(|l| l != "ok").take(20) {
                report
                    .index_problems
                    .push(problem(format!("integrity_check: {line}")));
            }
        }
        Err(e) if io_failure(&e) => report.unreadable.push(StoreProblem {
            path: path.clone(),
            what: format!("cannot be read: {e}"),
            hint: None,
        }),
        Err(e) => report
            .index_problems
            .push(problem(format!("it cannot be read: {e}"))),
    }
}
