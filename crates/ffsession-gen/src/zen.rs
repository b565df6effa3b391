//! The two session files of a Zen profile, one moment: Firefox's
//! `sessionstore.jsonlz4` and Zen's `zen-sessions.jsonlz4`, for tests.
//!
//! Written from Zen's source, not from a user's file (`docs/zen.md` names the
//! versions read): a tab is Firefox's tab state with the fields Zen's
//! `TabState` patch adds (`zenWorkspace` from the tab's `zen-workspace-id`
//! attribute, `zenEssential` as the attribute's value, `"true"` or `null`,
//! `zenPinnedId`, `zenIsEmpty`, ...) and `zenSyncId`; a space is what
//! `ZenSpaceManager.getWorkspacesForSessionStore` returns (`uuid`, `name`,
//! `icon`, `containerTabId`, `theme`, `hasCollapsedPinnedTabs`); a folder is
//! what `ZenFolders.storeDataForSessionStore` returns. Zen's file holds
//! `lastCollected` and the first window's `tabs`, `folders`,
//! `splitViewData`, `groups` and `spaces`, in that order
//! (`ZenSessionManager.#collectWindowData`); Firefox's file holds the same
//! window, whose state Zen read them from.

use serde_json::{json, Value};

/// What to generate.
#[derive(Debug, Clone)]
pub struct ZenSpec {
    /// `lastCollected` of Zen's file, ms since the epoch; Firefox's
    /// `session.lastUpdate` is a few ms earlier (Firefox collects its state,
    /// then Zen collects from it).
    pub last_collected: u64,
    /// The spaces: uuid, name, icon.
    pub spaces: Vec<(String, String, String)>,
    /// Tabs in each space (the first of each pinned in its space).
    pub tabs_per_space: usize,
    /// Essential tabs (in every space).
    pub essentials: usize,
    /// A word in every title and URL, to tell moments apart.
    pub tag: String,
}

impl Default for ZenSpec {
    fn default() -> Self {
        let space = |n: u32, name: &str, icon: &str| {
            (
                format!("{{0d1b6a2c-51f3-4c7e-9a1e-00000000000{n}}}"),
                name.to_owned(),
                icon.to_owned(),
            )
        };
        ZenSpec {
            last_collected: 1_790_000_000_000,
            spaces: vec![
                space(1, "Work", "💼"),
                space(2, "Home \"sweet\" home", "🏠"),
                space(
                    3,
                    "Research",
                    "chrome://browser/skin/zen-icons/selectable/book.svg",
                ),
            ],
            tabs_per_space: 3,
            essentials: 2,
            tag: "alpha".to_owned(),
        }
    }
}

/// Both files' JSON, one moment.
#[derive(Debug, Clone)]
pub struct ZenFiles {
    /// Firefox's session (`sessionstore.jsonlz4` once compressed).
    pub sessionstore: String,
    /// Zen's sessions file (`zen-sessions.jsonlz4` once compressed).
    pub zen_sessions: String,
}

const FOLDER_ID: &str = "1790000000000-17";

fn tab(spec: &ZenSpec, n: usize, space: Option<&str>, pinned: bool, essential: bool) -> Value {
    let slug = space.map_or("essential", |_| "space");
    let url = format!("https://{slug}{n}.example/{}/page", spec.tag);
    json!({
        "entries": [
            {"url": format!("https://{slug}{n}.example/"), "title": format!("{} start {n}", spec.tag),
             "cacheKey": 0, "ID": n * 2, "docshellUUID": format!("{{00000000-0000-0000-0000-{n:012}}}"),
             "triggeringPrincipal_base64": "{\"3\":{}}", "hasUserInteraction": true, "persist": true},
            {"url": url, "title": format!("{} page {n} of {}", spec.tag, space.unwrap_or("essentials")),
             "cacheKey": 0, "ID": n * 2 + 1, "referrerInfo": "BBoSnxDOS9qmDeAnom1e0AAAAAAAAAAAwAAAAAAAAEYAAAAAAAEBAAAAAAEAIC7W",
             "triggeringPrincipal_base64": "{\"3\":{}}", "hasUserInteraction": false, "persist": true}
        ],
        "lastAccessed": spec.last_collected - 60_000 * n as u64,
        "hidden": false,
        "pinned": pinned || essential,
        "attributes": {},
        "userContextId": 0,
        "index": 2,
        "requestedIndex": 0,
        "image": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ",
        "searchMode": null,
        "zenWorkspace": space,
        "zenPinnedId": if pinned || essential { json!(format!("{{pin-{n}}}")) } else { Value::Null },
        "zenEssential": if essential { json!("true") } else { Value::Null },
        "zenDefaultUserContextId": null,
        "zenPinnedEntry": null,
        "zenPinnedIcon": null,
        "zenIsEmpty": false,
        "zenHasStaticLabel": false,
        "zenAllowSplit": false,
        "zenSyncId": format!("{}-{n}", spec.last_collected - 86_400_000),
        "_zenIsActiveTab": true
    })
}

/// The tabs, folders and spaces of the one window, as Zen collects them.
fn window_parts(spec: &ZenSpec) -> (Vec<Value>, Value, Value) {
    let mut tabs = Vec::new();
    let mut n = 1;
    for _ in 0..spec.essentials {
        tabs.push(tab(spec, n, None, false, true));
        n += 1;
    }
    for (s, (uuid, _, _)) in spec.spaces.iter().enumerate() {
        for i in 0..spec.tabs_per_space {
            let mut t = tab(spec, n, Some(uuid), i == 0, false);
            if s == 0 && i == 0 {
                t["groupId"] = json!(FOLDER_ID);
            }
            tabs.push(t);
            n += 1;
        }
    }
    let first = spec.spaces.first().map(|s| s.0.as_str());
    let folders = json!([{
        "pinned": true, "essential": false, "splitViewGroup": false, "id": FOLDER_ID,
        "name": "Reading", "collapsed": false, "saveOnWindowClose": true, "parentId": null,
        "prevSiblingInfo": {"type": "start", "id": null}, "emptyTabIds": [], "userIcon": null,
        "workspaceId": first
    }]);
    let spaces: Vec<Value> = spec
        .spaces
        .iter()
        .map(|(uuid, name, icon)| {
            json!({"uuid": uuid, "name": name, "icon": icon, "containerTabId": 0,
                   "theme": {"type": "gradient", "gradientColors": [], "opacity": 0.5,
                             "rotation": 45, "texture": 0},
                   "hasCollapsedPinnedTabs": false})
        })
        .collect();
    (tabs, folders, Value::Array(spaces))
}

/// `pairs` as one JSON object, keys in the order given.
fn ordered(pairs: &[(&str, Value)]) -> String {
    let fields: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}:{}", Value::from(*k), crate::firefox_json(v)))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// The two files of one moment of a Zen profile.
pub fn zen_files(spec: &ZenSpec) -> ZenFiles {
    let (tabs, folders, spaces) = window_parts(spec);
    let zen_sessions = ordered(&[
        ("lastCollected", json!(spec.last_collected)),
        ("tabs", Value::Array(tabs.clone())),
        ("folders", folders.clone()),
        ("splitViewData", json!([])),
        ("groups", json!([])),
        ("spaces", spaces.clone()),
    ]);
    let last_update = spec.last_collected - 3;
    let window = json!({
        "tabs": tabs, "selected": 1, "_closedTabs": [], "groups": [], "folders": folders,
        "splitViewData": [], "spaces": spaces,
        "activeZenSpace": spec.spaces.first().map(|s| s.0.as_str()),
        "width": 1280, "height": 800, "screenX": 0, "screenY": 0, "sizemode": "normal"
    });
    let sessionstore = crate::firefox_json(&json!({
        "version": ["sessionrestore", 1],
        "windows": [window],
        "selectedWindow": 1,
        "_closedWindows": [],
        "session": {"lastUpdate": last_update, "startTime": last_update - 3_600_000, "recentCrashes": 0},
        "global": {},
        "savedGroups": []
    }));
    ZenFiles {
        sessionstore,
        zen_sessions,
    }
}
