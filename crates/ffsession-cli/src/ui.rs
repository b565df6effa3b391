//! What the CLI says on stderr besides data: errors, warnings and notes,
//! each line starting `ffsession: `. `error:` and `warning:` are coloured as
//! clap colours its own (red and yellow, bold) when stderr is a terminal;
//! plain when it is not, or when `NO_COLOR` is set (anstream decides, as it
//! does for clap). `--quiet` silences the notes (which file was read, what
//! was written, waiting for a lock), never a warning or an error.

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use anstyle::{AnsiColor, Style};

static QUIET: AtomicBool = AtomicBool::new(false);

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const HINT: Style = AnsiColor::Green.on_default().bold();

/// Silence the notes from now on (`--quiet`).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// True under `--quiet`: no notes, no progress bars.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// `ffsession: MESSAGE`, unless `--quiet`.
pub fn note(message: impl Display) {
    if !quiet() {
        let _ = writeln!(anstream::stderr().lock(), "ffsession: {message}");
    }
}

/// `ffsession: warning: MESSAGE`.
pub fn warning(message: impl Display) {
    let _ = writeln!(
        anstream::stderr().lock(),
        "ffsession: {WARNING}warning:{WARNING:#} {message}"
    );
}

/// `ffsession: error: MESSAGE (hint: HINT)`, on one line.
pub fn error(message: &str, hint: Option<&str>) {
    let one_line = |s: &str| s.replace('\n', " ");
    let hint = hint
        .map(|h| format!(" ({HINT}hint:{HINT:#} {})", one_line(h)))
        .unwrap_or_default();
    let _ = writeln!(
        anstream::stderr().lock(),
        "ffsession: {ERROR}error:{ERROR:#} {}{hint}",
        one_line(message)
    );
}
