//! Byte buffers for whole session files: mapped files, and huge pages when large.
//!
//! Reading a 20 MB session used to touch 20 MB of fresh memory twice (the
//! compressed file and the decompressed JSON). Fresh memory is what a one-shot
//! read pays for most: every page is faulted in and zeroed by the kernel before
//! the copy from the page cache even starts. So:
//! - files of 64 KiB and more are mapped read-only from the page cache
//!   (memmap2; on Windows from 2 MiB), which costs a fraction of a millisecond
//!   where `read` into new memory costs several: `info` on a 1.1 MB-JSON session
//!   took 0.79x the time mapped (docs/performance.md);
//! - new buffers of 1 MiB and more (the decompressed JSON) are anonymous mappings
//!   advised as transparent huge pages, so the kernel faults them in 2 MiB at a
//!   time where it can; smaller ones are plain `Vec`s. The kernel only uses a
//!   huge page for a 2 MiB-aligned 2 MiB of the mapping, and does not align
//!   mappings itself, so the buffer starts at the first aligned address of a
//!   mapping 2 MiB longer than needed (a 4.4 MB buffer decompressed in half the
//!   time); the unused head is address space only, never touched. A last,
//!   partly used 2 MiB is a huge page only when at least 1 MiB of it is used,
//!   so a buffer costs at most 1 MiB more memory than its length.
//!
//! Mapping a file is one of the crate's few `unsafe` operations (the others:
//! letting go of a mapped file's pages, `Buffer::release_before`; reading a
//! piece of text checked once as UTF-8 without checking it again at each
//! step, `Piece::text` in `session/streamed/feed.rs`; and the Windows system calls
//! of `profile.rs` and `store/acl.rs`): the bytes change if
//! another process writes the file in place while it is mapped, and reading
//! past a point where it was truncated raises SIGBUS. Firefox never does either
//! to its session files (it writes a temporary file and renames it over the old
//! one, and moves the old one to `.baklz4`/`previous.jsonlz4`, so a mapped file
//! keeps its contents), nor does ffsession's own store. The backup path does not
//! use mappings: it reads files into memory.

use std::fs::File;
use std::io::{self, Read};
use std::ops::{Deref, DerefMut};
use std::path::Path;

/// The size of a (transparent) huge page.
const HUGE_PAGE: usize = 2 << 20;

/// The least size of a new buffer on huge pages, and the least use of a last,
/// partly used huge page.
const HUGE_LEAST: usize = 1 << 20;

/// The least size of a file that is mapped rather than read. Where a file
/// cannot be deleted or replaced while it is mapped (Windows), only large
/// files are, so that Firefox's writes meet a mapping as rarely as before.
const MAP_LEAST: u64 = if cfg!(unix) { 64 << 10 } else { 2 << 20 };

/// How much of a new buffer of `len` bytes, from its aligned start, is advised
/// as huge pages: its whole 2 MiB, and a last, partly used one if at least
/// [`HUGE_LEAST`] of it is used.
fn huge_span(len: usize) -> usize {
    let whole = len / HUGE_PAGE * HUGE_PAGE;
    if len - whole >= HUGE_LEAST {
        whole + HUGE_PAGE
    } else {
        whole
    }
}

/// A byte buffer: a `Vec`, or an anonymous memory mapping for large sizes.
#[derive(Debug)]
pub struct Buffer(Inner);

#[derive(Debug)]
enum Inner {
    Heap(Vec<u8>),
    /// `len` bytes at `start` of anonymous memory, or of a private
    /// (copy-on-write) mapping of a file.
    Mapped {
        map: memmap2::MmapMut,
        start: usize,
        len: usize,
        /// Whether the mapping is of a file (which [`Buffer::release_before`]
        /// may let go of) rather than anonymous memory.
        file: bool,
    },
}

impl Buffer {
    /// A zero-filled buffer of `len` bytes.
    pub fn zeroed(len: usize) -> Buffer {
        if len >= HUGE_LEAST {
            let span = huge_span(len);
            // The aligned start is less than 2 MiB in: the mapping holds the
            // buffer and every huge page advised, whole.
            if let Ok(map) = memmap2::MmapMut::map_anon(len.max(span) + HUGE_PAGE) {
                let start = (map.as_ptr() as usize).wrapping_neg() % HUGE_PAGE;
                #[cfg(target_os = "linux")]
                let _ = map.advise_range(memmap2::Advice::HugePage, start, span);
                return Buffer(Inner::Mapped {
                    map,
                    start,
                    len,
                    file: false,
                });
            }
        }
        Buffer(Inner::Heap(vec![0; len]))
    }

    /// A whole file: mapped when it is a regular file of 64 KiB or more (2 MiB
    /// on Windows), else read into memory, as it is when the system cannot map
    /// it. The module documentation says why mapping is sound here.
    pub fn map_file(path: &Path) -> io::Result<Buffer> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.len() < MAP_LEAST || !meta.is_file() {
            return Buffer::read_open(file, &meta, path);
        }
        let len = usize::try_from(meta.len()).map_err(io::Error::other)?;
        // SAFETY: session files are replaced by rename, never rewritten or
        // truncated in place (module docs). The mapping is private: writing to
        // the buffer would copy the page, never change the file.
        #[allow(unsafe_code)]
        let map = match unsafe { memmap2::MmapOptions::new().len(len).map_copy(&file) } {
            Ok(map) => map,
            // A file system that cannot map files: read it.
            Err(_) => return Buffer::read_open(file, &meta, path),
        };
        Ok(Buffer(Inner::Mapped {
            map,
            start: 0,
            len,
            file: true,
        }))
    }

    /// Read a whole file into memory.
    pub fn read_file(path: &Path) -> io::Result<Buffer> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        Buffer::read_open(file, &meta, path)
    }

    /// Read `file`, open at `path`, whose metadata when opened was `meta`.
    fn read_open(mut file: File, meta: &std::fs::Metadata, path: &Path) -> io::Result<Buffer> {
        if !meta.is_file() {
            // A pipe (`<(...)`, /dev/stdin) has no size and cannot be
            // opened again: read it to its end.
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            return Ok(Buffer::from(bytes));
        }
        let len = usize::try_from(meta.len()).map_err(io::Error::other)?;
        let mut buf = Buffer::zeroed(len);
        let mut filled = 0;
        while filled < len {
            match file.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let mut probe = [0u8; 1];
        if filled < len || file.read(&mut probe)? != 0 {
            // The file changed size while we read it: read it again in one go.
            return std::fs::read(path).map(Buffer::from);
        }
        Ok(buf)
    }

    /// Let go of the memory holding the first `end` bytes of a mapped file,
    /// which the caller has read and will not need again: the pages leave the
    /// process (they stay in the page cache). Reading them again would fault
    /// them back in from the file. Anything else is left as it is.
    ///
    /// Only for a buffer nobody has written to through `DerefMut`: a written
    /// page of a file mapping is a private copy, which this would drop.
    pub(crate) fn release_before(&self, end: usize) {
        let Inner::Mapped {
            map, file: true, ..
        } = &self.0
        else {
            return;
        };
        #[cfg(unix)]
        {
            const PAGE: usize = 4096;
            let end = end.min(map.len()) / PAGE * PAGE;
            if end > 0 {
                // SAFETY: MADV_DONTNEED on a private mapping of a file drops
                // the process's pages; the next access reads the file again.
                // Callers never wrote to this buffer (above), so no copied
                // page is lost, and the bytes read again are the same as
                // long as the file is not rewritten in place, which mapping
                // it at all assumes (module docs).
                #[allow(unsafe_code)]
                let _ = unsafe {
                    map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, end)
                };
            }
        }
        // Elsewhere the pages stay until the mapping is dropped.
        #[cfg(not(unix))]
        let _ = (map, end);
    }
}

impl From<Vec<u8>> for Buffer {
    fn from(v: Vec<u8>) -> Self {
        Buffer(Inner::Heap(v))
    }
}

impl Deref for Buffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Inner::Heap(v) => v,
            Inner::Mapped {
                map, start, len, ..
            } => &map[*start..*start + *len],
        }
    }
}

impl DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Inner::Heap(v) => v,
            Inner::Mapped {
                map, start, len, ..
            } => &mut map[*start..*start + *len],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_buffers_read_files_exactly() {
        let dir = tempfile::tempdir().unwrap();
        for len in [
            0,
            10,
            MAP_LEAST as usize - 1,
            MAP_LEAST as usize,
            HUGE_PAGE + 12_345,
        ] {
            let path = dir.path().join(format!("f{len}"));
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            std::fs::write(&path, &data).unwrap();
            let buf = Buffer::read_file(&path).unwrap();
            assert_eq!(&buf[..], &data[..]);
            let mapped = Buffer::map_file(&path).unwrap();
            assert_eq!(&mapped[..], &data[..]);
        }
        // Mapped from the file (a file read into a new buffer of 1 MiB or
        // more is in an anonymous mapping).
        let mapped = |len: usize| {
            let path = dir.path().join(format!("f{len}"));
            matches!(
                Buffer::map_file(&path).unwrap().0,
                Inner::Mapped { file: true, .. }
            )
        };
        assert!(mapped(HUGE_PAGE + 12_345));
        assert!(mapped(MAP_LEAST as usize));
        assert!(!mapped(MAP_LEAST as usize - 1));
    }

    #[test]
    fn huge_pages_cover_whole_2_mib_and_a_last_one_at_least_half_used() {
        assert_eq!(huge_span(HUGE_LEAST), HUGE_PAGE);
        assert_eq!(huge_span(HUGE_PAGE - 1), HUGE_PAGE);
        assert_eq!(huge_span(HUGE_PAGE), HUGE_PAGE);
        assert_eq!(huge_span(HUGE_PAGE + HUGE_LEAST - 1), HUGE_PAGE);
        assert_eq!(huge_span(HUGE_PAGE + HUGE_LEAST), 2 * HUGE_PAGE);
        for len in [HUGE_LEAST, 3 * HUGE_PAGE + 5, 7 * HUGE_PAGE - 1] {
            assert!(huge_span(len) <= len + HUGE_LEAST);
        }
    }

    #[test]
    fn large_new_buffers_are_zeroed_and_start_on_a_huge_page() {
        for len in [
            HUGE_LEAST,
            HUGE_PAGE - 1,
            HUGE_PAGE,
            HUGE_PAGE + 12_345,
            5 * HUGE_PAGE + 1,
        ] {
            let mut buf = Buffer::zeroed(len);
            assert!(matches!(buf.0, Inner::Mapped { .. }));
            assert_eq!(buf.len(), len);
            assert_eq!(buf.as_ptr() as usize % HUGE_PAGE, 0);
            assert!(buf.iter().all(|&b| b == 0));
            buf[len - 1] = 7;
            assert_eq!(buf[len - 1], 7);
        }
        assert!(matches!(Buffer::zeroed(1000).0, Inner::Heap(_)));
        assert!(matches!(Buffer::zeroed(HUGE_LEAST - 1).0, Inner::Heap(_)));
    }
}
