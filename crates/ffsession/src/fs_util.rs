//! The one atomic-write helper every write of ffsession goes through.
//!
//! A file is written to a temporary file in the same directory, flushed and
//! fsynced, renamed over the destination, and then the directory itself is
//! fsynced so the rename survives a crash. Until the rename, the destination
//! keeps its old content; if anything fails the temporary file is removed, so
//! no partial output is ever left behind. New files are created 0600 because
//! session files hold cookies and form data.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use crate::error::{IoResultExt, PathError};

/// Atomically replace (or create) `path` with what `write` produces.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), PathError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".ffsession-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_path(dir)?;
    {
        let mut buffered = io::BufWriter::with_capacity(1 << 16, tmp.as_file_mut());
        write(&mut buffered).with_path(path)?;
        buffered.flush().with_path(path)?;
    }
    tmp.as_file().sync_all().with_path(path)?;
    // On failure `persist` hands the temp file back; dropping it deletes it.
    tmp.persist(path).map_err(|e| e.error).with_path(path)?;
    sync_dir(dir)
}

/// Fsync a directory so that renames and new entries in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), PathError> {
    #[cfg(unix)]
    {
        File::open(dir).and_then(|d| d.sync_all()).with_path(dir)
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a directory as a file; NTFS journals the rename.
        let _ = dir;
        Ok(())
    }
}

/// True if `a` and `b` name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "old").unwrap();
        write_atomic(&path, |w: &mut dyn Write| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "old").unwrap();
        let err = write_atomic(&path, |w: &mut dyn Write| {
            w.write_all(b"partial")?;
            Err(io::Error::other("boom"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("boom"));
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn new_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.jsonlz4");
        write_atomic(&path, |w: &mut dyn Write| w.write_all(b"x")).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
