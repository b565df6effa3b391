//! The store folder on disk: creating it privately and durably, refusing
//! folders that are not stores, tightening permissions, and the lock.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{StoreError, CATALOG_FILE, CHUNKS_DIR, LOCK_FILE};
use crate::error::{IoResultExt, PathError};
use crate::fs_util::sync_dir;

/// The catalog of the store in `dir`, or [`StoreError::NotAStore`] (or
/// [`StoreError::CatalogLost`]).
pub(super) fn require_store(dir: &Path) -> Result<PathBuf, StoreError> {
    super::hygiene::refuse_store_folder_link(dir)?;
    super::hygiene::refuse_catalog_links(dir)?;
    refuse_lost_catalog(dir)?;
    let catalog = dir.join(CATALOG_FILE);
    match fs::metadata(&catalog) {
        Ok(m) if m.is_file() => Ok(catalog),
        Ok(_) => Err(StoreError::NotAStore {
            dir: dir.to_path_buf(),
        }),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Err(StoreError::NotAStore {
                dir: dir.to_path_buf(),
            })
        }
        Err(e) => Err(PathError {
            path: catalog,
            source: e,
        }
        .into()),
    }
}

/// A folder without a catalog may become a store only if it holds nothing
/// but what an interrupted creation leaves (`lock`, `chunks/` without chunk
/// files, temporary files).
pub(super) fn refuse_foreign_folder(dir: &Path) -> Result<(), StoreError> {
    super::hygiene::refuse_store_folder_link(dir)?;
    super::hygiene::refuse_catalog_links(dir)?;
    refuse_lost_catalog(dir)?;
    if dir.join(CATALOG_FILE).exists() {
        return Ok(());
    }
    for entry in fs::read_dir(dir).with_path(dir)? {
        let name = entry.with_path(dir)?.file_name();
        let name = name.to_string_lossy();
        let ours = [
            LOCK_FILE,
            CHUNKS_DIR,
            super::SNAPSHOTS_DIR,
            super::CONTENTS_DIR,
            super::ARCHIVES_DIR,
            super::UNDO_DIR,
            super::ORIGINS_DIR,
            super::STORE_FILE,
            super::owner::PROFILE_FILE,
        ]
        .contains(&name.as_ref())
            || crate::fs_util::is_temp_file_name(&name);
        if !ours {
            return Err(StoreError::NotAStore {
                dir: dir.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// [`StoreError::CatalogLost`] when the catalog is missing or empty (as
/// creation leaves it) but `chunks/` holds a chunk file: a store whose
/// catalog was deleted or truncated, which a new catalog would disown.
pub(super) fn refuse_lost_catalog(dir: &Path) -> Result<(), StoreError> {
    let catalog = dir.join(CATALOG_FILE);
    match fs::symlink_metadata(&catalog) {
        Ok(m) if !m.is_file() || m.len() > 0 => return Ok(()),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(PathError {
                path: catalog,
                source: e,
            }
            .into())
        }
    }
    let chunks = dir.join(CHUNKS_DIR);
    let Ok(fans) = fs::read_dir(&chunks) else {
        return Ok(());
    };
    for fan in fans {
        let fan = fan.with_path(&chunks)?.path();
        let Ok(files) = fs::read_dir(&fan) else {
            continue;
        };
        for file in files {
            let name = file.with_path(&fan)?.file_name();
            if super::chunk::digest_of_file_name(&name.to_string_lossy()).is_some() {
                return Err(StoreError::CatalogLost {
                    dir: dir.to_path_buf(),
                });
            }
        }
    }
    Ok(())
}

/// Permission problems and read-only disks become [`StoreError::NotWritable`].
pub(super) fn not_writable(dir: &Path, e: PathError) -> StoreError {
    match e.source.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            StoreError::NotWritable {
                dir: dir.to_path_buf(),
                source: e.source,
            }
        }
        _ => e.into(),
    }
}

/// Create `dir` and any missing parents, each 0700 (on Windows, each with the
/// private access list of `acl.rs`), fsyncing each new entry into its
/// parent.
pub(super) fn create_private_dir(dir: &Path) -> Result<(), StoreError> {
    let mut missing = Vec::new();
    let mut cur = dir;
    loop {
        match fs::metadata(cur) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(PathError {
                    path: cur.to_path_buf(),
                    source: io::Error::new(io::ErrorKind::NotADirectory, "not a folder"),
                }
                .into())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(cur),
            Err(e) => {
                return Err(not_writable(
                    dir,
                    PathError {
                        path: cur.to_path_buf(),
                        source: e,
                    },
                ))
            }
        }
        match cur.parent() {
            Some(p) if !p.as_os_str().is_empty() => cur = p,
            _ => break,
        }
    }
    for d in missing.into_iter().rev() {
        let parent = match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        make_dir(d, parent).map_err(|e| match e {
            StoreError::Io(p) => not_writable(dir, p),
            other => other,
        })?;
        #[cfg(windows)]
        make_private(d).map_err(|e| not_writable(dir, e))?;
    }
    Ok(())
}

/// Give the new folder `dir` the private access list of `acl.rs`; a file
/// system without access lists (FAT on a USB stick) keeps none.
#[cfg(windows)]
fn make_private(dir: &Path) -> Result<(), PathError> {
    const ERROR_INVALID_FUNCTION: i32 = 1;
    const ERROR_NOT_SUPPORTED: i32 = 50;
    match super::acl::make_private(dir) {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(ERROR_INVALID_FUNCTION | ERROR_NOT_SUPPORTED)
            ) =>
        {
            Ok(())
        }
        other => other.with_path(dir),
    }
}

/// Create folder `dir` (0700) inside `parent` if it is missing, and fsync
/// `parent` so the new entry survives a crash.
pub(super) fn make_dir(dir: &Path, parent: &Path) -> Result<(), StoreError> {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    match builder.create(dir) {
        Ok(()) => Ok(sync_dir(parent)?),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(PathError {
            path: dir.to_path_buf(),
            source: e,
        }
        .into()),
    }
}

/// Make the store folder 0700 if it is looser.
pub(super) fn tighten_dir(dir: &Path) -> Result<(), StoreError> {
    tighten(dir, 0o700).map_err(|e| not_writable(dir, e))
}

/// Make an existing file 0600 if it is looser, through a handle opened
/// without following a link (a `chmod` by path would change a link's target).
pub(super) fn tighten_file(path: &Path) -> Result<(), StoreError> {
    let file = match crate::fs_util::open_no_follow(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) if crate::fs_util::is_link_refused(&e) => {
            return Err(StoreError::SymbolicLink {
                path: path.to_path_buf(),
            })
        }
        Err(e) => {
            return Err(PathError {
                path: path.to_path_buf(),
                source: e,
            }
            .into())
        }
    };
    Ok(tighten_open(&file, path, 0o600)?)
}

#[cfg(unix)]
fn tighten(path: &Path, mode: u32) -> Result<(), PathError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = fs::metadata(path).with_path(path)?;
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).with_path(path)?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn tighten(_path: &Path, _mode: u32) -> Result<(), PathError> {
    Ok(())
}

/// Make the open file `file` (at `path`) `mode` if it is looser (`fchmod`:
/// the very file opened, whatever its name points to meanwhile).
#[cfg(unix)]
pub(super) fn tighten_open(file: &File, path: &Path, mode: u32) -> Result<(), PathError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = file.metadata().with_path(path)?;
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(mode))
            .with_path(path)?;
    }
    Ok(())
}

#[cfg(not(unix))]
pub(super) fn tighten_open(_file: &File, _path: &Path, _mode: u32) -> Result<(), PathError> {
    Ok(())
}

/// Open `dir/lock` (0600) and take an exclusive lock on it without waiting
/// (`File::try_lock`, Rust 1.89+), then write this process's id into it so a
/// writer that has to wait can say who holds the store ([`lock_holder`]).
///
/// The lock never waits: a caller that wants to wait for its turn retries on
/// [`StoreError::Locked`] (the CLI polls, saying once that it waits), so the
/// library never blocks a thread without a timeout nor talks to the user.
///
/// `lock` is opened without following a link ([`StoreError::SymbolicLink`]),
/// and its mode is fixed through that handle. Once the lock is held, the
/// folders a writer writes into and the catalog files are checked not to be
/// links either, and chunk and restore files and folders others may read or
/// write are made private (`hygiene::tighten_modes`).
pub(super) fn take_lock(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK_FILE);
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let file = match crate::fs_util::open_no_follow(&path, &mut opts) {
        Ok(file) => file,
        Err(e) if crate::fs_util::is_link_refused(&e) => {
            return Err(StoreError::SymbolicLink { path })
        }
        Err(e) => {
            return Err(not_writable(
                dir,
                PathError {
                    path: path.clone(),
                    source: e,
                },
            ))
        }
    };
    tighten_open(&file, &path, 0o600)?;
    match file.try_lock() {
        Ok(()) => {
            super::hygiene::refuse_writer_links(dir)?;
            super::hygiene::tighten_modes(dir);
            // Informational only: a reader may see it empty, and a holder that
            // died leaves its id behind but no lock.
            let mut f = &file;
            f.set_len(0)
                .and_then(|()| f.write_all(format!("{}\n", std::process::id()).as_bytes()))
                .with_path(&path)
                .map_err(|e| not_writable(dir, e))?;
            Ok(file)
        }
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked {
            dir: dir.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(PathError { path, source: e }.into()),
    }
}

/// The process id written into the lock of the store in `dir` by the writer
/// that holds it (or last held it); `None` if unknown.
pub fn lock_holder(dir: &Path) -> Option<u32> {
    use std::io::Read;
    let path = dir.join(LOCK_FILE);
    let mut file = crate::fs_util::open_no_follow(&path, OpenOptions::new().read(true)).ok()?;
    let mut text = String::new();
    (&mut file).take(64).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}
