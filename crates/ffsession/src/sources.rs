//! The session files inside one profile, and which of them is the newest.
//!
//! This module owns the profile's file layout as Firefox writes it:
//! `sessionstore.jsonlz4` (written at a clean shutdown) and the
//! `sessionstore-backups/` folder (`recovery.jsonlz4` every ~15 s while running,
//! `recovery.baklz4` the one before, `previous.jsonlz4` from the last start,
//! `upgrade.jsonlz4-<buildid>` from upgrades), plus the plain-JSON names of old
//! Firefox versions. Files are listed in the order Firefox itself tries them.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, IoResultExt, PathError};
use crate::format::SessionData;

/// What role a session file plays, from its name (its format is detected from
/// content when it is read).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// `sessionstore.jsonlz4`: written at a clean shutdown.
    SessionStore,
    /// `sessionstore-backups/recovery.jsonlz4`: written while running.
    Recovery,
    /// `sessionstore-backups/recovery.baklz4`: the recovery file before.
    RecoveryBackup,
    /// `sessionstore-backups/previous.jsonlz4`: the session of the last start.
    Previous,
    /// `sessionstore-backups/upgrade.jsonlz4-<buildid>`: kept across upgrades.
    Upgrade,
    /// `sessionstore.js` / `.bak` of old Firefox versions (plain JSON).
    Legacy,
    /// Another file in `sessionstore-backups/`.
    Other,
}

impl SourceKind {
    /// The role's place in the order Firefox tries the files (0 for
    /// `sessionstore.jsonlz4`): between two sessions of the same time, the
    /// one Firefox would restore.
    pub fn rank(&self) -> u8 {
        match self {
            SourceKind::SessionStore => 0,
            SourceKind::Recovery => 1,
            SourceKind::RecoveryBackup => 2,
            SourceKind::Previous => 3,
            SourceKind::Upgrade => 4,
            SourceKind::Legacy => 5,
            SourceKind::Other => 6,
        }
    }
}

/// A session file found in a profile.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceFile {
    /// Full path.
    pub path: PathBuf,
    /// Path relative to the profile folder, with `/` separators.
    pub name: String,
    /// Its role.
    pub kind: SourceKind,
    /// Size in bytes.
    pub size: u64,
    /// Modification time.
    #[serde(skip)]
    pub modified: Option<SystemTime>,
}

fn classify(name: &str) -> SourceKind {
    match name {
        "sessionstore.jsonlz4" => SourceKind::SessionStore,
        "recovery.jsonlz4" | "recovery.js" => SourceKind::Recovery,
        "recovery.baklz4" | "recovery.bak" => SourceKind::RecoveryBackup,
        "previous.jsonlz4" | "previous.js" => SourceKind::Previous,
        "sessionstore.js" | "sessionstore.bak" => SourceKind::Legacy,
        n if n.starts_with("upgrade.jsonlz4-") || n.starts_with("upgrade.js-") => {
            SourceKind::Upgrade
        }
        n if n.starts_with("sessionstore.bak-") => SourceKind::Legacy,
        _ => SourceKind::Other,
    }
}

/// List the session files of a profile, in the order Firefox tries them
/// (newest upgrade file first among upgrades). Temporary files that Firefox
/// is still writing (`*.tmp`) are left out.
pub fn list(profile_dir: &Path) -> Result<Vec<SourceFile>, PathError> {
    if !profile_dir.is_dir() {
        return Err(PathError {
            path: profile_dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "profile folder does not exist",
            ),
        });
    }
    let mut files = Vec::new();
    for name in [
        "sessionstore.jsonlz4",
        "sessionstore.js",
        "sessionstore.bak",
    ] {
        push_if_file(&mut files, profile_dir, name.to_owned(), classify(name))?;
    }
    let backups = profile_dir.join("sessionstore-backups");
    if backups.is_dir() {
        for entry in fs::read_dir(&backups).with_path(&backups)? {
            let entry = entry.with_path(&backups)?;
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.ends_with(".tmp") || file_name.starts_with('.') {
                continue;
            }
            let kind = classify(&file_name);
            push_if_file(
                &mut files,
                profile_dir,
                format!("sessionstore-backups/{file_name}"),
                kind,
            )?;
        }
    }
    files.sort_by(|a, b| {
        a.kind
            .cmp(&b.kind)
            .then(b.modified.cmp(&a.modified))
            .then(a.name.cmp(&b.name))
    });
    Ok(files)
}

fn push_if_file(
    files: &mut Vec<SourceFile>,
    dir: &Path,
    name: String,
    kind: SourceKind,
) -> Result<(), PathError> {
    let path = dir.join(&name);
    match fs::metadata(&path) {
        Ok(m) if m.is_file() => {
            files.push(SourceFile {
                path,
                name,
                kind,
                size: m.len(),
                modified: m.modified().ok(),
            });
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(PathError { path, source: e }),
    }
}

/// The newest readable session of a profile.
#[derive(Debug)]
pub struct NewestSession {
    /// The chosen file's data, ready to parse.
    pub data: SessionData,
    /// The chosen file.
    pub source: SourceFile,
    /// How many session files the profile holds.
    pub candidates: usize,
    /// Files that could not be read, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Pick the profile's newest valid session file by the session's own
/// `lastUpdate` (ties go to the file Firefox would try first). Files that do
/// not read or parse are skipped and reported.
pub fn newest(profile_dir: &Path) -> Result<NewestSession, Error> {
    let files = list(profile_dir)?;
    let candidates = files.len();
    let mut best: Option<(u64, SessionData, SourceFile)> = None;
    let mut skipped = Vec::new();
    for file in files {
        // A full parse, not just the timestamps: a file whose windows do not
        // parse must not be chosen.
        let read = SessionData::read(&file.path).and_then(|d| {
            let stamp = d.parse()?.session.last_update;
            Ok((d, stamp))
        });
        match read {
            Ok((data, stamp)) => {
                let stamp = stamp.unwrap_or(0);
                if best.as_ref().is_none_or(|(b, _, _)| stamp > *b) {
                    best = Some((stamp, data, file));
                }
            }
            Err(e) => skipped.push((file.path, short_reason(&e))),
        }
    }
    match best {
        Some((_, data, source)) => Ok(NewestSession {
            data,
            source,
            candidates,
            skipped,
        }),
        None => Err(Error::NoSessionFile {
            profile: profile_dir.to_path_buf(),
            skipped,
        }),
    }
}

/// The error without the file name (for lists where the name is shown already).
pub fn short_reason(e: &Error) -> String {
    use std::error::Error as _;
    match e {
        Error::Io(p) => p.source.to_string(),
        Error::Format { source, .. } => source.to_string(),
        Error::Parse { source, .. } => format!("not a valid session: {source}"),
        other => other
            .source()
            .map_or_else(|| other.to_string(), |s| s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::compress;

    fn write(dir: &Path, name: &str, last_update: u64) {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let json = format!(r#"{{"windows":[],"session":{{"lastUpdate":{last_update}}}}}"#);
        fs::write(path, compress(json.as_bytes()).unwrap()).unwrap();
    }

    #[test]
    fn lists_in_firefox_order_and_picks_the_newest_valid() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        write(p, "sessionstore-backups/previous.jsonlz4", 100);
        write(p, "sessionstore-backups/recovery.jsonlz4", 300);
        write(p, "sessionstore-backups/recovery.baklz4", 200);
        write(p, "sessionstore-backups/upgrade.jsonlz4-20260101", 50);
        fs::write(
            p.join("sessionstore-backups/recovery.jsonlz4.tmp"),
            b"partial",
        )
        .unwrap();
        fs::write(p.join("sessionstore.jsonlz4"), b"mozLz40\0broken").unwrap();
        let names: Vec<_> = list(p).unwrap().into_iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "sessionstore.jsonlz4",
                "sessionstore-backups/recovery.jsonlz4",
                "sessionstore-backups/recovery.baklz4",
                "sessionstore-backups/previous.jsonlz4",
                "sessionstore-backups/upgrade.jsonlz4-20260101",
            ]
        );
        let newest = newest(p).unwrap();
        assert_eq!(newest.source.name, "sessionstore-backups/recovery.jsonlz4");
        assert_eq!(newest.candidates, 5);
        assert_eq!(newest.skipped.len(), 1);
        assert!(newest.skipped[0].0.ends_with("sessionstore.jsonlz4"));
    }

    #[test]
    fn a_profile_without_readable_sessions_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("sessionstore.jsonlz4"), b"").unwrap();
        let err = newest(dir.path()).unwrap_err();
        assert!(
            err.to_string()
                .contains("sessionstore.jsonlz4: the file is empty"),
            "{err}"
        );
    }
}
