//! A window object read raw: its members, its tabs, the model's reading of
//! each tab, its groups; and the recently closed tabs and windows read the
//! same way, for `extract` to reopen them.

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Key, RawDoc, RawGroup, RawList, RawObject, RawWindow};
use crate::session::Tab;

#[derive(Deserialize)]
struct GroupFacts {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    name: Option<serde_json::Value>,
}

fn as_text(v: Option<serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A window read in one pass: its members, with `tabs` read as a raw list.
pub(super) struct WindowDe<'a>(
    pub(super) RawObject<'a>,
    pub(super) Vec<&'a RawValue>,
    pub(super) u64,
);

impl<'de> Deserialize<'de> for WindowDe<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WindowDe<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a window object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WindowDe<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
                let mut tabs = Vec::new();
                let mut len = 2u64;
                while let Some(Key(k)) = map.next_key()? {
                    len += k.len() as u64 + 3 + u64::from(!members.is_empty());
                    if k == "tabs" {
                        tabs = map.next_value::<RawList<'de>>()?.0;
                        len += 2 + tabs.iter().map(|t| t.get().len() as u64 + 1).sum::<u64>();
                        len -= u64::from(!tabs.is_empty());
                        members.push((k, RawValue::NULL));
                    } else {
                        let v = map.next_value::<&'de RawValue>()?;
                        len += v.get().len() as u64;
                        members.push((k, v));
                    }
                }
                Ok(WindowDe(RawObject(members), tabs, len))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> RawDoc<'a> {
    /// The recently closed windows (`_closedWindows`), read as open ones are.
    pub(crate) fn closed_windows(&self) -> Result<Vec<RawWindow<'a>>, String> {
        let Some(raw) = self.top.get("_closedWindows") else {
            return Ok(Vec::new());
        };
        let list: Vec<WindowDe<'a>> = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        Ok(list.into_iter().map(|w| window_of(w, None)).collect())
    }
}

impl<'a> RawWindow<'a> {
    /// The window's recently closed tabs (`_closedTabs`), raw.
    pub(crate) fn closed_tabs(&self) -> Vec<&'a RawValue> {
        self.obj
            .get("_closedTabs")
            .and_then(|c| serde_json::from_str::<RawList<'a>>(c.get()).ok())
            .map_or_else(Vec::new, |l| l.0)
    }
}

/// A window read by [`WindowDe`], with the model's facts of its tabs when
/// they line up, else each tab read on its own.
pub(super) fn window_of<'a>(w: WindowDe<'a>, facts: Option<Vec<Tab<'a>>>) -> RawWindow<'a> {
    let WindowDe(obj, tabs, len) = w;
    let facts: Vec<Option<Tab<'a>>> = match facts {
        Some(f) => f.into_iter().map(Some).collect(),
        None => tabs
            .iter()
            .map(|t| serde_json::from_str::<Tab<'a>>(t.get()).ok())
            .collect(),
    };
    let selected = obj
        .get("selected")
        .and_then(|s| serde_json::from_str::<f64>(s.get()).ok())
        .filter(|s| *s >= 1.0)
        .map(|s| s as u64);
    let groups = match obj.get("groups") {
        Some(g) => serde_json::from_str::<RawList<'a>>(g.get())
            .map(|l| l.0)
            .unwrap_or_default()
            .into_iter()
            .map(|raw| {
                let f = serde_json::from_str::<GroupFacts>(raw.get()).ok();
                let (id, name) = f.map_or((None, None), |f| (as_text(f.id), as_text(f.name)));
                RawGroup { raw, id, name }
            })
            .collect(),
        None => Vec::new(),
    };
    RawWindow {
        len,
        obj,
        tabs,
        facts,
        selected,
        groups,
    }
}
