//! The timeline of every kept snapshot, and one snapshot as Firefox shows
//! it: read as `list`, `stats` and `tabs` read them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anyhow::Result;
use axum::extract::{Path, State};
use ffsession::session::{TabFilter, TabRecord, TabState};
use ffsession::sources::SourceKind;
use ffsession::store::{SnapshotId, SnapshotInfo, Store};
use ffsession::SessionData;
use maud::{html, Markup};

use super::layout::{csrf, favicon, page, time, title_url};
use super::{blocking, App, WebError};
use crate::fmt::{count, escape};

pub async fn timeline(State(app): State<Arc<App>>) -> Result<Markup, WebError> {
    blocking(move || Ok(render_timeline(&app)?)).await
}

pub async fn snapshot(
    State(app): State<Arc<App>>,
    Path(id): Path<i64>,
) -> Result<Markup, WebError> {
    blocking(move || Ok(render_snapshot(&app, SnapshotId(id))?)).await
}

/// What to mark on a snapshot: a damaged file (a crash alarm), a damage
/// found later, an upgrade copy, an undo point of a restore or tidy, a
/// restored session.
fn marks(store: &Store, snapshots: &[SnapshotInfo]) -> Result<HashMap<SnapshotId, Vec<String>>> {
    let mut out: HashMap<SnapshotId, Vec<String>> = HashMap::new();
    for s in snapshots {
        if let ffsession::store::SnapshotStatus::Corrupt { reason } = &s.status {
            out.entry(s.id)
                .or_default()
                .push(format!("alarm: damaged file ({reason})"));
        }
        if s.kind == SourceKind::Upgrade {
            out.entry(s.id).or_default().push("upgrade".to_owned());
        }
    }
    for (id, what) in store.damage_marks()? {
        out.entry(id).or_default().push(format!("DAMAGED: {what}"));
    }
    for p in store.undo_points()? {
        for id in &p.snapshots {
            out.entry(*id)
                .or_default()
                .push(format!("undo point of a {}", p.action));
        }
        if let Some(id) = p.restored {
            out.entry(id).or_default().push("restored".to_owned());
        }
    }
    Ok(out)
}

fn render_timeline(app: &App) -> Result<Markup> {
    let store = app.store()?;
    // Newest first by the session's own time, as `restore latest` orders
    // them (a restored session counts from its restore), not by id.
    let snapshots = ffsession::restore::newest_first(&store)?;
    let marks = marks(&store, &snapshots)?;
    let mut by_profile: BTreeMap<&str, Vec<&SnapshotInfo>> = BTreeMap::new();
    for s in &snapshots {
        by_profile.entry(&s.profile).or_default().push(s);
    }
    let body = html! {
        @if snapshots.is_empty() { p { "No snapshots yet: take one with " code { "ffsession backup" } "." } }
        @for (profile, list) in &by_profile {
            section.profile {
                h2 { "Profile " (escape(profile)) " (" (count(list.len(), "snapshot", "snapshots")) ")" }
                (chart(app, list, &marks))
                p.legend { span.k.tabs { "tabs" } " " span.k.windows { "windows" } " " span.k.alarm { "marked" } " (click a point to open its snapshot)" }
            }
        }
        h2 { "Snapshots, newest session first" }
        table.snapshots {
            thead { tr { th { "#" } th { "session time" } th { "profile" } th { "file" } th { "windows" } th { "tabs" } th { "closed" } th { "marks" } } }
            tbody {
                @for s in &snapshots {
                    tr {
                        td { a href=(app.url(&format!("/snapshot/{}", s.id))) { "#" (s.id) } }
                        td { (time(Some(s.session_time_ms()))) }
                        td { (escape(&s.profile)) }
                        td { (escape(&s.file_name)) }
                        @match s.counts {
                            Some(c) => { td { (c.windows) } td { (c.tabs) } td { (c.closed_tabs) } },
                            None => { td {} td {} td {} },
                        }
                        td.marks { @for m in marks.get(&s.id).into_iter().flatten() { span.mark { (escape(m)) } " " } }
                    }
                }
            }
        }
    };
    Ok(page(app, "Timeline", body))
}

/// Tabs and windows over session time, one point per snapshot, each a link.
fn chart(app: &App, list: &[&SnapshotInfo], marks: &HashMap<SnapshotId, Vec<String>>) -> Markup {
    let mut list: Vec<&SnapshotInfo> = list.to_vec();
    list.sort_by_key(|s| (s.session_time_ms(), s.id));
    let (w, h, pad) = (900.0_f64, 220.0_f64, 30.0_f64);
    let t0 = list.first().map_or(0, |s| s.session_time_ms()) as f64;
    let t1 = list.last().map_or(0, |s| s.session_time_ms()) as f64;
    let span = (t1 - t0).max(1.0);
    let max_tabs = list
        .iter()
        .filter_map(|s| s.counts.map(|c| c.tabs))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let max_windows = list
        .iter()
        .filter_map(|s| s.counts.map(|c| c.windows))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let x = |s: &SnapshotInfo| {
        if list.len() == 1 {
            w / 2.0
        } else {
            pad + (s.session_time_ms() as f64 - t0) / span * (w - 2.0 * pad)
        }
    };
    let y = |v: u64, max: f64| h - pad - v as f64 / max * (h - 2.0 * pad);
    let line = |windows: bool| -> String {
        list.iter()
            .filter_map(|s| {
                let c = s.counts?;
                let (v, max) = if windows {
                    (c.windows, max_windows)
                } else {
                    (c.tabs, max_tabs)
                };
                Some(format!("{:.1},{:.1}", x(s), y(v, max)))
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    html! {
        svg.chart viewBox=(format!("0 0 {w} {h}")) role="img" {
            text x="2" y="14" class="axis" { "tabs (max " (max_tabs) "), windows (max " (max_windows) ")" }
            polyline.tabs points=(line(false)) {}
            polyline.windows points=(line(true)) {}
            @for s in &list {
                @let marked = marks.contains_key(&s.id);
                @let tabs = s.counts.map_or(0, |c| c.tabs);
                a href=(app.url(&format!("/snapshot/{}", s.id))) {
                    circle cx=(format!("{:.1}", x(s))) cy=(format!("{:.1}", y(tabs, max_tabs)))
                        r=(if marked { "6" } else { "4" }) class=(if marked { "alarm" } else { "point" }) {
                        title {
                            "#" (s.id) " " (time(Some(s.session_time_ms()))) ": "
                            @match s.counts { Some(c) => { (count(c.windows as usize, "window", "windows")) ", " (count(c.tabs as usize, "tab", "tabs")) }, None => { "damaged" } }
                            @for m in marks.get(&s.id).into_iter().flatten() { "; " (escape(m)) }
                        }
                    }
                }
            }
        }
    }
}

/// The favicons of the open tabs, by (window, position), 1-based.
fn favicons(json: &[u8]) -> HashMap<(usize, usize), String> {
    #[derive(serde::Deserialize)]
    struct Doc {
        #[serde(default)]
        windows: Vec<Win>,
    }
    #[derive(serde::Deserialize)]
    struct Win {
        #[serde(default)]
        tabs: Vec<T>,
    }
    #[derive(serde::Deserialize)]
    struct T {
        #[serde(default)]
        image: Option<serde_json::Value>,
    }
    let Ok(doc) = serde_json::from_slice::<Doc>(json) else {
        return HashMap::new();
    };
    let mut out = HashMap::new();
    for (wi, w) in doc.windows.into_iter().enumerate() {
        for (ti, t) in w.tabs.into_iter().enumerate() {
            if let Some(serde_json::Value::String(s)) = t.image {
                if favicon(Some(&s)).is_some() {
                    out.insert((wi + 1, ti + 1), s);
                }
            }
        }
    }
    out
}

/// A table of tabs, each with a box to pick it (`kind` names its list).
fn tab_table(
    id: SnapshotId,
    kind: char,
    tabs: &[&TabRecord<'_>],
    icons: &HashMap<(usize, usize), String>,
) -> Markup {
    html! {
        table.tabs {
            @for t in tabs {
                tr.tab {
                    td { input type="checkbox" name="pick" value=(format!("{kind}:{id}:{}:{}", t.window, t.position)) aria-label="pick this tab"; }
                    td.icon {
                        @if let Some(src) = icons.get(&(t.window, t.position)).filter(|_| kind == 't') {
                            img src=(src) alt="" width="16" height="16";
                        }
                    }
                    td { (title_url(t.title, t.url)) }
                    td.flags {
                        @if t.pinned { span.flag { "pinned" } " " }
                        @if t.selected { span.flag { "selected" } " " }
                        @if t.hidden { span.flag { "hidden" } " " }
                        @if t.container != 0 { span.flag { "container " (t.container) } " " }
                        @if let Some(g) = t.group { span.flag.group { "group " (escape(g)) } }
                    }
                    td.when {
                        @if let Some(c) = t.closed_at { "closed " (time(Some(c))) }
                        @else if t.last_accessed.is_some() { "used " (time(t.last_accessed)) }
                    }
                }
            }
        }
    }
}

fn render_snapshot(app: &App, id: SnapshotId) -> Result<Markup> {
    let store = app.store()?;
    let info = store.snapshot(id)?;
    let all = ffsession::restore::newest_first(&store)?;
    let title = format!("Snapshot #{id}");
    let head = html! {
        p.info {
            (escape(&info.profile)) ", " (escape(&info.file_name)) ", session of " (time(Some(info.session_time_ms())))
            ", taken " (time(Some(info.taken_at_ms)))
        }
        p.actions {
            a.button href=(app.url(&format!("/plan?action=restore&snapshot={id}"))) { "Restore this whole snapshot…" }
            " "
            form.inline method="get" action=(app.url("/diff")) {
                input type="hidden" name="a" value=(id.0);
                label { "Compare with " select name="b" {
                    @for s in &all { @if s.id != id { option value=(s.id.0) { "#" (s.id) " " (time(Some(s.session_time_ms()))) } } }
                } }
                " " button type="submit" { "Diff" }
            }
        }
    };
    if let ffsession::store::SnapshotStatus::Corrupt { reason } = &info.status {
        let body = html! {
            (head)
            p.alarm { "This file was damaged when it was taken: " (escape(reason)) }
            p { a.button href=(app.url(&format!("/plan?action=rescue&snapshot={id}"))) { "Rescue its complete tabs and restore them…" } }
        };
        return Ok(page(app, &title, body));
    }
    let json = store.read_json(id)?;
    let icons = favicons(&json);
    let data = SessionData::from_bytes(format!("snapshot {id}"), json)?;
    let session = data.parse()?;
    let records: Vec<TabRecord<'_>> = session
        .tab_records(TabFilter {
            window: None,
            include_closed: true,
        })
        .collect();
    let archived = store.archived_in(id)?;
    let of = |state: TabState, window: usize| {
        records
            .iter()
            .filter(|r| r.state == state && r.window == window)
            .collect::<Vec<_>>()
    };
    let body = html! {
        (head)
        form method="post" action=(app.url("/picks")) {
            (csrf(app))
            p.toolbar {
                input id="filter" type="search" placeholder="Filter tabs by title or URL" autocomplete="off";
                " " button type="submit" { "Pick the checked tabs, windows and groups" }
            }
            @for (wi, w) in session.windows.iter().enumerate() {
                @let n = wi + 1;
                @let open = of(TabState::Open, n);
                section.window {
                    h2 {
                        label { input type="checkbox" name="pick" value=(format!("w:{id}:{n}")); " Window " (n) }
                        " (" (count(open.len(), "tab", "tabs")) ")"
                        @if let Some(t) = &w.title { " " span.wtitle { (escape(t)) } }
                    }
                    @if !w.groups.is_empty() {
                        p.groups { "Tab groups: "
                            @for g in &w.groups {
                                @let name = g.name.as_deref().or(g.id.as_deref()).unwrap_or("");
                                label.group { input type="checkbox" name="pick" value=(format!("g:{id}:{n}:{name}")); " " (escape(name))
                                    @if let Some(c) = &g.color { " (" (escape(c)) ")" }
                                    @if g.collapsed { " collapsed" } }
                                " "
                            }
                        }
                    }
                    (tab_table(id, 't', &open, &icons))
                    @let closed = of(TabState::Closed, n);
                    @if !closed.is_empty() {
                        details { summary { (count(closed.len(), "recently closed tab", "recently closed tabs")) } (tab_table(id, 'c', &closed, &icons)) }
                    }
                }
            }
            @for (wi, w) in session.closed_windows.iter().enumerate() {
                @let n = wi + 1;
                @let tabs = of(TabState::ClosedWindow, n);
                section.window.closed {
                    details {
                        summary { label { input type="checkbox" name="pick" value=(format!("k:{id}:{n}")); " Closed window " (n) } " (" (count(tabs.len(), "tab", "tabs"))
                            @if let Some(c) = w.closed_at { ", closed " (time(Some(c))) } ")" }
                        (tab_table(id, 'x', &tabs, &icons))
                    }
                }
            }
            @if !session.saved_groups.is_empty() {
                section.window.closed {
                    h2 { "Saved tab groups (" (session.saved_groups.len()) ")" }
                    @for g in &session.saved_groups {
                        details {
                            summary { (escape(g.name.as_deref().or(g.id.as_deref()).unwrap_or("")))
                                @if let Some(c) = &g.color { " (" (escape(c)) ")" }
                                ", " (count(g.tabs.len(), "tab", "tabs")) }
                            ul { @for t in &g.tabs {
                                @let e = t.state.index.and_then(|i| usize::try_from(i).ok()?.checked_sub(1)).and_then(|i| t.state.entries.get(i)).or(t.state.entries.last());
                                li { (title_url(e.and_then(|e| e.title.as_deref()).or(t.title.as_deref()), e.and_then(|e| e.url.as_deref()))) }
                            } }
                        }
                    }
                }
            }
            @if !archived.is_empty() {
                section.window.archived {
                    h2 { "Archived by tidy (" (archived.len()) ")" }
                    table.tabs {
                        @for (i, a) in archived.iter().enumerate() {
                            tr.tab {
                                td { input type="checkbox" name="pick" value=(format!("a:{id}:{i}")) aria-label="pick this tab"; }
                                td.icon {}
                                td { (title_url(Some(&a.title), Some(&a.url))) }
                                td.flags { span.flag { (escape(&a.reason)) } }
                                td.when { "archived " (time(Some(a.archived_at_ms))) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(app, &title, body))
}
