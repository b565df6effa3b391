//! Small read queries over the catalog that callers outside the store need:
//! the content of a source file's newest snapshot (so `watch` can skip a file
//! that did not change), the content a source would be stored as, and the
//! number of rows in each catalog table (for the long-run benchmark).

use rusqlite::OptionalExtension;

use super::snapshot::check;
use super::{Digest, SnapshotId, SnapshotSource, Store, StoreError};

/// The catalog tables [`Store::table_rows`] counts.
const TABLES: [&str; 7] = [
    "snapshots",
    "contents",
    "content_chunks",
    "chunks",
    "tab_entries",
    "tab_runs",
    "tab_search",
];

impl Store {
    /// The newest snapshot (highest id) of source file `file_name` of
    /// `profile`, and the digest of its content; `None` if the store has no
    /// snapshot of that file.
    pub fn latest_content(
        &self,
        profile: &str,
        file_name: &str,
    ) -> Result<Option<(SnapshotId, Digest)>, StoreError> {
        let row: Option<(i64, Vec<u8>)> = self
            .conn
            .prepare_cached(
                "SELECT s.id, c.hash FROM snapshots s JOIN contents c ON c.id = s.content_id
                 WHERE s.profile = ?1 AND s.source_name = ?2
                 ORDER BY s.id DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row([profile, file_name], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.sql(e))?;
        match row {
            None => Ok(None),
            Some((id, hash)) => {
                let bytes: [u8; 32] = hash.try_into().map_err(|_| {
                    self.corrupt(format!("the content of snapshot {id} has a malformed hash"))
                })?;
                Ok(Some((SnapshotId(id), Digest(bytes))))
            }
        }
    }

    /// Rows in each catalog table, by name (a table an older catalog lacks
    /// counts 0).
    pub fn table_rows(&self) -> Result<Vec<(&'static str, u64)>, StoreError> {
        let mut out = Vec::with_capacity(TABLES.len());
        for table in TABLES {
            let n: Option<i64> = self
                .conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .optional()
                .or_else(|e| match e {
                    rusqlite::Error::SqliteFailure(_, Some(ref m))
                        if m.contains("no such table") =>
                    {
                        Ok(None)
                    }
                    e => Err(e),
                })
                .map_err(|e| self.sql(e))?;
            out.push((table, n.map_or(0, |n| u64::try_from(n).unwrap_or(0))));
        }
        Ok(out)
    }
}

impl SnapshotSource {
    /// The digest of the content the store would keep for this file (its
    /// session JSON when it verifies, else its raw bytes): equal to
    /// [`SnapshotInfo::content_hash`](super::SnapshotInfo::content_hash) of a
    /// snapshot of the same bytes. Decompresses and parses the file.
    pub fn content_digest(&self) -> Digest {
        Digest::of(&check(&self.file_name, &self.kind, self.bytes.clone()).content)
    }
}
