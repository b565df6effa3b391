//! A remote store on an SFTP server (Unix): the SFTP protocol
//! (openssh-sftp-client) over one `ssh -s sftp` child (`ssh.rs`), which
//! carries every transfer at once (requests are pipelined), and ends with
//! the remote or this process.
//!
//! A write is done only when the server has confirmed every byte: each
//! write request's answer, then `fsync@openssh.com` where the server has
//! it, the close, and the size read back, all of the temporary
//! `.tmp-<random>-<name>`; only then does the object get its name, by a hard
//! link (`hardlink@openssh.com`, which never replaces: an object of that
//! name and size already there is kept, one of another size was cut short
//! and is replaced). A write that fails removes its temporary file and asks
//! the server how much room is left (`statvfs@openssh.com`), to say when
//! the disk is full: `sftp-server` answers a full disk with the bare
//! "Failure".

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openssh_sftp_client::error::SftpErrorKind;
use openssh_sftp_client::{Error as SftpError, Sftp, SftpOptions};
use tokio::runtime::Runtime;

use super::backend::{Backend, Entry, Kind, ReadResult};
use super::ssh::{self, SshChild, Target};
use super::RemoteError;

mod read;
mod write;

/// Transfers at once, all on the one connection.
const IN_FLIGHT: usize = 8;

/// How many chunk folders are listed at once: a listing is small requests
/// and small answers, and 256 folders listed eight at a time took a tenth
/// of a second of round trips on loopback (issue 47).
const LIST_IN_FLIGHT: usize = 64;
/// The longest one request may wait for its answer.
const OP_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest `ssh` may take to start an SFTP session (its own
/// `ConnectTimeout` is shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(ssh::CONNECT_TIMEOUT_S + 10);

/// One SFTP session and the `ssh` under it (dropped in this order: the
/// session closes the pipe, then the child is killed if still there).
struct Conn {
    sftp: Sftp,
    ssh: SshChild,
}

/// An SFTP remote.
pub struct SftpBackend {
    rt: Runtime,
    location: String,
    target: Target,
    /// The store's folder on the server (relative to the login folder unless
    /// it starts with `/`).
    root: String,
    conn: Mutex<Option<Arc<Conn>>>,
    /// Folders known to exist (made or seen).
    dirs: Mutex<HashSet<String>>,
}

/// What went wrong with one request.
enum Fail {
    /// The server answered: no such file.
    NotFound,
    /// The server answered with another error (its words).
    Refused(String),
    /// The connection failed or gave no answer (what was seen).
    Lost(String),
    /// One read got no answer in the per-object read timeout (`read.rs`):
    /// that file hangs, or the server does.
    Hung(String),
}

fn classify(e: SftpError) -> Fail {
    match e {
        SftpError::SftpError(SftpErrorKind::NoSuchFile, _) => Fail::NotFound,
        SftpError::SftpError(kind, msg) => {
            let (text, _) = msg.get();
            Fail::Refused(if text.is_empty() {
                format!("{kind:?}")
            } else {
                text.to_owned()
            })
        }
        other => Fail::Lost(other.to_string()),
    }
}

/// `f`, or [`Fail::Lost`] if the server does not answer in time.
async fn timed<T>(f: impl Future<Output = Result<T, SftpError>>) -> Result<T, Fail> {
    match tokio::time::timeout(OP_TIMEOUT, f).await {
        Ok(r) => r.map_err(classify),
        Err(_) => Err(Fail::Lost(format!(
            "no answer from the server for {} s",
            OP_TIMEOUT.as_secs()
        ))),
    }
}

impl SftpBackend {
    /// A backend for `target`'s folder `root`, named `location` in
    /// messages. Connects at its first use.
    pub(super) fn new(location: String, target: Target, root: String) -> Result<Self, RemoteError> {
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
        Ok(SftpBackend {
            rt,
            location,
            target,
            root: root.trim_end_matches('/').to_owned(),
            conn: Mutex::new(None),
            dirs: Mutex::new(HashSet::new()),
        })
    }

    fn full_path(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.root.clone()
        } else {
            format!("{}/{rel}", self.root)
        }
    }

    /// The open session, or a new one.
    async fn conn(&self) -> Result<Arc<Conn>, RemoteError> {
        if let Some(c) = self.conn.lock().ok().and_then(|g| g.clone()) {
            return Ok(c);
        }
        let c = Arc::new(self.connect().await?);
        if let Ok(mut g) = self.conn.lock() {
            *g = Some(Arc::clone(&c));
        }
        Ok(c)
    }

    async fn connect(&self) -> Result<Conn, RemoteError> {
        let mut child = ssh::spawn(&self.target, &self.location)?;
        let (Some(stdin), Some(stdout)) = (child.child.stdin.take(), child.child.stdout.take())
        else {
            return Err(self.error("connect", "", "ssh's pipes are missing".into(), false));
        };
        let started = tokio::time::timeout(
            CONNECT_TIMEOUT,
            Sftp::new(stdin, stdout, SftpOptions::new()),
        )
        .await;
        let why = match started {
            Ok(Ok(sftp)) => return Ok(Conn { sftp, ssh: child }),
            Ok(Err(e)) => format!("the SFTP session did not start: {e}"),
            Err(_) => format!(
                "no SFTP session after {} s (the server does not answer)",
                CONNECT_TIMEOUT.as_secs()
            ),
        };
        // What ssh said: it has exited, or is ended now.
        let _ = child.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), child.child.wait()).await;
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut child.reader).await;
        Err(ssh::connect_error(
            &self.location,
            &self.target,
            &child.said(),
            &why,
        ))
    }

    /// Forget the session `c` (it failed): the next request starts another.
    fn drop_conn(&self, c: &Arc<Conn>) {
        if let Ok(mut g) = self.conn.lock() {
            if g.as_ref().is_some_and(|cur| Arc::ptr_eq(cur, c)) {
                *g = None;
            }
        }
    }

    fn error(&self, op: &'static str, path: &str, reason: String, full: bool) -> RemoteError {
        RemoteError::Backend {
            location: self.location.clone(),
            op,
            path: path.to_owned(),
            reason,
            full,
        }
    }

    /// The error for `fail` in `op` on `path`; a lost connection is
    /// forgotten, and ssh's last words join the reason.
    fn failed(&self, c: &Arc<Conn>, op: &'static str, path: &str, fail: Fail) -> RemoteError {
        match fail {
            Fail::NotFound => self.error(op, path, "no such file or folder".into(), false),
            Fail::Refused(why) => self.error(op, path, format!("the server refused: {why}"), false),
            Fail::Lost(why) | Fail::Hung(why) => {
                self.drop_conn(c);
                let reason = match ssh::last_line(&c.ssh.said()) {
                    Some(said) => format!("the connection was lost (ssh: {said})"),
                    None => format!("the connection was lost ({why})"),
                };
                self.error(op, path, reason, false)
            }
        }
    }

    /// The names and sizes in folder `rel` (`None`: there is no such
    /// folder), folders marked by a trailing `/`.
    async fn list_dir(&self, c: &Arc<Conn>, rel: &str) -> Result<Option<Vec<Entry>>, RemoteError> {
        let path = self.full_path(rel);
        let result: Result<Vec<Entry>, Fail> = async {
            let dir = timed(c.sftp.fs().open_dir(&path)).await?;
            let mut stream = Box::pin(dir.read_dir());
            let mut out = Vec::new();
            loop {
                let next = tokio::time::timeout(
                    OP_TIMEOUT,
                    std::future::poll_fn(|cx| futures_core::Stream::poll_next(stream.as_mut(), cx)),
                )
                .await
                .map_err(|_| Fail::Lost("no answer while listing".into()))?;
                let Some(entry) = next else { break };
                let entry = entry.map_err(classify)?;
                let name = entry.filename().to_string_lossy().into_owned();
                if name == "." || name == ".." {
                    continue;
                }
                let meta = entry.metadata();
                let is_dir = meta.file_type().is_some_and(|t| t.is_dir());
                out.push(Entry {
                    name: if is_dir { format!("{name}/") } else { name },
                    size: meta.len().unwrap_or(0),
                    modified_ms: meta
                        .modified()
                        .and_then(|t| crate::store::unix_ms(t.as_system_time())),
                });
            }
            Ok(out)
        }
        .await;
        match result {
            Ok(v) => Ok(Some(v)),
            Err(Fail::NotFound) => Ok(None),
            Err(f) => Err(self.failed(c, "list", rel, f)),
        }
    }

    async fn read_rel(&self, c: &Arc<Conn>, rel: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        match timed(c.sftp.fs().read(self.full_path(rel))).await {
            Ok(b) => Ok(Some(b.to_vec())),
            Err(Fail::NotFound) => Ok(None),
            Err(f) => Err(self.failed(c, "read", rel, f)),
        }
    }

    /// The chunks: the fan-out folders, then several of them at once.
    async fn list_chunks(&self, c: &Arc<Conn>) -> Result<Vec<Entry>, RemoteError> {
        let Some(fans) = self.list_dir(c, "chunks").await? else {
            return Ok(Vec::new());
        };
        let dirs: Vec<String> = fans
            .into_iter()
            .filter_map(|e| e.name.strip_suffix('/').map(str::to_owned))
            .filter(|n| Kind::valid_name(n))
            .collect();
        self.list_chunk_dirs(c, &dirs).await
    }

    /// The chunks in the fan-out folders `dirs`, several folders at once.
    async fn list_chunk_dirs(
        &self,
        c: &Arc<Conn>,
        dirs: &[String],
    ) -> Result<Vec<Entry>, RemoteError> {
        let mut out = Vec::new();
        for group in dirs.chunks(LIST_IN_FLIGHT) {
            let mut lists = Vec::new();
            for d in group {
                let dir = format!("chunks/{d}");
                lists.push(async move { self.list_dir(c, &dir).await });
            }
            for listed in join_all(lists).await {
                out.extend(
                    listed?
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|e| !e.name.ends_with('/') && Kind::valid_name(&e.name)),
                );
            }
        }
        Ok(out)
    }

    /// The folder an object of `kind` named `name` goes in.
    fn dir_of(kind: Kind, name: &str) -> String {
        let path = kind.path(name);
        path.rsplit_once('/')
            .map_or_else(String::new, |(d, _)| d.to_owned())
    }
}

/// Every future of `futs`, run at once on this task.
async fn join_all<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut futs: Vec<_> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in futs.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

impl Backend for SftpBackend {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn list_chunks_in(
        &self,
        fans: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<Entry>, RemoteError> {
        let dirs: Vec<String> = fans
            .iter()
            .filter(|f| Kind::valid_name(f))
            .cloned()
            .collect();
        self.rt.block_on(async {
            let c = self.conn().await?;
            let mut out = self.list_chunk_dirs(&c, &dirs).await?;
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        })
    }

    fn list(&self, kind: Kind) -> Result<Vec<Entry>, RemoteError> {
        self.rt.block_on(async {
            let c = self.conn().await?;
            let mut out = if kind == Kind::Chunks {
                self.list_chunks(&c).await?
            } else {
                self.list_dir(&c, kind.dir())
                    .await?
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|e| !e.name.ends_with('/') && Kind::valid_name(&e.name))
                    .collect()
            };
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        })
    }

    fn read(&self, kind: Kind, name: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        self.rt.block_on(async {
            let c = self.conn().await?;
            self.read_rel(&c, &kind.path(name)).await
        })
    }

    fn write(&self, kind: Kind, name: &str, bytes: &[u8]) -> Result<(), RemoteError> {
        self.rt.block_on(async {
            let c = self.conn().await?;
            self.put(&c, &Self::dir_of(kind, name), &kind.path(name), bytes, true)
                .await
                .map(|_| ())
        })
    }

    fn write_new(&self, kind: Kind, name: &str, bytes: &[u8]) -> Result<bool, RemoteError> {
        self.rt.block_on(async {
            let c = self.conn().await?;
            let rel = kind.path(name);
            if self.read_rel(&c, &rel).await?.is_some() {
                return Ok(false);
            }
            self.put(&c, &Self::dir_of(kind, name), &rel, bytes, false)
                .await
        })
    }

    fn atomic_create(&self) -> bool {
        true
    }

    fn remove_temporary(&self, written_before_ms: Option<u64>) -> Result<u64, RemoteError> {
        self.rt.block_on(async {
            let c = self.conn().await?;
            let mut dirs = vec![String::new()];
            for kind in Kind::ALL.into_iter().filter(|k| *k != Kind::Marker) {
                dirs.push(kind.dir().to_owned());
            }
            if let Some(fans) = self.list_dir(&c, "chunks").await? {
                dirs.extend(
                    fans.iter()
                        .filter_map(|e| e.name.strip_suffix('/'))
                        .map(|d| format!("chunks/{d}")),
                );
            }
            let mut removed = 0;
            for dir in dirs {
                for e in self.list_dir(&c, &dir).await?.unwrap_or_default() {
                    if e.name.ends_with('/')
                        || !Kind::is_temporary(&e.name)
                        || !super::backend::temporary_due(written_before_ms, e.modified_ms)
                    {
                        continue;
                    }
                    let rel = if dir.is_empty() {
                        e.name.clone()
                    } else {
                        format!("{dir}/{}", e.name)
                    };
                    match timed(c.sftp.fs().remove_file(self.full_path(&rel))).await {
                        Ok(()) => removed += 1,
                        Err(Fail::NotFound) => {}
                        Err(f) => return Err(self.failed(&c, "remove", &rel, f)),
                    }
                }
            }
            Ok(removed)
        })
    }

    fn remove(&self, kind: Kind, name: &str) -> Result<(), RemoteError> {
        self.rt.block_on(async {
            let c = self.conn().await?;
            let rel = kind.path(name);
            match timed(c.sftp.fs().remove_file(self.full_path(&rel))).await {
                Ok(()) => {
                    super::backend::after_write();
                    Ok(())
                }
                Err(Fail::NotFound) => Ok(()),
                Err(f) => Err(self.failed(&c, "remove", &rel, f)),
            }
        })
    }

    fn is_empty(&self) -> Result<bool, RemoteError> {
        self.rt.block_on(async {
            let c = self.conn().await?;
            Ok(self
                .list_dir(&c, "")
                .await?
                .is_none_or(|entries| entries.is_empty()))
        })
    }

    fn write_many(
        &self,
        items: Vec<(Kind, String, Vec<u8>)>,
        done: &mut dyn FnMut(u64),
    ) -> Result<(), RemoteError> {
        self.rt.block_on(async {
            let c = self.conn().await?;
            let mut items = items.into_iter();
            loop {
                let group: Vec<_> = items.by_ref().take(IN_FLIGHT).collect();
                if group.is_empty() {
                    return Ok(());
                }
                let writes: Vec<_> = group
                    .iter()
                    .map(|(kind, name, bytes)| {
                        let (dir, rel) = (Self::dir_of(*kind, name), kind.path(name));
                        let c = &c;
                        async move { self.put(c, &dir, &rel, bytes, true).await }
                    })
                    .collect();
                let mut failed = None;
                for (result, (_, _, bytes)) in join_all(writes).await.into_iter().zip(&group) {
                    match result {
                        Ok(_) => done(bytes.len() as u64),
                        Err(e) => {
                            // A full disk says more than the writes it failed.
                            let keep = failed.as_ref().is_none_or(|f: &RemoteError| {
                                matches!(e, RemoteError::Backend { full: true, .. })
                                    && !matches!(f, RemoteError::Backend { full: true, .. })
                            });
                            if keep {
                                failed = Some(e);
                            }
                        }
                    }
                }
                if let Some(e) = failed {
                    return Err(e);
                }
            }
        })
    }

    /// Each group of reads goes on one connection. `sftp-server` answers
    /// one request at a time, so a read that hangs (a named pipe where the
    /// object should be) holds up every read behind it: when reads get no
    /// answer for [`read_timeout`](super::backend::read_timeout), the
    /// connection is dropped (its `ssh` killed) and each of them is tried
    /// again alone on a new one; one that hangs again is unreadable. A new
    /// connection that cannot be made, or one lost while a read was
    /// answered, fails the whole call.
    fn read_many(
        &self,
        items: Vec<(Kind, String)>,
        done: &mut dyn FnMut(u64),
    ) -> Result<Vec<ReadResult>, RemoteError> {
        let got = self.rt.block_on(async {
            let mut out = Vec::with_capacity(items.len());
            for group in items.chunks(IN_FLIGHT) {
                let c = self.conn().await?;
                let reads: Vec<_> = group
                    .iter()
                    .map(|(kind, name)| {
                        let rel = kind.path(name);
                        let c = &c;
                        async move { self.read_timed(c, &rel).await }
                    })
                    .collect();
                let results = join_all(reads).await;
                if results
                    .iter()
                    .any(|r| matches!(r, Err(Fail::Lost(_) | Fail::Hung(_))))
                {
                    self.drop_conn(&c);
                }
                for ((kind, name), got) in group.iter().zip(results) {
                    let rel = kind.path(name);
                    let got = match got {
                        Err(Fail::Lost(_) | Fail::Hung(_)) => self.read_alone(&rel).await?,
                        other => self.one_result(&rel, other),
                    };
                    if let Ok(b) = &got {
                        done(b.as_ref().map_or(0, |b| b.len() as u64));
                    }
                    out.push(got);
                }
            }
            Ok::<_, RemoteError>(out)
        })?;
        super::backend::settle_reads(got, || {
            self.rt.block_on(async {
                let c = self.conn().await?;
                match self.answers(&c).await {
                    Ok(()) => Ok(()),
                    Err(f) => Err(self.failed(&c, "list", "", f)),
                }
            })
        })
    }
}

impl Drop for SftpBackend {
    /// Close the session and let `ssh` end (it is killed if it lingers).
    fn drop(&mut self) {
        let conn = self.conn.get_mut().ok().and_then(Option::take);
        let Some(conn) = conn.and_then(|c| Arc::try_unwrap(c).ok()) else {
            return;
        };
        let Conn { sftp, mut ssh } = conn;
        self.rt.block_on(async {
            let _ = tokio::time::timeout(Duration::from_secs(2), sftp.close()).await;
            if tokio::time::timeout(Duration::from_secs(2), ssh.child.wait())
                .await
                .is_err()
            {
                let _ = ssh.child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(1), ssh.child.wait()).await;
            }
        });
    }
}
