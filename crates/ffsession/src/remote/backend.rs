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

use super::RemoteError;

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
}

impl Kind {
    /// The folder of this kind of object.
    pub fn dir(self) -> &'static str {
        match self {
            Kind::Marker => "",
            Kind::Keys => "keys",
            Kind::Locks => "locks",
            Kind::Snapshots => "snapshots",
            Kind::Contents => "contents",
            Kind::Chunks => "chunks",
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
}

/// A place objects are kept.
pub trait Backend: Send + Sync {
    /// The location, for messages.
    fn location(&self) -> String;

    /// Every object of `kind` (temporary files left out).
    fn list(&self, kind: Kind) -> Result<Vec<Entry>, RemoteError>;

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
    #[allow(clippy::type_complexity)]
    fn read_many(
        &self,
        items: Vec<(Kind, String)>,
        done: &mut dyn FnMut(u64),
    ) -> Result<Vec<Option<Vec<u8>>>, RemoteError> {
        items
            .into_iter()
            .map(|(kind, name)| {
                let got = self.read(kind, &name)?;
                done(got.as_ref().map_or(0, |b| b.len() as u64));
                Ok(got)
            })
            .collect()
    }
}
