//! Firefox profile discovery: `profiles.ini`, `installs.ini`, and profile locks.
//!
//! This module owns the question "which profile folder?". It reads the Firefox
//! root's `profiles.ini` (and `installs.ini`, where Firefox 67+ records the
//! default profile of each installation), resolves `--profile NAME|PATH`, and
//! tells whether a Firefox is running on a profile by looking at its lock
//! (`lock` symlink on Linux and macOS, `parent.lock` on Windows). It takes the
//! Firefox root as an argument: finding it from `$HOME` is the caller's job, with
//! [`crate::platform::Platform::firefox_roots`] for the usual places.

use std::fs;
use std::path::{Path, PathBuf};

/// Why a profile could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The root has no `profiles.ini`.
    #[error("no Firefox profile found: {} does not exist", .0.join("profiles.ini").display())]
    NoProfilesIni(PathBuf),
    /// `profiles.ini` or `installs.ini` could not be read or parsed.
    #[error("{}: cannot read: {message}", path.display())]
    BadIni {
        /// The INI file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// `profiles.ini` lists no profile.
    #[error("{}: lists no profile", .0.display())]
    Empty(PathBuf),
    /// No profile has the name given, and it is not a profile folder either.
    #[error("no profile named {name:?} (profiles: {})", available.join(", "))]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The names that exist.
        available: Vec<String>,
    },
    /// A path given as a profile is not a directory.
    #[error("{}: not a profile folder", .0.display())]
    NotAProfileDir(PathBuf),
    /// None of the places Firefox keeps profiles has a `profiles.ini`.
    #[error(
        "no browser profile found; looked for profiles.ini in {}",
        folder_list(searched)
    )]
    NoProfileFound {
        /// Every folder looked in, in order.
        searched: Vec<PathBuf>,
    },
}

/// Folders as one short list: those under one common folder (the home
/// folder, usually) named after it once, `/home/me: .mozilla/firefox,
/// .config/zen`.
fn folder_list(folders: &[PathBuf]) -> String {
    let several = folders.len() > 1;
    let common = folders.first().filter(|_| several).and_then(|first| {
        first
            .ancestors()
            .skip(1)
            .find(|a| a.parent().is_some() && folders.iter().all(|f| f.starts_with(a)))
    });
    let names = folders.iter().map(|f| {
        common
            .and_then(|c| f.strip_prefix(c).ok())
            .unwrap_or(f)
            .display()
            .to_string()
    });
    let names = names.collect::<Vec<_>>().join(", ");
    match common {
        Some(c) => format!("{}: {names}", c.display()),
        None => names,
    }
}

impl ProfileError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<crate::Hint> {
        use crate::Hint;
        Some(match self {
            ProfileError::NoProfilesIni(_)
            | ProfileError::Empty(_)
            | ProfileError::NoProfileFound { .. } => Hint::NoProfile,
            ProfileError::BadIni { .. } => Hint::BadProfilesIni,
            ProfileError::UnknownProfile { .. } => Hint::UnknownProfile,
            ProfileError::NotAProfileDir(_) => Hint::Advice(
                "pass a profile folder (the one holding sessionstore-backups/) or a profile name",
            ),
        })
    }
}

/// A Firefox profile.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Profile {
    /// The profile's name (`Name=` in profiles.ini, or the folder name).
    pub name: String,
    /// The profile folder.
    pub path: PathBuf,
    /// Whether Firefox opens this profile by default.
    pub is_default: bool,
}

/// Read the profiles listed in `root/profiles.ini`, marking the default one.
pub fn list(root: &Path) -> Result<Vec<Profile>, ProfileError> {
    let ini_path = root.join("profiles.ini");
    if !ini_path.exists() {
        return Err(ProfileError::NoProfilesIni(root.to_path_buf()));
    }
    let ini = load_ini(&ini_path)?;
    let mut install_defaults: Vec<PathBuf> = Vec::new();
    let mut legacy_default: Option<usize> = None;
    let mut profiles = Vec::new();
    for (section, props) in ini.iter() {
        let Some(section) = section else { continue };
        if section.starts_with("Install") {
            if let Some(p) = props.get("Default") {
                install_defaults.push(resolve_path(root, p, true));
            }
        } else if section.starts_with("Profile") {
            let Some(rel) = props.get("Path") else {
                continue;
            };
            let relative = props.get("IsRelative").is_none_or(|v| v.trim() == "1");
            let path = resolve_path(root, rel, relative);
            let name = props
                .get("Name")
                .map(str::to_owned)
                .unwrap_or_else(|| folder_name(&path));
            if props.get("Default").is_some_and(|v| v.trim() == "1") {
                legacy_default = Some(profiles.len());
            }
            profiles.push(Profile {
                name,
                path,
                is_default: false,
            });
        }
    }
    let installs_path = root.join("installs.ini");
    if installs_path.exists() {
        let installs = load_ini(&installs_path)?;
        for (_, props) in installs.iter() {
            if let Some(p) = props.get("Default") {
                install_defaults.push(resolve_path(root, p, true));
            }
        }
    }
    if profiles.is_empty() {
        return Err(ProfileError::Empty(ini_path));
    }
    // Each install's default (Firefox and its Developer Edition or Nightly
    // share one profiles.ini, each with a default of its own); else the old
    // `Default=1`; else the only profile.
    let mut any = false;
    for p in &mut profiles {
        if install_defaults.contains(&p.path) {
            p.is_default = true;
            any = true;
        }
    }
    let default = legacy_default.or((profiles.len() == 1).then_some(0));
    if let (false, Some(i)) = (any, default) {
        profiles[i].is_default = true;
    }
    Ok(profiles)
}

/// Which Firefox a profile's name says it was made for, where it is not the
/// release: `Developer Edition` (`dev-edition-default`), `Nightly`, `Beta`,
/// `ESR` (`default-nightly`, ...), as Firefox names the profile it makes for
/// each install. These share the release's `profiles.ini`.
pub fn edition(profile_name: &str) -> Option<&'static str> {
    Some(match profile_name {
        "dev-edition-default" => "Developer Edition",
        "default-nightly" => "Nightly",
        "default-beta" => "Beta",
        "default-esr" => "ESR",
        _ => return None,
    })
}

/// The profile Firefox opens with no profile named, among `profiles`: an
/// install's default (the release's, when several installs share the
/// folder), else the first.
fn the_default<'a>(profiles: impl Iterator<Item = &'a Profile> + Clone) -> Option<&'a Profile> {
    let mut defaults = profiles.clone().filter(|p| p.is_default);
    defaults
        .clone()
        .find(|p| edition(&p.name).is_none())
        .or_else(|| defaults.next())
        .or_else(|| profiles.clone().next())
}

/// The profiles of every root in `roots` that has a `profiles.ini`, in
/// order, each with the index of its root. A root without one is left out;
/// one whose `profiles.ini` does not read is an error. None at all is
/// [`ProfileError::NoProfileFound`], naming every root.
pub fn list_roots(roots: &[PathBuf]) -> Result<Vec<(usize, Profile)>, ProfileError> {
    let mut out = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        match list(root) {
            Ok(profiles) => out.extend(profiles.into_iter().map(|p| (i, p))),
            Err(ProfileError::NoProfilesIni(_)) => {}
            Err(e) => return Err(e),
        }
    }
    if out.is_empty() {
        return Err(ProfileError::NoProfileFound {
            searched: roots.to_vec(),
        });
    }
    Ok(out)
}

/// [`find`] over several roots, in order, among the profiles `keep` keeps
/// (a browser or an edition chosen): the default profile of the first root
/// that has profiles, or the first profile of that name in any of them. A
/// path is taken as it is.
pub fn find_in(
    roots: &[PathBuf],
    spec: Option<&str>,
    keep: &dyn Fn(&Profile) -> bool,
) -> Result<Profile, ProfileError> {
    let looks_like_path = spec.is_some_and(|s| {
        s.contains('/') || s.contains(std::path::MAIN_SEPARATOR) || Path::new(s).is_dir()
    });
    if let (true, Some(spec)) = (looks_like_path, spec) {
        let path = Path::new(spec);
        if !path.is_dir() {
            return Err(ProfileError::NotAProfileDir(path.to_path_buf()));
        }
        let listed = list_roots(roots).ok().and_then(|ps| {
            ps.into_iter()
                .map(|(_, p)| p)
                .find(|p| crate::fs_util::same_file(&p.path, path))
        });
        return Ok(listed.unwrap_or_else(|| Profile {
            name: folder_name(path),
            path: path.to_path_buf(),
            is_default: false,
        }));
    }
    let all: Vec<(usize, Profile)> = list_roots(roots)?
        .into_iter()
        .filter(|(_, p)| keep(p))
        .collect();
    let Some(&(first_root, _)) = all.first() else {
        return Err(ProfileError::NoProfileFound {
            searched: roots.to_vec(),
        });
    };
    match spec {
        None => {
            let of_root = all.iter().filter(|(r, _)| *r == first_root).map(|(_, p)| p);
            Ok(the_default(of_root)
                .cloned()
                .unwrap_or_else(|| all[0].1.clone()))
        }
        Some(name) => all
            .iter()
            .find(|(_, p)| p.name == name)
            .or_else(|| all.iter().find(|(_, p)| p.name.eq_ignore_ascii_case(name)))
            .map(|(_, p)| p.clone())
            .ok_or_else(|| ProfileError::UnknownProfile {
                name: name.to_owned(),
                available: all.into_iter().map(|(_, p)| p.name).collect(),
            }),
    }
}

/// Find the profile `spec` names (a profile name, or a path to a profile
/// folder), or the default profile when `spec` is `None`.
pub fn find(root: &Path, spec: Option<&str>) -> Result<Profile, ProfileError> {
    if let Some(spec) = spec {
        let as_path = Path::new(spec);
        let looks_like_path =
            spec.contains('/') || spec.contains(std::path::MAIN_SEPARATOR) || as_path.is_dir();
        if looks_like_path {
            if !as_path.is_dir() {
                return Err(ProfileError::NotAProfileDir(as_path.to_path_buf()));
            }
            let listed = list(root).ok().and_then(|ps| {
                ps.into_iter()
                    .find(|p| crate::fs_util::same_file(&p.path, as_path))
            });
            return Ok(listed.unwrap_or_else(|| Profile {
                name: folder_name(as_path),
                path: as_path.to_path_buf(),
                is_default: false,
            }));
        }
        let profiles = list(root)?;
        let found = profiles.iter().position(|p| p.name == spec).or_else(|| {
            profiles
                .iter()
                .position(|p| p.name.eq_ignore_ascii_case(spec))
        });
        return match found {
            Some(i) => Ok(profiles[i].clone()),
            None => Err(ProfileError::UnknownProfile {
                name: spec.to_owned(),
                available: profiles.into_iter().map(|p| p.name).collect(),
            }),
        };
    }
    let profiles = list(root)?;
    Ok(the_default(profiles.iter())
        .cloned()
        .unwrap_or_else(|| profiles[0].clone()))
}

fn load_ini(path: &Path) -> Result<ini::Ini, ProfileError> {
    ini::Ini::load_from_file_noescape(path).map_err(|e| ProfileError::BadIni {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn resolve_path(root: &Path, value: &str, relative: bool) -> PathBuf {
    if relative {
        value
            .split(['/', '\\'])
            .fold(root.to_path_buf(), |p, part| p.join(part))
    } else {
        PathBuf::from(value)
    }
}

fn folder_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Whether a Firefox holds a profile's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum LockState {
    /// No lock: Firefox is not running on this profile.
    NotRunning,
    /// Locked by a live Firefox (process id when the lock names one).
    Running {
        /// Process id from the lock, if known.
        pid: Option<u32>,
    },
    /// A `lock` symlink naming a process that is gone, with no `.parentlock`
    /// to tell more; Firefox replaces it at its next start.
    Stale {
        /// The dead process id.
        pid: u32,
    },
}

impl LockState {
    /// True while a Firefox is running on the profile.
    pub fn is_running(self) -> bool {
        matches!(self, LockState::Running { .. })
    }
}

/// Look at the profile's lock to tell whether Firefox is running on it.
///
/// On Linux and macOS a running Firefox holds an fcntl write lock on
/// `.parentlock` and points the `lock` symlink at `IP:+PID` (which it may
/// leave behind after quitting). Either one held means running: an fcntl lock
/// someone holds, or a `lock` symlink naming a process that is alive (as
/// Firefox itself decides, with `kill(pid, 0)`), even when `.parentlock` is
/// there and free (ffsession's own restore leaves one, and a Firefox whose
/// fcntl lock failed, on some network file systems, holds the symlink only).
/// A symlink naming a dead process beside a free `.parentlock` is what
/// Firefox leaves after every clean quit on Linux (and after a crash: the two
/// look the same), so it is [`LockState::NotRunning`]; without a
/// `.parentlock` to check, it is [`LockState::Stale`]. On Windows
/// `parent.lock` is held open without sharing while Firefox runs.
pub fn lock_state(profile_dir: &Path) -> LockState {
    #[cfg(unix)]
    {
        let pid = fs::read_link(profile_dir.join("lock"))
            .ok()
            .and_then(|target| {
                target
                    .to_string_lossy()
                    .rsplit_once('+')
                    .and_then(|(_, pid)| pid.parse::<u32>().ok())
            });
        let symlink = fs::symlink_metadata(profile_dir.join("lock")).is_ok();
        match (parentlock_held(profile_dir), pid) {
            (Some(true), pid) => LockState::Running { pid },
            // A live pid wins over a free `.parentlock`.
            (_, Some(pid)) if pid_alive(pid) => LockState::Running { pid: Some(pid) },
            // The symlink a clean quit leaves behind: `.parentlock` is free.
            (Some(false), Some(_)) => LockState::NotRunning,
            (None, Some(pid)) => LockState::Stale { pid },
            // A `lock` that names no pid: running unless `.parentlock` is free.
            (None, None) if symlink => LockState::Running { pid: None },
            (_, None) => LockState::NotRunning,
        }
    }
    #[cfg(not(unix))]
    {
        let lock = profile_dir.join("parent.lock");
        if !lock.exists() {
            return LockState::NotRunning;
        }
        match fs::OpenOptions::new().write(true).open(&lock) {
            Ok(_) => LockState::NotRunning,
            Err(_) => LockState::Running { pid: None },
        }
    }
}

/// Whether process `pid` exists (`kill(pid, 0)`: "not permitted" means it
/// does, as another user's). On Linux a zombie (a Firefox killed but not yet
/// reaped by its parent) is dead: it holds no file and writes nothing.
/// Also what makes a remote store's lock of this machine stale at once.
#[cfg(unix)]
pub(crate) fn pid_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    if let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S ...`: the state follows the last `)`.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        if matches!(state, Some('Z' | 'X')) {
            return false;
        }
    }
    let Some(pid) = i32::try_from(pid)
        .ok()
        .filter(|&p| p > 0)
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// Whether process `pid` of this machine is still running (Windows: it can
/// be opened and has not exited; "access denied" means another user's).
#[cfg(windows)]
#[allow(unsafe_code)]
pub(crate) fn pid_alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, GetLastError, ERROR_ACCESS_DENIED};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    /// `GetExitCodeProcess`'s code for a process that has not exited.
    const STILL_ACTIVE: u32 = 259;
    // SAFETY: plain system calls on a process id; the handle, when one is
    // returned, is closed before returning, and `code` outlives the call
    // that writes it.
    unsafe {
        let handle = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if handle.is_null() {
            return GetLastError() == ERROR_ACCESS_DENIED;
        }
        let mut code = 0u32;
        let ok = GetExitCodeProcess(handle, &mut code);
        CloseHandle(handle);
        ok == 0 || code == STILL_ACTIVE
    }
}

/// Elsewhere a lock's process cannot be looked up: it is taken as alive
/// (a remote lock then goes stale by its age).
#[cfg(not(any(unix, windows)))]
pub(crate) fn pid_alive(_pid: u32) -> bool {
    true
}

/// Whether another process holds an fcntl lock on `.parentlock`; `None` when
/// there is no such file or it cannot be checked.
#[cfg(unix)]
fn parentlock_held(profile_dir: &Path) -> Option<bool> {
    use rustix::fs::{fcntl_lock, FlockOperation};
    use rustix::io::Errno;
    let file = fs::File::open(profile_dir.join(".parentlock")).ok()?;
    match fcntl_lock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            let _ = fcntl_lock(&file, FlockOperation::NonBlockingUnlock);
            Some(false)
        }
        Err(e) if e == Errno::AGAIN || e == Errno::ACCESS => Some(true),
        Err(_) => None,
    }
}

/// Take Firefox's own profile lock (`.parentlock`, an fcntl lock; `parent.lock`
/// on Windows) so that no Firefox starts on the profile while it is held.
/// `Ok(None)` if another process (a running Firefox) holds it. The lock is
/// released when the file is dropped.
pub fn take_profile_lock(dir: &Path) -> Result<Option<fs::File>, crate::error::PathError> {
    #[cfg(unix)]
    {
        use crate::error::IoResultExt;
        use rustix::fs::{fcntl_lock, FlockOperation};
        let path = dir.join(".parentlock");
        let file = fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_path(&path)?;
        Ok(fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive)
            .ok()
            .map(|()| file))
    }
    #[cfg(windows)]
    {
        // As Firefox opens it: without sharing, so that no Firefox (and no
        // other ffsession) can open it while this handle lives.
        use std::os::windows::fs::OpenOptionsExt;
        let path = dir.join("parent.lock");
        Ok(fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .share_mode(0)
            .open(&path)
            .ok())
    }
    #[cfg(not(any(unix, windows)))]
    {
        let path = dir.join("parent.lock");
        Ok(fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(profiles_ini: &str, installs_ini: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("profiles.ini"), profiles_ini).unwrap();
        if let Some(i) = installs_ini {
            fs::write(dir.path().join("installs.ini"), i).unwrap();
        }
        dir
    }

    const TWO: &str = "[Profile1]\nName=default\nIsRelative=1\nPath=abc.default\nDefault=1\n\n\
                       [Profile0]\nName=default-release\nIsRelative=1\nPath=xyz.default-release\n\n\
                       [General]\nStartWithLastProfile=1\nVersion=2\n";

    #[test]
    fn install_default_wins_over_legacy_default() {
        let root = root_with(
            TWO,
            Some("[4F96D1932A9F858E]\nDefault=xyz.default-release\nLocked=1\n"),
        );
        let ps = list(root.path()).unwrap();
        assert_eq!(ps.len(), 2);
        let d = ps.iter().find(|p| p.is_default).unwrap();
        assert_eq!(d.name, "default-release");
        assert_eq!(d.path, root.path().join("xyz.default-release"));
        assert_eq!(find(root.path(), None).unwrap().name, "default-release");
    }

    #[test]
    fn legacy_default_without_installs() {
        let root = root_with(TWO, None);
        assert_eq!(find(root.path(), None).unwrap().name, "default");
    }

    #[test]
    fn find_by_name_or_path() {
        let root = root_with(TWO, None);
        assert_eq!(
            find(root.path(), Some("DEFAULT-release")).unwrap().name,
            "default-release"
        );
        let err = find(root.path(), Some("nope")).unwrap_err();
        assert!(err.to_string().contains("default-release"), "{err}");
        let dir = root.path().join("abc.default");
        fs::create_dir(&dir).unwrap();
        let p = find(root.path(), Some(dir.to_str().unwrap())).unwrap();
        assert_eq!(p.name, "default");
        assert!(matches!(
            find(root.path(), Some("/does/not/exist")),
            Err(ProfileError::NotAProfileDir(_))
        ));
    }

    #[test]
    fn missing_ini_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = list(dir.path()).unwrap_err();
        assert!(err.to_string().contains("profiles.ini does not exist"));
    }

    /// Windows' `profiles.ini` as Firefox and Notepad write it: CRLF line
    /// ends, a byte order mark, backslashes in relative paths, an absolute
    /// `C:\` path.
    #[test]
    fn a_windows_profiles_ini_with_crlf_and_backslashes() {
        let ini = "\u{feff}[Install308046B0AF4A39CB]\r\nDefault=Profiles\\xyz.default-release\r\nLocked=1\r\n\r\n\
                   [Profile1]\r\nName=work \r\nIsRelative=0\r\nPath=C:\\Users\\Zoë\\Work Profile\r\n\r\n\
                   [Profile0]\r\nName=default-release\r\nIsRelative=1\r\nPath=Profiles\\xyz.default-release\r\n\r\n\
                   [General]\r\nStartWithLastProfile=1\r\nVersion=2\r\n";
        // The default comes from the [Install...] section right after the
        // byte order mark, and from nothing else.
        let root = root_with(ini, None);
        let ps = list(root.path()).unwrap();
        assert_eq!(ps.len(), 2, "{ps:?}");
        let default = ps.iter().find(|p| p.is_default).unwrap();
        assert_eq!(default.name, "default-release");
        assert_eq!(
            default.path,
            root.path().join("Profiles").join("xyz.default-release")
        );
        let work = ps.iter().find(|p| !p.is_default).unwrap();
        assert_eq!(work.name, "work");
        assert_eq!(work.path, PathBuf::from("C:\\Users\\Zoë\\Work Profile"));
        assert_eq!(find(root.path(), Some("work")).unwrap().path, work.path);
    }

    /// Firefox on Windows holds `parent.lock` open without sharing while it
    /// runs; a handle of this process stands in for it (sharing is per
    /// handle).
    #[cfg(windows)]
    #[test]
    fn parent_lock_held_without_sharing_means_running() {
        use std::os::windows::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(lock_state(dir.path()), LockState::NotRunning);
        let firefox = fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .share_mode(0)
            .open(dir.path().join("parent.lock"))
            .unwrap();
        assert_eq!(lock_state(dir.path()), LockState::Running { pid: None });
        assert!(take_profile_lock(dir.path()).unwrap().is_none());
        drop(firefox);
        // Left behind after Firefox quit (it deletes it; a crash may not).
        assert_eq!(lock_state(dir.path()), LockState::NotRunning);
        // ffsession's own hold keeps a starting Firefox out the same way.
        let ours = take_profile_lock(dir.path()).unwrap().expect("free");
        assert_eq!(lock_state(dir.path()), LockState::Running { pid: None });
        let firefox = fs::File::options()
            .read(true)
            .write(true)
            .share_mode(0)
            .open(dir.path().join("parent.lock"));
        assert!(firefox.is_err(), "a starting Firefox would get the profile");
        drop(ours);
        assert_eq!(lock_state(dir.path()), LockState::NotRunning);
    }

    /// A child process holds an fcntl write lock on `.parentlock`, as Firefox
    /// does (POSIX locks never conflict within one process).
    #[cfg(unix)]
    #[test]
    fn an_fcntl_lock_on_parentlock_means_running() {
        let dir = tempfile::tempdir().unwrap();
        let lockfile = dir.path().join(".parentlock");
        fs::write(&lockfile, b"").unwrap();
        std::os::unix::fs::symlink("127.0.1.1:+4294967", dir.path().join("lock")).unwrap();
        // A lock symlink left behind after a clean quit does not mean running.
        assert_eq!(lock_state(dir.path()), LockState::NotRunning);
        let holder = ffsession_gen::FcntlLockHolder::hold(&lockfile);
        assert_eq!(
            lock_state(dir.path()),
            LockState::Running { pid: Some(4294967) }
        );
        drop(holder);
        assert_eq!(lock_state(dir.path()), LockState::NotRunning);
    }

    /// ffsession's restore leaves a free `.parentlock` behind; a `lock`
    /// symlink naming a live process still means Firefox runs.
    #[cfg(unix)]
    #[test]
    fn a_live_pid_in_the_lock_symlink_wins_over_a_free_parentlock() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".parentlock"), b"").unwrap();
        let me = std::process::id();
        std::os::unix::fs::symlink(format!("127.0.1.1:+{me}"), dir.path().join("lock")).unwrap();
        assert_eq!(lock_state(dir.path()), LockState::Running { pid: Some(me) });
        // A held .parentlock is running whatever the symlink says.
        fs::remove_file(dir.path().join("lock")).unwrap();
        std::os::unix::fs::symlink("127.0.1.1:+4294967", dir.path().join("lock")).unwrap();
        assert_eq!(lock_state(dir.path()), LockState::NotRunning);
        let holder = ffsession_gen::FcntlLockHolder::hold(&dir.path().join(".parentlock"));
        assert_eq!(
            lock_state(dir.path()),
            LockState::Running { pid: Some(4294967) }
        );
        drop(holder);
        // No symlink, a free .parentlock: not running.
        fs::remove_file(dir.path().join("lock")).unwrap();
        assert_eq!(lock_state(dir.path()), LockState::NotRunning);
    }

    /// A Firefox killed but not yet reaped by its parent is a zombie: its
    /// lock is stale, not running.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_zombie_pid_in_the_lock_symlink_is_a_stale_lock() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not reaped: wait until it has exited and is a zombie.
        let stat = format!("/proc/{pid}/stat");
        for _ in 0..500 {
            let state = fs::read_to_string(&stat).unwrap_or_default();
            if state.contains(") Z") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(fs::read_to_string(&stat).unwrap().contains(") Z"));
        std::os::unix::fs::symlink(format!("127.0.1.1:+{pid}"), dir.path().join("lock")).unwrap();
        assert_eq!(lock_state(dir.path()), LockState::Stale { pid });
        child.wait().unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn lock_symlink_tells_running_and_stale() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(lock_state(dir.path()), LockState::NotRunning);
        let me = std::process::id();
        std::os::unix::fs::symlink(format!("127.0.1.1:+{me}"), dir.path().join("lock")).unwrap();
        assert_eq!(lock_state(dir.path()), LockState::Running { pid: Some(me) });
        fs::remove_file(dir.path().join("lock")).unwrap();
        std::os::unix::fs::symlink("127.0.1.1:+4294967", dir.path().join("lock")).unwrap();
        assert_eq!(lock_state(dir.path()), LockState::Stale { pid: 4294967 });
    }
}
