//! `ffsession`: keep Firefox sessions safe and make them useful.
//!
//! A thin layer over the `ffsession` library: parse arguments, call the library,
//! print. `main` only maps the result to an exit code.

mod alarms;
mod cli;
mod commands;
mod config;
mod context;
mod error;
mod fmt;
mod folders;
mod hints;
mod lock_wait;
mod notify;
mod remote;
mod ui;
mod web;

use std::process::ExitCode;

fn main() -> ExitCode {
    install_test_hook();
    let cli = cli::parse();
    let global = cli.global.clone();
    context::set(&global);
    #[cfg(debug_assertions)]
    if ffsession::test_setting!("WHERE") == Some(1) {
        // TEST HOOK: say where this command line acts, and do nothing.
        return context::print_where(&global);
    }
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => error::report(&err, &global),
    }
}

/// TEST HOOK, for the durability tests only: slow down or fail every file
/// write, or kill the process after a number of them (`ffsession::fs_util::TestHook`).
/// Unset, nothing changes; a release build has none of it.
fn install_test_hook() {
    #[cfg(debug_assertions)]
    {
        remote::install_test_hook();
        let delay = ffsession::test_setting!("WRITE_DELAY_MS");
        let enospc = ffsession::test_setting!("ENOSPC_AFTER_BYTES");
        let kill = ffsession::test_setting!("KILL_AFTER_WRITES");
        if delay.is_some() || enospc.is_some() || kill.is_some() {
            ffsession::fs_util::set_test_hook(Some(ffsession::fs_util::TestHook {
                delay_per_write: std::time::Duration::from_millis(delay.unwrap_or(0)),
                fail_after_bytes: enospc,
                kill_after_commits: kill,
            }));
        }
    }
}
