//! The page of `ffsession ui` as the tests use it: a store of two
//! snapshots, the server started on it, and HTTP/1.1 requests to it as a
//! browser makes them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{ok_json, with_tabs, TestEnv};

pub(crate) const EVIL_TITLE: &str = "<script>alert('pwned')</script>";
const EVIL_URL: &str = "javascript:alert(document.cookie)";

/// A profile whose two sessions are backed up (snapshots 1 and 2).
pub(crate) fn two_snapshots() -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    let profile = env.empty_profile();
    for tabs in [
        &[
            ("https://doc.rust-lang.org/book/", "The Rust book"),
            (EVIL_URL, EVIL_TITLE),
        ][..],
        &[
            ("https://doc.rust-lang.org/book/", "The Rust book"),
            (EVIL_URL, EVIL_TITLE),
            ("https://added.example/", "Added later"),
        ][..],
    ] {
        env.profile_with_recovery(&with_tabs(tabs));
        ok_json(env.store_cmd(&profile).args(["backup", "--json"]));
    }
    (env, profile)
}

pub(crate) struct Page {
    pub(crate) env: TestEnv,
    pub(crate) profile: PathBuf,
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) secret: String,
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The digest of the plan a plan page's *Do it* carries (none on a page
/// with no *Do it*, or from a server that carries none).
pub(crate) fn plan_digest(body: &str) -> Option<String> {
    let field = "name=\"plan\" value=\"";
    let at = body.find(field)? + field.len();
    Some(body[at..at + 16].to_owned())
}

pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: String,
}

impl Page {
    /// Two snapshots backed up, then `ffsession ui --no-open --port 0`.
    pub(crate) fn start(extra: &[&str]) -> Page {
        let (env, profile) = two_snapshots();
        Page::serve(env, profile, extra)
    }

    /// `ffsession ui --no-open --port 0` on the store of `profile`.
    pub(crate) fn serve(env: TestEnv, profile: PathBuf, extra: &[&str]) -> Page {
        let mut cmd = Page::command(&env, &profile);
        cmd.args(["ui", "--no-open", "--port", "0"]).args(extra);
        Page::spawn(env, profile, cmd)
    }

    /// `ffsession --profile PROFILE --store STORE`, in the test's folder,
    /// whose private folder goes in the test's folder too (it is checked
    /// there, and a killed server cannot remove it).
    pub(crate) fn command(env: &TestEnv, profile: &Path) -> Command {
        let mut cmd = env.std_store_cmd_at(profile, &env.store_dir());
        Page::temp_here(env, &mut cmd);
        cmd
    }

    /// The temporary folder of `cmd`: the test's folder.
    pub(crate) fn temp_here(env: &TestEnv, cmd: &mut Command) {
        cmd.env("TMPDIR", env.path())
            .env("TEMP", env.path())
            .env("TMP", env.path());
    }

    /// Start `cmd` (a `ffsession ui`), its stderr in [`Page::stderr`], and
    /// read the address it prints.
    pub(crate) fn spawn(env: TestEnv, profile: PathBuf, mut cmd: Command) -> Page {
        let err = std::fs::File::create(env.path().join("ui.stderr")).unwrap();
        let mut child = cmd.stdout(Stdio::piped()).stderr(err).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // http://127.0.0.1:PORT/SECRET/
        let rest = line
            .trim()
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| {
                let err = std::fs::read_to_string(env.path().join("ui.stderr"));
                panic!("no address printed: {line:?}; stderr: {err:?}")
            });
        let (port, secret) = rest.split_once('/').unwrap();
        Page {
            env,
            profile,
            child,
            port: port.parse().unwrap(),
            secret: secret.trim_end_matches('/').to_owned(),
        }
    }

    /// What the server wrote on stderr so far.
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(self.env.path().join("ui.stderr")).unwrap_or_default()
    }

    /// The page's private folders in the test's folder.
    pub(crate) fn private_folders(&self) -> Vec<PathBuf> {
        private_folders_in(self.env.path())
    }

    /// The plan page of `query` (`action=...`), then its *Do it*: the form
    /// the page shows, posted with the digest of that plan.
    pub(crate) fn confirm(&self, query: &str) -> Answer {
        let plan = self.get(&format!("/plan?{query}"));
        assert_eq!(plan.status, 200, "{}", plan.body);
        self.do_it(query, &plan)
    }

    /// *Do it* on `plan`, the plan page of `action=add`, which must merge
    /// into the profile's current session; it must be done.
    pub(crate) fn add_as_planned(&self, plan: &Answer) {
        assert!(
            plan.body.contains(" merge profile:current "),
            "{}",
            plan.body
        );
        assert!(plan.body.contains("Do it"), "{}", plan.body);
        let done = self.do_it("action=add", plan);
        assert!(done.body.contains("Done."), "{}", done.body);
    }

    /// *Do it* on the plan page `plan` of `query`: the form it holds.
    pub(crate) fn do_it(&self, query: &str, plan: &Answer) -> Answer {
        let digest = plan_digest(&plan.body)
            .map(|d| format!("&plan={d}"))
            .unwrap_or_default();
        let token = self.csrf();
        self.post("/do", &format!("{query}{digest}&csrf={token}"))
    }

    pub(crate) fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// One HTTP/1.1 request, answered whole.
    pub(crate) fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        self.raw_at("127.0.0.1", method, path, headers, body)
    }

    /// [`Page::raw`] to the server's port at `address`.
    pub(crate) fn raw_at(
        &self,
        address: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let mut s = TcpStream::connect((address, self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if method == "POST" {
            req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        req.push_str(body);
        s.write_all(req.as_bytes()).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Answer {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_owned(),
        }
    }

    pub(crate) fn get(&self, path: &str) -> Answer {
        let path = format!("/{}{path}", self.secret);
        self.raw("GET", &path, &[("Host", &self.host())], "")
    }

    pub(crate) fn post(&self, path: &str, body: &str) -> Answer {
        let path = format!("/{}{path}", self.secret);
        let (host, origin) = (self.host(), self.origin());
        self.raw("POST", &path, &[("Host", &host), ("Origin", &origin)], body)
    }

    /// Post the picks `picks` (a form body: `pick=…&pick=…`) with the
    /// page's token; the page must answer them with a redirect (303).
    pub(crate) fn pick(&self, picks: &str) {
        let token = self.csrf();
        let answer = self.post("/picks", &format!("{picks}&csrf={token}"));
        assert_eq!(answer.status, 303, "{picks}: {}", answer.body);
    }

    /// [`Page::pick`] `picks`, then the plan page of `action` for them.
    pub(crate) fn plan_for(&self, picks: &str, action: &str) -> Answer {
        self.pick(picks);
        self.get(&format!("/plan?action={action}"))
    }

    /// The CSRF token the page's forms carry.
    pub(crate) fn csrf(&self) -> String {
        let page = self.get("/snapshot/1").body;
        let at = page
            .find("name=\"csrf\" value=\"")
            .expect("a form with the token")
            + 19;
        page[at..at + 32].to_owned()
    }
}

/// The private folders of `ui` pages (`ffsession-ui-*`) in `dir`, sorted.
pub(crate) fn private_folders_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("ffsession-ui-"))
        })
        .collect();
    found.sort();
    found
}

/// A stand-in browser, `fake-firefox` in `dir`, that adds its arguments
/// as a line to `log`; returns its path.
#[cfg(unix)]
pub(crate) fn fake_browser(dir: &Path, log: &Path) -> PathBuf {
    let script = format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display());
    crate::common::fake_program(dir, "fake-firefox", &script).join("fake-firefox")
}
