//! The `ssh` child an SFTP remote talks through (Unix).
//!
//! One `ssh -s HOST sftp` per open remote, a child of this process, with the
//! SFTP protocol on its pipes: no control master, nothing left running. The
//! user's own `ssh` and set-up (`~/.ssh/config`, keys, the agent,
//! `known_hosts`, checked strictly) decide how to connect. The child:
//!
//! - is never a control master (`ControlMaster=no`, whatever the user's
//!   config says), so no `ssh` outlives the command;
//! - dies with this process: on Linux it is sent SIGKILL when its parent
//!   dies (`PR_SET_PDEATHSIG`), even after a `kill -9`; elsewhere it ends
//!   when its stdin closes (the server's `sftp-server` sees the end of
//!   its input); and it is killed when the remote is dropped;
//! - gets none of the password variables the CLI reads
//!   ([`SECRET_VARIABLES`]);
//! - gives up connecting after [`CONNECT_TIMEOUT_S`] seconds.
//!
//! What `ssh` says on stderr is kept, to word the error when it fails: an
//! unknown or changed host key, a refused key, a host it cannot reach.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use super::RemoteError;

/// The variables the CLI reads passwords from, which no child gets.
pub const SECRET_VARIABLES: &[&str] = &["FFSESSION_PASSWORD", "FFSESSION_WEBDAV_PASSWORD"];

/// How long `ssh` may take to connect and exchange keys (its
/// `ConnectTimeout`).
pub(super) const CONNECT_TIMEOUT_S: u64 = 20;

/// How much of `ssh`'s stderr is kept (its last bytes).
const STDERR_KEPT: usize = 8192;

/// Where to connect, as the location says it.
#[derive(Debug, Clone)]
pub(super) struct Target {
    /// The login name, if the URL gives one.
    pub user: Option<String>,
    /// A host name, address or `~/.ssh/config` alias.
    pub host: String,
    /// The port, if the URL gives one.
    pub port: Option<u16>,
    /// A private key to use instead of the set-up's choice.
    pub key: Option<String>,
}

/// A running `ssh` child and what it said on stderr so far.
pub(super) struct SshChild {
    /// The child (killed when dropped).
    pub child: Child,
    /// Its stderr, the last [`STDERR_KEPT`] bytes.
    pub stderr: Arc<Mutex<Vec<u8>>>,
    /// The task reading stderr (done once `ssh` has exited).
    pub reader: tokio::task::JoinHandle<()>,
}

impl SshChild {
    /// What `ssh` said on stderr, as text.
    pub fn said(&self) -> String {
        let bytes = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// The command line: `ssh [options] -s -- HOST sftp`.
pub(super) fn command(target: &Target) -> Command {
    let mut cmd = Command::new("ssh");
    for option in [
        "BatchMode=yes".to_owned(),
        "StrictHostKeyChecking=yes".into(),
        "ControlMaster=no".into(),
        format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
        "ServerAliveInterval=15".into(),
        "ServerAliveCountMax=3".into(),
        "ForwardAgent=no".into(),
        "ForwardX11=no".into(),
        "ClearAllForwardings=yes".into(),
    ] {
        cmd.arg("-o").arg(option);
    }
    if let Some(p) = target.port {
        cmd.arg("-p").arg(p.to_string());
    }
    if let Some(u) = &target.user {
        cmd.arg("-l").arg(u);
    }
    if let Some(k) = &target.key {
        cmd.arg("-o").arg("IdentitiesOnly=yes").arg("-i").arg(k);
    }
    // `--`: a host that starts with `-` is a host, never an option.
    cmd.arg("-s").arg("--").arg(&target.host).arg("sftp");
    for name in SECRET_VARIABLES {
        cmd.env_remove(name);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    die_with_parent(&mut cmd);
    cmd
}

/// On Linux: the child gets SIGKILL when the thread that started it ends
/// (with the process: a `kill -9` too), and ends at once if this process is
/// already gone when it starts.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the child between fork and exec, and only
    // makes system calls (prctl, getppid), which are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)?;
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("the parent has exited"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

/// Start `ssh` for `target` (inside the runtime).
pub(super) fn spawn(target: &Target, location: &str) -> Result<SshChild, RemoteError> {
    let mut child = command(target).spawn().map_err(|e| RemoteError::Backend {
        location: location.to_owned(),
        op: "connect",
        path: String::new(),
        reason: if e.kind() == std::io::ErrorKind::NotFound {
            "the `ssh` command is not installed (SFTP remotes run OpenSSH's client)".into()
        } else {
            format!("cannot run `ssh`: {e}")
        },
        full: false,
    })?;
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let mut pipe = child.stderr.take();
    let kept = Arc::clone(&stderr);
    let reader = tokio::spawn(async move {
        let Some(pipe) = pipe.as_mut() else { return };
        let mut buf = [0u8; 1024];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if let Ok(mut k) = kept.lock() {
                k.extend_from_slice(&buf[..n]);
                let extra = k.len().saturating_sub(STDERR_KEPT);
                k.drain(..extra);
            }
        }
    });
    Ok(SshChild {
        child,
        stderr,
        reader,
    })
}

/// The `ssh` command that shows the server's host key and, once the user
/// says yes, records it in `known_hosts`.
pub(super) fn accept_command(target: &Target) -> String {
    let mut s = String::from("ssh -o StrictHostKeyChecking=ask");
    if let Some(p) = target.port {
        s.push_str(&format!(" -p {p}"));
    }
    s.push(' ');
    if let Some(u) = &target.user {
        s.push_str(u);
        s.push('@');
    }
    s.push_str(&target.host);
    s.push_str(" exit");
    s
}

/// The error for an `ssh` that could not start an SFTP session, from what
/// it said on stderr (`said`) and what the SFTP side saw (`fallback`).
pub(super) fn connect_error(
    location: &str,
    target: &Target,
    said: &str,
    fallback: &str,
) -> RemoteError {
    let lower = said.to_ascii_lowercase();
    // As known_hosts names it: `[host]:port` for a port other than 22.
    let host = match target.port {
        Some(p) if p != 22 => format!("[{}]:{p}", target.host),
        _ => target.host.clone(),
    };
    if lower.contains("remote host identification has changed")
        || lower.contains("host key for") && lower.contains("has changed")
    {
        return RemoteError::HostKey {
            location: location.to_owned(),
            host,
            changed: true,
            command: accept_command(target),
        };
    }
    if lower.contains("host key verification failed") {
        return RemoteError::HostKey {
            location: location.to_owned(),
            host,
            changed: false,
            command: accept_command(target),
        };
    }
    let reason = match last_line(said) {
        Some(line) => format!("ssh: {line}"),
        None => fallback.to_owned(),
    };
    RemoteError::Backend {
        location: location.to_owned(),
        op: "connect",
        path: String::new(),
        reason,
        full: false,
    }
}

/// The last line of `ssh`'s stderr worth showing (not a warning about
/// adding a host to `known_hosts`, not a banner's blank lines).
pub(super) fn last_line(said: &str) -> Option<String> {
    said.lines()
        .map(|l| l.trim())
        .rfind(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .map(|l| l.strip_prefix("ssh: ").unwrap_or(l))
        .map(|l| l.trim_end_matches('.').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(user: Option<&str>, port: Option<u16>) -> Target {
        Target {
            user: user.map(str::to_owned),
            host: "nas.local".into(),
            port,
            key: None,
        }
    }

    #[test]
    fn unknown_and_changed_host_keys_are_named_with_the_command_that_accepts_one() {
        let t = target(Some("me"), Some(2222));
        let unknown = "No ED25519 host key is known for [nas.local]:2222 and you have requested strict checking.\r\nHost key verification failed.\r\n";
        match connect_error("sftp://me@nas.local:2222/x", &t, unknown, "?") {
            RemoteError::HostKey {
                changed, command, ..
            } => {
                assert!(!changed);
                assert_eq!(
                    command,
                    "ssh -o StrictHostKeyChecking=ask -p 2222 me@nas.local exit"
                );
            }
            e => panic!("{e:?}"),
        }
        let changed = "@@@@@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\nHost key verification failed.\r\n";
        assert!(matches!(
            connect_error("x", &t, changed, "?"),
            RemoteError::HostKey { changed: true, .. }
        ));
        assert_eq!(
            accept_command(&target(None, None)),
            "ssh -o StrictHostKeyChecking=ask nas.local exit"
        );
    }

    #[test]
    fn other_failures_say_what_ssh_said_last() {
        let t = target(None, None);
        let said = "Warning: Permanently added 'x' (ED25519) to the list of known hosts.\r\nme@nas.local: Permission denied (publickey).\r\n";
        let e = connect_error("sftp://nas.local/x", &t, said, "?");
        assert!(
            e.to_string()
                .contains("ssh: me@nas.local: Permission denied (publickey)"),
            "{e}"
        );
        let e = connect_error("sftp://nas.local/x", &t, "", "the connection closed");
        assert!(e.to_string().contains("the connection closed"), "{e}");
    }

    #[test]
    fn the_command_has_no_master_and_no_password_variables() {
        let cmd = command(&Target {
            key: Some("/k".into()),
            ..target(Some("me"), Some(22))
        });
        let std = cmd.as_std();
        let args: Vec<String> = std
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"ControlMaster=no".to_owned()), "{args:?}");
        assert!(!args
            .iter()
            .any(|a| a == "-M" || a.contains("ControlPersist")));
        assert_eq!(&args[args.len() - 4..], ["-s", "--", "nas.local", "sftp"]);
        let removed: Vec<String> = std
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for name in SECRET_VARIABLES {
            assert!(removed.iter().any(|r| r == name), "{removed:?}");
        }
    }
}
