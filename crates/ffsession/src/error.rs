//! Error types shared across modules.
//!
//! Policy: every error that concerns a file names that file; every error says
//! what is wrong, and [`Error::hint`] says what the user can do about it. Nothing
//! in the library panics on bad input.

use std::io;
use std::path::{Path, PathBuf};

use crate::Hint;

/// What to do when another program holds a file open, so that it cannot be
/// replaced (Windows): the hint of an [`io::ErrorKind::ResourceBusy`] error.
pub(crate) const HELD_OPEN_HINT: Hint = Hint::Advice(
    "close the program that has the file open (an editor, a sync or backup tool, an antivirus scan) and try again",
);

/// An I/O error together with the path it happened on.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct PathError {
    /// The file or directory the operation was about.
    pub path: PathBuf,
    /// The underlying I/O error.
    #[source]
    pub source: io::Error,
}

impl PathError {
    /// Whether this is a folder opened as a file: Unix says "is a directory",
    /// Windows "access denied".
    pub(crate) fn is_folder_opened_as_file(&self) -> bool {
        self.source.kind() == io::ErrorKind::IsADirectory
            || (self.source.kind() == io::ErrorKind::PermissionDenied && self.path.is_dir())
    }
}

/// Attach a path to an [`io::Error`].
pub trait IoResultExt<T> {
    /// Turn `io::Result<T>` into `Result<T, PathError>` naming `path`.
    fn with_path(self, path: impl AsRef<Path>) -> Result<T, PathError>;
}

impl<T> IoResultExt<T> for io::Result<T> {
    fn with_path(self, path: impl AsRef<Path>) -> Result<T, PathError> {
        self.map_err(|source| PathError {
            path: path.as_ref().to_path_buf(),
            source,
        })
    }
}

/// Why the bytes of a session file could not be turned into session JSON.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// The file has no bytes at all.
    #[error("the file is empty")]
    Empty,
    /// Neither the mozlz4 magic nor a JSON object.
    #[error("not a session file: it starts with neither the mozlz4 magic \"mozLz40\\0\" nor a JSON object")]
    UnknownFormat,
    /// Looks like mozlz4 but the magic is wrong (e.g. a different version byte).
    #[error("wrong mozlz4 magic {found:?} (expected \"mozLz40\\0\")")]
    WrongMagic {
        /// The first eight bytes, lossily decoded.
        found: String,
    },
    /// The 12-byte mozlz4 header is incomplete.
    #[error("truncated mozlz4 header ({len} bytes, need 12)")]
    TruncatedHeader {
        /// Length of the file.
        len: usize,
    },
    /// The size header claims more than the compressed data could possibly hold.
    #[error("the size header claims {claimed} bytes, impossible for {compressed} bytes of LZ4 data (at most {limit})")]
    ImplausibleSize {
        /// The size read from the header.
        claimed: u64,
        /// Bytes of LZ4 data after the header.
        compressed: usize,
        /// The largest size that data could decompress to.
        limit: u64,
    },
    /// The LZ4 block is damaged or truncated.
    #[error("damaged LZ4 data: {0}")]
    Lz4(String),
    /// The LZ4 block decompressed to a different size than the header says.
    #[error("the size header says {claimed} bytes but the LZ4 data holds {actual}")]
    SizeMismatch {
        /// The size read from the header.
        claimed: usize,
        /// The size actually decompressed.
        actual: usize,
    },
    /// Input to `compress` is already mozlz4.
    #[error("the input is already mozlz4-compressed")]
    AlreadyCompressed,
    /// The JSON is too large for the mozlz4 u32 size field.
    #[error("{0} bytes of JSON do not fit the mozlz4 size field (at most 4 GiB)")]
    TooLarge(usize),
}

/// Why session JSON could not be read as a Firefox session: not valid JSON, not
/// UTF-8, or not shaped like a session (no `windows` list, a field of the wrong
/// type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// What is wrong and where (line and column).
    pub message: String,
    /// 1-based line of the JSON where the parser stopped.
    pub line: usize,
    /// 1-based column of the JSON where the parser stopped.
    pub column: usize,
}

impl ParseError {
    /// Invalid UTF-8 at byte `offset` of `json`.
    pub fn invalid_utf8(json: &[u8], offset: usize) -> Self {
        let before = &json[..offset.min(json.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = offset
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1)
            + 1;
        ParseError {
            message: format!("invalid UTF-8 at line {line} column {column}"),
            line,
            column,
        }
    }
}

impl From<serde_json::Error> for ParseError {
    fn from(e: serde_json::Error) -> Self {
        ParseError {
            message: e.to_string(),
            line: e.line(),
            column: e.column(),
        }
    }
}

/// The library's error type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] PathError),
    /// The file's bytes are not a readable mozlz4 or JSON container.
    #[error("{}: {source}", path.display())]
    Format {
        /// The session file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: FormatError,
    },
    /// The JSON is not a Firefox session.
    #[error("{}: not a valid Firefox session: {source}", path.display())]
    Parse {
        /// The session file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: ParseError,
    },
    /// The JSON is not Zen's sessions file (`zen-sessions.jsonlz4`).
    #[error("{}: not a valid Zen sessions file: {source}", path.display())]
    ZenParse {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: ParseError,
    },
    /// A Firefox profile could not be found or read.
    #[error("{0}")]
    Profile(#[from] crate::profile::ProfileError),
    /// A profile holds no readable session file.
    #[error("{}: no readable session file in this profile{}", profile.display(), describe_skipped(skipped))]
    NoSessionFile {
        /// The profile directory.
        profile: PathBuf,
        /// Files that exist but could not be read, with the reason.
        skipped: Vec<(PathBuf, String)>,
    },
    /// Writing the output would overwrite the input.
    #[error("{}: refusing to overwrite the input file", path.display())]
    WouldOverwriteInput {
        /// The input (and output) file.
        path: PathBuf,
    },
}

fn describe_skipped(skipped: &[(PathBuf, String)]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let names: Vec<String> = skipped
        .iter()
        .map(|(p, why)| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            format!("{name}: {why}")
        })
        .collect();
    format!(" (unreadable: {})", names.join("; "))
}

impl Error {
    /// What the user can do about this error, if there is something useful to say.
    pub fn hint(&self) -> Option<Hint> {
        match self {
            Error::Io(e) if e.source.kind() == io::ErrorKind::NotFound => Some(Hint::CheckPath),
            Error::Io(e) if e.is_folder_opened_as_file() => Some(Hint::FolderNotFile),
            Error::Io(e) if e.source.kind() == io::ErrorKind::PermissionDenied => Some(Hint::Advice(
                "check the file's permissions (session files are usually readable only by their owner)",
            )),
            Error::Io(e) if e.source.kind() == io::ErrorKind::ResourceBusy => Some(HELD_OPEN_HINT),
            Error::Io(_) => None,
            Error::Format { source, path } => Some(match source {
                FormatError::AlreadyCompressed => Hint::AlreadyCompressed,
                FormatError::TooLarge(_) => {
                    Hint::Advice("split or slim the session before compressing it")
                }
                FormatError::UnknownFormat => Hint::Advice(
                    "ffsession reads mozlz4 files (sessionstore.jsonlz4, recovery.jsonlz4, ...) and JSON session files",
                ),
                _ => Hint::Damaged { file: path.clone() },
            }),
            Error::Parse { path, .. } => Some(Hint::NotASession { file: path.clone() }),
            Error::ZenParse { .. } => Some(Hint::NotZen),
            Error::Profile(e) => e.hint(),
            Error::NoSessionFile { .. } => Some(Hint::Advice(
                "start and quit Firefox once to write a session, or name a session file explicitly",
            )),
            Error::WouldOverwriteInput { .. } => Some(Hint::ChooseOutput),
        }
    }
}
