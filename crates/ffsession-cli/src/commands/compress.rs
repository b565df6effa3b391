//! `ffsession compress`: JSON to a mozlz4 session file Firefox reads.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ffsession::{format, Error, SessionData};

use super::output::Output;
use crate::error::UserError;

/// Compress session JSON into a mozlz4 file that Firefox reads
/// (sessionstore.jsonlz4, recovery.jsonlz4, ...).
///
/// The JSON is checked to be a Firefox session first. Compressing what
/// `decompress` wrote gives back the same JSON bytes. The output is written
/// atomically and never replaces the input unless --in-place.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  ffsession compress session.json -o sessionstore.jsonlz4")]
pub struct CompressArgs {
    /// JSON session file to compress
    pub file: PathBuf,

    #[command(flatten)]
    pub output: Output,

    /// Compress even if the JSON is not a valid Firefox session
    #[arg(long)]
    pub no_verify: bool,
}

pub fn run(args: CompressArgs) -> Result<()> {
    let to_stdout = !args.output.in_place
        && args
            .output
            .output
            .as_ref()
            .is_none_or(|o| o.as_os_str() == "-");
    if to_stdout && std::io::stdout().is_terminal() {
        return Err(UserError::with_hint(
            "refusing to write binary mozlz4 data to a terminal",
            "pass -o FILE, or redirect stdout to a file",
        ));
    }
    let data = SessionData::read(&args.file)?;
    if data.format() == format::Format::Mozlz4 {
        return Err(Error::Format {
            path: args.file.clone(),
            source: ffsession::error::FormatError::AlreadyCompressed,
        }
        .into());
    }
    if !args.no_verify && !super::decompress::is_zen(&data) {
        data.parse()?;
    }
    let packed = format::compress(data.json()).map_err(|source| Error::Format {
        path: args.file.clone(),
        source,
    })?;
    args.output
        .write(&args.file, |w: &mut dyn Write| w.write_all(&packed))
}
