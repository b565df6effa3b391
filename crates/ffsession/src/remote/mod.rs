//! Remote stores: encrypted copies of a store off the machine (issue 23).
//!
//! A remote store keeps the same kinds of objects as a local store (chunks,
//! content manifests, snapshot records), each encrypted and authenticated
//! on the client with age, in a folder, on an SFTP server, in an S3 bucket
//! or on a WebDAV server. It holds no database: every object is immutable
//! and named by a keyed digest of what it holds (`objects.rs`), so several
//! machines write into one remote without ever writing the same name with
//! different contents.
//!
//! - `backend.rs`: the [`Backend`] trait (list, read, write, remove by kind
//!   and name); `local.rs` a folder, `opendal.rs` + `services.rs` S3 and
//!   WebDAV through Apache OpenDAL, `sftp.rs` SFTP over an `ssh` child of
//!   our own (`ssh.rs`).
//! - `crypto.rs`: the identity, its password-wrapped key files, sealing and
//!   opening objects, object names.
//! - `kept.rs`: the identity kept on a machine that opened the remote, so
//!   the next command needs no password (and no scrypt).
//! - `copy.rs`: sending the local snapshots a remote lacks.
//! - `sync.rs`: bringing a remote's snapshots into a local store (a cache).
//! - `check.rs`: reading a remote back (`--read-data`: every chunk).
//! - `prune.rs`: removing snapshots, then what no snapshot record names,
//!   in two passes a safety margin apart on the server's clock.
//! - `lock.rs`: the lock objects that keep `prune` away from writers,
//!   judged stale on the server's clock.
//!
//! Order of writes, so that a crash or a lost connection at any moment
//! leaves the remote readable and the next run finishes the job: chunks,
//! then content records, then snapshot records; an object is listed only
//! once it is whole (a temporary name and a rename where the service can,
//! an atomic put on S3), and a reader checks every object against its name.

mod backend;
mod check;
mod copy;
mod crypto;
mod damage;
mod error;
mod kept;
mod local;
mod location;
mod lock;
mod marks;
mod objects;
mod opendal;
mod prune;
mod pruned;
mod services;
#[cfg(unix)]
mod sftp;
#[cfg(unix)]
mod ssh;
mod sync;

pub use backend::{read_timeout, Backend, Entry, Kind, ReadResult, READ_TIMEOUT};
#[cfg(debug_assertions)]
pub use backend::{set_first_write_delay, set_read_timeout, set_test_hook};
pub use check::{check_remote, DamagedObject, RemoteCheckProgress, RemoteCheckReport};
pub use copy::{copy_to_remote, CopyProgress, CopyReport};
pub use damage::{clear_damage, note_damage, noted_damage};
pub use error::RemoteError;
pub use kept::{KeptKey, KeptRefused};
pub use location::Location;
pub use lock::{RemoteLock, LOCK_STALE_MS};
pub use objects::RemoteSnapshot;
pub use prune::{prune_remote, PruneOptions, RemotePruneReport, KEEP_UNUSED_MS};
pub use services::{open_backend, RemoteOptions};
pub use sync::{missing_on_remote, sync_from_remote, SyncProgress, SyncReport};

use crypto::{Keys, Unwrap};
use objects::{Marker, MARKER};

/// An open remote store: its backend and its unlocked keys.
pub struct Remote {
    backend: Box<dyn Backend>,
    keys: Keys,
    /// The key file (wrapped with the password) that opened it.
    key_file: Vec<u8>,
    /// Its name on the remote (`None`: a spare kept elsewhere opened it).
    key_name: Option<String>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Remote({})", self.backend.location())
    }
}

/// How a new remote's key is made.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyParams {
    /// scrypt's work factor (log2 N); age's calibration (about a second on
    /// this machine) when `None`.
    pub log_n: Option<u8>,
}

impl Remote {
    /// The location, for messages.
    pub fn location(&self) -> String {
        self.backend.location()
    }

    /// The object name of local snapshot `info` on this remote (whoever
    /// sent it).
    pub fn snapshot_name(&self, info: &crate::store::SnapshotInfo) -> String {
        RemoteSnapshot::bare(info).name(&self.keys)
    }

    /// The backend (for tests and tools that look at the raw objects).
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// Open the remote store behind `backend` with `password`. Writes
    /// nothing unless the password opens a key (then only the marker, if a
    /// crash lost it).
    pub fn open(backend: Box<dyn Backend>, password: &str) -> Result<Remote, RemoteError> {
        Self::open_with_spare(backend, password, None)
    }

    /// [`Remote::open`], and when no key file on the remote opens (every
    /// copy damaged or gone), `spare`: a copy of its key file kept
    /// elsewhere (the remote's local copy keeps one,
    /// [`Remote::key_file`]). [`Remote::repair_keys`] then puts it back.
    pub fn open_with_spare(
        backend: Box<dyn Backend>,
        password: &str,
        spare: Option<&[u8]>,
    ) -> Result<Remote, RemoteError> {
        match (Self::open_remote_keys(backend, password), spare) {
            (Ok(remote), _) => Ok(remote),
            (Err(OpenFailed { backend, error }), Some(spare)) => {
                // Only where the remote's keys are damaged or gone: a wrong
                // password stays wrong.
                let lost = matches!(
                    error,
                    RemoteError::Damaged { .. } | RemoteError::WrongPassword { .. }
                );
                match Keys::unwrap(spare, password) {
                    Ok(keys) if lost => Ok(Remote {
                        backend,
                        keys,
                        key_file: spare.to_vec(),
                        key_name: None,
                    }),
                    _ => Err(error),
                }
            }
            (Err(f), None) => Err(f.error),
        }
    }

    /// The key file (wrapped with the password) that opened this remote:
    /// kept by a reader as a spare.
    pub fn key_file(&self) -> &[u8] {
        &self.key_file
    }

    /// Make sure the remote holds at least two intact copies of the key
    /// file that opened it (one damaged object never loses the remote):
    /// writes the missing copies, after the original by name. Returns how
    /// many it wrote.
    pub fn repair_keys(&self) -> Result<u64, RemoteError> {
        let listed = self.backend.list(Kind::Keys)?;
        let mut intact = Vec::new();
        for e in &listed {
            if self.backend.read(Kind::Keys, &e.name)?.as_deref() == Some(&self.key_file[..]) {
                intact.push(e.name.clone());
            }
        }
        let base = intact
            .first()
            .cloned()
            .unwrap_or_else(|| format!("{:016x}", opendal::random_u64()));
        let mut written = 0;
        let mut n = 0;
        while intact.len() < KEY_COPIES {
            n += 1;
            let name = if intact.is_empty() {
                base.clone()
            } else {
                format!("{base}-copy{n}")
            };
            if listed.iter().any(|e| e.name == name) && !intact.contains(&name) {
                // A damaged copy under that name: written over.
                self.backend.remove(Kind::Keys, &name)?;
            } else if intact.contains(&name) {
                continue;
            }
            self.backend.write(Kind::Keys, &name, &self.key_file)?;
            intact.push(name);
            written += 1;
        }
        // What was written is there, whole, before it counts: a remote is
        // never said made (or repaired) with a key that does not read back.
        for name in intact.iter().rev().take(written as usize) {
            if self.backend.read(Kind::Keys, name)?.as_deref() != Some(&self.key_file[..]) {
                return Err(self.damaged(Kind::Keys.path(name), "written, and not read back whole"));
            }
        }
        Ok(written)
    }

    /// Try every key file of the remote; on failure, give the backend back.
    fn open_remote_keys(backend: Box<dyn Backend>, password: &str) -> Result<Remote, OpenFailed> {
        let fail = |backend, error| Err(OpenFailed { backend, error });
        let location = backend.location();
        let marker = match backend.read(Kind::Marker, MARKER) {
            Ok(m) => m,
            Err(e) => return fail(backend, e),
        };
        let key_files = match backend.list(Kind::Keys) {
            Ok(k) => k,
            Err(e) => return fail(backend, e),
        };
        if key_files.is_empty() {
            let empty = match backend.is_empty() {
                Ok(x) => x,
                Err(e) => return fail(backend, e),
            };
            let error = if marker.is_none() && !empty {
                RemoteError::NotARemote { location }
            } else if marker.is_some() {
                RemoteError::Damaged {
                    location,
                    object: "keys/".into(),
                    reason: "the remote has no key: its keys/ folder is empty".into(),
                }
            } else {
                RemoteError::Missing { location }
            };
            return fail(backend, error);
        }
        match Self::open_keys(backend.as_ref(), password, marker, key_files) {
            Ok((keys, key_file, name)) => Ok(Remote {
                backend,
                keys,
                key_file,
                key_name: Some(name),
            }),
            Err(e) => fail(backend, e),
        }
    }

    /// The first key file (by name) `password` opens, its bytes and name.
    fn open_keys(
        backend: &dyn Backend,
        password: &str,
        marker: Option<Vec<u8>>,
        key_files: Vec<Entry>,
    ) -> Result<(Keys, Vec<u8>, String), RemoteError> {
        let location = backend.location();
        if let Some(m) = &marker {
            check_marker(&location, m)?;
        }
        // The first key (by name) the password opens: two machines that
        // created the remote at once agree on it (see `create`).
        let mut damaged = None;
        for entry in &key_files {
            let Some(bytes) = backend.read(Kind::Keys, &entry.name)? else {
                continue;
            };
            match Keys::unwrap(&bytes, password) {
                Ok(keys) => {
                    if marker.is_none() {
                        write_marker(backend)?;
                    }
                    return Ok((keys, bytes, entry.name.clone()));
                }
                Err(Unwrap::WrongPassword) => {}
                Err(Unwrap::Damaged(why)) => damaged = Some((entry.name.clone(), why)),
            }
        }
        if let (Some((name, reason)), 1) = (damaged, key_files.len()) {
            return Err(RemoteError::Damaged {
                location,
                object: Kind::Keys.path(&name),
                reason,
            });
        }
        Err(RemoteError::WrongPassword {
            location,
            keys: key_files.len(),
        })
    }

    /// Create a remote store behind `backend` (an empty location), its key
    /// wrapped with `password`; `note` goes into the key's comment line. A
    /// location that already holds a remote store is opened instead.
    pub fn create(
        backend: Box<dyn Backend>,
        password: &str,
        params: KeyParams,
        note: &str,
    ) -> Result<Remote, RemoteError> {
        Self::create_or_join(backend, password, params, note).map(|(r, _)| r)
    }

    /// [`Remote::create`], and whether this call's key is the remote's
    /// (false: the remote was there, or another machine creating it at
    /// the same moment won, and its key is used).
    fn create_or_join(
        backend: Box<dyn Backend>,
        password: &str,
        params: KeyParams,
        note: &str,
    ) -> Result<(Remote, bool), RemoteError> {
        let location = backend.location();
        let open = |backend| Self::open(backend, password).map(|r| (r, false));
        if backend.read(Kind::Marker, MARKER)?.is_some() || !backend.list(Kind::Keys)?.is_empty() {
            return open(backend);
        }
        if !backend.is_empty()? {
            // Another machine creating this remote at this moment: its key
            // appears within moments of its first object.
            let deadline = std::time::Instant::now() + CREATE_SETTLE;
            while std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if !backend.list(Kind::Keys)?.is_empty() {
                    return open(backend);
                }
            }
            return Err(RemoteError::NotARemote { location });
        }
        let keys = Keys::generate();
        let file =
            keys.wrap(password, params.log_n, note)
                .map_err(|reason| RemoteError::Damaged {
                    location: location.clone(),
                    object: "keys/".into(),
                    reason,
                })?;
        // Of two machines creating this remote at once, one key must win,
        // and both must use it. Where the service can create a name
        // exclusively (a folder, SFTP), the first key has a fixed name,
        // written only if there is none. Elsewhere (S3 servers that ignore
        // conditional puts, WebDAV) each writes a key of its own, waits,
        // and uses the key the server stored first that the password
        // opens: by the server's times, never the machines' clocks. A
        // machine lists only after its own key is stored, so it sees every
        // key stored before it: the first one stored sees none and keeps
        // its own, and every other sees that one. (The names, by each
        // machine's clock, only break ties of the server's times, which
        // CREATE_SETTLE outlasts, and order keys where the service gives no
        // times.)
        if backend.atomic_create() {
            if !backend.write_new(Kind::Keys, FIRST_KEY, &file)? {
                return open(backend);
            }
            let remote = Remote {
                backend,
                keys,
                key_file: file,
                key_name: Some(FIRST_KEY.to_owned()),
            };
            remote.repair_keys()?;
            write_marker(remote.backend.as_ref())?;
            return Ok((remote, true));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let name = format!("{now:016}-{:016x}", opendal::random_u64());
        backend.write(Kind::Keys, &name, &file)?;
        std::thread::sleep(CREATE_SETTLE);
        let mut listed = backend.list(Kind::Keys)?;
        first_stored_first(&mut listed);
        let (mut keys, mut key_file, mut ours, mut key_name) = (keys, file, true, name.clone());
        // Each try of another key is a slow KDF: only those stored before
        // ours are tried.
        for other in listed.into_iter().take_while(|e| e.name != name) {
            let Some(bytes) = backend.read(Kind::Keys, &other.name)? else {
                continue;
            };
            if let Ok(theirs) = Keys::unwrap(&bytes, password) {
                backend.remove(Kind::Keys, &name)?;
                keys = theirs;
                key_file = bytes;
                ours = false;
                key_name = other.name;
                break;
            }
        }
        let remote = Remote {
            backend,
            keys,
            key_file,
            key_name: Some(key_name),
        };
        remote.repair_keys()?;
        write_marker(remote.backend.as_ref())?;
        Ok((remote, ours))
    }

    /// Open the remote store, or create it if the location is empty.
    /// Returns it and whether this call created it (of two machines
    /// creating one remote at once, only the one whose key won).
    pub fn open_or_create(
        backend: Box<dyn Backend>,
        password: &str,
        params: KeyParams,
        note: &str,
    ) -> Result<(Remote, bool), RemoteError> {
        let fresh =
            backend.read(Kind::Marker, MARKER)?.is_none() && backend.list(Kind::Keys)?.is_empty();
        if fresh {
            Self::create_or_join(backend, password, params, note)
        } else {
            Ok((Self::open(backend, password)?, false))
        }
    }

    /// Add a key (another password) to this remote.
    pub fn add_key(
        &self,
        password: &str,
        params: KeyParams,
        note: &str,
    ) -> Result<(), RemoteError> {
        let file = self
            .keys
            .wrap(password, params.log_n, note)
            .map_err(|reason| self.damaged("keys/", reason))?;
        let name = format!("{:016x}", opendal::random_u64());
        self.backend.write(Kind::Keys, &name, &file)
    }

    fn damaged(&self, object: impl Into<String>, reason: impl Into<String>) -> RemoteError {
        RemoteError::Damaged {
            location: self.location(),
            object: object.into(),
            reason: reason.into(),
        }
    }

    /// Encrypt `plain` for this remote.
    fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, RemoteError> {
        self.keys
            .seal(plain)
            .map_err(|e| self.damaged("(encrypting)", e))
    }

    /// Decrypt object `name` of `kind`.
    /// (The kind and name say which object failed, in the caller's error.)
    fn open_object(&self, _kind: Kind, _name: &str, bytes: &[u8]) -> Result<Vec<u8>, String> {
        self.keys.open(bytes)
    }
}

/// How many intact copies of its key file a remote keeps
/// ([`Remote::repair_keys`]).
const KEY_COPIES: usize = 2;

/// [`Remote::open`] failed: why, and the backend back for a spare key.
struct OpenFailed {
    backend: Box<dyn Backend>,
    error: RemoteError,
}

/// The name of a remote's first key, where names can be created
/// exclusively.
const FIRST_KEY: &str = "0000000000000000";

/// Keys in the order the server stored them: by its times where it gives
/// every key's, the name (a machine's clock when it wrote) breaking ties;
/// by name where it does not.
fn first_stored_first(keys: &mut [Entry]) {
    if keys.iter().all(|e| e.modified_ms.is_some()) {
        keys.sort_by(|a, b| (a.modified_ms, &a.name).cmp(&(b.modified_ms, &b.name)));
    } else {
        keys.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// How long a new remote's creator waits for another creator's key (see
/// `Remote::create`): longer than the coarsest times a service gives
/// (WebDAV's, whole seconds).
const CREATE_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Refuse a marker that is not this format's.
fn check_marker(location: &str, m: &[u8]) -> Result<(), RemoteError> {
    let parsed: Result<Marker, _> = serde_json::from_slice(m);
    match parsed {
        Ok(m) if m.format == objects::REMOTE_FORMAT => Ok(()),
        Ok(m) => Err(RemoteError::Damaged {
            location: location.to_owned(),
            object: MARKER.into(),
            reason: format!("unknown format {:?} (a newer ffsession?)", m.format),
        }),
        Err(e) => Err(RemoteError::Damaged {
            location: location.to_owned(),
            object: MARKER.into(),
            reason: e.to_string(),
        }),
    }
}

/// Write the marker, and read it back: a new remote is said made only once
/// what tells it is one is there.
fn write_marker(backend: &dyn Backend) -> Result<(), RemoteError> {
    let mut bytes = serde_json::to_vec_pretty(&Marker::new()).unwrap_or_default();
    bytes.push(b'\n');
    backend.write(Kind::Marker, MARKER, &bytes)?;
    match backend.read(Kind::Marker, MARKER)? {
        Some(back) => check_marker(&backend.location(), &back),
        None => Err(RemoteError::Damaged {
            location: backend.location(),
            object: MARKER.into(),
            reason: "written, and not there when read back".into(),
        }),
    }
}
