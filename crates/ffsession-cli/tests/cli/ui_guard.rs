//! `ffsession ui` against another local user (issue 45): a client that
//! holds connections or never finishes a request does not stop the server,
//! a signal leaves nothing of the page behind (and what a killed server
//! left goes at the next start), and the secret is on no command line.

#![cfg(unix)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::ui_page::{private_folders_in, two_snapshots, Page};

/// The timeouts of the server under test, shortened (the defaults are
/// 10 s for headers and 30 s for a stalled answer).
const TIMEOUT_MS: &str = "1000";

/// `ffsession ui` under `sh`, with at most `files` open files.
fn page_with_open_files(files: u32) -> Page {
    let (env, profile) = two_snapshots();
    let exe = assert_cmd::cargo::cargo_bin("ffsession");
    let mut cmd = env.sealed_cmd("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
        .arg(exe)
        .arg("--profile")
        .arg(&profile)
        .arg("--store")
        .arg(env.store_dir())
        .args(["ui", "--no-open", "--port", "0"])
        .env("FFSESSION_TEST_UI_TIMEOUT_MS", TIMEOUT_MS);
    Page::temp_here(&env, &mut cmd);
    Page::spawn(env, profile, cmd)
}

/// Wait up to `limit` for `read` to see the server close the connection
/// (end of file, or a reset); the time it took, or `None`.
fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 65536];
    while start.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(start.elapsed()),
        }
    }
    None
}

/// Another user opens many connections that each send half a request, past
/// the server's open files; the server keeps going and answers the page
/// once they time out (on 4a435bf it died: axum pauses after a failed
/// `accept` with tokio's timer, which the runtime did not have).
#[test]
fn half_open_connections_past_the_open_file_limit_do_not_stop_the_server() {
    let mut page = page_with_open_files(48);
    let mut held = Vec::new();
    for _ in 0..300 {
        match TcpStream::connect(("127.0.0.1", page.port)) {
            Ok(mut s) => {
                let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ");
                held.push(s);
            }
            // The listener's queue is full: enough.
            Err(_) => break,
        }
    }
    assert!(held.len() >= 100, "only {} connections", held.len());
    // The page, asked while they are all still open: it answers once the
    // server has dropped those in front of it.
    let start = Instant::now();
    let home = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| page.get("/")))
        .unwrap_or_else(|_| panic!("the server stopped; it said: {}", page.stderr()));
    assert_eq!(home.status, 200, "{}", home.body);
    assert!(home.body.contains("Timeline"));
    // The server dropped the half requests it took (the header timeout).
    let mut dropped = 0;
    for s in held.iter_mut().take(20) {
        if closed_within(s, Duration::from_secs(60)).is_some() {
            dropped += 1;
        }
    }
    assert_eq!(dropped, 20, "half requests still held");
    drop(held);
    // Out of open files on the way: said, never a panic.
    let err = page.stderr();
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("taking a connection on 127.0.0.1:"),
        "the failed accepts were said: {err}"
    );
    assert!(err.contains("Too many open files"), "{err}");
    assert!(page.child.try_wait().unwrap().is_none(), "{err}");
    eprintln!(
        "the page answered {:.1} s after the flood",
        start.elapsed().as_secs_f64()
    );
}

/// A client that sends half a request and waits, or asks for pages and
/// never reads them, loses its connection (on 4a435bf both were held as
/// long as the client liked).
#[test]
fn a_slow_client_is_dropped() {
    let (env, profile) = two_snapshots();
    let mut cmd = Page::command(&env, &profile);
    cmd.args(["ui", "--no-open", "--port", "0"])
        .env("FFSESSION_TEST_UI_TIMEOUT_MS", TIMEOUT_MS);
    let page = Page::spawn(env, profile, cmd);

    // Headers that never end.
    let mut s = TcpStream::connect(("127.0.0.1", page.port)).unwrap();
    let head = format!(
        "GET /{}/ HTTP/1.1\r\nHost: {}\r\n",
        page.secret,
        page.host()
    );
    s.write_all(head.as_bytes()).unwrap();
    let took = closed_within(&mut s, Duration::from_secs(60));
    assert!(took.is_some(), "a request whose headers never end is held");
    eprintln!("half headers dropped after {took:?}");

    // A kept-alive connection left idle after its answer.
    let mut s = TcpStream::connect(("127.0.0.1", page.port)).unwrap();
    s.write_all(format!("{head}\r\n").as_bytes()).unwrap();
    let took = closed_within(&mut s, Duration::from_secs(60));
    assert!(took.is_some(), "an idle kept-alive connection is held");
    eprintln!("an idle kept-alive connection dropped after {took:?}");

    // Pages asked for and never read: the answers stall, the connection goes.
    let mut s = TcpStream::connect(("127.0.0.1", page.port)).unwrap();
    let asked = 400;
    let request = format!(
        "GET /{}/snapshot/2 HTTP/1.1\r\nHost: {}\r\n\r\n",
        page.secret,
        page.host()
    );
    let mut writer = s.try_clone().unwrap();
    let requests = request.repeat(asked);
    let sender = std::thread::spawn(move || {
        // Fails once the server has closed the connection: expected.
        let _ = writer.write_all(requests.as_bytes());
    });
    // Not reading for a while: long past the stall timeout.
    std::thread::sleep(Duration::from_secs(5));
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let answers = String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 200")
        .count();
    assert!(
        answers < asked,
        "all {asked} answers were kept for a client that read none of them"
    );
    eprintln!(
        "{answers} of {asked} answers ({} bytes) before the connection went",
        got.len()
    );
    sender.join().unwrap();
    // The page still answers others.
    assert_eq!(page.get("/").status, 200);
}

/// SIGTERM, SIGHUP (the terminal closed) and SIGINT (Ctrl-C) each stop the
/// server and remove its private folder, with what the actions wrote there
/// (on 4a435bf SIGTERM and SIGHUP left it).
#[test]
fn a_signal_leaves_nothing_of_the_page() {
    for (signal, code) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let mut page = Page::start(&[]);
        let plan = page.plan_for("pick=t%3A2%3A1%3A3", "add");
        assert!(plan.body.contains("Do it"), "{}", plan.body);
        let folders = page.private_folders();
        assert_eq!(folders.len(), 1, "{folders:?}");
        assert!(folders[0].join("merged.jsonlz4").is_file());
        let pid = page.child.id().to_string();
        let killed = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = wait_for_exit(&mut page.child, Duration::from_secs(60));
        assert_eq!(page.private_folders(), Vec::<PathBuf>::new(), "SIG{signal}");
        assert_eq!(status.code(), Some(code), "SIG{signal}: {status:?}");
    }
}

fn wait_for_exit(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < limit, "still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A server killed outright (SIGKILL) cannot remove its folder: the next
/// `ffsession ui` does, and leaves a running server's alone (on 4a435bf
/// the folder stayed).
#[test]
fn what_a_killed_server_left_is_removed_at_the_next_start() {
    let (env, profile) = two_snapshots();
    let start = |name: &str| {
        let mut cmd = Page::command(&env, &profile);
        let err = std::fs::File::create(env.path().join(name)).unwrap();
        let mut child = cmd
            .args(["ui", "--no-open", "--port", "0"])
            .stdout(std::process::Stdio::piped())
            .stderr(err)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "{line:?}");
        child
    };
    let mut running = start("running.stderr");
    let [running_folder] = &private_folders_in(env.path())[..] else {
        panic!("{:?}", private_folders_in(env.path()));
    };
    let running_folder = running_folder.clone();
    let mut killed = start("killed.stderr");
    let killed_folder = private_folders_in(env.path())
        .into_iter()
        .find(|f| *f != running_folder)
        .unwrap();
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(killed_folder.is_dir(), "SIGKILL leaves it");
    // Both made long enough ago to be past a server that is starting.
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    for f in [&running_folder, &killed_folder] {
        if let Ok(lock) = std::fs::File::options()
            .write(true)
            .open(f.join("running.lock"))
        {
            lock.set_modified(long_ago).unwrap();
        }
    }
    let mut next = start("next.stderr");
    let left = private_folders_in(env.path());
    assert!(!left.contains(&killed_folder), "{left:?}");
    assert!(
        left.contains(&running_folder),
        "a running server's: {left:?}"
    );
    assert_eq!(left.len(), 2, "{left:?}");
    let said = std::fs::read_to_string(env.path().join("next.stderr")).unwrap();
    assert!(
        said.contains("the private folder of a page that was stopped"),
        "{said}"
    );
    for child in [&mut running, &mut next] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// The browser is given the path of a small page in the private folder
/// (readable by the user only) that takes it to the address: the secret is
/// in no process's arguments, where every user of the machine reads them
/// (on 4a435bf `xdg-open` got the whole address).
#[cfg(not(target_os = "macos"))]
#[test]
fn the_browser_is_given_no_secret() {
    use std::os::unix::fs::PermissionsExt;
    let (env, profile) = two_snapshots();
    let bin = env.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let log = env.path().join("opened");
    // What `xdg-open` was given, and what it read there, as a browser would.
    std::fs::write(
        bin.join("xdg-open"),
        format!(
            "#!/bin/sh\ncat \"$1\" > '{log}.html'\nprintf '%s\\n' \"$@\" > '{log}.args'\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("xdg-open"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Page::command(&env, &profile);
    cmd.args(["ui", "--port", "0"]).env("PATH", path);
    let page = Page::spawn(env, profile, cmd);
    let args_file = page.env.path().join("opened.args");
    let start = Instant::now();
    while !args_file.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no browser opened: {}",
            page.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let args = std::fs::read_to_string(&args_file).unwrap();
    assert!(
        !args.contains(&page.secret),
        "the secret on a command line: {args}"
    );
    let given = PathBuf::from(args.trim());
    assert!(given.is_absolute(), "{args}");
    let folder = given.parent().unwrap();
    assert_eq!(page.private_folders(), [folder.to_path_buf()]);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(folder), 0o700);
    assert_eq!(mode(&given), 0o600);
    let name = folder.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        !name.contains(&page.secret[..8]),
        "{name}: named from the secret"
    );
    // The page it read takes the browser to the address.
    let html = std::fs::read_to_string(page.env.path().join("opened.html")).unwrap();
    let url = format!("http://127.0.0.1:{}/{}/", page.port, page.secret);
    assert!(html.contains(&format!("url={url}")), "{html}");
    // Nor is it in the server's own arguments.
    let own = std::fs::read(format!("/proc/{}/cmdline", page.child.id())).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&own).contains(&page.secret));
}
