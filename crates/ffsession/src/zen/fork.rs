//! Zen's keys in Firefox's own session objects, read from where the session
//! model keeps a fork's data ([`ForkData`](crate::session::ForkData)): the
//! raw JSON of each key `crate::forks` registers for Zen, interpreted here
//! when asked, as tolerantly as the model's own fields (a value of an
//! unexpected type reads as absent).

use std::borrow::Cow;

use super::Space;
use crate::session::de::{List, OptStr, Truthy};
use crate::session::{Tab, TabRecord, Window};

/// A tab's space (the tab's `zen-workspace-id` attribute, as Zen's TabState
/// patch writes it).
pub(crate) const WORKSPACE: &str = "zenWorkspace";
/// A tab's essential flag.
pub(crate) const ESSENTIAL: &str = "zenEssential";
/// A window's spaces.
pub(crate) const SPACES: &str = "spaces";

/// Zen's data of a tab.
pub trait ZenTab<'a> {
    /// The uuid of the space the tab is in (`zenWorkspace`); `None` in
    /// Firefox's files, for Zen's essential tabs (which are in every
    /// space), and for a value that is not a string.
    fn zen_workspace(&self) -> Option<Cow<'a, str>>;

    /// An essential tab (`zenEssential`), shown in every space. Zen writes
    /// the attribute's value (`"true"` or `null`) or a boolean and tests it
    /// as JavaScript does, so any truthy value is true (`de::truthy`).
    fn zen_essential(&self) -> bool;
}

impl<'a> ZenTab<'a> for Tab<'a> {
    fn zen_workspace(&self) -> Option<Cow<'a, str>> {
        let raw = self.forks.get(WORKSPACE)?;
        // The usual value: a string without escapes, borrowed as it is.
        if let Some(plain) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            if !plain.contains('\\') {
                return Some(Cow::Borrowed(plain));
            }
        }
        serde_json::from_str::<OptStr<'a>>(raw).ok()?.0
    }

    fn zen_essential(&self) -> bool {
        match self.forks.get(ESSENTIAL) {
            None | Some("null" | "false") => false,
            Some("true") => true,
            Some(raw) => serde_json::from_str::<Truthy>(raw).is_ok_and(|t| t.0),
        }
    }
}

/// Zen's data of a window.
pub trait ZenWindow<'a> {
    /// Its spaces (`spaces`), which Zen collects into each window's state
    /// and keeps in `zen-sessions.jsonlz4` too; empty in Firefox's files
    /// and when the value is not an array. Read anew at each call.
    fn zen_spaces(&self) -> Vec<Space<'a>>;
}

impl<'a> ZenWindow<'a> for Window<'a> {
    fn zen_spaces(&self) -> Vec<Space<'a>> {
        let Some(raw) = self.forks.get(SPACES) else {
            return Vec::new();
        };
        serde_json::from_str::<List<Space<'a>>>(raw).map_or_else(|_| Vec::new(), |l| l.0)
    }
}

/// `record` of `tab` with Zen's marks: essential or not, and the uuid of
/// its space; for [`Session::tab_records_with`](crate::session::Session::tab_records_with).
pub fn mark<'s>(tab: &'s Tab<'_>, record: TabRecord<'s>) -> TabRecord<'s> {
    TabRecord {
        essential: tab.zen_essential(),
        space: tab.zen_workspace(),
        ..record
    }
}
