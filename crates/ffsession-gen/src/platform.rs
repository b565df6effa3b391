//! What tests do differently by platform: links, and holders of the locks a
//! test needs held by someone else (Firefox's lock on a profile, a writing
//! ffsession's lock on a store).
//!
//! On Unix they are `python3` child processes, because POSIX record locks
//! never conflict within one process. On Windows both locks are per handle
//! (a file opened without sharing refuses every other open, and `LockFileEx`
//! ranges conflict between handles of one process too), so the test process
//! holds them itself: a CLI test's `ffsession.exe` is another process, and a
//! library test's second handle conflicts as another process's would.

#[cfg(windows)]
use std::fs::File;
use std::path::Path;

/// Plays a running Firefox's hold on a profile's lock, released when this
/// value is dropped: on Linux and macOS an fcntl write lock on `.parentlock`
/// held by a child process ([`FcntlLockHolder`]); on Windows `parent.lock`
/// opened without sharing (Firefox's `CreateFileW(..., 0 /* no sharing */,
/// ...)`), so that no other handle can open it.
pub struct FirefoxLockHolder {
    #[cfg(unix)]
    _held: FcntlLockHolder,
    #[cfg(windows)]
    _held: File,
}

impl FirefoxLockHolder {
    /// Take the lock of the profile in `profile_dir` (its lock file is
    /// created if missing) and return once it is held.
    pub fn hold(profile_dir: &Path) -> FirefoxLockHolder {
        #[cfg(unix)]
        {
            FirefoxLockHolder {
                _held: FcntlLockHolder::hold(&profile_dir.join(".parentlock")),
            }
        }
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            let file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .share_mode(0)
                .open(profile_dir.join("parent.lock"))
                .expect("opening parent.lock without sharing");
            FirefoxLockHolder { _held: file }
        }
    }
}

/// Plays a writing ffsession holding its store's `lock`: an exclusive lock on
/// the file, with the holder's process id written into it, as ffsession does.
/// On Unix a `flock` held by a child process (a CLI test needs the holder
/// outside the `ffsession` it runs); on Windows `LockFileEx` (std's
/// `File::try_lock`) taken by this process. Released when dropped.
pub struct StoreLockHolder {
    #[cfg(unix)]
    child: std::process::Child,
    #[cfg(windows)]
    _held: File,
}

impl StoreLockHolder {
    /// Lock `path` (created if missing) and return once the lock is held.
    pub fn hold(path: &Path) -> StoreLockHolder {
        #[cfg(unix)]
        {
            let script = "import fcntl, os, sys, time\nf = open(sys.argv[1], 'a+')\nfcntl.flock(f, fcntl.LOCK_EX)\nf.truncate(0)\nf.write('%d\\n' % os.getpid())\nf.flush()\nprint('locked', flush=True)\ntime.sleep(120)\n";
            StoreLockHolder {
                child: python_holder(script, path),
            }
        }
        #[cfg(windows)]
        {
            use std::io::Write;
            let mut file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .expect("opening the store's lock file");
            file.try_lock().expect("the store's lock is free");
            file.set_len(0).expect("truncating the lock file");
            writeln!(file, "{}", std::process::id()).expect("writing the pid");
            StoreLockHolder { _held: file }
        }
    }

    /// The holder's process id (the one written into the lock file).
    pub fn pid(&self) -> u32 {
        #[cfg(unix)]
        {
            self.child.id()
        }
        #[cfg(windows)]
        {
            std::process::id()
        }
    }
}

#[cfg(unix)]
impl Drop for StoreLockHolder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process holding an fcntl write lock on a file, as a running Firefox
/// holds one on its profile's `.parentlock` (POSIX record locks never conflict
/// within one process, so a test needs another process). Needs `python3`.
/// The lock is released when this value is dropped.
#[cfg(unix)]
pub struct FcntlLockHolder(std::process::Child);

#[cfg(unix)]
impl FcntlLockHolder {
    /// Lock `path` (created if missing) and return once the lock is held.
    pub fn hold(path: &Path) -> FcntlLockHolder {
        if !path.exists() {
            std::fs::write(path, b"").expect("creating the lock file");
        }
        let script = "import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.lockf(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(120)\n";
        FcntlLockHolder(python_holder(script, path))
    }
}

#[cfg(unix)]
impl Drop for FcntlLockHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A python3 child running `script` on `path`; returns once it printed
/// `locked`.
#[cfg(unix)]
fn python_holder(script: &str, path: &Path) -> std::process::Child {
    use std::io::BufRead;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 is needed to hold a lock");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("reading the lock holder's output");
    assert_eq!(
        line.trim(),
        "locked",
        "the lock holder did not take the lock"
    );
    child
}

/// Make `link` a link to the folder `target`: a symbolic link on Unix, a
/// junction on Windows (`mklink /J`: the link to a folder any user may make,
/// where a symbolic link needs Developer Mode or an administrator).
pub fn link_dir(target: &Path, link: &Path) {
    #[cfg(unix)]
    std::os::unix::fs::symlink(target, link).expect("making a symbolic link");
    #[cfg(windows)]
    {
        let status = std::process::Command::new("cmd")
            .arg("/c")
            .arg("mklink")
            .arg("/J")
            .arg(link)
            .arg(target)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("running mklink");
        assert!(status.success() && link.exists(), "mklink /J failed");
    }
}

/// Make `link` a symbolic link to the file `target` (on Windows this needs
/// Developer Mode or an administrator).
pub fn link_file(target: &Path, link: &Path) {
    #[cfg(unix)]
    std::os::unix::fs::symlink(target, link).expect("making a symbolic link");
    #[cfg(windows)]
    {
        std::os::windows::fs::symlink_file(target, link).expect("making a symbolic link");
        assert!(
            std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink()),
            "no symbolic link was made"
        );
    }
}

/// Stop `child` (a `watch`) as Ctrl-C in its terminal would, where a test
/// can: `SIGINT` on Unix. On Windows Ctrl-C is a console control event, and
/// Wine 8 delivers none to a test's children (`GenerateConsoleCtrlEvent`
/// fails with `ERROR_INVALID_ACCESS`, even after `AllocConsole`): there the
/// child is ended (`TerminateProcess`), and what `watch` says when
/// interrupted is checked on Unix only.
pub fn interrupt(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        let status = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -INT failed");
    }
    #[cfg(windows)]
    child.kill().expect("ending the child");
}
