//! Locks on a remote, as restic has them: a writer (`copy`) holds a shared
//! lock, `prune` an exclusive one. Each is an object `locks/<16 hex>`
//! (encrypted: host, pid, kind, time). Taking one: list the locks, refuse if
//! one conflicts, write ours, list again, and if a conflicting one appeared
//! meanwhile, remove ours and refuse: two that race both back off, never both
//! go on. A lock older than [`LOCK_STALE_MS`] is stale (its holder died) and
//! ignored; a holder that works longer refreshes its lock. As restic does, a
//! lock of this host whose process is gone is stale at once, and removed: a
//! copy killed on this machine does not keep `prune` out for half an hour.

use serde::{Deserialize, Serialize};

use super::backend::Kind;
use super::{Remote, RemoteError};

/// A lock not refreshed for this long is stale: 30 minutes.
pub const LOCK_STALE_MS: u64 = 30 * 60 * 1000;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct LockRecord {
    format: String,
    host: String,
    pid: u32,
    exclusive: bool,
    time: u64,
}

/// A lock held on a remote; dropping it removes it.
pub struct RemoteLock<'a> {
    remote: &'a Remote,
    name: String,
    record: LockRecord,
}

impl RemoteLock<'_> {
    /// Write the lock again with time `now_ms` (under a new name, the old
    /// one removed after), so that it does not go stale.
    pub fn refresh(&mut self, now_ms: u64) -> Result<(), RemoteError> {
        if now_ms.saturating_sub(self.record.time) < LOCK_STALE_MS / 3 {
            return Ok(());
        }
        let mut record = self.record.clone();
        record.time = now_ms;
        let name = format!("{:016x}", super::opendal::random_u64());
        let bytes = self
            .remote
            .seal(&serde_json::to_vec(&record).unwrap_or_default())?;
        self.remote.backend.write(Kind::Locks, &name, &bytes)?;
        let old = std::mem::replace(&mut self.name, name);
        self.record = record;
        self.remote.backend.remove(Kind::Locks, &old)
    }
}

impl Drop for RemoteLock<'_> {
    fn drop(&mut self) {
        let _ = self.remote.backend.remove(Kind::Locks, &self.name);
    }
}

impl Remote {
    /// The locks of others that are not stale at `now_ms`; a lock of
    /// `host` whose process is gone is removed.
    fn live_locks(
        &self,
        now_ms: u64,
        host: &str,
        mine: Option<&str>,
    ) -> Result<Vec<LockRecord>, RemoteError> {
        let mut out = Vec::new();
        for entry in self.backend.list(Kind::Locks)? {
            if Some(entry.name.as_str()) == mine {
                continue;
            }
            let Some(bytes) = self.backend.read(Kind::Locks, &entry.name)? else {
                continue;
            };
            // A lock that does not open is not ours to honour (another
            // identity's, or torn): it cannot hold anything of ours.
            let Ok(plain) = self.open_object(Kind::Locks, &entry.name, &bytes) else {
                continue;
            };
            let Ok(record) = serde_json::from_slice::<LockRecord>(&plain) else {
                continue;
            };
            if record.host == host
                && record.pid != std::process::id()
                && !crate::profile::pid_alive(record.pid)
            {
                self.backend.remove(Kind::Locks, &entry.name)?;
                continue;
            }
            if now_ms.saturating_sub(record.time) < LOCK_STALE_MS {
                out.push(record);
            }
        }
        Ok(out)
    }

    /// Take a lock: shared (`exclusive` false: copies, which only add) or
    /// exclusive (prune).
    pub fn lock(
        &self,
        exclusive: bool,
        host: &str,
        now_ms: u64,
    ) -> Result<RemoteLock<'_>, RemoteError> {
        let conflict = |l: &LockRecord| exclusive || l.exclusive;
        let locked = |l: &LockRecord| RemoteError::Locked {
            location: self.location(),
            holder: format!(
                "{} on {} (pid {}), since {}",
                if l.exclusive { "a prune" } else { "a copy" },
                l.host,
                l.pid,
                i64::try_from(l.time)
                    .ok()
                    .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
                    .map_or_else(|| "an unknown time".to_owned(), |t| t.to_string())
            ),
        };
        if let Some(l) = self
            .live_locks(now_ms, host, None)?
            .iter()
            .find(|l| conflict(l))
        {
            return Err(locked(l));
        }
        let record = LockRecord {
            format: "ffsession-remote-lock/1".into(),
            host: host.to_owned(),
            pid: std::process::id(),
            exclusive,
            time: now_ms,
        };
        let name = format!("{:016x}", super::opendal::random_u64());
        let bytes = self.seal(&serde_json::to_vec(&record).unwrap_or_default())?;
        self.backend.write(Kind::Locks, &name, &bytes)?;
        let lock = RemoteLock {
            remote: self,
            name,
            record,
        };
        if let Some(l) = self
            .live_locks(now_ms, host, Some(&lock.name))?
            .iter()
            .find(|l| conflict(l))
        {
            return Err(locked(l));
        }
        Ok(lock)
    }
}
