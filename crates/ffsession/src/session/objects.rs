//! The reference readers of [`Tab`] and [`Window`], written out rather than
//! derived: besides the model's fields, each keeps the keys the forks
//! registered (`crate::forks`) as raw JSON in its [`ForkData`], which
//! serde's derive cannot do without buffering the whole object
//! (`#[serde(flatten)]`). One reader ([`ObjectVisitor`]) reads both, from
//! each one's table of fields ([`Object`]): each field is read by the same
//! tolerant reader as the derived impls use (`de.rs`), a field given twice
//! is an error, an unknown key is skipped, and only a JSON object is read.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Error, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::de::{Blob, BoolOrNull, List, OptI64, OptId, OptStr, OptU64};
use super::fork_data::ForkData;
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

/// An object of the model that keeps the forks' keys: its fields (at most
/// 16), the forks' keys it keeps, and how each field is read.
trait Object<'a>: Default {
    /// What `expecting` says.
    const NAME: &'static str;
    /// Its fields, in the order [`Object::read`] numbers them.
    const FIELDS: &'static [&'static str];
    /// The forks' keys it keeps (`crate::forks`).
    const FORK_KEYS: &'static [&'static str];
    /// Where the forks' values go.
    fn forks(&mut self) -> &mut ForkData<'a>;
    /// Read field `i` of [`Object::FIELDS`] from `map`'s next value.
    fn read<'de: 'a, A: MapAccess<'de>>(&mut self, i: usize, map: &mut A) -> Result<(), A::Error>;
}

/// The one reader of an [`Object`].
struct ObjectVisitor<T>(PhantomData<T>);

impl<'de: 'a, 'a, T: Object<'a>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON object ({})", T::NAME)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut object = T::default();
        let mut seen = 0u16;
        let keys = || KeyOf {
            names: T::FIELDS,
            fork_keys: T::FORK_KEYS,
        };
        while let Some(key) = map.next_key_seed(keys())? {
            match key {
                Key::Field(i) => {
                    if seen & 1 << i != 0 {
                        return Err(A::Error::duplicate_field(T::FIELDS[i]));
                    }
                    seen |= 1 << i;
                    object.read(i, &mut map)?;
                }
                Key::Fork(k) => {
                    let raw: &'de RawValue = map.next_value()?;
                    object.forks().insert(k, raw.get())?;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(object)
    }
}

/// The keys of a tab the model reads, in [`Object::read`]'s order (the
/// quick tab reader's tests read each of them too).
pub(crate) const TAB_FIELDS: &[&str] = &[
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

impl<'a> Object<'a> for Tab<'a> {
    const NAME: &'static str = "Tab";
    const FIELDS: &'static [&'static str] = TAB_FIELDS;
    const FORK_KEYS: &'static [&'static str] = forks::TAB_KEYS;
    fn forks(&mut self) -> &mut ForkData<'a> {
        &mut self.forks
    }
    fn read<'de: 'a, A: MapAccess<'de>>(&mut self, i: usize, map: &mut A) -> Result<(), A::Error> {
        match i {
            0 => self.entries = map.next_value::<List<_>>()?.0,
            1 => self.index = map.next_value::<OptU64>()?.0,
            2 => self.pinned = map.next_value::<BoolOrNull>()?.0,
            3 => self.hidden = map.next_value::<BoolOrNull>()?.0,
            4 => self.group_id = map.next_value::<OptId>()?.0,
            5 => self.user_context_id = map.next_value::<OptU64>()?.0,
            6 => self.last_accessed = map.next_value::<OptU64>()?.0,
            7 => self.user_typed_value = map.next_value::<OptStr>()?.0,
            _ => self.image = map.next_value::<Blob>()?.0,
        }
        Ok(())
    }
}

impl<'a> Object<'a> for Window<'a> {
    const NAME: &'static str = "Window";
    const FIELDS: &'static [&'static str] = &[
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
    const FORK_KEYS: &'static [&'static str] = forks::WINDOW_KEYS;
    fn forks(&mut self) -> &mut ForkData<'a> {
        &mut self.forks
    }
    fn read<'de: 'a, A: MapAccess<'de>>(&mut self, i: usize, map: &mut A) -> Result<(), A::Error> {
        match i {
            0 => self.tabs = map.next_value::<List<_>>()?.0,
            1 => self.selected = map.next_value::<OptU64>()?.0,
            2 => self.closed_tabs = map.next_value::<List<_>>()?.0,
            3 => self.groups = map.next_value::<List<_>>()?.0,
            4 => self.width = map.next_value::<OptI64>()?.0,
            5 => self.height = map.next_value::<OptI64>()?.0,
            6 => self.screen_x = map.next_value::<OptI64>()?.0,
            7 => self.screen_y = map.next_value::<OptI64>()?.0,
            8 => self.sizemode = map.next_value::<OptStr>()?.0,
            9 => self.title = map.next_value::<OptStr>()?.0,
            _ => self.closed_at = map.next_value::<OptU64>()?.0,
        }
        Ok(())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Tab<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ObjectVisitor(PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Window<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ObjectVisitor(PhantomData))
    }
}
