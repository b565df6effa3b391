//! What a SNAPSHOT|FILE argument names (`restore`, `rescue`, `extract`,
//! `merge`, `diff`): a snapshot id, `latest`, `current` (the profile's
//! session), or a session file.
//!
//! A bare `1`, `latest` or `current` that is also the name of a file in the
//! working folder is refused, never guessed: the same command line must not
//! mean a snapshot in one folder and a file in another (a file dropped in the
//! folder would change what a restore puts back). The two ways to say it
//! mean one thing wherever they run: `snapshot:1`, `snapshot:latest` and
//! `profile:current` are never a file, and `./1` is always the file.

use std::path::{Path, PathBuf};

use anyhow::Result;
use ffsession::store::SnapshotId;

use crate::error::UserError;

/// The prefix that names a snapshot of the store, never a file.
pub const SNAPSHOT: &str = "snapshot:";
/// The profile's current session, never a file.
pub const CURRENT: &str = "profile:current";

/// What an argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A snapshot of the store.
    Snapshot(SnapshotId),
    /// The newest session, by its own time, that reads back whole.
    Latest,
    /// The profile's newest session file.
    Current,
    /// A session file.
    File(PathBuf),
}

/// Which names besides snapshot ids and files a command takes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Takes {
    /// `latest` (`restore`, `diff`).
    pub latest: bool,
    /// `current` (`extract`, `merge`, `diff`).
    pub current: bool,
}

/// `snapshot:N` for a snapshot id.
pub fn snapshot_arg(id: impl std::fmt::Display) -> String {
    format!("{SNAPSHOT}{id}")
}

/// True when `arg` names something in the working folder other than a
/// folder (a folder is never a session file).
fn is_file_here(arg: &str) -> bool {
    std::fs::metadata(arg).is_ok_and(|m| !m.is_dir())
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

fn snapshot_id(arg: &str, digits: &str) -> Result<SnapshotId> {
    digits.parse().map(SnapshotId).map_err(|_| {
        UserError::usage(
            format!("{arg}: no such snapshot id"),
            format!("{} shows the snapshots", crate::context::quoted(&["list"])),
        )
    })
}

/// Read `arg` as a command that takes `takes` reads it.
pub fn parse(arg: &str, takes: Takes) -> Result<Named> {
    if let Some(rest) = arg.strip_prefix(SNAPSHOT) {
        return match rest {
            "latest" if takes.latest => Ok(Named::Latest),
            _ if all_digits(rest) => Ok(Named::Snapshot(snapshot_id(arg, rest)?)),
            _ => Err(UserError::usage(
                format!("{arg}: not a snapshot id"),
                format!(
                    "write snapshot:N with N from {}{}",
                    crate::context::quoted(&["list"]),
                    if takes.latest {
                        ", or snapshot:latest"
                    } else {
                        ""
                    }
                ),
            )),
        };
    }
    if arg == CURRENT {
        return if takes.current {
            Ok(Named::Current)
        } else {
            Err(UserError::usage(
                format!("{arg}: this command does not read the profile's current session"),
                "give a snapshot id or a session file",
            ))
        };
    }
    let named = if all_digits(arg) {
        Named::Snapshot(snapshot_id(arg, arg)?)
    } else if takes.latest && arg == "latest" {
        Named::Latest
    } else if takes.current && arg == "current" {
        Named::Current
    } else {
        return Ok(Named::File(PathBuf::from(arg)));
    };
    if is_file_here(arg) {
        let (what, explicit) = match &named {
            Named::Snapshot(id) => (format!("snapshot {id}"), snapshot_arg(id)),
            Named::Latest => ("the latest snapshot".to_owned(), snapshot_arg("latest")),
            _ => (
                "the profile's current session".to_owned(),
                CURRENT.to_owned(),
            ),
        };
        let file = Path::new(".").join(arg);
        return Err(UserError::usage(
            format!(
                "`{arg}` names both {what} and the file {} in this folder",
                file.display()
            ),
            format!(
                "write `{explicit}` for {what}, or `{}` for the file",
                file.display()
            ),
        ));
    }
    Ok(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Takes = Takes {
        latest: true,
        current: true,
    };

    #[test]
    fn names_read_as_snapshots_sessions_or_files() {
        assert_eq!(parse("42", ALL).unwrap(), Named::Snapshot(SnapshotId(42)));
        assert_eq!(
            parse("snapshot:42", Takes::default()).unwrap(),
            Named::Snapshot(SnapshotId(42))
        );
        assert_eq!(parse("latest", ALL).unwrap(), Named::Latest);
        assert_eq!(parse("snapshot:latest", ALL).unwrap(), Named::Latest);
        assert_eq!(parse("current", ALL).unwrap(), Named::Current);
        assert_eq!(parse("profile:current", ALL).unwrap(), Named::Current);
        // Where a command takes no `latest` or `current`, they are files.
        let none = Takes::default();
        assert_eq!(parse("latest", none).unwrap(), Named::File("latest".into()));
        assert_eq!(
            parse("current", none).unwrap(),
            Named::File("current".into())
        );
        assert!(parse("snapshot:latest", none).is_err());
        assert!(parse("profile:current", none).is_err());
        assert_eq!(parse("./42", ALL).unwrap(), Named::File("./42".into()));
        assert_eq!(parse("4x", ALL).unwrap(), Named::File("4x".into()));
        assert_eq!(parse("", ALL).unwrap(), Named::File("".into()));
        assert!(parse("snapshot:x", ALL).is_err());
        assert!(parse("snapshot:", ALL).is_err());
        assert!(parse("99999999999999999999", ALL).is_err());
    }
}
