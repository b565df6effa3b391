//! Session JSON edited as raw values: the members of the top-level object, of
//! each window and of each tab are kept as the bytes Firefox wrote, so a kept
//! tab keeps every field, named in the model or not. Only what an edit changes
//! is written anew: the `tabs` list, `selected`, `selectedWindow`, `groups`,
//! emptied closed lists, and the few keys of a tab whose history is trimmed or
//! whose payload is dropped.
//!
//! Allocation grows with windows and tabs (one small vector of members per
//! object walked), never with the bytes of the values skipped.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::session::Tab;

/// A key as written, borrowed when it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// An object's members in file order, each value as raw bytes.
#[derive(Debug, Default, Clone)]
pub(crate) struct RawObject<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(Key(k)) = map.next_key()? {
                    members.push((k, map.next_value::<&'de RawValue>()?));
                }
                Ok(RawObject(members))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> RawObject<'a> {
    /// Parse `raw` as an object.
    pub(crate) fn parse(raw: &'a str) -> serde_json::Result<Self> {
        serde_json::from_str(raw)
    }

    /// The raw value of member `key` (the last one, as JavaScript reads it).
    pub(crate) fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// One window of a document: its members and its tabs, each tab with the
/// model's reading of it (`None` for an element that is not a tab object,
/// which is kept as it is).
#[derive(Debug)]
pub(crate) struct RawWindow<'a> {
    /// Bytes of the window's JSON as read (compact, as Firefox writes it).
    pub len: u64,
    /// The window object's members (`tabs` stands for [`RawWindow::tabs`]).
    pub obj: RawObject<'a>,
    /// Its tabs, raw.
    pub tabs: Vec<&'a RawValue>,
    /// The model's view of each tab.
    pub facts: Vec<Option<Tab<'a>>>,
    /// `selected`, 1-based.
    pub selected: Option<u64>,
    /// Its `groups`: raw, with id and name.
    pub groups: Vec<RawGroup<'a>>,
}

/// A window's tab group.
#[derive(Debug, Clone)]
pub(crate) struct RawGroup<'a> {
    /// The group object, raw.
    pub raw: &'a RawValue,
    /// Its id.
    pub id: Option<String>,
    /// Its name.
    pub name: Option<String>,
}

/// The elements of a list, raw; anything but a list reads as no elements.
struct RawList<'a>(Vec<&'a RawValue>);

impl<'de> Deserialize<'de> for RawList<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawList<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawList<'de>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(item) = seq.next_element::<&'de RawValue>()? {
                    items.push(item);
                }
                Ok(RawList(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawList<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RawList(Vec::new()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<RawList<'de>, E> {
                Ok(RawList(Vec::new()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<RawList<'de>, E> {
                Ok(RawList(Vec::new()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<RawList<'de>, E> {
                Ok(RawList(Vec::new()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<RawList<'de>, E> {
                Ok(RawList(Vec::new()))
            }
            fn visit_str<E>(self, _: &str) -> Result<RawList<'de>, E> {
                Ok(RawList(Vec::new()))
            }
            fn visit_unit<E>(self) -> Result<RawList<'de>, E> {
                Ok(RawList(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The top-level object read in one pass, `windows` read window by window.
struct TopDe<'a>(RawObject<'a>, Option<Vec<WindowDe<'a>>>);

impl<'de> Deserialize<'de> for TopDe<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TopDe<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a session object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopDe<'de>, A::Error> {
                let mut members = Vec::with_capacity(16);
                let mut windows = None;
                while let Some(Key(k)) = map.next_key()? {
                    if k == "windows" {
                        windows = Some(map.next_value::<Vec<WindowDe<'de>>>()?);
                        members.push((k, RawValue::NULL));
                    } else {
                        members.push((k, map.next_value::<&'de RawValue>()?));
                    }
                }
                Ok(TopDe(RawObject(members), windows))
            }
        }
        d.deserialize_map(V)
    }
}

/// A whole session document, top-level members and windows.
#[derive(Debug)]
pub(crate) struct RawDoc<'a> {
    /// The top-level members (`windows` stands for [`RawDoc::windows`]).
    pub top: RawObject<'a>,
    /// The open windows.
    pub windows: Vec<RawWindow<'a>>,
}

impl<'a> RawDoc<'a> {
    /// `selectedWindow` as a 0-based index.
    pub(crate) fn selected_window(&self) -> Option<usize> {
        self.top
            .get("selectedWindow")
            .and_then(|s| serde_json::from_str::<f64>(s.get()).ok())
            .filter(|s| *s >= 1.0)
            .map(|s| s as usize - 1)
    }

    /// Read session JSON (a top-level object with a `windows` list of
    /// objects) in one pass. `facts` is the model's reading of the same
    /// JSON's open windows; when its windows and tabs line up with the raw
    /// ones it is used as is, else each tab is read on its own.
    pub(crate) fn parse(json: &'a str, facts: Option<Vec<Vec<Tab<'a>>>>) -> Result<Self, String> {
        let TopDe(top, windows) = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let windows = windows.ok_or_else(|| "it has no \"windows\" list".to_owned())?;
        let lines_up = facts.as_ref().is_some_and(|f| {
            f.len() == windows.len() && f.iter().zip(&windows).all(|(f, w)| f.len() == w.1.len())
        });
        let mut facts = if lines_up {
            facts.map(Vec::into_iter)
        } else {
            None
        };
        let mut out = Vec::with_capacity(windows.len());
        for w in windows {
            out.push(window_of(w, facts.as_mut().and_then(Iterator::next)));
        }
        Ok(RawDoc { top, windows: out })
    }
}

/// What happens to one tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TabEdit {
    /// Dropped.
    Remove,
    /// Kept byte for byte.
    Keep,
    /// Kept, rewritten: history trimmed to `trim` entries each side of the
    /// current one, and/or payload dropped.
    Rewrite {
        /// Back/forward entries kept each side of the current one.
        trim: Option<u64>,
        /// Drop `data:` favicons, form data and session storage.
        drop_payload: bool,
    },
}

/// Options of a render that apply to the whole document.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RenderOptions {
    /// Write each window's `_closedTabs` as an empty list.
    pub drop_closed_tabs: bool,
    /// Write `_closedWindows` as an empty list.
    pub drop_closed_windows: bool,
    /// The selected window: an index into the windows rendered.
    pub selected_window: Option<usize>,
    /// A new `session.lastUpdate` (ms since the epoch): an edited session
    /// is a session of the time it was made, newer than its sources.
    pub last_update: Option<u64>,
}

/// A writer that counts the bytes written through it.
pub(crate) struct Counting<W> {
    pub inner: W,
    pub count: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn write_key(w: &mut impl Write, key: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *w, key).map_err(io::Error::other)?;
    w.write_all(b":")
}

/// Write a session: the top-level members of `top` in order, with `windows`
/// made of `windows` (each a window and the edit of each of its tabs; a window
/// left with no tab is dropped) and `selectedWindow` pointing at
/// `opts.selected_window` when it is kept, else at the first window. Returns the bytes written for each window (0 for
/// a dropped one).
pub(crate) fn render<W: Write>(
    out: &mut Counting<W>,
    top: &RawObject<'_>,
    windows: &[(&RawWindow<'_>, &[TabEdit])],
    opts: RenderOptions,
) -> io::Result<Vec<(u64, usize)>> {
    // New 1-based numbers of kept windows.
    let mut new_number = Vec::with_capacity(windows.len());
    let mut kept = 0u64;
    for (w, edits) in windows {
        let empty_now = !w.tabs.is_empty() && edits.iter().all(|e| *e == TabEdit::Remove);
        if empty_now {
            new_number.push(None);
        } else {
            kept += 1;
            new_number.push(Some(kept));
        }
    }
    let mut sizes = vec![(0u64, 0usize); windows.len()];
    out.write_all(b"{")?;
    for (i, (key, value)) in top.0.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_key(out, key)?;
        match key.as_ref() {
            "windows" => {
                out.write_all(b"[")?;
                let mut first = true;
                for (n, (w, edits)) in windows.iter().enumerate() {
                    if new_number[n].is_none() {
                        continue;
                    }
                    if !first {
                        out.write_all(b",")?;
                    }
                    first = false;
                    let before = out.count;
                    let rewritten = render_window(out, w, edits, opts)?;
                    sizes[n] = (out.count - before, rewritten);
                }
                out.write_all(b"]")?;
            }
            "selectedWindow" => {
                let new = opts
                    .selected_window
                    .and_then(|i| new_number.get(i).copied().flatten())
                    .unwrap_or(if kept > 0 { 1 } else { 0 });
                write!(out, "{new}")?;
            }
            "_closedWindows" if opts.drop_closed_windows => out.write_all(b"[]")?,
            "session" if opts.last_update.is_some() => {
                write_session(out, value, opts.last_update.unwrap_or(0))?;
            }
            _ => out.write_all(value.get().as_bytes())?,
        }
    }
    out.write_all(b"}")?;
    Ok(sizes)
}

/// The `session` member with `lastUpdate` set to `last_update`, its other
/// members kept as written (one is added where it had none; a value that is
/// not an object is written as it was).
fn write_session<W: Write>(
    out: &mut Counting<W>,
    value: &RawValue,
    last_update: u64,
) -> io::Result<()> {
    let Ok(obj) = RawObject::parse(value.get()) else {
        return out.write_all(value.get().as_bytes());
    };
    out.write_all(b"{")?;
    let mut written = false;
    for (i, (key, v)) in obj.0.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_key(out, key)?;
        if key == "lastUpdate" {
            write!(out, "{last_update}")?;
            written = true;
        } else {
            out.write_all(v.get().as_bytes())?;
        }
    }
    if !written {
        if !obj.0.is_empty() {
            out.write_all(b",")?;
        }
        write!(out, "\"lastUpdate\":{last_update}")?;
    }
    out.write_all(b"}")
}

fn render_window<W: Write>(
    out: &mut Counting<W>,
    w: &RawWindow<'_>,
    edits: &[TabEdit],
    opts: RenderOptions,
) -> io::Result<usize> {
    let mut rewritten = 0;
    // The new `selected`: the same tab if kept, else the nearest kept tab
    // before it, else the first kept one.
    let old_sel = w
        .selected
        .map_or(1, |s| s.clamp(1, w.tabs.len().max(1) as u64)) as usize;
    let kept_before = |i: usize| edits[..i].iter().filter(|e| **e != TabEdit::Remove).count();
    let new_sel = if w.tabs.is_empty() {
        w.selected.unwrap_or(1)
    } else if edits
        .get(old_sel - 1)
        .is_some_and(|e| *e != TabEdit::Remove)
    {
        kept_before(old_sel - 1) as u64 + 1
    } else {
        kept_before(old_sel - 1).max(1) as u64
    };
    // Groups that only removed tabs belonged to go with them.
    let group_used = |id: &str| {
        w.facts.iter().zip(edits).any(|(f, e)| {
            *e != TabEdit::Remove && f.as_ref().and_then(|f| f.group_id.as_deref()) == Some(id)
        })
    };
    let group_had_tabs = |id: &str| {
        w.facts
            .iter()
            .any(|f| f.as_ref().and_then(|f| f.group_id.as_deref()) == Some(id))
    };
    out.write_all(b"{")?;
    for (i, (key, value)) in w.obj.0.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_key(out, key)?;
        match key.as_ref() {
            "tabs" => {
                out.write_all(b"[")?;
                let mut first = true;
                for (tab, edit) in w.tabs.iter().zip(edits) {
                    if *edit == TabEdit::Remove {
                        continue;
                    }
                    if !first {
                        out.write_all(b",")?;
                    }
                    first = false;
                    match *edit {
                        TabEdit::Rewrite { trim, drop_payload } => {
                            rewritten += usize::from(rewrite_tab(out, tab, trim, drop_payload)?);
                        }
                        _ => out.write_all(tab.get().as_bytes())?,
                    }
                }
                out.write_all(b"]")?;
            }
            "selected" => write!(out, "{new_sel}")?,
            "_closedTabs" if opts.drop_closed_tabs => out.write_all(b"[]")?,
            "groups" if !w.groups.is_empty() => {
                out.write_all(b"[")?;
                let mut first = true;
                for g in &w.groups {
                    if let Some(id) = &g.id {
                        if group_had_tabs(id) && !group_used(id) {
                            continue;
                        }
                    }
                    if !first {
                        out.write_all(b",")?;
                    }
                    first = false;
                    out.write_all(g.raw.get().as_bytes())?;
                }
                out.write_all(b"]")?;
            }
            _ => out.write_all(value.get().as_bytes())?,
        }
    }
    out.write_all(b"}")?;
    Ok(rewritten)
}

/// The range of entries kept when at most `trim` entries are kept each side
/// of the current one, and the new 1-based index; `None` if all are kept.
pub(crate) fn trimmed_range(
    len: usize,
    index: Option<u64>,
    trim: u64,
) -> Option<(usize, usize, u64)> {
    if len == 0 {
        return None;
    }
    let cur = match index {
        Some(i) if i >= 1 => (i as usize).min(len),
        _ => len,
    } - 1;
    let n = usize::try_from(trim).unwrap_or(usize::MAX);
    let start = cur.saturating_sub(n);
    let end = cur.saturating_add(n).saturating_add(1).min(len);
    if start == 0 && end == len {
        return None;
    }
    Some((start, end, (cur - start + 1) as u64))
}

/// True for a member dropped by `--drop-payload`.
pub(crate) fn is_payload(key: &str, value: &RawValue) -> bool {
    match key {
        "formdata" | "storage" => true,
        "image" => value.get().starts_with("\"data:"),
        _ => false,
    }
}

/// Write a tab with its history trimmed and/or its payload dropped; every
/// other member as it was. True if anything changed.
fn rewrite_tab<W: Write>(
    out: &mut Counting<W>,
    tab: &RawValue,
    trim: Option<u64>,
    drop_payload: bool,
) -> io::Result<bool> {
    let Ok(obj) = RawObject::parse(tab.get()) else {
        out.write_all(tab.get().as_bytes())?;
        return Ok(false);
    };
    let mut changed = false;
    let entries: Vec<&RawValue> = obj
        .get("entries")
        .and_then(|e| serde_json::from_str(e.get()).ok())
        .unwrap_or_default();
    let index = obj
        .get("index")
        .and_then(|i| serde_json::from_str::<f64>(i.get()).ok())
        .map(|i| i as u64);
    let range = trim.and_then(|t| trimmed_range(entries.len(), index, t));
    out.write_all(b"{")?;
    let mut first = true;
    for (key, value) in &obj.0 {
        if drop_payload && is_payload(key, value) {
            changed = true;
            continue;
        }
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        write_key(out, key)?;
        match (key.as_ref(), range) {
            ("entries", Some((start, end, _))) => {
                out.write_all(b"[")?;
                for (i, e) in entries[start..end].iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    out.write_all(e.get().as_bytes())?;
                }
                out.write_all(b"]")?;
            }
            ("index", Some((_, _, new))) => write!(out, "{new}")?,
            _ => out.write_all(value.get().as_bytes())?,
        }
    }
    out.write_all(b"}")?;
    Ok(changed || range.is_some())
}

mod window;
use window::{window_of, WindowDe};

#[cfg(test)]
mod tests;
