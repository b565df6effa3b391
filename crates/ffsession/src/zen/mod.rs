//! Zen's own session file, `zen-sessions.jsonlz4`, borrowed from its JSON
//! buffer as the Firefox session model is ([`crate::session`]).
//!
//! Zen (a Firefox fork) keeps what its sidebar shows, its spaces, pinned and
//! essential tabs, folders and split views, in `zen-sessions.jsonlz4` at the
//! top of the profile, beside Firefox's own session files, and copies of it
//! in `zen-sessions-backup/` ([`crate::sources`] names their roles). It is
//! written at every Firefox session save, from the same state, just before
//! Firefox writes its own file (Zen's `SessionSaver` patch calls
//! `ZenSessionStore.saveState(state)` right before `_writeState(state)`), and
//! at startup Zen puts its tabs into every synced window in place of the
//! window's own: the two files are one moment, and restoring one without the
//! other shows tabs without their spaces.
//!
//! The shape, from Zen's `ZenSessionManager.sys.mjs` (`#collectWindowData`,
//! `#collectTabsData`; see `docs/zen.md` for the version read):
//!
//! ```text
//! {"lastCollected": <ms>,                       when Zen collected it
//!  "tabs": [<Firefox tab state + zenWorkspace, zenEssential, zenSyncId, ...>],
//!  "folders": [{"id", "name", "parentId", "workspaceId", "pinned", ...}],
//!  "splitViewData": [...], "groups": [<Firefox tab groups>],
//!  "spaces": [{"uuid", "name", "icon", "containerTabId", "theme", ...}]}
//! ```
//!
//! The reader is as tolerant as the session reader (`session/de.rs`):
//! a field of an unexpected type reads as absent, a list that is not an
//! array as empty, an element that is not an object is skipped. What it
//! refuses: JSON that is not an object, and a document with `windows` (a
//! Firefox session). Tabs are the session model's [`Tab`], which keeps Zen's
//! `zenWorkspace` and `zenEssential` as a fork's data; [`ZenTab`] reads
//! them (`fork.rs`), as [`ZenWindow`] reads a Firefox window's `spaces`.

pub mod companion;
mod fork;
mod names;
pub mod restore;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::de::{Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::ParseError;
use crate::session::de::{self, List, OptU64};
use crate::session::{Tab, TabGroup, TabRecord, TabState};

pub use fork::{mark, ZenTab, ZenWindow};
pub use names::SpaceNames;

de::object_only!(Space<'a>);
de::object_only!(Folder<'a>);

/// Zen's sessions file: its sidebar as of `lastCollected`.
#[derive(Debug, Default)]
pub struct ZenSessions<'a> {
    /// When Zen collected this state, ms since the epoch: the file's own
    /// time, as `session.lastUpdate` is a Firefox session's.
    pub last_collected: Option<u64>,
    /// The tabs, deduplicated across windows (Zen's `zenSyncId`), in order.
    pub tabs: Vec<Tab<'a>>,
    /// The spaces (Zen's workspaces), in order.
    pub spaces: Vec<Space<'a>>,
    /// Folders (Zen's tab groups in the sidebar), split views among them.
    pub folders: Vec<Folder<'a>>,
    /// Firefox tab groups, as a window's `groups`.
    pub groups: Vec<TabGroup<'a>>,
    /// Entries of `splitViewData` (each an object).
    pub split_views: usize,
    /// Which of `lastCollected`, `tabs` and `spaces` the document has.
    keys: u8,
}

/// A space (Zen's workspace), as `ZenSpaceManager.getWorkspacesForSessionStore`
/// writes it.
#[derive(Debug, Deserialize)]
#[serde(remote = "Self")]
pub struct Space<'a> {
    /// Its id, which tabs name in `zenWorkspace` (`{...}` as Zen makes them).
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub uuid: Option<Cow<'a, str>>,
    /// Its name.
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub name: Option<Cow<'a, str>>,
    /// Its icon: an emoji or an SVG URL.
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub icon: Option<Cow<'a, str>>,
    /// The container its new tabs open in (0: none).
    #[serde(default, rename = "containerTabId", deserialize_with = "de::opt_u64")]
    pub container_tab_id: Option<u64>,
}

/// A folder, as `ZenFolders.storeDataForSessionStore` writes it; its tabs
/// name it in `groupId`.
#[derive(Debug, Deserialize)]
#[serde(remote = "Self")]
pub struct Folder<'a> {
    /// Its id.
    #[serde(default, borrow, deserialize_with = "de::opt_id")]
    pub id: Option<Cow<'a, str>>,
    /// Its name.
    #[serde(default, borrow, deserialize_with = "de::opt_str")]
    pub name: Option<Cow<'a, str>>,
    /// The folder it is in, if any.
    #[serde(default, rename = "parentId", borrow, deserialize_with = "de::opt_id")]
    pub parent_id: Option<Cow<'a, str>>,
    /// The space it is in.
    #[serde(
        default,
        rename = "workspaceId",
        borrow,
        deserialize_with = "de::opt_str"
    )]
    pub workspace_id: Option<Cow<'a, str>>,
    /// A split view kept in a folder rather than a folder.
    #[serde(default, rename = "splitViewGroup", deserialize_with = "de::truthy")]
    pub split_view_group: bool,
    /// Collapsed in the sidebar.
    #[serde(default, deserialize_with = "de::truthy")]
    pub collapsed: bool,
}

/// What a Zen sessions file holds, in numbers (`ffsession info`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ZenSummary {
    /// Spaces.
    pub spaces: usize,
    /// Tabs.
    pub tabs: usize,
    /// Pinned tabs (essentials among them).
    pub pinned_tabs: usize,
    /// Essential tabs (in every space).
    pub essential_tabs: usize,
    /// Folders (not counting split views kept as folders).
    pub folders: usize,
    /// Firefox tab groups.
    pub tab_groups: usize,
    /// Split views.
    pub split_views: usize,
    /// History entries over all tabs.
    pub history_entries: usize,
    /// `lastCollected`: when Zen collected the state, ms since the epoch.
    pub last_collected: Option<u64>,
    /// Each space, in order, with its tabs (essentials not counted).
    pub space_tabs: Vec<SpaceTabs>,
}

/// One space and how many tabs it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpaceTabs {
    /// Its uuid.
    pub uuid: Option<String>,
    /// Its name.
    pub name: Option<String>,
    /// Its tabs, essentials not counted.
    pub tabs: usize,
}

#[derive(Deserialize)]
enum Key {
    #[serde(rename = "lastCollected")]
    LastCollected,
    #[serde(rename = "tabs")]
    Tabs,
    #[serde(rename = "spaces")]
    Spaces,
    #[serde(rename = "folders")]
    Folders,
    #[serde(rename = "groups")]
    Groups,
    #[serde(rename = "splitViewData")]
    SplitViewData,
    #[serde(rename = "windows")]
    Windows,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for ZenSessions<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Top<'a>(PhantomData<ZenSessions<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for Top<'a> {
            type Value = ZenSessions<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object (Zen's sessions file)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut z = ZenSessions::default();
                let mut seen = 0u8;
                while let Some(key) = map.next_key::<Key>()? {
                    let (bit, name) = match key {
                        Key::LastCollected => {
                            z.last_collected = map.next_value::<OptU64>()?.0;
                            (1, "lastCollected")
                        }
                        Key::Tabs => {
                            z.tabs = map.next_value::<List<Tab>>()?.0;
                            (2, "tabs")
                        }
                        Key::Spaces => {
                            z.spaces = map.next_value::<List<Space>>()?.0;
                            (4, "spaces")
                        }
                        Key::Folders => {
                            z.folders = map.next_value::<List<Folder>>()?.0;
                            (8, "folders")
                        }
                        Key::Groups => {
                            z.groups = map.next_value::<List<TabGroup>>()?.0;
                            (16, "groups")
                        }
                        Key::SplitViewData => {
                            z.split_views = map.next_value::<List<IgnoredAny>>()?.0.len();
                            (32, "splitViewData")
                        }
                        Key::Windows => {
                            return Err(A::Error::custom(
                                "it has `windows`: a Firefox session, not Zen's sessions file",
                            ))
                        }
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                            (0, "")
                        }
                    };
                    if seen & bit != 0 {
                        return Err(A::Error::duplicate_field(name));
                    }
                    seen |= bit;
                }
                z.keys = seen & 7;
                Ok(z)
            }
        }
        d.deserialize_map(Top(PhantomData))
    }
}

impl<'a> ZenSessions<'a> {
    /// Parse Zen's sessions JSON, borrowing strings from `json`.
    ///
    /// Fails on invalid JSON or UTF-8, on JSON that is not an object, and on
    /// a Firefox session (one with `windows`); any other object reads, its
    /// fields as tolerantly as a session's (see the module documentation).
    pub fn from_json(json: &'a [u8]) -> Result<Self, ParseError> {
        let text =
            simdutf8::basic::from_utf8(json).map_err(|_| match std::str::from_utf8(json) {
                Err(e) => ParseError::invalid_utf8(json, e.valid_up_to()),
                Ok(_) => ParseError::invalid_utf8(json, 0),
            })?;
        Ok(serde_json::from_str::<ZenSessions<'a>>(text)?)
    }

    /// True if the document has one of the fields Zen always writes
    /// (`lastCollected`, `tabs`, `spaces`): what tells Zen's file from
    /// another JSON object when the name does not say.
    pub fn has_zen_fields(&self) -> bool {
        self.keys != 0
    }

    /// The space with `uuid`.
    pub fn space(&self, uuid: &str) -> Option<&Space<'a>> {
        self.spaces.iter().find(|s| s.uuid.as_deref() == Some(uuid))
    }

    /// The name of the folder or tab group with `id`, falling back to the id.
    pub fn group_name(&self, id: &str) -> Option<&str> {
        let folder = self.folders.iter().find(|f| f.id.as_deref() == Some(id));
        if let Some(f) = folder {
            return f.name.as_deref().or(f.id.as_deref());
        }
        let group = self.groups.iter().find(|g| g.id.as_deref() == Some(id))?;
        group.name.as_deref().or(group.id.as_deref())
    }

    /// Counts, and the tabs of each space.
    pub fn summary(&self) -> ZenSummary {
        let mut s = ZenSummary {
            spaces: self.spaces.len(),
            tabs: self.tabs.len(),
            folders: self.folders.iter().filter(|f| !f.split_view_group).count(),
            tab_groups: self.groups.len(),
            split_views: self.split_views,
            last_collected: self.last_collected,
            ..ZenSummary::default()
        };
        s.space_tabs = self
            .spaces
            .iter()
            .map(|space| SpaceTabs {
                uuid: space.uuid.as_deref().map(str::to_owned),
                name: space.name.as_deref().map(str::to_owned),
                tabs: 0,
            })
            .collect();
        for t in &self.tabs {
            let essential = t.zen_essential();
            s.pinned_tabs += usize::from(t.pinned || essential);
            s.essential_tabs += usize::from(essential);
            s.history_entries += t.entries.len();
            if essential {
                continue;
            }
            let workspace = t.zen_workspace();
            let uuid = workspace.as_deref();
            if let Some(space) = s
                .space_tabs
                .iter_mut()
                .find(|sp| uuid.is_some() && sp.uuid.as_deref() == uuid)
            {
                space.tabs += 1;
            }
        }
        s
    }

    /// Every tab as a [`TabRecord`], in file order, each with its space's
    /// name (or its uuid, when this file has no such space). Zen puts these
    /// tabs into every synced window, so all are listed as window 1.
    pub fn tab_records(&self) -> impl Iterator<Item = TabRecord<'_>> + '_ {
        let names = SpaceNames::of_zen(self);
        self.tabs.iter().enumerate().map(move |(i, tab)| {
            let essential = tab.zen_essential();
            TabRecord {
                window: 1,
                position: i + 1,
                state: TabState::Open,
                url: tab.url(),
                title: tab.title(),
                pinned: tab.pinned || essential,
                hidden: tab.hidden,
                selected: false,
                group: tab
                    .group_id
                    .as_deref()
                    .and_then(|id| self.group_name(id).or(Some(id))),
                container: tab.container(),
                last_accessed: tab.last_accessed,
                closed_at: None,
                history_len: tab.entries.len(),
                essential,
                space: tab.zen_workspace().map(|u| names.name(u)),
            }
        })
    }
}
