//! The text a walk in pieces has at hand (`Feed`): the pieces as they
//! arrive, run again on more text where a step needs it, and, once the
//! decoder has decoded all, the later pieces handed to the decoder's thread
//! and its walk adopted ([`Helper`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};

pub(crate) use super::super::parallel::receive;
use super::super::parallel::{Cursor, GiveUp, TAB_START};
use super::super::skim::is_space;

type Result<T> = std::result::Result<T, GiveUp>;

/// A piece of a document's text, in a buffer lent by the decoder: it starts
/// `base` bytes into the document, at most [`WINDOW`](crate::format) bytes
/// before the end of the piece before it, so the two overlap; it ends before
/// a character cut at its end (the next piece has it whole).
pub(crate) struct Piece<'s> {
    bytes: &'s mut [u8],
    /// `bytes[..len]` is the text, UTF-8 (checked in [`Piece::new`]).
    len: usize,
    base: usize,
}

impl<'s> Piece<'s> {
    /// The text `bytes[..len]`, `base` bytes into the document; `None` if it
    /// is not UTF-8.
    pub(crate) fn new(bytes: &'s mut [u8], len: usize, base: usize) -> Option<Self> {
        simdutf8::basic::from_utf8(bytes.get(..len)?).ok()?;
        Some(Piece { bytes, len, base })
    }

    fn text(&self) -> &str {
        // SAFETY: `bytes[..len]` was checked to be UTF-8 when this piece was
        // made, and has not changed since: `bytes` is a unique borrow, lent
        // out only as shared (here) until the piece is given up whole
        // (`into_bytes`). Checking again at each step of the walk would read
        // the rest of the piece each time.
        #[allow(unsafe_code)]
        unsafe {
            std::str::from_utf8_unchecked(&self.bytes[..self.len])
        }
    }

    /// Give the buffer back.
    fn into_bytes(self) -> &'s mut [u8] {
        self.bytes
    }
}

/// The text at hand: a piece, or (for a value longer than a piece's
/// overlap with the one before) a copy of the end of one and what followed.
pub(super) enum Text<'s> {
    Piece(Piece<'s>),
    Joined(String),
}

impl Text<'_> {
    fn as_str(&self) -> &str {
        match self {
            Text::Piece(piece) => piece.text(),
            Text::Joined(text) => text,
        }
    }
}

/// The decoder's thread, which walks part of the document too once it has
/// decoded all of it.
///
/// When the decoder sends its last piece, a few are often still waiting to
/// be walked (up to three: the slots they are in). The walk then takes them
/// all from the channel and hands the later ones to the helper, from a tab
/// at the start of one of them: the helper walks from there as
/// `parallel.rs`'s helper does (the rest of that window's tabs, the rest of
/// the window, the windows after it to the end of their array), while this
/// thread walks up to that tab. Reaching it in a window's `tabs`, this
/// thread adopts what the helper counted and goes on from where the helper
/// stopped, with the helper's text. Reaching it anywhere else, or the
/// helper giving up, gives up the walk (the ordinary read decides).
pub(crate) struct Helper<'a, 's> {
    /// Set once the decoder has sent its last piece and closed the channel.
    pub(crate) done: &'a AtomicBool,
    /// The pieces' channel, to take every piece left from.
    pub(crate) arrived: &'a Receiver<Piece<'s>>,
    /// Where the pieces handed over go (dropped once it is clear none
    /// will, so that the helper stops waiting).
    pub(crate) give: Option<SyncSender<Handoff<'s>>>,
    /// What the helper made of them.
    pub(crate) take: Receiver<Option<Speculation<'s>>>,
    /// Hand over nothing shorter than this.
    pub(crate) min_share: usize,
}

/// The pieces handed to the helper, and the offset of the tab it starts at
/// (its `{`).
pub(crate) struct Handoff<'s> {
    start: usize,
    pieces: VecDeque<Piece<'s>>,
}

/// What the helper counted from a tab: the rest of that window's `tabs`
/// (as a window's tally) and fields, then the windows after it, up to the
/// `]` of their array.
pub(crate) struct Speculation<'s> {
    walked: Walked,
    /// Where the helper stopped, in its text, and what it had left.
    text: Text<'s>,
    base: usize,
    end: usize,
    queue: VecDeque<Piece<'s>>,
    last: bool,
}

/// The counts of a [`Speculation`].
pub(super) struct Walked {
    /// The rest of the window the helper started in.
    pub(super) tally: WindowTally,
    /// That window's fields the helper read after `tabs` ([`WindowFields::seen`](super::super::parallel::WindowFields::seen)).
    pub(super) seen: u16,
    /// The windows after it.
    pub(super) windows: Vec<WindowTally>,
    /// What the visitor wrote of the helper's tabs.
    pub(super) out: Vec<u8>,
}

/// The text at hand, and where the walk is in it.
pub(super) struct Feed<'f, 's> {
    next: &'f mut dyn FnMut() -> Option<Piece<'s>>,
    recycle: &'f mut dyn FnMut(&'s mut [u8]),
    text: Text<'s>,
    /// Offset of `text` in the document.
    base: usize,
    /// Offset of the walk in the document.
    pos: usize,
    /// Whether `text` runs to the end of the document.
    last: bool,
    /// Pieces to take before asking `next`.
    queue: VecDeque<Piece<'s>>,
    /// The thread to share the rest with, if any.
    helper: Option<&'f mut Helper<'f, 's>>,
    /// Whether every piece left has been taken from the channel: after
    /// `queue`, there are no more (the sender is gone, but this thread does
    /// not wait on it again).
    drained: bool,
    /// Where the helper starts, until this walk reaches it: the text ends
    /// there.
    handoff: Option<usize>,
    /// Whether the helper's walk was adopted.
    shared: bool,
}

/// Where the next piece comes from.
enum Next<'s> {
    Piece(Piece<'s>),
    /// None until the helper's walk is adopted.
    Paused,
    End,
}

impl<'f, 's> Feed<'f, 's> {
    /// A walk from the start, with no text yet, and the thread to share
    /// the rest with, if any.
    pub(super) fn new(
        next: &'f mut dyn FnMut() -> Option<Piece<'s>>,
        recycle: &'f mut dyn FnMut(&'s mut [u8]),
        helper: Option<&'f mut Helper<'f, 's>>,
    ) -> Self {
        Feed {
            next,
            recycle,
            text: Text::Joined(String::new()),
            base: 0,
            pos: 0,
            last: false,
            queue: VecDeque::new(),
            helper,
            drained: false,
            handoff: None,
            shared: false,
        }
    }

    /// The helper's walk of the pieces handed over, from the tab they start
    /// at; `next` is asked once they have all been taken.
    pub(super) fn handed(
        next: &'f mut dyn FnMut() -> Option<Piece<'s>>,
        recycle: &'f mut dyn FnMut(&'s mut [u8]),
        handoff: Handoff<'s>,
    ) -> Self {
        let mut feed = Feed::new(next, recycle, None);
        feed.base = handoff.start;
        feed.pos = handoff.start;
        feed.queue = handoff.pieces;
        feed
    }

    /// What the helper's walk leaves this thread: its counts, and where it
    /// stopped, with the text it has left.
    pub(super) fn finish(self, walked: Walked) -> Speculation<'s> {
        Speculation {
            walked,
            text: self.text,
            base: self.base,
            end: self.pos,
            queue: self.queue,
            last: self.last,
        }
    }

    /// Whether the helper's walk was adopted.
    pub(super) fn shared(&self) -> bool {
        self.shared
    }

    fn next_piece(&mut self) -> Next<'s> {
        if let Some(piece) = self.queue.pop_front() {
            return Next::Piece(piece);
        }
        if self.handoff.is_some() {
            return Next::Paused;
        }
        if self.drained {
            return Next::End;
        }
        match (self.next)() {
            Some(piece) => Next::Piece(piece),
            None => Next::End,
        }
    }

    /// Whether the text at hand ends at `pos` because the helper starts
    /// there.
    fn paused_at(&self, pos: usize) -> bool {
        self.handoff == Some(pos) && self.queue.is_empty()
    }

    /// At a tab: if the decoder has finished, hand the later pieces to the
    /// helper (once); if this is the tab the helper started at, adopt its
    /// walk and go on from where it stopped.
    pub(super) fn at_tab(&mut self) -> Result<Option<Walked>> {
        if !self.drained {
            match &self.helper {
                Some(helper) if helper.done.load(Ordering::Acquire) => self.share()?,
                _ => {}
            }
        }
        if self.handoff != Some(self.pos) {
            return Ok(None);
        }
        if !self.queue.is_empty() {
            return Err(GiveUp);
        }
        let helper = self.helper.as_deref_mut().ok_or(GiveUp)?;
        let speculation = receive(&helper.take).flatten().ok_or(GiveUp)?;
        self.handoff = None;
        self.replace(speculation.text, speculation.base);
        self.pos = speculation.end;
        self.queue = speculation.queue;
        self.last = speculation.last;
        self.shared = true;
        Ok(Some(speculation.walked))
    }

    /// Take every piece left, and hand the later ones to the helper from a
    /// tab that starts one of them, so that each thread has about half of
    /// what is left to walk.
    fn share(&mut self) -> Result<()> {
        let Some(helper) = self.helper.as_deref_mut() else {
            return Ok(());
        };
        self.drained = true;
        self.queue.extend(helper.arrived.try_iter());
        let min_share = helper.min_share;
        // The end of the text before each queued piece, and what each adds.
        let mut ends = Vec::with_capacity(self.queue.len());
        let mut end = self.base + self.text.as_str().len();
        let mut total = end.saturating_sub(self.pos);
        for piece in &self.queue {
            ends.push(end);
            let piece_end = piece.base + piece.len;
            total += piece_end.saturating_sub(end);
            end = end.max(piece_end);
        }
        let doc_end = end;
        let best = (0..self.queue.len())
            .filter(|&i| {
                let before = match i {
                    0 => self.text.as_str(),
                    _ => self.queue[i - 1].text(),
                };
                tab_starts_at(before, &self.queue[i], ends[i])
            })
            .map(|i| (i, doc_end - ends[i]))
            .filter(|&(_, share)| share >= min_share)
            .min_by_key(|&(_, share)| share.abs_diff(total / 2));
        let give = helper.give.take();
        let Some((i, _)) = best else {
            return Ok(());
        };
        let pieces = self.queue.split_off(i);
        let start = ends[i];
        give.ok_or(GiveUp)?
            .send(Handoff { start, pieces })
            .map_err(|_| GiveUp)?;
        self.handoff = Some(start);
        Ok(())
    }

    /// Run one step of the walk from the current position; again on more
    /// text if it fails or ends at the edge of the text at hand.
    pub(super) fn step<R>(&mut self, mut f: impl FnMut(&mut Cursor<'_>) -> Result<R>) -> Result<R> {
        loop {
            let text = self.text.as_str();
            let mut cursor = Cursor::new(text, self.base);
            cursor.pos = self.pos;
            let result = f(&mut cursor);
            let end = self.base + text.len();
            match result {
                Ok(value) if self.last || cursor.pos < end || self.paused_at(cursor.pos) => {
                    self.pos = cursor.pos;
                    return Ok(value);
                }
                Err(GiveUp) if self.last => return Err(GiveUp),
                _ => self.more()?,
            }
        }
    }

    /// Replace the text at hand, giving its buffer back if it was a piece's.
    fn replace(&mut self, text: Text<'s>, base: usize) {
        if let Text::Piece(old) = std::mem::replace(&mut self.text, text) {
            (self.recycle)(old.into_bytes());
        }
        self.base = base;
    }

    /// Take in more pieces: at least one, and until the text from the
    /// current position has doubled (so a value many pieces long is tried
    /// a few times, not once per piece). Text before the position goes.
    fn more(&mut self) -> Result<()> {
        let kept = self.base + self.text.as_str().len() - self.pos;
        let mut first = true;
        loop {
            let piece = match self.next_piece() {
                Next::Piece(piece) => piece,
                Next::End => {
                    self.last = true;
                    return Ok(());
                }
                // Text stops where the helper starts.
                Next::Paused if first => return Err(GiveUp),
                Next::Paused => return Ok(()),
            };
            let end = self.base + self.text.as_str().len();
            // Pieces overlap: each starts within the text before it.
            if piece.base > end || piece.base + piece.len < end {
                return Err(GiveUp);
            }
            if first && piece.base <= self.pos {
                // The piece repeats the text still needed: take it whole.
                let base = piece.base;
                self.replace(Text::Piece(piece), base);
            } else {
                if first || matches!(self.text, Text::Piece(_)) {
                    // Keep the text from the position, and add the piece
                    // behind it.
                    let rest = self
                        .text
                        .as_str()
                        .get(self.pos - self.base..)
                        .ok_or(GiveUp)?;
                    let mut joined = String::with_capacity(rest.len() + piece.len);
                    joined.push_str(rest);
                    self.replace(Text::Joined(joined), self.pos);
                }
                let new = piece.text().get(end - piece.base..).ok_or(GiveUp)?;
                if let Text::Joined(joined) = &mut self.text {
                    joined.push_str(new);
                }
                (self.recycle)(piece.into_bytes());
            }
            first = false;
            if self.base + self.text.as_str().len() - self.pos >= 2 * kept {
                return Ok(());
            }
        }
    }

    /// After the top-level value: only whitespace may follow, to the end.
    pub(super) fn only_space_left(&mut self) -> Result<()> {
        loop {
            let text = self.text.as_str();
            let rest = text.get(self.pos - self.base..).ok_or(GiveUp)?;
            if !rest.bytes().all(is_space) {
                return Err(GiveUp);
            }
            if self.last {
                return Ok(());
            }
            self.pos = self.base + text.len();
            self.more()?;
        }
    }
}

/// What one window adds to a summary.
#[derive(Default)]
pub(super) struct WindowTally {
    pub(super) tabs: usize,
    pub(super) pinned: usize,
    pub(super) hidden: usize,
    pub(super) entries: usize,
    pub(super) closed_tabs: usize,
    pub(super) groups: usize,
}

impl WindowTally {
    pub(super) fn add(&mut self, other: &WindowTally) {
        self.tabs += other.tabs;
        self.pinned += other.pinned;
        self.hidden += other.hidden;
        self.entries += other.entries;
        self.closed_tabs += other.closed_tabs;
        self.groups += other.groups;
    }
}

/// Whether a tab starts at `at`, the end of `before` (the text before
/// `piece`'s new text): `before` ends with the `,` of [`TAB_START`], and
/// `piece` has the rest there.
fn tab_starts_at(before: &str, piece: &Piece<'_>, at: usize) -> bool {
    before.ends_with(',')
        && at
            .checked_sub(piece.base)
            .and_then(|i| piece.text().get(i..))
            .is_some_and(|rest| rest.as_bytes().starts_with(&TAB_START[1..]))
}
