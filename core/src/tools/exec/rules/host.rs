//! Rules for the groups that guard the machine itself: `destructive`, `privilege`,
//! `persistence` and `system`.

use super::super::command::Invocation;
use super::super::deny::Ctx;
use super::super::paths;
use super::{first_match, written};

/// `rm -rf /`, `mkfs`, `dd of=/dev/sda`, `> /dev/sda`, `chmod -R 777 /`.
pub(super) fn destructive(ctx: &Ctx) -> Option<String> {
    let stage = ctx.stage();
    for inv in &stage.invocations {
        if let Some(reason) = destroys(inv, ctx.cd) {
            return Some(reason);
        }
    }
    let (path, _) = first_match(&written(stage), |p| paths::block_device(p).then_some(()))?;
    Some(format!("writes straight onto the disk device `{path}`"))
}

/// `cd`: the protected place the command is in, if any (`cd / && rm -rf *`).
fn destroys(inv: &Invocation, cd: Option<&str>) -> Option<String> {
    let ops = inv.operands();
    let protected = |skip_last: bool| {
        let end = if skip_last {
            ops.len().saturating_sub(1)
        } else {
            ops.len()
        };
        ops[..end].iter().find_map(|w| paths::protected(&w.text))
    };
    let program = inv.program;
    if program.starts_with("mkfs")
        || inv.is(&[
            "mke2fs",
            "mkswap",
            "mkntfs",
            "mkdosfs",
            "wipefs",
            "blkdiscard",
        ])
    {
        return Some("formats or wipes a disk".into());
    }
    match program {
        "rm" if inv.flag("", &["--no-preserve-root"]) => {
            Some("deletes the whole file system (`--no-preserve-root`)".into())
        }
        "rm" if inv.flag("rR", &["--recursive"]) => protected(false)
            .map(|what| format!("deletes {what}"))
            .or_else(|| {
                let here = ops.iter().any(|w| {
                    !w.text.starts_with(['/', '~', '$']) && paths::normalize(&w.text).is_empty()
                });
                cd.filter(|_| here)
                    .map(|what| format!("deletes everything in {what}"))
            }),
        "fdisk" | "sfdisk" | "cfdisk" | "parted" | "gdisk" | "sgdisk"
            if !inv.flag("l", &["--list"]) && ops.iter().any(|w| paths::block_device(&w.text)) =>
        {
            Some("rewrites a disk's partition table".into())
        }
        "shred" if ops.iter().any(|w| paths::block_device(&w.text)) => {
            Some("shreds a disk device".into())
        }
        "chmod" | "chown" | "chgrp" if inv.flag("R", &["--recursive"]) => protected(false)
            .map(|what| format!("changes the owner or permissions of everything in {what}")),
        "mv" => protected(true).map(|what| format!("moves {what} away")),
        "find" if deletes_found(inv) => protected(false).map(|what| format!("deletes {what}")),
        _ => None,
    }
}

/// `find … -delete`, `find … -exec rm …`.
fn deletes_found(inv: &Invocation) -> bool {
    inv.args.windows(2).any(|pair| {
        let runs = matches!(
            pair[0].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        );
        let deleter = matches!(
            pair[1].text.rsplit('/').next(),
            Some("rm" | "shred" | "unlink")
        );
        runs && deleter
    }) || inv.args.iter().any(|a| a.text == "-delete")
}

/// `sudo`, `su`, `doas`, setuid bits, `chown root`, editing /etc/sudoers.
pub(super) fn privilege(ctx: &Ctx) -> Option<String> {
    let stage = ctx.stage();
    for inv in &stage.invocations {
        let verb = inv.verb();
        let reason = match inv.program {
            "sudo" | "sudoedit" | "su" | "doas" | "pkexec" | "runuser" | "visudo" | "chroot" => {
                Some(format!("runs as another user (`{}`)", inv.program))
            }
            "setcap" => Some("grants a program root capabilities".into()),
            "chmod" if setuid(verb) => Some("sets the setuid or setgid bit".into()),
            "chown" | "chgrp" if root_owner(verb) => Some("hands files to root".into()),
            "usermod" | "useradd" | "userdel" | "adduser" | "deluser" | "gpasswd" | "groupadd"
            | "passwd" | "chpasswd" => Some("changes user accounts or groups".into()),
            "docker" | "podman" if docker_host_access(inv) => {
                Some("runs a container with full access to the host".into())
            }
            _ => None,
        };
        if reason.is_some() {
            return reason;
        }
    }
    let (path, _) = first_match(&written(stage), |p| paths::privilege_file(p).then_some(()))?;
    Some(format!("edits `{path}`, which decides who may become root"))
}

/// `u+s`, `g+s`, `+s`, `4755`, `2755`.
fn setuid(mode: &str) -> bool {
    let octal = mode.len() == 4 && mode.chars().all(|c| ('0'..='7').contains(&c));
    if octal {
        return mode.starts_with(['2', '3', '4', '5', '6', '7']);
    }
    mode.split(',').any(|part| {
        part.split_once(['+', '='])
            .is_some_and(|(_, perms)| perms.contains('s'))
    })
}

/// `root`, `0`, `root:root`, `:root`, `wheel`.
fn root_owner(owner: &str) -> bool {
    owner
        .split([':', '.'])
        .any(|name| matches!(name, "root" | "0" | "wheel" | "sudo" | "admin"))
}

fn docker_host_access(inv: &Invocation) -> bool {
    let mounts_root = inv
        .values(Some('v'), &["--volume", "--mount"])
        .iter()
        .any(|(v, _)| v.starts_with("/:") || v.contains("source=/,") || v.contains("src=/,"));
    mounts_root || inv.flag("", &["--privileged", "--pid=host"])
}

/// `crontab`, `at`, `systemctl enable`, shell start-up files, authorized_keys.
pub(super) fn persistence(ctx: &Ctx) -> Option<String> {
    let stage = ctx.stage();
    for inv in &stage.invocations {
        let verb = inv.verb();
        let reason = match inv.program {
            "crontab" if !inv.flag("l", &[]) => Some("changes scheduled jobs"),
            "at" | "batch" if !inv.flag("lcrd", &[]) => Some("schedules a command to run later"),
            "systemctl" if SERVICE_STARTS.contains(&verb) => Some("starts or enables a service"),
            "service" if service_action(inv).is_some_and(|a| SERVICE_STARTS.contains(&a)) => {
                Some("starts or enables a service")
            }
            "update-rc.d" | "chkconfig" | "rc-update" => Some("adds a service to start-up"),
            "launchctl" if matches!(verb, "load" | "bootstrap" | "enable" | "submit") => {
                Some("loads a launchd job")
            }
            _ => None,
        };
        if let Some(reason) = reason {
            return Some(reason.into());
        }
    }
    let (path, _) = first_match(&written(stage), |p| paths::startup(p).then_some(()))?;
    Some(format!(
        "changes `{path}`, which runs at log-in, start-up or on a schedule"
    ))
}

/// systemctl verbs that make a service run now or at boot.
const SERVICE_STARTS: &[&str] = &[
    "enable",
    "reenable",
    "start",
    "restart",
    "try-restart",
    "reload",
    "reload-or-restart",
    "link",
    "edit",
    "preset",
    "daemon-reload",
    "add-wants",
    "add-requires",
    "set-default",
    "revert",
    "unmask",
    "force-reload",
];

/// systemctl verbs that stop services or the machine.
const SERVICE_STOPS: &[&str] = &[
    "stop",
    "disable",
    "mask",
    "kill",
    "isolate",
    "reboot",
    "poweroff",
    "halt",
    "suspend",
    "hibernate",
    "hybrid-sleep",
    "kexec",
    "rescue",
    "emergency",
    "default",
];

/// `service NAME ACTION`.
fn service_action<'a>(inv: &Invocation<'a>) -> Option<&'a str> {
    inv.operands().get(1).map(|w| w.text.as_str())
}

/// `shutdown`, `reboot`, `kill -9 1`, `killall`, `mount`, `sysctl -w`, `iptables`.
pub(super) fn system(ctx: &Ctx) -> Option<String> {
    let stage = ctx.stage();
    for inv in &stage.invocations {
        if let Some(reason) = reconfigures(inv) {
            return Some(reason.into());
        }
    }
    let (path, _) = first_match(&written(stage), |p| paths::system_config(p).then_some(()))?;
    Some(format!("changes system configuration (`{path}`)"))
}

fn reconfigures(inv: &Invocation) -> Option<&'static str> {
    let verb = inv.verb();
    let has_operands = !inv.operands().is_empty();
    match inv.program {
        "shutdown" | "reboot" | "halt" | "poweroff" | "telinit" => {
            Some("shuts down or restarts the machine")
        }
        "init" if verb.chars().all(|c| c.is_ascii_digit()) => {
            Some("shuts down or restarts the machine")
        }
        "systemctl" if SERVICE_STOPS.contains(&verb) => Some("stops services or the machine"),
        "service" if service_action(inv).is_some_and(|a| a == "stop") => Some("stops a service"),
        "kill" if kills_everything(inv) => Some("kills init or every process"),
        "killall" | "killall5" | "pkill" => Some(
            "kills processes by name, including ones this assistant did not start (kill the PID instead)",
        ),
        "mount" | "umount" | "swapon" | "swapoff" if has_operands || inv.flag("a", &["--all"]) => {
            Some("mounts or unmounts file systems")
        }
        "sysctl" if inv.flag("wp", &["--write", "--load", "--system"]) || verb.contains('=') => {
            Some("changes kernel settings")
        }
        "iptables" | "ip6tables" => (!inv.flag("LS", &["--list", "--list-rules"])
            || inv.flag(
                "AIDRFXPNZE",
                &["--append", "--insert", "--delete", "--flush"],
            ))
        .then_some("changes the firewall"),
        "nft" if verb != "list" => Some("changes the firewall"),
        "ufw" if verb != "status" => Some("changes the firewall"),
        "modprobe" | "insmod" | "rmmod" => Some("loads or unloads kernel modules"),
        "hostnamectl" | "timedatectl" if verb.starts_with("set-") => {
            Some("changes system settings")
        }
        "date" if inv.flag("s", &["--set"]) => Some("sets the system clock"),
        "hwclock" if inv.flag("w", &["--systohc", "--set"]) => Some("sets the hardware clock"),
        _ => None,
    }
}

/// `kill 1`, `kill -9 1`, `kill -9 -1`, `kill -s KILL -1`.
fn kills_everything(inv: &Invocation) -> bool {
    let args: Vec<&str> = inv.args.iter().map(|a| a.text.as_str()).collect();
    let mut targets = &args[..];
    match targets.first() {
        Some(&("-s" | "-n")) => targets = targets.get(2..).unwrap_or_default(),
        Some(first) if first.starts_with('-') && *first != "--" => targets = &targets[1..],
        _ => {}
    }
    if targets.first() == Some(&"--") {
        targets = &targets[1..];
    }
    targets.iter().any(|t| matches!(*t, "1" | "-1"))
}
