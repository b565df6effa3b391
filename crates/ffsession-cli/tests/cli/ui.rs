//! `ffsession ui`: the local page, asked over HTTP on 127.0.0.1 as a
//! browser would, against a store built in the test's folder.

use crate::common::Run;
use crate::common::{assert_contains_all, tabs_session, with_tabs};
use crate::ui_page::{two_snapshots, Page, EVIL_TITLE};

#[test]
fn the_page_shows_every_snapshot_and_its_tabs_escaped() {
    let page = Page::start(&[]);
    let home = page.get("/");
    assert_eq!(home.status, 200, "{}", home.body);
    assert!(home.body.contains("Timeline"));
    let link = format!("href=\"/{}/snapshot/2\"", page.secret);
    assert!(home.body.contains(&link), "{}", home.body);
    assert!(home.body.contains("<svg"), "the timeline chart");

    let snap = page.get("/snapshot/2");
    assert_eq!(snap.status, 200, "{}", snap.body);
    assert!(snap.body.contains("The Rust book"));
    assert!(snap.body.contains("Added later"));
    assert!(snap
        .body
        .contains("href=\"https://doc.rust-lang.org/book/\""));
    // A title is text, never markup; a javascript: URL is never a link.
    assert!(!snap.body.contains(EVIL_TITLE), "{}", snap.body);
    assert!(snap.body.contains("&lt;script&gt;alert"));
    assert!(!snap.body.to_lowercase().contains("href=\"javascript:"));
    assert!(snap.body.contains("javascript:alert(document.cookie)"));
    // Recently closed tabs, the closed window, the favicons the session holds.
    assert!(
        snap.body.contains("3 recently closed tabs"),
        "{}",
        snap.body
    );
    assert!(snap.body.contains("Closed window 1"));
    assert!(snap.body.contains("<img src=\"data:image/"));
    assert!(snap.body.contains("value=\"w:2:1\""), "a window's box");

    // Strict headers on every answer.
    for a in [&home, &snap] {
        assert!(
            a.head
                .contains("content-security-policy: default-src 'none'; script-src 'self'"),
            "{}",
            a.head
        );
        assert!(a.head.contains("frame-ancestors 'none'"));
        assert!(a.head.contains("x-content-type-options: nosniff"));
        assert!(a.head.contains("referrer-policy: no-referrer"));
    }
    // The script is the page's own file.
    let js = page.get("/app.js");
    assert_eq!(js.status, 200);
    assert!(js.head.contains("content-type: text/javascript"));
    assert!(!snap.body.contains("<script>"), "no inline script");
}

#[test]
fn search_diff_and_history_read_the_store() {
    let page = Page::start(&[]);
    let found = page.get("/search?q=rust+book");
    assert_eq!(found.status, 200);
    assert!(found.body.contains("The Rust book"), "{}", found.body);
    assert!(found.body.contains("in 2 snapshots"), "{}", found.body);
    // As you type: the results alone.
    let part = page.get("/search?q=added&part=1");
    assert!(part.body.contains("Added later"));
    assert!(!part.body.contains("<html"));
    let evil = page.get("/search?q=pwned");
    assert!(!evil.body.contains(EVIL_TITLE), "{}", evil.body);

    let d = page.get("/diff?a=1&b=2");
    assert_eq!(d.status, 200, "{}", d.body);
    assert!(d.body.contains("1 tab added, 0 removed"), "{}", d.body);
    assert!(d.body.contains("Added later"));
    assert!(
        d.body.contains(" diff snapshot:1 snapshot:2</code>"),
        "{}",
        d.body
    );

    let h = page.get("/history?url=https%3A%2F%2Fdoc.rust-lang.org%2Fbook%2F");
    assert_eq!(h.status, 200);
    assert!(h.body.contains("2 snapshots"), "{}", h.body);
}

#[test]
fn only_the_secret_address_on_a_loopback_host_answers() {
    let page = Page::start(&[]);
    let host = page.host();
    let h = [("Host", host.as_str())];
    assert_eq!(page.raw("GET", "/", &h, "").status, 403);
    assert_eq!(page.raw("GET", "/snapshot/1", &h, "").status, 403);
    let wrong: String = page.secret.chars().rev().collect();
    assert_eq!(page.raw("GET", &format!("/{wrong}/"), &h, "").status, 403);
    let short = &page.secret[..31];
    assert_eq!(page.raw("GET", &format!("/{short}/"), &h, "").status, 403);
    let right = format!("/{}/", page.secret);
    assert_eq!(page.raw("GET", &right, &h, "").status, 200);
    // Paths outside the app, with the secret: nothing.
    for outside in [
        "no-such-page",
        "../../../etc/passwd",
        "%2e%2e/%2e%2e/etc/passwd",
    ] {
        let a = page.raw("GET", &format!("{right}{outside}"), &h, "");
        assert!(
            matches!(a.status, 400 | 403 | 404),
            "{outside}: {}",
            a.status
        );
        assert!(!a.body.contains("root:"), "{outside}: {}", a.body);
    }
    // DNS rebinding: the right secret under another name is refused.
    let evil = format!("evil.example:{}", page.port);
    assert_eq!(page.raw("GET", &right, &[("Host", &evil)], "").status, 400);
    let other_port = format!("127.0.0.1:{}", page.port.wrapping_add(1));
    assert_eq!(
        page.raw("GET", &right, &[("Host", &other_port)], "").status,
        400
    );
    let localhost = format!("localhost:{}", page.port);
    assert_eq!(
        page.raw("GET", &right, &[("Host", &localhost)], "").status,
        200
    );
    // Other methods are refused.
    assert_eq!(page.raw("DELETE", &right, &h, "").status, 405);
}

/// Where the machine has IPv6, the page answers on ::1 too (a browser may
/// reach `localhost` there first), with the same checks.
#[test]
fn the_page_answers_on_the_ipv6_loopback_too() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI: no IPv6 loopback");
        eprintln!("skipped: this machine has no IPv6 loopback");
        return;
    }
    let page = Page::start(&[]);
    let right = format!("/{}/", page.secret);
    let v6 = format!("[::1]:{}", page.port);
    let ok = page.raw_at("::1", "GET", &right, &[("Host", &v6)], "");
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.body.contains("Timeline"), "{}", ok.body);
    let evil = format!("evil.example:{}", page.port);
    assert_eq!(
        page.raw_at("::1", "GET", &right, &[("Host", &evil)], "")
            .status,
        400
    );
    assert_eq!(
        page.raw_at("::1", "GET", "/", &[("Host", &v6)], "").status,
        403
    );
}

#[test]
fn a_change_needs_the_token_and_the_page_origin() {
    let page = Page::start(&[]);
    let token = page.csrf();
    let path = format!("/{}/picks", page.secret);
    let (host, origin) = (page.host(), page.origin());
    let pick = "pick=t%3A2%3A1%3A1";
    // No token, a wrong token, a foreign or missing origin: refused.
    for (headers, body) in [
        (
            vec![("Host", host.as_str()), ("Origin", origin.as_str())],
            pick.to_owned(),
        ),
        (
            vec![("Host", host.as_str()), ("Origin", origin.as_str())],
            format!("{pick}&csrf={}", "0".repeat(32)),
        ),
        (
            vec![("Host", host.as_str()), ("Origin", "http://evil.example")],
            format!("{pick}&csrf={token}"),
        ),
        (
            vec![("Host", host.as_str())],
            format!("{pick}&csrf={token}"),
        ),
    ] {
        let a = page.raw("POST", &path, &headers, &body);
        assert_eq!(a.status, 403, "{body} {headers:?}: {}", a.body);
    }
    assert!(page.get("/picks").body.contains("Nothing picked yet"));
    let a = page.post("/picks", &format!("{pick}&csrf={token}"));
    assert_eq!(a.status, 303, "{}", a.body);
    assert!(page.get("/picks").body.contains("The Rust book"));
}

#[test]
fn a_restore_shows_its_plan_and_command_line_first() {
    let page = Page::start(&[]);
    let plan = page.get("/plan?action=restore&snapshot=1");
    assert_eq!(plan.status, 200, "{}", plan.body);
    assert!(plan.body.contains(" restore snapshot:1\n"), "{}", plan.body);
    assert!(
        plan.body.contains("restore snapshot:1 --dry-run"),
        "{}",
        plan.body
    );
    assert!(plan.body.contains("would write"), "{}", plan.body);
    // The plan changed nothing: one undo point comes only with the restore.
    assert_eq!(page.env.list_snapshots(&page.profile).len(), 2);
    let done = page.do_it("action=restore&snapshot=1", &plan);
    assert_eq!(done.status, 200);
    assert!(
        done.body.contains("done: Firefox reopens snapshot 1"),
        "{}",
        done.body
    );
    assert!(page.profile.join("sessionstore.jsonlz4").exists());
    assert!(
        page.env.list_snapshots(&page.profile).len() > 2,
        "the undo point"
    );
    let home = page.get("/").body;
    assert_contains_all(&home, &["undo point of a restore", "restored"]);
}

#[test]
fn picked_windows_are_added_at_next_start() {
    let page = Page::start(&[]);
    // Window 1 of snapshot 1, a window of its own.
    let plan = page.plan_for("pick=w%3A1%3A1", "add");
    assert_eq!(plan.status, 200, "{}", plan.body);
    assert!(
        plan.body.contains(" extract snapshot:1 --window 1 -o "),
        "{}",
        plan.body
    );
    page.add_as_planned(&plan);
    assert!(page.profile.join("sessionstore.jsonlz4").exists());
}

#[cfg(unix)]
#[test]
fn open_now_runs_the_browser_remote_command() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("args");
    let bin = crate::ui_page::fake_browser(dir.path(), &log);
    let page = Page::start(&["--browser-bin", bin.to_str().unwrap()]);
    // The window of snapshot 2 (three tabs, one javascript:), and one tab.
    let plan = page.plan_for("pick=w%3A2%3A1&pick=t%3A1%3A1%3A1", "open");
    assert!(
        plan.body.contains(
            "--new-window https://doc.rust-lang.org/book/ --new-tab https://added.example/"
        ),
        "{}",
        plan.body
    );
    assert!(plan.body.contains("left out (not a web address)"));
    assert!(!log.exists(), "the plan ran nothing");
    let done = page.do_it("action=open", &plan);
    assert!(done.body.contains("Done."), "{}", done.body);
    let mut args = String::new();
    for _ in 0..100 {
        args = std::fs::read_to_string(&log).unwrap_or_default();
        if args.lines().count() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut lines: Vec<&str> = args.lines().collect();
    lines.sort_unstable();
    let profile = page.profile.display();
    assert_eq!(
        lines,
        [
            format!("--profile {profile} --new-tab https://doc.rust-lang.org/book/"),
            format!("--profile {profile} --new-window https://doc.rust-lang.org/book/ --new-tab https://added.example/"),
        ]
    );
}

#[test]
fn bringing_back_is_refused_while_the_browser_runs() {
    let page = Page::start(&[]);
    // The browser starts after the plan was shown.
    let plan = page.get("/plan?action=restore&snapshot=1");
    let firefox = ffsession_gen::FirefoxLockHolder::hold(&page.profile);
    let done = page.do_it("action=restore&snapshot=1", &plan);
    assert_eq!(done.status, 200);
    assert!(done.body.contains("A step failed"), "{}", done.body);
    assert!(done.body.contains("Firefox is running"), "{}", done.body);
    assert!(!page.profile.join("sessionstore.jsonlz4").exists());
    drop(firefox);
}

#[test]
fn a_damaged_snapshot_is_marked_and_rescued_from_the_page() {
    let (env, profile) = two_snapshots();
    let g = tabs_session(60);
    env.profile_with_recovery(&g.packed[..g.packed.len() * 8 / 10]);
    let out = env.store_cmd(&profile).arg("backup").run();
    assert_eq!(out.status.code(), Some(3), "backup's alarm");
    let page = Page::serve(env, profile, &[]);
    let home = page.get("/");
    assert!(home.body.contains("alarm: damaged file"), "{}", home.body);
    let snap = page.get("/snapshot/3");
    assert!(
        snap.body.contains("damaged when it was taken"),
        "{}",
        snap.body
    );
    assert!(snap.body.contains("plan?action=rescue&amp;snapshot=3"));
    let plan = page.get("/plan?action=rescue&snapshot=3");
    assert!(
        plan.body.contains(" rescue snapshot:3 -o "),
        "{}",
        plan.body
    );
    assert!(plan.body.contains("would write"), "{}", plan.body);
    assert!(!page.profile.join("sessionstore.jsonlz4").exists());
    let done = page.do_it("action=rescue&snapshot=3", &plan);
    assert!(done.body.contains("Done."), "{}", done.body);
    assert!(page.profile.join("sessionstore.jsonlz4").exists());
}

#[test]
fn a_picked_tab_is_added_at_next_start() {
    let page = Page::start(&[]);
    // The profile's session now holds one other page.
    page.env
        .profile_with_recovery(&with_tabs(&[("https://now.example/", "Now")]));
    // One tab of snapshot 2 (window 1, third tab); a group is its tabs.
    let plan = page.plan_for("pick=t%3A2%3A1%3A3", "add");
    assert!(
        plan.body.contains(" extract snapshot:2 --tab 1:3 -o "),
        "{}",
        plan.body
    );
    let done = page.do_it("action=add", &plan);
    assert!(done.body.contains("Done."), "{}", done.body);
    let urls = page
        .env
        .cmd()
        .args(["tabs", "--format", "urls"])
        .arg(page.profile.join("sessionstore.jsonlz4"))
        .run();
    let urls = String::from_utf8(urls.stdout).unwrap();
    assert!(urls.contains("https://now.example/"), "{urls}");
    assert!(urls.contains("https://added.example/"), "{urls}");
    assert!(!urls.contains("https://doc.rust-lang.org/book/"), "{urls}");
}
