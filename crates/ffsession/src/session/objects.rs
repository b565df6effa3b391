//! The reference readers of [`Tab`] and [`Window`], written out rather than
//! derived: besides the model's fields, each keeps the keys the forks
//! registered (`crate::forks`) as raw JSON in its [`ForkData`], which
//! serde's derive cannot do without buffering the whole object
//! (`#[serde(flatten)]`). Each field is read by the same tolerant reader as
//! the derived impls use (`de.rs`), a field given twice is an error, an
//! unknown key is skipped, and only a JSON object is read.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Error, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::de::{Blob, BoolOrNull, List, OptI64, OptId, OptStr, OptU64};
use super::{Tab, Window};
use crate::forks;

/// A key of an object: one of the model's fields (its index in `names`),
/// a fork's key, or another.
enum Key {
    Field(usize),
    Fork(&'static str),
    Other,
}

/// Reads a [`Key`] among `names` and the forks' `fork_keys`.
struct KeyOf {
    names: &'static [&'static str],
    fork_keys: &'static [&'static str],
}

impl<'de> serde::de::DeserializeSeed<'de> for KeyOf {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for KeyOf {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Key, E> {
        self.visit_bytes(v.as_bytes())
    }
    fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Key, E> {
        if let Some(i) = self.names.iter().position(|n| n.as_bytes() == v) {
            return Ok(Key::Field(i));
        }
        Ok(forks::find(self.fork_keys, v).map_or(Key::Other, Key::Fork))
    }
}

/// The fields of a tab, in the order of the bits of [`TabVisitor`]'s `seen`.
const TAB_FIELDS: &[&str] = &[
    "entries",
    "index",
    "pinned",
    "hidden",
    "groupId",
    "userContextId",
    "lastAccessed",
    "userTypedValue",
    "image",
];

struct TabVisitor<'a>(PhantomData<Tab<'a>>);

impl<'de: 'a, 'a> Visitor<'de> for TabVisitor<'a> {
    type Value = Tab<'a>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (Tab)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tab<'a>, A::Error> {
        let mut tab = Tab::default();
        let mut seen = 0u16;
        let keys = || KeyOf {
            names: TAB_FIELDS,
            fork_keys: forks::TAB_KEYS,
        };
        while let Some(key) = map.next_key_seed(keys())? {
            let i = match key {
                Key::Field(i) => i,
                Key::Fork(k) => {
                    let raw: &'de RawValue = map.next_value()?;
                    tab.forks.insert(k, raw.get())?;
                    continue;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen & 1 << i != 0 {
                return Err(A::Error::duplicate_field(TAB_FIELDS[i]));
            }
            seen |= 1 << i;
            match i {
                0 => tab.entries = map.next_value::<List<_>>()?.0,
                1 => tab.index = map.next_value::<OptU64>()?.0,
                2 => tab.pinned = map.next_value::<BoolOrNull>()?.0,
                3 => tab.hidden = map.next_value::<BoolOrNull>()?.0,
                4 => tab.group_id = map.next_value::<OptId>()?.0,
                5 => tab.user_context_id = map.next_value::<OptU64>()?.0,
                6 => tab.last_accessed = map.next_value::<OptU64>()?.0,
                7 => tab.user_typed_value = map.next_value::<OptStr>()?.0,
                _ => tab.image = map.next_value::<Blob>()?.0,
            }
        }
        Ok(tab)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Tab<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TabVisitor(PhantomData))
    }
}

/// The fields of a window, in the order of the bits of [`WindowVisitor`]'s
/// `seen`.
const WINDOW_FIELDS: &[&str] = &[
    "tabs",
    "selected",
    "_closedTabs",
    "groups",
    "width",
    "height",
    "screenX",
    "screenY",
    "sizemode",
    "title",
    "closedAt",
];

struct WindowVisitor<'a>(PhantomData<Window<'a>>);

impl<'de: 'a, 'a> Visitor<'de> for WindowVisitor<'a> {
    type Value = Window<'a>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (Window)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Window<'a>, A::Error> {
        let mut w = Window::default();
        let mut seen = 0u16;
        let keys = || KeyOf {
            names: WINDOW_FIELDS,
            fork_keys: forks::WINDOW_KEYS,
        };
        while let Some(key) = map.next_key_seed(keys())? {
            let i = match key {
                Key::Field(i) => i,
                Key::Fork(k) => {
                    let raw: &'de RawValue = map.next_value()?;
                    w.forks.insert(k, raw.get())?;
                    continue;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen & 1 << i != 0 {
                return Err(A::Error::duplicate_field(WINDOW_FIELDS[i]));
            }
            seen |= 1 << i;
            match i {
                0 => w.tabs = map.next_value::<List<_>>()?.0,
                1 => w.selected = map.next_value::<OptU64>()?.0,
                2 => w.closed_tabs = map.next_value::<List<_>>()?.0,
                3 => w.groups = map.next_value::<List<_>>()?.0,
                4 => w.width = map.next_value::<OptI64>()?.0,
                5 => w.height = map.next_value::<OptI64>()?.0,
                6 => w.screen_x = map.next_value::<OptI64>()?.0,
                7 => w.screen_y = map.next_value::<OptI64>()?.0,
                8 => w.sizemode = map.next_value::<OptStr>()?.0,
                9 => w.title = map.next_value::<OptStr>()?.0,
                _ => w.closed_at = map.next_value::<OptU64>()?.0,
            }
        }
        Ok(w)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Window<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(WindowVisitor(PhantomData))
    }
}
