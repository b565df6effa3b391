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
