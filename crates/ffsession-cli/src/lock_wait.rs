//! Waiting for the store lock: a writer that finds the store locked by another
//! ffsession (the `watch` service, say) waits its turn, up to `--lock-wait`,
//! saying once on stderr who it waits for. The library never waits: it
//! answers [`StoreError::Locked`] at once, and this loop retries.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use ffsession::store::{lock_holder, StoreError};

use crate::error::UserError;
use crate::fmt;

/// How often a waiting writer tries the lock again.
const POLL: Duration = Duration::from_millis(100);

/// Parse `--lock-wait` (clap's value parser: a bad value is a usage error
/// naming the option): `0` (fail at once), `30s`, `5m`, ...
pub fn parse_lock_wait(text: &str) -> Result<Duration, String> {
    const HOW: &str = "write it like 0, 30s, 1m or 10m";
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let d: jiff::SignedDuration = text.parse().map_err(|_| HOW.to_owned())?;
    Duration::try_from(d).map_err(|_| format!("it must not be negative; {HOW}"))
}

/// Who holds the store in `dir`, in words: `pid 1234 (ffsession watch ...)`.
fn holder(dir: &Path) -> String {
    match lock_holder(dir) {
        Some(pid) => {
            // Linux only: the holder's command, short and on one line.
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                .ok()
                .map(|b| {
                    let mut words = b.split(|&c| c == 0).filter(|w| !w.is_empty());
                    let program = words.next().map(|w| {
                        let w = String::from_utf8_lossy(w).into_owned();
                        w.rsplit('/').next().unwrap_or_default().to_owned()
                    });
                    let text = program
                        .into_iter()
                        .chain(
                            words
                                .take(2)
                                .map(|w| String::from_utf8_lossy(w).into_owned()),
                        )
                        .collect::<Vec<_>>()
                        .join(" ");
                    let text: String = text
                        .chars()
                        .map(|c| if c.is_control() { ' ' } else { c })
                        .collect();
                    match text.char_indices().nth(40) {
                        Some((i, _)) => format!("{}...", &text[..i]),
                        None => text,
                    }
                })
                .filter(|s| !s.is_empty());
            match cmdline {
                Some(c) => format!("pid {pid} ({c})"),
                None => format!("pid {pid}"),
            }
        }
        None => "another ffsession".to_owned(),
    }
}

/// `open()` (which takes the store's lock), retried while another process
/// holds the lock, for up to `wait`; says once on stderr that it waits.
pub fn with_lock_wait<T>(
    dir: &Path,
    wait: Duration,
    mut open: impl FnMut() -> Result<T, StoreError>,
) -> Result<T> {
    let start = Instant::now();
    let mut said = false;
    loop {
        match open() {
            Err(StoreError::Locked { .. }) if wait.is_zero() => {
                return Err(UserError::with_hint(
                    format!("{}: the store is locked by {}", dir.display(), holder(dir)),
                    "pass --lock-wait 1m to wait for it, or try again when it has finished",
                ));
            }
            Err(StoreError::Locked { .. }) => {
                if start.elapsed() >= wait {
                    return Err(UserError::with_hint(
                        format!(
                            "{}: the store is still locked by {} after waiting {}",
                            dir.display(),
                            holder(dir),
                            fmt::duration(wait)
                        ),
                        "try again when it has finished, or pass a longer --lock-wait (like 10m)",
                    ));
                }
                if !said {
                    said = true;
                    crate::ui::note(format_args!(
                        "waiting for the store lock held by {} (up to {}, --lock-wait)",
                        holder(dir),
                        fmt::duration(wait)
                    ));
                }
                std::thread::sleep(POLL.min(wait.saturating_sub(start.elapsed())));
            }
            other => return Ok(other?),
        }
    }
}
