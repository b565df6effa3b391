//! Background service definitions for `ffsession watch`: a systemd user unit
//! on Linux, a launchd agent on macOS, a Task Scheduler task on Windows. This
//! module only renders their text; the CLI writes the files and asks
//! systemctl, launchctl or schtasks to load them.

/// A `watch` service to install: the program and the arguments it runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSpec {
    /// A short name for the profile, used in the unit name and description.
    pub profile_name: String,
    /// The absolute path of the `ffsession` binary.
    pub program: String,
    /// Arguments after the program (`watch --profile ...`).
    pub args: Vec<String>,
}

impl ServiceSpec {
    /// The name of the unit or agent, e.g. `ffsession-watch-default-release`.
    pub fn unit_name(&self) -> String {
        let safe: String = self
            .profile_name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        format!("ffsession-watch-{safe}")
    }

    /// A systemd user unit (`~/.config/systemd/user/<name>.service`).
    pub fn systemd_unit(&self) -> String {
        let exec: Vec<String> = std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| systemd_quote(a))
            .collect();
        format!(
            "# Written by `ffsession service install`; `ffsession service uninstall` removes it.\n\
             [Unit]\n\
             Description=ffsession: back up Firefox sessions of profile {}\n\
             \n\
             [Service]\n\
             ExecStart={}\n\
             Restart=on-failure\n\
             RestartSec=30\n\
             \n\
             [Install]\n\
             WantedBy=default.target\n",
            self.profile_name.replace('%', "%%").replace('\n', " "),
            exec.join(" ")
        )
    }

    /// A launchd agent (`~/Library/LaunchAgents/<label>.plist`).
    pub fn launchd_plist(&self) -> String {
        use html_escape::encode_text as xml;
        let args: String = std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| format!("    <string>{}</string>\n", xml(a)))
            .collect();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
             <plist version=\"1.0\">\n<dict>\n\
             \x20 <key>Label</key>\n  <string>{}</string>\n\
             \x20 <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n\
             \x20 <key>RunAtLoad</key>\n  <true/>\n\
             \x20 <key>KeepAlive</key>\n  <true/>\n\
             </dict>\n</plist>\n",
            xml(&self.launchd_label())
        )
    }

    /// The launchd label, e.g. `org.ffsession.watch.default-release`.
    pub fn launchd_label(&self) -> String {
        self.unit_name()
            .replacen("ffsession-watch-", "org.ffsession.watch.", 1)
    }

    /// A Task Scheduler task (Windows), registered with `schtasks /create
    /// /xml`: the task is named [`ServiceSpec::unit_name`], starts at the
    /// logon of `user` (`DOMAIN\name`, as that user, without elevation),
    /// and runs `program` with `args`.
    ///
    /// `program` is the windowless launcher (`ffsessionw.exe`, a program of
    /// the Windows subsystem: no console window opens, or flashes, at logon),
    /// which runs `ffsession.exe` with `args` and runs it again 30 seconds
    /// after it fails, as systemd's `Restart=on-failure` does. The task's
    /// own `RestartOnFailure` covers a launcher that cannot be started.
    /// `Hidden` keeps the task out of Task Scheduler's default view; no time
    /// limit (the default stops a task after 72 hours); and it runs on
    /// battery too (the default does not).
    ///
    /// The text declares UTF-16, the encoding Task Scheduler writes and
    /// reads: the caller writes it as UTF-16 ([`ServiceSpec::task_xml_utf16`]).
    pub fn task_xml(&self, user: &str) -> String {
        use html_escape::encode_text as xml;
        let args: Vec<String> = self.args.iter().map(|a| windows_arg(a)).collect();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\r\n\
             <!-- Written by `ffsession service install`; `ffsession service uninstall` removes it. -->\r\n\
             <Task version=\"1.2\" xmlns=\"http://schemas.microsoft.com/windows/2004/02/mit/task\">\r\n\
             \x20 <RegistrationInfo>\r\n\
             \x20   <Description>ffsession: back up Firefox sessions of profile {description}</Description>\r\n\
             \x20   <URI>\\{name}</URI>\r\n\
             \x20 </RegistrationInfo>\r\n\
             \x20 <Triggers>\r\n\
             \x20   <LogonTrigger>\r\n\
             \x20     <Enabled>true</Enabled>\r\n\
             \x20     <UserId>{user}</UserId>\r\n\
             \x20   </LogonTrigger>\r\n\
             \x20 </Triggers>\r\n\
             \x20 <Principals>\r\n\
             \x20   <Principal id=\"Author\">\r\n\
             \x20     <UserId>{user}</UserId>\r\n\
             \x20     <LogonType>InteractiveToken</LogonType>\r\n\
             \x20     <RunLevel>LeastPrivilege</RunLevel>\r\n\
             \x20   </Principal>\r\n\
             \x20 </Principals>\r\n\
             \x20 <Settings>\r\n\
             \x20   <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>\r\n\
             \x20   <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>\r\n\
             \x20   <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>\r\n\
             \x20   <AllowHardTerminate>true</AllowHardTerminate>\r\n\
             \x20   <StartWhenAvailable>true</StartWhenAvailable>\r\n\
             \x20   <IdleSettings>\r\n\
             \x20     <StopOnIdleEnd>false</StopOnIdleEnd>\r\n\
             \x20     <RestartOnIdle>false</RestartOnIdle>\r\n\
             \x20   </IdleSettings>\r\n\
             \x20   <AllowStartOnDemand>true</AllowStartOnDemand>\r\n\
             \x20   <Enabled>true</Enabled>\r\n\
             \x20   <Hidden>true</Hidden>\r\n\
             \x20   <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>\r\n\
             \x20   <RestartOnFailure>\r\n\
             \x20     <Interval>PT1M</Interval>\r\n\
             \x20     <Count>999</Count>\r\n\
             \x20   </RestartOnFailure>\r\n\
             \x20 </Settings>\r\n\
             \x20 <Actions Context=\"Author\">\r\n\
             \x20   <Exec>\r\n\
             \x20     <Command>{program}</Command>\r\n\
             \x20     <Arguments>{arguments}</Arguments>\r\n\
             \x20   </Exec>\r\n\
             \x20 </Actions>\r\n\
             </Task>\r\n",
            description = xml(&self.profile_name.replace(['\r', '\n'], " ")),
            name = xml(&self.unit_name()),
            user = xml(user),
            program = xml(&self.program),
            arguments = xml(&args.join(" ")),
        )
    }

    /// [`ServiceSpec::task_xml`] as the bytes of a file for `schtasks
    /// /create /xml`: UTF-16 little-endian after a byte order mark.
    pub fn task_xml_utf16(&self, user: &str) -> Vec<u8> {
        let text = self.task_xml(user);
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        bytes
    }
}

/// Quote one argument for a Windows command line as the C runtime (and
/// Rust's `std::env::args`) splits it again: in double quotes when it holds
/// a space, a tab or a quote (or is empty), with each `"` escaped by a
/// backslash and the backslashes before a `"` (or before the closing quote)
/// doubled.
pub fn windows_arg(arg: &str) -> String {
    if !arg.is_empty() && !arg.contains([' ', '\t', '\n', '\x0b', '"']) {
        return arg.to_owned();
    }
    let mut out = String::from("\"");
    let mut backslashes = 0;
    for c in arg.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', 2 * backslashes + 1));
                out.push('"');
                backslashes = 0;
            }
            c => {
                out.extend(std::iter::repeat_n('\\', backslashes));
                out.push(c);
                backslashes = 0;
            }
        }
    }
    out.extend(std::iter::repeat_n('\\', 2 * backslashes));
    out.push('"');
    out
}

/// Quote one `ExecStart=` word for systemd: double quotes, with `\`, `"`, `%`
/// and `$` escaped.
fn systemd_quote(word: &str) -> String {
    let mut out = String::from("\"");
    for c in word.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ServiceSpec {
        ServiceSpec {
            profile_name: "Work & \"Play\" 100%".into(),
            program: "/home/me/.cargo/bin/ffsession".into(),
            args: vec![
                "watch".into(),
                "--profile".into(),
                "/home/me/My Profile $HOME %h".into(),
            ],
        }
    }

    #[test]
    fn systemd_words_are_quoted_and_escaped() {
        let unit = spec().systemd_unit();
        assert!(unit.contains(
            "ExecStart=\"/home/me/.cargo/bin/ffsession\" \"watch\" \"--profile\" \"/home/me/My Profile $$HOME %%h\"\n"
        ), "{unit}");
        assert!(unit.contains(
            "Description=ffsession: back up Firefox sessions of profile Work & \"Play\" 100%%\n"
        ));
        assert!(unit.contains("WantedBy=default.target"));
        assert_eq!(spec().unit_name(), "ffsession-watch-Work----Play--100-");
    }

    #[test]
    fn launchd_arguments_are_xml_escaped() {
        let plist = spec().launchd_plist();
        assert!(
            plist.contains("<string>org.ffsession.watch.Work----Play--100-</string>"),
            "{plist}"
        );
        assert!(
            plist.contains("    <string>/home/me/My Profile $HOME %h</string>\n"),
            "{plist}"
        );
        assert!(plist.contains("<key>RunAtLoad</key>\n  <true/>"));
    }
    /// The agent as launchd reads it: a real plist parser.
    #[test]
    fn the_launchd_agent_parses_as_a_plist_with_its_keys() {
        let text = spec().launchd_plist();
        let value = plist::Value::from_reader_xml(text.as_bytes()).unwrap();
        let dict = value.as_dictionary().unwrap();
        assert_eq!(
            dict.get("Label").and_then(|v| v.as_string()),
            Some("org.ffsession.watch.Work----Play--100-")
        );
        let args: Vec<&str> = dict
            .get("ProgramArguments")
            .and_then(|v| v.as_array())
            .unwrap()
            .iter()
            .map(|v| v.as_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "/home/me/.cargo/bin/ffsession",
                "watch",
                "--profile",
                "/home/me/My Profile $HOME %h"
            ]
        );
        assert_eq!(
            dict.get("RunAtLoad").and_then(|v| v.as_boolean()),
            Some(true)
        );
        assert_eq!(
            dict.get("KeepAlive").and_then(|v| v.as_boolean()),
            Some(true)
        );
        let mut keys: Vec<&str> = dict.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["KeepAlive", "Label", "ProgramArguments", "RunAtLoad"]
        );
    }

    fn windows_spec() -> ServiceSpec {
        ServiceSpec {
            profile_name: "Work & <Play>".into(),
            program: r"C:\Users\Zoë\AppData\Local\ffsession\ffsessionw.exe".into(),
            args: vec![
                "watch".into(),
                "--profile".into(),
                r"C:\Users\Zoë\AppData\Roaming\Mozilla\Firefox\Profiles\x y\".into(),
                "--store".into(),
                r#"D:\backups\"quoted" & <odd>"#.into(),
            ],
        }
    }

    const TASK_NS: &str = "http://schemas.microsoft.com/windows/2004/02/mit/task";

    /// The text of the element at `path` under `node` (each step the only
    /// child of that name, in the task namespace).
    fn child_text<'a>(node: roxmltree::Node<'a, 'a>, path: &[&str]) -> &'a str {
        let mut node = node;
        for name in path {
            let found: Vec<_> = node
                .children()
                .filter(|c| {
                    c.tag_name().name() == *name && c.tag_name().namespace() == Some(TASK_NS)
                })
                .collect();
            assert_eq!(
                found.len(),
                1,
                "one <{name}> in <{}>",
                node.tag_name().name()
            );
            node = found[0];
        }
        node.text().unwrap_or("")
    }

    /// The task as Task Scheduler reads it: a real XML parser; the trigger,
    /// the principal, the action, the restart and the hidden settings.
    #[test]
    fn the_task_parses_as_xml_with_its_trigger_action_and_settings() {
        let text = windows_spec().task_xml(r"PC-1\Zoë");
        let doc = roxmltree::Document::parse(&text).unwrap();
        let task = doc.root_element();
        assert_eq!(task.tag_name().name(), "Task");
        assert_eq!(task.tag_name().namespace(), Some(TASK_NS));
        assert_eq!(
            child_text(task, &["RegistrationInfo", "URI"]),
            r"\ffsession-watch-Work----Play-"
        );
        assert_eq!(
            child_text(task, &["RegistrationInfo", "Description"]),
            "ffsession: back up Firefox sessions of profile Work & <Play>"
        );
        // At the user's own logon, as that user, not elevated.
        let trigger = ["Triggers", "LogonTrigger"];
        assert_eq!(
            child_text(task, &[&trigger[..], &["Enabled"]].concat()),
            "true"
        );
        assert_eq!(
            child_text(task, &[&trigger[..], &["UserId"]].concat()),
            r"PC-1\Zoë"
        );
        let principal = ["Principals", "Principal"];
        for (name, value) in [
            ("UserId", r"PC-1\Zoë"),
            ("LogonType", "InteractiveToken"),
            ("RunLevel", "LeastPrivilege"),
        ] {
            assert_eq!(child_text(task, &[&principal[..], &[name]].concat()), value);
        }
        // Hidden, restarted, never stopped by a time limit or on battery.
        for (path, value) in [
            (&["Hidden"][..], "true"),
            (&["Enabled"], "true"),
            (&["ExecutionTimeLimit"], "PT0S"),
            (&["RestartOnFailure", "Interval"], "PT1M"),
            (&["RestartOnFailure", "Count"], "999"),
            (&["DisallowStartIfOnBatteries"], "false"),
            (&["StopIfGoingOnBatteries"], "false"),
            (&["MultipleInstancesPolicy"], "IgnoreNew"),
        ] {
            assert_eq!(child_text(task, &[&["Settings"][..], path].concat()), value);
        }
        // The action: the launcher, and the arguments as one command line
        // that splits back into the words.
        assert_eq!(
            child_text(task, &["Actions", "Exec", "Command"]),
            r"C:\Users\Zoë\AppData\Local\ffsession\ffsessionw.exe"
        );
        let line = child_text(task, &["Actions", "Exec", "Arguments"]);
        assert_eq!(split_windows(line), windows_spec().args, "{line}");
    }

    #[test]
    fn the_task_file_is_utf16_with_a_byte_order_mark() {
        let bytes = windows_spec().task_xml_utf16("me");
        assert_eq!(&bytes[..2], &[0xFF, 0xFE]);
        let units: Vec<u16> = bytes[2..]
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(
            String::from_utf16(&units).unwrap(),
            windows_spec().task_xml("me")
        );
    }

    /// Split a command line as the C runtime does (the rules `windows_arg`
    /// quotes for), to check that every argument comes back whole.
    fn split_windows(line: &str) -> Vec<String> {
        let mut args = Vec::new();
        let mut chars = line.chars().peekable();
        loop {
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            if chars.peek().is_none() {
                return args;
            }
            let (mut arg, mut quoted) = (String::new(), false);
            while let Some(&c) = chars.peek() {
                if !quoted && (c == ' ' || c == '\t') {
                    break;
                }
                chars.next();
                match c {
                    '\\' => {
                        let mut n = 1;
                        while chars.peek() == Some(&'\\') {
                            chars.next();
                            n += 1;
                        }
                        if chars.peek() == Some(&'"') {
                            arg.extend(std::iter::repeat_n('\\', n / 2));
                            if n % 2 == 1 {
                                chars.next();
                                arg.push('"');
                            }
                        } else {
                            arg.extend(std::iter::repeat_n('\\', n));
                        }
                    }
                    '"' => quoted = !quoted,
                    c => arg.push(c),
                }
            }
            args.push(arg);
        }
    }

    #[test]
    fn windows_arguments_come_back_whole() {
        let words = [
            "watch",
            "",
            r"C:\plain\path",
            r"C:\with space\",
            r"C:\trailing\\",
            r#"say "hi""#,
            r#"back\"slash"#,
            "tab\there",
            "日本語 ü",
        ];
        let line: Vec<String> = words.iter().map(|w| windows_arg(w)).collect();
        assert_eq!(split_windows(&line.join(" ")), words);
        assert_eq!(windows_arg(r"C:\plain\path"), r"C:\plain\path");
        assert_eq!(windows_arg(r"C:\with space\"), r#""C:\with space\\""#);
        assert_eq!(windows_arg(""), r#""""#);
    }
}
