//! Where `compress` and `decompress` write: stdout, a file written atomically,
//! or the input itself with --in-place.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use ffsession::fs_util::{same_file, write_atomic};
use ffsession::Error;

use crate::error::UserError;

/// Output options shared by the converters.
#[derive(Debug, Args)]
pub struct Output {
    /// Write to OUT (atomically: a temporary file renamed into place); `-` is stdout
    /// [default: stdout]
    #[arg(long, short = 'o', value_name = "OUT")]
    pub output: Option<PathBuf>,

    /// Replace the input file with the result (atomically)
    #[arg(long, conflicts_with = "output")]
    pub in_place: bool,
}

impl Output {
    /// Write what `body` produces to the chosen destination.
    pub fn write(
        &self,
        input: &Path,
        body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<()> {
        let target = match (&self.output, self.in_place) {
            (_, true) => Some(input.to_path_buf()),
            (Some(p), false) if p.as_os_str() == "-" => None,
            (Some(p), false) => {
                if same_file(p, input) {
                    let e = Error::WouldOverwriteInput { path: p.clone() };
                    return Err(UserError::with_hint(
                        e.to_string(),
                        "choose another output file with -o, or pass --in-place (and no -o) to replace the input",
                    ));
                }
                Some(p.clone())
            }
            (None, false) => None,
        };
        match target {
            Some(path) => write_atomic(&path, body)?,
            None => {
                let mut out = io::stdout().lock();
                body(&mut out)?;
                out.flush()?;
            }
        }
        Ok(())
    }
}
