//! Background service definitions for `ffsession watch`: a systemd user unit
//! on Linux, a launchd agent on macOS. This module only renders their text;
//! the CLI writes the files and asks systemctl or launchctl to load them.

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
}
