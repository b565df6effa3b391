//! Keeping the store inside its own folder: ffsession follows no symbolic
//! link inside a store, neither to read nor to write.
//!
//! A link inside the store (put there by a copy tool, by mistake or by
//! someone else) would otherwise send a write, a `chmod` or a delete to any
//! file of the user: the writer's pid into the file `lock` points at, SQLite's
//! pages into the target of `catalog.sqlite`, chunk files into the folder a
//! linked `chunks/ab` names. So every file ffsession opens in a store is
//! opened without following a link in its last component
//! ([`fs_util::open_no_follow`](crate::fs_util::open_no_follow): `lock`,
//! chunk files, the catalog files before SQLite opens them), every folder
//! it writes into is checked to be a real folder, and `check` reports every
//! link anywhere in the store. The store folder itself is no exception: a
//! store folder that is a link is refused by every open, as `check` calls
//! it damage (the folders above it may be links: the path the user gave).

use std::fs;
use std::path::{Path, PathBuf};

use super::{CheckReport, StoreError, StoreProblem, CATALOG_FILE, CHUNKS_DIR, LOCK_FILE};
use crate::fs_util::is_link;

/// The folder `restore` keeps each replaced `prefs.js` in.
const RESTORES_DIR: &str = "restores";

/// How deep [`links`] walks: a store is three levels deep
/// (`chunks/ab/<digest>.zst`); anything deeper is not ours, and a bound keeps
/// a bind-mount loop from walking forever.
const MAX_DEPTH: usize = 8;

/// [`StoreError::SymbolicLink`] if `path` is a link.
fn refuse_link(path: PathBuf) -> Result<(), StoreError> {
    if is_link(&path) {
        return Err(StoreError::SymbolicLink { path });
    }
    Ok(())
}

/// [`StoreError::StoreFolderLink`] if the store folder `dir` is itself a
/// symbolic link (or a junction).
pub(super) fn refuse_store_folder_link(dir: &Path) -> Result<(), StoreError> {
    // `link/` and `link/.` name the link's target: look at `link` itself.
    let own: PathBuf = dir.components().collect();
    if is_link(&own) {
        return Err(StoreError::StoreFolderLink {
            dir: dir.to_path_buf(),
            target: fs::read_link(&own).ok(),
        });
    }
    Ok(())
}

/// The catalog and the files SQLite keeps beside it (`-wal`, `-shm`), which
/// every open of the store reads (and a reader of a WAL catalog writes
/// `-shm`): none may be a link. SQLite itself resolves a linked database
/// file to its target (and would put its `-wal` there).
pub(super) fn refuse_catalog_links(dir: &Path) -> Result<(), StoreError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        refuse_link(dir.join(format!("{CATALOG_FILE}{suffix}")))?;
    }
    Ok(())
}

/// Before a writer changes anything: the catalog files, and the folders it
/// writes into (`chunks/`, `restores/`, the manifest folders), are not links
/// (the tab index, derived data, is deleted and made again when it is one). (`lock` was opened
/// without following a link already.)
pub(super) fn refuse_writer_links(dir: &Path) -> Result<(), StoreError> {
    refuse_catalog_links(dir)?;
    for folder in [
        CHUNKS_DIR,
        RESTORES_DIR,
        super::manifest::SNAPSHOTS_DIR,
        super::manifest::CONTENTS_DIR,
        super::manifest::ARCHIVES_DIR,
        super::undo::UNDO_DIR,
        super::origin::ORIGINS_DIR,
        super::manifest::STORE_FILE,
    ] {
        refuse_link(dir.join(folder))?;
    }
    Ok(())
}

/// A folder a chunk is about to be written into (`chunks/ab`) must be a real
/// folder: a write through a linked one would land outside the store.
pub(super) fn require_real_dir(dir: &Path) -> Result<(), StoreError> {
    refuse_link(dir.to_path_buf())
}

/// A symbolic link found in a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Link {
    /// The link.
    pub(super) path: PathBuf,
    /// What it points to, as written in the link.
    pub(super) target: Option<PathBuf>,
}

/// Every symbolic link in the store folder `dir`, at any depth, in path
/// order; no link is followed (a linked folder is listed, not entered).
pub(super) fn links(dir: &Path) -> Vec<Link> {
    let mut found = Vec::new();
    if !is_link(dir) {
        walk(dir, 0, &mut found);
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<Link>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() || is_link(&path) {
            found.push(Link {
                target: fs::read_link(&path).ok(),
                path,
            });
        } else if kind.is_dir() && depth < MAX_DEPTH {
            walk(&path, depth + 1, found);
        }
    }
}

/// List in `report` every link in its store, and add a problem for each one
/// it does not name yet (the checks of the catalog, of `chunks/` and of each chunk file
/// name the links they meet in their own words).
pub(super) fn report_links(report: &mut CheckReport) {
    for link in links(&report.dir) {
        report.links.push(link.path.clone());
        let named = report.problems.iter().any(|p| p.path == link.path)
            || report.damaged_chunks.iter().any(|c| c.path == link.path);
        if named {
            continue;
        }
        let to = link
            .target
            .as_ref()
            .map_or_else(String::new, |t| format!(" (to {})", t.display()));
        let what = if link.path.file_name().is_some_and(|n| n == LOCK_FILE) {
            format!(
                "the lock is a symbolic link{to}; every writer refuses the store until it is removed (ffsession makes the lock itself)"
            )
        } else {
            format!(
                "a symbolic link{to}; ffsession follows none in a store: remove it, or put the real file or folder in its place"
            )
        };
        report.problems.push(StoreProblem {
            path: link.path,
            what,
            hint: None,
        });
    }
}

/// Make the store's chunk and restore folders 0700 and their files 0600
/// where they are looser (a store copied with `cp -r` under umask 022, or
/// unpacked from an archive), when a writer opens the store. Best effort:
/// what cannot be fixed is left for `check` to report.
///
/// Safe against what a loose folder may have let others put there: each file
/// is opened without following a link and changed through that handle
/// (`fchmod`), and only when it is a plain file or folder of this user with
/// no other name (one link): a `chmod` never reaches a file outside the
/// store, through a symbolic or a hard link. Modes only ever get tighter.
/// Costs one `lstat` per chunk file (read from the folder listing, no
/// file opened unless it is loose).
#[cfg(unix)]
pub(super) fn tighten_modes(dir: &Path) {
    for sub in [CHUNKS_DIR, RESTORES_DIR] {
        tighten_tree(&dir.join(sub), 0);
    }
}

#[cfg(not(unix))]
pub(super) fn tighten_modes(_dir: &Path) {}

#[cfg(unix)]
fn tighten_tree(dir: &Path, depth: usize) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    if meta.mode() & 0o077 != 0 {
        tighten_one(dir, true);
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        // `DirEntry::metadata` does not follow a link.
        let Ok(m) = entry.metadata() else {
            continue;
        };
        if m.is_dir() && depth < 1 {
            tighten_tree(&entry.path(), depth + 1);
        } else if m.is_file() && m.mode() & 0o077 != 0 {
            tighten_one(&entry.path(), false);
        }
    }
}

/// `fchmod` the file or folder at `path` to 0600 or 0700 if it is still a
/// plain one of ours (a file with one name) once opened.
#[cfg(unix)]
fn tighten_one(path: &Path, folder: bool) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Ok(file) = crate::fs_util::open_no_follow(path, fs::OpenOptions::new().read(true)) else {
        return;
    };
    let Ok(m) = file.metadata() else {
        return;
    };
    let ours = m.uid() == rustix::process::geteuid().as_raw();
    let plain = if folder {
        m.is_dir()
    } else {
        m.is_file() && m.nlink() == 1
    };
    if ours && plain {
        let mode = if folder { 0o700 } else { 0o600 };
        let _ = file.set_permissions(fs::Permissions::from_mode(mode));
    }
}
