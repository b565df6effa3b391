//! The one atomic-write helper every write of ffsession goes through.
//!
//! A file is written to a temporary file in the same directory, flushed and
//! fsynced, renamed over the destination, and then the directory itself is
//! fsynced so the rename survives a crash. Until the rename, the destination
//! keeps its old content; if anything fails the temporary file is removed, so
//! no partial output is ever left behind. New files are created 0600 because
//! session files hold cookies and form data.
//!
//! For tests only, `set_test_hook` slows every write down (so a test can
//! kill the process in the middle of one), makes writes fail as on a full
//! disk, or kills the process right after a given number of renames (a
//! crash at an exact point). It is off unless a program turns it on, and
//! only debug builds have it: a release build's writes go straight through.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
#[cfg(debug_assertions)]
use std::sync::Mutex;
use std::time::Duration;

use crate::error::{IoResultExt, PathError};

/// Name prefix of the temporary files `write_atomic` creates.
pub const TEMP_PREFIX: &str = ".ffsession-";
/// Name suffix of the temporary files `write_atomic` creates.
pub const TEMP_SUFFIX: &str = ".tmp";

/// True if `name` is one of `write_atomic`'s temporary files (left behind only
/// by a crash; never a finished file).
pub fn is_temp_file_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)
}

/// Atomically replace (or create) `path` with what `write` produces.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), PathError> {
    stage(path, write)?.commit()
}

/// A file written and fsynced under a temporary name next to its
/// destination, not in place yet: [`Staged::commit`] renames it over the
/// destination and fsyncs the directory; dropping it instead removes it.
/// [`write_atomic`] is `stage` then `commit`; staging alone lets a caller
/// write while it still checks whether it wants the file at all.
#[derive(Debug)]
pub struct Staged {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
    dir: PathBuf,
}

/// Write what `write` produces to a temporary file beside `path`, and fsync
/// it; nothing is at `path` yet.
pub fn stage(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<Staged, PathError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)
        .with_path(dir)?;
    let hook = test_hook();
    {
        let file = HookedWriter {
            inner: tmp.as_file_mut(),
            fail: hook.and_then(|h| h.fail_after_bytes).is_some(),
        };
        let mut buffered = io::BufWriter::with_capacity(1 << 16, file);
        write(&mut buffered).with_path(path)?;
        buffered.flush().with_path(path)?;
    }
    if let Some(h) = hook {
        std::thread::sleep(h.delay_per_write);
    }
    tmp.as_file().sync_all().with_path(path)?;
    if let Some(h) = hook {
        std::thread::sleep(h.delay_per_write);
    }
    Ok(Staged {
        tmp,
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
    })
}

impl Staged {
    /// Rename the staged file over its destination and fsync the directory.
    /// On Windows, while another program holds the destination open, the
    /// rename is tried again for a while ([`REPLACE_DELAYS_MS`]), then fails
    /// with [`io::ErrorKind::ResourceBusy`]; the destination keeps its old
    /// content either way.
    pub fn commit(self) -> Result<(), PathError> {
        #[cfg(windows)]
        replace_retrying(self.tmp, &self.path)?;
        // On failure `persist` hands the temp file back; dropping it deletes it.
        #[cfg(not(windows))]
        self.tmp
            .persist(&self.path)
            .map_err(|e| e.error)
            .with_path(&self.path)?;
        sync_dir(&self.dir)?;
        kill_if_due();
        Ok(())
    }
}

/// The waits between tries of a replace on Windows while another program
/// holds the destination open (about 2.5 s in all): an antivirus or an
/// indexer reading a new file, a sync tool copying it, let go within that.
pub const REPLACE_DELAYS_MS: [u64; 9] = [10, 20, 40, 80, 160, 320, 640, 640, 640];

/// Why a replace failed on Windows: another program held the destination
/// open through every try (the error [`Staged::commit`] wraps in an
/// [`io::Error`] of kind [`io::ErrorKind::ResourceBusy`]).
#[derive(Debug)]
pub struct HeldOpen {
    /// How many times the replace was tried.
    pub tries: usize,
    /// How long it waited in all.
    pub waited: Duration,
}

impl std::fmt::Display for HeldOpen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "another program holds it open, so it cannot be replaced (tried {} times over {:.1} s); its old content is unchanged",
            self.tries,
            self.waited.as_secs_f64()
        )
    }
}

impl std::error::Error for HeldOpen {}

/// Rename `tmp` over `path` (std's rename: POSIX semantics where Windows
/// has them, so readers that share delete access do not stand in the way),
/// trying again while another handle holds `path` open; the temporary file
/// is removed if it never gets there.
#[cfg(windows)]
fn replace_retrying(tmp: tempfile::NamedTempFile, path: &Path) -> Result<(), PathError> {
    // Closes our handle of the temporary file; dropping `staged` deletes it.
    let staged = tmp.into_temp_path();
    let mut waited = Duration::ZERO;
    let mut tries = 0;
    loop {
        tries += 1;
        match fs::rename(&staged, path) {
            Ok(()) => {
                // It is `path` now: nothing left to delete.
                let _ = staged.keep();
                return Ok(());
            }
            Err(_) if held_open(path) => match REPLACE_DELAYS_MS.get(tries - 1) {
                Some(&ms) => {
                    std::thread::sleep(Duration::from_millis(ms));
                    waited += Duration::from_millis(ms);
                }
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::ResourceBusy,
                        HeldOpen { tries, waited },
                    ))
                    .with_path(path);
                }
            },
            Err(e) => return Err(e).with_path(path),
        }
    }
}

/// Whether another handle has `path` open: opening it without sharing is a
/// sharing violation then (`ERROR_SHARING_VIOLATION`, 32), where a file
/// nobody holds opens (and a rename refused for another reason, a read-only
/// file say, is not tried again).
#[cfg(windows)]
fn held_open(path: &Path) -> bool {
    use std::os::windows::fs::OpenOptionsExt;
    const ERROR_SHARING_VIOLATION: i32 = 32;
    // DELETE access: what a rename over the file needs.
    const DELETE: u32 = 0x0001_0000;
    match fs::OpenOptions::new()
        .access_mode(DELETE)
        .share_mode(0)
        .open(path)
    {
        Ok(_) => false,
        Err(e) => e.raw_os_error() == Some(ERROR_SHARING_VIOLATION),
    }
}

/// A fault to inject into every [`write_atomic`] of this process. **For tests
/// only**: it lets a test kill a process while a write is in flight, or
/// simulate a full disk. The default injects nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestHook {
    /// Sleep this long after writing the temporary file and before its fsync,
    /// and again after the fsync and before the rename.
    pub delay_per_write: Duration,
    /// Once this many bytes were written (counted from [`set_test_hook`],
    /// across all files), every further write fails with `ENOSPC` ("No space
    /// left on device"), the rest of a partly written buffer included.
    pub fail_after_bytes: Option<u64>,
    /// Kill the process (`SIGKILL`: no cleanup, as `kill -9` would end it) right after
    /// this many files were renamed into place, counted from
    /// [`set_test_hook`]: a crash at an exact point between two writes.
    pub kill_after_commits: Option<u64>,
}

/// What the hook counted since it was set.
#[cfg(debug_assertions)]
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    bytes: u64,
    commits: u64,
}

/// The hook in force, and the bytes written since it was set.
#[cfg(debug_assertions)]
static TEST_HOOK: Mutex<Option<(TestHook, Counts)>> = Mutex::new(None);

/// Install `hook` for every later [`write_atomic`] of this process (`None`
/// removes it), and restart the counts of bytes written and files renamed. **For tests only**;
/// the library never installs one itself. Debug builds only.
#[cfg(debug_assertions)]
pub fn set_test_hook(hook: Option<TestHook>) {
    *lock_hook() = hook.map(|h| (h, Counts::default()));
}

#[cfg(debug_assertions)]
fn lock_hook() -> std::sync::MutexGuard<'static, Option<(TestHook, Counts)>> {
    // The data is plain numbers: a panic elsewhere cannot leave it torn.
    TEST_HOOK.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(debug_assertions)]
fn test_hook() -> Option<TestHook> {
    lock_hook().map(|(h, _)| h)
}

#[cfg(not(debug_assertions))]
fn test_hook() -> Option<TestHook> {
    None
}

/// Count one rename, and kill the process if the hook says this is the one.
#[cfg(not(debug_assertions))]
fn kill_if_due() {}

/// Count one rename, and kill the process if the hook says this is the one.
#[cfg(debug_assertions)]
fn kill_if_due() {
    let mut guard = lock_hook();
    if let Some((hook, counts)) = guard.as_mut() {
        counts.commits += 1;
        if hook.kill_after_commits == Some(counts.commits) {
            // SIGKILL, as `kill -9` would end it (no core file, no cleanup).
            #[cfg(unix)]
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
            std::process::abort();
        }
    }
}

/// The temporary file, failing as a full disk would once the test hook's byte
/// budget is spent.
struct HookedWriter<'a> {
    inner: &'a mut File,
    fail: bool,
}

impl Write for HookedWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.fail {
            return self.inner.write(buf);
        }
        #[cfg(not(debug_assertions))]
        let allowed = buf.len();
        #[cfg(debug_assertions)]
        let allowed = {
            let mut guard = lock_hook();
            match guard.as_mut() {
                Some((
                    TestHook {
                        fail_after_bytes: Some(limit),
                        ..
                    },
                    counts,
                )) => {
                    let left = limit.saturating_sub(counts.bytes);
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
                    counts.bytes += n as u64;
                    n
                }
                _ => buf.len(),
            }
        };
        if allowed == 0 && !buf.is_empty() {
            return Err(disk_full());
        }
        self.inner.write_all(&buf[..allowed])?;
        Ok(allowed)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The error a full disk gives: `ENOSPC`, or `ERROR_DISK_FULL` on Windows.
fn disk_full() -> io::Error {
    #[cfg(unix)]
    {
        io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error())
    }
    #[cfg(windows)]
    {
        const ERROR_DISK_FULL: i32 = 112;
        io::Error::from_raw_os_error(ERROR_DISK_FULL)
    }
    #[cfg(not(any(unix, windows)))]
    {
        io::Error::from(io::ErrorKind::StorageFull)
    }
}

/// Why [`open_no_follow`] refused a path: its last component is a symbolic
/// link (or, on Windows, another reparse point such as a junction).
#[derive(Debug)]
pub struct LinkRefused;

impl std::fmt::Display for LinkRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("it is a symbolic link, which ffsession does not follow")
    }
}

impl std::error::Error for LinkRefused {}

/// True if `e` is [`open_no_follow`]'s refusal of a symbolic link.
pub fn is_link_refused(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<LinkRefused>())
}

fn link_refused() -> io::Error {
    io::Error::other(LinkRefused)
}

/// Open `path` with `options` without following a symbolic link in its last
/// component: `O_NOFOLLOW` on Unix (the kernel refuses the link, so nothing
/// can swap one in between a check and the open), and on Windows
/// `FILE_FLAG_OPEN_REPARSE_POINT`, which opens a reparse point itself, then
/// refused. A link is the error [`is_link_refused`] recognizes; the folders
/// on the way to the file may be links (a store or profile under a linked
/// home folder is the user's choice). `O_NONBLOCK` too, so that a FIFO put
/// in a file's place fails later reads instead of blocking the open.
pub fn open_no_follow(path: &Path, options: &mut fs::OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
        match options.custom_flags(flags.bits() as i32).open(path) {
            Ok(file) => Ok(file),
            // ELOOP on Linux and macOS, EMLINK on FreeBSD, EFTYPE on NetBSD:
            // ask the file system what is there rather than decode errnos.
            Err(_) if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => {
                Err(link_refused())
            }
            Err(e) => Err(e),
        }
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
        const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
        const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x0000_0400;
        let file = options
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)?;
        if file.metadata()?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return Err(link_refused());
        }
        Ok(file)
    }
    #[cfg(not(any(unix, windows)))]
    {
        if fs::symlink_metadata(path)?.file_type().is_symlink() {
            return Err(link_refused());
        }
        options.open(path)
    }
}

/// True if `path` exists and is a symbolic link (or a Windows reparse point),
/// without following it.
pub fn is_link(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(m) => {
            #[cfg(windows)]
            {
                use std::os::windows::fs::MetadataExt;
                m.file_type().is_symlink() || m.file_attributes() & 0x0000_0400 != 0
            }
            #[cfg(not(windows))]
            {
                m.file_type().is_symlink()
            }
        }
        Err(_) => false,
    }
}

/// Fsync a directory so that renames and new entries in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), PathError> {
    #[cfg(unix)]
    {
        File::open(dir).and_then(|d| d.sync_all()).with_path(dir)
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a directory as a file; NTFS journals the rename.
        let _ = dir;
        Ok(())
    }
}

/// `path` as a library that passes file names to Windows as they are
/// (SQLite) must be given it: on Windows a long path (from 200 characters,
/// leaving room for SQLite's `-journal`, `-wal` and `-shm` names and for the
/// files of a folder) becomes an absolute `\\?\` path, which Windows opens
/// past MAX_PATH (260 characters), as std does for its own calls. Elsewhere,
/// and for shorter paths, `path` itself.
pub fn long_path_for_ffi(path: &Path) -> PathBuf {
    #[cfg(windows)]
    {
        use std::ffi::OsString;
        let verbatim = path.as_os_str().as_encoded_bytes().starts_with(br"\\?\");
        if path.as_os_str().len() >= 200 && !verbatim {
            if let Ok(absolute) = std::path::absolute(path) {
                let bytes = absolute.as_os_str().as_encoded_bytes();
                let mut long = OsString::new();
                match bytes.strip_prefix(br"\\") {
                    // \\server\share\... is \\?\UNC\server\share\...
                    Some(_) => {
                        long.push(r"\\?\UNC\");
                        long.push(&absolute.as_os_str().to_string_lossy()[2..]);
                    }
                    None => {
                        long.push(r"\\?\");
                        long.push(absolute.as_os_str());
                    }
                }
                return PathBuf::from(long);
            }
        }
    }
    path.to_path_buf()
}

/// True if `a` and `b` name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "old").unwrap();
        write_atomic(&path, |w: &mut dyn Write| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "old").unwrap();
        let err = write_atomic(&path, |w: &mut dyn Write| {
            w.write_all(b"partial")?;
            Err(io::Error::other("boom"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("boom"));
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// The destination opened by another program without `FILE_SHARE_DELETE`
    /// (as some editors, sync tools and scanners do) cannot be replaced.
    #[cfg(windows)]
    fn hold_open(path: &Path) -> File {
        use std::os::windows::fs::OpenOptionsExt;
        const FILE_SHARE_READ: u32 = 1;
        fs::OpenOptions::new()
            .read(true)
            .share_mode(FILE_SHARE_READ)
            .open(path)
            .unwrap()
    }

    #[cfg(windows)]
    #[test]
    fn a_file_held_open_for_a_moment_is_replaced_once_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "old").unwrap();
        let held = hold_open(&path);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        write_atomic(&path, |w: &mut dyn Write| w.write_all(b"new")).unwrap();
        release.join().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(windows)]
    #[test]
    fn a_file_held_open_throughout_is_a_clear_error_and_keeps_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "old").unwrap();
        let _held = hold_open(&path);
        let started = std::time::Instant::now();
        let err = write_atomic(&path, |w: &mut dyn Write| w.write_all(b"new")).unwrap_err();
        let took = started.elapsed();
        assert_eq!(err.source.kind(), io::ErrorKind::ResourceBusy, "{err}");
        assert_eq!(err.path, path);
        let text = err.to_string();
        assert!(
            text.contains("another program holds it open") && text.contains("tried 10 times"),
            "{text}"
        );
        let total: u64 = REPLACE_DELAYS_MS.iter().sum();
        assert!(took >= Duration::from_millis(total), "{took:?}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        // The temporary file is gone: nothing but the old file is left.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(windows)]
    #[test]
    fn a_long_path_is_handed_to_sqlite_as_a_verbatim_path() {
        let short = Path::new(r"C:\Users\me\store\catalog.sqlite");
        assert_eq!(long_path_for_ffi(short), short);
        let long = Path::new(r"C:\Users\Jörg")
            .join("x".repeat(250))
            .join("catalog.sqlite");
        let mut expected = std::ffi::OsString::from(r"\\?\");
        expected.push(long.as_os_str());
        assert_eq!(long_path_for_ffi(&long).as_os_str(), expected);
        let unc = Path::new(r"\\server\share").join("y".repeat(250));
        assert_eq!(
            long_path_for_ffi(&unc).to_string_lossy(),
            format!(r"\\?\UNC\server\share\{}", "y".repeat(250))
        );
        let verbatim = PathBuf::from(format!(r"\\?\C:\{}", "z".repeat(250)));
        assert_eq!(long_path_for_ffi(&verbatim), verbatim);
    }

    #[cfg(unix)]
    #[test]
    fn new_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.jsonlz4");
        write_atomic(&path, |w: &mut dyn Write| w.write_all(b"x")).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
