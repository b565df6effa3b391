//! `ffsession decompress`: a session file to plain JSON.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ffsession::format::write_pretty;
use ffsession::SessionData;

use super::output::Output;

/// Decompress a session file (mozlz4) to its JSON.
///
/// The JSON is checked to be a Firefox session (or Zen's own sessions file,
/// zen-sessions.jsonlz4) first (skip that with
/// --no-verify to repair a damaged one by hand). Output goes to stdout, or is
/// written atomically to -o OUT; it never replaces the input unless --in-place.
/// The output holds cookies and form data: files are created readable only by
/// you.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession decompress recovery.jsonlz4 | jq '.windows | length'
  ffsession decompress recovery.jsonlz4 -o session.json --pretty")]
pub struct DecompressArgs {
    /// Session file to decompress (mozlz4, or JSON which is copied)
    pub file: PathBuf,

    #[command(flatten)]
    pub output: Output,

    /// Indent the JSON for reading (the bytes then differ from Firefox's)
    #[arg(long)]
    pub pretty: bool,

    /// Write the JSON even if it is not a valid Firefox session
    #[arg(long)]
    pub no_verify: bool,
}

pub fn run(args: DecompressArgs) -> Result<()> {
    let write = |data: &SessionData| {
        let json = data.json();
        args.output.write(&args.file, |w: &mut dyn Write| {
            if args.pretty {
                write_pretty(json, w).map_err(io::Error::other)?;
                w.write_all(b"\n")
            } else {
                w.write_all(json)
            }
        })
    };
    if args.no_verify {
        return write(&SessionData::read(&args.file)?);
    }
    // Checked as it decodes (`format/at_once.rs`); written once it parses.
    match SessionData::read_parsed(&args.file, |data, _| write(data)) {
        Ok(written) => written,
        // Zen's own sessions file is no Firefox session, and is valid.
        Err(e @ ffsession::Error::Parse { .. }) => {
            let data = SessionData::read(&args.file)?;
            if is_zen(&data) {
                return write(&data);
            }
            Err(e.into())
        }
        Err(e) => Err(e.into()),
    }
}

/// True for Zen's own sessions file (`zen-sessions.jsonlz4` and its copies),
/// told by its content as `info` tells it.
pub fn is_zen(data: &SessionData) -> bool {
    ffsession::zen::ZenSessions::from_json(data.json()).is_ok_and(|z| z.has_zen_fields())
}
