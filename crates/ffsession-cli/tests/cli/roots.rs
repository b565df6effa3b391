//! Every place a person's Firefox keeps profiles on Linux (issue 37): the
//! XDG folder of Firefox 147 and later, the legacy `~/.mozilla/firefox`
//! when it exists, the Snap's and the Flatpak's, found with no flag.

#![cfg(target_os = "linux")]

use crate::common::{expect_error, firefox_profiles, ok_json, ok_output, ok_stdout, TestEnv};

const NOW: u64 = 1_795_400_000_000;

#[test]
fn a_new_linux_users_firefox_is_found_in_the_xdg_folder() {
    let env = TestEnv::new();
    let xdg = env.home().join(".config/mozilla/firefox");
    firefox_profiles(
        &xdg,
        &[("default-esr", "abcd1234.default-esr", Some(7))],
        NOW,
    );
    let profiles = ok_json(env.cmd().args(["profiles", "--json"]));
    assert_eq!(profiles[0]["name"], "default-esr", "{profiles}");
    assert_eq!(profiles[0]["browser"], "Firefox ESR");
    assert_eq!(profiles[0]["root"], xdg.to_str().unwrap());
    // And backed up with no flag at all.
    ok_output(env.cmd().arg("backup"));
    let list = ok_stdout(env.cmd().arg("list"));
    assert!(list.contains("7 tabs"), "{list}");
}

#[test]
fn the_legacy_folder_wins_where_it_exists_and_both_are_listed() {
    let env = TestEnv::new();
    let xdg = env.home().join(".config/mozilla/firefox");
    let legacy = env.home().join(".mozilla/firefox");
    firefox_profiles(&xdg, &[("new", "n.default", Some(3))], NOW);
    firefox_profiles(&legacy, &[("old", "o.default", Some(4))], NOW);
    // Firefox keeps using ~/.mozilla/firefox once it exists: its default first.
    let info = ok_json(env.cmd().args(["info", "--json"]));
    assert_eq!(info["tabs"], 4, "{info}");
    let text = ok_stdout(env.cmd().arg("profiles"));
    let legacy_at = text.find(&format!("== Firefox: {}", legacy.display()));
    let xdg_at = text.find(&format!("== Firefox: {}", xdg.display()));
    assert!(
        matches!((legacy_at, xdg_at), (Some(l), Some(x)) if l < x),
        "{text}"
    );
    // The other one's profile is found by name.
    let info = ok_json(env.cmd().args(["--profile", "new", "info", "--json"]));
    assert_eq!(info["tabs"], 3, "{info}");
}

#[test]
fn snap_and_flatpak_profiles_are_found_and_named() {
    for (package, root) in [
        ("Snap", "snap/firefox/common/.mozilla/firefox"),
        ("Flatpak", ".var/app/org.mozilla.firefox/.mozilla/firefox"),
        (
            "Flatpak",
            ".var/app/org.mozilla.firefox/config/mozilla/firefox",
        ),
    ] {
        let env = TestEnv::new();
        let root = env.home().join(root);
        firefox_profiles(
            &root,
            &[("default-release", "x.default-release", Some(5))],
            NOW,
        );
        let profiles = ok_json(env.cmd().args(["profiles", "--json"]));
        assert_eq!(
            profiles[0]["browser"],
            format!("Firefox ({package})"),
            "{profiles}"
        );
        assert_eq!(profiles[0]["root"], root.to_str().unwrap());
        ok_output(env.cmd().arg("backup"));
    }
}

#[test]
fn no_profile_anywhere_names_every_place_looked_in() {
    let env = TestEnv::new();
    let err = expect_error(env.cmd().arg("profiles"));
    // Every folder, named after the home folder once.
    let home = format!("in {}: ", env.home().display());
    assert!(err.contains(&home), "{err}");
    for place in [
        ".config/mozilla/firefox",
        ".mozilla/firefox",
        "snap/firefox/common/.mozilla/firefox",
        ".var/app/org.mozilla.firefox/.mozilla/firefox",
        ".var/app/org.mozilla.firefox/config/mozilla/firefox",
        ".config/zen",
        ".librewolf",
        ".waterfox",
        ".floorp",
    ] {
        assert!(
            err.contains(&format!(": {place},")) || err.contains(&format!(", {place},")),
            "{place}: {err}"
        );
    }
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn moz_legacy_home_puts_the_legacy_folder_first() {
    let env = TestEnv::new();
    let order = |err: &str| {
        let at = |place: &str| {
            err.find(&format!(": {place},"))
                .or_else(|| err.find(&format!(", {place},")))
                .unwrap()
        };
        (at(".config/mozilla/firefox"), at(".mozilla/firefox"))
    };
    let err = expect_error(env.cmd().arg("profiles"));
    let (x, l) = order(&err);
    assert!(x < l, "{err}");
    let err = expect_error(env.cmd().env("MOZ_LEGACY_HOME", "1").arg("profiles"));
    let (x, l) = order(&err);
    assert!(l < x, "{err}");
}

#[test]
fn one_profile_name_in_two_places_gets_two_stores_and_all_profiles_backs_up_both() {
    let env = TestEnv::new();
    let native = env.home().join(".config/mozilla/firefox");
    let flatpak = env
        .home()
        .join(".var/app/org.mozilla.firefox/.mozilla/firefox");
    firefox_profiles(
        &native,
        &[("default-release", "a.default-release", Some(3))],
        NOW,
    );
    firefox_profiles(
        &flatpak,
        &[("default-release", "b.default-release", Some(6))],
        NOW,
    );
    ok_output(env.cmd().args(["backup", "--all-profiles"]));
    let mut stores: Vec<_> = std::fs::read_dir(env.stores_root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("default-release"))
        .collect();
    stores.sort();
    assert_eq!(stores.len(), 2, "{stores:?}");
    // Each lists only its own profile's session.
    for (profile, tabs) in [
        (native.join("a.default-release"), 3),
        (flatpak.join("b.default-release"), 6),
    ] {
        let list = ok_json(
            env.cmd()
                .arg("--profile")
                .arg(&profile)
                .args(["list", "--json"]),
        );
        let counts: Vec<_> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["counts"]["tabs"].clone())
            .collect();
        assert_eq!(counts, [tabs], "{list}");
    }
}
