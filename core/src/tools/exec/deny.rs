//! The deny groups of `exec`: their names, what each refuses, and `check`, which parses
//! a command and runs every switched-on group over every segment, nested commands
//! included. Anything that cannot be parsed is refused while any group is on. The same
//! walk gives `runs`: every program a command runs, for the owner's permission rules.
//!
//! This is a tripwire against obvious mistakes and prompt-injected commands, not a
//! sandbox: a script file the command runs is not read, and a determined author can
//! always write something the groups do not recognise.

use std::fmt;

use super::command::{self, Stage};
use super::parse::{self, Unparsable};
use super::paths;
use super::rules;

/// Every deny group: name and one line on what it refuses. All are on by default.
pub const GROUPS: &[(&str, &str)] = &[
    (
        "destructive",
        "deleting or overwriting the whole file system, a home or system directory, or a disk: `rm -rf /`, `mkfs`, `dd of=/dev/sda`",
    ),
    (
        "exfiltration",
        "sending files or command output to another host: `curl -d @file`, `curl -T`, `scp`/`rsync` to a remote, `nc host < file`",
    ),
    (
        "reverse_shell",
        "handing a shell to a remote host: `/dev/tcp/…`, `nc -e`, `socat … exec:`, socket-and-shell one-liners",
    ),
    (
        "remote_script",
        "running a downloaded script unseen: `curl … | sh`",
    ),
    (
        "privilege",
        "becoming root or another user: `sudo`, `su`, `doas`, setuid bits, `chown root`, editing /etc/sudoers",
    ),
    (
        "packages",
        "installing or removing system-wide packages: `apt install`, `brew install`, `pip install`, `npm install -g`, `cargo install`",
    ),
    (
        "persistence",
        "making something run later or at start-up: `crontab`, `at`, `systemctl enable`, shell start-up files, authorized_keys",
    ),
    (
        "env_dump",
        "printing the environment or secret-looking variables: `env`, `printenv`, `set`, `/proc/*/environ`, `echo $API_KEY`",
    ),
    (
        "secrets_read",
        "touching credential files: `~/.ssh`, `.security.yml`, `/etc/shadow`, `~/.aws/credentials`, `~/.netrc`",
    ),
    (
        "system",
        "stopping or reconfiguring the machine: `shutdown`, `reboot`, `kill -9 1`, `killall`, `mount`, `sysctl -w`, `iptables`, `modprobe`",
    ),
    (
        "network_listen",
        "opening a port or a tunnel: `nc -l`, `python -m http.server`, `ssh -R`/`-L`, `ngrok`",
    ),
    (
        "mining",
        "running a cryptocurrency miner: `xmrig`, `stratum+tcp://` pools",
    ),
];

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// A switched-on group matched one segment.
    Group {
        group: &'static str,
        /// The segment as written.
        segment: String,
        /// What the segment would do, as a verb phrase ("deletes the whole file system").
        reason: String,
    },
    /// The command could not be parsed, so it could not be checked.
    Unparsable { reason: String },
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Group {
                group,
                segment,
                reason,
            } => write!(
                f,
                "refused by the `{group}` deny group: `{segment}` {reason} (switch the group off in [tools.exec] deny_groups if you really mean it)"
            ),
            Self::Unparsable { reason } => write!(
                f,
                "refused: the command cannot be checked for dangerous operations ({reason}); simplify the command (no heredocs, eval, or programs named by variables) or split it into several calls"
            ),
        }
    }
}

impl std::error::Error for Denied {}

/// One segment being checked, with the rest of its pipeline.
pub(super) struct Ctx<'s, 'a> {
    pub stages: &'s [Stage<'a>],
    pub at: usize,
    /// The protected place an earlier `cd` moved into ("the whole file system").
    pub cd: Option<&'s str>,
}

impl<'a> Ctx<'_, 'a> {
    pub(super) fn stage(&self) -> &Stage<'a> {
        &self.stages[self.at]
    }

    /// Whether this segment reads the output of the one before it (`a | this`).
    pub(super) fn piped_in(&self) -> bool {
        self.at > 0
    }
}

/// Check `command` against the groups `denies` switches on.
pub fn check(command: &str, denies: &dyn Fn(&str) -> bool) -> Result<(), Denied> {
    let on: Vec<&str> = GROUPS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| denies(name))
        .collect();
    if on.is_empty() {
        return Ok(());
    }
    walk(command, 0, &mut |ctx| {
        for &(group, rule) in rules::RULES {
            if !on.contains(&group) {
                continue;
            }
            if let Some(reason) = rule(ctx) {
                return Err(Denied::Group {
                    group,
                    segment: ctx.stage().seg.text.clone(),
                    reason,
                });
            }
        }
        Ok(())
    })
}

/// One program a command runs, for the owner's permission rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The ways it is written (`/usr/bin/git push` and `git push`): an allow rule must
    /// cover one of these.
    pub written: Vec<String>,
    /// How it will run, when that reads otherwise (`git -C x push` runs `git push`):
    /// deny and ask rules match this too, allow rules do not (`git -c core.pager=… log`
    /// is not the `git log` an allow rule had in mind).
    pub runs_as: Option<String>,
}

/// Every program `command` runs, for the owner's permission rules: one entry per
/// invocation, wrappers (`sudo`, `env`, `xargs`), `sh -c` strings, substitutions and
/// piped scripts included. The result says why the rest could not be followed (also
/// when `xargs` supplies git's command from its input); what was found is kept.
pub(super) fn programs(command: &str) -> (Vec<Run>, Result<(), Denied>) {
    let mut found = Vec::new();
    let mut fed = None;
    let followed = walk(command, 0, &mut |ctx| {
        let stage = ctx.stage();
        for invocation in &stage.invocations {
            let line = |program: &str| {
                std::iter::once(program)
                    .chain(invocation.args.iter().map(|w| w.text.as_str()))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let mut written = vec![line(invocation.path)];
            if invocation.program != invocation.path {
                written.push(line(invocation.program));
            }
            found.push(Run {
                written,
                runs_as: invocation.as_run(),
            });
            if fed.is_none() {
                fed = invocation.fed_by(stage);
            }
        }
        Ok(())
    });
    let followed = followed.and(match fed {
        Some(reason) => Err(Denied::Unparsable { reason }),
        None => Ok(()),
    });
    (found, followed)
}

/// [`programs`] as the ways each is written.
pub(super) fn runs(command: &str) -> (Vec<Vec<String>>, Result<(), Denied>) {
    let (found, followed) = programs(command);
    (found.into_iter().map(|run| run.written).collect(), followed)
}

impl super::ExecTool {
    /// Every program an exec call of `command` runs (see [`runs`]), so permission rules
    /// match what really runs, not only the text as a whole.
    pub fn runs(command: &str) -> (Vec<Vec<String>>, Result<(), Denied>) {
        runs(command)
    }

    /// Every program an exec call of `command` runs, as written and as it will run
    /// (see [`programs`]).
    pub fn programs(command: &str) -> (Vec<Run>, Result<(), Denied>) {
        programs(command)
    }
}

fn unparsable(err: Unparsable) -> Denied {
    Denied::Unparsable { reason: err.0 }
}

/// Hand `visit` every segment of `command`, `depth` levels down, and of every command
/// nested in it: `sh -c` strings, scripts piped into a shell, and string literals of
/// inline code that parse as commands. Stops at the first error.
fn walk(
    command: &str,
    depth: usize,
    visit: &mut dyn FnMut(&Ctx) -> Result<(), Denied>,
) -> Result<(), Denied> {
    let pipelines = parse::parse(command, depth).map_err(unparsable)?;
    let mut cd: Option<String> = None;
    for pipeline in &pipelines {
        let stages = pipeline
            .iter()
            .map(command::stage)
            .collect::<Result<Vec<_>, _>>()
            .map_err(unparsable)?;
        for at in 0..stages.len() {
            let ctx = Ctx {
                stages: &stages,
                at,
                cd: cd.as_deref(),
            };
            visit(&ctx)?;
            let piped = piped_script(&ctx).map_err(unparsable)?;
            for nested in stages[at].nested.iter().chain(&piped) {
                walk(nested, depth + 1, visit)?;
            }
            for literal in &stages[at].embedded {
                match walk(literal, depth + 1, visit) {
                    Err(denied @ Denied::Group { .. }) => return Err(denied),
                    // Most literals in code are not commands.
                    Ok(()) | Err(Denied::Unparsable { .. }) => {}
                }
            }
        }
        if let Some(moved) = moved_into(&stages) {
            cd = moved;
        }
    }
    Ok(())
}

/// After `cd DIR`: the protected place DIR is, or None for any other place.
fn moved_into(stages: &[Stage]) -> Option<Option<String>> {
    let cd = stages
        .iter()
        .flat_map(|s| &s.invocations)
        .find(|inv| inv.is(&["cd", "pushd"]))?;
    let target = cd.operands().first().map_or("~", |w| w.text.as_str());
    Some(paths::protected(target))
}

/// What a shell reading commands from a pipe will run: the text of `echo 'cmd' | sh`
/// (checked like any command). A file (`cat run.sh | sh`) is like `sh run.sh`, and a
/// download is the `remote_script` group's; any other source cannot be checked.
fn piped_script(ctx: &Ctx) -> Result<Option<String>, Unparsable> {
    let reads = ctx
        .stage()
        .invocations
        .iter()
        .any(|inv| inv.reads_script_from_stdin());
    let Some(before) = ctx.at.checked_sub(1).map(|i| &ctx.stages[i]) else {
        return Ok(None);
    };
    if !reads {
        return Ok(None);
    }
    let Some(source) = before.invocations.last() else {
        return Err(Unparsable("a shell runs commands read from a pipe".into()));
    };
    let mut args: Vec<&str> = source.args.iter().map(|w| w.text.as_str()).collect();
    match source.program {
        "echo" => {
            let options = args
                .iter()
                .take_while(|a| matches!(**a, "-n" | "-e" | "-E" | "-ne" | "-en"));
            let skip = options.count();
            args.drain(..skip);
            Ok(Some(args.join(" ").replace("\\n", "\n")))
        }
        "printf" => Ok(Some(args.join(" ").replace("\\n", "\n"))),
        "cat" | "curl" | "wget" | "fetch" => Ok(None),
        other => Err(Unparsable(format!(
            "a shell runs commands piped from `{other}`"
        ))),
    }
}
