//! `ffsession ui`: recently closed tabs and closed windows added at the
//! next start (through `extract --closed-tab` / `--closed-window`), and a
//! remote store whose password is typed once at the start.

use std::path::Path;

use crate::common::{ok_json, ok_stdout, undo_id, with_tabs, TestEnv};
use crate::ui_page::Page;

/// The open tabs' URLs of the session file `file`.
fn urls(env: &TestEnv, file: &Path) -> String {
    ok_stdout(env.cmd().args(["tabs", "--format", "urls"]).arg(file))
}

/// The URL of tab `position` of window `window` among the tabs of `state`
/// ("closed" or "closed-window") of snapshot 2's session.
fn closed_url(env: &TestEnv, state: &str, window: u64, position: u64) -> String {
    let file = env.path().join("snapshot-2.jsonlz4");
    std::fs::write(
        &file,
        with_tabs(&[
            ("https://doc.rust-lang.org/book/", "The Rust book"),
            (
                "javascript:alert(document.cookie)",
                "<script>alert('pwned')</script>",
            ),
            ("https://added.example/", "Added later"),
        ]),
    )
    .unwrap();
    let all = ok_json(env.cmd().args(["tabs", "--closed", "--json"]).arg(&file));
    let found = all
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["state"] == state && t["window"] == window && t["position"] == position)
        .unwrap_or_else(|| panic!("no {state} tab {window}:{position}: {all}"));
    found["url"].as_str().unwrap().to_owned()
}

#[test]
fn a_closed_tab_and_a_closed_window_are_added_at_next_start() {
    let page = Page::start(&[]);
    let closed_tab = closed_url(&page.env, "closed", 1, 1);
    let of_window = closed_url(&page.env, "closed-window", 1, 1);
    // The profile's session now holds one other page.
    page.env
        .profile_with_recovery(&with_tabs(&[("https://now.example/", "Now")]));
    let session = page.profile.join("sessionstore-backups/recovery.jsonlz4");
    assert!(!urls(&page.env, &session).contains(&closed_tab));
    let snap = page.get("/snapshot/2").body;
    assert!(snap.contains("value=\"c:2:1:1\""), "{snap}");
    assert!(snap.contains("value=\"k:2:1\""), "a closed window's box");
    let plan = page.plan_for("pick=c%3A2%3A1%3A1&pick=k%3A2%3A1", "add");
    assert!(
        plan.body
            .contains(" extract snapshot:2 --closed-tab 1:1 --closed-window 1 -o "),
        "{}",
        plan.body
    );
    page.add_as_planned(&plan);
    let now = urls(&page.env, &page.profile.join("sessionstore.jsonlz4"));
    assert!(now.contains("https://now.example/"), "{now}");
    // Open tabs now, beside the current ones.
    assert!(now.contains(&closed_tab), "{closed_tab}: {now}");
    assert!(now.contains(&of_window), "{of_window}: {now}");
}

#[test]
fn an_archived_tab_is_added_at_next_start() {
    const DAY: u64 = 86_400_000;
    let env = TestEnv::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut v: serde_json::Value = serde_json::from_str(
        &crate::common::session(ffsession_gen::Spec {
            tabs: 4,
            windows: 2,
            ..ffsession_gen::Spec::default()
        })
        .json,
    )
    .unwrap();
    for w in v["windows"].as_array_mut().unwrap() {
        for t in w["tabs"].as_array_mut().unwrap() {
            t["lastAccessed"] = now.into();
            t["pinned"] = false.into();
        }
    }
    v["windows"][0]["tabs"] = serde_json::json!([
        {"entries": [{"url": "https://kept.example/", "title": "Kept"}], "index": 1, "lastAccessed": now},
        {"entries": [{"url": "https://old.example/a", "title": "Before"},
                     {"url": "https://old.example/", "title": "Old"}], "index": 2, "lastAccessed": now - 90 * DAY},
    ]);
    v["windows"][0]["selected"] = 1.into();
    let packed = ffsession_gen::mozlz4(ffsession_gen::firefox_json(&v).as_bytes());
    let profile = env.profile_with(&[("sessionstore.jsonlz4", &packed)]);
    ok_stdout(env.store_cmd(&profile).arg("backup"));
    let done = ok_stdout(
        env.store_cmd(&profile)
            .args(["tidy", "--archive-older-than", "30d"]),
    );
    let undo = undo_id(&done);
    let session = profile.join("sessionstore.jsonlz4");
    assert!(!urls(&env, &session).contains("https://old.example/"));
    let page = Page::serve(env, profile, &[]);
    let snap = page.get(&format!("/snapshot/{undo}")).body;
    let pick = format!("a:{undo}:0");
    assert!(snap.contains(&format!("value=\"{pick}\"")), "{snap}");
    assert!(snap.contains("https://old.example/"), "{snap}");
    let plan = page.plan_for(&format!("pick={}", pick.replace(':', "%3A")), "add");
    assert!(
        plan.body
            .contains(&format!(" extract snapshot:{undo} --archived-tab 1 -o ")),
        "{}",
        plan.body
    );
    let done = page.do_it("action=add", &plan);
    assert!(done.body.contains("Done."), "{}", done.body);
    let now = urls(&page.env, &session);
    assert!(now.contains("https://kept.example/"), "{now}");
    assert!(now.contains("https://old.example/"), "{now}");
}

/// `ffsession ui` on a remote store, in a terminal (`script` gives it one)
/// where the password is typed once.
#[cfg(target_os = "linux")]
#[test]
fn a_remote_store_asks_its_password_once_and_the_actions_use_it() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    const PASSWORD: &str = "typed at the start 7Zq";
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(std::env::var_os("CI").is_none(), "CI: `script` is missing");
        eprintln!("skipped: no `script` (util-linux) to give ffsession a terminal");
        return;
    }
    let (env, profile) = crate::ui_page::two_snapshots();
    let remote = env.path().join("remote");
    env.copy_to_folder(&profile, &remote, PASSWORD);
    // This machine kept the remote's key: forgotten, so that the password
    // is asked (as on a machine that never opened it).
    ok_stdout(env.cmd().args(["remote", "forget", "--all"]));
    let exe = assert_cmd::cargo::cargo_bin("ffsession");
    let quote = |p: &Path| format!("'{}'", p.display());
    let line = format!(
        "{} --profile {} --store {} ui --no-open --port 0",
        quote(&exe),
        quote(&profile),
        quote(&remote)
    );
    let mut child = env
        .sealed_cmd("script")
        .args(["-qfec", &line, "/dev/null"])
        .env("TMPDIR", env.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let mut out = child.stdout.take().unwrap();
    let into = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let wait_for = |what: &str| -> String {
        let start = Instant::now();
        loop {
            let text = seen.lock().unwrap().clone();
            if text.contains(what) {
                return text;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no {what:?} in {text:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("password for ");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{PASSWORD}\n").as_bytes()).unwrap();
    stdin.flush().unwrap();
    let text = wait_for("/\r\n");
    let at = text.find("http://127.0.0.1:").expect("the address");
    let rest = text[at + "http://127.0.0.1:".len()..]
        .split_whitespace()
        .next()
        .unwrap();
    let (port, secret) = rest.split_once('/').unwrap();
    assert_eq!(
        text.matches("password for ").count(),
        1,
        "asked once: {text}"
    );
    let page = Page {
        env,
        profile,
        child,
        port: port.parse().unwrap(),
        secret: secret.trim_end_matches('/').to_owned(),
    };
    page.env
        .profile_with_recovery(&with_tabs(&[("https://now.example/", "Now")]));
    page.pick("pick=t%3A2%3A1%3A3");
    // The preview runs `extract` on the remote store: it has the password.
    let plan = page.get("/plan?action=add");
    assert!(
        plan.body.contains(" extract snapshot:2 --tab 1:3 -o "),
        "{}",
        plan.body
    );
    assert!(!plan.body.contains("A step fails"), "{}", plan.body);
    assert!(plan.body.contains("Do it"), "{}", plan.body);
    let done = page.do_it("action=add", &plan);
    assert!(done.body.contains("Done."), "{}", done.body);
    for a in [&plan, &done] {
        assert!(!a.body.contains(PASSWORD), "the password in the page");
        assert!(!a.body.contains("--password"), "{}", a.body);
    }
    let now = urls(&page.env, &page.profile.join("sessionstore.jsonlz4"));
    crate::common::assert_contains_all(&now, &["https://added.example/", "https://now.example/"]);
}

/// The sessions the actions write (cookies and form data) stay in a folder
/// only the user opens: 0700 on Unix; on Windows the access list of a
/// store folder (the user, SYSTEM, the Administrators), whatever the temp
/// folder grants.
#[test]
fn what_the_page_writes_is_in_a_private_folder() {
    let page = Page::start(&[]);
    let plan = page.plan_for("pick=c%3A2%3A1%3A1", "add");
    assert!(plan.body.contains("Do it"), "{}", plan.body);
    let [folder] = &page.private_folders()[..] else {
        panic!("not one private folder: {:?}", page.private_folders());
    };
    let written: Vec<_> = std::fs::read_dir(folder).unwrap().collect();
    assert!(
        !written.is_empty(),
        "the plan's extract and merge wrote there"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }
    #[cfg(windows)]
    {
        use ffsession::store::{current_user_sid, dacl_sddl};
        let user = current_user_sid().unwrap();
        let sddl = dacl_sddl(folder).unwrap();
        assert!(sddl.contains(&format!("A;OICI;FA;;;{user}")), "{sddl}");
        let body = &sddl[sddl.find('(').unwrap_or(sddl.len())..];
        for ace in body.split_terminator(')') {
            let who = ace.rsplit(';').next().unwrap();
            assert!(
                [user.as_str(), "SY", "BA"].contains(&who),
                "{who} may open it: {sddl}"
            );
        }
    }
}
