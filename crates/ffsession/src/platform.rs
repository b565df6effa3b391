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
//! XDG folder there). [`Platform::firefox_roots`] lists every such place,
//! the one Firefox itself uses first.

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

/// One place a Firefox keeps its profiles (the folder holding
/// `profiles.ini`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FirefoxRoot {
    /// The browser: `Firefox`.
    pub browser: &'static str,
    /// The package, where it has a place of its own (`Snap`, `Flatpak`);
    /// empty for the system's own Firefox.
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

/// Whether Firefox on Linux keeps its profiles in the legacy
/// `~/.mozilla/firefox`: when `moz_legacy_home` (the caller read
/// `MOZ_LEGACY_HOME=1`) or when that folder exists; otherwise, Firefox 147
/// and later use `$XDG_CONFIG_HOME/mozilla/firefox`.
pub fn linux_legacy_home(folders: &Folders, moz_legacy_home: bool) -> bool {
    moz_legacy_home || folders.home.join(".mozilla").join("firefox").is_dir()
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

    /// Every place a Firefox of the user may keep profiles, the one Firefox
    /// itself uses first ([`Platform::firefox_root`]). On Linux: then the
    /// other of the XDG and legacy folders, the Snap's and the Flatpak's
    /// (each in its legacy and XDG layout). Whether each exists is the
    /// caller's to see.
    pub fn firefox_roots(self, folders: &Folders, legacy_home: bool) -> Vec<FirefoxRoot> {
        let root = |package, path| FirefoxRoot {
            browser: "Firefox",
            package,
            path,
        };
        let join = |base: &std::path::Path, parts: &[&str]| {
            parts
                .iter()
                .fold(base.to_path_buf(), |p, part| p.join(part))
        };
        let mut roots = vec![root("", self.firefox_root(folders, legacy_home))];
        if self == Platform::Linux {
            let home = &folders.home;
            roots.push(root("", self.firefox_root(folders, !legacy_home)));
            let snap = join(home, &["snap", "firefox", "common"]);
            roots.push(root("Snap", join(&snap, &[".mozilla", "firefox"])));
            roots.push(root(
                "Snap",
                join(&snap, &[".config", "mozilla", "firefox"]),
            ));
            let flatpak = join(home, &[".var", "app", "org.mozilla.firefox"]);
            roots.push(root("Flatpak", join(&flatpak, &[".mozilla", "firefox"])));
            roots.push(root(
                "Flatpak",
                join(&flatpak, &["config", "mozilla", "firefox"]),
            ));
        }
        roots
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
        assert_eq!(p.firefox_roots(&f, true).len(), 1);
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
        assert_eq!(p.firefox_roots(&f, true).len(), 1);
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
