//! Where things are on Linux, macOS and Windows: Firefox's `profiles.ini`,
//! ffsession's stores and config file, the background service's file.
//!
//! Every answer is a function of a [`Platform`] and of the user's
//! [`Folders`], so that each platform's answer is tested on every platform.
//! The library never looks the folders up itself: the CLI finds them (with
//! the `directories` crate) and passes them in.
//!
//! | | Linux | macOS | Windows |
//! |---|---|---|---|
//! | Firefox | `$XDG_CONFIG_HOME/mozilla/firefox` (or the legacy `~/.mozilla/firefox`), Snap, Flatpak | `~/Library/Application Support/Firefox` | `%APPDATA%\Mozilla\Firefox` |
//! | its family | LibreWolf, Floorp, Waterfox, Zen: [`BROWSERS`] | the same | the same |
//! | stores | `~/.local/share/ffsession` | `~/Library/Application Support/ffsession` | `%LOCALAPPDATA%\ffsession\data` |
//! | config | `~/.config/ffsession/config.toml` | `~/Library/Application Support/ffsession/config.toml` | `%APPDATA%\ffsession\config\config.toml` |
//! | service | `~/.config/systemd/user/<unit>.service` | `~/Library/LaunchAgents/<label>.plist` | `%APPDATA%\ffsession\config\<task>.xml`, registered with Task Scheduler |
//!
//! The layouts are the `directories` crate's (`ProjectDirs`), so ffsession's
//! folders are where other programs' are. On Windows the stores are in the
//! local application data, not the roaming one: a store is large and backs up
//! this machine's Firefox, and Windows copies a roaming profile's folder at
//! every logon and logoff.
//!
//! On Linux, Firefox 147 and later keeps its profiles under
//! `$XDG_CONFIG_HOME/mozilla/firefox` (`~/.config/mozilla/firefox`), unless
//! `~/.mozilla/firefox` exists or `MOZ_LEGACY_HOME=1` is set, when it keeps
//! the legacy place ([`linux_legacy_home`]; checked against Firefox ESR 153:
//! an empty `~/.mozilla`, or one holding only `native-messaging-hosts`,
//! does not count). The Snap keeps its own under `~/snap/firefox/common`,
//! the Flatpak under `~/.var/app/org.mozilla.firefox` (its `config/` is the
//! XDG folder there). The browsers built from Firefox follow the same rule
//! under their own names ([`BROWSERS`], docs/browsers.md).
//! [`Platform::firefox_roots`] lists every such place, Firefox's first and,
//! for each browser, the one it uses itself first.

use std::path::PathBuf;

use crate::service::ServiceSpec;

/// An operating system whose conventions ffsession follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// Linux and the other Unix systems (XDG folders, systemd).
    Linux,
    /// macOS (`~/Library`, launchd).
    MacOs,
    /// Windows (known folders, Task Scheduler).
    Windows,
}

/// The user's folders, as the platform defines them (on Linux, after the XDG
/// variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folders {
    /// The home folder.
    pub home: PathBuf,
    /// Application data that may roam with the user: `~/.local/share`,
    /// `~/Library/Application Support`, `%APPDATA%`.
    pub data: PathBuf,
    /// Application data of this machine: `~/.local/share`,
    /// `~/Library/Application Support`, `%LOCALAPPDATA%`.
    pub data_local: PathBuf,
    /// Configuration: `~/.config`, `~/Library/Application Support`,
    /// `%APPDATA%`.
    pub config: PathBuf,
}

/// A browser of the Firefox family: where it keeps its profiles on each
/// system. They all write Firefox's session files (and `profiles.ini`); each
/// keeps them under its own name. The sources of every place are in
/// docs/browsers.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Browser {
    /// Its name: `Firefox`, `LibreWolf`, ...
    pub name: &'static str,
    /// Windows: the folder under `%APPDATA%`.
    pub windows: &'static [&'static str],
    /// macOS: the folder under `~/Library/Application Support`.
    pub macos: &'static [&'static str],
    /// Linux: the legacy folder under the home folder (`.mozilla/firefox`).
    pub legacy: &'static [&'static str],
    /// Linux: the folders under `$XDG_CONFIG_HOME` a new install uses when
    /// the legacy one does not exist (none: the browser stays in the legacy
    /// one).
    pub xdg: &'static [&'static [&'static str]],
    /// The Snap's name, if it has a Snap of its own place.
    pub snap: Option<&'static str>,
    /// The Flatpak application ids (the current one first).
    pub flatpak: &'static [&'static str],
}

/// Firefox, and the browsers built from it that keep profiles of their own:
/// Firefox first. Firefox's Developer Edition, Nightly, Beta and ESR share
/// Firefox's folders (each an install of its own in the same
/// `profiles.ini`).
pub const BROWSERS: &[Browser] = &[
    Browser {
        name: "Firefox",
        windows: &["Mozilla", "Firefox"],
        macos: &["Firefox"],
        legacy: &[".mozilla", "firefox"],
        xdg: &[&["mozilla", "firefox"]],
        snap: Some("firefox"),
        flatpak: &["org.mozilla.firefox"],
    },
    Browser {
        name: "LibreWolf",
        windows: &["librewolf"],
        macos: &["librewolf"],
        legacy: &[".librewolf"],
        xdg: &[&["librewolf", "librewolf"], &["librewolf"]],
        snap: None,
        flatpak: &["io.gitlab.librewolf-community"],
    },
    Browser {
        name: "Floorp",
        windows: &["Floorp"],
        macos: &["Floorp"],
        legacy: &[".floorp"],
        xdg: &[&["floorp"]],
        snap: None,
        flatpak: &["one.ablaze.floorp"],
    },
    Browser {
        name: "Waterfox",
        windows: &["Waterfox"],
        macos: &["Waterfox"],
        legacy: &[".waterfox"],
        xdg: &[],
        snap: None,
        flatpak: &["net.waterfox.waterfox"],
    },
    Browser {
        name: "Zen",
        windows: &["zen"],
        macos: &["zen"],
        legacy: &[".zen"],
        xdg: &[&["zen"]],
        snap: None,
        flatpak: &["app.zen_browser.zen", "io.github.zen_browser.zen"],
    },
];

/// The browser of [`BROWSERS`] named `name` (any case), if there is one.
pub fn browser(name: &str) -> Option<&'static Browser> {
    BROWSERS.iter().find(|b| b.name.eq_ignore_ascii_case(name))
}

/// One place a browser keeps its profiles (the folder holding
/// `profiles.ini`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FirefoxRoot {
    /// The browser: `Firefox`, `LibreWolf`, `Zen`, ...
    pub browser: &'static str,
    /// The package, where it has a place of its own (`Snap`, `Flatpak`);
    /// empty for the system's own install.
    pub package: &'static str,
    /// The folder holding `profiles.ini`.
    pub path: PathBuf,
}

impl FirefoxRoot {
    /// `Firefox`, `Firefox (Flatpak)`.
    pub fn label(&self) -> String {
        if self.package.is_empty() {
            self.browser.to_owned()
        } else {
            format!("{} ({})", self.browser, self.package)
        }
    }
}

fn join(base: &std::path::Path, parts: &[&str]) -> PathBuf {
    parts
        .iter()
        .fold(base.to_path_buf(), |p, part| p.join(part))
}

impl Browser {
    /// Whether this browser on Linux keeps its profiles in its legacy
    /// folder (`~/.mozilla/firefox`): when `moz_legacy_home` (the caller
    /// read `MOZ_LEGACY_HOME=1`), when that folder exists, or when the
    /// browser has no other; otherwise (Firefox 147 and later) it uses its
    /// XDG folder.
    pub fn legacy_home(&self, folders: &Folders, moz_legacy_home: bool) -> bool {
        moz_legacy_home || self.xdg.is_empty() || join(&folders.home, self.legacy).is_dir()
    }

    /// Every place this browser may keep profiles, the one it uses itself
    /// first: on Linux its legacy or XDG folder (as
    /// [`Browser::legacy_home`] decides), then the others, then its Snap's
    /// and Flatpak's, each in both layouts.
    pub fn roots(
        &self,
        platform: Platform,
        folders: &Folders,
        moz_legacy_home: bool,
    ) -> Vec<FirefoxRoot> {
        let root = |package, path| FirefoxRoot {
            browser: self.name,
            package,
            path,
        };
        match platform {
            Platform::Windows => vec![root("", join(&folders.data, self.windows))],
            Platform::MacOs => vec![root("", join(&folders.data, self.macos))],
            Platform::Linux => {
                let home = &folders.home;
                let legacy = join(home, self.legacy);
                let xdg = self.xdg.iter().map(|x| join(&folders.config, x));
                let mut own: Vec<PathBuf> = xdg.collect();
                if self.legacy_home(folders, moz_legacy_home) {
                    own.insert(0, legacy);
                } else {
                    own.push(legacy);
                }
                let mut roots: Vec<FirefoxRoot> = own.into_iter().map(|p| root("", p)).collect();
                // A package's home: the legacy folder in it, then the XDG
                // one (`.config/` in a Snap's, `config/` in a Flatpak's).
                let mut packaged = |package, base: PathBuf, config: &str| {
                    roots.push(root(package, join(&base, self.legacy)));
                    for x in self.xdg {
                        roots.push(root(package, join(&base.join(config), x)));
                    }
                };
                if let Some(snap) = self.snap {
                    packaged("Snap", join(home, &["snap", snap, "common"]), ".config");
                }
                for id in self.flatpak {
                    packaged("Flatpak", join(home, &[".var", "app", id]), "config");
                }
                roots
            }
        }
    }
}

/// Whether Firefox on Linux keeps its profiles in the legacy
/// `~/.mozilla/firefox`: when `moz_legacy_home` (the caller read
/// `MOZ_LEGACY_HOME=1`) or when that folder exists; otherwise, Firefox 147
/// and later use `$XDG_CONFIG_HOME/mozilla/firefox`.
pub fn linux_legacy_home(folders: &Folders, moz_legacy_home: bool) -> bool {
    BROWSERS[0].legacy_home(folders, moz_legacy_home)
}

/// ffsession's name in folder names.
const APP: &str = "ffsession";

impl Platform {
    /// The platform this program was built for.
    pub const CURRENT: Platform = if cfg!(windows) {
        Platform::Windows
    } else if cfg!(target_os = "macos") {
        Platform::MacOs
    } else {
        Platform::Linux
    };

    /// The folder holding Firefox's `profiles.ini`, as Firefox itself
    /// decides it: on Linux the legacy `~/.mozilla/firefox` when
    /// `legacy_home` ([`linux_legacy_home`]), else the XDG folder.
    pub fn firefox_root(self, folders: &Folders, legacy_home: bool) -> PathBuf {
        match self {
            Platform::Linux if legacy_home => folders.home.join(".mozilla").join("firefox"),
            Platform::Linux => folders.config.join("mozilla").join("firefox"),
            Platform::MacOs => folders.data.join("Firefox"),
            Platform::Windows => folders.data.join("Mozilla").join("Firefox"),
        }
    }

    /// Every place a browser of the Firefox family ([`BROWSERS`]) may keep
    /// profiles, Firefox's first and, for each, the one it uses itself
    /// first ([`Browser::roots`]). `moz_legacy_home`: the caller read
    /// `MOZ_LEGACY_HOME=1`. Whether each exists is the caller's to see.
    pub fn firefox_roots(self, folders: &Folders, moz_legacy_home: bool) -> Vec<FirefoxRoot> {
        BROWSERS
            .iter()
            .flat_map(|b| b.roots(self, folders, moz_legacy_home))
            .collect()
    }

    /// The folder holding one backup store per profile.
    pub fn stores_root(self, folders: &Folders) -> PathBuf {
        match self {
            Platform::Linux | Platform::MacOs => folders.data_local.join(APP),
            Platform::Windows => folders.data_local.join(APP).join("data"),
        }
    }

    /// ffsession's configuration folder.
    pub fn config_dir(self, folders: &Folders) -> PathBuf {
        match self {
            Platform::Linux | Platform::MacOs => folders.config.join(APP),
            Platform::Windows => folders.config.join(APP).join("config"),
        }
    }

    /// The configuration file read when no `--config` is given.
    pub fn config_file(self, folders: &Folders) -> PathBuf {
        self.config_dir(folders).join("config.toml")
    }

    /// Where `service install` writes the service's definition: the systemd
    /// user unit, the launchd agent, or (Windows) the task's XML, which
    /// Task Scheduler keeps its own copy of once registered.
    pub fn service_file(self, folders: &Folders, spec: &ServiceSpec) -> PathBuf {
        match self {
            Platform::Linux => folders
                .config
                .join("systemd")
                .join("user")
                .join(format!("{}.service", spec.unit_name())),
            Platform::MacOs => folders
                .home
                .join("Library")
                .join("LaunchAgents")
                .join(format!("{}.plist", spec.launchd_label())),
            Platform::Windows => self
                .config_dir(folders)
                .join(format!("{}.xml", spec.unit_name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ServiceSpec {
        ServiceSpec {
            profile_name: "default-release".into(),
            program: String::new(),
            args: Vec::new(),
        }
    }

    fn folders(home: &str, data: &str, data_local: &str, config: &str) -> Folders {
        Folders {
            home: PathBuf::from(home),
            data: PathBuf::from(data),
            data_local: PathBuf::from(data_local),
            config: PathBuf::from(config),
        }
    }

    /// Each component joined onto `base`, as the platform's own paths are.
    fn under(base: &str, parts: &[&str]) -> PathBuf {
        parts
            .iter()
            .fold(PathBuf::from(base), |p, part| p.join(part))
    }

    #[test]
    fn linux_follows_xdg() {
        let f = folders(
            "/home/me",
            "/home/me/.local/share",
            "/home/me/.local/share",
            "/home/me/.config",
        );
        let p = Platform::Linux;
        // Firefox 147 and later: the XDG folder, unless the legacy one is in force.
        assert_eq!(
            p.firefox_root(&f, false),
            under("/home/me/.config", &["mozilla", "firefox"])
        );
        assert_eq!(
            p.firefox_root(&f, true),
            under("/home/me", &[".mozilla", "firefox"])
        );
        let roots: Vec<(String, PathBuf)> = p
            .firefox_roots(&f, false)
            .into_iter()
            .filter(|r| r.browser == "Firefox")
            .map(|r| (r.label(), r.path))
            .collect();
        assert_eq!(
            roots,
            [
                (
                    "Firefox".into(),
                    under("/home/me/.config", &["mozilla", "firefox"])
                ),
                (
                    "Firefox".into(),
                    under("/home/me", &[".mozilla", "firefox"])
                ),
                (
                    "Firefox (Snap)".into(),
                    under(
                        "/home/me",
                        &["snap", "firefox", "common", ".mozilla", "firefox"]
                    )
                ),
                (
                    "Firefox (Snap)".into(),
                    under(
                        "/home/me",
                        &["snap", "firefox", "common", ".config", "mozilla", "firefox"]
                    )
                ),
                (
                    "Firefox (Flatpak)".into(),
                    under(
                        "/home/me",
                        &[".var", "app", "org.mozilla.firefox", ".mozilla", "firefox"]
                    )
                ),
                (
                    "Firefox (Flatpak)".into(),
                    under(
                        "/home/me",
                        &[
                            ".var",
                            "app",
                            "org.mozilla.firefox",
                            "config",
                            "mozilla",
                            "firefox"
                        ]
                    )
                ),
            ]
        );
        // The legacy folder in force: it comes first.
        assert_eq!(
            p.firefox_roots(&f, true)[0].path,
            under("/home/me", &[".mozilla", "firefox"])
        );
        assert_eq!(
            p.stores_root(&f),
            under("/home/me/.local/share", &["ffsession"])
        );
        assert_eq!(
            p.config_file(&f),
            under("/home/me/.config", &["ffsession", "config.toml"])
        );
        assert_eq!(
            p.service_file(&f, &spec()),
            under(
                "/home/me/.config",
                &["systemd", "user", "ffsession-watch-default-release.service"]
            )
        );
    }

    #[test]
    fn macos_keeps_everything_under_library() {
        let support = "/Users/me/Library/Application Support";
        let f = folders("/Users/me", support, support, support);
        let p = Platform::MacOs;
        assert_eq!(p.firefox_root(&f, false), under(support, &["Firefox"]));
        assert_eq!(p.firefox_roots(&f, true).len(), BROWSERS.len());
        assert_eq!(p.stores_root(&f), under(support, &["ffsession"]));
        assert_eq!(
            p.config_file(&f),
            under(support, &["ffsession", "config.toml"])
        );
        assert_eq!(
            p.service_file(&f, &spec()),
            under(
                "/Users/me",
                &[
                    "Library",
                    "LaunchAgents",
                    "org.ffsession.watch.default-release.plist"
                ]
            )
        );
    }

    #[test]
    fn windows_keeps_stores_local_and_config_roaming() {
        let roaming = "C:/Users/Zoë 日本/AppData/Roaming";
        let local = "C:/Users/Zoë 日本/AppData/Local";
        let f = folders("C:/Users/Zoë 日本", roaming, local, roaming);
        let p = Platform::Windows;
        assert_eq!(
            p.firefox_root(&f, false),
            under(roaming, &["Mozilla", "Firefox"])
        );
        assert_eq!(p.firefox_roots(&f, true).len(), BROWSERS.len());
        assert_eq!(p.stores_root(&f), under(local, &["ffsession", "data"]));
        assert_eq!(
            p.config_file(&f),
            under(roaming, &["ffsession", "config", "config.toml"])
        );
        assert_eq!(
            p.service_file(&f, &spec()),
            under(
                roaming,
                &["ffsession", "config", "ffsession-watch-default-release.xml"]
            )
        );
    }
}

#[cfg(test)]
mod family_tests {
    use super::*;

    /// Every root of every browser, as `label: path` with `/` between
    /// components, for `home` and its usual folders on `platform`.
    fn table(platform: Platform, folders: &Folders) -> Vec<String> {
        platform
            .firefox_roots(folders, false)
            .into_iter()
            .map(|r| {
                // Each platform's paths on every platform: only the names.
                let path: Vec<String> = r
                    .path
                    .components()
                    .filter_map(|c| match c {
                        std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect();
                format!("{}: /{}", r.label(), path.join("/"))
            })
            .collect()
    }

    /// The places of docs/browsers.md, one by one: a change to the table
    /// there is a change here.
    #[test]
    fn every_browser_of_the_family_on_every_system() {
        let linux = Folders {
            home: PathBuf::from("/h"),
            data: PathBuf::from("/h/.local/share"),
            data_local: PathBuf::from("/h/.local/share"),
            config: PathBuf::from("/h/.config"),
        };
        assert_eq!(
            table(Platform::Linux, &linux),
            [
                "Firefox: /h/.config/mozilla/firefox",
                "Firefox: /h/.mozilla/firefox",
                "Firefox (Snap): /h/snap/firefox/common/.mozilla/firefox",
                "Firefox (Snap): /h/snap/firefox/common/.config/mozilla/firefox",
                "Firefox (Flatpak): /h/.var/app/org.mozilla.firefox/.mozilla/firefox",
                "Firefox (Flatpak): /h/.var/app/org.mozilla.firefox/config/mozilla/firefox",
                "LibreWolf: /h/.config/librewolf/librewolf",
                "LibreWolf: /h/.config/librewolf",
                "LibreWolf: /h/.librewolf",
                "LibreWolf (Flatpak): /h/.var/app/io.gitlab.librewolf-community/.librewolf",
                "LibreWolf (Flatpak): /h/.var/app/io.gitlab.librewolf-community/config/librewolf/librewolf",
                "LibreWolf (Flatpak): /h/.var/app/io.gitlab.librewolf-community/config/librewolf",
                "Floorp: /h/.config/floorp",
                "Floorp: /h/.floorp",
                "Floorp (Flatpak): /h/.var/app/one.ablaze.floorp/.floorp",
                "Floorp (Flatpak): /h/.var/app/one.ablaze.floorp/config/floorp",
                "Waterfox: /h/.waterfox",
                "Waterfox (Flatpak): /h/.var/app/net.waterfox.waterfox/.waterfox",
                "Zen: /h/.config/zen",
                "Zen: /h/.zen",
                "Zen (Flatpak): /h/.var/app/app.zen_browser.zen/.zen",
                "Zen (Flatpak): /h/.var/app/app.zen_browser.zen/config/zen",
                "Zen (Flatpak): /h/.var/app/io.github.zen_browser.zen/.zen",
                "Zen (Flatpak): /h/.var/app/io.github.zen_browser.zen/config/zen",
            ]
        );
        let support = "/Users/me/Library/Application Support";
        let mac = Folders {
            home: PathBuf::from("/Users/me"),
            data: PathBuf::from(support),
            data_local: PathBuf::from(support),
            config: PathBuf::from(support),
        };
        let s = support;
        assert_eq!(
            table(Platform::MacOs, &mac),
            [
                format!("Firefox: {s}/Firefox"),
                format!("LibreWolf: {s}/librewolf"),
                format!("Floorp: {s}/Floorp"),
                format!("Waterfox: {s}/Waterfox"),
                format!("Zen: {s}/zen"),
            ]
        );
        let roaming = "/C/Users/me/AppData/Roaming";
        let win = Folders {
            home: PathBuf::from("/C/Users/me"),
            data: PathBuf::from(roaming),
            data_local: PathBuf::from("/C/Users/me/AppData/Local"),
            config: PathBuf::from(roaming),
        };
        let r = roaming;
        assert_eq!(
            table(Platform::Windows, &win),
            [
                format!("Firefox: {r}/Mozilla/Firefox"),
                format!("LibreWolf: {r}/librewolf"),
                format!("Floorp: {r}/Floorp"),
                format!("Waterfox: {r}/Waterfox"),
                format!("Zen: {r}/zen"),
            ]
        );
        assert_eq!(browser("zen").map(|b| b.name), Some("Zen"));
        assert_eq!(browser("Chrome"), None);
    }

    #[test]
    fn each_browser_puts_its_legacy_folder_first_when_it_exists() {
        let home = tempfile::tempdir().unwrap();
        let f = Folders {
            home: home.path().to_path_buf(),
            data: home.path().join(".local/share"),
            data_local: home.path().join(".local/share"),
            config: home.path().join(".config"),
        };
        let zen = browser("Zen").unwrap();
        assert_eq!(
            zen.roots(Platform::Linux, &f, false)[0].path,
            f.config.join("zen")
        );
        std::fs::create_dir(home.path().join(".zen")).unwrap();
        assert_eq!(
            zen.roots(Platform::Linux, &f, false)[0].path,
            home.path().join(".zen")
        );
        // Waterfox never moved: its legacy folder is its only own one.
        let waterfox = browser("waterfox").unwrap();
        assert!(waterfox.legacy_home(&f, false));
        assert_eq!(
            waterfox.roots(Platform::Linux, &f, false)[0].path,
            home.path().join(".waterfox")
        );
        // MOZ_LEGACY_HOME=1: the legacy folder first, for every browser.
        let floorp = browser("Floorp").unwrap();
        assert_eq!(
            floorp.roots(Platform::Linux, &f, false)[0].path,
            f.config.join("floorp")
        );
        assert_eq!(
            floorp.roots(Platform::Linux, &f, true)[0].path,
            home.path().join(".floorp")
        );
    }
}

#[cfg(test)]
mod legacy_tests {
    use super::*;

    #[test]
    fn the_legacy_home_is_in_force_when_its_firefox_folder_exists_or_when_asked() {
        let home = tempfile::tempdir().unwrap();
        let f = Folders {
            home: home.path().to_path_buf(),
            data: home.path().join(".local/share"),
            data_local: home.path().join(".local/share"),
            config: home.path().join(".config"),
        };
        assert!(!linux_legacy_home(&f, false));
        assert!(linux_legacy_home(&f, true));
        // As Firefox ESR 153 does: ~/.mozilla alone, or with native
        // messaging hosts, is not the legacy home.
        std::fs::create_dir_all(home.path().join(".mozilla/native-messaging-hosts")).unwrap();
        assert!(!linux_legacy_home(&f, false));
        std::fs::create_dir_all(home.path().join(".mozilla/firefox")).unwrap();
        assert!(linux_legacy_home(&f, false));
    }
}
