//! # pincer-sandbox
//!
//! The sandbox every command Pincer runs on the model's behalf goes through: `exec`,
//! hooks, and stdio MCP servers. That is its one job; it knows no agent, store, model or
//! channel, and takes its settings (`[tools] sandbox`, `[tools.exec.limits]`) as typed
//! values from `pincer-config`.
//!
//! Both kinds give one property: everything outside `$PINCER_HOME` stays readable (the
//! user's tools keep working), the workspace and a private temp dir are the only places
//! written, nothing else of `$PINCER_HOME` can be read (secrets, database, config, lock),
//! the gateway can be neither seen in `/proc` nor signalled, and every process a call
//! started ends with it.
//!
//! Every call also gets resource limits (`[tools.exec.limits]`): rlimits on each process,
//! a count of its processes and threads, and a cgroup for its memory in total where one
//! can be made.
//!
//! ## Layout
//! - `lib.rs`   — `Sandbox` (the kind chosen once at start), `Jail` (a sandbox and what it
//!   confines to), `Confinement`, `SandboxError`
//! - `bwrap`    — bubblewrap: `/` read-only, the home under a tmpfs, new PID/IPC/UTS
//!   (and, with `network = false`, network) namespaces, the system's sockets hidden
//! - `landlock` — Landlock (Linux 5.13+), built in: the read set, the ruleset
//! - `launcher` — `pincer __sandbox …`: the launcher around either sandbox (a child
//!   subreaper that counts the call's processes and kills the whole tree) and the steps
//!   that restrict themselves, set the limits and exec
//! - `limits`   — the rlimits, and which limit a call ran into
//! - `tree`     — the processes under the launcher, from `/proc` (the web panel's peer
//!   check reads it too)
//! - `cgroup`   — a cgroup v2 per call, where the gateway's user can make one
//! - `protect`  — the prompt's own files, put back if a call changed them
//!
//! `auto` picks bwrap, else landlock, else refuses to run commands, naming both fixes.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod bwrap;
pub mod cgroup;
mod landlock;
pub mod launcher;
pub mod limits;
mod protect;
pub mod tree;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use pincer_config::{ExecLimits, SandboxMode as Mode};
use serde::{Deserialize, Serialize};

pub use protect::{Protected, bracket, note as put_back_note};

/// What a sandboxed command may touch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Read and written.
    pub workspace: PathBuf,
    /// `$PINCER_HOME`: nothing of it readable but the workspace.
    pub hidden: PathBuf,
    /// Whether the command may use the network.
    pub network: bool,
    /// Files and folders in the workspace the command may read but not change (the
    /// prompt's own files); bwrap mounts them read-only, landlock restores them after.
    pub read_only: Vec<PathBuf>,
    /// `[tools.exec.limits]`.
    #[serde(default)]
    pub limits: ExecLimits,
    /// Where each call gets a cgroup of its own; `None`: rlimits alone.
    #[serde(default)]
    pub cgroup: Option<cgroup::Plan>,
    /// A folder of the process's own, read and written, where it starts (an MCP
    /// server's working folder under `$PINCER_HOME`); `None`: it starts in the workspace.
    #[serde(default)]
    pub own: Option<PathBuf>,
}

/// The sandbox in use, chosen once at start.
#[derive(Debug, Clone)]
pub enum Sandbox {
    Bwrap {
        program: PathBuf,
        /// Whether this bubblewrap can size a tmpfs (0.6+).
        sized: bool,
    },
    Landlock {
        launcher: PathBuf,
    },
    /// `sandbox = "off"`: commands run as the gateway's user, unconfined.
    Off,
    /// `auto` found neither: commands are refused with this reason.
    Missing(String),
}

/// Why a command cannot run in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(pub String);

const BOTH_FIXES: &str = "install bubblewrap (`apt-get install bubblewrap`, or your distribution's package) or run on Linux 5.13+ with Landlock enabled; or set [tools.exec] sandbox = \"off\" in config.toml, knowingly (commands then run unconfined and can read your secrets)";

impl Sandbox {
    /// Pick the sandbox for `mode`. One that is missing — asked for by name, or neither
    /// for `auto` — is `Missing`: commands are refused with the fix.
    pub fn detect(mode: Mode) -> Sandbox {
        let landlock = || {
            landlock::available()?;
            Ok::<_, SandboxError>(Sandbox::Landlock {
                launcher: launcher::program()?,
            })
        };
        match mode {
            Mode::Off => Sandbox::Off,
            Mode::Bwrap => match bwrap::find() {
                Ok((program, sized)) => Sandbox::Bwrap { program, sized },
                Err(why) => Sandbox::Missing(format!(
                    "[tools.exec] sandbox = \"bwrap\", but {why}; install bubblewrap, or set sandbox = \"auto\" to use Landlock"
                )),
            },
            Mode::Landlock => landlock().unwrap_or_else(|why| {
                Sandbox::Missing(format!(
                    "[tools.exec] sandbox = \"landlock\", but {why}; set sandbox = \"auto\" to use bubblewrap"
                ))
            }),
            Mode::Auto => match bwrap::find() {
                Ok((program, sized)) => Sandbox::Bwrap { program, sized },
                Err(no_bwrap) => landlock().unwrap_or_else(|no_landlock| {
                    Sandbox::Missing(format!(
                        "no sandbox is available ({no_bwrap}; {no_landlock}), so commands are not run: {BOTH_FIXES}"
                    ))
                }),
            },
        }
    }

    /// "bwrap", "landlock", "off" or "none".
    pub fn name(&self) -> &'static str {
        match self {
            Sandbox::Bwrap { .. } => "bwrap",
            Sandbox::Landlock { .. } => "landlock",
            Sandbox::Off => "off",
            Sandbox::Missing(_) => "none",
        }
    }

    /// What the sandbox hides, in a line for `pincer doctor` and `pincer status`.
    pub fn describe(&self) -> String {
        match self {
            Sandbox::Bwrap { program, .. } => format!(
                "bwrap ({}): $PINCER_HOME hidden but for the workspace, / read-only, private /tmp, own PID/IPC/UTS namespaces (the gateway is invisible), every process ends with its call",
                program.display()
            ),
            Sandbox::Landlock { .. } => "landlock: $PINCER_HOME unreadable but for the workspace, writes only to the workspace and a private temp dir, no signals or /proc access to the gateway, every process ends with its call".into(),
            Sandbox::Off => "off: commands run unconfined as your user and can read $PINCER_HOME, its secrets included".into(),
            Sandbox::Missing(why) => why.clone(),
        }
    }

    /// A command running `program args` inside the sandbox (or the refusal). The caller
    /// sets the environment, stdio and working directory as for an unconfined command.
    pub fn command(
        &self,
        confinement: &Confinement,
        program: &str,
        args: &[OsString],
    ) -> Result<tokio::process::Command, SandboxError> {
        match self {
            Sandbox::Off => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                Ok(cmd)
            }
            Sandbox::Missing(why) => Err(SandboxError(why.clone())),
            Sandbox::Bwrap {
                program: bwrap,
                sized,
            } => {
                // The launcher watches bwrap from outside; inside, the pincer binary,
                // mounted in, sets the Landlock rules and limits and runs the command.
                let pincer = launcher::program()?;
                let spec = spec(confinement)?;
                let mut cmd = tokio::process::Command::new(&pincer);
                cmd.arg(launcher::ARG)
                    .arg(launcher::WATCH)
                    .arg(&spec)
                    .arg("--")
                    .arg(bwrap)
                    .args(bwrap::args(confinement, *sized))
                    .arg("--ro-bind")
                    .arg(&pincer)
                    .arg(bwrap::PINCER_INSIDE)
                    .arg("--")
                    .arg(bwrap::PINCER_INSIDE)
                    .arg(launcher::ARG)
                    .arg(launcher::INSIDE)
                    .arg(&spec)
                    .arg("--")
                    .arg(program)
                    .args(args);
                Ok(cmd)
            }
            Sandbox::Landlock { launcher } => {
                let spec = spec(confinement)?;
                let mut cmd = tokio::process::Command::new(launcher);
                cmd.arg(launcher::ARG)
                    .arg(launcher::LAUNCH)
                    .arg(spec)
                    .arg("--")
                    .arg(program)
                    .args(args);
                Ok(cmd)
            }
        }
    }

    /// Whether calls run confined (doctor warns when not).
    pub fn confines(&self) -> bool {
        matches!(self, Sandbox::Bwrap { .. } | Sandbox::Landlock { .. })
    }
}

/// `confinement` as the launcher's steps read it.
fn spec(confinement: &Confinement) -> Result<String, SandboxError> {
    serde_json::to_string(confinement)
        .map_err(|e| SandboxError(format!("cannot describe the sandbox: {e}")))
}

/// Where calls get a cgroup, in a line for `pincer doctor` and `pincer status` (as this
/// process finds it: the gateway decides for itself at its first call, and logs it).
pub fn cgroup_line() -> String {
    match cgroup::probe() {
        Ok(dir) => format!(
            "each command also gets a cgroup v2 of its own under {} (memory.max = memory_mb for the whole command, pids.max = processes)",
            dir.display()
        ),
        Err(why) => format!(
            "rlimits only, no cgroup: {why}; memory_mb then caps each process, not the command as a whole"
        ),
    }
}

/// A sandbox and what it confines commands to: what exec, hooks and MCP servers hold.
/// The sandbox is chosen on first use (finding bubblewrap runs it once), so commands
/// that never run a tool pay nothing for it.
#[derive(Debug, Clone)]
pub struct Jail {
    mode: Mode,
    chosen: std::sync::Arc<std::sync::OnceLock<Sandbox>>,
    /// Where calls get their cgroups, found (and set up) at the first call.
    cgroup: std::sync::Arc<std::sync::OnceLock<Option<cgroup::Plan>>>,
    confinement: Confinement,
}

impl Jail {
    pub fn new(mode: Mode, confinement: Confinement) -> Jail {
        Jail {
            mode,
            chosen: std::sync::Arc::default(),
            cgroup: std::sync::Arc::default(),
            confinement,
        }
    }

    /// The same jail (sharing its choice of sandbox) for a process that starts in, and
    /// may write, a folder of its own (`dir`, made beforehand) besides the workspace.
    pub fn with_own_folder(&self, dir: &Path) -> Jail {
        let mut jail = self.clone();
        jail.confinement.own = Some(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()));
        jail
    }

    /// The same jail (sharing its choice of sandbox) with the network on or off.
    pub fn with_network(&self, network: bool) -> Jail {
        let mut jail = self.clone();
        jail.confinement.network = network;
        jail
    }

    /// The sandbox in use, chosen now if it was not yet.
    pub fn sandbox(&self) -> &Sandbox {
        self.chosen.get_or_init(|| {
            let sandbox = Sandbox::detect(self.mode);
            tracing::info!(sandbox = sandbox.name(), "{}", sandbox.describe());
            sandbox
        })
    }

    /// Why `path` (a program or a file a command is given) is not there inside this
    /// jail, if it is not: under bwrap's private `/tmp`, inside the hidden
    /// `$PINCER_HOME`, or in a place hidden with the network off.
    pub fn unseen(&self, path: &Path) -> Option<String> {
        let c = &self.confinement;
        let shown = |dir: &Path| path.starts_with(dir);
        let bwrap = matches!(self.sandbox(), Sandbox::Bwrap { .. });
        if !self.sandbox().confines() {
            return None;
        }
        if shown(&c.hidden) && !shown(&c.workspace) && !c.own.as_deref().is_some_and(shown) {
            return Some("is inside $PINCER_HOME, which the sandbox hides".into());
        }
        if bwrap && path.starts_with("/tmp") {
            return Some("is under /tmp, which is private (and empty) inside the sandbox".into());
        }
        if bwrap && !c.network && (path.starts_with("/run") || path.starts_with("/var/run")) {
            return Some(
                "is under /run, which the sandbox hides with [tools.exec] network = false".into(),
            );
        }
        None
    }

    /// The home's command lock: held by every sandboxed call from its snapshot of the
    /// protected files to their put-back (`protect::bracket`), so calls never overlap.
    pub fn command_lock(&self) -> PathBuf {
        self.confinement.hidden.join("state").join("commands.lock")
    }

    /// `program args` inside the jail.
    pub fn command(
        &self,
        program: &str,
        args: &[OsString],
    ) -> Result<tokio::process::Command, SandboxError> {
        let sandbox = self.sandbox();
        if !sandbox.confines() {
            return sandbox.command(&self.confinement, program, args);
        }
        let plan = self.cgroup.get_or_init(|| match cgroup::prepare() {
            Ok(plan) => {
                tracing::info!(cgroup = %plan.base.display(), "each sandboxed command gets a cgroup v2 of its own (memory.max, pids.max)");
                Some(plan)
            }
            Err(why) => {
                tracing::info!("sandboxed commands get rlimits only, no cgroup: {why}");
                None
            }
        });
        let mut confinement = self.confinement.clone();
        confinement.cgroup = plan.clone();
        sandbox.command(&confinement, program, args)
    }
}

/// `command` as a path, or looked up on PATH like the shell would.
pub fn find_program(command: &str) -> Option<PathBuf> {
    let is_program = |path: &Path| {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let path = Path::new(command).to_path_buf();
        return is_program(&path).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(command))
        .find(|path| is_program(path))
}

/// The confinement for commands in `workspace`, with `$PINCER_HOME` = `home`.
pub fn confinement(
    home: &Path,
    workspace: &Path,
    network: bool,
    limits: ExecLimits,
) -> Confinement {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let workspace = canonical(workspace);
    Confinement {
        read_only: protect::PROMPT_FILES
            .iter()
            .map(|name| workspace.join(name))
            .collect(),
        hidden: canonical(home),
        workspace,
        network,
        limits,
        cgroup: None,
        own: None,
    }
}

#[cfg(test)]
mod tests;
