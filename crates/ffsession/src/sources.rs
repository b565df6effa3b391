//! The session files inside one profile, and which of them is the newest.
//!
//! This module owns the profile's file layout as Firefox writes it:
//! `sessionstore.jsonlz4` (written at a clean shutdown) and the
//! `sessionstore-backups/` folder (`recovery.jsonlz4` every ~15 s while running,
//! `recovery.baklz4` the one before, `previous.jsonlz4` from the last start,
//! `upgrade.jsonlz4-<buildid>` from upgrades), plus the plain-JSON names of old
//! Firefox versions. Files are listed in the order Firefox itself tries them.
//!
//! A Zen profile also holds Zen's own session file, `zen-sessions.jsonlz4`
//! (its spaces, pinned and essential tabs, folders: [`crate::zen`]), and
//! Zen's copies of it in `zen-sessions-backup/` (`recovery.baklz4`,
//! `clean.jsonlz4`, `zen-sessions-<date>-<hour>.jsonlz4`). They have roles of
//! their own ([`SourceKind::is_zen`]), listed after Firefox's files, and are
//! never taken for a Firefox session.

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
    /// `zen-sessions.jsonlz4`: Zen's own session file, written with
    /// Firefox's at every save.
    ZenSessions,
    /// `zen-sessions-backup/recovery.baklz4` (`zen-sessions.jsonlz4` there
    /// in Zen 1.18): Zen's file as it was before its last write, which Zen
    /// reads when its file is missing.
    ZenBackup,
    /// `zen-sessions-backup/clean.jsonlz4`: Zen's file as it was when its
    /// last save began.
    ZenClean,
    /// `zen-sessions-backup/zen-sessions-<date>-<hour>.jsonlz4`: Zen's dated
    /// copies (one per few hours, the newest 20 kept).
    ZenDated,
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
            SourceKind::ZenSessions => 7,
            SourceKind::ZenBackup => 8,
            SourceKind::ZenClean => 9,
            SourceKind::ZenDated => 10,
        }
    }

    /// One of Zen's files ([`crate::zen`]), not a Firefox session: never
    /// restored as one, nor compared with one.
    pub fn is_zen(&self) -> bool {
        matches!(
            self,
            SourceKind::ZenSessions
                | SourceKind::ZenBackup
                | SourceKind::ZenClean
                | SourceKind::ZenDated
        )
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

/// The role of the file at `name`, relative to the profile.
fn classify(name: &str) -> SourceKind {
    if let Some(zen) = name.strip_prefix("zen-sessions-backup/") {
        return match zen {
            "clean.jsonlz4" => SourceKind::ZenClean,
            "recovery.baklz4" | "zen-sessions.jsonlz4" => SourceKind::ZenBackup,
            _ => SourceKind::ZenDated,
        };
    }
    if name == "zen-sessions.jsonlz4" {
        return SourceKind::ZenSessions;
    }
    match name.rsplit('/').next().unwrap_or(name) {
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

/// The largest session file a backup takes, and the most session JSON a
/// stored snapshot may hold: 512 MiB.
///
/// Firefox cannot write a session much larger: it builds the whole session as
/// one JavaScript string, and SpiderMonkey's strings stop at 2^30 - 2
/// characters (1 GiB); real sessions are 1-40 MB of JSON (a few MB
/// compressed), so the bound is more than ten times the largest of them. It
/// bounds what one backup holds in memory (the file, its JSON and the chunks
/// being written: about three times the bound at worst) and keeps a stray
/// disk image or video named like a session file out of the store. A
/// mozlz4 file under the bound that promises more JSON than this is kept as
/// a damaged file (its bytes, not decompressed).
pub const MAX_SESSION_BYTES: u64 = 512 << 20;

/// Why a backup leaves a file (or the `sessionstore-backups` folder) of a
/// profile out.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum SkipReason {
    /// A symbolic link: backups follow none, so a link cannot bring a file
    /// from outside the profile (`/etc/shadow`) into the store.
    SymbolicLink {
        /// What the link points to, as written in it.
        target: Option<String>,
    },
    /// Not a regular file (a folder, a FIFO, a device).
    NotRegular {
        /// What it is.
        kind: String,
    },
    /// `sessionstore-backups` that is not a folder.
    NotAFolder {
        /// What it is.
        kind: String,
    },
    /// A file in `sessionstore-backups/` whose name is none Firefox gives a
    /// session file.
    NotASessionFile,
    /// A name that is not valid UTF-8 (no session file name is).
    NameNotUtf8,
    /// Larger than [`MAX_SESSION_BYTES`].
    TooLarge {
        /// Its size in bytes.
        size: u64,
        /// The bound.
        limit: u64,
    },
    /// It could not be read (permissions, an I/O error).
    Unreadable {
        /// What the system said.
        error: String,
    },
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::SymbolicLink { target: Some(t) } => {
                write!(f, "a symbolic link (to {t}); links are not followed")
            }
            SkipReason::SymbolicLink { target: None } => {
                f.write_str("a symbolic link; links are not followed")
            }
            SkipReason::NotRegular { kind } => write!(f, "{kind}, not a regular file"),
            SkipReason::NotAFolder { kind } => write!(f, "{kind}, not a folder"),
            SkipReason::NotASessionFile => f.write_str("not a name Firefox gives a session file"),
            SkipReason::NameNotUtf8 => f.write_str("its name is not valid UTF-8"),
            SkipReason::TooLarge { size, limit } => write!(
                f,
                "{size} bytes, more than the {} MiB a session file can be",
                limit >> 20
            ),
            SkipReason::Unreadable { error } => write!(f, "cannot be read: {error}"),
        }
    }
}

/// A file (or folder) of a profile that a backup leaves out.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkippedFile {
    /// Full path.
    pub path: PathBuf,
    /// Path relative to the profile folder, with `/` separators (a name that
    /// is not UTF-8 with U+FFFD in place of what is not).
    pub name: String,
    /// Why.
    #[serde(flatten)]
    pub reason: SkipReason,
}

/// What a profile holds of session files: those a backup takes, and those it
/// leaves out with the reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Listing {
    /// The session files, in the order Firefox tries them.
    pub files: Vec<SourceFile>,
    /// What looked like a session file, or sat in `sessionstore-backups/`,
    /// but is left out.
    pub skipped: Vec<SkippedFile>,
}

/// The names Firefox (and Zen) give session files in the profile folder itself.
fn is_root_session_name(name: &str) -> bool {
    matches!(
        name,
        "sessionstore.jsonlz4" | "sessionstore.js" | "sessionstore.bak" | "zen-sessions.jsonlz4"
    ) || name
        .strip_prefix("sessionstore.bak-")
        .is_some_and(is_build_suffix)
}

/// The names Firefox gives session files in `sessionstore-backups/`: the
/// mozlz4 ones, and the plain-JSON ones of Firefox before 56.
fn is_backups_session_name(name: &str) -> bool {
    matches!(
        name,
        "recovery.jsonlz4"
            | "recovery.baklz4"
            | "previous.jsonlz4"
            | "recovery.js"
            | "recovery.bak"
            | "previous.js"
    ) || name
        .strip_prefix("upgrade.jsonlz4-")
        .or_else(|| name.strip_prefix("upgrade.js-"))
        .is_some_and(is_build_suffix)
}

/// The names Zen gives its copies in `zen-sessions-backup/`
/// (`ZenSessionManager.sys.mjs`): JSONFile's backup of the file before its
/// last write (`recovery.baklz4`; `zen-sessions.jsonlz4` in Zen 1.18), the
/// copy made when a save begins (`clean.jsonlz4`), and the dated copies
/// (`zen-sessions-<YYYY-MM-DD>-<HH>.jsonlz4`).
fn is_zen_backup_name(name: &str) -> bool {
    matches!(
        name,
        "clean.jsonlz4" | "recovery.baklz4" | "zen-sessions.jsonlz4"
    ) || name
        .strip_prefix("zen-sessions-")
        .and_then(|n| n.strip_suffix(".jsonlz4"))
        .is_some_and(is_build_suffix)
}

/// A build id or date after `upgrade.jsonlz4-` or `sessionstore.bak-`.
fn is_build_suffix(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Temporary files Firefox is still writing (`*.tmp`) and hidden files are
/// left out without a word.
fn is_ignored(name: &str) -> bool {
    name.ends_with(".tmp") || name.starts_with('.')
}

/// List the session files of a profile, in the order Firefox tries them
/// (newest upgrade file first among upgrades); [`scan`] without what it
/// leaves out.
pub fn list(profile_dir: &Path) -> Result<Vec<SourceFile>, PathError> {
    Ok(scan(profile_dir)?.files)
}

/// The session files of a profile, and what is left out and why.
///
/// Only regular files with the names Firefox gives session files are
/// taken: `sessionstore.jsonlz4` (and the plain-JSON `sessionstore.js`,
/// `sessionstore.bak`, `sessionstore.bak-<date>` of old versions) directly in
/// the profile folder; `recovery.jsonlz4`, `recovery.baklz4`,
/// `previous.jsonlz4`, `upgrade.jsonlz4-<build id>` (and `recovery.js`,
/// `recovery.bak`, `previous.js`, `upgrade.js-<build id>`) in a real
/// `sessionstore-backups/` folder; each at most [`MAX_SESSION_BYTES`]. No
/// symbolic link is followed, neither a linked file nor a linked
/// `sessionstore-backups/`. Firefox's temporary files (`*.tmp`) and hidden
/// files are left out without a word, other files of the profile folder are
/// none of a backup's business; anything else is in [`Listing::skipped`].
pub fn scan(profile_dir: &Path) -> Result<Listing, PathError> {
    if !profile_dir.is_dir() {
        return Err(PathError {
            path: profile_dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "profile folder does not exist",
            ),
        });
    }
    let mut listing = Listing::default();
    for entry in fs::read_dir(profile_dir).with_path(profile_dir)? {
        let entry = entry.with_path(profile_dir)?;
        let os_name = entry.file_name();
        let Some(name) = os_name.to_str() else {
            // Only a name that could have been a session file's is worth a word.
            let lossy = os_name.to_string_lossy();
            let session_like =
                lossy.starts_with("sessionstore") || lossy.starts_with("zen-sessions");
            if session_like && !is_ignored(&lossy) {
                listing.skipped.push(SkippedFile {
                    path: entry.path(),
                    name: lossy.into_owned(),
                    reason: SkipReason::NameNotUtf8,
                });
            }
            continue;
        };
        if is_root_session_name(name) {
            consider(&mut listing, &entry, name.to_owned());
        }
    }
    scan_folder(
        &mut listing,
        profile_dir,
        "sessionstore-backups",
        is_backups_session_name,
    )?;
    scan_folder(
        &mut listing,
        profile_dir,
        "zen-sessions-backup",
        is_zen_backup_name,
    )?;
    listing.files.sort_by(|a, b| {
        a.kind
            .cmp(&b.kind)
            .then(b.modified.cmp(&a.modified))
            .then(a.name.cmp(&b.name))
    });
    listing.skipped.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(listing)
}

/// Take the files of the folder `folder` of the profile whose names
/// `is_session_name` accepts; say why the others, or the folder itself, are
/// left out. A folder that does not exist holds nothing.
fn scan_folder(
    listing: &mut Listing,
    profile_dir: &Path,
    folder: &str,
    is_session_name: fn(&str) -> bool,
) -> Result<(), PathError> {
    let dir = profile_dir.join(folder);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() && !crate::fs_util::is_link(&dir) => {
            for entry in fs::read_dir(&dir).with_path(&dir)? {
                let entry = entry.with_path(&dir)?;
                let os_name = entry.file_name();
                let lossy = os_name.to_string_lossy();
                if is_ignored(&lossy) {
                    continue;
                }
                let name = format!("{folder}/{lossy}");
                match os_name.to_str() {
                    Some(n) if is_session_name(n) => consider(listing, &entry, name),
                    Some(_) => listing.skipped.push(SkippedFile {
                        path: entry.path(),
                        name,
                        reason: SkipReason::NotASessionFile,
                    }),
                    None => listing.skipped.push(SkippedFile {
                        path: entry.path(),
                        name,
                        reason: SkipReason::NameNotUtf8,
                    }),
                }
            }
            Ok(())
        }
        Ok(m) => {
            listing.skipped.push(SkippedFile {
                reason: not_taken(&dir, &m, true),
                path: dir,
                name: folder.to_owned(),
            });
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(PathError {
            path: dir,
            source: e,
        }),
    }
}

/// Take the entry named `name` (relative to the profile) if it is a regular
/// file within the size bound; otherwise say why not.
fn consider(listing: &mut Listing, entry: &fs::DirEntry, name: String) {
    let path = entry.path();
    // `DirEntry::metadata` does not follow a link.
    let reason = match entry.metadata() {
        Ok(m) if m.is_file() && !crate::fs_util::is_link(&path) => {
            if m.len() <= MAX_SESSION_BYTES {
                let kind = classify(&name);
                listing.files.push(SourceFile {
                    path,
                    name,
                    kind,
                    size: m.len(),
                    modified: m.modified().ok(),
                });
                return;
            }
            SkipReason::TooLarge {
                size: m.len(),
                limit: MAX_SESSION_BYTES,
            }
        }
        Ok(m) => not_taken(&path, &m, false),
        // Gone since the folder was listed (Firefox renames files over others).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => SkipReason::Unreadable {
            error: e.to_string(),
        },
    };
    listing.skipped.push(SkippedFile { path, name, reason });
}

/// Why `path` (whose own metadata is `m`) is not taken: a link, or not a
/// regular file (not a folder, when `folder` is wanted).
fn not_taken(path: &Path, m: &fs::Metadata, folder: bool) -> SkipReason {
    if m.file_type().is_symlink() || crate::fs_util::is_link(path) {
        return SkipReason::SymbolicLink {
            target: fs::read_link(path)
                .ok()
                .map(|t| t.to_string_lossy().into_owned()),
        };
    }
    let kind = if m.is_dir() {
        "a folder"
    } else if m.is_file() {
        "a file"
    } else {
        "a special file (FIFO, socket or device)"
    };
    let kind = kind.to_owned();
    if folder {
        SkipReason::NotAFolder { kind }
    } else {
        SkipReason::NotRegular { kind }
    }
}

/// The profile folder that holds the session file at `path`, by Firefox's
/// layout: the file's folder, or the one above it for a file in
/// `sessionstore-backups/` or `zen-sessions-backup/`.
pub fn profile_of(path: &Path) -> Option<&Path> {
    let folder = path.parent()?;
    match folder.file_name().and_then(|n| n.to_str()) {
        Some("sessionstore-backups" | "zen-sessions-backup") => folder.parent(),
        _ => Some(folder),
    }
}

/// Zen's files ([`SourceKind::is_zen`]) in the profile folder holding the
/// session file at `path`: none beside a file outside a Zen profile.
pub fn zen_files_beside(path: &Path) -> Vec<SourceFile> {
    let Some(profile) = profile_of(path) else {
        return Vec::new();
    };
    let profile = if profile.as_os_str().is_empty() {
        Path::new(".")
    } else {
        profile
    };
    scan(profile)
        .map(|l| l.files.into_iter().filter(|f| f.kind.is_zen()).collect())
        .unwrap_or_default()
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
/// not read or parse are skipped and reported, and so is what [`scan`]
/// leaves out.
pub fn newest(profile_dir: &Path) -> Result<NewestSession, Error> {
    let listing = scan(profile_dir)?;
    // Zen's own files hold no Firefox session.
    let files: Vec<SourceFile> = listing
        .files
        .into_iter()
        .filter(|f| !f.kind.is_zen())
        .collect();
    let candidates = files.len();
    let mut best: Option<(u64, SessionData, SourceFile)> = None;
    let mut skipped: Vec<(PathBuf, String)> = listing
        .skipped
        .into_iter()
        .map(|s| (s.path, s.reason.to_string()))
        .collect();
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
        Error::ZenParse { source, .. } => format!("not a valid Zen sessions file: {source}"),
        other => other
            .source()
            .map_or_else(|| other.to_string(), |s| s.to_string()),
    }
}

#[cfg(test)]
mod tests;
