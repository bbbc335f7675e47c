//! The text of `pincer.service`: what `pincer service install` writes, from the
//! binary, the home and the folders the gateway writes. Nothing here touches the disk
//! or systemd; `unit_for` is the whole file as a string, so a test reads it as systemd
//! would.

use std::path::PathBuf;

/// What the unit runs and may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unit {
    /// The `pincer` binary, absolute.
    pub exe: PathBuf,
    /// `--home`, absolute.
    pub home: PathBuf,
    /// `--config`, when config.toml lives outside the home.
    pub config: Option<PathBuf>,
    /// What stays writable under `ProtectSystem=strict`: the home, and the workspace
    /// when it is elsewhere.
    pub writable: Vec<PathBuf>,
    /// `MemoryMax=`, as systemd reads it (`1G`, `512M`, `infinity`).
    pub memory_max: String,
    /// A system unit (`--system`): started at boot, `WantedBy=multi-user.target`.
    pub system: bool,
    /// `User=` of a system unit.
    pub run_as: Option<String>,
}

/// How long systemd waits for a sign of life (`WATCHDOG=1`) before restarting the
/// gateway; `pincer run` sends one at half this.
pub(crate) const WATCHDOG_SECS: u32 = 30;

impl Unit {
    /// The gateway's command line, as ExecStart runs it.
    pub(crate) fn command(&self) -> Vec<String> {
        let mut args = vec![self.exe.display().to_string()];
        args.extend(["--home".to_string(), self.home.display().to_string()]);
        if let Some(config) = &self.config {
            args.extend(["--config".to_string(), config.display().to_string()]);
        }
        args.push("run".to_string());
        args
    }

    /// The unit file.
    pub(crate) fn render(&self) -> String {
        let exec = self
            .command()
            .iter()
            .map(|arg| systemd_quote(arg))
            .collect::<Vec<_>>()
            .join(" ");
        let writable = self
            .writable
            .iter()
            .map(|path| systemd_quote(&path.display().to_string()))
            .collect::<Vec<_>>()
            .join(" ");
        let user = match (&self.run_as, self.system) {
            (Some(user), true) => format!("User={user}\n"),
            _ => String::new(),
        };
        let wanted_by = if self.system {
            "multi-user.target"
        } else {
            "default.target"
        };
        format!(
            "# Written by `pincer service install`; `pincer service uninstall` removes it.
# Logs: {logs}. How it works: docs/operations.md in Pincer's sources.

[Unit]
Description=Pincer, a personal AI assistant (the gateway for {home})
After=network-online.target
Wants=network-online.target

[Service]
# `pincer run` tells systemd when it is ready (READY=1), that it lives (WATCHDOG=1)
# and that it is stopping (STOPPING=1).
Type=notify
NotifyAccess=main
ExecStart={exec}
{user}Restart=on-failure
RestartSec=5s
WatchdogSec={WATCHDOG_SECS}s
# SIGTERM to the gateway alone: running turns get their grace period, and the
# gateway ends the commands it started itself.
KillMode=mixed
TimeoutStopSec=30s
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths={writable}
PrivateTmp=yes
MemoryMax={memory_max}
# The sandbox gives each command a cgroup of its own (its memory and processes).
Delegate=memory pids

[Install]
WantedBy={wanted_by}
",
            logs = logs_command(self.system),
            home = self.home.display(),
            memory_max = self.memory_max,
        )
    }
}

/// How to follow the gateway's log.
pub(crate) fn logs_command(system: bool) -> &'static str {
    if system {
        "journalctl -u pincer -f"
    } else {
        "journalctl --user -u pincer -f"
    }
}

/// One word of a unit file's command line or path list: quoted when it holds
/// anything but plain characters; `%` (specifiers) and `$` (variables) doubled, as
/// systemd reads them.
pub(crate) fn systemd_quote(word: &str) -> String {
    let escaped = word.replace('%', "%%").replace('$', "$$");
    let plain = !escaped.is_empty()
        && escaped
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,=@%$".contains(c));
    if plain {
        return escaped;
    }
    let mut quoted = String::from('"');
    for c in escaped.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            '\n' => quoted.push_str("\\n"),
            _ => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// A command line for a POSIX shell, to print for the user to copy.
pub(crate) fn shell_line(args: &[String]) -> String {
    args.iter()
        .map(|arg| {
            let plain = !arg.is_empty()
                && arg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-+:,=@".contains(c));
            if plain {
                arg.clone()
            } else {
                format!("'{}'", arg.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `value` is something systemd takes as `MemoryMax=`: bytes with an
/// optional K, M, G or T, a percentage, or `infinity`.
pub(crate) fn valid_memory_max(value: &str) -> bool {
    if value == "infinity" {
        return true;
    }
    let digits = value
        .strip_suffix(['K', 'M', 'G', 'T', '%'])
        .unwrap_or(value);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit() -> Unit {
        Unit {
            exe: "/usr/local/bin/pincer".into(),
            home: "/home/ann/my pincer".into(),
            config: None,
            writable: vec!["/home/ann/my pincer".into()],
            memory_max: "1G".into(),
            system: false,
            run_as: None,
        }
    }

    #[test]
    fn words_with_spaces_quotes_and_specifiers_are_quoted_for_systemd() {
        assert_eq!(systemd_quote("/usr/bin/pincer"), "/usr/bin/pincer");
        assert_eq!(systemd_quote("/a b"), "\"/a b\"");
        assert_eq!(systemd_quote("/a\"b\\c"), "\"/a\\\"b\\\\c\"");
        assert_eq!(systemd_quote("/100%/$HOME"), "/100%%/$$HOME");
    }

    #[test]
    fn the_user_unit_runs_this_home_with_the_watchdog_and_the_hardening() {
        let text = unit().render();
        for line in [
            "Type=notify",
            "ExecStart=/usr/local/bin/pincer --home \"/home/ann/my pincer\" run",
            "WatchdogSec=30s",
            "Restart=on-failure",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "ReadWritePaths=\"/home/ann/my pincer\"",
            "PrivateTmp=yes",
            "MemoryMax=1G",
            "WantedBy=default.target",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
        }
        assert!(!text.contains("User="), "a user unit runs as its user");
    }

    #[test]
    fn a_system_unit_names_its_user_and_starts_at_boot() {
        let text = Unit {
            system: true,
            run_as: Some("pincer".into()),
            config: Some("/etc/pincer.toml".into()),
            ..unit()
        }
        .render();
        assert!(text.contains("\nUser=pincer\n"), "{text}");
        assert!(text.contains("WantedBy=multi-user.target"), "{text}");
        assert!(text.contains("--config /etc/pincer.toml run"), "{text}");
        assert!(text.contains("journalctl -u pincer -f"), "{text}");
    }

    #[test]
    fn memory_limits_are_what_systemd_reads() {
        for ok in ["1G", "512M", "2048", "50%", "infinity"] {
            assert!(valid_memory_max(ok), "{ok}");
        }
        for bad in ["", "1GB", "lots", "-1", "G"] {
            assert!(!valid_memory_max(bad), "{bad}");
        }
    }

    #[test]
    fn a_printed_command_line_survives_the_shell() {
        let line = shell_line(&["/opt/my bin/pincer".into(), "it's".into(), "run".into()]);
        assert_eq!(line, r"'/opt/my bin/pincer' 'it'\''s' run");
    }
}
