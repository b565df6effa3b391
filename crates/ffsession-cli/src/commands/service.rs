//! `ffsession service install|uninstall`: run `watch` in the background at login.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ffsession::fs_util::write_atomic;
use ffsession::profile::Profile;
use ffsession::service::ServiceSpec;

use crate::cli::GlobalArgs;
use crate::error::UserError;

/// Install or remove a background service that runs `ffsession watch` for the
/// profile: a systemd user unit on Linux, a launchd agent on macOS.
///
/// With --all-profiles, one service per profile of profiles.ini, each with its
/// own store: a profile whose watch fails is restarted on its own and never
/// stops the others.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession service install                 watch the default profile from now on
  ffsession service install --all-profiles  one service per profile
  ffsession service install --no-enable     only write the unit file
  ffsession service uninstall")]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

/// What to do with the service.
#[derive(Debug, Subcommand)]
pub enum ServiceAction {
    /// Write the unit (or agent) file and start it now and at every login
    Install {
        /// Only write the file; do not ask systemctl/launchctl to start it
        #[arg(long)]
        no_enable: bool,
        /// One service per profile of profiles.ini, each into its own store
        #[arg(long)]
        all_profiles: bool,
    },
    /// Stop the service and remove its file
    Uninstall {
        /// Only remove the file; do not ask systemctl/launchctl to stop it
        #[arg(long)]
        no_enable: bool,
        /// The service of every profile of profiles.ini
        #[arg(long)]
        all_profiles: bool,
    },
}

/// The service file's path and text for this platform.
fn service_file(spec: &ServiceSpec) -> Result<(PathBuf, String)> {
    let base = directories::BaseDirs::new()
        .ok_or_else(|| UserError::with_hint("cannot find the home directory", "set HOME"))?;
    if cfg!(target_os = "macos") {
        let path = base
            .home_dir()
            .join("Library/LaunchAgents")
            .join(format!("{}.plist", spec.launchd_label()));
        Ok((path, spec.launchd_plist()))
    } else if cfg!(target_os = "linux") {
        let path = base
            .config_dir()
            .join("systemd/user")
            .join(format!("{}.service", spec.unit_name()));
        Ok((path, spec.systemd_unit()))
    } else {
        Err(UserError::with_hint(
            "background services are supported on Linux (systemd) and macOS (launchd) only",
            "run `ffsession watch` from your system's startup programs instead",
        ))
    }
}

/// Run a service manager command; its failure is an error with a hint.
fn manager(program: &str, args: &[&str]) -> Result<()> {
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
            "the file is written; enable it by hand, or check that a user session manager is running",
        ));
    }
    Ok(())
}

pub fn run(global: &GlobalArgs, args: ServiceArgs) -> Result<()> {
    let (ServiceAction::Install { all_profiles, .. }
    | ServiceAction::Uninstall { all_profiles, .. }) = args.action;
    let profiles = if all_profiles {
        let config = global.config()?;
        super::backup::all_profiles(global, &config)?
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    } else {
        vec![global.profile()?]
    };
    let mut units = std::collections::HashSet::new();
    for p in &profiles {
        let unit = ServiceSpec {
            profile_name: p.name.clone(),
            program: String::new(),
            args: Vec::new(),
        }
        .unit_name();
        if !units.insert(unit.clone()) {
            return Err(UserError::with_hint(
                format!("two profiles would share the service name {unit}"),
                "rename one of them in Firefox's profile manager, or install one at a time with --profile",
            ));
        }
    }
    for profile in &profiles {
        one(global, &args.action, profile)?;
    }
    Ok(())
}

/// Install or uninstall the service of one profile.
fn one(global: &GlobalArgs, action: &ServiceAction, profile: &Profile) -> Result<()> {
    let program = std::env::current_exe().context("finding the ffsession binary")?;
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
        profile_name: profile.name.clone(),
        program: program.display().to_string(),
        args: watch_args,
    };
    let (path, text) = service_file(&spec)?;
    let mut out = io::stdout().lock();
    let linux = cfg!(target_os = "linux");
    let unit = format!("{}.service", spec.unit_name());
    match *action {
        ServiceAction::Install { no_enable, .. } => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
            }
            write_atomic(&path, |w| w.write_all(text.as_bytes()))?;
            writeln!(out, "wrote {}:\n{text}", path.display())?;
            if !no_enable {
                if linux {
                    manager("systemctl", &["--user", "daemon-reload"])?;
                    manager("systemctl", &["--user", "enable", "--now", &unit])?;
                    writeln!(
                        out,
                        "enabled and started {unit} (status: systemctl --user status {unit})"
                    )?;
                } else {
                    manager("launchctl", &["load", "-w", &path.display().to_string()])?;
                    writeln!(out, "loaded {}", spec.launchd_label())?;
                }
            }
        }
        ServiceAction::Uninstall { no_enable, .. } => {
            if !no_enable && path.exists() {
                if linux {
                    manager("systemctl", &["--user", "disable", "--now", &unit])?;
                } else {
                    manager("launchctl", &["unload", "-w", &path.display().to_string()])?;
                }
            }
            match std::fs::remove_file(&path) {
                Ok(()) => writeln!(out, "removed {}", path.display())?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => writeln!(
                    out,
                    "no service file at {}; nothing to remove",
                    path.display()
                )?,
                Err(e) => return Err(e).with_context(|| path.display().to_string()),
            }
            if !no_enable && linux {
                manager("systemctl", &["--user", "daemon-reload"])?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
