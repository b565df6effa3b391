//! Chunks: content-defined pieces of a snapshot, named by their BLAKE3 digest,
//! stored once each as a zstd-compressed file.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::IoResultExt;
use crate::fs_util::write_atomic;

use super::StoreError;

/// zstd level for chunk files: level 3 compresses session JSON about as well as
/// level 9 here (the bulk is base64 favicons and random ids) at a fraction of
/// the time.
pub(super) const ZSTD_LEVEL: i32 = 3;

/// A BLAKE3 digest (32 bytes), naming a chunk or a snapshot's whole content.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub(super) [u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lower-case hex, 64 characters.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Parse 64 hex digits (either case); `None` if `s` is anything else.
    pub fn from_hex(s: &str) -> Option<Digest> {
        let s = s.as_bytes();
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.chunks_exact(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(Digest(out))
    }

    pub(super) fn from_slice(bytes: &[u8]) -> Option<Digest> {
        <[u8; 32]>::try_from(bytes).ok().map(Digest)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Digest::from_hex(&text)
            .ok_or_else(|| serde::de::Error::custom("not a BLAKE3 digest (64 hex digits)"))
    }
}

/// Sizes for FastCDC (v2020) content-defined chunking, in bytes.
///
/// They are fixed when a store is created and recorded in its catalog, so the
/// same content always splits the same way in that store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkerParams {
    /// No chunk is smaller (except the last of a content).
    pub min: usize,
    /// The average chunk size.
    pub avg: usize,
    /// No chunk is larger.
    pub max: usize,
}

impl Default for ChunkerParams {
    /// 4 KiB / 16 KiB / 64 KiB. Measured with `benches/store.rs` (200 snapshots
    /// of a 4.6 MB session, 2-3 tabs changing each time), the store took 2.2%,
    /// 3.3%, 4.9% and 8.3% of the full mozlz4 files with averages of 8, 16, 32
    /// and 64 KiB; 16 KiB keeps most of the gain with half the chunk files,
    /// fsyncs and catalog rows of 8 KiB.
    fn default() -> Self {
        ChunkerParams {
            min: 4 * 1024,
            avg: 16 * 1024,
            max: 64 * 1024,
        }
    }
}

impl ChunkerParams {
    /// True if FastCDC accepts these sizes (even, within its limits, min <= avg <= max).
    pub fn is_valid(&self) -> bool {
        use fastcdc::v2020::{
            AVERAGE_MAX, AVERAGE_MIN, MAXIMUM_MAX, MAXIMUM_MIN, MINIMUM_MAX, MINIMUM_MIN,
        };
        (MINIMUM_MIN..=MINIMUM_MAX).contains(&self.min)
            && (AVERAGE_MIN..=AVERAGE_MAX).contains(&self.avg)
            && (MAXIMUM_MIN..=MAXIMUM_MAX).contains(&self.max)
            && self.min <= self.avg
            && self.avg <= self.max
            && [self.min, self.avg, self.max].iter().all(|n| n % 2 == 0)
    }

    /// Split `content` into chunks (an empty content has none).
    pub(super) fn split<'a>(&self, content: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        fastcdc::v2020::FastCDC::new(content, self.min, self.avg, self.max)
            .map(move |c| &content[c.offset..c.offset + c.length])
    }
}

/// `chunks/<first two hex digits>/<digest>.zst`
pub(super) fn chunk_path(chunks_dir: &Path, digest: &Digest) -> PathBuf {
    let hex = digest.to_hex();
    chunks_dir.join(&hex[..2]).join(format!("{hex}.zst"))
}

/// The digest a chunk file's name claims, if it is named like one.
pub(super) fn digest_of_file_name(name: &str) -> Option<Digest> {
    Digest::from_hex(name.strip_suffix(".zst")?)
}

/// Compress a chunk, and check that the compressed bytes give it back.
pub(super) fn compress(raw: &[u8], path: &Path) -> Result<Vec<u8>, StoreError> {
    let packed = zstd::bulk::compress(raw, ZSTD_LEVEL).with_path(path)?;
    match zstd::bulk::decompress(&packed, raw.len()) {
        Ok(back) if back == raw => Ok(packed),
        _ => Err(crate::error::PathError {
            path: path.to_path_buf(),
            source: std::io::Error::other("zstd did not give back the chunk it compressed"),
        }
        .into()),
    }
}

/// Write a compressed chunk durably (temporary file, fsync, rename, fsync of
/// its folder), through the one atomic-write helper.
/// Its folder (`chunks/ab`) must be a real one, not a link out of the store.
pub(super) fn write(path: &Path, packed: &[u8]) -> Result<(), StoreError> {
    if let Some(dir) = path.parent() {
        super::hygiene::require_real_dir(dir)?;
    }
    write_atomic(path, |w: &mut dyn Write| w.write_all(packed))?;
    Ok(())
}

/// Why a chunk could not be read back.
pub(super) enum ReadFailure {
    Missing,
    Damaged(String),
    Io(std::io::Error),
}

impl fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadFailure::Missing => f.write_str("missing"),
            ReadFailure::Damaged(why) => f.write_str(why),
            ReadFailure::Io(e) => e.fmt(f),
        }
    }
}

/// Reads chunks one after another with one zstd context and two reused
/// buffers, so reading a content back costs no allocation per chunk.
pub(super) struct Reader {
    zstd: zstd::bulk::Decompressor<'static>,
    packed: Vec<u8>,
    /// The last chunk read.
    pub(super) raw: Vec<u8>,
}

impl Reader {
    pub(super) fn new() -> std::io::Result<Reader> {
        Ok(Reader {
            zstd: zstd::bulk::Decompressor::new()?,
            packed: Vec::new(),
            raw: Vec::new(),
        })
    }

    /// The compressed bytes of the last chunk read.
    pub(super) fn packed_mut(&mut self) -> &mut Vec<u8> {
        &mut self.packed
    }

    /// Read, decompress and verify one chunk of `raw_size` bytes into
    /// `self.raw`. A symbolic link in the chunk's place is not followed: a
    /// chunk is a plain file the store wrote.
    pub(super) fn read(
        &mut self,
        path: &Path,
        digest: &Digest,
        raw_size: usize,
    ) -> Result<&[u8], ReadFailure> {
        self.read_as(path, digest, raw_size, None)
    }

    /// Whether the file at `path` holds exactly the bytes whose digest is
    /// `frame` (the zstd frame recorded when it was written and read back):
    /// then it decompresses to what it did then, without decompressing it.
    /// `Ok(false)` if the bytes differ (the caller decompresses to know more).
    pub(super) fn frame_matches(
        &mut self,
        path: &Path,
        frame: &Digest,
        raw_size: usize,
    ) -> Result<bool, ReadFailure> {
        self.read_packed(path, raw_size)?;
        Ok(Digest::of(&self.packed) == *frame)
    }

    /// Like [`Reader::read`]; with `expected`, the bytes of which `digest` was
    /// just computed, the chunk is compared with them instead of hashed (equal
    /// bytes have the same digest), which is faster.
    pub(super) fn read_as(
        &mut self,
        path: &Path,
        digest: &Digest,
        raw_size: usize,
        expected: Option<&[u8]>,
    ) -> Result<&[u8], ReadFailure> {
        self.read_packed(path, raw_size)?;
        self.raw.clear();
        self.raw.reserve(raw_size);
        self.zstd
            .decompress_to_buffer(&self.packed[..], &mut self.raw)
            .map_err(|e| ReadFailure::Damaged(format!("zstd: {e}")))?;
        if self.raw.len() != raw_size {
            return Err(ReadFailure::Damaged(format!(
                "it holds {} bytes, the catalog says {raw_size}",
                self.raw.len()
            )));
        }
        let sound = match expected {
            Some(bytes) => self.raw == bytes,
            None => Digest::of(&self.raw) == *digest,
        };
        if !sound {
            return Err(ReadFailure::Damaged(
                "its content does not match its digest".into(),
            ));
        }
        Ok(&self.raw)
    }

    /// Read the chunk file at `path` (holding `raw_size` bytes compressed)
    /// into `self.packed`, without following a link and never more than a
    /// compressed chunk of that size can be.
    fn read_packed(&mut self, path: &Path, raw_size: usize) -> Result<(), ReadFailure> {
        use std::io::Read;
        let opened = crate::fs_util::open_no_follow(path, std::fs::OpenOptions::new().read(true));
        let mut file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadFailure::Missing),
            Err(e) if crate::fs_util::is_link_refused(&e) => {
                return Err(ReadFailure::Damaged(
                    "it is a symbolic link, not a chunk file".into(),
                ))
            }
            Err(e) => return Err(ReadFailure::Io(e)),
        };
        // One fstat, one read: the size is known, and a chunk file never
        // changes once written (it is replaced whole, by rename).
        let len = match file.metadata() {
            Ok(m) if !m.is_file() => return Err(ReadFailure::Damaged("it is not a file".into())),
            Ok(m) => usize::try_from(m.len()).unwrap_or(usize::MAX),
            Err(e) => return Err(ReadFailure::Io(e)),
        };
        if len > zstd::zstd_safe::compress_bound(raw_size) + 64 {
            return Err(ReadFailure::Damaged(format!(
                "it is {len} bytes, more than a compressed chunk of {raw_size} bytes can be"
            )));
        }
        self.packed.resize(len, 0);
        if let Err(e) = file.read_exact(&mut self.packed) {
            return Err(match e.kind() {
                std::io::ErrorKind::UnexpectedEof => {
                    ReadFailure::Damaged("it was truncated while being read".into())
                }
                _ => ReadFailure::Io(e),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let d = Digest::of(b"abc");
        assert_eq!(
            d.to_hex(),
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
        );
        assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(Digest::from_hex(&d.to_hex().to_uppercase()), Some(d));
        assert_eq!(Digest::from_hex("zz"), None);
        assert_eq!(Digest::from_hex(&"g".repeat(64)), None);
        assert_eq!(Digest::from_hex(&"é".repeat(32)), None);
    }

    #[test]
    fn default_params_are_valid_and_split_covers_the_input() {
        let p = ChunkerParams::default();
        assert!(p.is_valid());
        assert!(!ChunkerParams { min: 3, ..p }.is_valid());
        assert!(!ChunkerParams {
            avg: p.max * 2,
            ..p
        }
        .is_valid());
        let mut rng = fastrand::Rng::with_seed(1);
        let data: Vec<u8> = (0..1_000_000).map(|_| rng.u8(..)).collect();
        let chunks: Vec<&[u8]> = p.split(&data).collect();
        assert!(chunks.len() > 5);
        assert!(chunks.iter().all(|c| c.len() <= p.max));
        assert_eq!(chunks.concat(), data);
        assert_eq!(p.split(b"").count(), 0);
    }

    #[test]
    fn chunk_files_are_fanned_out_by_prefix() {
        let d = Digest::of(b"abc");
        let p = chunk_path(Path::new("chunks"), &d);
        assert_eq!(p, Path::new("chunks/64").join(format!("{d}.zst")));
        assert_eq!(digest_of_file_name(&format!("{d}.zst")), Some(d),);
        assert_eq!(digest_of_file_name(".ffsession-x.tmp"), None);
    }
}
