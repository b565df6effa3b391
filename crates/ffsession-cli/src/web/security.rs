//! What keeps the page to its user (docs/guide/ui.md, "Security"): a random
//! secret as the first part of every path, compared in constant time; the
//! `Host` header one of the server's own loopback names (DNS rebinding);
//! every POST carrying the CSRF token and coming from the page's own
//! origin; strict headers on every answer.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::App;

/// The Content-Security-Policy of every answer: scripts and styles only
/// from the page's own files, images only inline (the favicons sessions
/// hold), nothing framed, forms only to the page itself.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; \
connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The largest request body read (the forms are small).
const MAX_BODY: usize = 1 << 20;

/// `bytes` random bytes as hex, from the system's generator.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(std::io::Error::other)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equal strings, compared in time that does not depend on where they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// True when `host` (a `Host` header) names this server: 127.0.0.1, [::1]
/// or localhost, with its port.
pub fn host_ok(host: &str, port: u16) -> bool {
    ["127.0.0.1", "[::1]", "localhost"]
        .iter()
        .any(|name| host.eq_ignore_ascii_case(&format!("{name}:{port}")))
}

/// True when `origin` (an `Origin` header) is the page's own.
pub fn origin_ok(origin: &str, port: u16) -> bool {
    origin
        .strip_prefix("http://")
        .is_some_and(|host| host_ok(host, port))
}

/// True when a POST comes from the page itself: its `Origin` is the page's,
/// or, where the browser hides the origin (`Origin: null`, which Firefox
/// sends for a form of a page whose Referrer-Policy is `no-referrer`), its
/// `Sec-Fetch-Site` says the request comes from the same origin.
pub fn from_page(origin: Option<&str>, fetch_site: Option<&str>, port: u16) -> bool {
    match origin {
        Some(o) if origin_ok(o, port) => true,
        Some("null") | None => fetch_site == Some("same-origin"),
        Some(_) => false,
    }
}

/// The value of `csrf` in a form body (`a=1&csrf=...`); the token is hex,
/// so it needs no decoding.
pub fn form_token(body: &[u8]) -> Option<&str> {
    std::str::from_utf8(body)
        .ok()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("csrf="))
}

fn refuse(status: StatusCode, why: &'static str) -> Response {
    let mut r = (status, why).into_response();
    headers(&mut r);
    r
}

/// The headers every answer carries.
fn headers(r: &mut Response) {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
}

/// The guard in front of every route: checks the host, the secret and, for
/// a POST, the origin and the CSRF token; takes the secret off the path
/// for the routes; adds the headers.
pub async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !host_ok(host, app.port) {
        return refuse(StatusCode::BAD_REQUEST, "unknown Host\n");
    }
    // The path: /SECRET/rest.
    let path = req.uri().path();
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (given, rest) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if !same(given, &app.secret) {
        return refuse(StatusCode::FORBIDDEN, "forbidden\n");
    }
    let rest = rest.to_owned();
    let (mut parts, body) = req.into_parts();
    let path_and_query = match parts.uri.query() {
        Some(q) => format!("{rest}?{q}"),
        None => rest,
    };
    parts.uri = match Uri::builder().path_and_query(path_and_query).build() {
        Ok(uri) => uri,
        Err(_) => return refuse(StatusCode::BAD_REQUEST, "bad path\n"),
    };
    let req = match parts.method {
        Method::GET | Method::HEAD => Request::from_parts(parts, body),
        Method::POST => {
            let text = |name| parts.headers.get(name).and_then(|h| h.to_str().ok());
            if !from_page(text("origin"), text("sec-fetch-site"), app.port) {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "a change must come from the page itself\n",
                );
            }
            // A body that does not come in time holds the connection no
            // longer (a slow client is dropped, not waited for).
            let bytes =
                match tokio::time::timeout(app.io_timeout, axum::body::to_bytes(body, MAX_BODY))
                    .await
                {
                    Ok(Ok(bytes)) => bytes,
                    Ok(Err(_)) => {
                        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "request too large\n")
                    }
                    Err(_) => {
                        return refuse(StatusCode::REQUEST_TIMEOUT, "the request took too long\n")
                    }
                };
            if !form_token(&bytes).is_some_and(|t| same(t, &app.csrf)) {
                return refuse(StatusCode::FORBIDDEN, "missing or wrong CSRF token\n");
            }
            Request::from_parts(parts, Body::from(bytes))
        }
        _ => return refuse(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
    };
    let mut r = next.run(req).await;
    headers(&mut r);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        assert!(!same("", "a"));
        let s = random_hex(16).unwrap();
        assert_eq!(s.len(), 32);
        assert_ne!(s, random_hex(16).unwrap());
    }

    #[test]
    fn only_loopback_names_with_the_port() {
        assert!(host_ok("127.0.0.1:8080", 8080));
        assert!(host_ok("localhost:8080", 8080));
        assert!(!host_ok("127.0.0.1:8081", 8080));
        assert!(!host_ok("evil.example:8080", 8080));
        assert!(!host_ok("127.0.0.1", 8080));
        assert!(host_ok("[::1]:8080", 8080));
        assert!(!host_ok("[::2]:8080", 8080));
        assert!(!host_ok("[::1]:80801", 8080));
        assert!(origin_ok("http://localhost:9", 9));
        assert!(origin_ok("http://[::1]:9", 9));
        assert!(!origin_ok("https://127.0.0.1:9", 9));
        assert!(!origin_ok("http://127.0.0.1:9/", 9));
        assert!(!origin_ok("null", 9));
        assert!(!origin_ok("http://evil.example:9", 9));
    }

    #[test]
    fn a_post_comes_from_the_page_by_its_origin_or_its_fetch_site() {
        let page = Some("http://127.0.0.1:9");
        assert!(from_page(page, None, 9));
        assert!(from_page(Some("null"), Some("same-origin"), 9));
        assert!(from_page(None, Some("same-origin"), 9));
        assert!(!from_page(Some("null"), None, 9));
        assert!(!from_page(Some("null"), Some("cross-site"), 9));
        assert!(!from_page(Some("null"), Some("same-site"), 9));
        assert!(!from_page(None, None, 9));
        assert!(!from_page(
            Some("http://evil.example"),
            Some("same-origin"),
            9
        ));
    }

    #[test]
    fn the_token_is_read_from_the_form() {
        assert_eq!(form_token(b"a=1&csrf=ab12&b=2"), Some("ab12"));
        assert_eq!(form_token(b"csrf=ff"), Some("ff"));
        assert_eq!(form_token(b"xcsrf=ff"), None);
        assert_eq!(form_token(b""), None);
    }
}
