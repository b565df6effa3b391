//! Rescuing the tabs of a damaged session file.
//!
//! Firefox drops a session file whole when it cannot read it, although a
//! crash mid-write, a full disk or a flipped bit leaves everything before the
//! damage intact: an LZ4 block decodes in order (`lz4.rs`), and JSON up to the
//! damage is still JSON (`salvage.rs`). [`rescue`] decodes the file as far as it
//! is valid, cuts it where UTF-8 or JSON first goes wrong, and keeps every
//! complete window, tab, closed tab and closed window before that point, byte
//! for byte. A tab cut by the damage is dropped, never guessed.
//!
//! An undamaged file is rescued as itself: the reader's normal path reads it
//! first, so that case costs what [`crate::SessionData::parse`] costs.

mod cut;
mod damage;
mod defer;
mod locate;
mod lz4;
mod repair;
mod salvage;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::buffer::Buffer;
use crate::error::Error;
use crate::format::{self, Format, MOZLZ4_MAGIC};
use crate::session::Session;
use crate::Summary;
use damage::{decode, json_check, json_text, JsonCheck};

/// Where the damage in a file starts, and what it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Damage {
    /// Byte offset in the file where the damage starts (for mozlz4, the start
    /// of the LZ4 sequence that produced the first bad byte).
    pub file_offset: u64,
    /// That offset as a percentage of the file's size.
    pub file_percent: f64,
    /// Byte offset in the session JSON where the readable part ends.
    pub json_offset: u64,
    /// The size of the JSON the file claims (mozlz4 size header), if any.
    pub json_expected: Option<u64>,
    /// `json_offset` as a percentage of `json_expected` (of the file's size
    /// for plain JSON): how much of the session was readable.
    pub json_percent: f64,
    /// How much of the JSON was trusted: up to `json_offset`, or, for damage
    /// other than a clean cut, a margin less (bytes just before corruption
    /// shows may already be wrong).
    pub kept_json_bytes: u64,
    /// What is wrong there, in words.
    pub reason: String,
    /// Whether the data simply ends there (a truncated file), as opposed to
    /// holding damaged bytes.
    #[serde(skip)]
    truncation: bool,
}

/// What [`rescue`] recovered from a file.
#[derive(Debug)]
pub struct Rescued {
    /// The file that was rescued.
    pub path: PathBuf,
    /// Its container format.
    pub format: Format,
    /// Its size in bytes.
    pub file_size: u64,
    /// `None` if the file is whole (it is then recovered as it is).
    pub damage: Option<Damage>,
    /// The recovered session's counts.
    pub summary: Summary,
    /// What was cut by the damage and dropped (`tab 57 of window 2`, ...).
    pub dropped: Vec<String>,
    body: Body,
}

/// What was recovered, as bytes.
#[derive(Debug)]
enum Body {
    /// A whole mozlz4 file: itself, not compressed again.
    File(Buffer),
    /// Session JSON.
    Json(Vec<u8>),
}

impl Rescued {
    /// Whether anything worth writing was recovered: a tab, open or closed.
    pub fn recovered_anything(&self) -> bool {
        let s = &self.summary;
        s.tabs + s.closed_tabs + s.closed_window_tabs > 0
    }

    /// The recovered session JSON.
    pub fn json(&self) -> Cow<'_, [u8]> {
        match &self.body {
            Body::Json(json) => Cow::Borrowed(json),
            // Read whole once already, so it decompresses.
            Body::File(file) => Cow::Owned(format::decompress(file).unwrap_or_default()),
        }
    }

    /// The recovered session as a mozlz4 file Firefox loads (a whole mozlz4
    /// file as it is).
    pub fn to_mozlz4(&self) -> Result<Cow<'_, [u8]>, Error> {
        match &self.body {
            Body::File(file) => Ok(Cow::Borrowed(file)),
            Body::Json(json) => {
                format::compress(json)
                    .map(Cow::Owned)
                    .map_err(|source| Error::Format {
                        path: self.path.clone(),
                        source,
                    })
            }
        }
    }
}

/// Why nothing could be rescued from a file.
#[derive(Debug, thiserror::Error)]
pub enum RescueError {
    /// Reading the file failed.
    #[error(transparent)]
    Io(#[from] crate::PathError),
    /// The recovered session could not be made into a file.
    #[error(transparent)]
    Output(crate::Error),
    /// The file is neither mozlz4 nor JSON, or holds no session object before
    /// the damage.
    #[error("{}: nothing to rescue: {why}", path.display())]
    Nothing {
        /// The file.
        path: PathBuf,
        /// Why, in words.
        why: String,
    },
    /// The file is no session file at all, damaged or whole: empty, neither
    /// mozlz4 nor a JSON object, or whole JSON that is not a session.
    #[error("{}: not a session file: {why}", path.display())]
    NotASession {
        /// The file.
        path: PathBuf,
        /// Why, in words.
        why: String,
    },
}

impl RescueError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<crate::Hint> {
        use crate::Hint;
        match self {
            RescueError::Io(e) if e.is_folder_opened_as_file() => Some(Hint::FolderNotFile),
            RescueError::Io(_) => Some(Hint::Advice("check the path and its permissions")),
            RescueError::Output(e) => e.hint(),
            RescueError::Nothing { .. } => Some(Hint::NothingRescued),
            RescueError::NotASession { .. } => Some(Hint::RescueReadsSessions),
        }
    }
}

/// Rescue the session file at `path`.
pub fn rescue_file(path: impl AsRef<Path>) -> Result<Rescued, RescueError> {
    use crate::error::IoResultExt;
    let path = path.as_ref();
    // Mapped, not read: Firefox replaces session files by rename, so the
    // mapping keeps the version that was opened (`buffer.rs`).
    let file = Buffer::map_file(path).with_path(path)?;
    rescue_owned(path.to_path_buf(), file)
}

/// Rescue a session file's bytes (`path` names it in the report).
pub fn rescue(path: impl Into<PathBuf>, bytes: &[u8]) -> Result<Rescued, RescueError> {
    rescue_owned(path.into(), Buffer::from(bytes.to_vec()))
}

/// Rescue the file at `input` and write what was recovered to `output`
/// (atomically, readable only by the user), unless nothing was: then nothing
/// is written and the result says so ([`Rescued::recovered_anything`]).
///
/// A whole mozlz4 file is recovered as it is, so its copy is written and
/// fsynced while it is being read and verified, and put in place only if it
/// verifies; otherwise the copy is dropped and the salvage written instead.
pub fn rescue_file_into(input: &Path, output: &Path) -> Result<Rescued, RescueError> {
    use crate::error::IoResultExt;
    let file = Buffer::map_file(input).with_path(input)?;
    let (whole, staged) = std::thread::scope(|scope| {
        let copy = file
            .starts_with(MOZLZ4_MAGIC)
            .then(|| scope.spawn(|| crate::fs_util::stage(output, |w| w.write_all(&file))));
        let whole = whole(input, &file);
        let staged = copy.map(|c| c.join().expect("the copying thread panicked"));
        (whole, staged)
    });
    if let (Some(w), Some(staged)) = (&whole, staged) {
        if w.repaired.is_none() && w.summary_has_tabs() {
            staged?.commit()?;
            return Ok(w
                .clone()
                .into_rescued(input.to_path_buf(), Body::File(file)));
        }
    }
    let rescued = rescue_owned(input.to_path_buf(), file)?;
    if rescued.recovered_anything() {
        let packed = rescued.to_mozlz4().map_err(RescueError::Output)?;
        crate::fs_util::write_atomic(output, |w| w.write_all(&packed))?;
    }
    Ok(rescued)
}

/// A file the reader reads as it is: what it holds.
#[derive(Debug, Clone)]
struct Whole {
    summary: Summary,
    format: Format,
    file_size: u64,
    /// The reader's repaired copy (`legacy.rs`), if it needed one.
    repaired: Option<Vec<u8>>,
    /// The JSON of a plain-JSON file.
    json: Option<Vec<u8>>,
}

impl Whole {
    fn summary_has_tabs(&self) -> bool {
        let s = &self.summary;
        s.tabs + s.closed_tabs + s.closed_window_tabs > 0
    }

    fn into_rescued(self, path: PathBuf, file: Body) -> Rescued {
        let body = match (self.repaired, self.json) {
            (Some(json), _) | (None, Some(json)) => Body::Json(json),
            (None, None) => file,
        };
        Rescued {
            path,
            format: self.format,
            file_size: self.file_size,
            damage: None,
            summary: self.summary,
            dropped: Vec::new(),
            body,
        }
    }
}

/// Read `file` the normal way; `None` if it does not read.
fn whole(path: &Path, file: &[u8]) -> Option<Whole> {
    let data = crate::SessionData::from_slice(path, file).ok()?;
    let summary = data.parse().ok()?.summary();
    Some(Whole {
        summary,
        format: data.format(),
        file_size: data.file_size(),
        repaired: data.repaired_json().map(<[u8]>::to_vec),
        json: (data.format() == Format::Json).then(|| data.json().to_vec()),
    })
}

fn rescue_owned(path: PathBuf, file: Buffer) -> Result<Rescued, RescueError> {
    let nothing = |why: String| RescueError::Nothing {
        path: path.clone(),
        why,
    };
    // A whole file reads the normal way, and is recovered as it is.
    if let Some(w) = whole(&path, &file) {
        return Ok(w.into_rescued(path, Body::File(file)));
    }
    let not_a_session = |why: String| RescueError::NotASession {
        path: path.clone(),
        why,
    };
    let bytes = &file[..];
    let file_size = bytes.len() as u64;
    if bytes.is_empty() {
        return Err(not_a_session("the file is empty (0 bytes)".into()));
    }
    let decoded = decode(bytes).map_err(|e| nothing(e.to_string()))?;
    let mut damage = decoded.damage.clone();
    let (text_start, text) = json_text(&decoded.json).ok_or_else(|| match decoded.format {
        Format::Json => not_a_session("it is neither mozlz4 nor a JSON object".into()),
        Format::Mozlz4 => nothing("no JSON object at the start of the session data".into()),
    })?;
    // Where UTF-8, then JSON, first go wrong.
    let mut valid = match std::str::from_utf8(text) {
        Ok(_) => text.len(),
        Err(e) => e.valid_up_to(),
    };
    // A character cut by the end of the data is a truncation, not damage.
    let mut why = match std::str::from_utf8(&text[valid..]) {
        Err(e) if e.error_len().is_none() && e.valid_up_to() == 0 => None,
        _ if valid == text.len() => None,
        _ => Some("invalid UTF-8".to_string()),
    };
    // Whether the first wrong byte is wrong on its own, whatever came before
    // it: invalid UTF-8, or a control character (Firefox's JSON has none).
    let mut byte_level = why.is_some();
    let check = json_check(&text[..valid]);
    if check == JsonCheck::Complete && why.is_none() && damage.is_none() {
        // Whole, valid JSON that the normal read refused: no session.
        let reason = Session::from_json(text).err().map_or_else(
            || "it does not read as a session".to_owned(),
            |e| e.to_string(),
        );
        return Err(not_a_session(format!("whole JSON, but {reason}")));
    }
    let ends_early = check == JsonCheck::EndsEarly;
    if let JsonCheck::Invalid(at, reason) = check {
        // serde_json reports the position just past the byte it stopped on;
        // one byte less keeps that byte out of anything kept.
        valid = at.saturating_sub(1).min(valid);
        why = Some(reason);
        byte_level = text[valid] < 0x20 && !matches!(text[valid], b'\t' | b'\n' | b'\r');
    }
    // All the data the size header promises, valid as far as it goes, and
    // yet the JSON ends early: not a cut but damage (a copy from the wrong
    // place that opened a string, say), shown at the end.
    let ends_early_whole =
        why.is_none() && ends_early && decoded.format == Format::Mozlz4 && damage.is_none();
    // Damage that is not a clean cut (a flipped bit, say) may have spoiled
    // some bytes before the point where it shows: keep a margin.
    let corrupt =
        why.is_some() || ends_early_whole || decoded.damage.as_ref().is_some_and(|d| !d.truncation);
    let detected = valid;
    if corrupt {
        valid = damage::trusted_len(&decoded, text_start, valid, byte_level);
    }
    let salvaged = salvage::salvage(&text[..valid])
        .ok_or_else(|| nothing("the session data does not start with a JSON object".into()))?;
    let json_offset = (text_start + detected) as u64;
    if let Some(why) = why.filter(|_| damage.as_ref().is_none_or(|d| d.json_offset > json_offset)) {
        damage = Some(decoded.damage_at(json_offset, why, file_size));
    }
    if damage.is_none() && !salvaged.whole {
        damage = Some(decoded.damage_at(json_offset, "the JSON ends early".into(), file_size));
    }
    if let Some(d) = damage.as_mut() {
        d.kept_json_bytes = (text_start + valid) as u64;
    }
    let session = Session::from_json(&salvaged.json)
        .map_err(|e| nothing(format!("the salvaged part does not read as a session: {e}")))?;
    let summary = session.summary();
    drop(session);
    Ok(Rescued {
        path,
        format: decoded.format,
        file_size,
        damage,
        summary,
        dropped: salvaged.dropped,
        body: Body::Json(salvaged.json),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::MOZLZ4_HEADER_LEN;

    fn session(tabs: usize) -> String {
        ffsession_gen::generate(&ffsession_gen::Spec {
            tabs,
            windows: 2,
            seed: 7,
            ..ffsession_gen::Spec::default()
        })
    }

    fn urls(json: &[u8]) -> Vec<String> {
        let s = Session::from_json(json).unwrap();
        s.windows
            .iter()
            .flat_map(|w| w.tabs.iter().filter_map(|t| t.url().map(str::to_string)))
            .collect()
    }

    #[test]
    fn a_whole_file_is_recovered_as_it_is() {
        let json = session(30);
        let packed = format::compress(json.as_bytes()).unwrap();
        let r = rescue("x.jsonlz4", &packed).unwrap();
        assert_eq!(r.damage, None);
        assert_eq!(&r.json()[..], json.as_bytes());
        assert_eq!(r.summary.tabs, 30);
    }

    #[test]
    fn truncated_mozlz4_keeps_every_tab_before_the_cut() {
        let json = session(200);
        let all = urls(json.as_bytes());
        let packed = format::compress(json.as_bytes()).unwrap();
        for pct in [20, 50, 90, 99] {
            let cut = packed.len() * pct / 100;
            let r = rescue("x.jsonlz4", &packed[..cut]).unwrap();
            let d = r.damage.as_ref().expect("damage");
            assert!(d.file_offset <= cut as u64, "{d:?}");
            assert!(d.json_offset < json.len() as u64, "{d:?}");
            let got = urls(&r.json());
            // Every recovered URL is an original one, in the original order.
            assert_eq!(got[..], all[..got.len()], "{pct}%");
            // The tabs wholly before the readable end are all there.
            let readable = d.json_offset as usize;
            let before = tabs_ending_before(&json, readable);
            assert!(got.len() >= before, "{pct}%: {} < {before}", got.len());
            assert!(!r.dropped.is_empty());
        }
    }

    /// How many tabs of `json` end before byte `at` (counted with the serial
    /// parser on each window's tab array, independent of the salvage).
    fn tabs_ending_before(json: &str, at: usize) -> usize {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let mut n = 0;
        let mut from = 0;
        for w in v["windows"].as_array().unwrap() {
            for t in w["tabs"].as_array().unwrap() {
                let text = serde_json::to_string(t).unwrap();
                let Some(i) = json[from..].find(&text) else {
                    continue;
                };
                let end = from + i + text.len();
                if end < at {
                    n += 1;
                }
                from = end;
            }
        }
        n
    }

    #[test]
    fn truncated_plain_json_and_parenthesized_json_are_rescued() {
        let json = session(50);
        let cut = &json.as_bytes()[..json.len() / 2];
        let r = rescue("x.js", cut).unwrap();
        assert_eq!(r.format, Format::Json);
        assert!(r.summary.tabs > 5);
        let wrapped = format!("({}", &json[..json.len() * 3 / 4]);
        let r2 = rescue("x.js", wrapped.as_bytes()).unwrap();
        assert!(r2.summary.tabs > r.summary.tabs);
        let d = r2.damage.unwrap();
        assert_eq!(d.json_offset as usize, wrapped.len());
    }

    #[test]
    fn a_flipped_byte_never_adds_a_url() {
        let json = session(120);
        let all = urls(json.as_bytes());
        let packed = format::compress(json.as_bytes()).unwrap();
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..200 {
            let at = rng.usize(MOZLZ4_HEADER_LEN..packed.len());
            let mut bad = packed.clone();
            bad[at] ^= 1 << rng.u32(0..8);
            if let Ok(r) = rescue("x.jsonlz4", &bad) {
                if r.damage.is_some() {
                    for u in urls(&r.json()) {
                        assert!(
                            all.contains(&u) || r.dropped.is_empty(),
                            "flip at {at}: {u}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn rescue_into_writes_a_whole_file_as_it_is_a_salvage_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let json = session(40);
        let packed = format::compress(json.as_bytes()).unwrap();
        let cases: [(&str, Vec<u8>); 3] = [
            ("whole", packed.clone()),
            ("cut", packed[..packed.len() * 2 / 3].to_vec()),
            ("nothing", packed[..40].to_vec()),
        ];
        for (name, bytes) in cases {
            let input = dir.path().join(format!("{name}.jsonlz4"));
            std::fs::write(&input, &bytes).unwrap();
            let out = dir.path().join(format!("{name}-out.jsonlz4"));
            let r = rescue_file_into(&input, &out);
            match name {
                "whole" => {
                    assert_eq!(std::fs::read(&out).unwrap(), bytes);
                    assert!(r.unwrap().damage.is_none());
                }
                "cut" => {
                    let r = r.unwrap();
                    let written = format::decompress(&std::fs::read(&out).unwrap()).unwrap();
                    assert_eq!(written, &r.json()[..]);
                    assert!(r.summary.tabs > 5 && r.damage.is_some());
                }
                _ => {
                    assert!(r.map_or(true, |r| !r.recovered_anything()));
                    assert!(!out.exists());
                }
            }
        }
        // No temporary file is left behind, whatever happened.
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!crate::fs_util::is_temp_file_name(&name), "{name}");
        }
    }

    #[test]
    fn garbage_is_nothing_to_rescue() {
        for bad in [
            &b""[..],
            b"mozLz40\0",
            b"mozLz40\0\x10\0\0\0",
            b"[1,2]",
            b"\x00\x01",
            b"mozLz41\0abcd",
        ] {
            assert!(rescue("x", bad).is_err(), "{bad:?}");
        }
    }
}
