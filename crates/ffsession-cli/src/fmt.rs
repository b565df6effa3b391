//! Human-readable formatting of sizes and timestamps for text output, and
//! names made safe to print.

use std::borrow::Cow;
use std::path::Path;

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

/// The system's time zone, looked up once.
///
/// jiff's [`TimeZone::system`] finds the zone's name from the
/// `/etc/localtime` link and then looks that name up in its zoneinfo
/// database, whose first lookup lists every file under
/// `/usr/share/zoneinfo`: about 0.4 ms, a sixth of `ffsession info` on a
/// small session. Where `TZ` is unset and `/etc/localtime` links into a
/// zoneinfo folder, the file it links to is the zone, under that name.
/// Anything else is jiff's to decide.
pub fn local_zone() -> TimeZone {
    static ZONE: std::sync::OnceLock<TimeZone> = std::sync::OnceLock::new();
    ZONE.get_or_init(|| linked_zone().unwrap_or_else(TimeZone::system))
        .clone()
}

#[cfg(unix)]
fn linked_zone() -> Option<TimeZone> {
    if std::env::var_os("TZ").is_some() {
        return None;
    }
    const LOCALTIME: &str = "/etc/localtime";
    let target = std::fs::read_link(LOCALTIME).ok()?;
    let target = target.to_str()?;
    let name = &target[target.rfind("zoneinfo/")? + "zoneinfo/".len()..];
    TimeZone::tzif(name, &std::fs::read(LOCALTIME).ok()?).ok()
}

#[cfg(not(unix))]
fn linked_zone() -> Option<TimeZone> {
    None
}

/// Milliseconds since the epoch as a local date and time, e.g.
/// `2026-11-22 10:15:03 CET`.
pub fn local_time(ms: u64) -> Option<String> {
    let ts = Timestamp::from_millisecond(i64::try_from(ms).ok()?).ok()?;
    Some(
        ts.to_zoned(local_zone())
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

/// One snapshot on one line, as `list`, `backup` and `prune` print it: id,
/// when it was backed up, the session's own last update (Firefox's clock,
/// which orders sessions), file, bytes added, counts or damage.
pub fn snapshot_line(s: &ffsession::store::SnapshotInfo) -> String {
    let status = snapshot_status(s);
    format!(
        "#{:<5} {}  session {}  {:<40} {:>10}  {status}",
        s.id,
        local_time_or_unknown(Some(s.taken_at_ms)),
        local_time_or_unknown(s.last_update_ms),
        escape(&s.file_name),
        format!("+{}", size(s.stored_size)),
    )
}

/// One snapshot on a line that fits in 100 columns, as `list` prints it:
/// id, the session's own last update, the file's name without its folder
/// (Firefox's names tell the two folders apart; Zen's copies in
/// `zen-sessions-backup/` keep theirs, whose `recovery.baklz4` is also a name
/// of Firefox's), counts or damage. `list --long` prints [`snapshot_line`]
/// instead.
pub fn snapshot_line_short(s: &ffsession::store::SnapshotInfo) -> String {
    let name = match s.file_name.rsplit_once('/') {
        Some((_, base)) if !s.kind.is_zen() => base,
        _ => &s.file_name,
    };
    format!(
        "#{:<5} session {:<23}  {:<30} {}",
        s.id,
        local_time_or_unknown(s.last_update_ms),
        escape(name),
        snapshot_status(s),
    )
}

/// Windows and tabs of a snapshot (spaces and tabs of one of Zen's files),
/// or what is wrong with it.
fn snapshot_status(s: &ffsession::store::SnapshotInfo) -> String {
    let (one, many) = match s.kind.is_zen() {
        true => ("space", "spaces"),
        false => ("window", "windows"),
    };
    match &s.status {
        ffsession::store::SnapshotStatus::Ok => match s.counts {
            Some(c) => format!(
                "{}, {}",
                count(c.windows as usize, one, many),
                count(c.tabs as usize, "tab", "tabs")
            ),
            None => "ok".to_owned(),
        },
        ffsession::store::SnapshotStatus::Corrupt { reason } => format!("CORRUPT: {reason}"),
    }
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

/// A file name, profile name or other text from outside, as text output
/// prints it: unchanged unless it holds a character that would act on the
/// terminal or hide what follows. Control characters (newline, escape, ...)
/// are written as Rust writes them (`\n`, `\t`, `\r`, `\u{1b}`), and so are
/// the bidirectional controls that reorder what is shown (Unicode's
/// Bidi_Control: the embeddings, overrides and isolates U+202A-U+202E and
/// U+2066-U+2069, the marks U+200E, U+200F and U+061C); a backslash is then
/// doubled, so the escaped form reads back unambiguously. JSON output is never escaped this
/// way: it prints names exactly.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// A path as text output prints it: as [`escape`], with each byte that is not
/// UTF-8 written as `\xNN` (where `Path::display` would print U+FFFD).
pub fn path(p: &Path) -> Cow<'_, str> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = p.as_os_str().as_bytes();
        if let Ok(text) = std::str::from_utf8(bytes) {
            return escape(text);
        }
        let mut out = String::with_capacity(bytes.len() + 8);
        for chunk in bytes.utf8_chunks() {
            for c in chunk.valid().chars() {
                push_escaped(&mut out, c);
            }
            for b in chunk.invalid() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
        Cow::Owned(out)
    }
    #[cfg(not(unix))]
    {
        match p.to_string_lossy() {
            Cow::Borrowed(text) => escape(text),
            Cow::Owned(text) => Cow::Owned(escape(&text).into_owned()),
        }
    }
}

/// True for a character [`escape`] writes escaped: a control character or
/// a bidirectional control.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}'
        )
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\\' => out.push_str("\\\\"),
        c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_zone_gives_the_times_jiff_gives() {
        let jiffs = TimeZone::system();
        for s in [0, 1_700_000_000, 1_720_000_000, 1_795_300_000] {
            let ts = Timestamp::from_second(s).unwrap();
            assert_eq!(local_zone().to_offset(ts), jiffs.to_offset(ts), "at {ts}");
        }
    }

    #[test]
    fn names_are_printed_as_they_are_unless_they_would_act_on_the_terminal() {
        assert!(matches!(escape("recovery.jsonlz4"), Cow::Borrowed(_)));
        assert_eq!(escape("Ünïcode profile"), "Ünïcode profile");
        assert_eq!(escape(r"C:\Users\me"), r"C:\Users\me");
        assert_eq!(escape("a\nb"), r"a\nb");
        assert_eq!(escape("\u{1b}[2J\u{7}x"), r"\u{1b}[2J\u{7}x");
        assert_eq!(escape("evil\u{202e}txt.exe"), r"evil\u{202e}txt.exe");
        assert_eq!(escape("a\u{200f}b\u{61c}"), r"a\u{200f}b\u{61c}");
        assert_eq!(escape("a\\n\n"), r"a\\n\n");
        assert_eq!(escape("\u{85}"), r"\u{85}");
    }

    #[cfg(unix)]
    #[test]
    fn paths_show_bytes_that_are_not_utf8() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/p/re\xffc\n.js"));
        assert_eq!(path(p), r"/p/re\xffc\n.js");
        assert_eq!(path(Path::new("/p/ok")), "/p/ok");
    }
}
