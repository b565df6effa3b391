//! The container formats of Firefox session files, detected from content.
//!
//! This module owns the bytes on disk: it turns a session file into one buffer of
//! session JSON, and JSON back into mozlz4. Two formats exist:
//!
//! - **mozlz4** (`sessionstore.jsonlz4`, `recovery.jsonlz4`, `recovery.baklz4`,
//!   `previous.jsonlz4`, `upgrade.jsonlz4-<buildid>`): the 8-byte magic
//!   `mozLz40\0`, the decompressed size as a little-endian u32, then one raw LZ4
//!   block. The size comes from the file, so it is checked against the most the
//!   LZ4 data could possibly expand to before anything is allocated.
//! - **JSON** (legacy `sessionstore.js`, `.bak`, or a decompressed file): used as
//!   is; a UTF-8 byte-order mark and the `( ... )` wrapping of very old Firefox
//!   versions are tolerated.
//!
//! The file name is never used to decide the format.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::buffer::Buffer;
use crate::error::{Error, FormatError, IoResultExt, ParseError};
use crate::session::Session;

mod at_once;
// The fuzz targets' and tests' comparisons with the reference parser: in
// fuzz builds (`--cfg fuzzing`) and debug builds, never in a release.
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub use at_once::assert_at_once_matches_reference;
pub(crate) mod stream;
mod summarize;

#[doc(hidden)]
pub use summarize::summary_in_pieces;
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub use summarize::{
    assert_block_in_pieces_matches_reference, assert_summary_in_pieces_matches_reference,
};
pub use summarize::{open_tab_urls, FileSummary};

/// The 8-byte magic that starts every mozlz4 file.
pub const MOZLZ4_MAGIC: &[u8; 8] = b"mozLz40\0";
/// Length of the mozlz4 header: magic plus u32 size.
pub const MOZLZ4_HEADER_LEN: usize = 12;
/// The most one byte of an LZ4 block can expand to (a match length byte of 255).
const LZ4_MAX_EXPANSION: u64 = 255;

/// How a session file is stored on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `mozLz40\0` + u32 LE size + one LZ4 block.
    Mozlz4,
    /// Plain JSON (legacy `sessionstore.js`, or a decompressed session).
    Json,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Mozlz4 => "mozlz4",
            Format::Json => "json",
        })
    }
}

/// Detect the container format from the first bytes of a file.
pub fn detect(bytes: &[u8]) -> Result<Format, FormatError> {
    if bytes.is_empty() {
        return Err(FormatError::Empty);
    }
    if bytes.starts_with(MOZLZ4_MAGIC) {
        return Ok(Format::Mozlz4);
    }
    if bytes.starts_with(b"mozLz4") || bytes.starts_with(b"mozJSSC") {
        let n = bytes.len().min(8);
        return Err(FormatError::WrongMagic {
            found: String::from_utf8_lossy(&bytes[..n]).into_owned(),
        });
    }
    if MOZLZ4_MAGIC.starts_with(bytes) {
        return Err(FormatError::TruncatedHeader { len: bytes.len() });
    }
    match json_range(bytes) {
        Some(_) => Ok(Format::Json),
        None => Err(FormatError::UnknownFormat),
    }
}

/// The range of `bytes` holding the JSON value, without BOM, surrounding white
/// space or the `( ... )` wrapping of old Firefox; `None` if it is not an object.
fn json_range(bytes: &[u8]) -> Option<Range<usize>> {
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let mut start = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    start += bytes[start..].iter().take_while(|b| is_space(b)).count();
    let mut end = bytes.len()
        - bytes[start..]
            .iter()
            .rev()
            .take_while(|b| is_space(b))
            .count();
    if bytes.get(start) == Some(&b'(') && end > start + 1 && bytes[end - 1] == b')' {
        start += 1;
        end -= 1;
    }
    (bytes.get(start) == Some(&b'{')).then_some(start..end)
}

/// Decompress a mozlz4 file's bytes into a new JSON buffer.
pub fn decompress(bytes: &[u8]) -> Result<Vec<u8>, FormatError> {
    decompress_with(bytes, |len| vec![0; len], &mut |_| {})
}

/// Like [`decompress`], into a [`Buffer`] that uses huge pages when large.
pub fn decompress_to_buffer(bytes: &[u8]) -> Result<Buffer, FormatError> {
    decompress_with(bytes, Buffer::zeroed, &mut |_| {})
}

/// Decompress into a buffer from `alloc`; `release(n)` is called as the first
/// `n` bytes of the LZ4 block are decoded ([`stream::decode`]).
fn decompress_with<B: std::ops::DerefMut<Target = [u8]>>(
    bytes: &[u8],
    alloc: impl FnOnce(usize) -> B,
    release: &mut dyn FnMut(usize),
) -> Result<B, FormatError> {
    let claimed = check_header(bytes)?;
    let mut json = alloc(claimed);
    let actual = stream::decode(&bytes[MOZLZ4_HEADER_LEN..], &mut json, release)
        .map_err(|e| FormatError::Lz4(e.to_string()))?;
    if actual != claimed {
        return Err(FormatError::SizeMismatch { claimed, actual });
    }
    Ok(json)
}

/// The size a mozlz4 file's header claims, once the header is checked: the
/// magic, and a size the LZ4 data after it could decode to.
fn check_header(bytes: &[u8]) -> Result<usize, FormatError> {
    if bytes.len() < MOZLZ4_HEADER_LEN {
        return Err(match detect(bytes) {
            Err(e) => e,
            Ok(_) => FormatError::TruncatedHeader { len: bytes.len() },
        });
    }
    if &bytes[..8] != MOZLZ4_MAGIC {
        return Err(FormatError::WrongMagic {
            found: String::from_utf8_lossy(&bytes[..8]).into_owned(),
        });
    }
    let claimed = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let block = &bytes[MOZLZ4_HEADER_LEN..];
    let limit = block.len() as u64 * LZ4_MAX_EXPANSION + 16;
    if u64::from(claimed) > limit {
        return Err(FormatError::ImplausibleSize {
            claimed: claimed.into(),
            compressed: block.len(),
            limit,
        });
    }
    Ok(claimed as usize)
}

/// Compress session JSON into mozlz4 bytes (header + one LZ4 block).
pub fn compress(json: &[u8]) -> Result<Vec<u8>, FormatError> {
    if json.starts_with(MOZLZ4_MAGIC) {
        return Err(FormatError::AlreadyCompressed);
    }
    let size = u32::try_from(json.len()).map_err(|_| FormatError::TooLarge(json.len()))?;
    let mut out = Vec::with_capacity(
        MOZLZ4_HEADER_LEN + lz4_flex::block::get_maximum_output_size(json.len()),
    );
    out.extend_from_slice(MOZLZ4_MAGIC);
    out.extend_from_slice(&size.to_le_bytes());
    out.resize(out.capacity(), 0);
    let n = lz4_flex::block::compress_into(json, &mut out[MOZLZ4_HEADER_LEN..])
        .map_err(|e| FormatError::Lz4(e.to_string()))?;
    out.truncate(MOZLZ4_HEADER_LEN + n);
    Ok(out)
}

/// Write `json` pretty-printed (two-space indent) to `out`, streaming value by
/// value: no tree is built and object keys keep their order.
pub fn write_pretty(json: &[u8], out: &mut dyn std::io::Write) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let mut ser = serde_json::Serializer::pretty(out);
    serde_transcode::transcode(&mut de, &mut ser)?;
    de.end()
}

/// A session file read into memory: one buffer of session JSON, ready to parse.
///
/// The buffer is decompressed once; [`SessionData::parse`] borrows from it, so the
/// parsed [`Session`] copies no strings except those JSON escapes force.
#[derive(Debug)]
pub struct SessionData {
    path: PathBuf,
    format: Format,
    file_size: u64,
    buf: Buffer,
    json: Range<usize>,
    /// A repaired copy of the JSON, made only if the JSON does not parse.
    repaired: std::sync::OnceLock<Option<Vec<u8>>>,
}

impl SessionData {
    /// Read and, if needed, decompress the session file at `path`.
    ///
    /// A mapped file's pages leave the process as soon as they are decoded
    /// (`format/stream.rs`), so only its JSON stays in memory.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes = Buffer::map_file(path).with_path(path)?;
        Self::from_buffer(path, bytes)
    }

    /// Interpret `bytes` (the contents of the file at `path`) as a session file.
    pub fn from_bytes(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Self, Error> {
        Self::from_buffer(path, Buffer::from(bytes))
    }

    /// Interpret `bytes` without taking them: a mozlz4 file is decompressed
    /// from them, plain JSON is copied. (For a caller that keeps the file's
    /// bytes, as `rescue` does to write a whole file out as it is.)
    pub fn from_slice(path: impl Into<PathBuf>, bytes: &[u8]) -> Result<Self, Error> {
        match detect(bytes) {
            Ok(Format::Mozlz4) => Self::decompressed(path.into(), bytes),
            _ => Self::from_bytes(path, bytes.to_vec()),
        }
    }

    fn from_buffer(path: impl Into<PathBuf>, bytes: Buffer) -> Result<Self, Error> {
        let path = path.into();
        let fail = |source| Error::Format {
            path: path.clone(),
            source,
        };
        match detect(&bytes).map_err(fail)? {
            Format::Mozlz4 => {
                let release = |n: usize| bytes.release_before(MOZLZ4_HEADER_LEN + n);
                Self::decompressed_with(path, &bytes, release)
            }
            Format::Json => {
                let range = json_range(&bytes).ok_or_else(|| fail(FormatError::UnknownFormat))?;
                Ok(SessionData {
                    file_size: bytes.len() as u64,
                    path,
                    format: Format::Json,
                    buf: bytes,
                    json: range,
                    repaired: std::sync::OnceLock::new(),
                })
            }
        }
    }

    /// A mozlz4 file's bytes, decompressed into a new buffer.
    fn decompressed(path: PathBuf, bytes: &[u8]) -> Result<Self, Error> {
        Self::decompressed_with(path, bytes, |_| {})
    }

    /// [`SessionData::decompressed`], calling `release(n)` when the first `n`
    /// bytes of the LZ4 block are decoded and no longer needed.
    fn decompressed_with(
        path: PathBuf,
        bytes: &[u8],
        mut release: impl FnMut(usize),
    ) -> Result<Self, Error> {
        let buf = decompress_with(bytes, Buffer::zeroed, &mut release).map_err(|source| {
            Error::Format {
                path: path.clone(),
                source,
            }
        })?;
        let len = buf.len();
        Ok(SessionData {
            path,
            format: Format::Mozlz4,
            file_size: bytes.len() as u64,
            buf,
            json: 0..len,
            repaired: std::sync::OnceLock::new(),
        })
    }

    /// The file this data was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The container format of the file.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Size of the file on disk, in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The session JSON (decompressed if the file was mozlz4).
    pub fn json(&self) -> &[u8] {
        &self.buf[self.json.clone()]
    }

    /// Parse the JSON into a [`Session`] borrowing from this buffer.
    ///
    /// JSON that Firefox wrote but serde_json refuses (lone surrogate escapes,
    /// the JavaScript literals of Firefox 2 and 3.0) is read from a repaired
    /// copy kept with this data (`legacy.rs`); the error reported is the
    /// original one if that fails too.
    pub fn parse(&self) -> Result<Session<'_>, Error> {
        self.read_with(Session::from_json)
    }

    /// Parse the JSON as Zen's sessions file (`zen-sessions.jsonlz4` and its
    /// backups), borrowing from this buffer ([`crate::zen`]).
    pub fn parse_zen(&self) -> Result<crate::zen::ZenSessions<'_>, Error> {
        crate::zen::ZenSessions::from_json(self.json()).map_err(|source| Error::ZenParse {
            path: self.path.clone(),
            source,
        })
    }

    /// The repaired copy of the JSON that [`SessionData::parse`] read, if the
    /// JSON itself did not parse and a repair did (`legacy.rs`).
    pub fn repaired_json(&self) -> Option<&[u8]> {
        self.repaired.get()?.as_deref()
    }

    /// Parse only the session's metadata (`session.lastUpdate` etc.), skipping the
    /// windows without building them.
    pub fn parse_meta(&self) -> Result<crate::session::SessionMeta, Error> {
        self.read_with(crate::session::SessionMeta::from_json)
    }

    /// Read the JSON with `read`, or, if that fails, its repaired copy (made
    /// once); the error reported is the one about the JSON itself.
    fn read_with<'s, T>(
        &'s self,
        read: impl Fn(&'s [u8]) -> Result<T, ParseError>,
    ) -> Result<T, Error> {
        read(self.json()).or_else(|e| {
            let repaired = self
                .repaired
                .get_or_init(|| crate::legacy::normalize(self.json()));
            match repaired {
                Some(json) => read(json).map_err(|_| self.parse_error(e)),
                None => Err(self.parse_error(e)),
            }
        })
    }

    fn parse_error(&self, source: ParseError) -> Error {
        Error::Parse {
            path: self.path.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &[u8] = br#"{"windows":[],"session":{"lastUpdate":5}}"#;

    #[test]
    fn a_large_mapped_file_reads_whole_though_its_pages_are_let_go() {
        // Big enough to be mapped, and to be released many chunks at a time.
        let mut json = b"{\"windows\":[".to_vec();
        let mut x: u64 = 1;
        while json.len() < 6 << 20 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            json.extend_from_slice(format!("{{\"u\":\"{:x}\"}},", x >> 20).as_bytes());
        }
        json.extend_from_slice(b"{}]}");
        let packed = compress(&json).unwrap();
        assert!(packed.len() as u64 > 2 << 20 && packed.len() > 8 * stream::CHUNK);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.jsonlz4");
        std::fs::write(&path, &packed).unwrap();
        let data = SessionData::read(&path).unwrap();
        assert!(data.json() == &json[..]);
        assert_eq!(data.file_size(), packed.len() as u64);
        // A damaged one is still an error naming the file.
        let mut bad = packed.clone();
        let cut = bad.len() - 1000;
        bad.truncate(cut);
        std::fs::write(&path, &bad).unwrap();
        let err = SessionData::read(&path).unwrap_err().to_string();
        assert!(err.contains("big.jsonlz4") && err.contains("LZ4"), "{err}");
    }

    #[test]
    fn round_trip_gives_back_the_same_json_bytes() {
        let packed = compress(JSON).unwrap();
        assert_eq!(&packed[..8], MOZLZ4_MAGIC);
        assert_eq!(
            u32::from_le_bytes(packed[8..12].try_into().unwrap()) as usize,
            JSON.len()
        );
        assert_eq!(decompress(&packed).unwrap(), JSON);
    }

    #[test]
    fn detects_by_content_not_name() {
        assert_eq!(detect(&compress(JSON).unwrap()), Ok(Format::Mozlz4));
        assert_eq!(detect(JSON), Ok(Format::Json));
        assert_eq!(detect(b"\xEF\xBB\xBF  {}"), Ok(Format::Json));
        assert_eq!(detect(b"({\"windows\":[]})"), Ok(Format::Json));
        assert_eq!(detect(b""), Err(FormatError::Empty));
        assert_eq!(detect(b"[1]"), Err(FormatError::UnknownFormat));
        assert_eq!(
            detect(b"mozLz"),
            Err(FormatError::TruncatedHeader { len: 5 })
        );
        assert!(matches!(
            detect(b"mozLz41\0abcd"),
            Err(FormatError::WrongMagic { .. })
        ));
    }

    #[test]
    fn a_lying_size_header_is_refused_before_allocating() {
        let mut file = MOZLZ4_MAGIC.to_vec();
        file.extend_from_slice(&u32::MAX.to_le_bytes());
        file.extend_from_slice(&[0u8; 8]);
        assert_eq!(file.len(), 20);
        assert!(
            matches!(decompress(&file), Err(FormatError::ImplausibleSize { claimed, .. }) if claimed == u32::MAX as u64)
        );
    }

    #[test]
    fn a_size_header_smaller_or_larger_than_the_data_is_an_error() {
        let mut packed = compress(JSON).unwrap();
        let real = JSON.len() as u32;
        packed[8..12].copy_from_slice(&(real - 3).to_le_bytes());
        assert!(decompress(&packed).is_err());
        packed[8..12].copy_from_slice(&(real + 3).to_le_bytes());
        assert!(matches!(
            decompress(&packed),
            Err(FormatError::SizeMismatch { .. })
        ));
    }

    #[test]
    fn truncated_lz4_is_an_error() {
        let big: Vec<u8> = (0..10_000u32)
            .flat_map(|i| format!("{i},").into_bytes())
            .collect();
        let packed = compress(&big).unwrap();
        for cut in [13, packed.len() / 2, packed.len() - 1] {
            assert!(decompress(&packed[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn pretty_printing_keeps_key_order_and_values() {
        let mut out = Vec::new();
        write_pretty(br#"{"z":1,"a":["\u00e9",2.5,null]}"#, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n  \"z\": 1,\n  \"a\": [\n    \"\u{e9}\",\n    2.5,\n    null\n  ]\n}"
        );
    }

    #[test]
    fn plain_json_keeps_its_bytes_and_strips_wrapping() {
        let data = SessionData::from_bytes("x.js", b"\n({\"windows\":[]})\n".to_vec()).unwrap();
        assert_eq!(data.format(), Format::Json);
        assert_eq!(data.json(), b"{\"windows\":[]}");
        assert_eq!(data.parse().unwrap().windows.len(), 0);
    }
}
