//! A remote's key kept on a machine that opened it, so that the next
//! command opens the remote without the password's slow key stretching
//! (scrypt, about a second): the remote's identity itself, as an SSH
//! private key without a passphrase is kept. The CLI keeps it in a file
//! only the user can read; whoever can read that file can read and write
//! the remote, as with the password.
//!
//! A kept key names the key file it came from (its name and BLAKE3), and
//! is used only where the remote holds that very file: another remote at
//! the same location (made again, or a different one put there) does not
//! take it, and the password is asked as before.

use serde::{Deserialize, Serialize};

use super::backend::{Backend, Kind};
use super::crypto::Keys;
use super::objects::MARKER;
use super::{check_marker, Remote, RemoteError};

const KEPT_FORMAT: &str = "ffsession-kept-key/1";

/// What lets this machine open one remote without its password.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeptKey {
    format: String,
    /// The remote's location, for people reading the file.
    pub location: String,
    /// The key file on the remote it came from.
    key_file: String,
    /// That file's BLAKE3 (hex).
    key_file_blake3: String,
    /// The remote's identity (`AGE-SECRET-KEY-1...`).
    identity: String,
}

impl std::fmt::Debug for KeptKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeptKey({}, keys/{})", self.location, self.key_file)
    }
}

impl KeptKey {
    /// Read a kept key's bytes (as [`KeptKey::to_bytes`] wrote them).
    pub fn from_bytes(bytes: &[u8]) -> Option<KeptKey> {
        serde_json::from_slice::<KeptKey>(bytes)
            .ok()
            .filter(|k| k.format == KEPT_FORMAT)
    }

    /// Its bytes, to keep.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec_pretty(self).unwrap_or_default();
        b.push(b'\n');
        b
    }
}

/// Why a kept key did not open a remote.
pub enum KeptRefused {
    /// The remote does not hold the key file the key came from (another
    /// remote at this location, or its keys changed): ask the password.
    NotThisRemote(Box<dyn Backend>),
    /// The remote could not be read.
    Failed(RemoteError),
}

impl std::fmt::Debug for KeptRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeptRefused::NotThisRemote(b) => write!(f, "NotThisRemote({})", b.location()),
            KeptRefused::Failed(e) => write!(f, "Failed({e})"),
        }
    }
}

impl Remote {
    /// What lets this machine open this remote next time without the
    /// password; `None` when a spare kept elsewhere opened it.
    pub fn kept_key(&self) -> Option<KeptKey> {
        let name = self.key_name.clone()?;
        Some(KeptKey {
            format: KEPT_FORMAT.into(),
            location: self.location(),
            key_file_blake3: blake3::hash(&self.key_file).to_hex().to_string(),
            key_file: name,
            identity: self.keys.identity_text(),
        })
    }

    /// Open the remote behind `backend` with a kept key: two reads (the
    /// marker and the key file it came from), no key stretching.
    pub fn open_kept(backend: Box<dyn Backend>, kept: &KeptKey) -> Result<Remote, KeptRefused> {
        let location = backend.location();
        let marker = match backend.read(Kind::Marker, MARKER) {
            Ok(Some(m)) => m,
            Ok(None) => return Err(KeptRefused::NotThisRemote(backend)),
            Err(e) => return Err(KeptRefused::Failed(e)),
        };
        if let Err(e) = check_marker(&location, &marker) {
            return Err(KeptRefused::Failed(e));
        }
        let file = match backend.read(Kind::Keys, &kept.key_file) {
            Ok(Some(f)) => f,
            Ok(None) => return Err(KeptRefused::NotThisRemote(backend)),
            Err(e) => return Err(KeptRefused::Failed(e)),
        };
        if blake3::hash(&file).to_hex().as_str() != kept.key_file_blake3 {
            return Err(KeptRefused::NotThisRemote(backend));
        }
        let Ok(keys) = Keys::from_identity_text(&kept.identity) else {
            return Err(KeptRefused::NotThisRemote(backend));
        };
        Ok(Remote {
            backend,
            keys,
            key_file: file,
            key_name: Some(kept.key_file.clone()),
        })
    }
}
