//! The difference between two snapshots, by the library's `diff` (as
//! `ffsession diff A B`).

use std::sync::Arc;

use anyhow::Result;
use axum::extract::{Query, State};
use ffsession::diff::{self, TabChange};
use ffsession::store::SnapshotId;
use ffsession::SessionData;
use maud::{html, Markup};

use super::layout::{page, time, title_url};
use super::{blocking, App, WebError};
use crate::commands::naming::snapshot_arg;
use crate::fmt::{count, escape};

#[derive(serde::Deserialize)]
pub struct DiffQuery {
    a: Option<i64>,
    b: Option<i64>,
}

pub async fn diff(
    State(app): State<Arc<App>>,
    Query(q): Query<DiffQuery>,
) -> Result<Markup, WebError> {
    blocking(move || Ok(render(&app, q.a, q.b)?)).await
}

fn load(store: &ffsession::store::Store, id: i64) -> Result<SessionData> {
    let json = store.read_json(SnapshotId(id))?;
    Ok(SessionData::from_bytes(format!("snapshot #{id}"), json)?)
}

fn tabs(title: &str, list: &[TabChange<'_>]) -> Markup {
    html! {
        @if !list.is_empty() {
            h2 { (title) " (" (list.len()) ")" }
            table.tabs { @for t in list { tr.tab { td { "window " (t.window) " #" (t.position) } td { (title_url(t.title, t.url)) } } } }
        }
    }
}

fn render(app: &App, a: Option<i64>, b: Option<i64>) -> Result<Markup> {
    let store = app.store()?;
    let all = ffsession::restore::newest_first(&store)?;
    let picker = |name: &str, chosen: Option<i64>| {
        html! {
            select name=(name) {
                @for s in &all {
                    option value=(s.id.0) selected[chosen == Some(s.id.0)] { "#" (s.id) " " (time(Some(s.session_time_ms()))) " " (escape(&s.file_name)) }
                }
            }
        }
    };
    let form = html! {
        form method="get" action=(app.url("/diff")) {
            label { "From " (picker("a", a)) } " " label { "to " (picker("b", b)) } " " button type="submit" { "Compare" }
        }
    };
    let (Some(a), Some(b)) = (a, b) else {
        return Ok(page(app, "Diff", form));
    };
    let (da, db) = (load(&store, a)?, load(&store, b)?);
    let (sa, sb) = (da.parse()?, db.parse()?);
    let d = diff::diff(&sa, &sb);
    let body = html! {
        (form)
        p { "Same as " code { (app.command_line(&["diff", &snapshot_arg(a), &snapshot_arg(b)])) } }
        p.count {
            (count(d.added.len(), "tab", "tabs")) " added, " (d.removed.len()) " removed, " (d.moved.len()) " moved; "
            (count(d.windows_opened.len(), "window", "windows")) " opened, " (d.windows_closed.len()) " closed ("
            (count(d.a.windows, "window", "windows")) ", " (count(d.a.tabs, "tab", "tabs")) " -> "
            (count(d.b.windows, "window", "windows")) ", " (count(d.b.tabs, "tab", "tabs")) ")"
        }
        (tabs("Removed", &d.removed))
        (tabs("Added", &d.added))
        @if !d.moved.is_empty() {
            h2 { "Moved (" (d.moved.len()) ")" }
            table.tabs { @for m in &d.moved { tr.tab { td { "window " (m.from_window) " -> " (m.to_window) } td { (title_url(m.title, m.url)) } } } }
        }
        @for (name, list) in [("Windows closed", &d.windows_closed), ("Windows opened", &d.windows_opened)] {
            @if !list.is_empty() {
                h2 { (name) " (" (list.len()) ")" }
                ul { @for w in list.iter() { li { "window " (w.window) ": " (count(w.tabs, "tab", "tabs")) " " (escape(w.title.unwrap_or(""))) } } }
            }
        }
        p { a href=(app.url(&format!("/snapshot/{a}"))) { "Open #" (a) } " · " a href=(app.url(&format!("/snapshot/{b}"))) { "Open #" (b) } }
    };
    Ok(page(app, &format!("Diff #{a} -> #{b}"), body))
}
