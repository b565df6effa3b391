//! The remote's key kept on this machine (issue 47): after the password
//! opened a remote once, its identity is kept in a file only the user can
//! read, under the config folder (`remote-keys/`), as `~/.ssh` keeps a
//! private key without a passphrase; the next command opens the remote
//! with it, without the password and its second of scrypt. `ffsession
//! remote forget` removes it; `keep_key = false` in a `[remotes.NAME]`
//! table never keeps one. Whoever can read the file can read and write the
//! remote (docs/guide/remote.md says so).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use ffsession::remote::{Backend, KeptKey, KeptRefused, Location, Remote};

use super::{create_private_dirs, location_name, remote_error, Target};
use crate::error::UserError;

/// The folder of kept keys, in ffsession's config folder.
pub const KEPT_DIR: &str = "remote-keys";

/// The folder kept keys are in.
pub fn kept_dir() -> Result<PathBuf> {
    let folders = crate::folders::folders().ok_or_else(|| {
        UserError::with_hint(
            "cannot find ffsession's config folder, where remotes' keys are kept",
            "set HOME (or XDG_CONFIG_HOME)",
        )
    })?;
    Ok(ffsession::platform::Platform::CURRENT
        .config_dir(&folders)
        .join(KEPT_DIR))
}

/// The file that keeps the key of the remote at `location`.
pub fn kept_file(location: &Location) -> Result<PathBuf> {
    Ok(kept_dir()?.join(format!("{}.json", location_name(location))))
}

/// Open the remote behind `backend` with the key kept for `t`, if there is
/// one and it is this remote's; else give the backend back (the password
/// opens it). A kept key that does not fit is said once.
pub fn open(
    t: &Target,
    backend: Box<dyn Backend>,
) -> Result<std::result::Result<Remote, Box<dyn Backend>>> {
    if !t.config.keep_key.unwrap_or(true) {
        return Ok(Err(backend));
    }
    let Ok(path) = kept_file(&t.location) else {
        return Ok(Err(backend));
    };
    let Some(kept) = std::fs::read(&path)
        .ok()
        .and_then(|b| KeptKey::from_bytes(&b))
    else {
        return Ok(Err(backend));
    };
    match Remote::open_kept(backend, &kept) {
        Ok(remote) => Ok(Ok(remote)),
        Err(KeptRefused::Failed(e)) => Err(remote_error(e)),
        Err(KeptRefused::NotThisRemote(backend)) => {
            crate::ui::note(format_args!(
                "the key this machine kept for {} does not open the remote there now (it was made again, or its keys changed): the password opens it",
                t.location
            ));
            Ok(Err(backend))
        }
    }
}

/// Keep (or renew) the key of `remote`, opened for `t`; a failure only
/// means the next command asks the password again.
pub fn keep(remote: &Remote, t: &Target) {
    if !t.config.keep_key.unwrap_or(true) {
        return;
    }
    let (Some(kept), Ok(path)) = (remote.kept_key(), kept_file(&t.location)) else {
        return;
    };
    let bytes = kept.to_bytes();
    if std::fs::read(&path).ok().as_deref() == Some(&bytes[..]) {
        return;
    }
    let Some(dir) = path.parent() else { return };
    if create_private_dirs(dir).is_err() {
        return;
    }
    // Written 0600 (write_atomic's temporary file is), in a 0700 folder.
    let _ = ffsession::fs_util::write_atomic(&path, |w: &mut dyn Write| w.write_all(&bytes));
}

/// Remove the key kept for `location`; false if there was none.
pub fn forget(location: &Location) -> Result<bool> {
    let path = kept_file(location)?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(anyhow::Error::new(e)
            .context(format!("{}: cannot remove the kept key", path.display()))),
    }
}

/// Every kept key's file and the location it opens.
pub fn all() -> Result<Vec<(PathBuf, String)>> {
    let dir = kept_dir()?;
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let location = std::fs::read(&path)
            .ok()
            .and_then(|b| KeptKey::from_bytes(&b))
            .map_or_else(|| "(unreadable)".to_owned(), |k| k.location);
        out.push((path, location));
    }
    out.sort();
    Ok(out)
}
