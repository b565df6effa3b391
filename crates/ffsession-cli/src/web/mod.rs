//! The local page of `ffsession ui` (issue 39): an axum server on
//! 127.0.0.1 rendering HTML with maud. It reads the store through the same
//! library calls as `list`, `tabs`, `diff`, `search` and `history`, and
//! changes things only by running `ffsession` itself (`restore`, `extract`,
//! `merge`, `rescue`) or the browser's own remote command line.
//!
//! `serve.rs` serves it so that no client can stop or hold it (timeouts, a
//! cap on connections); `private.rs` is its private folder; `security.rs`
//! guards every request; `layout.rs` is the page around each
//! view and the helpers that make session values safe to show; `pages.rs`
//! the timeline and a snapshot; `find.rs` search and one URL's history;
//! `compare.rs` the diff; `pick.rs` the basket of picked tabs and the plan
//! and action pages; `actions.rs` the command lines of each action and
//! running them.

mod actions;
mod compare;
mod find;
mod layout;
mod pages;
mod pick;
mod private;
pub mod security;
mod serve;

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use maud::html;

/// What `ffsession ui` resolved from its options.
pub struct Options {
    /// The store to read (for a remote, its local copy, brought up to date).
    pub store_dir: PathBuf,
    /// The store as the user named it: its folder, or a remote's address.
    pub store_label: String,
    /// The port to listen on (0: any).
    pub port: u16,
    /// Open the page in the default browser.
    pub open: bool,
    /// The page to open and print, after the secret (`snapshot/17`); the
    /// timeline when `None`.
    pub start: Option<String>,
    /// The global options given, repeated on every command line run.
    pub globals: Vec<OsString>,
    /// The browser program "open now" runs.
    pub browser_bin: PathBuf,
    /// The profile's folder, for the browser's `--profile`.
    pub profile_dir: Option<PathBuf>,
    /// A remote store's password, given to the `ffsession` commands run
    /// (in FFSESSION_PASSWORD: never on a command line, never in the page).
    pub password: Option<String>,
}

/// What every handler shares.
pub struct App {
    /// The store read (a remote's local copy for a remote store).
    pub store_dir: PathBuf,
    /// The store as the user named it: its folder, or a remote's address.
    pub store_label: String,
    /// The secret: the first part of every path.
    pub secret: String,
    /// The token every POST carries.
    pub csrf: String,
    /// The port listened on.
    pub port: u16,
    /// The global options given, to repeat on every command line run.
    pub globals: Vec<OsString>,
    /// The `ffsession` binary that runs the actions.
    pub exe: PathBuf,
    /// The browser program "open now" runs.
    pub browser_bin: PathBuf,
    /// The profile folder for the browser's `--profile`, when one is known.
    pub profile_dir: Option<PathBuf>,
    /// A remote store's password for the `ffsession` commands run.
    pub password: Option<String>,
    /// A private folder for the files the actions make (extracted, merged
    /// and rescued sessions), where the commands run.
    pub work_dir: PathBuf,
    /// The picked tabs, windows and groups.
    pub picks: Mutex<Vec<pick::Pick>>,
    /// Held while a plan's steps run (its preview or the action): two
    /// never write the same files at once.
    pub running: Mutex<()>,
    /// The longest a request body may take to arrive without progress.
    pub io_timeout: Duration,
}

impl App {
    /// The page's address of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("/{}{path}", self.secret)
    }

    /// `ffsession` with the page's global options and `args`, as a shell
    /// would read it (control and bidirectional characters escaped).
    pub fn command_line(&self, args: &[&str]) -> String {
        let mut words: Vec<OsString> = vec!["ffsession".into()];
        words.extend(self.globals.iter().cloned());
        words.extend(args.iter().map(OsString::from));
        crate::fmt::escape(&layout::shell_line(words)).into_owned()
    }

    /// The store, read-only.
    pub fn store(&self) -> Result<ffsession::store::Store> {
        Ok(ffsession::store::Store::open_read_only(&self.store_dir)?)
    }
}

/// An error shown as a page.
pub struct WebError(pub StatusCode, pub String);

impl From<anyhow::Error> for WebError {
    fn from(e: anyhow::Error) -> Self {
        // A snapshot that is not in the store: not found, said plainly.
        let unknown = e.chain().find_map(|c| match c.downcast_ref() {
            Some(ffsession::store::StoreError::UnknownSnapshot { id, .. }) => Some(*id),
            _ => None,
        });
        match unknown {
            Some(id) => WebError(
                StatusCode::NOT_FOUND,
                format!(
                    "There is no snapshot #{id} in this store; the timeline lists those there are."
                ),
            ),
            None => WebError(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")),
        }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let heading = match self.0 {
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::INTERNAL_SERVER_ERROR => "Something failed",
            other => other.canonical_reason().unwrap_or("Refused"),
        };
        let body = html! {
            (maud::DOCTYPE)
            html lang="en" { head { meta charset="utf-8"; title { (heading) " - ffsession" } }
            body { h1 { (heading) } p { (crate::fmt::escape(&self.1)) } } }
        };
        (self.0, body).into_response()
    }
}

/// Run `f` (which reads the store, or runs a command) off the server's
/// thread.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
}

/// Open `page` (the redirect file in the private folder, not the address:
/// a command line is readable by every user of the machine) in the user's
/// default browser.
fn open_in_browser(page: &Path) -> std::io::Result<()> {
    let opener = if cfg!(windows) {
        "explorer"
    } else if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    std::process::Command::new(opener)
        .arg(page)
        .stdin(std::process::Stdio::null())
        .spawn()
        .map(drop)
}

/// The routes, behind the guard.
fn router(app: Arc<App>) -> Router {
    let routes = Router::new()
        .route("/", get(pages::timeline))
        .route("/snapshot/{id}", get(pages::snapshot))
        .route("/search", get(find::search))
        .route("/history", get(find::history))
        .route("/diff", get(compare::diff))
        .route("/picks", get(pick::basket).post(pick::add))
        .route("/picks/clear", post(pick::clear))
        .route("/plan", get(pick::plan))
        .route("/do", post(pick::act))
        .route("/app.js", get(layout::script))
        .route("/app.css", get(layout::style))
        .with_state(app.clone());
    // The guard takes the secret off the path before the routes see it.
    Router::new()
        .fallback_service(routes)
        .layer(axum::middleware::from_fn_with_state(app, security::guard))
}

/// Serve the page until Ctrl-C (or SIGTERM, SIGHUP): then its private
/// folder is removed and the process ends (exit code 128 + the signal).
pub fn serve(opts: Options) -> Result<()> {
    let Options {
        store_dir,
        store_label,
        port,
        open,
        start,
        globals,
        browser_bin,
        profile_dir,
        password,
    } = opts;
    let secret = security::random_hex(16)?;
    let csrf = security::random_hex(16)?;
    // Removed when this ends, by a return, a panic or a signal handled
    // below.
    let mut private = private::PrivateDir::create()?;
    let exe = std::env::current_exe().context("finding the ffsession program")?;
    let limits = serve::Limits::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("starting the server")?;
    let result: Result<Option<i32>> = runtime.block_on(async {
        // Before the address is printed: a signal from then on is handled.
        let stop = stop_signal()?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| format!("listening on 127.0.0.1:{port}"))?;
        let port = listener.local_addr()?.port();
        let mut listeners = vec![listener];
        // The same port on ::1 too, where the machine has IPv6 (a browser
        // may reach `localhost` there first); none is no error. Bound
        // before the address is printed, as the first one.
        if let Ok(v6) = tokio::net::TcpListener::bind(("::1", port)).await {
            listeners.push(v6);
        }
        let url = format!(
            "http://127.0.0.1:{port}/{secret}/{}",
            start.as_deref().unwrap_or("")
        );
        let app = Arc::new(App {
            store_dir,
            store_label,
            secret: secret.clone(),
            csrf,
            port,
            globals,
            exe,
            browser_bin,
            profile_dir,
            password,
            work_dir: private.path().to_path_buf(),
            picks: Mutex::new(Vec::new()),
            running: Mutex::new(()),
            io_timeout: limits.io,
        });
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{url}")?;
            out.flush()?;
        }
        crate::ui::note(format_args!(
            "serving the store {} on 127.0.0.1:{port}; the address holds the page's secret; Ctrl-C stops",
            app.store_label
        ));
        if open {
            let opened = private
                .redirect_file(&url)
                .and_then(|page| Ok(open_in_browser(&page)?));
            if let Err(e) = opened {
                crate::ui::warning(format_args!(
                    "could not open a browser ({e:#}); open the address above"
                ));
            }
        }
        tokio::select! {
            () = serve::serve(listeners, router(app), limits) => Ok(None),
            code = stop => Ok(Some(code)),
        }
    });
    // Commands the page runs are waited for a moment (a restore ends, and
    // then its output has nowhere to go), not for ever.
    runtime.shutdown_timeout(Duration::from_secs(5));
    private.remove();
    match result? {
        Some(code) => std::process::exit(code),
        None => Ok(()),
    }
}

/// The exit code of the signal that stops the server, once one comes:
/// 130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for SIGHUP (the terminal
/// closed); on Windows, Ctrl-C, Ctrl-Break or the console closing.
#[cfg(unix)]
fn stop_signal() -> Result<impl Future<Output = i32>> {
    use tokio::signal::unix::{signal, SignalKind};
    let context = "handling Ctrl-C and termination";
    let mut int = signal(SignalKind::interrupt()).context(context)?;
    let mut term = signal(SignalKind::terminate()).context(context)?;
    let mut hup = signal(SignalKind::hangup()).context(context)?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
            _ = hup.recv() => 129,
        }
    })
}

#[cfg(windows)]
fn stop_signal() -> Result<impl Future<Output = i32>> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let context = "handling Ctrl-C and termination";
    let mut c = ctrl_c().context(context)?;
    let mut brk = ctrl_break().context(context)?;
    let mut close = ctrl_close().context(context)?;
    Ok(async move {
        tokio::select! {
            _ = c.recv() => 130,
            _ = brk.recv() => 130,
            _ = close.recv() => 130,
        }
    })
}
