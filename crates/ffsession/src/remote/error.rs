//! Errors of remote stores: each names the location (never a password) and
//! says what to do.

use crate::store::StoreError;
use crate::Hint;

/// What went wrong with a remote store.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// A `--store`/`--to` value that is not a location ffsession knows.
    #[error("{location}: {reason}")]
    Location {
        /// The value as given.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// This kind of location cannot be used on this system.
    #[error("{location}: {reason}")]
    Unsupported {
        /// The location.
        location: String,
        /// Why not.
        reason: String,
    },
    /// The server could not be reached, or refused an operation.
    #[error("{location}: {op}{}: {reason}", if path.is_empty() { String::new() } else { format!(" {path}") })]
    Backend {
        /// The location.
        location: String,
        /// What was being done (`list`, `read`, `write`, `remove`).
        op: &'static str,
        /// The object's path inside the location.
        path: String,
        /// What the server or the connection said.
        reason: String,
        /// True when the server says it is out of space.
        full: bool,
    },
    /// `ssh` refused the server: its host key is not in `known_hosts` yet,
    /// or differs from the one there (host keys are checked strictly).
    #[error("{location}: {}", if *changed {
        format!("the host key of {host} differs from the one known_hosts holds for it (ssh refused to connect: the server was reinstalled, or someone is in between)")
    } else {
        format!("the host key of {host} is not known yet: ssh checks host keys strictly and refused to connect")
    })]
    HostKey {
        /// The location.
        location: String,
        /// The host, as known_hosts names it (`[host]:port` for a port
        /// other than 22).
        host: String,
        /// True: known_hosts holds another key for it.
        changed: bool,
        /// The `ssh` command that shows the key and accepts it.
        command: String,
    },
    /// The location holds files but is not an ffsession remote store.
    #[error("{location}: not an ffsession remote store (it holds other files and no ffsession-remote.json)")]
    NotARemote {
        /// The location.
        location: String,
    },
    /// No remote store at this location yet.
    #[error("{location}: no remote store here yet")]
    Missing {
        /// The location.
        location: String,
    },
    /// The password opens none of the remote's keys.
    #[error("{location}: wrong password: it opens none of the {keys} key(s) in keys/")]
    WrongPassword {
        /// The location.
        location: String,
        /// How many keys were tried.
        keys: usize,
    },
    /// An object on the remote does not decrypt or does not match its name.
    #[error("{location}: {object}: {reason}")]
    Damaged {
        /// The location.
        location: String,
        /// The object's path.
        object: String,
        /// What is wrong.
        reason: String,
    },
    /// Another ffsession holds a lock that forbids this.
    #[error("{location}: locked by {holder}")]
    Locked {
        /// The location.
        location: String,
        /// Who holds it (host, pid, since when).
        holder: String,
    },
    /// A copy ended with objects its snapshots need still not on the
    /// remote (removed as fast as they were sent): it is not done.
    #[error("{location}: the copy is not whole: {} {} still not on the remote after sending again ({}{})", missing.len(), if missing.len() == 1 { "object its snapshots need is" } else { "objects its snapshots need are" }, missing.iter().take(3).cloned().collect::<Vec<_>>().join(", "), if missing.len() > 3 { ", ..." } else { "" })]
    Incomplete {
        /// The location.
        location: String,
        /// The paths of the objects missing.
        missing: Vec<String>,
    },
    /// The local store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl RemoteError {
    /// What to do about it.
    pub fn hint(&self) -> Option<Hint> {
        match self {
            RemoteError::HostKey {
                host,
                changed,
                command,
                ..
            } => Some(Hint::HostKey {
                host: host.clone(),
                changed: *changed,
                command: command.clone(),
            }),
            RemoteError::Location { .. } => Some(Hint::Advice(
                "a store location is a folder path, sftp://[user@]host[:port]/path, s3://bucket/prefix, webdav://host/path or webdavs://host/path",
            )),
            RemoteError::Unsupported { .. } => Some(Hint::Advice(
                "mount the server as a folder (SSHFS, rclone mount) and give its path, or use s3:// or webdavs://",
            )),
            RemoteError::Backend {
                full: true,
                location,
                ..
            } => Some(Hint::RemoteFull {
                location: location.clone(),
            }),
            RemoteError::Backend {
                op: "write" | "remove",
                ..
            } => Some(Hint::Advice(
                "check the connection and the credentials, then run the command again: a copy cut short resumes where it stopped",
            )),
            RemoteError::Backend { .. } => Some(Hint::Advice(
                "check the connection, the location and the credentials, then run the command again",
            )),
            RemoteError::NotARemote { .. } => Some(Hint::Advice(
                "give an empty folder or bucket prefix, or the location of an existing remote store",
            )),
            RemoteError::Missing { location, .. } => Some(Hint::RemoteMissing {
                location: location.clone(),
            }),
            RemoteError::WrongPassword { .. } => Some(Hint::WrongPassword),
            RemoteError::Damaged { location, .. } => Some(Hint::RemoteDamaged {
                location: location.clone(),
            }),
            RemoteError::Incomplete { .. } => Some(Hint::Advice(
                "another machine is removing what this copy sends (a prune with no margin, or one that took this copy for dead): let it finish, then copy again; nothing sent is counted as copied",
            )),
            RemoteError::Locked { .. } => Some(Hint::Advice(
                "another ffsession is pruning or copying to this remote: try again later; a lock the server wrote more than 30 minutes ago is stale and ignored",
            )),
            RemoteError::Store(e) => e.hint(),
        }
    }

    /// True for a failure to reach the server (the next run may succeed).
    pub fn is_offline(&self) -> bool {
        matches!(self, RemoteError::Backend { full: false, .. })
    }
}

/// The text of the last error in `e`'s chain of sources, if it has one:
/// often the reason itself (a refused certificate, a refused connection)
/// under a library's own words.
pub(super) fn last_cause(e: &dyn std::error::Error) -> Option<String> {
    let mut cause = None;
    let mut source = e.source();
    while let Some(s) = source {
        cause = Some(s.to_string());
        source = s.source();
    }
    cause
}
