//! The profile folder a store backs up: `<store>/profile`, the folder's
//! absolute path, written by the first backup into the store and again when
//! that folder is gone (the profile moved, or the store came from another
//! machine).
//!
//! The command line keeps the default stores of two profiles apart by it.
//! Profiles of the same name in two Firefox folders (a distribution's Firefox
//! and a Snap or Flatpak one, a profile copied by hand) would otherwise share
//! `<data dir>/ffsession/<name>`, and `restore latest` would take the newest
//! session of either into the profile.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::PathError;
use crate::fs_util::write_atomic;

/// The file naming the profile folder a store backs up.
pub const PROFILE_FILE: &str = "profile";

/// Whose store a store is, as seen from one profile folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The store names no profile folder (new, or made before stores did).
    Unbound,
    /// The store backs up this profile folder.
    This,
    /// The store backs up a folder that is no longer there.
    Moved(PathBuf),
    /// The store backs up another profile folder, which is still there.
    Other(PathBuf),
}

/// The profile folder the store in `store_dir` backs up, if it names one.
/// A missing, linked or unreadable file names none.
pub fn bound_profile(store_dir: &Path) -> Option<PathBuf> {
    let path = store_dir.join(PROFILE_FILE);
    if !fs::symlink_metadata(&path).ok()?.is_file() {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    if bytes.is_empty() {
        return None;
    }
    from_bytes(bytes)
}

/// Whose store the store in `store_dir` is, as seen from `profile_dir`.
pub fn owner(store_dir: &Path, profile_dir: &Path) -> Owner {
    let Some(bound) = bound_profile(store_dir) else {
        return Owner::Unbound;
    };
    if is_same_folder(&bound, profile_dir) {
        Owner::This
    } else if bound.is_dir() {
        Owner::Other(bound)
    } else {
        Owner::Moved(bound)
    }
}

/// The store of `profile_dir` kept apart from `by_name`, the store of
/// another profile of the same name: `by_name` with `-` and the folder's
/// [`folder_key`] after its name.
pub fn apart(by_name: &Path, profile_dir: &Path) -> PathBuf {
    let mut name = by_name.file_name().unwrap_or_default().to_os_string();
    name.push("-");
    name.push(folder_key(profile_dir));
    by_name.with_file_name(name)
}

/// The suffix that keeps the default store of `profile_dir` apart from
/// another profile's of the same name: 8 hex digits of the BLAKE3 hash of
/// the folder's absolute path.
pub fn folder_key(profile_dir: &Path) -> String {
    let path = absolute(profile_dir);
    let hash = blake3::hash(&to_bytes(&path));
    hash.to_hex()[..8].to_owned()
}

/// Record `profile_dir` as the folder the store backs up, unless the store
/// names a folder that is still there.
pub(crate) fn bind(store_dir: &Path, profile_dir: &Path) -> Result<(), PathError> {
    if matches!(owner(store_dir, profile_dir), Owner::This | Owner::Other(_)) {
        return Ok(());
    }
    let mut line = to_bytes(&absolute(profile_dir));
    line.push(b'\n');
    write_atomic(&store_dir.join(PROFILE_FILE), |w| w.write_all(&line))
}

fn is_same_folder(a: &Path, b: &Path) -> bool {
    absolute(a) == absolute(b) || crate::fs_util::same_file(a, b)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(unix)]
fn to_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(unix)]
fn from_bytes(bytes: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

// Elsewhere a path that is not Unicode is written with replacement
// characters: it reads back as another path, so the store is taken as moved
// and bound again, never as another profile's.
#[cfg(not(unix))]
fn to_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().into_owned().into_bytes()
}

#[cfg(not(unix))]
fn from_bytes(bytes: &[u8]) -> Option<PathBuf> {
    std::str::from_utf8(bytes).ok().map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_names_the_folder_of_its_first_backup_until_that_folder_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        fs::create_dir(&store).unwrap();
        let a = dir.path().join("a.default");
        let b = dir.path().join("b").join("a.default");
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();

        assert_eq!(owner(&store, &a), Owner::Unbound);
        bind(&store, &a).unwrap();
        assert_eq!(bound_profile(&store), Some(absolute(&a)));
        assert_eq!(owner(&store, &a), Owner::This);
        // The same folder by another spelling.
        assert_eq!(
            owner(&store, &dir.path().join("b/../a.default")),
            Owner::This
        );
        assert_eq!(owner(&store, &b), Owner::Other(absolute(&a)));
        // Another live profile's store is never taken over.
        bind(&store, &b).unwrap();
        assert_eq!(owner(&store, &a), Owner::This);

        // The profile moved: the store is the moved profile's.
        let moved = dir.path().join("moved.default");
        fs::rename(&a, &moved).unwrap();
        assert_eq!(owner(&store, &moved), Owner::Moved(absolute(&a)));
        bind(&store, &moved).unwrap();
        assert_eq!(owner(&store, &moved), Owner::This);
        assert_eq!(owner(&store, &b), Owner::Other(absolute(&moved)));
    }

    #[test]
    fn an_empty_linked_or_missing_file_names_no_folder() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("p");
        fs::create_dir(&profile).unwrap();
        assert_eq!(owner(dir.path(), &profile), Owner::Unbound);
        fs::write(dir.path().join(PROFILE_FILE), "").unwrap();
        assert_eq!(owner(dir.path(), &profile), Owner::Unbound);
        fs::write(dir.path().join(PROFILE_FILE), "\n").unwrap();
        assert_eq!(owner(dir.path(), &profile), Owner::Unbound);
        #[cfg(unix)]
        {
            // A file naming the profile, reached through a link, names none.
            let outside = dir.path().join("elsewhere");
            fs::write(&outside, format!("{}\n", profile.display())).unwrap();
            let store = dir.path().join("store");
            fs::create_dir(&store).unwrap();
            std::os::unix::fs::symlink(&outside, store.join(PROFILE_FILE)).unwrap();
            assert_eq!(owner(&store, &profile), Owner::Unbound);
            fs::remove_file(store.join(PROFILE_FILE)).unwrap();
            fs::copy(&outside, store.join(PROFILE_FILE)).unwrap();
            assert_eq!(owner(&store, &profile), Owner::This);
        }
    }

    #[test]
    fn folder_keys_differ_by_folder_and_not_by_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("x").join("default");
        let b = dir.path().join("y").join("default");
        assert_ne!(folder_key(&a), folder_key(&b));
        assert_eq!(folder_key(&a), folder_key(&dir.path().join("x/./default")));
        assert_eq!(folder_key(&a).len(), 8);
        assert_eq!(
            apart(&dir.path().join("store"), &a),
            dir.path().join(format!("store-{}", folder_key(&a)))
        );
        assert!(folder_key(&a).bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_whose_name_is_not_unicode_reads_back_exactly() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let profile = dir
            .path()
            .join(std::ffi::OsStr::from_bytes(b"caf\xe9.default"));
        fs::create_dir(&profile).unwrap();
        bind(dir.path(), &profile).unwrap();
        assert_eq!(owner(dir.path(), &profile), Owner::This);
    }
}
