//! What Firefox needs of a window to defer a session.
//!
//! At its default start, Firefox defers the previous session (it waits
//! behind History > Restore Previous Session), and to do so it reads every
//! window's `_closedTabs` and `closedGroups` lists and looks up the group of
//! every grouped tab (`_prepDataForDeferredRestore` in `SessionStore.sys.mjs`)
//! without checking that they are there. A window Firefox wrote always has
//! them, but it writes them after the window's `tabs`, and so does `groups`:
//! a window cut by damage keeps its complete tabs and loses the rest. Given
//! such a window, Firefox throws, logs "The session file is invalid" and
//! sets nothing aside (seen with Firefox ESR 153 in the real-Firefox suite).
//!
//! So a rescue gives a window that lacks them empty `_closedTabs` and
//! `closedGroups` lists (no closed tab is claimed), and removes the `groupId`
//! member of a tab whose window has no group of that id: the tab is kept,
//! ungrouped. No other byte changes.

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::tidy::raw::RawObject;

/// Make `json` (a salvaged session) one Firefox can defer: remove the
/// `groupId` of every open tab whose window has no group of that id, and give
/// every window the lists it lacks. Returns how many tabs lost their group.
pub(super) fn make_deferrable(json: &mut Vec<u8>) -> usize {
    let Some(edits) = std::str::from_utf8(json).ok().and_then(edits) else {
        return 0;
    };
    let ungrouped = edits.iter().filter(|e| e.insert.is_empty()).count();
    for edit in edits.iter().rev() {
        json.splice(edit.at.clone(), edit.insert.bytes());
    }
    ungrouped
}

/// Replace the bytes `at` by `insert`.
struct Edit {
    at: Range<usize>,
    insert: String,
}

/// The lists every window needs.
const LISTS: [&str; 2] = ["_closedTabs", "closedGroups"];

#[derive(Deserialize)]
struct Group {
    id: Option<String>,
}

/// The edits to make, in order.
fn edits(text: &str) -> Option<Vec<Edit>> {
    let top = RawObject::parse(text).ok()?;
    let windows: Vec<&RawValue> = serde_json::from_str(top.get("windows")?.get()).ok()?;
    let mut cuts = Vec::new();
    for window in windows {
        let raw_window = window;
        let Ok(window) = RawObject::parse(window.get()) else {
            continue;
        };
        let missing: Vec<&str> = LISTS
            .into_iter()
            .filter(|k| window.get(k).is_none())
            .collect();
        let ids: Vec<String> = window
            .get("groups")
            .and_then(|g| serde_json::from_str::<Vec<Group>>(g.get()).ok())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|g| g.id)
            .collect();
        let tabs = window
            .get("tabs")
            .and_then(|t| serde_json::from_str::<Vec<&RawValue>>(t.get()).ok())
            .unwrap_or_default();
        for tab in tabs {
            let Some(value) = RawObject::parse(tab.get())
                .ok()
                .and_then(|t| t.get("groupId"))
            else {
                continue;
            };
            // What JavaScript reads as false names no group.
            let raw = value.get();
            if matches!(raw, "null" | "false" | "\"\"" | "0") {
                continue;
            }
            let id: Option<String> = serde_json::from_str(raw).ok();
            if id.is_some_and(|id| ids.contains(&id)) {
                continue;
            }
            if let Some(at) = member(text, value) {
                cuts.push(Edit {
                    at,
                    insert: String::new(),
                });
            }
        }
        if !missing.is_empty() {
            // Before the window's closing brace.
            let end = raw_window.get().as_ptr() as usize - text.as_ptr() as usize
                + raw_window.get().len()
                - 1;
            let lists: Vec<String> = missing.iter().map(|k| format!("\"{k}\":[]")).collect();
            let comma = if window.0.is_empty() { "" } else { "," };
            cuts.push(Edit {
                at: end..end,
                insert: format!("{comma}{}", lists.join(",")),
            });
        }
    }
    Some(cuts)
}

/// The range of the `"groupId": value` member whose value is `value` (a
/// slice of `text`), with one comma beside it. `None` if the key is not
/// written plainly.
fn member(text: &str, value: &RawValue) -> Option<Range<usize>> {
    let b = text.as_bytes();
    let start = value.get().as_ptr() as usize - text.as_ptr() as usize;
    let end = start + value.get().len();
    let is_space = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let before = |at: usize| at - b[..at].iter().rev().take_while(|c| is_space(c)).count();
    let colon = before(start).checked_sub(1)?;
    let key_end = before(colon);
    let key = key_end.checked_sub(b"\"groupId\"".len())?;
    if b[colon] != b':' || &b[key..key_end] != b"\"groupId\"" {
        return None;
    }
    let after = end + b[end..].iter().take_while(|c| is_space(c)).count();
    if b.get(after) == Some(&b',') {
        return Some(key..after + 1);
    }
    let comma = before(key).checked_sub(1)?;
    Some(if b[comma] == b',' {
        comma..end
    } else {
        key..end
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ungrouped(json: &str) -> (String, usize) {
        let mut bytes = json.as_bytes().to_vec();
        let n = make_deferrable(&mut bytes);
        (String::from_utf8(bytes).unwrap(), n)
    }

    #[test]
    fn a_tab_whose_group_was_cut_is_kept_ungrouped() {
        let json = r#"{"windows":[{"tabs":[{"groupId":"g1","entries":[]},{"entries":[], "groupId" : "g1" ,"index":1},{"entries":[],"groupId":"g2"},{"groupId":"g2"}]}]}"#;
        let (out, n) = ungrouped(json);
        assert_eq!(n, 4);
        assert_eq!(
            out,
            r#"{"windows":[{"tabs":[{"entries":[]},{"entries":[], "index":1},{"entries":[]},{}],"_closedTabs":[],"closedGroups":[]}]}"#
        );
    }

    #[test]
    fn groups_the_window_has_and_other_bytes_stay() {
        let json = r#"{"windows":[{"tabs":[{"groupId":"g1","entries":[]},{"groupId":"g9"},{"groupId":null}],"groups":[{"id":"g1","name":"x"}]},{"tabs":[{"groupId":"g1"}]}],"_closedWindows":[{"tabs":[{"groupId":"g5"}]}]}"#;
        let (out, n) = ungrouped(json);
        // g9 is not among the first window's groups, and the second window
        // has none; windows get the lists they lack; closed windows are left
        // as they are.
        assert_eq!(n, 2);
        assert_eq!(
            out,
            r#"{"windows":[{"tabs":[{"groupId":"g1","entries":[]},{},{"groupId":null}],"groups":[{"id":"g1","name":"x"}],"_closedTabs":[],"closedGroups":[]},{"tabs":[{}],"_closedTabs":[],"closedGroups":[]}],"_closedWindows":[{"tabs":[{"groupId":"g5"}]}]}"#
        );
        let whole = r#"{"windows":[{"tabs":[{"groupId":"g1"}],"groups":[{"id":"g1"}],"_closedTabs":[],"closedGroups":[]},{"_closedTabs":[{}],"closedGroups":[]}]}"#;
        assert_eq!(ungrouped(whole), (whole.to_string(), 0));
        assert_eq!(ungrouped("not json").1, 0);
    }
}
