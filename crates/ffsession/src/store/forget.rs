//! Removing a snapshot from the catalog (its chunks stay until garbage
//! collection finds nothing references them).

use super::{SnapshotId, Store, StoreError};

impl Store {
    /// Remove snapshot `id` from the catalog. Its chunks stay until
    /// [`Store::collect_garbage`] finds that no snapshot references them.
    pub fn remove_snapshot(&mut self, id: SnapshotId) -> Result<(), StoreError> {
        self.writable()?;
        let n = self
            .conn
            .execute("DELETE FROM snapshots WHERE id = ?1", [id.0])
            .map_err(|e| self.sql(e))?;
        if n == 0 {
            return Err(StoreError::UnknownSnapshot {
                dir: self.dir.clone(),
                id,
            });
        }
        Ok(())
    }
}
