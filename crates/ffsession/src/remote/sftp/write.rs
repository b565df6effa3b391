//! Writing one object on SFTP, whole or not at all (see `sftp.rs`): the
//! folders it goes in, the temporary file written, synced, closed and its
//! size read back, the name given by a hard link, and a failure said as a
//! full disk when the server has no room left.

use std::sync::Arc;

use super::{timed, Conn, Fail, SftpBackend};
use crate::remote::RemoteError;

impl SftpBackend {
    /// Make folder `rel` of the store (and every folder above it, the
    /// store's own too) unless it is known to exist.
    async fn make_dir(&self, c: &Arc<Conn>, rel: &str) -> Result<(), RemoteError> {
        let full = self.full_path(rel);
        if self.dirs.lock().is_ok_and(|d| d.contains(&full)) {
            return Ok(());
        }
        // Every folder from the top down, as full paths.
        let mut parts = Vec::new();
        let mut cur = String::new();
        if full.starts_with('/') {
            cur.push('/');
        }
        for p in full.split('/').filter(|p| !p.is_empty()) {
            if !cur.is_empty() && !cur.ends_with('/') {
                cur.push('/');
            }
            cur.push_str(p);
            parts.push(cur.clone());
        }
        // The deepest one that exists first: most often the folder itself
        // or its parent.
        let mut start = parts.len();
        while start > 0 {
            let path = &parts[start - 1];
            if self.dirs.lock().is_ok_and(|d| d.contains(path)) {
                break;
            }
            match timed(c.sftp.fs().metadata(path)).await {
                Ok(m) if m.file_type().is_some_and(|t| t.is_dir()) => break,
                Ok(_) | Err(Fail::NotFound) => start -= 1,
                Err(f) => return Err(self.failed(c, "write", rel, f)),
            }
        }
        for path in &parts[start..] {
            if let Err(f) = timed(c.sftp.fs().create_dir(path)).await {
                // Made by another writer meanwhile?
                match timed(c.sftp.fs().metadata(path)).await {
                    Ok(m) if m.file_type().is_some_and(|t| t.is_dir()) => {}
                    _ => {
                        let e = self.failed(c, "write", path, f);
                        return Err(self.with_room(c, e, rel, 0).await);
                    }
                }
            }
        }
        if let Ok(mut d) = self.dirs.lock() {
            d.extend(parts);
        }
        Ok(())
    }

    /// `e`, said as a full disk if the server says there is less room than
    /// `needed` bytes (and a few blocks) in folder `rel`.
    async fn with_room(
        &self,
        c: &Arc<Conn>,
        e: RemoteError,
        rel: &str,
        needed: u64,
    ) -> RemoteError {
        let RemoteError::Backend {
            location,
            op,
            path,
            reason,
            ..
        } = e
        else {
            return e;
        };
        if !c.sftp.support_statvfs() {
            return RemoteError::Backend {
                location,
                op,
                path,
                reason,
                full: false,
            };
        }
        let mut dir = self.full_path(rel);
        let room = loop {
            match timed(c.sftp.fs().statvfs(&dir)).await {
                Ok(s) => break Some(s.bavail.saturating_mul(s.frsize.max(1))),
                Err(Fail::NotFound) if dir.contains('/') => {
                    dir.truncate(dir.rfind('/').unwrap_or(0));
                    if dir.is_empty() {
                        dir.push('/');
                    }
                }
                Err(_) => break None,
            }
        };
        match room {
            Some(free) if free < needed.saturating_add(16 * 1024) => RemoteError::Backend {
                location,
                op,
                path,
                // sftp-server says only "Failure": the room says why.
                reason: if reason.ends_with(": Failure") {
                    format!(
                        "the server's disk is full ({} free, {} needed); nothing of this object was kept",
                        human(free),
                        human(needed)
                    )
                } else {
                    format!(
                        "the server's disk is full ({} free, {} needed; {reason}); nothing of this object was kept",
                        human(free),
                        human(needed)
                    )
                },
                full: true,
            },
            _ => RemoteError::Backend {
                location,
                op,
                path,
                reason,
                full: false,
            },
        }
    }

    /// Write `bytes` as `rel` (in folder `dir`), whole or not at all (see the
    /// module's text). `replace` an object of that name and another size
    /// (one cut short); else keep whatever is there. `Ok(false)`: there was
    /// one and it was kept.
    pub(super) async fn put(
        &self,
        c: &Arc<Conn>,
        dir: &str,
        rel: &str,
        bytes: &[u8],
        replace: bool,
    ) -> Result<bool, RemoteError> {
        crate::remote::backend::before_write();
        self.make_dir(c, dir).await?;
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let tmp_rel = if dir.is_empty() {
            format!(".tmp-{:016x}-{name}", crate::remote::opendal::random_u64())
        } else {
            format!(
                "{dir}/.tmp-{:016x}-{name}",
                crate::remote::opendal::random_u64()
            )
        };
        let tmp = self.full_path(&tmp_rel);
        let written = self.write_tmp(c, &tmp, bytes).await;
        if let Err(f) = written {
            let lost = matches!(f, Fail::Lost(_));
            let e = self.failed(c, "write", rel, f);
            if lost {
                return Err(e);
            }
            let _ = timed(c.sftp.fs().remove_file(&tmp)).await;
            return Err(self.with_room(c, e, dir, bytes.len() as u64).await);
        }
        let placed = self.place(c, &tmp, rel, bytes.len() as u64, replace).await;
        let _ = timed(c.sftp.fs().remove_file(&tmp)).await;
        let placed = placed?;
        crate::remote::backend::after_write();
        Ok(placed)
    }

    /// The temporary file written, synced, closed and its size read back.
    async fn write_tmp(&self, c: &Arc<Conn>, tmp: &str, bytes: &[u8]) -> Result<(), Fail> {
        let mut file = timed(c.sftp.options().write(true).create_new(true).open(tmp)).await?;
        let mut result = timed(file.write_all(bytes)).await;
        if result.is_ok() && c.sftp.support_fsync() {
            result = timed(file.sync_all()).await;
        }
        let closed = timed(file.close()).await;
        result?;
        closed?;
        let kept = timed(c.sftp.fs().metadata(tmp)).await?.len();
        if kept != Some(bytes.len() as u64) {
            return Err(Fail::Refused(format!(
                "the server kept {} of {} bytes",
                kept.map_or_else(|| "?".into(), |k| k.to_string()),
                bytes.len()
            )));
        }
        Ok(())
    }

    /// Give the whole temporary file `tmp` the name `rel`.
    async fn place(
        &self,
        c: &Arc<Conn>,
        tmp: &str,
        rel: &str,
        size: u64,
        replace: bool,
    ) -> Result<bool, RemoteError> {
        let path = self.full_path(rel);
        for attempt in 0..2 {
            let linked = if c.sftp.support_hardlink() {
                timed(c.sftp.fs().hard_link(tmp, &path)).await
            } else {
                // No hard links: look, then rename (which may replace).
                match timed(c.sftp.fs().metadata(&path)).await {
                    Ok(_) => Err(Fail::Refused("exists".into())),
                    Err(Fail::NotFound) => timed(c.sftp.fs().rename(tmp, &path)).await,
                    Err(f) => Err(f),
                }
            };
            let refused = match linked {
                Ok(()) => return Ok(true),
                Err(Fail::Lost(why)) => return Err(self.failed(c, "write", rel, Fail::Lost(why))),
                Err(f) => f,
            };
            // Refused: is an object of that name there?
            match timed(c.sftp.fs().metadata(&path)).await {
                Ok(m) if m.len() == Some(size) => return Ok(false),
                Ok(_) if replace && attempt == 0 => {
                    timed(c.sftp.fs().remove_file(&path))
                        .await
                        .map_err(|f| self.failed(c, "write", rel, f))?;
                }
                Ok(_) => return Ok(false),
                Err(Fail::NotFound) => return Err(self.failed(c, "write", rel, refused)),
                Err(f) => return Err(self.failed(c, "write", rel, f)),
            }
        }
        Err(self.error(
            "write",
            rel,
            "an object of that name keeps coming back".into(),
            false,
        ))
    }
}

/// A size for a message.
fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}
