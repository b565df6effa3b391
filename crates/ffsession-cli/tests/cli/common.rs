//! A sealed environment for running `ffsession`: cleared environment, a temp
//! HOME and Firefox root, UTC clock zone.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use ffsession_gen::{generate, mozlz4, Spec};

pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> Self {
        TestEnv {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    pub fn firefox_root(&self) -> PathBuf {
        self.home().join(".mozilla/firefox")
    }

    /// `ffsession` with a cleared environment.
    pub fn cmd(&self) -> Command {
        Command::from_std(self.std_cmd())
    }

    /// The same as a `std::process::Command`, for tests that stream output.
    pub fn std_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ffsession"));
        fs::create_dir_all(self.home()).unwrap();
        cmd.env_clear()
            .env("HOME", self.home())
            .env("TZ", "UTC")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(self.path());
        cmd
    }

    /// A profile folder (`profile/` in the test directory) holding `files`
    /// (paths relative to the profile).
    pub fn profile_with(&self, files: &[(&str, &[u8])]) -> PathBuf {
        let profile = self.path().join("profile");
        for (name, bytes) in files {
            let path = profile.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, bytes).unwrap();
        }
        fs::create_dir_all(&profile).unwrap();
        profile
    }

    /// `ffsession --profile PROFILE --store <test dir>/store`.
    pub fn store_cmd(&self, profile: &Path) -> Command {
        let mut c = self.cmd();
        c.arg("--profile")
            .arg(profile)
            .arg("--store")
            .arg(self.path().join("store"));
        c
    }

    /// Write a file under the test directory.
    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        path
    }

    /// Names of the files in the test directory (not recursive).
    pub fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Run `cmd`, check it succeeded (showing its stderr if not) and parse its stdout as JSON.
pub fn ok_json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout_json(&out)
}

/// A generated session: its spec, JSON and mozlz4 bytes.
pub struct Generated {
    pub spec: Spec,
    pub json: String,
    pub packed: Vec<u8>,
}

pub fn session(spec: Spec) -> Generated {
    let json = generate(&spec);
    let packed = mozlz4(json.as_bytes());
    Generated { spec, json, packed }
}

pub fn stdout_json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
