//! `ffsession`: keep Firefox sessions safe and make them useful.
//!
//! A thin layer over the `ffsession` library: parse arguments, call the library,
//! print. `main` only maps the result to an exit code.

mod cli;
mod commands;
mod config;
mod error;
mod fmt;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => error::report(&err),
    }
}
