//! A sealed environment for running `ffsession`: cleared environment, a temp
//! HOME and Firefox root, UTC clock zone.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use ffsession::platform::{Folders, Platform};
use ffsession_gen::{generate, mozlz4, Spec};

pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> Self {
        TestEnv {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    /// The user's folders in the sealed environment, as the platform lays
    /// them out under the home folder (`HOME`, or on Windows `USERPROFILE`,
    /// `APPDATA` and `LOCALAPPDATA`).
    pub fn folders(&self) -> Folders {
        let home = self.home();
        let (data, data_local, config) = match Platform::CURRENT {
            Platform::Linux => (
                home.join(".local").join("share"),
                home.join(".local").join("share"),
                home.join(".config"),
            ),
            Platform::MacOs => {
                let support = home.join("Library").join("Application Support");
                (support.clone(), support.clone(), support)
            }
            Platform::Windows => {
                let app_data = home.join("AppData");
                (
                    app_data.join("Roaming"),
                    app_data.join("Local"),
                    app_data.join("Roaming"),
                )
            }
        };
        Folders {
            home,
            data,
            data_local,
            config,
        }
    }

    /// Where the sealed `ffsession` looks for profiles.ini first: where
    /// Firefox itself keeps it (on Linux the XDG folder, or the legacy
    /// `~/.mozilla/firefox` once that exists).
    pub fn firefox_root(&self) -> PathBuf {
        let folders = self.folders();
        let legacy = ffsession::platform::linux_legacy_home(&folders, false);
        Platform::CURRENT.firefox_root(&folders, legacy)
    }

    /// Where the sealed `ffsession` keeps a profile's store by default.
    pub fn stores_root(&self) -> PathBuf {
        Platform::CURRENT.stores_root(&self.folders())
    }

    /// `ffsession` with a cleared environment.
    pub fn cmd(&self) -> Command {
        Command::from_std(self.std_cmd())
    }

    /// The same as a `std::process::Command`, for tests that stream output.
    pub fn std_cmd(&self) -> std::process::Command {
        self.sealed_cmd(assert_cmd::cargo::cargo_bin("ffsession"))
    }

    /// `program` in the same cleared environment, for running `ffsession`
    /// under another tool.
    pub fn sealed_cmd(&self, program: impl AsRef<OsStr>) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        fs::create_dir_all(self.home()).unwrap();
        cmd.env_clear()
            .env("HOME", self.home())
            .env("TZ", "UTC")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(self.path());
        if cfg!(windows) {
            let folders = self.folders();
            cmd.env("USERPROFILE", &folders.home)
                .env("APPDATA", &folders.data)
                .env("LOCALAPPDATA", &folders.data_local);
            // What every Windows program expects to find, and the user's
            // name (the service's task runs as that user).
            for name in [
                "SystemRoot",
                "windir",
                "TEMP",
                "TMP",
                "USERNAME",
                "USERDOMAIN",
            ] {
                if let Some(value) = std::env::var_os(name) {
                    cmd.env(name, value);
                }
            }
        }
        cmd
    }

    /// A profile folder (`profile/` in the test directory) holding `files`
    /// (paths relative to the profile).
    pub fn profile_with(&self, files: &[(&str, &[u8])]) -> PathBuf {
        let profile = self.path().join("profile");
        for (name, bytes) in files {
            let path = profile.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, bytes).unwrap();
        }
        fs::create_dir_all(&profile).unwrap();
        profile
    }

    /// A profile folder (`profile/` in the test directory) with an empty
    /// `sessionstore-backups` folder.
    pub fn empty_profile(&self) -> PathBuf {
        let profile = self.path().join("profile");
        fs::create_dir_all(profile.join("sessionstore-backups")).unwrap();
        profile
    }

    /// A profile folder (`profile/` in the test directory) whose
    /// `sessionstore-backups/recovery.jsonlz4` holds `recovery` (written over
    /// the file if the profile is there already).
    pub fn profile_with_recovery(&self, recovery: &[u8]) -> PathBuf {
        self.profile_with(&[("sessionstore-backups/recovery.jsonlz4", recovery)])
    }

    /// Write `recovery` as the recovery file of the profile (as
    /// [`TestEnv::profile_with_recovery`]) and back it up into the test store;
    /// the backup must succeed. Returns the profile folder.
    pub fn back_up_recovery(&self, recovery: &[u8]) -> PathBuf {
        let profile = self.profile_with_recovery(recovery);
        ok_output(self.store_cmd(&profile).arg("backup"));
        profile
    }

    /// The store the store commands use: `store/` in the test directory.
    pub fn store_dir(&self) -> PathBuf {
        self.path().join("store")
    }

    /// `ffsession --profile PROFILE --store <test dir>/store`.
    pub fn store_cmd(&self, profile: &Path) -> Command {
        self.store_cmd_at(profile, &self.store_dir())
    }

    /// `ffsession --profile PROFILE --store STORE`.
    pub fn store_cmd_at(&self, profile: &Path, store: &Path) -> Command {
        Command::from_std(self.std_store_cmd_at(profile, store))
    }

    /// The same as a `std::process::Command`, for tests that stream output
    /// or kill the process.
    pub fn std_store_cmd_at(&self, profile: &Path, store: &Path) -> std::process::Command {
        let mut cmd = self.std_cmd();
        cmd.arg("--profile").arg(profile).arg("--store").arg(store);
        cmd
    }

    /// `copy --to REMOTE` of the test store into a remote in a folder,
    /// opened with `password` (and quick key stretching); it must succeed.
    /// Returns what it printed.
    pub fn copy_to_folder(&self, profile: &Path, remote: &Path, password: &str) -> String {
        ok_stdout(
            self.store_cmd(profile)
                .env("FFSESSION_PASSWORD", password)
                .env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
                .args(["copy", "--to"])
                .arg(remote),
        )
    }

    /// The snapshots `list --json` shows for `profile` and the test store,
    /// newest first.
    pub fn list_snapshots(&self, profile: &Path) -> Vec<serde_json::Value> {
        let list = ok_json(self.store_cmd(profile).args(["list", "--json"]));
        list.as_array().unwrap().clone()
    }

    /// The ids of [`TestEnv::list_snapshots`], newest first.
    pub fn snapshot_ids(&self, profile: &Path) -> Vec<i64> {
        self.list_snapshots(profile)
            .iter()
            .map(|s| s["id"].as_i64().unwrap())
            .collect()
    }

    /// `watch --interval 1s` of `profile` into the test store, its output
    /// piped (options may follow).
    pub fn watch_cmd(&self, profile: &Path) -> std::process::Command {
        let mut cmd = self.std_store_cmd_at(profile, &self.store_dir());
        cmd.args(["watch", "--interval", "1s"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    }

    /// A config file (`config.toml`) with two `watch = true` remotes whose
    /// password file says "watch password": `usb`, a folder in the test
    /// directory, and `away`, an SFTP server that is not there. Returns the
    /// `usb` folder and the config file.
    pub fn watch_remotes_config(&self) -> (PathBuf, PathBuf) {
        let pw = self.write("pw", b"watch password\n");
        let usb = self.path().join("usb");
        let config = self.write(
            "config.toml",
            format!(
                "[remotes.usb]\nlocation = {:?}\npassword_file = {:?}\nwatch = true\n\n\
                 [remotes.away]\nlocation = \"sftp://127.0.0.1:9/nowhere\"\npassword_file = {:?}\nwatch = true\n",
                usb.to_string_lossy(),
                pw.to_string_lossy(),
                pw.to_string_lossy()
            )
            .as_bytes(),
        );
        (usb, config)
    }

    /// `service uninstall --all-profiles --no-enable`, which must succeed
    /// and say it removed `removed` services.
    pub fn uninstall_all_services(&self, removed: usize) {
        let out =
            ok_stdout(
                self.cmd()
                    .args(["service", "uninstall", "--all-profiles", "--no-enable"]),
            );
        assert_eq!(
            out.lines().filter(|l| l.starts_with("removed ")).count(),
            removed,
            "{out}"
        );
    }

    /// Write a file under the test directory.
    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        path
    }

    /// Names of the files in the test directory (not recursive).
    pub fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// `ffsession ARGS...` of `cmd`, for failure messages.
fn command_line(cmd: &Command) -> String {
    let mut line = String::from("ffsession");
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// Run `cmd`. Under Wine, starting a process while many others start
/// sometimes fails with ERROR_INTERNAL_ERROR (1359) from CreateProcess:
/// see [`retried`].
pub fn output(cmd: &mut Command) -> std::process::Output {
    let out = retried(|| cmd.output());
    printed_commands_are_complete(
        &Invocation::of(cmd.get_args(), cmd.get_envs(), cmd.get_current_dir()),
        &out,
    );
    out
}

/// The commands printed by the runs of the CLI tests that were run as
/// printed ([`printed_commands_are_complete`]), one a line.
pub const PRINTED_LOG: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/printed-commands.txt");

/// A run of `ffsession`: its arguments, the environment it was given (the
/// sealed environment clears the rest) and its working folder.
pub struct Invocation {
    args: Vec<String>,
    envs: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    cwd: Option<PathBuf>,
}

impl Invocation {
    pub fn of<'a>(
        args: impl Iterator<Item = &'a OsStr>,
        envs: impl Iterator<Item = (&'a OsStr, Option<&'a OsStr>)>,
        cwd: Option<&Path>,
    ) -> Self {
        Invocation {
            args: args.map(|a| a.to_string_lossy().into_owned()).collect(),
            envs: envs
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                .collect(),
            cwd: cwd.map(Path::to_path_buf),
        }
    }

    /// The profile folder and store this run's command line acts on, as
    /// `ffsession` resolves them (its debug builds' `FFSESSION_TEST_WHERE`).
    fn place(&self) -> serde_json::Value {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ffsession"));
        cmd.args(&self.args);
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        self.place_of(cmd, None, &self.args.join(" "))
    }

    /// The same for `command`, a line this run printed, run by the shell
    /// as printed, from another folder (the root), with `ffsession` on the
    /// `PATH`. Each command run so is added to `PRINTED_LOG`, which
    /// `.ci/run` counts (and fails on none).
    fn place_printed(&self, command: &str) -> serde_json::Value {
        use std::io::Write;
        if let Ok(mut log) = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(PRINTED_LOG)
        {
            let _ = log.write_all(format!("{}\n", command.replace('\n', " ")).as_bytes());
        }
        let bin = assert_cmd::cargo::cargo_bin("ffsession");
        let path = self
            .envs
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let mut dirs = vec![bin.parent().unwrap().to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(command).current_dir("/");
        self.place_of(cmd, Some(std::env::join_paths(dirs).unwrap()), command)
    }

    fn place_of(
        &self,
        mut cmd: std::process::Command,
        path: Option<std::ffi::OsString>,
        what: &str,
    ) -> serde_json::Value {
        cmd.env_clear().envs(self.envs.iter().map(|(k, v)| (k, v)));
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        cmd.env("FFSESSION_TEST_WHERE", "1");
        let out = retried(|| cmd.output());
        assert!(
            out.status.success(),
            "`{what}` does not run as printed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "`{what}`: not where it acts ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        value
    }
}

/// Every command a run printed for the person to run next (in backquotes,
/// or on a `to undo:` line) names the browser, profile and store the run
/// was given, as the command context of the CLI words it; and run as
/// printed, by the shell, from another folder, it acts on the same profile
/// folder and store as the run (`ffsession` says where, without acting,
/// under `FFSESSION_TEST_WHERE`). A command that names a store of its own
/// (a remote's own hints may name the remote the run was given as its
/// store; a `copy --to` the run's store) acts on the run's profile.
pub fn printed_commands_are_complete(run: &Invocation, out: &std::process::Output) {
    // Windows quoting is not the shell's (and shlex reads only the shell's).
    if cfg!(windows) {
        return;
    }
    let args = &run.args;
    // Help, completion scripts and the manual show commands; they print
    // none to run next.
    if args
        .iter()
        .any(|a| ["--help", "-h", "help", "completions", "man"].contains(&a.as_str()))
    {
        return;
    }
    let given = global_flags(args);
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let undo = text
        .lines()
        .filter_map(|l| l.strip_prefix("to undo: "))
        .map(|l| l.split(" (the session").next().unwrap());
    // Not the comments of a file shown whole (a service's unit).
    let quoted = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim_start().starts_with("<!--"))
        .flat_map(|l| l.split('`').skip(1).step_by(2))
        .filter(|span| span.starts_with("ffsession "))
        // A pointer to a command's help acts on nothing.
        .filter(|span| !span.ends_with(" --help"));
    let mut here = None;
    let mut seen = std::collections::HashSet::new();
    for command in undo.chain(quoted) {
        if !seen.insert(command) {
            continue;
        }
        let Some(words) = shlex::split(command) else {
            panic!("`{command}` is not shell words ({args:?} printed it)");
        };
        let printed = global_flags(&words[1..]);
        let here = here.get_or_insert_with(|| run.place());
        let there = run.place_printed(command);
        // A run that covers several profiles (`status`, `--all-profiles`)
        // names the one each command is for.
        let names_profile = |flags: &[(&str, String)]| flags.iter().any(|(f, _)| *f == "--profile");
        assert!(
            there["profile"] == here["profile"]
                || names_profile(&printed) && !names_profile(&given),
            "`{command}`, printed by ffsession {}, acts on another profile: {} and not {}",
            args.join(" "),
            there["profile"],
            here["profile"]
        );
        let own_store =
            printed.iter().any(|(f, _)| *f == "--store") || words.iter().any(|w| w == "--to");
        assert!(
            own_store || there["store"] == here["store"],
            "`{command}`, printed by ffsession {}, acts on the store {} and not {}",
            args.join(" "),
            there["store"],
            here["store"]
        );
        for (flag, value) in &given {
            let same = |v: &str| {
                v == value
                    || Path::new(v).is_absolute()
                        && Path::new(v).ends_with(value.trim_start_matches("./"))
            };
            // A store the run named otherwise (`copy --to`), or a store
            // named on purpose (the undo kept in the profile's own store).
            let other_store = |v: &str| {
                args.iter().any(|a| a == v) || Path::new(v).join("catalog.sqlite").is_file()
            };
            let copy_from_own =
                *flag == "--store" && words.windows(2).any(|w| w[0] == "--to" && same(&w[1]));
            let ok = copy_from_own
                || printed
                    .iter()
                    .any(|(f, v)| f == flag && (same(v) || *f == "--store" && other_store(v)));
            assert!(
                ok,
                "`{command}`, printed by ffsession {}, does not name {flag} {value}",
                args.join(" ")
            );
        }
    }
}

/// The words of the first command of this CLI that `text` names in
/// backquotes with `verb` among its words, as the shell reads them.
pub fn printed_command(text: &str, verb: &str) -> Option<Vec<String>> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("ffsession "))
        .filter_map(shlex::split)
        .find(|words| words.iter().any(|w| w == verb))
}

/// The `--browser`, `--profile` and `--store` options among `args` (the
/// words after `ffsession`), with their values.
fn global_flags(args: &[String]) -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        for (long, short) in [("--browser", "-B"), ("--profile", "-P"), ("--store", "")] {
            if word == long || word == short {
                if let Some(value) = words.next() {
                    found.push((long, value.clone()));
                }
            } else if let Some(value) = word.strip_prefix(&format!("{long}=")) {
                found.push((long, value.to_owned()));
            }
        }
        if word == "--" {
            break;
        }
    }
    found
}

/// `start()`, tried again after a pause, up to five times, while it fails
/// with Wine's ERROR_INTERNAL_ERROR (1359) from CreateProcess; any other
/// error fails the test.
fn retried(
    mut start: impl FnMut() -> std::io::Result<std::process::Output>,
) -> std::process::Output {
    let mut tries = 0;
    loop {
        match start() {
            Err(e) if cfg!(windows) && e.raw_os_error() == Some(1359) && tries < 5 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(200 * tries));
            }
            result => return result.unwrap(),
        }
    }
}

/// `cmd.run()`: [`output`] as a method, for chains, on both kinds of
/// command the tests build.
pub trait Run {
    /// Run the command and return its output (see [`output`]).
    fn run(&mut self) -> std::process::Output;
}

impl Run for Command {
    fn run(&mut self) -> std::process::Output {
        output(self)
    }
}

impl Run for std::process::Command {
    fn run(&mut self) -> std::process::Output {
        let out = retried(|| self.output());
        if Path::new(self.get_program()).file_stem() == Some(OsStr::new("ffsession")) {
            let run = Invocation::of(self.get_args(), self.get_envs(), self.get_current_dir());
            printed_commands_are_complete(&run, &out);
        }
        out
    }
}

/// Run `cmd` and check it succeeded (showing its command line, exit status
/// and stderr if not).
pub fn ok_output(cmd: &mut Command) -> std::process::Output {
    let out = output(cmd);
    assert!(
        out.status.success(),
        "{} failed ({}): {}",
        command_line(cmd),
        out.status,
        stderr(&out)
    );
    out
}

/// Run `cmd`, check it succeeded and return its stdout as text.
pub fn ok_stdout(cmd: &mut Command) -> String {
    String::from_utf8(ok_output(cmd).stdout).unwrap()
}

/// Run `cmd`, check it succeeded and parse its stdout as JSON.
pub fn ok_json(cmd: &mut Command) -> serde_json::Value {
    stdout_json(&ok_output(cmd))
}

/// Run `cmd`, check it failed with exit code 1 (showing its command line and
/// stderr if not) and return its stderr.
pub fn expect_error(cmd: &mut Command) -> String {
    let out = output(cmd);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}: {err}", command_line(cmd));
    err
}

/// `out` is a failure with exit code 1 that printed nothing on stdout;
/// returns its stderr.
pub fn failed_quietly(out: &std::process::Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    err
}

/// Check that `text` (what a command printed) contains every one of
/// `parts`, showing the part it lacks and the whole text if not.
#[track_caller]
pub fn assert_contains_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "no {part:?} in:\n{text}");
    }
}

/// A generated session: its spec, JSON and mozlz4 bytes.
pub struct Generated {
    pub spec: Spec,
    pub json: String,
    pub packed: Vec<u8>,
}

pub fn session(spec: Spec) -> Generated {
    let json = generate(&spec);
    let packed = mozlz4(json.as_bytes());
    Generated { spec, json, packed }
}

/// The mozlz4 file of the session `spec` generates with its first window's
/// tabs replaced by `tabs` (URL, title), one entry each.
pub fn packed_with_tabs(spec: Spec, tabs: &[(&str, &str)]) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_str(&generate(&spec)).unwrap();
    v["windows"][0]["tabs"] = tabs
        .iter()
        .map(|(url, title)| serde_json::json!({"entries": [{"url": url, "title": title}], "index": 1}))
        .collect();
    mozlz4(ffsession_gen::firefox_json(&v).as_bytes())
}

/// A generated session whose first window holds exactly `tabs` (URL, title).
pub fn with_tabs(tabs: &[(&str, &str)]) -> Vec<u8> {
    packed_with_tabs(
        Spec {
            tabs: 4,
            windows: 2,
            ..Spec::default()
        },
        tabs,
    )
}

/// A `profiles.ini` in `root` listing `profiles` (name, folder relative to
/// `root`, tabs), the first the default. A folder with tabs gets a recovery
/// file of that many tabs, last updated at `last_update`; one without is not
/// made.
pub fn firefox_profiles(root: &Path, profiles: &[(&str, &str, Option<usize>)], last_update: u64) {
    let mut ini = String::new();
    for (i, (name, folder, tabs)) in profiles.iter().enumerate() {
        if let Some(tabs) = tabs {
            let backups = root.join(folder).join("sessionstore-backups");
            fs::create_dir_all(&backups).unwrap();
            fs::write(backups.join("recovery.jsonlz4"), packed(*tabs, last_update)).unwrap();
        }
        let default = if i == 0 { "Default=1\n" } else { "" };
        ini += &format!("[Profile{i}]\nName={name}\nIsRelative=1\nPath={folder}\n{default}\n");
    }
    ini += "[General]\nStartWithLastProfile=1\nVersion=2\n";
    fs::create_dir_all(root).unwrap();
    fs::write(root.join("profiles.ini"), ini).unwrap();
}

/// A generated session of `tabs` tabs (the rest as `Spec::default()`).
pub fn tabs_session(tabs: usize) -> Generated {
    session(Spec {
        tabs,
        ..Spec::default()
    })
}

/// A generated session with `tabs` tabs, last updated at `last_update` (ms).
pub fn session_of(tabs: usize, last_update: u64) -> Generated {
    session(Spec {
        tabs,
        last_update,
        ..Spec::default()
    })
}

/// [`session_of`] `tabs` and `last_update` from the generator's seed `seed`
/// (another seed, other URLs and titles).
pub fn seeded_session(tabs: usize, last_update: u64, seed: u64) -> Generated {
    session(Spec {
        tabs,
        last_update,
        seed,
        ..Spec::default()
    })
}

/// The mozlz4 file of [`session_of`] `tabs` and `last_update`.
pub fn packed(tabs: usize, last_update: u64) -> Vec<u8> {
    session_of(tabs, last_update).packed
}

pub fn stdout_json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Replace the recovery file of `profile` with `recovery` as Firefox
/// does: a new file renamed over it.
pub fn replace_recovery(profile: &Path, recovery: &[u8]) {
    let backups = profile.join("sessionstore-backups");
    fs::write(backups.join("recovery.jsonlz4.tmp"), recovery).unwrap();
    fs::rename(
        backups.join("recovery.jsonlz4.tmp"),
        backups.join("recovery.jsonlz4"),
    )
    .unwrap();
}

/// The chunk files of the store at `store` (under the fan-out folders of
/// `chunks/`), sorted.
pub fn chunk_files(store: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(store.join("chunks"))
        .unwrap()
        .flat_map(|fan| fs::read_dir(fan.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .collect();
    out.sort();
    out
}

/// Copy a folder tree (a store copied to an external disk and back).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Write an executable script `name` holding `script` into the folder `bin`
/// (made if missing), to put first on PATH in place of a real program;
/// returns `bin`.
#[cfg(unix)]
pub fn fake_program(bin: &Path, name: &str, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(bin).unwrap();
    let path = bin.join(name);
    fs::write(&path, script).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    bin.to_owned()
}

#[cfg(unix)]
/// The test process's PATH with `bin` first (a folder of
/// [`fake_program`]s).
pub fn path_with_first(bin: &Path) -> std::ffi::OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&rest)))
        .unwrap()
}

/// A `systemctl` that fails as it does without a user session ("Failed to
/// connect to bus"), in `bin/` of the test directory: see [`fake_program`].
#[cfg(target_os = "linux")]
pub fn systemctl_without_a_bus(env: &TestEnv) -> PathBuf {
    fake_program(
        &env.path().join("bin"),
        "systemctl",
        "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n",
    )
}

/// Where `service install` writes the service of the profile named `name`
/// in the sealed environment.
pub fn service_file(env: &TestEnv, name: &str) -> PathBuf {
    let spec = ffsession::service::ServiceSpec {
        profile_name: name.to_owned(),
        program: String::new(),
        args: Vec::new(),
    };
    Platform::CURRENT.service_file(&env.folders(), &spec)
}

/// The text of a service file: UTF-8, or UTF-16 after a byte order mark (a
/// Windows task).
pub fn read_service_file(path: &Path) -> String {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match bytes.strip_prefix(&[0xFF, 0xFE]) {
        Some(utf16) => {
            let units: Vec<u16> = utf16
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).unwrap()
        }
        None => String::from_utf8(bytes).unwrap(),
    }
}

/// The `--keep-*` options of a policy that keeps only the `last` newest
/// sessions (every periodic rule off): what is left is the protections'.
pub fn keep_only_last(last: u32) -> Vec<String> {
    let mut args = vec!["--keep-last".to_owned(), last.to_string()];
    for rule in ["hourly", "daily", "weekly", "monthly", "yearly"] {
        args.push(format!("--keep-{rule}"));
        args.push("0".to_owned());
    }
    args
}

/// The snapshot id in the `to undo: ffsession restore ID` line of a
/// command's output (a restore, a tidy, a merge).
pub fn undo_id(out: &str) -> String {
    let words = undo_command(out);
    let at = words.iter().position(|w| w == "restore").unwrap();
    words[at + 1]
        .strip_prefix("snapshot:")
        .unwrap_or(&words[at + 1])
        .to_owned()
}

/// The words of the command on the `to undo:` line (after `ffsession`), as
/// the shell reads them: it is run as printed.
pub fn undo_command(out: &str) -> Vec<String> {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("to undo: "))
        .unwrap_or_else(|| panic!("no `to undo:` line: {out}"));
    let line = line.split(" (the session").next().unwrap();
    let words = shlex::split(line).unwrap_or_else(|| panic!("not one command: {line}"));
    assert_eq!(words[0], "ffsession", "{line}");
    words[1..].to_vec()
}
