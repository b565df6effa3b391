//! The local page of `ffsession ui` (issue 39): an axum server on
//! 127.0.0.1 rendering HTML with maud. It reads the store through the same
//! library calls as `list`, `tabs`, `diff`, `search` and `history`, and
//! changes things only by running `ffsession` itself (`restore`, `extract`,
//! `merge`, `rescue`) or the browser's own remote command line.
//!
//! `security.rs` guards every request; `layout.rs` is the page around each
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
pub mod security;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
    /// and rescued sessions).
    pub work_dir: PathBuf,
    /// The picked tabs, windows and groups.
    pub picks: Mutex<Vec<pick::Pick>>,
}

impl App {
    /// The page's address of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("/{}{path}", self.secret)
    }

    /// `ffsession` with the page's global options and `args`, as a shell
    /// would read it.
    pub fn command_line(&self, args: &[&str]) -> String {
        let mut words: Vec<OsString> = vec!["ffsession".into()];
        words.extend(self.globals.iter().cloned());
        words.extend(args.iter().map(OsString::from));
        layout::shell_line(words)
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
        WebError(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}"))
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let body = html! {
            (maud::DOCTYPE)
            html lang="en" { head { meta charset="utf-8"; title { "ffsession: error" } }
            body { h1 { "error" } p { (self.1) } } }
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

/// A private folder for the files actions make (extracted, merged and
/// rescued sessions, which hold cookies and form data): 0700 on Unix, on
/// Windows the access list of a store folder (its user, SYSTEM and the
/// Administrators only, whatever the temp folder grants).
fn work_dir(secret: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ffsession-ui-{}", &secret[..12]));
    #[cfg(unix)]
    let b = {
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b
    };
    #[cfg(not(unix))]
    let b = std::fs::DirBuilder::new();
    b.create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    #[cfg(windows)]
    if let Err(e) = ffsession::store::make_private(&dir) {
        let _ = std::fs::remove_dir(&dir);
        return Err(e).with_context(|| format!("making {} private to its user", dir.display()));
    }
    Ok(dir)
}

/// Open `url` in the user's default browser.
fn open_in_browser(url: &str) -> std::io::Result<()> {
    let mut cmd = if cfg!(windows) {
        let mut c = std::process::Command::new("explorer");
        c.arg(url);
        c
    } else if cfg!(target_os = "macos") {
        let mut c = std::process::Command::new("open");
        c.arg(url);
        c
    } else {
        let mut c = std::process::Command::new("xdg-open");
        c.arg(url);
        c
    };
    cmd.stdin(std::process::Stdio::null()).spawn().map(drop)
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

/// Serve the page until Ctrl-C.
pub fn serve(opts: Options) -> Result<()> {
    let Options {
        store_dir,
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
    let work_dir = work_dir(&secret)?;
    // Ctrl-C: the private folder goes with the server.
    let folder = work_dir.clone();
    ctrlc::set_handler(move || {
        let _ = std::fs::remove_dir_all(&folder);
        std::process::exit(130);
    })
    .context("handling Ctrl-C")?;
    let exe = std::env::current_exe().context("finding the ffsession program")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("starting the server")?;
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| format!("listening on 127.0.0.1:{port}"))?;
        let port = listener.local_addr()?.port();
        // The same port on ::1 too, where the machine has IPv6 (a browser
        // may reach `localhost` there first); none is no error. Bound
        // before the address is printed, as the first one.
        let v6 = tokio::net::TcpListener::bind(("::1", port)).await.ok();
        let app = Arc::new(App {
            store_dir,
            secret: secret.clone(),
            csrf,
            port,
            globals,
            exe,
            browser_bin,
            profile_dir,
            password,
            work_dir: work_dir.clone(),
            picks: Mutex::new(Vec::new()),
        });
        let url = format!(
            "http://127.0.0.1:{port}/{secret}/{}",
            start.as_deref().unwrap_or("")
        );
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{url}")?;
            out.flush()?;
        }
        crate::ui::note(format_args!(
            "serving the store {} on 127.0.0.1:{port}; the address holds the page's secret; Ctrl-C stops",
            app.store_dir.display()
        ));
        if open {
            if let Err(e) = open_in_browser(&url) {
                crate::ui::warning(format_args!(
                    "could not open a browser ({e}); open the address above"
                ));
            }
        }
        let routes = router(app);
        let v4 = axum::serve(listener, routes.clone());
        match v6 {
            Some(v6) => tokio::try_join!(v4, axum::serve(v6, routes)).map(drop),
            None => v4.await,
        }
        .context("serving the page")
    });
    let _ = std::fs::remove_dir_all(&work_dir);
    result
}
