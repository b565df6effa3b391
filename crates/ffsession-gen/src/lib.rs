//! Generates realistic Firefox session files for tests, benchmarks, fuzzing
//! seeds and the sample shipped in `samples/`.
//!
//! The shape follows what Firefox's SessionStore writes: windows with tabs whose
//! `entries` hold back/forward history (with the bulky per-entry fields Firefox
//! writes: principals, referrer info, docshell ids), data: URI favicons of
//! several KB, form data, session storage, scroll positions, tab groups, closed
//! tabs and windows, saved groups and cookies. Titles mix JSON escapes, quotes,
//! commas, `<`, `&`, newlines, non-ASCII and emoji.
//!
//! Output is deterministic for a given [`Spec`]; the ignored payloads (favicons,
//! form data, storage, cookies) can be scaled without changing anything else, which
//! the allocation tests rely on.

mod platform;
mod zen;
#[cfg(unix)]
pub use platform::FcntlLockHolder;
pub use platform::{interrupt, link_dir, link_file, FirefoxLockHolder, StoreLockHolder};
pub use zen::{zen_files, ZenFiles, ZenSpec};

use serde_json::{json, Map, Value};

/// What to generate.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Open windows.
    pub windows: usize,
    /// Open tabs, spread over the windows.
    pub tabs: usize,
    /// Most back/forward entries in one tab (tabs get 1..=history).
    pub history: usize,
    /// Bytes of base64 in each tab's data: URI favicon.
    pub favicon_bytes: usize,
    /// Bytes of typed form data per tab (every 3rd tab).
    pub formdata_bytes: usize,
    /// Bytes of session storage per tab (every 2nd tab).
    pub storage_bytes: usize,
    /// Number of cookies in the top-level `cookies` list.
    pub cookies: usize,
    /// Recently closed tabs per window.
    pub closed_tabs_per_window: usize,
    /// Recently closed windows.
    pub closed_windows: usize,
    /// Random seed.
    pub seed: u64,
    /// `session.lastUpdate` (ms since the epoch).
    pub last_update: u64,
    /// `session.startTime`, when the Firefox run began (default: a day
    /// before `last_update`, each session its own run).
    pub start_time: Option<u64>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            windows: 3,
            tabs: 30,
            history: 6,
            favicon_bytes: 3_000,
            formdata_bytes: 1_200,
            storage_bytes: 1_500,
            cookies: 20,
            closed_tabs_per_window: 3,
            closed_windows: 1,
            seed: 42,
            last_update: 1_795_300_000_000,
            start_time: None,
        }
    }
}

impl Spec {
    /// A session of about `json_bytes` of JSON (about 10 KB per tab, like the
    /// 1 / 4 / 40 MB benchmark sessions with 100 / 400 / 4,000 tabs).
    pub fn sized(json_bytes: usize) -> Spec {
        let tabs = (json_bytes / 10_000).max(1);
        Spec {
            tabs,
            windows: (tabs / 40).clamp(1, 25),
            // History, form data and storage average ~3.4 KB a tab; favicons fill
            // the rest of the ~10 KB (Firefox's data: URI icons run 1-20 KB).
            favicon_bytes: 6_600,
            ..Spec::default()
        }
    }

    /// The same session with the ignored payloads (favicons, form data, storage,
    /// cookies) `factor` times larger.
    pub fn with_payload_scaled(mut self, factor: usize) -> Spec {
        self.favicon_bytes *= factor;
        self.formdata_bytes *= factor;
        self.storage_bytes *= factor;
        self.cookies *= factor;
        self
    }
}

/// Titles that exercise escapes, quoting and non-ASCII in every output format.
pub const TRICKY_TITLES: &[&str] = &[
    "Example Domain",
    "Rust — “smart quotes” & <angle> brackets",
    "Quote \"inside\" the title, with a comma",
    "日本語のページ — ニュース",
    "Ünïcødé Tëst 🦊 Firefox",
    "Back\\slash C:\\Users\\me",
    "Line one\nline two\ttabbed",
    "Ελληνικά και русский текст",
    "Emoji party 🎉🚀👩‍💻",
    "<script>alert('x')</script> & friends",
    "Plain ASCII title number",
    "Control \u{1} char and \u{2028} separator",
];

/// Base64-looking noise, as incompressible as the base64 of a PNG. Seeded by
/// `salt` alone, so payload sizes never shift the main random stream.
fn filler(len: usize, salt: usize) -> String {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut rng = fastrand::Rng::with_seed(salt as u64 ^ 0x9e37_79b9_7f4a_7c15);
    (0..len).map(|_| B64[rng.usize(..64)] as char).collect()
}

struct Gen {
    rng: fastrand::Rng,
    spec: Spec,
    next_id: u64,
}

impl Gen {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn title(&mut self, n: usize) -> String {
        let base = TRICKY_TITLES[self.rng.usize(..TRICKY_TITLES.len())];
        format!("{base} {n}")
    }

    fn entry(&mut self, url: String, title: String) -> Value {
        let id = self.id();
        json!({
            "url": url,
            "title": title,
            "charset": "UTF-8",
            "cacheKey": 0,
            "ID": id,
            "docshellUUID": format!("{{{:08x}-1d2c-4f3b-9a8e-{:012x}}}", id, id * 7919),
            "referrerInfo": format!("BBoSnxDOS9qmDeAnom1e0AAAAAAAAAAAwAAAAAAAAEYAAAAAAAEBAAAAAAEA{}", filler(48, id as usize)),
            "originalURI": url,
            "resultPrincipalURI": null,
            "hasUserInteraction": self.rng.bool(),
            "triggeringPrincipal_base64": "{\"3\":{}}",
            "docIdentifier": id + 1000,
            "persist": true
        })
    }

    fn tab(&mut self, n: usize, group: Option<&str>) -> Value {
        let spec = self.spec.clone();
        let history = self.rng.usize(1..=spec.history.max(1));
        let site = self.rng.usize(1..200);
        let entries: Vec<Value> = (0..history)
            .map(|h| {
                // Firefox stores URLs percent-encoded, so they need no JSON
                // escapes; one tab in 16 has raw quotes anyway, as a hand-edited
                // or foreign session could.
                let query = if n % 16 == 7 { "b=\"c\"" } else { "b=%22c%22" };
                let url = format!("https://site{site}.example/page/{n}/{h}?q=a&{query}");
                let title = self.title(n * 100 + h);
                self.entry(url, title)
            })
            .collect();
        let index = self.rng.usize(1..=history);
        let mut tab = Map::new();
        tab.insert("entries".into(), Value::Array(entries));
        tab.insert(
            "lastAccessed".into(),
            json!(spec.last_update.saturating_sub(self.rng.u64(0..10_000_000))),
        );
        tab.insert("hidden".into(), json!(n % 97 == 5));
        tab.insert("searchMode".into(), Value::Null);
        tab.insert(
            "userContextId".into(),
            json!(if n % 11 == 3 { 2 } else { 0 }),
        );
        tab.insert("attributes".into(), json!({}));
        tab.insert("index".into(), json!(index));
        tab.insert("requestedIndex".into(), json!(0));
        tab.insert(
            "image".into(),
            json!(format!(
                "data:image/png;base64,iVBORw0KGgo{}",
                filler(spec.favicon_bytes, site)
            )),
        );
        if n.is_multiple_of(23) {
            tab.insert("pinned".into(), json!(true));
        }
        if let Some(g) = group {
            tab.insert("groupId".into(), json!(g));
        }
        if n.is_multiple_of(3) && spec.formdata_bytes > 0 {
            tab.insert(
                "formdata".into(),
                json!({"id": {"comment": filler(spec.formdata_bytes, n + 1), "name": "Zoë \"the\" tester"},
                       "url": format!("https://site{site}.example/form")}),
            );
        }
        if n.is_multiple_of(2) && spec.storage_bytes > 0 {
            tab.insert(
                "storage".into(),
                json!({format!("https://site{site}.example"): {"state": filler(spec.storage_bytes, n + 2), "k": "v"}}),
            );
        }
        tab.insert("scroll".into(), json!({"scroll": format!("0,{}", n * 37)}));
        tab.insert("extData".into(), json!({}));
        Value::Object(tab)
    }

    fn closed_tab(&mut self, n: usize) -> Value {
        let state = self.tab(n, None);
        let title = state["entries"][0]["title"].clone();
        json!({
            "state": state,
            "title": title,
            "image": null,
            "pos": n % 7,
            "closedId": n,
            "closedAt": self.spec.last_update.saturating_sub(60_000 * n as u64),
        })
    }

    fn window(&mut self, w: usize, tabs: std::ops::Range<usize>) -> Value {
        let group_id = format!("{}-{w}", 1_763_000_000_000u64 + w as u64);
        let count = tabs.len();
        let tab_values: Vec<Value> = tabs
            .map(|n| {
                let in_group = n % 10 == 1;
                self.tab(n, in_group.then_some(group_id.as_str()))
            })
            .collect();
        let closed: Vec<Value> = (0..self.spec.closed_tabs_per_window)
            .map(|c| self.closed_tab(100_000 + w * 100 + c))
            .collect();
        json!({
            "tabs": tab_values,
            "selected": (w % count.max(1)) + 1,
            "_closedTabs": closed,
            "busy": false,
            "width": 1280 + w,
            "height": 800,
            "screenX": 10 * w,
            "screenY": 4,
            "sizemode": if w == 0 { "maximized" } else { "normal" },
            "zIndex": w + 1,
            "groups": [{"id": group_id, "name": format!("Group \"{w}\" — ✨"), "color": "blue", "collapsed": false}],
            "closedGroups": [],
            "title": "ignored window title",
            "workspaceID": "",
            "extData": {}
        })
    }
}

/// Sessions for readers that take their JSON a part at a time (in pieces,
/// or while it decodes): the default; many tabs over seven windows, their
/// non-ASCII titles (`TRICKY_TITLES`) cut between parts; and a few tabs
/// whose form data and storage are longer than a part, with closed windows.
pub fn piecewise_specs() -> [Spec; 3] {
    [
        Spec::default(),
        Spec {
            tabs: 400,
            windows: 7,
            ..Spec::default()
        },
        Spec {
            tabs: 12,
            formdata_bytes: 150_000,
            storage_bytes: 90_000,
            closed_windows: 3,
            ..Spec::default()
        },
    ]
}

/// Generate session JSON for `spec`.
pub fn generate(spec: &Spec) -> String {
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(spec.seed),
        spec: spec.clone(),
        next_id: 0,
    };
    let windows_n = spec.windows.max(1).min(spec.tabs.max(1));
    let mut windows = Vec::new();
    let per = spec.tabs / windows_n;
    let mut start = 0;
    for w in 0..windows_n {
        let end = if w + 1 == windows_n {
            spec.tabs
        } else {
            start + per
        };
        windows.push(g.window(w, start..end));
        start = end;
    }
    let closed_windows: Vec<Value> = (0..spec.closed_windows)
        .map(|c| {
            let base = 200_000 + c * 10;
            let mut w = g.window(1000 + c, base..base + 2);
            w["closedAt"] = json!(spec.last_update.saturating_sub(3_600_000));
            w["closedId"] = json!(c);
            w
        })
        .collect();
    let cookies: Vec<Value> = (0..spec.cookies)
        .map(|c| {
            json!({"host": format!(".site{c}.example"), "value": filler(60, c), "path": "/",
                   "name": format!("sid{c}"), "secure": true, "httponly": true,
                   "originAttributes": {"firstPartyDomain": "", "userContextId": 0}})
        })
        .collect();
    let saved_tab = g.closed_tab(300_000);
    let session = json!({
        "version": ["sessionrestore", 1],
        "windows": windows,
        "selectedWindow": 1,
        "_closedWindows": closed_windows,
        "session": {"lastUpdate": spec.last_update, "startTime": spec.start_time.unwrap_or(spec.last_update.saturating_sub(86_400_000)), "recentCrashes": 0},
        "global": {},
        "cookies": cookies,
        "savedGroups": [{"id": "saved-1", "name": "Saved \"for later\"", "color": "red", "collapsed": true,
                         "tabs": [saved_tab], "closedAt": spec.last_update.saturating_sub(10_000)}]
    });
    firefox_json(&session)
}

/// Serialize session JSON compactly with keys in the order Firefox writes the
/// ones that matter (a window starts with `tabs`, a tab with `entries`), for
/// tests that edit generated sessions.
pub fn firefox_json(session: &Value) -> String {
    let mut out = String::with_capacity(1 << 20);
    write_firefox_order(session, &mut out);
    out
}

/// Keys Firefox writes first in their objects (`JSON.stringify` keeps the order
/// SessionStore builds them in): a window starts with `tabs`, a tab with
/// `entries`. Other keys follow in sorted order.
const FIRST_KEYS: [&str; 2] = ["tabs", "entries"];

/// Serialize `value` compactly, with [`FIRST_KEYS`] leading their objects.
fn write_firefox_order(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let first = FIRST_KEYS.iter().filter_map(|k| map.get_key_value(*k));
            let rest = map
                .iter()
                .filter(|(k, _)| !FIRST_KEYS.contains(&k.as_str()));
            out.push('{');
            for (i, (key, v)) in first.chain(rest).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_firefox_order(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_firefox_order(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Wrap JSON in the mozlz4 container (`mozLz40\0`, u32 LE size, LZ4 block).
pub fn mozlz4(json: &[u8]) -> Vec<u8> {
    let mut out = b"mozLz40\0".to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&lz4_flex::block::compress(json));
    out
}

/// A corpus of broken session files, as `(file name, bytes)`, built from a
/// small valid session: empty, truncated at several points, wrong magic, lying
/// size headers, damaged LZ4, invalid JSON, invalid UTF-8, and valid JSON that
/// is no session (no `windows` array). Odd shapes that are still sessions are
/// in [`odd_corpus`].
pub fn bad_corpus() -> Vec<(String, Vec<u8>)> {
    let json = generate(&Spec {
        tabs: 4,
        windows: 1,
        ..Spec::default()
    })
    .into_bytes();
    let packed = mozlz4(&json);
    let mut out: Vec<(String, Vec<u8>)> = vec![
        ("empty.jsonlz4".into(), vec![]),
        ("empty.js".into(), vec![]),
        ("magic-only.jsonlz4".into(), b"mozLz40\0".to_vec()),
        ("header-only.jsonlz4".into(), packed[..12].to_vec()),
        ("half-magic.jsonlz4".into(), b"mozLz".to_vec()),
    ];
    for pct in [10, 50, 90, 99] {
        out.push((
            format!("truncated-{pct}pct.jsonlz4"),
            packed[..packed.len() * pct / 100].to_vec(),
        ));
        out.push((
            format!("truncated-{pct}pct.js"),
            json[..json.len() * pct / 100].to_vec(),
        ));
    }
    let mut wrong_magic = packed.clone();
    wrong_magic[6] = b'1';
    out.push(("wrong-magic.jsonlz4".into(), wrong_magic));
    let mut gzip = vec![0x1f, 0x8b, 0x08, 0x00];
    gzip.extend_from_slice(&packed[12..40]);
    out.push(("gzip-not-mozlz4.jsonlz4".into(), gzip));
    let mut lying_huge = b"mozLz40\0".to_vec();
    lying_huge.extend_from_slice(&u32::MAX.to_le_bytes());
    lying_huge.extend_from_slice(b"\x10AAAAAAA");
    out.push(("lying-size-4gib.jsonlz4".into(), lying_huge));
    let mut lying_small = packed.clone();
    lying_small[8..12].copy_from_slice(&((json.len() / 2) as u32).to_le_bytes());
    out.push(("lying-size-small.jsonlz4".into(), lying_small));
    let mut lying_big = packed.clone();
    lying_big[8..12].copy_from_slice(&((json.len() + 100) as u32).to_le_bytes());
    out.push(("lying-size-big.jsonlz4".into(), lying_big));
    let mut bad_lz4 = packed.clone();
    for i in (40..bad_lz4.len()).step_by(97) {
        bad_lz4[i] = 0xff;
    }
    out.push(("damaged-lz4.jsonlz4".into(), bad_lz4));
    let mut bad_offset = b"mozLz40\0".to_vec();
    bad_offset.extend_from_slice(&100u32.to_le_bytes());
    bad_offset.extend_from_slice(&[0x1f, b'a', 0xff, 0xff, 0x00]);
    out.push(("lz4-offset-before-start.jsonlz4".into(), bad_offset));
    let bad_json =
        br#"{"windows":[{"tabs":[{"entries":[{"url":"https://x/","title":"no end"#.to_vec();
    out.push(("invalid-json.js".into(), bad_json.clone()));
    out.push(("invalid-json.jsonlz4".into(), mozlz4(&bad_json)));
    let mut bad_utf8 =
        br#"{"windows":[{"tabs":[{"entries":[{"url":"https://x/","title":"bad "#.to_vec();
    bad_utf8.extend_from_slice(b"\xff\xfe\xc3\x28 utf8\"}]}]}]}");
    out.push(("invalid-utf8.js".into(), bad_utf8.clone()));
    out.push(("invalid-utf8.jsonlz4".into(), mozlz4(&bad_utf8)));
    for (name, body) in [
        ("shape-array.js", &b"[1, 2, 3]"[..]),
        ("shape-no-windows.js", b"{\"session\": {\"lastUpdate\": 1}}"),
        ("shape-windows-number.js", b"{\"windows\": 5}"),
        ("shape-string.js", b"\"windows\""),
        ("trailing-garbage.js", b"{\"windows\": []} trailing"),
        ("binary-noise.bin", b"\x00\x01\x02\x03\xff\xfe\xfd"),
    ] {
        out.push((name.into(), body.to_vec()));
        if name.ends_with(".js") {
            out.push((name.replace(".js", ".jsonlz4"), mozlz4(body)));
        }
    }
    out
}

/// Session files of odd shapes that are still sessions, as `(file name,
/// bytes, tabs)`: a field the reader uses holds a value of another type (read as
/// absent), or 100,000 levels of nesting where the model reads (skipped without
/// recursion). `tabs` is how many open tabs each holds.
pub fn odd_corpus() -> Vec<(String, Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut deep = br#"{"windows":[{"tabs":[{"entries":"#.to_vec();
    deep.extend(std::iter::repeat_n(b'[', 100_000));
    deep.extend(std::iter::repeat_n(b']', 100_000));
    deep.extend_from_slice(b"}]}]}");
    let mut deep_objects = br#"{"windows":[{"tabs":[{"entries":[{"url":"#.to_vec();
    deep_objects.extend(std::iter::repeat_n(&b"{\"a\":"[..], 100_000).flatten());
    deep_objects.extend_from_slice(b"1");
    deep_objects.extend(std::iter::repeat_n(b'}', 100_000));
    deep_objects.extend_from_slice(b"}]}]}]}");
    for (name, body, tabs) in [
        ("nesting-100000.js", deep, 1),
        ("nesting-objects-100000.js", deep_objects, 1),
        (
            "shape-tabs-string.js",
            b"{\"windows\": [{\"tabs\": \"many\"}]}".to_vec(),
            0,
        ),
        (
            "shape-entries-object.js",
            b"{\"windows\": [{\"tabs\": [{\"entries\": {\"url\": 1}}]}]}".to_vec(),
            1,
        ),
        (
            "shape-url-number.js",
            b"{\"windows\": [{\"tabs\": [{\"entries\": [{\"url\": 42}]}]}]}".to_vec(),
            1,
        ),
    ] {
        out.push((name.replace(".js", ".jsonlz4"), mozlz4(&body), tabs));
        out.push((name.into(), body, tabs));
    }
    out
}

/// Every file (not folder) under `dir`, recursively; empty if `dir` is missing.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}
