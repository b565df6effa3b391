//! Human-readable formatting of sizes and timestamps for text output.

use jiff::tz::TimeZone;
use jiff::Timestamp;

/// `1536` -> `1.5 KiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Milliseconds since the epoch as a local date and time, e.g.
/// `2026-11-22 10:15:03 CET`.
pub fn local_time(ms: u64) -> Option<String> {
    let ts = Timestamp::from_millisecond(i64::try_from(ms).ok()?).ok()?;
    Some(
        ts.to_zoned(TimeZone::system())
            .strftime("%Y-%m-%d %H:%M:%S %Z")
            .to_string(),
    )
}

/// Like [`local_time`], or `unknown` when absent or out of range.
pub fn local_time_or_unknown(ms: Option<u64>) -> String {
    ms.and_then(local_time)
        .unwrap_or_else(|| "unknown".to_owned())
}

/// `1 window`, `2 windows`.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// One snapshot on one line, as `list`, `backup` and `prune` print it.
pub fn snapshot_line(s: &ffsession::store::SnapshotInfo) -> String {
    let status = match &s.status {
        ffsession::store::SnapshotStatus::Ok => match s.counts {
            Some(c) => format!(
                "{}, {}",
                count(c.windows as usize, "window", "windows"),
                count(c.tabs as usize, "tab", "tabs")
            ),
            None => "ok".to_owned(),
        },
        ffsession::store::SnapshotStatus::Corrupt { reason } => format!("CORRUPT: {reason}"),
    };
    format!(
        "#{:<5} {}  {:<40} {:>10}  {status}",
        s.id,
        local_time_or_unknown(Some(s.taken_at_ms)),
        s.file_name,
        format!("+{}", size(s.stored_size)),
    )
}

/// `300 s` -> `5m`, `90 s` -> `1m30s`.
pub fn duration(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}
