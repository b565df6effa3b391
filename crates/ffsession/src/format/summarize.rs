//! Summarizing a session file without keeping its JSON (`ffsession info`).
//!
//! [`SessionData::read`] keeps the whole JSON, because the parsed
//! [`Session`](crate::Session) borrows from it. A summary keeps nothing from
//! it, so a large mozlz4 file is decoded here a piece at a time on a helper
//! thread ([`stream::Pieces`]; the first piece on this thread, while the
//! helper starts), while this thread counts each piece
//! (`session/streamed.rs`) and hands its memory back for the next one. Peak
//! memory is a few pieces instead of the whole JSON, and the count runs
//! while the decoder works, on the other core, instead of after it.
//!
//! Each piece starts with the last [`WINDOW`] bytes of the output before it
//! (or more, back to the start of a character), which is where LZ4 matches
//! reach back to, and which the counter reuses for a value cut between two
//! pieces. A piece's text ends where a tab starts, if one starts near its end
//! (the rest is repeated at the start of the next), so that the walk meets
//! the end of a piece between tabs. The decoder checks each piece is UTF-8
//! before lending it to the walk. Once it has decoded everything, the
//! decoder's thread walks the later pieces still waiting, from a tab on,
//! while this thread walks up to that tab (`streamed::Helper`): the two
//! halves of the tail are counted at the same time.
//! A damaged file, invalid UTF-8, or anything the counter gives up on is
//! read the ordinary way ([`SessionData::read`], then
//! [`SessionData::parse`]), which decides and words the error: the result
//! is the same either way, only the memory and the time differ.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;

use super::stream::{Pieces, WINDOW};
use super::{check_header, detect, Format, SessionData, MOZLZ4_HEADER_LEN};
use crate::buffer::Buffer;
use crate::error::{Error, IoResultExt};
use crate::export;
use crate::session::streamed::{self, receive, Helper, Piece, Visit};
use crate::session::{Summary, Tab, TAB_START};

/// How far back from the end of a piece the decoder looks for the start of a
/// tab to end the piece's text at (a tab longer than this may be cut).
const TAB_REACH: usize = 256 << 10;

/// Bytes of JSON decoded into each piece (after what it repeats of the piece
/// before): four slots of the arena make 4 MiB, two huge pages.
const PIECE: usize = (1 << 20) - TAB_REACH - 3;

/// Files whose JSON is smaller than this are read the ordinary way: starting
/// the decoder's thread costs more than the pieces save.
const MIN_JSON: usize = 2 << 20;

/// What `ffsession info` shows of a session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSummary {
    /// The file read.
    pub path: PathBuf,
    /// Its container format.
    pub format: Format,
    /// Its size on disk.
    pub file_size: u64,
    /// The size of its JSON.
    pub json_size: usize,
    /// What the session holds. For Zen's sessions file: no windows, its
    /// tabs, and `lastCollected` as the last update.
    pub summary: Summary,
    /// Set when the file is Zen's sessions file (`zen-sessions.jsonlz4` or
    /// one of its copies, told apart by content: an object without
    /// `windows`, with Zen's fields), with what Zen's file holds.
    pub zen: Option<crate::zen::ZenSummary>,
}

impl FileSummary {
    /// Read the session file at `path` and count what it holds, keeping
    /// none of its JSON where it can (see the module documentation). The
    /// result and every error are those of [`SessionData::read`] followed by
    /// [`SessionData::parse`] and [`Session::summary`](crate::Session::summary).
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::read_visiting(path.as_ref(), |_, _| {}, &mut Vec::new())
    }

    /// [`FileSummary::read`], giving `visit` each open tab in order, with
    /// `out` to write to.
    fn read_visiting(path: &Path, visit: Visit, out: &mut Vec<u8>) -> Result<Self, Error> {
        let bytes = Buffer::map_file(path).with_path(path)?;
        if let Some(summary) = summarize_mozlz4(&bytes, visit, out) {
            let json_size = check_header(&bytes).unwrap_or_default();
            return Ok(FileSummary {
                path: path.to_path_buf(),
                format: Format::Mozlz4,
                file_size: bytes.len() as u64,
                json_size,
                summary,
                zen: None,
            });
        }
        out.clear();
        let data = SessionData::from_buffer(path, bytes)?;
        let session = match data.parse() {
            Ok(session) => session,
            // Zen's own file has no `windows`: told apart only when a
            // Firefox session fails to read, so Firefox's files pay nothing.
            Err(e @ Error::Parse { .. }) => match data.parse_zen() {
                Ok(zen) if zen.has_zen_fields() => {
                    for tab in &zen.tabs {
                        visit(tab, out);
                    }
                    return Ok(FileSummary::of_zen(&data, zen.summary()));
                }
                _ => return Err(e),
            },
            Err(e) => return Err(e),
        };
        for tab in session.windows.iter().flat_map(|w| &w.tabs) {
            visit(tab, out);
        }
        Ok(FileSummary::of(&data, session.summary()))
    }

    /// The summary `summary` of the session file read as `data`.
    pub fn of(data: &SessionData, summary: Summary) -> Self {
        FileSummary {
            path: data.path().to_path_buf(),
            format: data.format(),
            file_size: data.file_size(),
            json_size: data.json().len(),
            summary,
            zen: None,
        }
    }

    /// The summary of Zen's sessions file read as `data`: `zen`, and the
    /// [`Summary`] of its tabs.
    pub fn of_zen(data: &SessionData, zen: crate::zen::ZenSummary) -> Self {
        let summary = Summary {
            tabs: zen.tabs,
            pinned_tabs: zen.pinned_tabs,
            tab_groups: zen.folders + zen.tab_groups,
            history_entries: zen.history_entries,
            timestamps: crate::session::Timestamps {
                last_update: zen.last_collected,
                ..Default::default()
            },
            ..Summary::default()
        };
        FileSummary {
            zen: Some(zen),
            ..FileSummary::of(data, summary)
        }
    }
}

/// The URLs of the open tabs of the session file at `path`, a line each, as
/// `ffsession tabs --format urls` writes them ([`export::one_line`]), read
/// as [`FileSummary::read`] reads: a large mozlz4 file a piece at a time,
/// keeping only the lines. Nothing is returned unless the whole file reads.
pub fn open_tab_urls(path: impl AsRef<Path>) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    FileSummary::read_visiting(path.as_ref(), write_url, &mut out)?;
    Ok(out)
}

/// A tab's line in [`open_tab_urls`].
fn write_url(tab: &Tab<'_>, out: &mut Vec<u8>) {
    if let Some(url) = tab.url() {
        out.extend_from_slice(export::one_line(url).as_bytes());
        out.push(b'\n');
    }
}

/// The summary of a large mozlz4 file, decoded and counted a piece at a
/// time; `None` where the ordinary read must decide (small, not mozlz4,
/// damaged, or anything the counter gives up on).
fn summarize_mozlz4(bytes: &Buffer, visit: Visit, out: &mut Vec<u8>) -> Option<Summary> {
    if detect(bytes).ok()? != Format::Mozlz4 {
        return None;
    }
    let claimed = check_header(bytes).ok()?;
    if claimed < MIN_JSON || !crate::session::two_cores() {
        return None;
    }
    let release = |n| bytes.release_before(MOZLZ4_HEADER_LEN + n);
    let block = &bytes[MOZLZ4_HEADER_LEN..];
    walk_block(block, claimed, PIECE, &release, visit, out, false).map(|(summary, _)| summary)
}

/// Decode `block` (which claims to decode to `claimed` bytes) on a helper
/// thread, `piece` bytes at a time, while this one counts, giving `visit`
/// each open tab (`session/streamed.rs`); this thread decodes the first
/// piece itself while the helper starts. `release(n)` is called as the
/// first `n` bytes of the block are decoded. Once it has decoded all, the
/// helper walks the later part of what is left ([`Helper`]); the second
/// result says whether it did.
///
/// With `hold` (for tests and fuzzing), the count starts only once the
/// decoder has decoded everything, given room for all of it (if that is at
/// most [`HOLD_SLOTS`] pieces), so that the helper's part never depends on
/// timing.
fn walk_block(
    block: &[u8],
    claimed: usize,
    piece: usize,
    release: &(dyn Fn(usize) + Sync),
    visit: Visit,
    out: &mut Vec<u8>,
    hold: bool,
) -> Option<(Summary, bool)> {
    // The pieces' buffers: slots of one allocation (on huge pages when it is
    // large enough: fresh small pages cost this machine about 2.5 µs each to
    // fault in, 3 ms for a few MiB). Each slot has room for the window, up
    // to three bytes of a character (or the end of the piece before, from
    // the start of a tab), and a piece. Three slots are enough
    // (the one decoded into, the one counted, and the next); a fourth lets
    // the decoder run a piece ahead.
    let slot = TAB_REACH + 3 + piece;
    // Each piece but the last adds at least `piece` bytes, and the decoder
    // takes the next slot before it sends a piece.
    let all = claimed / piece + 3;
    let hold = hold && all <= HOLD_SLOTS;
    let count = if hold { all.max(SLOTS) } else { SLOTS };
    let mut arena = Buffer::zeroed(count * slot);
    let mut slots = arena.chunks_mut(slot);
    let (first, second) = (slots.next()?, slots.next()?);
    // Bounded channels: their room is allocated once (an unbounded one
    // allocates as messages pass), and no more than `count` are ever in one.
    let (free, lent) = mpsc::sync_channel::<&mut [u8]>(count);
    let (pieces, arrived) = mpsc::sync_channel::<Piece<'_>>(count);
    let (hand, handed_decoding) = mpsc::sync_channel::<Step<'_, '_>>(1);
    let (give, handed) = mpsc::sync_channel(1);
    let (done_walking, take) = mpsc::sync_channel(1);
    let (done, stopped) = (&AtomicBool::new(false), &AtomicBool::new(false));
    let our_pieces = pieces.clone();
    thread::scope(|scope| {
        let decoder = crate::session::spawn_beside(scope, move || {
            // Where this thread takes over from the first piece.
            let whole = match receive(&handed_decoding) {
                Some(Step::More(decoding)) => decode_pieces(decoding, &pieces, &lent, release),
                Some(Step::Done(whole)) => whole,
                None => false,
            };
            // Closed before `done` is set: the walk takes what is left
            // without waiting.
            drop(pieces);
            drop(lent);
            done.store(whole, Ordering::Release);
            stopped.store(true, Ordering::Release);
            if whole {
                if let Some(handoff) = receive(&handed) {
                    let _ = done_walking.send(streamed::speculate(handoff, visit));
                }
            }
            whole
        });
        // The first piece is decoded here while that thread starts (which
        // takes 50-200 µs), then handed over with the next slot.
        let step = Decoding::new(block, claimed, first).step(|| Some(second), &our_pieces, release);
        drop(our_pieces);
        let _ = hand.send(step);
        // The other slots' pages are faulted in here while the decoder
        // fills the second (the kernel zeroes each page on its first touch),
        // instead of by the decoder as it comes to them.
        for bytes in slots {
            if !hold {
                bytes.chunks_mut(4096).for_each(|page| page[0] = 0);
            }
            let _ = free.send(bytes);
        }
        while hold && !stopped.load(Ordering::Acquire) {
            thread::yield_now();
        }
        // The helper's channels close at the end of this statement.
        let summary = streamed::summary(
            &mut || receive(&arrived),
            &mut |bytes| {
                let _ = free.send(bytes);
            },
            Some(&mut Helper {
                done,
                arrived: &arrived,
                give: Some(give),
                take,
                min_share: piece / 2,
            }),
            visit,
            out,
        );
        // If the count gave up early, the decoder's next send (or wait for
        // a buffer, or for pieces to walk) fails and it stops.
        drop(arrived);
        drop(free);
        let whole = decoder.join().unwrap_or(false);
        summary.filter(|_| whole)
    })
}

/// Slots of the arena the pieces are decoded into.
const SLOTS: usize = 4;

/// At most this many slots for a count that waits for the whole decode
/// (`walk_block`'s `hold`).
const HOLD_SLOTS: usize = 64;

/// The helper: go on from `decoding`, filling each buffer from `lent`
/// after the window, and send them as pieces; true if the whole block
/// decoded to the size claimed, as UTF-8, and every piece was sent.
fn decode_pieces<'b, 's>(
    mut decoding: Decoding<'b, 's>,
    pieces: &mpsc::SyncSender<Piece<'s>>,
    lent: &mpsc::Receiver<&'s mut [u8]>,
    release: &(dyn Fn(usize) + Sync),
) -> bool {
    loop {
        match decoding.step(|| receive(lent), pieces, release) {
            Step::More(next) => decoding = next,
            Step::Done(whole) => return whole,
        }
    }
}

/// A block being decoded a piece at a time: the decoder, and the buffer
/// the next piece goes into.
struct Decoding<'b, 's> {
    decoder: Pieces<'b>,
    buf: &'s mut [u8],
    /// Bytes of `buf` before the new output (the window).
    start: usize,
    /// The offset of `buf[0]` in the JSON.
    base: usize,
}

/// What one [`Decoding::step`] leaves.
enum Step<'b, 's> {
    /// A piece was sent; the next goes on from here.
    More(Decoding<'b, 's>),
    /// The end: true if the whole block decoded to the size claimed, as
    /// UTF-8, and every piece was sent.
    Done(bool),
}

impl<'b, 's> Decoding<'b, 's> {
    /// The decoding of `block` (which claims to decode to `claimed`
    /// bytes), into `buf` first.
    fn new(block: &'b [u8], claimed: usize, buf: &'s mut [u8]) -> Self {
        Decoding {
            decoder: Pieces::new(block, claimed),
            buf,
            start: 0,
            base: 0,
        }
    }

    /// Fill the buffer and send it as a piece to `pieces`, with the window
    /// copied to the buffer `next` gives, where the next piece goes.
    /// `release(n)` is called once the first `n` bytes of the block are
    /// decoded.
    fn step(
        mut self,
        next: impl FnOnce() -> Option<&'s mut [u8]>,
        pieces: &mpsc::SyncSender<Piece<'s>>,
        release: &(dyn Fn(usize) + Sync),
    ) -> Step<'b, 's> {
        let (start, base) = (self.start, self.base);
        let Ok(end) = self.decoder.fill(self.buf, start) else {
            return Step::Done(false);
        };
        release(self.decoder.input_read());
        if self.decoder.finished() {
            // All of it: a character cut at the end is not UTF-8.
            let sent = Piece::new(self.buf, end, base).is_some_and(|p| pieces.send(p).is_ok());
            return Step::Done(sent);
        }
        let buf = self.buf;
        // The piece's text ends where a tab starts, if one starts in its
        // last `TAB_REACH` bytes: the walk then meets the end of the piece
        // between two tabs and reads no tab twice (a tab read in part is read
        // again whole, allocations and all). Else it ends before a character
        // cut at its end.
        let near_end = start.max(end.saturating_sub(TAB_REACH));
        // (Just past the `,` before it: a step is taken only with a byte
        // after it in view, so the tab before ends inside the text.)
        let tab = memchr::memmem::rfind(&buf[near_end..end], TAB_START).map(|i| near_end + i + 1);
        let text_end = tab.unwrap_or_else(|| complete_chars(&buf[..end]));
        // The next buffer starts with the window, and the text after the
        // piece's end: from the start of a character (one of the three bytes
        // before, in valid UTF-8).
        let mut from = (end - WINDOW.min(end)).min(text_end);
        while from > 0 && end - from < WINDOW + 3 && buf[from] & 0xC0 == 0x80 {
            from -= 1;
        }
        let Some(next) = next() else {
            return Step::Done(false);
        };
        next[..end - from].copy_from_slice(&buf[from..end]);
        let Some(piece) = Piece::new(buf, text_end, base) else {
            return Step::Done(false);
        };
        if pieces.send(piece).is_err() {
            return Step::Done(false);
        }
        Step::More(Decoding {
            decoder: self.decoder,
            buf: next,
            start: end - from,
            base: base + from,
        })
    }
}

/// The length of `bytes` without a character cut at its end (assuming the
/// rest is UTF-8; if not, `String::from_utf8` says so).
fn complete_chars(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 != 0x80 {
            let len = match b {
                0xF0.. => 4,
                0xE0.. => 3,
                0xC0.. => 2,
                _ => 1,
            };
            return if len > back { n - back } else { n };
        }
    }
    n
}

/// For benchmarks: the summary of the mozlz4 file `bytes`, counted in
/// pieces as [`FileSummary::read`] counts a large one (whatever its size),
/// and its open tabs' URL lines ([`open_tab_urls`]) in `urls` if given;
/// `None` where that gives up.
#[doc(hidden)]
pub fn summary_in_pieces(bytes: &[u8], urls: Option<&mut Vec<u8>>) -> Option<Summary> {
    let claimed = check_header(bytes).ok()?;
    let block = &bytes[MOZLZ4_HEADER_LEN..];
    let counted = match urls {
        Some(out) => walk_block(block, claimed, PIECE, &|_| {}, write_url, out, false),
        None => walk_block(
            block,
            claimed,
            PIECE,
            &|_| {},
            |_, _| {},
            &mut Vec::new(),
            false,
        ),
    };
    counted.map(|(summary, _)| summary)
}

/// For fuzzing and tests: panic if the summary of `json` counted in pieces
/// (of `piece` bytes), or the open tabs' URLs listed that way
/// ([`open_tab_urls`]), differ from those of the reference parse, or exist
/// where the reference parse fails. Returns `None` if it was not counted in
/// pieces (given up), else whether the decoder's thread walked part of it.
/// With `hold`, the count starts once the whole block has decoded, so that
/// the decoder's thread takes its part whenever a piece starts with a tab.
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub fn assert_summary_in_pieces_matches_reference(
    json: &[u8],
    piece: usize,
    hold: bool,
) -> Option<bool> {
    let block = lz4_flex::block::compress(json);
    assert_block_in_pieces_matches_reference(&block, json.len(), piece, hold)
}

/// For fuzzing: as [`assert_summary_in_pieces_matches_reference`], for an
/// LZ4 block that claims to decode to `claimed` bytes (any bytes at all):
/// counted in pieces only if the whole block decodes and parses.
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub fn assert_block_in_pieces_matches_reference(
    block: &[u8],
    claimed: usize,
    piece: usize,
    hold: bool,
) -> Option<bool> {
    let mut urls = Vec::new();
    let piece = piece.max(1);
    let (counted, shared) = walk_block(block, claimed, piece, &|_| {}, write_url, &mut urls, hold)?;
    let mut file = super::MOZLZ4_MAGIC.to_vec();
    file.extend_from_slice(&u32::try_from(claimed).unwrap_or(u32::MAX).to_le_bytes());
    file.extend_from_slice(block);
    let json = super::decompress(&file)
        .unwrap_or_else(|e| panic!("counted in pieces, but the block does not decode: {e}"));
    let reference = crate::Session::from_json_serial(&json)
        .unwrap_or_else(|e| panic!("counted in pieces, but the reference parse failed: {e}"));
    assert_eq!(
        counted,
        reference.summary(),
        "piece {piece}, shared {shared}"
    );
    let mut written = Vec::new();
    let open = reference.tab_records(crate::session::TabFilter::default());
    export::write_tabs(&mut written, export::TabFormat::Urls, open).expect("writing to memory");
    assert!(
        urls == written,
        "the URLs differ (piece {piece}, shared {shared})"
    );
    Some(shared)
}

#[cfg(test)]
mod tests;
