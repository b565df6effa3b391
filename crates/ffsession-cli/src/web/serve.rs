//! Serving the page so that no client, another local user's included, can
//! stop it or hold it: every connection is HTTP/1 through hyper with tokio's
//! timers, so a request whose headers do not arrive within the header
//! timeout is dropped (hyper's `header_read_timeout`, which also ends a
//! kept-alive connection left idle), as is a request body or a response
//! that does not move for the I/O timeout; at most [`Limits::connections`]
//! are open at once, the others wait in the listener's queue, so the
//! server's open files never run out on connections; an `accept` that
//! fails anyway (out of open files, a connection reset before it was
//! taken) is logged and tried again after a pause, never a panic.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Sleep;

/// How long and how many.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once.
    pub connections: usize,
    /// The time a client has to send a request's headers, and the longest a
    /// kept-alive connection stays open with no request.
    pub header: Duration,
    /// The longest a request body or an answer may make no progress.
    pub io: Duration,
}

impl Limits {
    /// 64 connections (a browser opens six at most to one server), 10 s
    /// for headers, 30 s of no progress. `FFSESSION_TEST_UI_TIMEOUT_MS`
    /// (tests only, debug builds) sets both times.
    pub fn new() -> Limits {
        let test = ffsession::test_setting!("UI_TIMEOUT_MS").map(Duration::from_millis);
        Limits {
            connections: 64,
            header: test.unwrap_or(Duration::from_secs(10)),
            io: test.unwrap_or(Duration::from_secs(30)),
        }
    }
}

/// Serve `router` on every listener, sharing one cap on connections.
/// Returns only if every listener's loop ends (it does not).
pub async fn serve(listeners: Vec<TcpListener>, router: Router, limits: Limits) {
    let slots = Arc::new(Semaphore::new(limits.connections));
    let mut loops = tokio::task::JoinSet::new();
    for listener in listeners {
        loops.spawn(accept_loop(listener, router.clone(), slots.clone(), limits));
    }
    while loops.join_next().await.is_some() {}
}

async fn accept_loop(listener: TcpListener, router: Router, slots: Arc<Semaphore>, limits: Limits) {
    let address = listener
        .local_addr()
        .map_or_else(|_| "the page's address".to_owned(), |a| a.to_string());
    let mut pause = PAUSE_MIN;
    let mut warned: Option<Instant> = None;
    loop {
        // A free slot first: past the cap, connections wait in the
        // listener's queue rather than take open files.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return; // never closed
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => {
                pause = PAUSE_MIN;
                stream
            }
            Err(e) => {
                drop(slot);
                if !is_connection_error(&e) {
                    // Out of open files, most likely: the same error again
                    // at once would spin. Said once a minute at most.
                    if warned.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                        crate::ui::warning(format_args!(
                            "taking a connection on {address} failed ({e}); the page tries again, pausing up to a second"
                        ));
                        warned = Some(Instant::now());
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(PAUSE_MAX);
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let io = TokioIo::new(Stalls::new(stream, limits.io));
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header)
                .serve_connection(io, service);
            // An error is the client's (gone, too slow, not HTTP): nothing
            // to do but close, which dropping does.
            let _ = connection.await;
            drop(slot);
        });
    }
}

const PAUSE_MIN: Duration = Duration::from_millis(10);
const PAUSE_MAX: Duration = Duration::from_secs(1);

/// An error of one connection that went before it was taken: take the next.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// A connection whose writes fail once they have made no progress for
/// `limit`: a client that asks for a page and never reads it gives up its
/// slot.
struct Stalls {
    inner: TcpStream,
    limit: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Stalls {
    fn new(inner: TcpStream, limit: Duration) -> Stalls {
        Stalls {
            inner,
            limit,
            stalled: None,
        }
    }

    /// After a write that could not go on: pending until `limit` has passed
    /// since the first of them, then an error.
    fn wait<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client takes nothing of the answer",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn moved<T>(
        &mut self,
        result: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.wait(cx),
        }
    }
}

impl AsyncRead for Stalls {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stalls {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.moved(r, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.moved(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.moved(r, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.moved(r, cx)
    }
}
