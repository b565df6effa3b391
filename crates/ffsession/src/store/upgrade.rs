//! The step to catalog version 5, which SQL alone cannot take: every
//! snapshot and content gets its manifest file, and the tab index moves from
//! the catalog into `index.sqlite`.
//!
//! Files first, the version last: the manifests are written (durably) and
//! the index copied before the transaction that drops the old index tables
//! and sets the version commits, so a crash at any point leaves a version-4
//! catalog that the next writer upgrades again (a manifest already whole is
//! not written twice; an index already copied is not copied again).

use rusqlite::OptionalExtension;

use super::chunk::Digest;
use super::index::IndexState;
use super::layout::make_dir;
use super::manifest::{self, CONTENTS_DIR, SNAPSHOTS_DIR};
use super::{catalog, Store, StoreError};

impl Store {
    pub(super) fn upgrade_to_v5(&mut self) -> Result<(), StoreError> {
        self.writable()?;
        make_dir(&self.dir.join(CONTENTS_DIR), &self.dir)?;
        make_dir(&self.dir.join(SNAPSHOTS_DIR), &self.dir)?;
        manifest::write_store(&self.dir, self.params)?;
        let contents: Vec<(i64, Vec<u8>)> = self
            .conn
            .prepare("SELECT id, hash FROM contents ORDER BY id")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .map_err(|e| self.sql(e))?;
        for (id, hash) in contents {
            let digest = Digest::from_slice(&hash)
                .ok_or_else(|| self.corrupt(format!("content {id}: its hash is not 32 bytes")))?;
            let list = self.content_chunks(id)?;
            manifest::write_content(&self.dir, &digest, &list)?;
        }
        for info in self.snapshots()? {
            manifest::write_snapshot(&self.dir, &info)?;
        }
        self.copy_index_out()?;
        let path = self.catalog_path.clone();
        let err = |e| catalog::sql_error(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute_batch(catalog::SCHEMA_V5).map_err(err)?;
        tx.pragma_update(None, "user_version", catalog::SCHEMA_VERSION)
            .map_err(err)?;
        tx.commit().map_err(err)?;
        self.schema_version = catalog::SCHEMA_VERSION;
        Ok(())
    }

    /// Copy a version 2-4 catalog's tab index into a new `index.sqlite`.
    /// Derived data: if that fails, the index stays empty and is built from
    /// the snapshots once the upgrade is done (`Store::catch_up_index`).
    fn copy_index_out(&mut self) -> Result<(), StoreError> {
        if self.index != IndexState::Attached || self.schema_version < catalog::TAB_INDEX_VERSION {
            return Ok(());
        }
        let copied = (|| -> rusqlite::Result<()> {
            let through: Option<String> = self
                .conn
                .query_row(
                    "SELECT value FROM idx.meta WHERE key = 'covers_through'",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            let entries: i64 =
                self.conn
                    .query_row("SELECT count(*) FROM idx.tab_entries", [], |r| r.get(0))?;
            if through.as_deref() != Some("0") || entries > 0 {
                return Ok(());
            }
            let tx = self.conn.unchecked_transaction()?;
            tx.execute_batch(
                "INSERT INTO idx.tab_entries (id, url, title)
                     SELECT id, url, title FROM main.tab_entries;
                 INSERT INTO idx.tab_runs SELECT * FROM main.tab_runs;
                 UPDATE idx.meta SET value = (SELECT coalesce(max(id), 0) FROM main.snapshots)
                     WHERE key = 'covers_through';",
            )?;
            tx.commit()
        })();
        if let Err(e) = copied {
            self.index_note = Some(super::index::IndexNote::from(format!(
                "the tab index could not be moved out of the catalog ({e}); it is built again from the snapshots"
            )));
        }
        Ok(())
    }
}
