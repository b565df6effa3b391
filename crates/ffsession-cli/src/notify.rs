//! Desktop notifications for `watch`'s alarms: on Linux (and other
//! freedesktop desktops) through the Notifications service on the session
//! bus (zbus), on Windows as a toast (PowerShell's WinRT bridge, no window),
//! on macOS as a user notification (`osascript`'s `display notification`).
//!
//! A notification says what happened and the command that gets the session
//! back; where the desktop supports actions (the freedesktop service says
//! so in its capabilities), clicking it runs that command's page
//! (`ffsession ui --snapshot N`).

use std::ffi::OsString;
use std::path::PathBuf;

/// What to tell the person.
#[derive(Debug, Clone)]
pub struct Notice {
    /// One line: what happened.
    pub summary: String,
    /// What to do, as plain text (commands included).
    pub body: String,
    /// Loss of data: shown until dismissed where the desktop can.
    pub critical: bool,
    /// What clicking it runs, where the desktop supports actions (the
    /// freedesktop service; a toast or `osascript` notification names the
    /// command in its body instead).
    #[cfg_attr(any(windows, target_os = "macos"), allow(dead_code))]
    pub action: Option<Action>,
}

/// A program run when the person clicks the notification.
#[derive(Debug, Clone)]
#[cfg_attr(any(windows, target_os = "macos"), allow(dead_code))]
pub struct Action {
    /// The button's label.
    pub label: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

#[cfg_attr(any(windows, target_os = "macos"), allow(dead_code))]
impl Action {
    fn run(&self) {
        let _ = std::process::Command::new(&self.program)
            .args(&self.args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn();
    }
}

/// Show `notice`; the error says why it could not be shown (no session bus,
/// no notification service).
pub fn send(notice: &Notice) -> Result<(), String> {
    platform::send(notice)
}

#[cfg(all(unix, not(target_os = "macos")))]
mod platform {
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    use zbus::blocking::{Connection, Proxy};
    use zbus::zvariant::Value;

    use super::Notice;

    const NAME: &str = "org.freedesktop.Notifications";
    const PATH: &str = "/org/freedesktop/Notifications";

    /// How long a click on a notification is waited for.
    const ACTION_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

    pub fn send(notice: &Notice) -> Result<(), String> {
        let conn = Connection::session().map_err(|e| format!("no D-Bus session bus: {e}"))?;
        let proxy = Proxy::new(&conn, NAME, PATH, NAME).map_err(|e| e.to_string())?;
        let caps: Vec<String> = proxy
            .call("GetCapabilities", &())
            .map_err(|e| format!("no notification service on the session bus: {e}"))?;
        let action = notice
            .action
            .clone()
            .filter(|_| caps.iter().any(|c| c == "actions"));
        // Listen before asking, so a click that comes at once is not missed.
        let signals = match &action {
            Some(_) => Some(proxy.receive_all_signals().map_err(|e| e.to_string())?),
            None => None,
        };
        let actions: Vec<&str> = match &action {
            Some(a) => vec!["default", a.label.as_str()],
            None => Vec::new(),
        };
        let mut hints: HashMap<&str, Value> = HashMap::new();
        hints.insert("urgency", Value::U8(if notice.critical { 2 } else { 1 }));
        hints.insert("desktop-entry", Value::from("ffsession"));
        let id: u32 = proxy
            .call(
                "Notify",
                &(
                    "ffsession",
                    0u32,
                    "dialog-warning",
                    notice.summary.as_str(),
                    notice.body.as_str(),
                    actions,
                    hints,
                    -1i32,
                ),
            )
            .map_err(|e| format!("the notification service refused it: {e}"))?;
        if let (Some(action), Some(signals)) = (action, signals) {
            // The connection lives in the thread, until the notification is
            // clicked or closed (or a day passed).
            std::thread::spawn(move || {
                let _conn = conn;
                let start = Instant::now();
                for msg in signals {
                    if start.elapsed() > ACTION_WAIT {
                        break;
                    }
                    let header = msg.header();
                    let Some(member) = header.member() else {
                        continue;
                    };
                    match member.as_str() {
                        "ActionInvoked" => {
                            if let Ok((nid, _key)) = msg.body().deserialize::<(u32, String)>() {
                                if nid == id {
                                    action.run();
                                    break;
                                }
                            }
                        }
                        "NotificationClosed" => {
                            if let Ok((nid, _why)) = msg.body().deserialize::<(u32, u32)>() {
                                if nid == id {
                                    break;
                                }
                            }
                        }
                        _ => {}
                    }
                }
            });
        }
        Ok(())
    }
}

#[cfg(windows)]
mod platform {
    use std::os::windows::process::CommandExt;
    use std::process::{Command, Stdio};

    use super::Notice;

    /// No console window for the PowerShell that shows the toast.
    const CREATE_NO_WINDOW: u32 = 0x0800_0000;

    /// Shows the toast XML in FFSESSION_TOAST, as Windows PowerShell (its
    /// application id, which every Windows has registered).
    const SCRIPT: &str = r#"$ErrorActionPreference = 'Stop'
[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] > $null
[Windows.Data.Xml.Dom.XmlDocument, Windows.Data.Xml.Dom.XmlDocument, ContentType = WindowsRuntime] > $null
$xml = New-Object Windows.Data.Xml.Dom.XmlDocument
$xml.LoadXml($env:FFSESSION_TOAST)
$toast = New-Object Windows.UI.Notifications.ToastNotification $xml
[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier('{1AC14E77-02E7-4E5D-B744-2EB1AE5198B7}\WindowsPowerShell\v1.0\powershell.exe').Show($toast)"#;

    fn xml_escape(text: &str) -> String {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    }

    pub fn send(notice: &Notice) -> Result<(), String> {
        let scenario = if notice.critical {
            " scenario=\"reminder\""
        } else {
            ""
        };
        let toast = format!(
            "<toast{scenario}><visual><binding template=\"ToastGeneric\"><text>{}</text><text>{}</text></binding></visual>{}</toast>",
            xml_escape(&notice.summary),
            xml_escape(&notice.body),
            if notice.critical {
                "<actions><action content=\"Dismiss\" arguments=\"dismiss\" activationType=\"system\"/></actions>"
            } else {
                ""
            }
        );
        let status = Command::new("powershell.exe")
            .args([
                "-NoProfile",
                "-NonInteractive",
                "-ExecutionPolicy",
                "Bypass",
                "-Command",
                SCRIPT,
            ])
            .env("FFSESSION_TOAST", toast)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .creation_flags(CREATE_NO_WINDOW)
            .status()
            .map_err(|e| format!("cannot run powershell.exe: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "powershell.exe could not show the toast ({status})"
            ))
        }
    }
}

#[cfg(target_os = "macos")]
mod platform {
    use std::process::{Command, Stdio};

    use super::Notice;

    /// The text comes from the environment, so nothing in it is AppleScript.
    const SCRIPT: &str = r#"display notification (system attribute "FFSESSION_BODY") with title "ffsession" subtitle (system attribute "FFSESSION_SUMMARY")"#;

    pub fn send(notice: &Notice) -> Result<(), String> {
        // A loss is said with the system's alert sound too.
        let script = if notice.critical {
            format!("{SCRIPT} sound name \"Basso\"")
        } else {
            SCRIPT.to_owned()
        };
        let status = Command::new("osascript")
            .args(["-e", &script])
            .env("FFSESSION_SUMMARY", &notice.summary)
            .env("FFSESSION_BODY", &notice.body)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run osascript: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "osascript could not show the notification ({status})"
            ))
        }
    }
}
