//! The page around every view, its script and style, and the helpers that
//! make what a session holds safe to show: titles and URLs are written by
//! the sites a user visited, so every value goes through maud's escaping,
//! and a URL is a link only for an allowed scheme.

use std::borrow::Cow;
use std::ffi::OsStr;

use axum::http::header;
use axum::response::IntoResponse;
use maud::{html, Markup, DOCTYPE};

use super::App;
use crate::fmt::escape;

/// The page's script: the filter box, search as you type, picking helpers.
const SCRIPT: &str = include_str!("app.js");
/// The page's style.
const STYLE: &str = include_str!("app.css");

pub async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
}

pub async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE)
}

/// A whole page: the navigation, then `body`.
pub fn page(app: &App, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) " - ffsession" }
                link rel="stylesheet" href=(app.url("/app.css"));
                script src=(app.url("/app.js")) defer {}
            }
            body data-base=(app.url("")) {
                nav {
                    a href=(app.url("/")) { "Timeline" }
                    a href=(app.url("/search")) { "Search" }
                    a href=(app.url("/diff")) { "Diff" }
                    a href=(app.url("/picks")) { "Picked" }
                    span.store { "store: " (app.store_label) }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// The hidden CSRF field of every form that changes something.
pub fn csrf(app: &App) -> Markup {
    html! { input type="hidden" name="csrf" value=(app.csrf); }
}

/// `url` when it may be a link: http, https and ftp only, so a
/// `javascript:` or `data:` URL a page left in the session is never live.
pub fn safe_href(url: &str) -> Option<&str> {
    let scheme = url.split_once(':')?.0.to_ascii_lowercase();
    matches!(scheme.as_str(), "http" | "https" | "ftp").then_some(url)
}

/// A session's favicon when it is an inline image (`data:image/...`); the
/// page loads nothing from elsewhere (its CSP allows only `data:` images).
pub fn favicon(image: Option<&str>) -> Option<&str> {
    image.filter(|i| i.starts_with("data:image/") && i.len() < 200_000)
}

/// A tab's title and URL: the URL a link only when [`safe_href`] allows.
/// Both are shown with their control and bidirectional characters escaped
/// (`\u{202e}`), as the CLI prints names: a right-to-left override would
/// make a link look like another address.
pub fn title_url(title: Option<&str>, url: Option<&str>) -> Markup {
    let url = url.unwrap_or("");
    let title = title.filter(|t| !t.is_empty()).unwrap_or(url);
    let shown = escape(url);
    html! {
        span.title { (escape(title)) }
        " "
        @match safe_href(url) {
            Some(href) => a.url href=(link_target(href)) rel="noopener noreferrer" target="_blank" { (shown) },
            None => span.url.inert title="not a web link: shown, not followed" { (shown) },
        }
    }
}

/// A link's target: `url` with its control and bidirectional characters
/// percent-encoded (as a browser sends them), so no attribute of the page
/// holds one as it is.
pub fn link_target(url: &str) -> Cow<'_, str> {
    if !url.chars().any(crate::fmt::needs_escape) {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len() + 8);
    for c in url.chars() {
        if crate::fmt::needs_escape(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Local time of `ms`.
pub fn time(ms: Option<u64>) -> String {
    crate::fmt::local_time_or_unknown(ms)
}

/// A command line as a POSIX shell would read it back.
pub fn shell_line<I, S>(words: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    words
        .into_iter()
        .map(|w| {
            let w = w.as_ref().to_string_lossy();
            let plain = !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_./:=@%+-,".contains(&b));
            if plain {
                w.into_owned()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_schemes_are_links() {
        assert_eq!(safe_href("https://a.test/"), Some("https://a.test/"));
        assert_eq!(safe_href("HTTP://a.test/"), Some("HTTP://a.test/"));
        assert_eq!(safe_href("javascript:alert(1)"), None);
        assert_eq!(safe_href("JavaScript:alert(1)"), None);
        assert_eq!(safe_href("data:text/html,x"), None);
        assert_eq!(safe_href("about:blank"), None);
        assert_eq!(safe_href("no scheme"), None);
    }

    #[test]
    fn favicons_are_inline_images_only() {
        assert!(favicon(Some("data:image/png;base64,AAAA")).is_some());
        assert!(favicon(Some("https://a.test/favicon.ico")).is_none());
        assert!(favicon(Some("data:text/html,x")).is_none());
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        assert_eq!(
            shell_line(["ffsession", "restore", "42", "--dry-run"]),
            "ffsession restore 42 --dry-run"
        );
        assert_eq!(shell_line(["a b", "it's", ""]), r"'a b' 'it'\''s' ''");
    }

    #[test]
    fn bidirectional_and_control_characters_are_shown_escaped() {
        let m = title_url(
            Some("abc\u{202e}fdp.exe"),
            Some("https://a.test/\u{2066}x\u{0}"),
        );
        let s = m.into_string();
        assert!(s.contains(r"abc\u{202e}fdp.exe"), "{s}");
        assert!(s.contains(r"https://a.test/\u{2066}x\u{0}"), "{s}");
        assert!(s.contains("href=\"https://a.test/%E2%81%A6x%00\""), "{s}");
        assert!(!s.contains('\u{202e}') && !s.contains('\u{2066}'), "{s}");
    }

    #[test]
    fn titles_are_escaped() {
        let m = title_url(Some("<script>x</script>"), Some("javascript:alert(1)"));
        let s = m.into_string();
        assert!(s.contains("&lt;script&gt;"), "{s}");
        assert!(!s.contains("href=\"javascript"), "{s}");
    }
}
