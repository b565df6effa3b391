//! The Firefox family (issue 37): every place each browser keeps its
//! profiles on this system (the platform module's table), each found with
//! no flag, listed with its browser's name, backed up and restored; and
//! `--browser`, Firefox's editions, and one profile name under two browsers.

use std::fs;
use std::path::Path;

use ffsession::platform::Platform;

use crate::common::{
    expect_error, firefox_profiles, ok_json, ok_output, ok_stdout, packed, TestEnv,
};

const NOW: u64 = 1_795_400_000_000;
const HOUR: u64 = 3_600_000;

/// A root as the browser writes it: `profiles.ini` with an install section
/// and `installs.ini` naming the install's default, as Firefox ESR 153
/// wrote them here (`Locked=1`, the profile as `<salt>.<name>`).
fn browser_root(root: &Path, name: &str, folder: &str, tabs: usize, last_update: u64) {
    firefox_profiles(root, &[(name, folder, Some(tabs))], last_update);
    let ini = fs::read_to_string(root.join("profiles.ini")).unwrap();
    let install = format!("[Install1F1D0D3D5B2C8E77]\nDefault={folder}\nLocked=1\n\n");
    fs::write(root.join("profiles.ini"), install + &ini).unwrap();
    fs::write(
        root.join("installs.ini"),
        format!("[1F1D0D3D5B2C8E77]\nDefault={folder}\nLocked=1\n"),
    )
    .unwrap();
}

/// Firefox's and Zen's roots, each with a profile named `default-release`
/// (Firefox's in `f.default-release`, 3 tabs; Zen's in `z.default-release`,
/// 7 tabs).
fn firefox_and_zen_default_release(env: &TestEnv) {
    let roots = Platform::CURRENT.firefox_roots(&env.folders(), false);
    let zen = roots
        .iter()
        .find(|r| r.browser == "Zen")
        .unwrap()
        .path
        .clone();
    browser_root(
        &env.firefox_root(),
        "default-release",
        "f.default-release",
        3,
        NOW,
    );
    browser_root(&zen, "default-release", "z.default-release", 7, NOW);
}

/// The name each browser gives its first profile.
fn first_profile(browser: &str) -> &'static str {
    match browser {
        "LibreWolf" => "default-default",
        "Waterfox" => "68-edition-default",
        "Zen" => "Default (release)",
        _ => "default-release",
    }
}

#[test]
fn every_browser_in_every_place_is_listed_backed_up_and_restored() {
    let probe = TestEnv::new();
    let roots = Platform::CURRENT.firefox_roots(&probe.folders(), false);
    let mut seen = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let label = root.label();
        if !seen.contains(&label) {
            seen.push(label.clone());
        }
        let env = TestEnv::new();
        // The same place in this test's home.
        let rel = root.path.strip_prefix(probe.home()).unwrap();
        let dir = env.home().join(rel);
        let name = first_profile(root.browser);
        let folder = format!("x{i}abcd.{}", name.replace([' ', '(', ')'], ""));
        browser_root(&dir, name, &folder, 4 + i, NOW);
        let profiles = ok_json(env.cmd().args(["profiles", "--json"]));
        assert_eq!(profiles[0]["browser"], label.as_str(), "{profiles}");
        assert_eq!(profiles[0]["name"], name, "{profiles}");
        assert_eq!(profiles[0]["is_default"], true, "{profiles}");
        assert_eq!(profiles[0]["root"], dir.to_str().unwrap(), "{label}");
        ok_output(env.cmd().arg("backup"));
        // The browser went on to another session; restore brings the
        // backed-up one back into this profile.
        let recovery = dir
            .join(&folder)
            .join("sessionstore-backups/recovery.jsonlz4");
        fs::write(&recovery, packed(30, NOW + HOUR)).unwrap();
        ok_output(env.cmd().args(["restore", "latest"]));
        let info = ok_json(env.cmd().args(["info", "--json"]));
        assert_eq!(info["tabs"], 4 + i, "{label}: {info}");
        let by_flag =
            ok_json(
                env.cmd()
                    .args(["--browser", &root.browser.to_lowercase(), "info", "--json"]),
            );
        assert_eq!(by_flag["tabs"], 4 + i, "{label}: {by_flag}");
    }
    // Every browser, and on Linux the Snap's and the Flatpaks' places too.
    let expected = if Platform::CURRENT == Platform::Linux {
        11
    } else {
        5
    };
    assert_eq!(seen.len(), expected, "{seen:?}");
}

/// Firefox, its Developer Edition and its Nightly installed side by side:
/// one profiles.ini, an install section each; each install's default is
/// marked, the release's is the one used with no flag, `--browser` picks
/// another.
#[test]
fn firefox_editions_share_a_folder_and_each_has_its_default() {
    let env = TestEnv::new();
    let root = env.firefox_root();
    firefox_profiles(
        &root,
        &[
            ("dev-edition-default", "a.dev-edition-default", Some(2)),
            ("default-release", "b.default-release", Some(3)),
            ("default-nightly", "c.default-nightly", Some(5)),
            ("old", "d.old", None),
        ],
        NOW,
    );
    let ini = fs::read_to_string(root.join("profiles.ini")).unwrap();
    let installs = "[Install46F492E0ACFF84D4]\nDefault=a.dev-edition-default\nLocked=1\n\n\
                    [InstallE7CF176E110C211B]\nDefault=b.default-release\nLocked=1\n\n\
                    [Install6F193CCC56814779]\nDefault=c.default-nightly\nLocked=1\n\n";
    fs::write(root.join("profiles.ini"), installs.to_owned() + &ini).unwrap();
    let profiles = ok_json(env.cmd().args(["profiles", "--json"]));
    let row = |name: &str| {
        profiles
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        row("dev-edition-default")["browser"],
        "Firefox Developer Edition"
    );
    assert_eq!(row("default-nightly")["browser"], "Firefox Nightly");
    assert_eq!(row("default-release")["browser"], "Firefox");
    for name in ["dev-edition-default", "default-release", "default-nightly"] {
        assert_eq!(row(name)["is_default"], true, "{name}: {profiles}");
    }
    assert_eq!(row("old")["is_default"], false, "{profiles}");
    let text = ok_stdout(env.cmd().arg("profiles"));
    assert!(
        text.contains("dev-edition-default (default of Firefox Developer Edition)"),
        "{text}"
    );
    // No flag: the release's default; --browser: the edition's.
    assert_eq!(ok_json(env.cmd().args(["info", "--json"]))["tabs"], 3);
    for (browser, tabs) in [
        ("nightly", 5),
        ("developer-edition", 2),
        ("Firefox-Nightly", 5),
    ] {
        let info = ok_json(env.cmd().args(["--browser", browser, "info", "--json"]));
        assert_eq!(info["tabs"], tabs, "{browser}: {info}");
    }
    let err = expect_error(env.cmd().args(["--browser", "chrome", "profiles"]));
    assert!(err.contains("chrome") && err.contains("zen"), "{err}");
    // An edition with no profile here says where it looked.
    let err = expect_error(env.cmd().args(["--browser", "beta", "profiles"]));
    // Firefox's one folder (Windows, macOS) as it is; several (Linux)
    // named after the home folder once.
    let rel = root.strip_prefix(env.home()).unwrap();
    let home = format!("in {}: ", env.home().display());
    assert!(
        err.contains(root.to_str().unwrap())
            || (err.contains(&home) && err.contains(rel.to_str().unwrap())),
        "{err}"
    );
}

/// Firefox's and Zen's profiles of one name: two stores, each backing up
/// its own, and `stores` says whose each is.
#[test]
fn one_profile_name_under_two_browsers_gets_two_stores_that_say_whose() {
    let env = TestEnv::new();
    firefox_and_zen_default_release(&env);
    ok_output(env.cmd().args(["backup", "--all-profiles"]));
    let stores = ok_json(env.cmd().args(["stores", "--json"]));
    let rows = stores.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{stores}");
    let mut whose: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["browser"].as_str().unwrap_or("?").to_owned(),
                r["profile_folder"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect();
    whose.sort();
    assert_eq!(whose[0].0, "Firefox");
    assert!(whose[0].1.ends_with("f.default-release"), "{whose:?}");
    assert_eq!(whose[1].0, "Zen");
    assert!(whose[1].1.ends_with("z.default-release"), "{whose:?}");
    let text = ok_stdout(env.cmd().arg("stores"));
    assert!(
        text.contains("(Zen)") && text.contains("(Firefox)"),
        "{text}"
    );
    // Each browser's profile, by --browser, reads its own store.
    for (browser, tabs) in [("firefox", 3), ("zen", 7)] {
        let list = ok_json(env.cmd().args(["--browser", browser, "list", "--json"]));
        assert_eq!(list[0]["counts"]["tabs"], tabs, "{browser}: {list}");
    }
}

/// `service install --all-profiles` covers every browser found: Firefox's
/// and Zen's `default-release` each get a service of their own, watching
/// their own folder, and uninstall removes both.
#[test]
fn services_of_two_browsers_profiles_of_one_name_are_kept_apart() {
    let env = TestEnv::new();
    firefox_and_zen_default_release(&env);
    let out = ok_stdout(
        env.cmd()
            .args(["service", "install", "--all-profiles", "--no-enable"]),
    );
    let wrote: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("wrote "))
        .collect();
    assert_eq!(wrote.len(), 2, "{out}");
    assert_ne!(wrote[0], wrote[1], "{out}");
    let watched: Vec<String> = wrote
        .iter()
        .map(|w| crate::common::read_service_file(Path::new(w.trim_end_matches(':'))))
        .collect();
    assert!(watched[0].contains("f.default-release"), "{}", watched[0]);
    assert!(watched[1].contains("z.default-release"), "{}", watched[1]);
    env.uninstall_all_services(2);
}
