//! `ffsession ui` means one thing (issue 45): what a file in the folder it
//! was started in is named does not change what its actions do, *Do it*
//! runs the plan it showed, a URL that cannot be passed is left out, and
//! what a session holds is shown as it is (bidirectional characters
//! escaped). And the walls a new user met: search by the start of words,
//! a missing snapshot is not found, the timeline newest session first, a
//! remote named by its address, one of a thing in the singular.

use std::path::Path;

use ffsession_gen::Spec;

use crate::common::{
    assert_contains_all, ok_json, ok_stdout, packed_with_tabs, with_tabs, TestEnv,
};
use crate::ui_page::{two_snapshots, Page};

/// The open tabs' URLs of the session file `file`.
fn urls(env: &TestEnv, file: &Path) -> String {
    ok_stdout(env.cmd().args(["tabs", "--format", "urls"]).arg(file))
}

/// A session of one window holding `tabs` (URL, title), whose own time is
/// `last_update`.
fn one_window(tabs: &[(&str, &str)], last_update: u64) -> Vec<u8> {
    let spec = Spec {
        windows: 1,
        tabs: tabs.len(),
        closed_windows: 0,
        closed_tabs_per_window: 0,
        last_update,
        ..Spec::default()
    };
    packed_with_tabs(spec, tabs)
}

/// Files named `current` and `1` in the folder `ui` was started in, each a
/// session of its own: *Add at next start* still merges into the profile's
/// session, and "Restore snapshot #1" still restores snapshot 1 (on
/// 4a435bf the page's `merge current` and `restore 1` read those files).
#[test]
fn files_named_like_snapshots_where_the_page_started_change_nothing() {
    let (env, profile) = two_snapshots();
    env.write(
        "current",
        &with_tabs(&[("https://shadow-current.example/", "Not the session")]),
    );
    env.write(
        "1",
        &with_tabs(&[("https://shadow-one.example/", "Not snapshot 1")]),
    );
    // The profile's session now: one other page.
    env.profile_with_recovery(&with_tabs(&[("https://now.example/", "Now")]));
    let page = Page::serve(env, profile, &[]);
    page.pick("pick=t%3A2%3A1%3A3");
    let done = page.confirm("action=add");
    assert!(done.body.contains("Done."), "{}", done.body);
    let session = page.profile.join("sessionstore.jsonlz4");
    let now = urls(&page.env, &session);
    assert!(now.contains("https://now.example/"), "{now}");
    assert!(now.contains("https://added.example/"), "{now}");
    assert!(!now.contains("shadow"), "{now}");

    let plan = page.get("/plan?action=restore&snapshot=1");
    assert!(!plan.body.contains("shadow"), "{}", plan.body);
    let done = page.do_it("action=restore&snapshot=1", &plan);
    assert!(
        done.body.contains("done: Firefox reopens snapshot 1"),
        "{}",
        done.body
    );
    let restored = urls(&page.env, &session);
    assert!(
        restored.contains("https://doc.rust-lang.org/book/"),
        "{restored}"
    );
    assert!(!restored.contains("shadow"), "{restored}");
    assert!(!restored.contains("https://added.example/"), "{restored}");
}

/// The plan shown is the plan run: picks added (in another tab) after a
/// plan was shown make its *Do it* show the new plan, doing nothing; that
/// page's *Do it* then runs it (on 4a435bf `/do` planned again and ran
/// what the picks had become).
#[test]
fn do_it_runs_only_the_plan_it_showed() {
    let page = Page::start(&[]);
    page.env
        .profile_with_recovery(&with_tabs(&[("https://now.example/", "Now")]));
    let token = page.csrf();
    let shown = page.plan_for("pick=t%3A2%3A1%3A3", "add");
    assert!(shown.body.contains(" --tab 1:3 -o "), "{}", shown.body);
    // Another tab picks one more.
    page.pick("pick=t%3A1%3A1%3A1");
    let answer = page.do_it("action=add", &shown);
    assert_eq!(answer.status, 200);
    assert!(!answer.body.contains("Done."), "{}", answer.body);
    assert!(answer.body.contains("The plan changed"), "{}", answer.body);
    assert!(
        answer.body.contains("extract snapshot:1 --tab 1:1 -o"),
        "the new plan: {}",
        answer.body
    );
    let session = page.profile.join("sessionstore.jsonlz4");
    assert!(!session.exists(), "nothing was done");
    // A *Do it* with no plan at all runs nothing either.
    let bare = page.post("/do", &format!("action=add&csrf={token}"));
    assert!(!bare.body.contains("Done."), "{}", bare.body);
    assert!(!session.exists());
    let done = page.do_it("action=add", &answer);
    assert!(done.body.contains("Done."), "{}", done.body);
    let now = urls(&page.env, &session);
    assert!(now.contains("https://added.example/"), "{now}");
    assert!(now.contains("https://doc.rust-lang.org/book/"), "{now}");
}

/// *Open now* with a URL holding a NUL (which no command line can carry):
/// it is left out, named, and the others open (on 4a435bf the browser's
/// whole command failed to start, so none opened).
#[cfg(unix)]
#[test]
fn a_url_that_cannot_be_passed_is_left_out_and_the_others_open() {
    let env = TestEnv::new();
    let log = env.path().join("browser.log");
    let bin = crate::ui_page::fake_browser(env.path(), &log);
    let profile = env.back_up_recovery(&one_window(
        &[
            ("https://one.example/", "One"),
            ("https://two.example/\u{0}evil", "Two"),
            ("https://three.example/\u{1b}[2J", "Three"),
            ("https://four.example/", "Four"),
        ],
        1_790_000_000_000,
    ));
    let page = Page::serve(env, profile, &["--browser-bin", bin.to_str().unwrap()]);
    let plan = page.plan_for("pick=w%3A1%3A1", "open");
    let done = page.do_it("action=open", &plan);
    assert!(done.body.contains("Done."), "{}", done.body);
    let start = std::time::Instant::now();
    let mut opened = String::new();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        opened = std::fs::read_to_string(&log).unwrap_or_default();
        if opened.ends_with('\n') {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        opened.trim_end(),
        format!(
            "--profile {} --new-window https://one.example/ --new-tab https://four.example/",
            page.profile.display()
        )
    );
    // Each left out is named on the plan.
    assert!(
        plan.body
            .contains(r"left out (it holds a control character): https://two.example/\u{0}evil"),
        "{}",
        plan.body
    );
    assert!(
        plan.body
            .contains(r"left out (it holds a control character): https://three.example/\u{1b}[2J"),
        "{}",
        plan.body
    );
}

/// A right-to-left override (or any bidirectional control) in a title or
/// URL is shown escaped, on a snapshot's page, in search results and in
/// the picks, so a link cannot look like another address (on 4a435bf they
/// were shown as they are).
#[test]
fn bidirectional_characters_are_shown_escaped() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&one_window(
        &[(
            "https://evil.example/\u{202e}moc.knab//:sptth",
            "Invoice\u{2067} \u{200f}fdp.exe",
        )],
        1_790_000_000_000,
    ));
    let page = Page::serve(env, profile, &[]);
    page.pick("pick=w%3A1%3A1");
    for path in ["/snapshot/1", "/search?q=invoice", "/picks"] {
        let a = page.get(path);
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        assert!(
            a.body
                .contains(r"https://evil.example/\u{202e}moc.knab//:sptth"),
            "{path}: {}",
            a.body
        );
        assert!(
            a.body.contains(r"Invoice\u{2067} \u{200f}fdp.exe"),
            "{path}: {}",
            a.body
        );
        for c in ['\u{202e}', '\u{2067}', '\u{200f}'] {
            assert!(!a.body.contains(c), "{path}: {c:?} shown as it is");
        }
    }
}

/// Search as you type finds a word by its start (on 4a435bf `kiw` found
/// nothing, `kiwi` did); the command line shown finds the same.
#[test]
fn search_as_you_type_finds_words_by_their_start() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&one_window(
        &[
            ("https://fruit.example/kiwi", "Kiwi season"),
            ("https://other.example/", "Apples"),
        ],
        1_790_000_000_000,
    ));
    let page = Page::serve(env, profile.clone(), &[]);
    for q in ["kiw", "kiwi", "Ki", "kiw%20seas", "fruit.exam"] {
        let a = page.get(&format!("/search?part=1&q={q}"));
        assert_eq!(a.status, 200);
        assert!(a.body.contains("Kiwi season"), "{q}: {}", a.body);
        assert!(a.body.contains("1 tab:"), "{q}: {}", a.body);
        assert!(!a.body.contains("Apples"), "{q}: {}", a.body);
    }
    let a = page.get("/search?part=1&q=iwi");
    assert!(a.body.contains("No tab matches."), "{}", a.body);
    // "Same as" says the words as prefixes, which the CLI reads the same.
    let a = page.get("/search?part=1&q=kiw");
    assert!(a.body.contains(" search 'kiw*'</code>"), "{}", a.body);
    let cli = ok_json(
        page.env
            .store_cmd(&profile)
            .args(["search", "kiw*", "--json"]),
    );
    assert_eq!(cli.as_array().unwrap().len(), 1, "{cli}");
}

/// `/snapshot/999`: 404, said once and plainly (on 4a435bf: 500, "ffsession:
/// error error ...").
#[test]
fn a_missing_snapshot_is_not_found() {
    let page = Page::start(&[]);
    for path in [
        "/snapshot/999",
        "/diff?a=1&b=999",
        "/plan?action=restore&snapshot=999",
    ] {
        let a = page.get(path);
        assert_eq!(a.status, 404, "{path}: {}", a.body);
        assert!(a.body.contains("no snapshot #999"), "{path}: {}", a.body);
        assert_eq!(
            a.body.to_lowercase().matches("error").count(),
            0,
            "{path}: {}",
            a.body
        );
    }
}

/// The timeline lists the snapshots newest session first, as `restore
/// latest` picks them, not by id: a session backed up after a newer one
/// (an older copy) comes after it (on 4a435bf: by id).
#[test]
fn the_timeline_is_newest_session_first() {
    let env = TestEnv::new();
    let newer = env.back_up_recovery(&one_window(
        &[("https://newer.example/", "Newer")],
        1_790_000_000_000,
    ));
    env.back_up_recovery(&one_window(
        &[("https://older.example/", "Older")],
        1_700_000_000_000,
    ));
    let page = Page::serve(env, newer, &[]);
    let home = page.get("/").body;
    let table = &home[home.find("<table class=\"snapshots\"").expect("the table")..];
    let first = table.find("snapshot/1\"").unwrap();
    let second = table.find("snapshot/2\"").unwrap();
    assert!(first < second, "#2 (older session) before #1: {table}");
    assert!(home.contains("newest session first"), "{home}");
    let latest =
        ok_stdout(
            page.env
                .store_cmd(&page.profile)
                .args(["restore", "latest", "--dry-run"]),
        );
    assert!(latest.starts_with("restore #1 "), "{latest}");
}

/// `ui --store REMOTE` says it serves the remote (its address), not the
/// folder of its local copy (on 4a435bf: the cache folder).
#[test]
fn a_remote_store_is_named_by_its_address() {
    const PASSWORD: &str = "for the label test";
    let (env, profile) = two_snapshots();
    let remote = env.path().join("remote");
    env.copy_to_folder(&profile, &remote, PASSWORD);
    let mut cmd = env.std_store_cmd_at(&profile, &remote);
    Page::temp_here(&env, &mut cmd);
    cmd.args(["ui", "--no-open", "--port", "0"])
        .env("FFSESSION_PASSWORD", PASSWORD);
    let page = Page::spawn(env, profile, cmd);
    let home = page.get("/").body;
    let shown = remote.display().to_string();
    assert!(home.contains(&format!("store: {shown}<")), "{home}");
    let start = std::time::Instant::now();
    while !page.stderr().contains("serving the store") {
        assert!(start.elapsed() < std::time::Duration::from_secs(60));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let said = page.stderr();
    assert_contains_all(
        &said,
        &[&format!("serving the store {shown} on 127.0.0.1:")],
    );
}

/// One window, one tab, one snapshot: in the singular (on 4a435bf "1
/// windows" on the diff page).
#[test]
fn one_of_a_thing_is_in_the_singular() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&one_window(
        &[("https://a.example/", "A")],
        1_790_000_000_000,
    ));
    env.back_up_recovery(&one_window(
        &[("https://a.example/", "A"), ("https://b.example/", "B")],
        1_790_000_060_000,
    ));
    let page = Page::serve(env, profile, &[]);
    let d = page.get("/diff?a=1&b=2").body;
    assert!(
        d.contains("1 tab added, 0 removed, 0 moved; 0 windows opened, 0 closed (1 window, 1 tab -&gt; 1 window, 2 tabs)"),
        "{d}"
    );
    let found = page.get("/search?part=1&q=b.example").body;
    assert!(found.contains("1 tab:"), "{found}");
    assert!(found.contains("in 1 snapshot<"), "{found}");
}
