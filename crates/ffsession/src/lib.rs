//! ffsession: read, inspect, back up and restore Firefox session files.
//!
//! The library never talks to the user: it takes explicit paths, returns typed
//! values and typed errors, and leaves printing, environment variables and exit
//! codes to the `ffsession` command-line crate.
//!
//! Layers, bottom up:
//! - [`buffer`]: whole-file byte buffers, on huge pages when large.
//! - [`format`](mod@format): the bytes on disk (mozlz4 or plain JSON) to one JSON buffer.
//! - [`session`]: a zero-copy model borrowing from that buffer.
//! - [`profile`]: Firefox profile discovery (`profiles.ini`, `installs.ini`, locks).
//! - [`sources`]: the session files inside one profile and which one is newest.
//! - [`diff`](mod@diff): what changed between two sessions (tabs, windows).
//! - [`export`]: tab listings rendered as JSON, CSV, Markdown, bookmarks HTML, ...
//! - [`fs_util`]: the one atomic-write helper every write goes through.
//! - [`store`]: the backup store (content-defined chunks, SQLite catalog).
//! - [`backup`]: snapshotting a profile into the store, with alarms.
//! - [`retention`]: which snapshots a prune keeps, and why.
//! - [`rescue`]: recovering the complete tabs of a damaged session file.
//! - [`restore`]: putting a snapshot back so the next Firefox start reopens it.
//! - [`tidy`]: closing stale and duplicate tabs (kept in the store), trimming the rest;
//!   extracting and merging sessions.
//! - [`watch`]: when the watcher takes a snapshot (debounce policy).
//! - [`service`]: systemd / launchd definitions that run the watcher.
//! - [`forks`]: the keys Firefox's forks add to its session objects, kept for them.
//! - [`zen`]: Zen's own session file (`zen-sessions.jsonlz4`): its spaces and tabs;
//!   Zen's keys in Firefox's session objects.

/// A test's setting, the number in `FFSESSION_TEST_<NAME>`: read only in
/// debug builds (what `cargo test` builds, for the fault and durability
/// tests); a release build holds no such name and reads none (`None`).
#[macro_export]
macro_rules! test_setting {
    ($name:literal) => {{
        #[cfg(debug_assertions)]
        let value: Option<u64> = ::std::env::var(concat!("FFSESSION_TEST_", $name))
            .ok()
            .and_then(|v| v.parse().ok());
        #[cfg(not(debug_assertions))]
        let value: Option<u64> = None;
        value
    }};
}

pub mod backup;
pub mod buffer;
pub mod diff;
pub mod error;
pub mod export;
pub mod forks;
pub mod format;
pub mod fs_util;
pub mod hint;
mod legacy;
pub mod machine;
pub mod platform;
pub mod profile;
pub mod prune;
pub mod remote;
pub mod rescue;
pub mod restore;
pub mod retention;
pub mod service;
pub mod session;
pub mod sources;
pub mod store;
pub mod tidy;
pub mod watch;
pub mod zen;

pub use error::{Error, PathError};
pub use format::{Format, SessionData};
pub use hint::Hint;
pub use session::{Session, Summary};
