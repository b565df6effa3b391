//! The storage behind a remote store: one small trait (list, read, write,
//! remove, by kind and name), as rustic_core's `ReadBackend`/`WriteBackend`;
//! the store logic never knows which backend it talks to.
//!
//! Objects are immutable and named by what they hold, so a write never
//! replaces a different object: backends that can rename write under a
//! temporary name first (`.tmp-*`, never listed), so an object that is
//! listed is whole; S3 puts are atomic. Every object is encrypted and
//! authenticated, and checked against its name when read, so even a torn
//! object could never be taken for a whole one.

#[cfg(debug_assertions)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::RemoteError;

/// One object of [`Backend::read_many`]: its bytes, `None` if there is no
/// such object, or why it could not be read (unreadable, for now: the
/// server failed that read, or gave nothing for [`read_timeout`]).
pub type ReadResult = Result<Option<Vec<u8>>, RemoteError>;

/// The longest one object's read may take in [`Backend::read_many`] before
/// it counts as unreadable and the others go on. An object is at most
/// about 100 KiB (a chunk is at most 64 KiB before it is sealed; a content
/// record lists a few thousand chunks), so 30 s is a slow link's time for
/// eight of them at once many times over, and a loaded 2-core machine's
/// loopback reads one in milliseconds; only a read that hangs (a server
/// stuck on that one file, a named pipe where the object should be) waits
/// that long. (OpenDAL's own stall timeout is 30 s too, `opendal.rs`.)
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

#[cfg(debug_assertions)]
static READ_TIMEOUT_MS: AtomicU64 = AtomicU64::new(0);

/// The per-object read timeout in force: [`READ_TIMEOUT`] unless a test
/// set another (`set_read_timeout`, debug builds only).
pub fn read_timeout() -> Duration {
    #[cfg(debug_assertions)]
    if let ms @ 1.. = READ_TIMEOUT_MS.load(Ordering::SeqCst) {
        return Duration::from_millis(ms);
    }
    READ_TIMEOUT
}

/// TEST HOOK, for the fault tests only (debug builds): make
/// [`read_timeout`] `timeout` (a hanging read is then found in seconds).
#[cfg(debug_assertions)]
#[doc(hidden)]
pub fn set_read_timeout(timeout: Duration) {
    let ms = u64::try_from(timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    READ_TIMEOUT_MS.store(ms, Ordering::SeqCst);
}

/// The results of one [`Backend::read_many`], or the whole call's failure:
/// when some read failed, `alive` asks the server something else (a
/// listing); if that fails too, or every read of several failed, the server
/// is gone or refuses everything (a connection lost, credentials refused),
/// and its error (the first read's) is the call's. Otherwise each failed
/// read is only that object's: the snapshots that need it wait, the rest
/// goes on.
pub(super) fn settle_reads(
    got: Vec<ReadResult>,
    alive: impl FnOnce() -> Result<(), RemoteError>,
) -> Result<Vec<ReadResult>, RemoteError> {
    if !got.iter().any(Result::is_err) {
        return Ok(got);
    }
    let all_failed = got.len() > 1 && got.iter().all(Result::is_err);
    if all_failed || alive().is_err() {
        if let Some(Err(e)) = got.into_iter().find(Result::is_err) {
            return Err(e);
        }
        unreachable!("a read failed");
    }
    Ok(got)
}

/// TEST HOOK, for the fault tests only: after this many objects written to
/// (or removed from) any remote, the process dies at once (as under
/// SIGKILL); and each write waits this long first. Unset (0), nothing
/// changes. Debug builds only: a release build has none of it.
#[cfg(debug_assertions)]
static KILL_AFTER_WRITES: AtomicU64 = AtomicU64::new(0);
#[cfg(debug_assertions)]
static WRITE_DELAY_MS: AtomicU64 = AtomicU64::new(0);
#[cfg(debug_assertions)]
static WRITES: AtomicU64 = AtomicU64::new(0);
/// TEST HOOK: how long the first object write of this process waits (a
/// new remote's key, stored late: two machines creating one remote).
#[cfg(debug_assertions)]
static FIRST_WRITE_DELAY_MS: AtomicU64 = AtomicU64::new(0);

/// Set the test hook: the first object write waits `delay_ms`.
#[cfg(debug_assertions)]
#[doc(hidden)]
pub fn set_first_write_delay(delay_ms: u64) {
    FIRST_WRITE_DELAY_MS.store(delay_ms, Ordering::SeqCst);
}

/// Set the test hook: die after `kill_after_writes` object writes (counting
/// from 1; `None` never), and wait `delay_ms` before each.
#[cfg(debug_assertions)]
#[doc(hidden)]
pub fn set_test_hook(kill_after_writes: Option<u64>, delay_ms: u64) {
    KILL_AFTER_WRITES.store(kill_after_writes.map_or(0, |n| n + 1), Ordering::SeqCst);
    WRITE_DELAY_MS.store(delay_ms, Ordering::SeqCst);
}

/// Called by backends before each object write.
#[cfg(not(debug_assertions))]
pub(super) fn before_write() {}

/// Called by backends after each object written whole, or removed.
#[cfg(not(debug_assertions))]
pub(super) fn after_write() {}

/// Called by backends before each object write.
#[cfg(debug_assertions)]
pub(super) fn before_write() {
    let first = FIRST_WRITE_DELAY_MS.swap(0, Ordering::SeqCst);
    if first > 0 {
        std::thread::sleep(std::time::Duration::from_millis(first));
    }
    let ms = WRITE_DELAY_MS.load(Ordering::SeqCst);
    if ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Called by backends after each object written whole, or removed.
#[cfg(debug_assertions)]
pub(super) fn after_write() {
    let limit = KILL_AFTER_WRITES.load(Ordering::SeqCst);
    if limit > 0 && WRITES.fetch_add(1, Ordering::SeqCst) + 2 >= limit {
        // SIGKILL, as `kill -9` would end it (no core file, no cleanup).
        #[cfg(unix)]
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort();
    }
}

/// The kinds of object a remote store holds, each in its own folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `ffsession-remote.json` at the top: what this location is (no secret).
    Marker,
    /// `keys/<name>`: the remote's identity, wrapped with a password.
    Keys,
    /// `locks/<name>`: who is copying or pruning.
    Locks,
    /// `snapshots/<name>`: one per snapshot, written last.
    Snapshots,
    /// `contents/<name>`: one per distinct content: its chunks in order.
    Contents,
    /// `chunks/<2 hex>/<name>`: one zstd frame each.
    Chunks,
    /// `marks/<name>`: what a store knows of its snapshots besides their
    /// records (tabs `tidy` archived, undo points), written after them.
    Marks,
    /// `pruned/<name>`: one per snapshot a prune removed, written before
    /// its record is removed (`pruned.rs`).
    Pruned,
    /// `damaged/<name>`: one per object a check found damaged or missing,
    /// for any machine's next copy to send again (`damage.rs`).
    Damaged,
    /// `unused/<name>`: the objects a prune found no snapshot names, kept
    /// until a later prune finds them still unused and old enough
    /// (`prune.rs`).
    Unused,
}

/// When a temporary file may go: written before `before` (`None`: any).
pub(super) fn temporary_due(before: Option<u64>, modified_ms: Option<u64>) -> bool {
    match (before, modified_ms) {
        (None, _) => true,
        (Some(b), Some(m)) => m < b,
        (Some(_), None) => false,
    }
}

impl Kind {
    /// Every kind, in the order of the layout.
    pub const ALL: [Kind; 10] = [
        Kind::Marker,
        Kind::Keys,
        Kind::Locks,
        Kind::Snapshots,
        Kind::Contents,
        Kind::Chunks,
        Kind::Marks,
        Kind::Pruned,
        Kind::Damaged,
        Kind::Unused,
    ];

    /// The folder of this kind of object.
    pub fn dir(self) -> &'static str {
        match self {
            Kind::Marker => "",
            Kind::Keys => "keys",
            Kind::Locks => "locks",
            Kind::Snapshots => "snapshots",
            Kind::Contents => "contents",
            Kind::Chunks => "chunks",
            Kind::Marks => "marks",
            Kind::Pruned => "pruned",
            Kind::Damaged => "damaged",
            Kind::Unused => "unused",
        }
    }

    /// The path of object `name` of this kind, relative to the store's top.
    pub fn path(self, name: &str) -> String {
        match self {
            Kind::Marker => name.to_owned(),
            Kind::Chunks if name.len() > 2 => format!("chunks/{}/{name}", &name[..2]),
            _ => format!("{}/{name}", self.dir()),
        }
    }

    /// True for the name of a temporary file a write left.
    pub fn is_temporary(name: &str) -> bool {
        name.starts_with(".tmp-") || crate::fs_util::is_temp_file_name(name)
    }

    /// True for a name a backend may hold as an object of this kind (not a
    /// temporary file, no path separator).
    pub fn valid_name(name: &str) -> bool {
        !name.is_empty()
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    }
}

/// One object a listing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name (without folder).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// When the server last wrote it (ms since the epoch, on the server's
    /// own clock: the file system's for a folder), where the service says.
    /// Every decision that weighs time on a shared remote (a lock gone
    /// stale, an unused object old enough to remove) compares two of
    /// these, never a machine's clock with the server's.
    pub modified_ms: Option<u64>,
}

/// A place objects are kept.
pub trait Backend: Send + Sync {
    /// The location, for messages.
    fn location(&self) -> String;

    /// Every object of `kind` (temporary files left out).
    fn list(&self, kind: Kind) -> Result<Vec<Entry>, RemoteError>;

    /// The chunks in the fan-out folders `fans` (the first two hex digits
    /// of their names): a listing of some of the chunks, where the service
    /// lists one folder per request (a folder, SFTP); every chunk listed,
    /// then those kept, elsewhere.
    fn list_chunks_in(
        &self,
        fans: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<Entry>, RemoteError> {
        Ok(self
            .list(Kind::Chunks)?
            .into_iter()
            .filter(|e| e.name.get(..2).is_some_and(|f| fans.contains(f)))
            .collect())
    }

    /// Object `name` of `kind`; `None` if there is none.
    fn read(&self, kind: Kind, name: &str) -> Result<Option<Vec<u8>>, RemoteError>;

    /// Write object `name` of `kind` whole: after this returns, a listing
    /// shows it and a read gives exactly `bytes`; a failure leaves either no
    /// object of that name or the one that was there.
    fn write(&self, kind: Kind, name: &str, bytes: &[u8]) -> Result<(), RemoteError>;

    /// Write object `name` of `kind` only if there is none of that name yet:
    /// `Ok(false)` if there was (it is left as it was). Exclusive where the
    /// service can say so atomically (a folder: a hard link; S3: a
    /// conditional put; SFTP: a rename, which does not replace); elsewhere a
    /// look then a write.
    fn write_new(&self, kind: Kind, name: &str, bytes: &[u8]) -> Result<bool, RemoteError> {
        if self.read(kind, name)?.is_some() {
            return Ok(false);
        }
        self.write(kind, name, bytes)?;
        Ok(true)
    }

    /// Remove the temporary files interrupted writes left that the server
    /// wrote before `written_before_ms` (its own clock; `None`: every one),
    /// so that a writer still at work never loses the file it is writing
    /// (`prune`, under its exclusive lock, passes its safety margin);
    /// returns how many.
    fn remove_temporary(&self, written_before_ms: Option<u64>) -> Result<u64, RemoteError>;

    /// True if [`Backend::write_new`] is atomic on this service (a folder,
    /// SFTP): two writers of one name cannot both succeed.
    fn atomic_create(&self) -> bool {
        false
    }

    /// Remove object `name` of `kind` (no error if it is gone).
    fn remove(&self, kind: Kind, name: &str) -> Result<(), RemoteError>;

    /// True if the location holds nothing at all yet.
    fn is_empty(&self) -> Result<bool, RemoteError>;

    /// Write several objects, as many at once as the backend does well;
    /// `done` is told the bytes of each one written. Stops at the first
    /// failure (objects written before it stay: each is whole).
    fn write_many(
        &self,
        items: Vec<(Kind, String, Vec<u8>)>,
        done: &mut dyn FnMut(u64),
    ) -> Result<(), RemoteError> {
        for (kind, name, bytes) in items {
            self.write(kind, &name, &bytes)?;
            done(bytes.len() as u64);
        }
        Ok(())
    }

    /// Read several objects, as many at once as the backend does well, in
    /// the order given; `done` is told the bytes of each one read.
    ///
    /// Each object has its own result ([`ReadResult`]): a read the server
    /// failed for that object (a folder where the object should be, an
    /// error status) or that gave nothing for [`read_timeout`] is that
    /// object's `Err`, and the others are read. The whole call fails only
    /// when the server itself is gone: it no longer answers a listing, or
    /// every read of several failed (`settle_reads`).
    fn read_many(
        &self,
        items: Vec<(Kind, String)>,
        done: &mut dyn FnMut(u64),
    ) -> Result<Vec<ReadResult>, RemoteError> {
        let got: Vec<ReadResult> = items
            .into_iter()
            .map(|(kind, name)| {
                let got = self.read(kind, &name);
                if let Ok(b) = &got {
                    done(b.as_ref().map_or(0, |b| b.len() as u64));
                }
                got
            })
            .collect();
        settle_reads(got, || self.list(Kind::Keys).map(|_| ()))
    }
}

#[cfg(test)]
mod tests {
    use super::{settle_reads, ReadResult, RemoteError};

    fn failed(path: &str) -> RemoteError {
        RemoteError::Backend {
            location: "l".into(),
            op: "read",
            path: path.into(),
            reason: "refused".into(),
            full: false,
        }
    }

    #[test]
    fn one_failed_read_is_its_own_and_a_server_that_is_gone_fails_the_call() {
        let some = || -> Vec<ReadResult> { vec![Ok(Some(vec![1])), Err(failed("b")), Ok(None)] };
        // The server answers: only "b" failed.
        let got = settle_reads(some(), || Ok(())).unwrap();
        assert!(matches!(got[1], Err(RemoteError::Backend { ref path, .. }) if path == "b"));
        assert!(matches!(got[0], Ok(Some(_))) && matches!(got[2], Ok(None)));
        // It does not: the call fails, with the read's error.
        let gone = settle_reads(some(), || Err(failed("keys/"))).unwrap_err();
        assert!(matches!(gone, RemoteError::Backend { ref path, .. } if path == "b"));
        // Every read of several failed: the call fails too.
        let all = settle_reads(vec![Err(failed("a")), Err(failed("b"))], || Ok(()));
        assert!(all.is_err());
        // One read alone that failed, the server answering: that object's.
        assert!(settle_reads(vec![Err(failed("a"))], || Ok(())).unwrap()[0].is_err());
        // Nothing failed: the server is not asked.
        let fine = settle_reads(vec![Ok(None)], || panic!("asked")).unwrap();
        assert!(matches!(fine[0], Ok(None)));
    }
}
