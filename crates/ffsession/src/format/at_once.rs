//! Reading a large mozlz4 file and parsing it at the same time, for the
//! commands that keep the parsed session (`ffsession tabs`, say).
//!
//! [`SessionData::read`] decodes the whole JSON, then
//! [`SessionData::parse`] walks it: one after the other. LZ4 decodes front
//! to back, so here a helper thread decodes into the JSON buffer while this
//! thread parses what is already decoded (`session/growing.rs`); once it
//! has decoded all, the helper parses the last part of the document
//! (`parallel::parse_growing`). The parsed session borrows from the finished
//! buffer, which never moves. Small files, other formats, one core, and
//! anything the fast path gives up on are read the ordinary way: the
//! result and every error are those of [`SessionData::read`] and
//! [`SessionData::parse`].

use std::path::Path;

use super::stream::{Pieces, CHUNK};
use super::{check_header, detect, Format, SessionData, MOZLZ4_HEADER_LEN};
use crate::buffer::Buffer;
use crate::error::{Error, IoResultExt};
use crate::session::growing::{Growing, Writer};
use crate::session::{parse_growing, two_cores, Session, PARALLEL_MIN_BYTES};

/// How much JSON the decoder makes ready to parse at a time.
#[derive(Clone, Copy)]
struct Step {
    bytes: usize,
    /// For tests: make each step ready only once a reader has waited for
    /// more than is ready (or for a while), so that it reads every cut.
    lockstep: bool,
}

impl Step {
    /// What files are read with: 128 KiB.
    const EVERY: Step = Step {
        bytes: 128 << 10,
        lockstep: false,
    };
}

impl SessionData {
    /// [`SessionData::read`] and [`SessionData::parse`] at once: `f` is
    /// given the data and its session. A large mozlz4 file is parsed while
    /// it is decoded (module documentation); the result and every error are
    /// those of reading, then parsing.
    pub fn read_parsed<R>(
        path: impl AsRef<Path>,
        f: impl for<'a> FnOnce(&'a SessionData, Session<'a>) -> R,
    ) -> Result<R, Error> {
        let path = path.as_ref();
        let bytes = Buffer::map_file(path).with_path(path)?;
        let release = |n| bytes.release_before(n);
        let f = match at_once(path, &bytes, &release, Step::EVERY, f) {
            Ok(result) => return result,
            Err(f) => f,
        };
        let data = SessionData::from_buffer(path, bytes)?;
        let session = data.parse()?;
        Ok(f(&data, session))
    }

    /// [`SessionData::read_parsed`] on a file's bytes. For benchmarks.
    #[doc(hidden)]
    pub fn from_slice_parsed<R>(
        bytes: &[u8],
        f: impl for<'a> FnOnce(&'a SessionData, Session<'a>) -> R,
    ) -> Result<R, Error> {
        let path = Path::new("-");
        let f = match at_once(path, bytes, &|_| {}, Step::EVERY, f) {
            Ok(result) => return result,
            Err(f) => f,
        };
        let data = SessionData::from_slice(path, bytes)?;
        let session = data.parse()?;
        Ok(f(&data, session))
    }
}

/// Read the file at `path` whose contents are `bytes`, parsing it while it
/// decodes `step` bytes at a time, and call `f` with the result;
/// `release(n)` once the first `n` bytes are read. Gives `f` back where the
/// ordinary read must run: a small file, not mozlz4, one core, or a damaged
/// block or text that is not UTF-8 (whose error the ordinary read words).
fn at_once<R, F>(
    path: &Path,
    bytes: &[u8],
    release: &(dyn Fn(usize) + Sync),
    step: Step,
    f: F,
) -> Result<Result<R, Error>, F>
where
    F: for<'a> FnOnce(&'a SessionData, Session<'a>) -> R,
{
    let large = |&n: &usize| n >= PARALLEL_MIN_BYTES && two_cores();
    match mozlz4_size(bytes).filter(large) {
        Some(claimed) => parse_mozlz4(path, bytes, claimed, release, step, f).map(|(r, _)| r),
        None => Err(f),
    }
}

/// The size a mozlz4 file's header claims, if it is one.
fn mozlz4_size(bytes: &[u8]) -> Option<usize> {
    match detect(bytes) {
        Ok(Format::Mozlz4) => check_header(bytes).ok(),
        _ => None,
    }
}

/// [`at_once`] on a mozlz4 file that claims `claimed` bytes of JSON,
/// whatever its size; also says whether the fast parse read it (rather
/// than the reference parser, after it gave up).
fn parse_mozlz4<R, F>(
    path: &Path,
    bytes: &[u8],
    claimed: usize,
    release: &(dyn Fn(usize) + Sync),
    step: Step,
    f: F,
) -> Result<(Result<R, Error>, bool), F>
where
    F: for<'a> FnOnce(&'a SessionData, Session<'a>) -> R,
{
    let mut json = Buffer::zeroed(claimed);
    let base = json.as_mut_ptr();
    let data = SessionData {
        path: path.to_path_buf(),
        format: Format::Mozlz4,
        file_size: bytes.len() as u64,
        buf: json,
        json: 0..claimed,
        repaired: std::sync::OnceLock::new(),
    };
    // SAFETY: `base` is the start of `data`'s buffer of `claimed` bytes
    // (a mapping, or a `Vec`'s allocation: moving the buffer into `data`
    // moved neither). Nothing else refers to those bytes until the writer
    // is done: `data` is handed out only after the parse, whose helper
    // thread (the writer) has ended by then; and nothing writes them after,
    // `data` being borrowed shared for as long as the text is.
    #[allow(unsafe_code)]
    let growing = unsafe { Growing::new(base, claimed) };
    let block = &bytes[MOZLZ4_HEADER_LEN..];
    let release = |n| release(MOZLZ4_HEADER_LEN + n);
    let parsed = parse_growing(
        &growing,
        // The first step here: `Err` says whether that was all.
        || match Decoding::new(&growing, block, step) {
            Some(mut decoding) => match decoding.step(&release) {
                Some(false) => Ok(decoding),
                done => Err(done.is_some()),
            },
            None => Err(false),
        },
        |first| match first {
            Ok(decoding) => decoding.finish(&release),
            Err(whole) => whole,
        },
    );
    match (parsed, growing.text()) {
        (Ok(session), _) => Ok((Ok(f(&data, session)), true)),
        // Parsed in doubt: the reference parser decides.
        (Err(_), Some((_, true))) => Ok((data.parse().map(|session| f(&data, session)), false)),
        // Damaged or not UTF-8.
        (Err(_), _) => Err(f),
    }
}

/// Decoding a block into a [`Growing`] buffer, [`STEP`] bytes at a time,
/// each made ready to parse.
struct Decoding<'g, 'd, 'b> {
    writer: Writer<'g, 'd>,
    decoder: Pieces<'b>,
    /// Bytes decoded at each step (at least one).
    step: usize,
    /// [`Step::lockstep`].
    lockstep: bool,
    /// Bytes of the block let go of.
    released: usize,
}

impl<'g, 'd, 'b> Decoding<'g, 'd, 'b> {
    /// Decoding `block`, which claims to decode to `growing`'s length,
    /// `step` bytes at a time (see [`Step`]).
    fn new(growing: &'g Growing<'d>, block: &'b [u8], step: Step) -> Option<Self> {
        Some(Decoding {
            writer: growing.writer()?,
            decoder: Pieces::new(block, growing.len()),
            step: step.bytes.max(1),
            lockstep: step.lockstep,
            released: 0,
        })
    }

    /// Decode one step; `release(n)` once the first `n` bytes of the block
    /// are decoded. Whether the block is decoded (`Some(true)`), or more is
    /// left, or it is broken (`None`, and the text broken for its readers).
    fn step(&mut self, release: &dyn Fn(usize)) -> Option<bool> {
        let decoder = &mut self.decoder;
        if self
            .writer
            .write(self.step, |window, room| decoder.fill_after(window, room))
            .is_err()
        {
            self.writer.give_up();
            return None;
        }
        let read = decoder.input_read();
        if read >= self.released + CHUNK {
            release(read);
            self.released = read;
        }
        let finished = decoder.finished();
        if self.lockstep {
            let growing = self.writer.growing;
            let start = std::time::Instant::now();
            while !growing.waited_for(self.writer.ready())
                && start.elapsed() < std::time::Duration::from_millis(20)
            {
                std::thread::yield_now();
            }
        }
        if !self.writer.publish(finished) {
            return None;
        }
        if !finished && self.writer.written() == self.writer.len() {
            // Full, yet the block goes on: it decodes to more than claimed.
            self.writer.give_up();
            return None;
        }
        Some(finished)
    }

    /// Decode the rest; whether all of the block decoded.
    fn finish(mut self, release: &dyn Fn(usize)) -> bool {
        loop {
            match self.step(release) {
                Some(true) => return true,
                Some(false) => {}
                None => return false,
            }
        }
    }
}

/// For fuzzing and tests: panic if the mozlz4 file `bytes`, parsed while it
/// decodes `step` bytes at a time (with `lockstep`, each step made ready
/// only once the parse has read all before), reads otherwise than the
/// ordinary read and parse (a session that differs, or one where that
/// fails). Returns
/// `None` if it was given back to the ordinary read (not mozlz4, damaged,
/// not UTF-8), else whether the fast parse read it (rather than the
/// reference parser, after the fast one gave up).
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub fn assert_at_once_matches_reference(bytes: &[u8], step: usize, lockstep: bool) -> Option<bool> {
    let mode = Step {
        bytes: step,
        lockstep,
    };
    let path = Path::new("-");
    let ordinary = SessionData::from_slice(path, bytes).and_then(|data| {
        let session = data.parse()?;
        Ok(format!("{session:?}"))
    });
    let claimed = mozlz4_size(bytes)?;
    let at_once = parse_mozlz4(path, bytes, claimed, &|_| {}, mode, |data, session| {
        assert_eq!(data.json().len(), claimed);
        format!("{session:?}")
    });
    match (at_once, ordinary) {
        (Ok((Ok(at_once), fast)), Ok(ordinary)) => {
            assert_eq!(at_once, ordinary, "step {step}");
            Some(fast)
        }
        (Ok((Ok(_), _)), Err(e)) => {
            panic!("step {step}: read at once, but the ordinary read fails: {e}")
        }
        (Ok((Err(e), _)), Ok(_)) => {
            panic!("step {step}: the ordinary read succeeds, at once fails: {e}")
        }
        (Ok((Err(at_once), fast)), Err(ordinary)) => {
            assert_eq!(at_once.to_string(), ordinary.to_string(), "step {step}");
            Some(fast)
        }
        (Err(_), _) => None,
    }
}

#[cfg(test)]
mod tests;
