//! A remote store in a local folder (a USB disk, a NAS mount): written with
//! the project's one atomic-write helper (temporary file, fsync, rename,
//! fsync of the folder), folders 0700, files 0600. Not through OpenDAL, whose
//! file service does not fsync the folder; rustic_backend keeps its local
//! backend apart for the same reason.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::backend::{Backend, Entry, Kind};
use super::RemoteError;
use crate::fs_util::write_atomic;

/// A folder holding a remote store.
#[derive(Debug)]
pub struct LocalBackend {
    root: PathBuf,
}

impl LocalBackend {
    /// The backend for folder `root` (created at the first write).
    pub fn new(root: impl Into<PathBuf>) -> LocalBackend {
        LocalBackend { root: root.into() }
    }

    fn err(&self, op: &'static str, path: &Path, e: io::Error) -> RemoteError {
        RemoteError::Backend {
            location: self.root.display().to_string(),
            op,
            path: path.display().to_string(),
            full: e.raw_os_error() == Some(28),
            reason: e.to_string(),
        }
    }

    fn make_dirs(&self, dir: &Path) -> Result<(), RemoteError> {
        if dir.is_dir() {
            return Ok(());
        }
        let mut b = fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir).map_err(|e| self.err("write", dir, e))?;
        if let Some(parent) = dir.parent() {
            crate::fs_util::sync_dir(parent).map_err(|e| self.err("write", parent, e.source))?;
        }
        Ok(())
    }
}

impl Backend for LocalBackend {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn list(&self, kind: Kind) -> Result<Vec<Entry>, RemoteError> {
        let top = self.root.join(kind.dir());
        let mut out = Vec::new();
        let mut folders = vec![top.clone()];
        if kind == Kind::Chunks {
            folders.clear();
            match fs::read_dir(&top) {
                Ok(rd) => {
                    for e in rd {
                        let e = e.map_err(|e| self.err("list", &top, e))?;
                        if e.file_type().is_ok_and(|t| t.is_dir()) {
                            folders.push(e.path());
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.err("list", &top, e)),
            }
        }
        for dir in folders {
            let rd = match fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(self.err("list", &dir, e)),
            };
            for e in rd {
                let e = e.map_err(|e| self.err("list", &dir, e))?;
                let name = e.file_name().to_string_lossy().into_owned();
                // A temporary file is no object: not even looked at (another
                // machine's write renames or removes it at any moment).
                if !Kind::valid_name(&name) || kind == Kind::Marker {
                    continue;
                }
                let meta = match e.metadata() {
                    Ok(m) => m,
                    // Removed between the listing and the look (another
                    // machine's prune, a lock given back): not there.
                    Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                    Err(err) => return Err(self.err("list", &e.path(), err)),
                };
                if meta.is_file() {
                    out.push(Entry {
                        name,
                        size: meta.len(),
                        modified_ms: meta.modified().ok().and_then(crate::store::unix_ms),
                    });
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn read(&self, kind: Kind, name: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        let path = self.root.join(kind.path(name));
        match fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.err("read", &path, e)),
        }
    }

    fn write(&self, kind: Kind, name: &str, bytes: &[u8]) -> Result<(), RemoteError> {
        super::backend::before_write();
        let path = self.root.join(kind.path(name));
        if let Some(dir) = path.parent() {
            self.make_dirs(dir)?;
        }
        write_atomic(&path, |w: &mut dyn Write| w.write_all(bytes))
            .map_err(|e| self.err("write", &path, e.source))?;
        super::backend::after_write();
        Ok(())
    }

    fn write_new(&self, kind: Kind, name: &str, bytes: &[u8]) -> Result<bool, RemoteError> {
        let path = self.root.join(kind.path(name));
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        self.make_dirs(&dir)?;
        // Staged (written, fsynced) under a temporary name, then linked to
        // its name: link(2) fails if the name exists.
        let tmp = dir.join(format!(".tmp-{:016x}-{name}", super::opendal::random_u64()));
        write_atomic(&tmp, |w: &mut dyn Write| w.write_all(bytes))
            .map_err(|e| self.err("write", &tmp, e.source))?;
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                crate::fs_util::sync_dir(&dir).map_err(|e| self.err("write", &dir, e.source))?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(self.err("write", &path, e)),
        }
    }

    fn remove_temporary(&self, written_before_ms: Option<u64>) -> Result<u64, RemoteError> {
        let mut removed = 0;
        let mut dirs = vec![self.root.clone()];
        while let Some(dir) = dirs.pop() {
            let rd = match fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(self.err("list", &dir, e)),
            };
            for e in rd {
                let e = e.map_err(|e| self.err("list", &dir, e))?;
                let name = e.file_name().to_string_lossy().into_owned();
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                if is_dir {
                    dirs.push(e.path());
                } else if Kind::is_temporary(&name) {
                    let modified = e
                        .metadata()
                        .ok()
                        .and_then(|m| m.modified().ok())
                        .and_then(crate::store::unix_ms);
                    if !super::backend::temporary_due(written_before_ms, modified) {
                        continue;
                    }
                    match fs::remove_file(e.path()) {
                        Ok(()) => removed += 1,
                        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                        Err(err) => return Err(self.err("remove", &e.path(), err)),
                    }
                }
            }
        }
        Ok(removed)
    }

    fn atomic_create(&self) -> bool {
        true
    }

    fn remove(&self, kind: Kind, name: &str) -> Result<(), RemoteError> {
        let path = self.root.join(kind.path(name));
        match fs::remove_file(&path) {
            Ok(()) => {
                super::backend::after_write();
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.err("remove", &path, e)),
        }
    }

    fn is_empty(&self) -> Result<bool, RemoteError> {
        match fs::read_dir(&self.root) {
            Ok(mut rd) => Ok(rd.next().is_none()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(self.err("list", &self.root, e)),
        }
    }
}
