//! The Firefox session model, borrowed from the session JSON buffer.
//!
//! This module owns what a session *means*: windows, tabs, their back/forward
//! history, closed tabs and windows, tab groups and the session's timestamps.
//! Every string borrows from the buffer ([`crate::SessionData`]) unless a JSON
//! escape forces a copy (`Cow::Owned`). Fields the model does not use (favicons,
//! form data, session storage, scroll positions, cookies, ...) are skipped by the
//! parser without being allocated, so allocations grow with tabs and history
//! entries, never with those payloads.
//! The keys Firefox's forks add to tabs and windows (`crate::forks` lists
//! them) are kept unread, as raw JSON, in one place per object
//! ([`ForkData`]), for the fork's own module to read: this module names no
//! fork.
//!
//! The shape follows what Firefox's SessionStore writes (`session.schema.json`):
//! unknown fields are ignored, and a field of an unexpected type (missing,
//! `null`, a string where a number belongs, as Firefox 57 wrote window sizes)
//! reads as absent (`de.rs`), so files from every Firefox version read the way
//! Firefox reads them. A file holding only `{"windows": []}` is a valid, empty
//! session; a file without a `windows` array is not a session.

mod cursor;
pub(crate) mod de;
mod fork_data;
pub(crate) mod growing;
mod objects;
mod parallel;
mod records;
mod skim;
pub(crate) mod streamed;
mod summary;
mod threads;

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::error::ParseError;

// The fuzz targets' and tests' comparisons with the reference parser: in
// fuzz builds (`--cfg fuzzing`) and debug builds, never in a release.
pub use fork_data::ForkData;
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub use parallel::assert_fast_paths_match_reference;
pub(crate) use parallel::{parse_growing, spawn_beside, two_cores, PARALLEL_MIN_BYTES, TAB_START};
pub use records::{TabFilter, TabRecord, TabState};
#[cfg(any(fuzzing, debug_assertions))]
#[doc(hidden)]
pub use skim::assert_matches_serde as assert_tab_reader_matches_serde;

// Every model type reads only from a JSON object: serde's derive alone would
// also take an array of the fields in order, a shape Firefox never writes.
de::object_only!(Session<'a>);
de::object_only!(Timestamps);
de::object_only!(Entry<'a>);
de::object_only!(ClosedTab<'a>);
de::object_only!(TabGroup<'a>);
pub use summary::Summary;

/// Validate UTF-8 once for the whole buffer (SIMD, simdutf8) instead of once per
/// string the parser borrows; std finds the position only when it is invalid.
fn utf8(json: &[u8]) -> Result<&str, ParseError> {
    simdutf8::basic::from_utf8(json).map_err(|_| match std::str::from_utf8(json) {
        Err(e) => ParseError::invalid_utf8(json, e.valid_up_to()),
        Ok(_) => ParseError::invalid_utf8(json, 0),
    })
}

/// A whole session: open windows, closed windows and session-wide metadata.
#[derive(Debug, Deserialize)]
#[serde(remote = "Self")]
pub struct Session<'a> {
    /// Open windows, in file order.
    #[serde(borrow, deserialize_with = "de::array")]
    pub windows: Vec<Window<'a>>,
    /// Recently closed windows, most recently closed first.
    #[serde(
        default,
        rename = "_closedWindows",
        borrow,
        deserialize_with = "de::list"
    )]
    pub closed_windows: Vec<Window<'a>>,
    /// 1-based index of the selected window in `windows` (0 or missing: none).
    #[serde(default, rename = "selectedWindow", deserialize_with = "de::opt_u64")]
    pub selected_window: Option<u64>,
    /// Tab groups saved for later (Firefox 138+), not shown in any window.
    #[serde(default, rename = "savedGroups", borrow, deserialize_with = "de::list")]
    pub saved_groups: Vec<TabGroup<'a>>,
    /// Timestamps and crash counter.
    #[serde(default, deserialize_with = "de::object_or_default")]
    pub session: Timestamps,
}

/// The `session` object: when the session was last written and started.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(remote = "Self")]
pub struct Timestamps {
    /// Milliseconds since the Unix epoch when Firefox last wrote this state.
    #[serde(
        default,
        rename(deserialize = "lastUpdate"),
        deserialize_with = "de::opt_u64"
    )]
    pub last_update: Option<u64>,
    /// Milliseconds since the Unix epoch when this browser session started.
    #[serde(
        default,
        rename(deserialize = "startTime"),
        deserialize_with = "de::opt_u64"
    )]
    pub start_time: Option<u64>,
    /// Number of crashes in a row before this session.
    #[serde(
        default,
        rename(deserialize = "recentCrashes"),
        deserialize_with = "de::opt_u64"
    )]
    pub recent_crashes: Option<u64>,
}

impl serde::Serialize for Timestamps {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // The impl serde derives, kept inherent by `remote = "Self"`.
        Timestamps::serialize(self, s)
    }
}

/// The session's timestamps alone, read while skipping the windows entirely.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SessionMeta {
    /// The `session` object.
    pub timestamps: Timestamps,
}

impl SessionMeta {
    /// Read only `session.*` from session JSON; windows are checked to exist but
    /// skipped without building anything.
    pub fn from_json(json: &[u8]) -> Result<Self, ParseError> {
        #[derive(Deserialize)]
        #[serde(remote = "Self")]
        struct MetaOnly {
            #[allow(dead_code)]
            windows: IgnoredAny,
            #[serde(default, deserialize_with = "de::object_or_default")]
            session: Timestamps,
        }
        de::object_only!(MetaOnly);
        let m: MetaOnly = serde_json::from_str(utf8(json)?)?;
        Ok(SessionMeta {
            timestamps: m.session,
        })
    }
}

/// A browser window, open or recently closed.
///
/// Read by hand (`objects.rs`), each field by the tolerant reader the
/// derived readers of the other types use (`de.rs`).
#[derive(Debug, Default)]
pub struct Window<'a> {
    /// Tabs in tab-strip order.
    pub tabs: Vec<Tab<'a>>,
    /// 1-based index of the selected tab.
    pub selected: Option<u64>,
    /// Recently closed tabs of this window (`_closedTabs`), most recent first.
    pub closed_tabs: Vec<ClosedTab<'a>>,
    /// Tab groups of this window (Firefox 138+).
    pub groups: Vec<TabGroup<'a>>,
    /// Width in CSS pixels.
    pub width: Option<i64>,
    /// Height in CSS pixels.
    pub height: Option<i64>,
    /// Horizontal screen position (`screenX`).
    pub screen_x: Option<i64>,
    /// Vertical screen position (`screenY`).
    pub screen_y: Option<i64>,
    /// `normal`, `maximized`, `minimized` or `fullscreen`.
    pub sizemode: Option<Cow<'a, str>>,
    /// Title (closed windows carry the title of their selected tab).
    pub title: Option<Cow<'a, str>>,
    /// When the window was closed (`closedAt`, closed windows only), ms since
    /// the epoch.
    pub closed_at: Option<u64>,
    /// The keys forks add to a window (`crate::forks::WINDOW_KEYS`), as raw
    /// JSON, read by each fork's own module; empty in Firefox's files.
    pub forks: ForkData<'a>,
}

/// A tab: its back/forward history and where in it the tab stands.
///
/// Read by hand (`objects.rs`), as [`Window`] is.
#[derive(Debug, Default)]
pub struct Tab<'a> {
    /// Back/forward history, oldest first.
    pub entries: Vec<Entry<'a>>,
    /// 1-based index of the current entry (missing or 0: the last one).
    pub index: Option<u64>,
    /// Pinned to the tab strip.
    pub pinned: bool,
    /// Hidden (by an extension, or in a collapsed group in some versions).
    pub hidden: bool,
    /// Id of the tab group the tab belongs to (`groupId`), if any.
    pub group_id: Option<Cow<'a, str>>,
    /// Container (contextual identity, `userContextId`); 0 is no container.
    pub user_context_id: Option<u64>,
    /// Last time the tab was selected (`lastAccessed`), ms since the epoch.
    pub last_accessed: Option<u64>,
    /// What the user typed in the address bar but has not loaded yet
    /// (`userTypedValue`).
    pub user_typed_value: Option<Cow<'a, str>>,
    /// The keys forks add to a tab (`crate::forks::TAB_KEYS`), as raw JSON,
    /// read by each fork's own module; empty in Firefox's files.
    pub forks: ForkData<'a>,
    /// The favicon (`image`), often a `data:` URI of several KB: skipped,
    /// not kept.
    #[allow(dead_code)]
    pub(super) image: de::Skipped,
}

/// One page in a tab's back/forward history.
#[derive(Debug, Deserialize)]
#[serde(remote = "Self")]
pub struct Entry<'a> {
    /// The page's URL.
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub url: Option<Cow<'a, str>>,
    /// The page's title.
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub title: Option<Cow<'a, str>>,
    // Long base64 strings of every entry: skipped, not kept.
    #[serde(default, deserialize_with = "de::unused_blob")]
    #[allow(dead_code)]
    csp: de::Skipped,
    #[serde(default, rename = "referrerInfo", deserialize_with = "de::unused_blob")]
    #[allow(dead_code)]
    referrer_info: de::Skipped,
    #[serde(
        default,
        rename = "structuredCloneState",
        deserialize_with = "de::unused_blob"
    )]
    #[allow(dead_code)]
    structured_clone_state: de::Skipped,
}

/// A recently closed tab, with where and when it was closed.
#[derive(Debug, Deserialize)]
#[serde(remote = "Self")]
pub struct ClosedTab<'a> {
    /// The tab as it was when closed (missing or not an object: a tab with no
    /// history).
    #[serde(default, borrow, deserialize_with = "de::object_or_default")]
    pub state: Tab<'a>,
    /// Title at the time of closing.
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub title: Option<Cow<'a, str>>,
    /// When it was closed, ms since the epoch.
    #[serde(default, rename = "closedAt", deserialize_with = "de::opt_u64")]
    pub closed_at: Option<u64>,
    /// Its position in the tab strip when closed (0-based).
    #[serde(default, deserialize_with = "de::opt_u64")]
    pub pos: Option<u64>,
}

/// A tab group (Firefox 138+): in a window's `groups`, or in `savedGroups`.
#[derive(Debug, Deserialize)]
#[serde(remote = "Self")]
pub struct TabGroup<'a> {
    /// Group id, referenced by [`Tab::group_id`].
    #[serde(default, borrow, deserialize_with = "de::opt_id")]
    pub id: Option<Cow<'a, str>>,
    /// User-visible name.
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub name: Option<Cow<'a, str>>,
    /// Color name (`blue`, `red`, ...).
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub color: Option<Cow<'a, str>>,
    /// Whether the group is collapsed.
    #[serde(default, deserialize_with = "de::bool_or_null")]
    pub collapsed: bool,
    /// Tabs of a saved group (closed tabs); empty for a window's open groups.
    #[serde(default, borrow, deserialize_with = "de::list")]
    pub tabs: Vec<ClosedTab<'a>>,
}

impl<'a> Session<'a> {
    /// Parse session JSON, borrowing strings from `json`.
    ///
    /// Fails on invalid JSON or UTF-8, or JSON that is not shaped like a session
    /// (no `windows` list, wrong types).
    ///
    /// The parser is serde_json: its typed path stops at 128 levels of nesting
    /// and it skips ignored values iteratively, so no input can overflow the
    /// stack. (sonic-rs parses faster but skips ignored values recursively with
    /// no depth limit, cloudwego/sonic-rs#232: a 10,000-deep array aborts the
    /// process. The tests below hold any parser to that.)
    ///
    /// Large documents are parsed on two threads when the machine has two cores
    /// (see `parallel.rs`), smaller ones by the same walk on this thread; the
    /// walk reads tabs with a quick reader of its own (`skim.rs`) and skips
    /// favicons and base64 fields faster (`de::fast_attempt`). The result is
    /// the same as [`Session::from_json_serial`], which reads the document
    /// whenever a fast path is in doubt.
    ///
    /// The fields skipped that way are named in the model, so a duplicate of
    /// one (`image` twice in a tab, say) is an error as for any named field;
    /// Firefox never writes duplicate keys.
    pub fn from_json(json: &'a [u8]) -> Result<Self, ParseError> {
        Self::from_json_fast(json).map_or_else(|| Self::from_json_serial(json), Ok)
    }

    /// The fast paths, `None` where the reference parser must decide: two
    /// threads for large documents, else one fast attempt (`de::fast_attempt`)
    /// on this thread.
    fn from_json_fast(json: &'a [u8]) -> Option<Self> {
        if json.len() >= parallel::PARALLEL_MIN_BYTES && parallel::two_cores() {
            if let Some(split) = parallel::split_point(json) {
                return parallel::parse_split(json, split).ok();
            }
        }
        Self::fast_attempt(json)
    }

    /// One fast attempt on this thread, `None` where the reference must
    /// decide: the two-thread parse's walk, with no helper.
    fn fast_attempt(json: &'a [u8]) -> Option<Self> {
        parallel::parse_one_thread(json).ok()
    }

    /// [`Session::from_json`] without the helper thread: the fast attempt on
    /// this thread, then the reference parser if in doubt. For benchmarks.
    #[doc(hidden)]
    pub fn from_json_one_thread(json: &'a [u8]) -> Result<Self, ParseError> {
        Self::fast_attempt(json).map_or_else(|| Self::from_json_serial(json), Ok)
    }

    /// Parse session JSON on the calling thread only, with serde_json and the
    /// model's derived `Deserialize`: the reference for [`Session::from_json`].
    pub fn from_json_serial(json: &'a [u8]) -> Result<Self, ParseError> {
        Ok(serde_json::from_str::<Session<'a>>(utf8(json)?)?)
    }

    /// The 1-based selected window, if it points at an existing window.
    pub fn selected_window_index(&self) -> Option<usize> {
        let n = usize::try_from(self.selected_window?).ok()?;
        (1..=self.windows.len()).contains(&n).then_some(n)
    }

    /// Counts and timestamps.
    pub fn summary(&self) -> Summary {
        Summary::of(self)
    }
}

impl<'a> Window<'a> {
    /// The name of the group with `id` in this window, falling back to the id.
    pub fn group_name(&self, id: &str) -> Option<&str> {
        let group = self.groups.iter().find(|g| g.id.as_deref() == Some(id))?;
        group.name.as_deref().or(group.id.as_deref())
    }
}

impl<'a> Tab<'a> {
    /// The entry the tab shows: `entries[index - 1]`, with `index` clamped to the
    /// entries as Firefox does (missing or 0 means the last entry).
    pub fn current_entry(&self) -> Option<&Entry<'a>> {
        let len = self.entries.len();
        if len == 0 {
            return None;
        }
        let index = match self.index {
            Some(i) if i > 0 => usize::try_from(i).unwrap_or(usize::MAX),
            _ => len,
        };
        self.entries.get(index.clamp(1, len) - 1)
    }

    /// The URL the tab shows (the current entry's, else what was typed).
    pub fn url(&self) -> Option<&str> {
        self.current_entry()
            .and_then(|e| e.url.as_deref())
            .or(self.user_typed_value.as_deref())
    }

    /// The title of the current entry.
    pub fn title(&self) -> Option<&str> {
        self.current_entry().and_then(|e| e.title.as_deref())
    }

    /// The container id (0 for none).
    pub fn container(&self) -> u64 {
        self.user_context_id.unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
