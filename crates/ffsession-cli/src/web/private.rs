//! The page's private folder: the files its actions write (extracted,
//! merged and rescued sessions, which hold cookies and form data) and the
//! small file that takes the browser to the page's address (as Jupyter's
//! `jpserver-PID-open.html`, so the secret is never on a command line).
//!
//! Its name is random (nothing of the secret); it is 0700 on Unix and on
//! Windows has the access list of a store folder. It goes with the server,
//! whatever stops it (the end of `serve`, a panic unwinding, a signal the
//! server handles). A server killed outright leaves it: the next `ffsession
//! ui` removes it. Each running server holds a lock on a file in its folder;
//! a folder of ours whose lock nobody holds belongs to a server that is gone.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

/// The start of every private folder's name in the temporary folder.
pub const PREFIX: &str = "ffsession-ui-";
/// The file each server keeps locked while it runs.
const LOCK: &str = "running.lock";
/// The redirect file given to the browser.
const OPEN: &str = "open.html";
/// A folder whose lock is free is a leftover only once its lock file is
/// older than this: a server starting now creates the file and locks it
/// within a millisecond, and must not lose its folder in between.
const SETTLED: Duration = Duration::from_secs(60);

/// The private folder of a running server.
pub struct PrivateDir {
    path: PathBuf,
    /// Held while the server runs: the folder is in use.
    lock: Option<File>,
    removed: bool,
}

impl PrivateDir {
    /// Remove what stopped servers left, then make a new private folder in
    /// the temporary folder (absolute, so commands run elsewhere find it).
    pub fn create() -> Result<PrivateDir> {
        let tmp =
            std::path::absolute(std::env::temp_dir()).context("finding the temporary folder")?;
        let dir = Self::make(&tmp)?;
        for gone in sweep(&tmp, &dir.path) {
            crate::ui::note(format_args!(
                "removed {}, the private folder of a page that was stopped without removing it",
                crate::fmt::path(&gone)
            ));
        }
        Ok(dir)
    }

    fn make(tmp: &Path) -> Result<PrivateDir> {
        for _ in 0..16 {
            let name = super::security::random_hex(8)?;
            let path = tmp.join(format!("{PREFIX}{name}"));
            #[cfg(unix)]
            let builder = {
                let mut b = std::fs::DirBuilder::new();
                std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
                b
            };
            #[cfg(not(unix))]
            let builder = std::fs::DirBuilder::new();
            match builder.create(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
            let mut dir = PrivateDir {
                path,
                lock: None,
                removed: false,
            };
            #[cfg(windows)]
            ffsession::store::make_private(&dir.path)
                .with_context(|| format!("making {} private to its user", dir.path.display()))?;
            let lock_path = dir.path.join(LOCK);
            let lock = File::create_new(&lock_path)
                .with_context(|| format!("creating {}", lock_path.display()))?;
            lock.try_lock()
                .with_context(|| format!("locking {}", lock_path.display()))?;
            dir.lock = Some(lock);
            return Ok(dir);
        }
        anyhow::bail!(
            "could not make a private folder in {}: every name tried was taken",
            tmp.display()
        )
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write the page that takes a browser to `url`, readable by the user
    /// only; its path is what the browser is given.
    pub fn redirect_file(&self, url: &str) -> Result<PathBuf> {
        let file = self.path.join(OPEN);
        let html = maud::html! {
            (maud::DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="referrer" content="no-referrer";
                    meta http-equiv="refresh" content=(format!("0;url={url}"));
                    title { "ffsession" }
                }
                body { p { "Opening " a href=(url) { "the page of ffsession ui" } "." } }
            }
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options
            .open(&file)
            .with_context(|| format!("creating {}", file.display()))?;
        f.write_all(html.into_string().as_bytes())
            .with_context(|| format!("writing {}", file.display()))?;
        Ok(file)
    }

    /// Remove the folder and everything in it (once).
    pub fn remove(&mut self) {
        if self.removed {
            return;
        }
        self.removed = true;
        // Closed first: Windows removes no file that is open.
        drop(self.lock.take());
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Remove the private folders of servers that are gone: folders named
/// [`PREFIX`]... (not links) with the owner of `own` (this server's new
/// folder), whose lock file is settled and whose lock nobody holds. Returns
/// what it removed. Folders of other users are not even opened, and a
/// folder with no lock file (an older ffsession's, whose server may run) is
/// left alone.
pub fn sweep(tmp: &Path, own: &Path) -> Vec<PathBuf> {
    let (Ok(entries), Ok(mine)) = (std::fs::read_dir(tmp), std::fs::metadata(own)) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || !same_owner(&meta, &mine) || path == own {
            continue;
        }
        let lock_path = path.join(LOCK);
        let settled = std::fs::metadata(&lock_path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age >= SETTLED);
        if !settled {
            continue;
        }
        let Ok(lock) = File::options().write(true).open(&lock_path) else {
            continue;
        };
        if lock.try_lock().is_err() {
            continue; // its server runs
        }
        drop(lock);
        if std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(unix)]
fn same_owner(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.uid() == b.uid()
}

#[cfg(not(unix))]
fn same_owner(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    // The temporary folder is the user's own (%LOCALAPPDATA%\Temp).
    true
}
