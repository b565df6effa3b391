//! `ffsession ui`: a local page to see the sessions and pick what to bring
//! back (the server is in `crate::web`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::cli::GlobalArgs;

/// Serve a local page showing the store's sessions, and open it in the
/// default browser: a timeline of windows and tabs over time, each
/// snapshot's windows, tab groups and tabs, closed and archived tabs, the
/// difference between two snapshots, a search over every tab ever backed
/// up, and picking tabs and windows to open now or add at the browser's
/// next start, or a snapshot to restore or rescue.
///
/// The page reads the store as `list`, `tabs`, `diff` and `search` do, and
/// changes things only by running those commands (`restore`, `extract`,
/// `merge`, `rescue`): before each action it shows what will happen and the
/// command line that does the same. The server listens on 127.0.0.1 only,
/// and answers only the address it prints, which holds a random secret.
/// Ctrl-C stops it.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession ui                         serve the page and open it in the default browser
  ffsession ui --no-open --port 8765   print the address instead
  ffsession --store sftp://host/ffsession ui   a remote store, through its local copy")]
pub struct UiArgs {
    /// The port on 127.0.0.1 to listen on (0: any free port)
    #[arg(long, default_value_t = 0, value_name = "PORT")]
    pub port: u16,

    /// Print the page's address, do not open a browser
    #[arg(long)]
    pub no_open: bool,

    /// The browser program that opens picked tabs ("open now"); its
    /// remote command line is `PROGRAM -P PROFILE --new-tab URL`
    /// [default: the --browser's program (firefox, librewolf, ...) on PATH]
    #[arg(long, value_name = "PROGRAM", env = "FFSESSION_BROWSER_BIN")]
    pub browser_bin: Option<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: UiArgs) -> Result<()> {
    crate::web::serve(global, args)
}
