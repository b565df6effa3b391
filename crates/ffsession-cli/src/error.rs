//! Showing errors: one line with the whole cause chain and what to do, and a
//! distinct exit code. A closed pipe (`ffsession tabs | head`) is not an error.

use std::io;
use std::process::ExitCode;

use crate::cli::GlobalArgs;

/// Exit code for errors in the input or environment (bad file, no profile).
pub const EXIT_ERROR: u8 = 1;
/// Exit code for usage errors (clap's, and values the CLI checks itself).
pub const EXIT_USAGE: u8 = 2;

/// Exit code of `backup` when the newest session file is damaged or shrunken.
pub const EXIT_ALARM: u8 = 3;

/// Exit code of `rescue` when nothing could be recovered.
pub const EXIT_NOTHING_RESCUED: u8 = 4;

/// Exit code of `check` when the store is damaged.
pub const EXIT_STORE_DAMAGED: u8 = 5;

/// Exit code of `status` when something needs the person.
pub const EXIT_NEEDS_YOU: u8 = 6;

/// `status` found something that needs the person (said on stdout): exit
/// code 6, with a note on stderr.
#[derive(Debug)]
pub struct NeedsYou(pub String);

impl std::fmt::Display for NeedsYou {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NeedsYou {}

/// `check` found damage in the store.
#[derive(Debug)]
pub struct StoreDamaged(pub String);

impl std::fmt::Display for StoreDamaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreDamaged {}

/// `rescue` found no complete tab before the damage.
#[derive(Debug)]
pub struct NothingRescued(pub String);

impl std::fmt::Display for NothingRescued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NothingRescued {}

/// `backup` finished, but what it found needs the user's attention.
#[derive(Debug)]
pub struct AlarmRaised(pub String);

impl std::fmt::Display for AlarmRaised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AlarmRaised {}

/// `search` found nothing, or `history`'s URL is in no snapshot: exit code
/// 1, as grep's, with a note on stderr rather than an error.
#[derive(Debug)]
pub struct NoMatch(pub String);

impl std::fmt::Display for NoMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoMatch {}

/// An error of the library shown on one line (its own message, not its
/// causes), with its hint.
#[derive(Debug)]
pub struct Hinted {
    pub message: String,
    pub hint: ffsession::Hint,
}

impl std::fmt::Display for Hinted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Hinted {}

/// An error raised by the CLI itself, with advice for the user.
#[derive(Debug)]
pub struct UserError {
    pub message: String,
    pub hint: Option<String>,
    /// A usage error: exit code 2.
    pub usage: bool,
}

impl std::error::Error for UserError {}

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl UserError {
    pub fn with_hint(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(UserError {
            message: message.into(),
            hint: Some(hint.into()),
            usage: false,
        })
    }

    /// A usage error (a value on the command line the CLI refuses): exit code 2.
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(UserError {
            message: message.into(),
            hint: Some(hint.into()),
            usage: true,
        })
    }
}

/// What the person can do about `err`, in words: the first cause with a
/// hint says it, with every command it names written from `global`, the
/// command context of the run.
pub fn hint(err: &anyhow::Error, global: &GlobalArgs) -> Option<String> {
    let cmd = |args: &[&str]| global.quoted(args);
    err.chain().find_map(|cause| {
        let typed = if let Some(e) = cause.downcast_ref::<ffsession::Error>() {
            Some(e.hint())
        } else if let Some(e) = cause.downcast_ref::<ffsession::profile::ProfileError>() {
            Some(e.hint())
        } else if let Some(e) = cause.downcast_ref::<ffsession::store::StoreError>() {
            Some(e.hint())
        } else if let Some(e) = cause.downcast_ref::<ffsession::restore::RestoreError>() {
            Some(e.hint())
        } else if let Some(e) = cause.downcast_ref::<ffsession::backup::BackupError>() {
            Some(e.hint())
        } else if let Some(e) = cause.downcast_ref::<ffsession::rescue::RescueError>() {
            Some(e.hint())
        } else if let Some(e) = cause.downcast_ref::<ffsession::tidy::TidyError>() {
            Some(e.hint())
        } else if let Some(e) = cause.downcast_ref::<ffsession::remote::RemoteError>() {
            Some(e.hint())
        } else {
            cause
                .downcast_ref::<ffsession::store::SearchError>()
                .map(ffsession::store::SearchError::hint)
        };
        if let Some(hint) = typed {
            return hint.map(|h| global.word(&h));
        }
        if let Some(e) = cause.downcast_ref::<Hinted>() {
            return Some(global.word(&e.hint));
        }
        if cause.is::<crate::commands::backup::NoSessionFiles>() {
            return Some(format!(
                "is it the right profile? {} lists each profile's session files; Firefox writes them within seconds of starting on a profile",
                cmd(&["profiles"])
            ));
        }
        if cause.is::<StoreDamaged>() {
            return Some(format!(
                "the next {} rewrites damaged chunks it still has the data for; a damaged catalog is rebuilt from the manifests by {}, a damaged tab index by {}; restore only snapshots check does not name",
                cmd(&["backup"]),
                cmd(&["reindex", "--catalog"]),
                cmd(&["reindex"]),
            ));
        }
        if cause.is::<NothingRescued>() {
            return Some(format!(
                "try another session file or backup ({}, {})",
                cmd(&["profiles"]),
                cmd(&["list"])
            ));
        }
        cause
            .downcast_ref::<UserError>()
            .and_then(|e| e.hint.clone())
    })
}

/// True when stdout was closed by the reader (`ffsession tabs | head`): not
/// an error. serde_json wraps the I/O error without showing it as a source.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        let kind = c
            .downcast_ref::<io::Error>()
            .map(io::Error::kind)
            .or_else(|| {
                c.downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            });
        kind == Some(io::ErrorKind::BrokenPipe)
    })
}

/// Print `err` on one line to stderr and pick the exit code.
pub fn report(err: &anyhow::Error, global: &GlobalArgs) -> ExitCode {
    if is_broken_pipe(err) {
        return ExitCode::SUCCESS;
    }
    if let Some(none) = err.downcast_ref::<NoMatch>() {
        crate::ui::note(none);
        return ExitCode::from(EXIT_ERROR);
    }
    if let Some(needs) = err.downcast_ref::<NeedsYou>() {
        crate::ui::note(needs);
        return ExitCode::from(EXIT_NEEDS_YOU);
    }
    if let Some(alarm) = err.downcast_ref::<AlarmRaised>() {
        crate::ui::warning(format_args!(
            "{alarm}; the snapshot is kept and marked, and earlier good snapshots are protected from pruning"
        ));
        return ExitCode::from(EXIT_ALARM);
    }
    // Library errors already name their cause in their message; add only the
    // causes not yet said, so each fact appears once.
    let mut message = err.to_string();
    let mut previous = message.clone();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        // Skip a cause already said, or one that only repeats the cause before
        // it with more words (SQLite: "Error code 13: database or disk is full").
        if !message.contains(&text) && !text.contains(&previous) {
            message.push_str(": ");
            message.push_str(&text);
        }
        previous = text;
    }
    crate::ui::error(&message, hint(err, global).as_deref());
    let nothing = err.chain().any(|c| {
        c.is::<NothingRescued>()
            || matches!(
                c.downcast_ref::<ffsession::rescue::RescueError>(),
                Some(ffsession::rescue::RescueError::Nothing { .. })
            )
    });
    let damaged = err.chain().any(|c| c.is::<StoreDamaged>());
    let usage = err
        .chain()
        .any(|c| c.downcast_ref::<UserError>().is_some_and(|e| e.usage));
    ExitCode::from(if usage {
        EXIT_USAGE
    } else if damaged {
        EXIT_STORE_DAMAGED
    } else if nothing {
        EXIT_NOTHING_RESCUED
    } else {
        EXIT_ERROR
    })
}
