//! `rescue` on real Firefox files and generated sessions: truncated, and with
//! one byte flipped.

use std::collections::HashSet;
use std::path::Path;

use ffsession::format;
use ffsession::rescue::{rescue, Rescued};
use ffsession::Session;

/// Every open tab's URL, in order.
fn urls(json: &[u8]) -> Vec<String> {
    let s = Session::from_json(json).unwrap();
    s.windows
        .iter()
        .flat_map(|w| w.tabs.iter().map(|t| t.url().unwrap_or("").to_string()))
        .collect()
}

/// The end offsets of every open tab of `json`, found by serde_json (raw
/// values borrowed from the text), independently of the salvage code.
fn tab_ends(json: &[u8]) -> Vec<usize> {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct Doc<'a> {
        #[serde(borrow)]
        windows: Vec<Win<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Win<'a> {
        #[serde(borrow, default)]
        tabs: Vec<&'a RawValue>,
    }
    let text = std::str::from_utf8(json).unwrap();
    let doc: Doc = serde_json::from_str(text).unwrap();
    doc.windows
        .iter()
        .flat_map(|w| w.tabs.iter())
        .map(|t| t.get().as_ptr() as usize - text.as_ptr() as usize + t.get().len())
        .collect()
}

/// Sessions to damage: the real Firefox fixtures and a generated one.
fn sessions() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/firefox");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonlz4") {
            let json = format::decompress(&std::fs::read(&path).unwrap()).unwrap();
            out.push((path.display().to_string(), json));
        }
    }
    assert!(out.len() >= 2);
    let generated = ffsession_gen::generate(&ffsession_gen::Spec {
        tabs: 300,
        windows: 3,
        seed: 11,
        ..ffsession_gen::Spec::default()
    });
    out.push(("generated".into(), generated.into_bytes()));
    out
}

/// Compare a rescue with the original: the number of recovered URLs that
/// were not in the original, the tabs recovered, and the tabs that end before
/// the point where the damage showed.
fn compare(original: &[u8], r: &Rescued) -> (usize, usize, usize) {
    let all: HashSet<String> = urls(original).into_iter().collect();
    let got = urls(&r.json());
    let foreign = got.iter().filter(|u| !all.contains(*u)).count();
    let readable = r
        .damage
        .as_ref()
        .map_or(original.len(), |d| d.json_offset as usize);
    let before = tab_ends(original).iter().filter(|&&e| e < readable).count();
    (foreign, got.len(), before)
}

#[test]
fn truncated_files_give_back_the_tabs_before_the_cut() {
    for (name, json) in sessions() {
        let packed = format::compress(&json).unwrap();
        for pct in [50, 90] {
            for (kind, file) in [
                ("mozlz4", packed[..packed.len() * pct / 100].to_vec()),
                ("json", json[..json.len() * pct / 100].to_vec()),
            ] {
                let what = format!("{name} {kind} cut at {pct}%");
                let r = rescue(&what, &file).unwrap_or_else(|e| panic!("{what}: {e}"));
                let d = r.damage.as_ref().expect("damage reported");
                assert!(d.file_offset <= file.len() as u64, "{what}: {d:?}");
                let (foreign, got, before) = compare(&json, &r);
                assert_eq!(foreign, 0, "{what}: a URL that was not in the original");
                assert!(got * 100 >= before * 95, "{what}: {got} of {before}");
                assert!(r.recovered_anything() || before == 0, "{what}");
                // The rescued file reads back as what was reported.
                let back = format::decompress(&r.to_mozlz4().unwrap()).unwrap();
                assert_eq!(Session::from_json(&back).unwrap().summary(), r.summary);
            }
        }
    }
}

#[test]
fn one_flipped_byte_gives_back_the_tabs_before_it() {
    let mut rng = fastrand::Rng::with_seed(12);
    let (mut detected, mut unnoticed, mut changed_unnoticed, mut with_foreign) = (0, 0, 0, 0);
    let (mut got_total, mut before_total) = (0, 0);
    for (name, json) in sessions() {
        let packed = format::compress(&json).unwrap();
        for _ in 0..150 {
            let at = rng.usize(format::MOZLZ4_HEADER_LEN..packed.len());
            let mut bad = packed.clone();
            bad[at] ^= 1 << rng.u32(0..8);
            let what = format!("{name}: bit flipped at byte {at}");
            let Ok(r) = rescue(&what, &bad) else {
                continue;
            };
            if r.damage.is_none() {
                // Still a valid session: the flip changed a byte of a value.
                unnoticed += 1;
                if urls(&r.json()) != urls(&json) {
                    changed_unnoticed += 1;
                }
                continue;
            }
            detected += 1;
            let (foreign, got, before) = compare(&json, &r);
            with_foreign += usize::from(foreign > 0);
            got_total += got;
            before_total += before;
        }
    }
    eprintln!(
        "flips: {detected} detected ({with_foreign} with a URL not in the original), \
         {unnoticed} unnoticed ({changed_unnoticed} changed a URL); \
         {got_total} tabs recovered of {before_total} before the damage"
    );
    assert!(detected > 100);
    assert!(
        got_total * 100 >= before_total * 95,
        "{got_total} of {before_total}"
    );
    // A flip in a match length shifts all later output, and in repetitive
    // JSON the shifted copies can stay valid for kilobytes: the margin before
    // the point where damage shows catches most, not all (seen: 1 in 268).
    assert!(
        with_foreign * 100 <= detected * 2,
        "{with_foreign} of {detected}"
    );
}
