//! `ffsession service install|status|uninstall`: run `watch` in the
//! background at login.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ffsession::fs_util::write_atomic;
use ffsession::platform::Platform;
use ffsession::profile::Profile;
use ffsession::service::ServiceSpec;

use crate::cli::GlobalArgs;
use crate::error::UserError;

/// Install or remove a background service that runs `ffsession watch` for the
/// profile: a systemd user unit on Linux, a launchd agent on macOS, a Task
/// Scheduler task on Windows (at your logon, with no console window, run by
/// ffsessionw.exe, which runs ffsession again 30 s after it fails).
///
/// With --all-profiles, one service per profile of profiles.ini, each with its
/// own store: a profile whose watch fails is restarted on its own and never
/// stops the others.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession service install                 watch the default profile from now on
  ffsession service install --all-profiles  one service per profile
  ffsession service install --no-enable     only write the unit (or task) file
  ffsession service status                  is it installed and running?
  ffsession service uninstall")]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

/// What to do with the service.
#[derive(Debug, Subcommand)]
pub enum ServiceAction {
    /// Write the unit (agent, task) file and start it now and at every login
    Install {
        /// Only write the file; do not ask systemctl/launchctl/schtasks to
        /// start it
        #[arg(long)]
        no_enable: bool,
        /// One service per profile of profiles.ini, each into its own store
        #[arg(long)]
        all_profiles: bool,
    },
    /// Whether the service is installed, and what systemctl/launchctl/schtasks
    /// says of it
    Status {
        /// The service of every profile of profiles.ini
        #[arg(long)]
        all_profiles: bool,
    },
    /// Stop the service and remove its file
    Uninstall {
        /// Only remove the file; do not ask systemctl/launchctl/schtasks to
        /// stop it
        #[arg(long)]
        no_enable: bool,
        /// The service of every profile of profiles.ini
        #[arg(long)]
        all_profiles: bool,
    },
}

/// The service file's path and bytes for this platform.
fn service_file(spec: &ServiceSpec) -> Result<(PathBuf, Vec<u8>)> {
    let folders = crate::folders::folders()
        .ok_or_else(|| UserError::with_hint("cannot find the home directory", "set HOME"))?;
    let path = Platform::CURRENT.service_file(&folders, spec);
    let bytes = match Platform::CURRENT {
        Platform::Linux => spec.systemd_unit().into_bytes(),
        Platform::MacOs => spec.launchd_plist().into_bytes(),
        Platform::Windows => spec.task_xml_utf16(&windows_user()?),
    };
    Ok((path, bytes))
}

/// The user the Windows task runs as, and at whose logon: `DOMAIN\name`.
fn windows_user() -> Result<String> {
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var("USERDOMAIN"), var("USERNAME")) {
        (Some(domain), Some(name)) => Ok(format!("{domain}\\{name}")),
        (None, Some(name)) => Ok(name),
        (_, None) => Err(UserError::with_hint(
            "cannot tell who you are: USERNAME is not set",
            format!(
                "run {} from your own session",
                crate::context::quoted(&["service", "install"])
            ),
        )),
    }
}

/// The program the service runs: this `ffsession`, or on Windows the
/// windowless launcher beside it.
fn service_program() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the ffsession binary")?;
    if Platform::CURRENT != Platform::Windows {
        return Ok(exe);
    }
    let launcher = exe.with_file_name("ffsessionw.exe");
    if !launcher.is_file() {
        return Err(UserError::with_hint(
            format!(
                "{} is missing: the Windows service runs ffsession through it, with no console window",
                launcher.display()
            ),
            "install ffsession and ffsessionw.exe together (both come in the Windows .zip and with `cargo install`)",
        ));
    }
    Ok(launcher)
}

/// What install says when the service manager fails: the file is there.
const INSTALL_HINT: &str =
    "the file is written; enable it by hand, or check that a user session manager is running";

/// Run a service manager command; its failure is an error with `hint`.
fn manager(program: &str, args: &[&str], hint: &str) -> Result<()> {
    let status = Command::new(program)
        .args(args)
        .status()
        .with_context(|| format!("running {program}"))
        .map_err(|e| {
            UserError::with_hint(
                format!("{e:#}"),
                "is it installed? pass --no-enable to only write the file",
            )
        })?;
    if !status.success() {
        return Err(UserError::with_hint(
            format!("`{program} {}` failed ({status})", args.join(" ")),
            hint,
        ));
    }
    Ok(())
}

/// Show what a service manager command says; a non-zero exit (a service
/// that is not running) is part of the answer, not an error. `answers` are
/// the exit codes that are an answer; with any other (`systemctl --user`
/// without a user session: "Failed to connect to bus"), or when the program
/// cannot be run, returns what failed: the manager cannot tell.
fn ask_manager(
    out: &mut dyn Write,
    program: &str,
    args: &[&str],
    answers: Option<&[i32]>,
) -> Result<Option<String>> {
    let line = format!("`{program} {}`", args.join(" "));
    match Command::new(program).args(args).output() {
        Ok(answer) => {
            out.write_all(&answer.stdout)?;
            out.write_all(&answer.stderr)?;
            let answered = match (answers, answer.status.code()) {
                (None, _) => true,
                (Some(codes), Some(code)) => codes.contains(&code),
                (Some(_), None) => false,
            };
            Ok((!answered).then(|| format!("{line} failed ({})", answer.status)))
        }
        Err(e) => {
            writeln!(out, "cannot run {program}: {e}")?;
            Ok(Some(format!("cannot run {program}: {e}")))
        }
    }
}

pub fn run(global: &GlobalArgs, args: ServiceArgs) -> Result<()> {
    let (ServiceAction::Install { all_profiles, .. }
    | ServiceAction::Status { all_profiles }
    | ServiceAction::Uninstall { all_profiles, .. }) = args.action;
    let profiles = if all_profiles {
        let config = global.config()?;
        super::backup::all_profiles(global, &config)?
            .into_iter()
            .map(|(p, _, _)| p)
            .collect()
    } else {
        vec![global.profile()?]
    };
    // Two profiles of one name (a Firefox's and a Zen's `default-release`,
    // a distribution Firefox's and a Flatpak's): the later one's service,
    // like its store, is kept apart by its folder.
    let mut units = std::collections::HashSet::new();
    let mut named = Vec::with_capacity(profiles.len());
    for p in profiles {
        let key = ffsession::store::owner::folder_key(&p.path);
        let store_apart = global.data_store_dir(&p).is_ok_and(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(&format!("-{key}")))
        });
        let mut name = p.name.clone();
        if store_apart || units.contains(&unit_name(&name)) {
            name = format!("{}-{key}", p.name);
        }
        if !units.insert(unit_name(&name)) {
            return Err(UserError::with_hint(
                format!("two profiles would share the service name {}", unit_name(&name)),
                "rename one of them in the browser's profile manager, or install one at a time with --profile",
            ));
        }
        named.push((p, name));
    }
    for (profile, name) in &named {
        one(global, &args.action, profile, name)?;
    }
    Ok(())
}

/// What `status` says of a profile's service.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", content = "detail", rename_all = "kebab-case")]
pub enum ServiceState {
    /// The service manager says it runs.
    Running(String),
    /// Installed, and the service manager says it does not run.
    Stopped(String),
    /// No service file for the profile.
    NotInstalled(String),
    /// The service manager cannot tell (`systemctl --user` without a user
    /// session).
    Unknown(String),
}

/// The state of `profile`'s service (a quiet question to the service
/// manager: `systemctl --user is-active`, `launchctl list`, `schtasks
/// /query`). On Linux, without a unit of its own, the Debian package's
/// `ffsession.service` (which watches the default profile) is asked.
pub fn state(global: &GlobalArgs, profile: &Profile) -> ServiceState {
    let key = ffsession::store::owner::folder_key(&profile.path);
    let store_apart = global.data_store_dir(profile).is_ok_and(|d| {
        d.file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(&format!("-{key}")))
    });
    let name = if store_apart {
        format!("{}-{key}", profile.name)
    } else {
        profile.name.clone()
    };
    let spec = ServiceSpec {
        profile_name: name,
        program: String::new(),
        args: Vec::new(),
    };
    let Some(folders) = crate::folders::folders() else {
        return ServiceState::Unknown("cannot find the home directory".into());
    };
    let path = Platform::CURRENT.service_file(&folders, &spec);
    let mut unit = format!("{}.service", spec.unit_name());
    if !path.exists() {
        let packaged = std::path::Path::new("/usr/lib/systemd/user/ffsession.service");
        if Platform::CURRENT == Platform::Linux && packaged.exists() {
            unit = "ffsession.service".into();
        } else {
            return ServiceState::NotInstalled(format!("no {}", path.display()));
        }
    }
    let ask = |program: &str, args: &[&str]| Command::new(program).args(args).output();
    match Platform::CURRENT {
        Platform::Linux => match ask("systemctl", &["--user", "is-active", &unit]) {
            Ok(o) => {
                let said = String::from_utf8_lossy(&o.stdout).trim().to_owned();
                match (o.status.code(), said.as_str()) {
                    (Some(0), _) => ServiceState::Running(format!("{unit}: {said}")),
                    (Some(3), "inactive" | "failed" | "deactivating")
                        if unit == "ffsession.service" =>
                    {
                        ServiceState::NotInstalled(format!("no {}", path.display()))
                    }
                    (Some(3), _) => ServiceState::Stopped(format!("{unit}: {said}")),
                    _ => ServiceState::Unknown(format!(
                        "`systemctl --user is-active {unit}` failed: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    )),
                }
            }
            Err(e) => ServiceState::Unknown(format!("cannot run systemctl: {e}")),
        },
        Platform::MacOs => match ask("launchctl", &["list", &spec.launchd_label()]) {
            Ok(o) if o.status.success() => {
                if String::from_utf8_lossy(&o.stdout).contains("\"PID\"") {
                    ServiceState::Running(spec.launchd_label())
                } else {
                    ServiceState::Stopped(format!("{}: loaded, not running", spec.launchd_label()))
                }
            }
            Ok(_) => ServiceState::Stopped(format!("{}: not loaded", spec.launchd_label())),
            Err(e) => ServiceState::Unknown(format!("cannot run launchctl: {e}")),
        },
        Platform::Windows => {
            let task = spec.unit_name();
            match ask("schtasks", &["/query", "/tn", &task, "/fo", "csv", "/nh"]) {
                Ok(o) if o.status.success() => {
                    let said = String::from_utf8_lossy(&o.stdout);
                    if said.contains("Running") {
                        ServiceState::Running(task)
                    } else {
                        ServiceState::Stopped(format!("{task}: {}", said.trim()))
                    }
                }
                Ok(o) => ServiceState::Unknown(format!(
                    "`schtasks /query` failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => ServiceState::Unknown(format!("cannot run schtasks: {e}")),
            }
        }
    }
}

/// The unit name of a profile's service, `ffsession-watch-<name>`.
fn unit_name(name: &str) -> String {
    ServiceSpec {
        profile_name: name.to_owned(),
        program: String::new(),
        args: Vec::new(),
    }
    .unit_name()
}

/// Install or uninstall the service of one profile.
fn one(global: &GlobalArgs, action: &ServiceAction, profile: &Profile, name: &str) -> Result<()> {
    let program = service_program()?;
    // The service runs from another working directory: absolute paths only.
    let absolute = |p: &std::path::Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let mut watch_args = vec![
        "watch".to_owned(),
        "--profile".to_owned(),
        absolute(&profile.path),
    ];
    // So the service finds the profile's name (and so its store) in the
    // same profiles.ini.
    if let Some(dir) = &global.firefox_dir {
        watch_args.extend(["--firefox-dir".to_owned(), absolute(dir)]);
    }
    if let Some(store) = &global.store {
        watch_args.extend(["--store".to_owned(), absolute(store)]);
    }
    if let Some(config) = &global.config {
        watch_args.extend(["--config".to_owned(), absolute(config)]);
    }
    let spec = ServiceSpec {
        profile_name: name.to_owned(),
        program: program.display().to_string(),
        args: watch_args,
    };
    let (path, bytes) = service_file(&spec)?;
    let mut out = io::stdout().lock();
    let platform = Platform::CURRENT;
    let unit = format!("{}.service", spec.unit_name());
    let task = spec.unit_name();
    let file = path.display().to_string();
    match *action {
        ServiceAction::Install { no_enable, .. } => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
            }
            write_atomic(&path, |w| w.write_all(&bytes))?;
            let text = match platform {
                Platform::Windows => spec.task_xml(&windows_user()?),
                _ => String::from_utf8_lossy(&bytes).into_owned(),
            };
            writeln!(out, "wrote {}:\n{text}", path.display())?;
            if !no_enable {
                match platform {
                    Platform::Linux => {
                        // Without a user service manager (no user session:
                        // a `su`, a container, an ssh login without
                        // lingering) systemctl says "Failed to connect to
                        // bus": say how to finish, and the other way.
                        let mut watch = vec![spec.program.clone()];
                        watch.extend(spec.args.iter().cloned());
                        let hint = format!(
                            "the unit file is written; systemctl needs a user session (a graphical or ssh login; `loginctl enable-linger` keeps one): there, run `systemctl --user daemon-reload && systemctl --user enable --now {unit}`; or, without systemd, start `{}` at login (your desktop's autostart)",
                            crate::context::join(&watch)
                        );
                        manager("systemctl", &["--user", "daemon-reload"], &hint)?;
                        manager("systemctl", &["--user", "enable", "--now", &unit], &hint)?;
                        writeln!(
                            out,
                            "enabled and started {unit} (status: systemctl --user status {unit})"
                        )?;
                    }
                    Platform::MacOs => {
                        manager("launchctl", &["load", "-w", &file], INSTALL_HINT)?;
                        writeln!(out, "loaded {}", spec.launchd_label())?;
                    }
                    Platform::Windows => {
                        manager(
                            "schtasks",
                            &["/create", "/tn", &task, "/xml", &file, "/f"],
                            INSTALL_HINT,
                        )?;
                        manager("schtasks", &["/run", "/tn", &task], INSTALL_HINT)?;
                        writeln!(
                            out,
                            "registered and started the task {task}, and at every logon (status: ffsession service status)"
                        )?;
                    }
                }
            }
        }
        ServiceAction::Status { .. } => {
            let installed = path.exists();
            if installed {
                writeln!(out, "{}: installed ({})", spec.profile_name, path.display())?;
            } else {
                writeln!(
                    out,
                    "{}: not installed (no {})",
                    spec.profile_name,
                    path.display()
                )?;
            }
            let failed = match platform {
                // systemctl status: 0 running, 3 not running, 4 no such
                // unit; anything else is no answer.
                Platform::Linux => ask_manager(
                    &mut out,
                    "systemctl",
                    &["--user", "status", "--no-pager", &unit],
                    Some(&[0, 3, 4]),
                )?,
                Platform::MacOs => ask_manager(
                    &mut out,
                    "launchctl",
                    &["list", &spec.launchd_label()],
                    None,
                )?,
                Platform::Windows => ask_manager(
                    &mut out,
                    "schtasks",
                    &["/query", "/tn", &task, "/v", "/fo", "list"],
                    None,
                )?,
            };
            if let Some(failed) = failed {
                out.flush()?;
                let what = if installed {
                    "installed, but cannot tell whether it runs"
                } else {
                    "not installed, and cannot tell whether a service runs"
                };
                return Err(UserError::with_hint(
                    format!("{}: {what}: {failed}", spec.profile_name),
                    format!(
                        "run {} again from a session with a user service manager (`systemctl --user status {unit}` works there)",
                        crate::context::quoted(&["service", "status"])
                    ),
                ));
            }
        }
        ServiceAction::Uninstall { no_enable, .. } => {
            // Without a user session, systemctl --user cannot disable the
            // unit: the file is removed all the same, and the error says
            // what to run once there is a session.
            let mut not_disabled = None;
            if !no_enable && path.exists() {
                match platform {
                    Platform::Linux => {
                        let args = ["--user", "disable", "--now", unit.as_str()];
                        if let Err(e) = manager("systemctl", &args, "") {
                            not_disabled = Some(e);
                        }
                    }
                    Platform::MacOs => manager(
                        "launchctl",
                        &["unload", "-w", &file],
                        "unload it by hand, then run uninstall again",
                    )?,
                    Platform::Windows => {
                        // Stop the running watch (not running: nothing to
                        // end), then remove the task.
                        let _ = Command::new("schtasks")
                            .args(["/end", "/tn", &task])
                            .output();
                        manager(
                            "schtasks",
                            &["/delete", "/tn", &task, "/f"],
                            "delete the task by hand (Task Scheduler), then run uninstall again",
                        )?;
                    }
                }
            }
            let removed = match std::fs::remove_file(&path) {
                Ok(()) => {
                    writeln!(out, "removed {}", path.display())?;
                    true
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    writeln!(
                        out,
                        "no service file at {}; nothing to remove",
                        path.display()
                    )?;
                    false
                }
                Err(e) => return Err(e).with_context(|| path.display().to_string()),
            };
            if let Some(e) = not_disabled {
                out.flush()?;
                return Err(UserError::with_hint(
                    format!("{e:#}: {unit} may still be enabled"),
                    format!("the unit file is removed; to finish, run `systemctl --user disable {unit}` then `systemctl --user daemon-reload` once a user session exists (a graphical or `ssh` login; `loginctl enable-linger` keeps one)"),
                ));
            }
            if removed && !no_enable && platform == Platform::Linux {
                manager(
                    "systemctl",
                    &["--user", "daemon-reload"],
                    "the unit file is removed; run `systemctl --user daemon-reload` once a user session exists",
                )?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
