//! Remote stores on storage engines, through Apache OpenDAL: S3 and WebDAV
//! (`services.rs` builds each; SFTP is `sftp.rs`). OpenDAL is async; this backend owns a
//! small current-thread tokio runtime and blocks on it, so the library stays
//! synchronous for its callers, and runs several transfers at once inside it.

use std::time::Duration;

use opendal::{ErrorKind, Operator};
use tokio::runtime::Runtime;

use super::backend::{Backend, Entry, Kind, ReadResult};
use super::RemoteError;

/// How many transfers run at once.
const IN_FLIGHT: usize = 8;

/// A backend on an OpenDAL operator.
pub struct OpendalBackend {
    op: Operator,
    rt: Runtime,
    location: String,
    /// Write under a temporary name, then rename (services whose writes are
    /// not atomic: WebDAV).
    rename: bool,
    /// Transfers at once.
    in_flight: usize,
}

impl OpendalBackend {
    /// A backend on `op`, named `location` in messages; `rename` as above.
    pub(super) fn new(op: Operator, location: String, rename: bool) -> Result<Self, RemoteError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| RemoteError::Backend {
                location: location.clone(),
                op: "start",
                path: String::new(),
                reason: e.to_string(),
                full: false,
            })?;
        let op = op
            .layer(
                opendal::layers::RetryLayer::new()
                    .with_max_times(3)
                    .with_min_delay(Duration::from_millis(100))
                    .with_max_delay(Duration::from_secs(2))
                    .with_jitter(),
            )
            .layer(
                opendal::layers::TimeoutLayer::new()
                    .with_timeout(Duration::from_secs(60))
                    .with_io_timeout(Duration::from_secs(30)),
            );
        Ok(OpendalBackend {
            op,
            rt,
            location,
            rename,
            in_flight: IN_FLIGHT,
        })
    }

    fn err(location: &str, op: &'static str, path: &str, e: opendal::Error) -> RemoteError {
        let mut reason = e.to_string();
        // OpenDAL's text of a failed request ends at "error sending
        // request"; why it failed (a certificate refused, a connection
        // refused) is the last of its sources.
        if let Some(cause) = super::error::last_cause(&e).filter(|c| !reason.contains(c.as_str())) {
            reason = format!("{reason}: {cause}");
        }
        let lower = reason.to_ascii_lowercase();
        let mut full = lower.contains("no space")
            || lower.contains("quota")
            || lower.contains("insufficient storage")
            || lower.contains("507")
            || lower.contains("disk full");
        // A write a WebDAV server answers "405 Method Not Allowed" (a
        // method it takes for every other write): rclone's server answers
        // so when its disk is full, and says why only in its own log.
        if op == "write" && lower.contains("status: 405") {
            full = true;
            reason = "the server refused the write (405 Method Not Allowed): its disk is full, most likely (rclone's WebDAV server answers a full disk so)".into();
        } else if let Some(status) = http_status(&reason) {
            // OpenDAL's text holds the whole request; its status says it.
            reason = match e.kind() {
                ErrorKind::Unexpected => status.clone(),
                kind => format!("{kind} ({status})"),
            };
            if full {
                reason = format!("the server is out of space ({status})");
            }
        } else if let Some((_, said)) = reason.rsplit_once("} => ") {
            // No status: what failed is after OpenDAL's context (which
            // repeats the location and path the message names already).
            reason = format!("{}: {said}", e.kind());
        }
        RemoteError::Backend {
            location: location.to_owned(),
            op,
            path: path.to_owned(),
            reason,
            full,
        }
    }
}

/// The HTTP status in OpenDAL's text of a failed request, and the server's
/// words for it
/// (`status: 404, ... => Not Found`, an S3 error's `message`), as
/// `HTTP 404 Not Found`.
/// When the server last wrote an object, as its listing says (S3's
/// `LastModified`, WebDAV's `getlastmodified`).
fn modified_ms(meta: &opendal::Metadata) -> Option<u64> {
    let t: std::time::SystemTime = meta.last_modified()?.into();
    crate::store::unix_ms(t)
}

fn http_status(text: &str) -> Option<String> {
    let at = text.find("status: ")? + "status: ".len();
    let code: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if code.len() != 3 {
        return None;
    }
    let words = text.rsplit_once("} => ").map(|(_, w)| w.trim());
    // S3 servers say why in the message of their error document.
    let message = words
        .and_then(|w| w.split_once("message: \""))
        .and_then(|(_, m)| m.split_once("\", "))
        .map(|(m, _)| m.to_owned());
    Some(match (message, words) {
        (Some(m), _) => format!("HTTP {code}: {m}"),
        (None, Some(w)) if !w.is_empty() && w.len() < 80 => format!("HTTP {code} {w}"),
        _ => format!("HTTP {code}"),
    })
}

async fn write_one(
    op: &Operator,
    location: &str,
    rename: bool,
    path: String,
    bytes: Vec<u8>,
) -> Result<(), RemoteError> {
    super::backend::before_write();
    let done = write_one_inner(op, location, rename, path, bytes).await;
    if done.is_ok() {
        super::backend::after_write();
    }
    done
}

async fn write_one_inner(
    op: &Operator,
    location: &str,
    rename: bool,
    path: String,
    bytes: Vec<u8>,
) -> Result<(), RemoteError> {
    if !rename {
        return op
            .write(&path, bytes)
            .await
            .map(|_| ())
            .map_err(|e| OpendalBackend::err(location, "write", &path, e));
    }
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", &path));
    let tmp = format!(
        "{}{}.tmp-{:016x}-{name}",
        dir,
        if dir.is_empty() { "" } else { "/" },
        random_u64()
    );
    let size = bytes.len() as u64;
    if let Err(e) = op.write(&tmp, bytes).await {
        let _ = op.delete(&tmp).await;
        return Err(OpendalBackend::err(location, "write", &path, e));
    }
    // Only an object the server holds whole gets its name.
    let kept = match op.stat(&tmp).await {
        Ok(m) => m.content_length(),
        Err(e) => {
            let _ = op.delete(&tmp).await;
            return Err(OpendalBackend::err(location, "write", &path, e));
        }
    };
    if kept != size {
        let _ = op.delete(&tmp).await;
        return Err(RemoteError::Backend {
            location: location.to_owned(),
            op: "write",
            path,
            reason: format!("the server kept {kept} of {size} bytes"),
            full: false,
        });
    }
    match op.rename(&tmp, &path).await {
        Ok(()) => Ok(()),
        Err(e) => {
            // Another writer put the same object there first: whole (the
            // same size), it is ours to keep.
            let _ = op.delete(&tmp).await;
            match op.stat(&path).await {
                Ok(m) if m.content_length() == size => Ok(()),
                _ => Err(OpendalBackend::err(location, "write", &path, e)),
            }
        }
    }
}

async fn read_one(
    op: &Operator,
    location: &str,
    path: String,
) -> Result<Option<Vec<u8>>, RemoteError> {
    match op.read(&path).await {
        Ok(b) => Ok(Some(b.to_vec())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(OpendalBackend::err(location, "read", &path, e)),
    }
}

/// A number no other writer picks, for temporary and lock names: the
/// clock, the process, a counter.
pub(super) fn random_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = blake3::Hasher::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.update(&now.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d.as_bytes()[..8].try_into().unwrap_or([0; 8]))
}

impl OpendalBackend {
    /// The chunks, on services that list one folder per request (SFTP,
    /// WebDAV): the fan-out folders, then several of them at once.
    fn list_fanned_out(&self) -> Result<Vec<Entry>, RemoteError> {
        let top = "chunks/";
        self.rt.block_on(async {
            let fans = match self.op.list(top).await {
                Ok(e) => e,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(Self::err(&self.location, "list", top, e)),
            };
            let mut dirs = fans
                .into_iter()
                .filter(|e| e.path().ends_with('/') && e.path() != top)
                .map(|e| e.path().to_owned());
            let mut out = Vec::new();
            let mut set = tokio::task::JoinSet::new();
            loop {
                while set.len() < self.in_flight {
                    let Some(dir) = dirs.next() else { break };
                    let op = self.op.clone();
                    set.spawn(async move {
                        let got = op.list(&dir).await;
                        (dir, got)
                    });
                }
                let Some(joined) = set.join_next().await else {
                    break;
                };
                let (dir, got) = joined.map_err(|e| RemoteError::Backend {
                    location: self.location.clone(),
                    op: "list",
                    path: top.to_owned(),
                    reason: e.to_string(),
                    full: false,
                })?;
                let entries = match got {
                    Ok(e) => e,
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(Self::err(&self.location, "list", &dir, e)),
                };
                out.extend(
                    entries
                        .into_iter()
                        .filter(|e| !e.path().ends_with('/') && Kind::valid_name(e.name()))
                        .map(|e| Entry {
                            name: e.name().to_owned(),
                            size: e.metadata().content_length(),
                            modified_ms: modified_ms(e.metadata()),
                        }),
                );
            }
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        })
    }
}

impl Backend for OpendalBackend {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn list(&self, kind: Kind) -> Result<Vec<Entry>, RemoteError> {
        if kind == Kind::Chunks && self.rename {
            return self.list_fanned_out();
        }
        let dir = format!("{}/", kind.dir());
        let listed = self.rt.block_on(async {
            self.op
                .list_with(&dir)
                .recursive(kind == Kind::Chunks)
                .await
        });
        let entries = match listed {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Self::err(&self.location, "list", &dir, e)),
        };
        let mut out: Vec<Entry> = entries
            .into_iter()
            .filter(|e| !e.path().ends_with('/'))
            .filter(|e| Kind::valid_name(e.name()))
            .map(|e| Entry {
                name: e.name().to_owned(),
                size: e.metadata().content_length(),
                modified_ms: modified_ms(e.metadata()),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn read(&self, kind: Kind, name: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        self.rt
            .block_on(read_one(&self.op, &self.location, kind.path(name)))
    }

    fn write(&self, kind: Kind, name: &str, bytes: &[u8]) -> Result<(), RemoteError> {
        self.rt.block_on(write_one(
            &self.op,
            &self.location,
            self.rename,
            kind.path(name),
            bytes.to_vec(),
        ))
    }

    fn write_new(&self, kind: Kind, name: &str, bytes: &[u8]) -> Result<bool, RemoteError> {
        let path = kind.path(name);
        let cap = self.op.info().full_capability();
        self.rt.block_on(async {
            if self.rename {
                // WebDAV: a look, then a write (a MOVE may replace).
                if self.op.exists(&path).await.unwrap_or(false) {
                    return Ok(false);
                }
                return write_one(&self.op, &self.location, true, path, bytes.to_vec())
                    .await
                    .map(|()| true);
            }
            if cap.write_with_if_not_exists {
                return match self
                    .op
                    .write_with(&path, bytes.to_vec())
                    .if_not_exists(true)
                    .await
                {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == ErrorKind::ConditionNotMatch => Ok(false),
                    Err(e) => Err(Self::err(&self.location, "write", &path, e)),
                };
            }
            if self.op.exists(&path).await.unwrap_or(false) {
                return Ok(false);
            }
            write_one(&self.op, &self.location, false, path, bytes.to_vec())
                .await
                .map(|()| true)
        })
    }

    fn remove_temporary(&self, written_before_ms: Option<u64>) -> Result<u64, RemoteError> {
        if !self.rename {
            return Ok(0);
        }
        self.rt.block_on(async {
            let entries = match self.op.list_with("/").recursive(true).await {
                Ok(e) => e,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
                Err(e) => return Err(Self::err(&self.location, "list", "/", e)),
            };
            let mut removed = 0;
            for e in entries {
                if !e.path().ends_with('/')
                    && Kind::is_temporary(e.name())
                    && super::backend::temporary_due(written_before_ms, modified_ms(e.metadata()))
                {
                    self.op
                        .delete(e.path())
                        .await
                        .map_err(|err| Self::err(&self.location, "remove", e.path(), err))?;
                    removed += 1;
                }
            }
            Ok(removed)
        })
    }

    fn remove(&self, kind: Kind, name: &str) -> Result<(), RemoteError> {
        let path = kind.path(name);
        match self.rt.block_on(self.op.delete(&path)) {
            Ok(()) => {
                super::backend::after_write();
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Self::err(&self.location, "remove", &path, e)),
        }
    }

    fn is_empty(&self) -> Result<bool, RemoteError> {
        match self.rt.block_on(self.op.list("/")) {
            Ok(entries) => Ok(entries
                .iter()
                .all(|e| e.path() == "/" || e.path().is_empty())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(true),
            Err(e) => Err(Self::err(&self.location, "list", "/", e)),
        }
    }

    fn write_many(
        &self,
        items: Vec<(Kind, String, Vec<u8>)>,
        done: &mut dyn FnMut(u64),
    ) -> Result<(), RemoteError> {
        self.rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            let mut items = items.into_iter();
            let mut failed = None;
            loop {
                while set.len() < self.in_flight && failed.is_none() {
                    let Some((kind, name, bytes)) = items.next() else {
                        break;
                    };
                    let op = self.op.clone();
                    let location = self.location.clone();
                    let rename = self.rename;
                    set.spawn(async move {
                        let n = bytes.len() as u64;
                        write_one(&op, &location, rename, kind.path(&name), bytes)
                            .await
                            .map(|()| n)
                    });
                }
                let Some(joined) = set.join_next().await else {
                    break;
                };
                match joined {
                    Ok(Ok(n)) => done(n),
                    Ok(Err(e)) => {
                        failed.get_or_insert(e);
                    }
                    Err(e) => {
                        failed.get_or_insert(RemoteError::Backend {
                            location: self.location.clone(),
                            op: "write",
                            path: String::new(),
                            reason: e.to_string(),
                            full: false,
                        });
                    }
                }
            }
            failed.map_or(Ok(()), Err)
        })
    }

    fn read_many(
        &self,
        items: Vec<(Kind, String)>,
        done: &mut dyn FnMut(u64),
    ) -> Result<Vec<ReadResult>, RemoteError> {
        let timeout = super::backend::read_timeout();
        let got = self.rt.block_on(async {
            let total = items.len();
            let mut out: Vec<ReadResult> = (0..total).map(|_| Ok(None)).collect();
            let mut set = tokio::task::JoinSet::new();
            let mut items = items.into_iter().enumerate();
            loop {
                while set.len() < self.in_flight {
                    let Some((i, (kind, name))) = items.next() else {
                        break;
                    };
                    let op = self.op.clone();
                    let location = self.location.clone();
                    set.spawn(async move {
                        let path = kind.path(&name);
                        let got =
                            tokio::time::timeout(timeout, read_one(&op, &location, path.clone()))
                                .await
                                .unwrap_or_else(|_| {
                                    Err(RemoteError::Backend {
                                        location,
                                        op: "read",
                                        path,
                                        reason: format!(
                                            "no answer for {} s",
                                            timeout.as_secs_f64().round()
                                        ),
                                        full: false,
                                    })
                                });
                        (i, got)
                    });
                }
                let Some(joined) = set.join_next().await else {
                    break;
                };
                let (i, got) = joined.map_err(|e| RemoteError::Backend {
                    location: self.location.clone(),
                    op: "read",
                    path: String::new(),
                    reason: e.to_string(),
                    full: false,
                })?;
                if let Ok(b) = &got {
                    done(b.as_ref().map_or(0, |b| b.len() as u64));
                }
                out[i] = got;
            }
            Ok::<_, RemoteError>(out)
        })?;
        // Whether the server still answers: a listing of the keys.
        super::backend::settle_reads(got, || {
            let listed = self
                .rt
                .block_on(async { tokio::time::timeout(timeout, self.op.list("keys/")).await });
            match listed {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) if e.kind() == ErrorKind::NotFound => Ok(()),
                Ok(Err(e)) => Err(Self::err(&self.location, "list", "keys/", e)),
                Err(_) => Err(RemoteError::Backend {
                    location: self.location.clone(),
                    op: "list",
                    path: "keys/".into(),
                    reason: "no answer".into(),
                    full: false,
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{http_status, OpendalBackend, RemoteError};

    #[test]
    fn http_errors_are_their_status_and_the_servers_words() {
        let garage = r#"PermissionDenied (persistent) at write, context: { uri: http://h/b/k, response: Parts { status: 403, version: HTTP/1.1, headers: {} }, service: s3, path: k, written: 299 } => S3Error { code: "AccessDenied", message: "Forbidden: Bucket size quota is reached", resource: "/b/k", request_id: "" }"#;
        assert_eq!(
            http_status(garage).unwrap(),
            "HTTP 403: Forbidden: Bucket size quota is reached"
        );
        let webdav = "Unexpected (persistent) at read, context: { response: Parts { status: 401, version: HTTP/1.1 } } => Unauthorized";
        assert_eq!(http_status(webdav).unwrap(), "HTTP 401 Unauthorized");
        assert_eq!(http_status("connection refused"), None);
    }

    #[test]
    fn an_error_without_a_status_is_what_failed_without_the_context() {
        let e = opendal::Error::new(opendal::ErrorKind::Unexpected, "io timeout reached")
            .with_operation("read")
            .with_context("timeout", "30");
        assert!(e.to_string().contains("context: {"), "{e}");
        let RemoteError::Backend { reason, .. } = OpendalBackend::err("w", "read", "chunks/x", e)
        else {
            panic!("not a backend error");
        };
        assert_eq!(reason, "Unexpected: io timeout reached");
    }
}
