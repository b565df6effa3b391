//! Locks on a remote, as restic has them: a writer (`copy`) holds a shared
//! lock, `prune` an exclusive one. Each is an object `locks/<16 hex>`
//! (encrypted: the machine's identity and label, pid, kind, its clock's
//! time for people to read).
//!
//! Taking one: write ours, list the locks, and if a live one conflicts,
//! remove ours and refuse. Of two that race, each sees the other (both were
//! written before either listed), and both back off; neither goes on.
//!
//! Time on a shared remote is the server's, never a machine's (machines'
//! clocks disagree by hours, or go back): a lock is stale when the server
//! wrote it more than [`LOCK_STALE_MS`] before it wrote ours, both times from
//! one listing (`Entry::modified_ms`). A holder rewrites its lock every
//! third of that, counted on its own monotonic clock, so a live holder's
//! lock is never stale, whatever any clock says. A server that gives no
//! times (none of ours) falls back to the holders' clocks.
//!
//! A lock of this machine (its identity, not its label: two machines may
//! share a host name) whose process is gone is stale at once, and removed:
//! a copy killed here does not keep `prune` out for half an hour. A lock
//! written by an older ffsession carries no identity, and only its time
//! makes it stale.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::backend::{Entry, Kind};
use super::{Remote, RemoteError};
use crate::machine::Machine;

/// A lock the server wrote this long before ours is stale: 30 minutes.
pub const LOCK_STALE_MS: u64 = 30 * 60 * 1000;

/// How often a holder writes its lock again (its own monotonic clock).
const REFRESH: Duration = Duration::from_millis(LOCK_STALE_MS / 3);

#[derive(Debug, Clone, Serialize, Deserialize)]
struct LockRecord {
    format: String,
    /// The machine's label.
    host: String,
    /// The machine's identity (none in locks of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<String>,
    pid: u32,
    exclusive: bool,
    /// The holder's clock when it wrote the lock: shown, and compared only
    /// where the server gives no times.
    time: u64,
}

/// A lock held on a remote; dropping it removes it.
pub struct RemoteLock<'a> {
    remote: &'a Remote,
    name: String,
    record: LockRecord,
    machine: Machine,
    /// When this process last wrote it (its monotonic clock, and the
    /// system's: a machine asleep stops the first, not the second).
    written: Instant,
    written_wall: std::time::SystemTime,
    /// The server's time of that write, from the listing that followed.
    server_ms: Option<u64>,
}

impl std::fmt::Debug for RemoteLock<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RemoteLock({}, {})",
            self.name,
            if self.record.exclusive {
                "exclusive"
            } else {
                "shared"
            }
        )
    }
}

impl<'a> RemoteLock<'a> {
    /// True for an exclusive lock (prune's).
    pub fn is_exclusive(&self) -> bool {
        self.record.exclusive
    }

    /// The remote it locks.
    pub fn remote(&self) -> &'a Remote {
        self.remote
    }

    /// The machine that holds it.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The server's time now, as far as this lock knows it: the server's
    /// time of the lock's last write, plus what this process's monotonic
    /// clock counted since. `None` where the server gives no times.
    pub fn server_now_ms(&self) -> Option<u64> {
        let since = u64::try_from(self.written.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.server_ms.map(|ms| ms.saturating_add(since))
    }

    /// Write the lock again if a third of [`LOCK_STALE_MS`] has passed since
    /// it was written (this process's clock), so that it never goes stale
    /// while its holder works.
    pub fn refresh(&mut self) -> Result<(), RemoteError> {
        if self.written.elapsed() < REFRESH {
            return Ok(());
        }
        self.renew()
    }

    /// [`RemoteLock::renew`], unless the lock was written so recently that
    /// no other machine can have taken it for stale: less than a minute ago
    /// by this process's monotonic clock and by the system's (which goes on
    /// while the machine sleeps), whatever the server's clock says.
    pub fn renew_if_old(&mut self) -> Result<(), RemoteError> {
        const FRESH: Duration = Duration::from_secs(60);
        let wall = std::time::SystemTime::now().duration_since(self.written_wall);
        let fresh = self.written.elapsed() < FRESH && wall.is_ok_and(|d| d < FRESH);
        if fresh {
            return Ok(());
        }
        self.renew()
    }

    /// Write the lock again now (a new object; the old one removed after),
    /// and make sure no conflicting lock is live: a holder that was stopped
    /// long enough for its lock to go stale (a laptop asleep) learns here
    /// that a prune may have run meanwhile, and fails instead of saying
    /// its work is done.
    pub fn renew(&mut self) -> Result<(), RemoteError> {
        let mut record = self.record.clone();
        let since = u64::try_from(self.written.elapsed().as_millis()).unwrap_or(0);
        record.time = record.time.saturating_add(since);
        let name = random_name();
        let bytes = self
            .remote
            .seal(&serde_json::to_vec(&record).unwrap_or_default())?;
        self.remote.backend.write(Kind::Locks, &name, &bytes)?;
        let old = std::mem::replace(&mut self.name, name);
        self.record = record;
        self.written = Instant::now();
        self.written_wall = std::time::SystemTime::now();
        // The old one goes first: it is ours, and must not be taken for
        // another holder's.
        self.remote.backend.remove(Kind::Locks, &old)?;
        self.check()
    }

    /// List the locks: learn the server's time from ours, remove this
    /// machine's dead ones, and refuse if a live one conflicts.
    fn check(&mut self) -> Result<(), RemoteError> {
        let listed = self.remote.backend.list(Kind::Locks)?;
        let Some(ours) = listed.iter().find(|e| e.name == self.name) else {
            return Err(RemoteError::Locked {
                location: self.remote.location(),
                holder: "another machine: this one's lock was removed as soon as it was written (a prune or `unlock` elsewhere)".into(),
            });
        };
        self.server_ms = ours.modified_ms;
        let local_now = self.record.time;
        for entry in listed.iter().filter(|e| e.name != self.name) {
            let Some(record) = self.read_record(entry)? else {
                continue;
            };
            let this_machine = record.machine.as_deref() == Some(self.machine.id.as_str());
            if this_machine
                && record.pid != std::process::id()
                && !crate::profile::pid_alive(record.pid)
            {
                self.remote.backend.remove(Kind::Locks, &entry.name)?;
                continue;
            }
            let age = match (self.server_ms, entry.modified_ms) {
                (Some(now), Some(then)) => now.saturating_sub(then),
                // A server that gives no times: the holders' clocks.
                _ => local_now.saturating_sub(record.time),
            };
            if age >= LOCK_STALE_MS {
                continue;
            }
            if self.record.exclusive || record.exclusive {
                return Err(RemoteError::Locked {
                    location: self.remote.location(),
                    holder: describe(&record, age),
                });
            }
        }
        Ok(())
    }

    /// The record of lock `entry`; `None` for one that does not open (another
    /// identity's, or torn): it cannot hold anything of ours.
    fn read_record(&self, entry: &Entry) -> Result<Option<LockRecord>, RemoteError> {
        let Some(bytes) = self.remote.backend.read(Kind::Locks, &entry.name)? else {
            return Ok(None);
        };
        let Ok(plain) = self.remote.open_object(Kind::Locks, &entry.name, &bytes) else {
            return Ok(None);
        };
        Ok(serde_json::from_slice::<LockRecord>(&plain).ok())
    }
}

impl Drop for RemoteLock<'_> {
    fn drop(&mut self) {
        let _ = self.remote.backend.remove(Kind::Locks, &self.name);
    }
}

/// Who holds a lock, for the message that refuses.
fn describe(l: &LockRecord, age_ms: u64) -> String {
    let machine = match &l.machine {
        Some(id) => format!("{} ({})", l.host, crate::machine::short(id)),
        None => l.host.clone(),
    };
    format!(
        "{} on {machine} (pid {}), written {} ago by the server's clock",
        if l.exclusive { "a prune" } else { "a copy" },
        l.pid,
        human_age(age_ms)
    )
}

fn human_age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

fn random_name() -> String {
    format!("{:016x}", super::opendal::random_u64())
}

impl Remote {
    /// Take a lock: shared (`exclusive` false: copies, which only add) or
    /// exclusive (prune), for `machine`, whose clock says `now_ms` (written
    /// into the lock for people to read; never compared with the server's
    /// or another machine's, but where the server gives no times).
    pub fn lock(
        &self,
        exclusive: bool,
        machine: &Machine,
        now_ms: u64,
    ) -> Result<RemoteLock<'_>, RemoteError> {
        let record = LockRecord {
            format: "ffsession-remote-lock/1".into(),
            host: machine.label.clone(),
            machine: Some(machine.id.clone()),
            pid: std::process::id(),
            exclusive,
            time: now_ms,
        };
        let name = random_name();
        let bytes = self.seal(&serde_json::to_vec(&record).unwrap_or_default())?;
        self.backend.write(Kind::Locks, &name, &bytes)?;
        // From here, dropping the lock removes it (a refusal too).
        let mut lock = RemoteLock {
            remote: self,
            name,
            record,
            machine: machine.clone(),
            written: Instant::now(),
            written_wall: std::time::SystemTime::now(),
            server_ms: None,
        };
        lock.check()?;
        Ok(lock)
    }
}

#[cfg(test)]
mod tests {
    use super::human_age;

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(human_age(5_000), "5 s");
        assert_eq!(human_age(125_000), "2 min");
        assert_eq!(human_age(2 * 3_600_000 + 60_000), "2 h 1 min");
    }
}
