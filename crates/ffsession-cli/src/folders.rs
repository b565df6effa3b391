//! The user's folders, for `ffsession::platform` to place Firefox's root, the
//! stores, the config file and the service file in.
//!
//! They are the `directories` crate's: the XDG folders on Linux (after
//! `$HOME` and `$XDG_*`), `~/Library/...` on macOS, the known folders on
//! Windows. On Windows `%APPDATA%` and `%LOCALAPPDATA%`, when set, name the
//! roaming and local application data as they do for the user (and for Go's
//! `os.UserConfigDir`), so the environment moves them as `$HOME` does on
//! Linux; Windows sets them to the known folders at logon.

use ffsession::platform::Folders;

/// The user's folders; `None` when the home folder cannot be found.
pub fn folders() -> Option<Folders> {
    let base = directories::BaseDirs::new()?;
    #[allow(unused_mut)]
    let mut folders = Folders {
        home: base.home_dir().to_path_buf(),
        data: base.data_dir().to_path_buf(),
        data_local: base.data_local_dir().to_path_buf(),
        config: base.config_dir().to_path_buf(),
    };
    #[cfg(windows)]
    {
        let env_dir = |name: &str| {
            std::env::var_os(name)
                .map(std::path::PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        if let Some(roaming) = env_dir("APPDATA") {
            folders.data = roaming.clone();
            folders.config = roaming;
        }
        if let Some(local) = env_dir("LOCALAPPDATA") {
            folders.data_local = local;
        }
        if let Some(home) = env_dir("USERPROFILE") {
            folders.home = home;
        }
    }
    Some(folders)
}

/// The folder where `watch` and `check` keep what they remember of the
/// store `store_dir` (`watch.json`, `check.json`: alarms, failures, the last
/// check), for `ffsession status`: outside the store, so that a store that
/// cannot be written still has its failure remembered. Under
/// `$XDG_STATE_HOME/ffsession` on Linux (`~/.local/state/ffsession`), the
/// data folder's `ffsession/state` on Windows and macOS; one folder per
/// store, `<store folder name>-<8 hex digits of its path>`.
pub fn state_dir(store_dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let root = match directories::BaseDirs::new()?.state_dir() {
        Some(state) if cfg!(target_os = "linux") => state.join("ffsession"),
        // Beside `data` and `config` on Windows; a dot folder among the
        // stores on macOS, which no profile's store is named.
        _ => folders()?
            .data_local
            .join("ffsession")
            .join(if cfg!(windows) { "state" } else { ".state" }),
    };
    let name = store_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "store".to_owned());
    let key = ffsession::store::owner::folder_key(store_dir);
    Some(root.join(format!("{name}-{key}")))
}

#[cfg(test)]
mod tests {
    use ffsession::platform::Platform;

    /// ffsession's layout is the `directories` crate's on the platform the
    /// test runs on (Linux, and Windows under Wine in CI).
    #[test]
    fn the_layout_is_the_one_of_the_directories_crate() {
        let folders = super::folders().unwrap();
        let project = directories::ProjectDirs::from("", "", "ffsession").unwrap();
        let base = directories::BaseDirs::new().unwrap();
        if folders.data_local != base.data_local_dir() || folders.config != base.config_dir() {
            // %LOCALAPPDATA% or %APPDATA% name other folders here: nothing
            // to compare with.
            return;
        }
        let p = Platform::CURRENT;
        assert_eq!(p.stores_root(&folders), project.data_local_dir());
        assert_eq!(p.config_dir(&folders), project.config_dir());
    }
}
