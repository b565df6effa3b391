//! Search every tab ever backed up (the tab index, as `search`), and one
//! URL's history snapshot by snapshot (as `history`).

use std::sync::Arc;

use anyhow::Result;
use axum::extract::{Query, State};
use ffsession::session::TabState;
use ffsession::store::{literal_query, SearchError, TimeRange};
use maud::{html, Markup};

use super::layout::{page, time, title_url};
use super::{blocking, App, WebError};
use crate::fmt::{count, escape};

#[derive(serde::Deserialize)]
pub struct SearchQuery {
    #[serde(default)]
    q: String,
    /// Set by the page's script: only the results, to put under the box.
    #[serde(default)]
    part: Option<String>,
}

#[derive(serde::Deserialize)]
pub struct HistoryQuery {
    url: String,
}

pub async fn search(
    State(app): State<Arc<App>>,
    Query(q): Query<SearchQuery>,
) -> Result<Markup, WebError> {
    blocking(move || {
        let results = results(&app, &q.q)?;
        if q.part.is_some() {
            return Ok(results);
        }
        let body = html! {
            form.search method="get" action=(app.url("/search")) {
                input id="q" type="search" name="q" value=(q.q) placeholder="Words in a title or URL" autofocus autocomplete="off";
                " " button type="submit" { "Search" }
            }
            div id="results" { (results) }
        };
        Ok(page(&app, "Search", body))
    })
    .await
}

/// `text` with every word a prefix (`kiw` -> `kiw*`): the page finds
/// words by their start, as the user types them. A word ending in `*` is
/// one already.
pub fn as_prefixes(text: &str) -> String {
    text.split_whitespace()
        .map(|w| {
            if w.ends_with('*') {
                w.to_owned()
            } else {
                format!("{w}*")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The tabs with words starting with each word of `text`, as `ffsession
/// search` finds them given those words each ending in `*`.
fn results(app: &App, text: &str) -> Result<Markup> {
    let text = &as_prefixes(text);
    let Some(query) = literal_query(text) else {
        return Ok(
            html! { p.hint { "Type words to find every tab ever backed up whose title or URL holds them." } },
        );
    };
    let store = app.store()?;
    let limit = 100;
    let hits = match store.search_tabs(&query, TimeRange::default(), limit + 1) {
        Ok(h) => h,
        Err(e @ SearchError::BadQuery { .. }) => {
            return Ok(html! { p.hint { (e.to_string()) } });
        }
        Err(SearchError::Store(e)) => return Err(e.into()),
    };
    Ok(html! {
        p.count {
            @if hits.is_empty() { "No tab matches." }
            @else if hits.len() > limit { "The best " (limit) " tabs:" }
            @else { (count(hits.len(), "tab", "tabs")) ":" }
            " Same as " code { (app.command_line(&["search", text])) }
        }
        table.tabs.hits {
            @for h in hits.iter().take(limit) {
                tr.tab {
                    td { (title_url(Some(&h.title), Some(&h.url))) }
                    td.when { "seen " (time(Some(h.first_seen_ms))) " .. " (time(Some(h.last_seen_ms))) }
                    td {
                        a href=(app.url(&format!("/history?url={}", encode(&h.url)))) { "in " (count(h.snapshots as usize, "snapshot", "snapshots")) }
                        ", newest " a href=(app.url(&format!("/snapshot/{}", h.newest_snapshot))) { "#" (h.newest_snapshot) }
                        @if let Some(a) = &h.archived {
                            ", archived " (time(Some(a.archived_at_ms))) " (" (escape(&a.reason)) ", "
                            a href=(app.url(&format!("/snapshot/{}", a.snapshot))) { "#" (a.snapshot) } ")"
                        }
                    }
                }
            }
        }
    })
}

pub async fn history(
    State(app): State<Arc<App>>,
    Query(q): Query<HistoryQuery>,
) -> Result<Markup, WebError> {
    blocking(move || {
        let store = app.store()?;
        let stretches = store.tab_history(&q.url).map_err(anyhow::Error::from)?;
        let body = html! {
            p { (title_url(None, Some(&q.url))) }
            p { "Same as " code { (app.command_line(&["history", &q.url])) } }
            @if stretches.is_empty() { p { "In no snapshot." } }
            table.snapshots {
                @for s in &stretches {
                    tr {
                        td { (time(Some(s.from_ms))) " .. " (time(Some(s.to_ms))) }
                        td { (count(s.snapshots as usize, "snapshot", "snapshots")) ", "
                            a href=(app.url(&format!("/snapshot/{}", s.first_snapshot))) { "#" (s.first_snapshot) }
                            " .. "
                            a href=(app.url(&format!("/snapshot/{}", s.last_snapshot))) { "#" (s.last_snapshot) } }
                        td { (match s.state { TabState::Open => "open", TabState::Closed => "recently closed", _ => "in a closed window" })
                            " in window " (s.windows.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")) }
                    }
                }
            }
        };
        Ok(page(&app, "Where a page was open", body))
    })
    .await
}

/// `text` as a query-string value.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_a_prefix() {
        assert_eq!(as_prefixes("kiw"), "kiw*");
        assert_eq!(as_prefixes("  rust  bo "), "rust* bo*");
        assert_eq!(as_prefixes("doc* x"), "doc* x*");
        assert_eq!(as_prefixes(""), "");
        assert_eq!(
            literal_query(&as_prefixes("kiw \"q")).as_deref(),
            Some(r#""kiw"* """q"*"#)
        );
    }
}
