//! `ffsession-gen`: write generated sessions and the bad-file corpus to disk.
//!
//! ```text
//! ffsession-gen session OUT [--mb N | --tabs N] [--windows N] [--favicon-bytes N] [--json]
//! ffsession-gen corpus DIR
//! ffsession-gen zen DIR
//! ```

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use ffsession_gen::{bad_corpus, generate, mozlz4, zen_files, Spec, ZenSpec};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: ffsession-gen session OUT [--mb N | --tabs N] [--windows N] [--favicon-bytes N] [--json] | ffsession-gen corpus DIR | ffsession-gen zen DIR";
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{usage}");
        return Ok(());
    }
    // An output path is never a flag (`ffsession-gen session --help` once
    // wrote a session file named `--help`).
    let path_arg = |i: usize| -> Result<PathBuf> {
        match args.get(i) {
            Some(a) if !a.starts_with('-') => Ok(PathBuf::from(a)),
            _ => bail!("{usage}"),
        }
    };
    match args.first().map(String::as_str) {
        Some("session") => {
            let out = path_arg(1)?;
            let mut spec = Spec::default();
            let mut json_only = false;
            let mut rest = args[2..].iter();
            while let Some(flag) = rest.next() {
                match flag.as_str() {
                    "--mb" => {
                        spec =
                            Spec::sized(rest.next().context(usage)?.parse::<usize>()? * 1_000_000)
                    }
                    "--tabs" => spec.tabs = rest.next().context(usage)?.parse()?,
                    "--windows" => spec.windows = rest.next().context(usage)?.parse()?,
                    "--favicon-bytes" => {
                        spec.favicon_bytes = rest.next().context(usage)?.parse()?
                    }
                    "--json" => json_only = true,
                    other => bail!("unknown flag {other}; {usage}"),
                }
            }
            let json = generate(&spec);
            let bytes = if json_only {
                json.into_bytes()
            } else {
                mozlz4(json.as_bytes())
            };
            std::fs::write(&out, bytes).with_context(|| out.display().to_string())?;
        }
        Some("corpus") => {
            let dir = path_arg(1)?;
            std::fs::create_dir_all(&dir)?;
            for (name, bytes) in bad_corpus() {
                std::fs::write(dir.join(&name), bytes).with_context(|| name.clone())?;
            }
        }
        Some("zen") => {
            // The two files of one moment of a Zen profile, JSON and mozlz4.
            let dir = path_arg(1)?;
            std::fs::create_dir_all(&dir)?;
            let files = zen_files(&ZenSpec::default());
            for (name, json) in [
                ("zen-sessions", &files.zen_sessions),
                ("zen-sessionstore", &files.sessionstore),
            ] {
                let json_path = dir.join(format!("{name}.json"));
                std::fs::write(&json_path, json)
                    .with_context(|| json_path.display().to_string())?;
                let packed = dir.join(format!("{name}.jsonlz4"));
                std::fs::write(&packed, mozlz4(json.as_bytes()))
                    .with_context(|| packed.display().to_string())?;
            }
        }
        _ => bail!("{usage}"),
    }
    Ok(())
}
