//! `pincer __sandbox …`: the steps of a sandboxed call, run as the pincer binary itself
//! so no unsafe code is needed.
//!
//! 1. `launch` (outside the sandbox, Landlock) or `watch` (outside, around bubblewrap):
//!    becomes a child subreaper and gets SIGTERM if the gateway dies, moves into the
//!    call's cgroup where there is one (`cgroup`), starts the sandbox — for Landlock a
//!    private temp dir and step 2, for bubblewrap the `bwrap` command line it was given —
//!    and waits for it, counting its processes and threads as it runs (`tree`): a call
//!    that reaches `[tools.exec.limits] processes` is ended. On SIGTERM too (the
//!    gateway's timeout or a stopped turn) it kills every process left under it (also
//!    those that called `setsid`: as orphans they come back to the subreaper), removes
//!    the temp dir and the cgroup, says on stderr which limit the call ran into, if it
//!    can tell, and exits with the command's status.
//! 2. `inner` (Landlock: becomes the sandbox) restricts itself with Landlock, or
//!    `inside` (run by bubblewrap inside its namespaces) refuses listening ports with the
//!    network on and pathname sockets outside the workspace with it off (Landlock, where
//!    the kernel can); both then set the rlimits (`limits`) and exec the command. The
//!    sandbox cannot signal the launcher (Landlock's signal scope; bubblewrap's PID
//!    namespace), so it cannot kill its way out of the cleanup.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use rustix::process::Signal;

use super::cgroup::CallGroup;
use super::limits::Hit;
use super::{Confinement, SandboxError, tree};

/// The first argument that makes `pincer` a sandbox step.
pub const ARG: &str = "__sandbox";
/// Step 1 for Landlock.
pub const LAUNCH: &str = "launch";
/// Step 1 for bubblewrap.
pub const WATCH: &str = "watch";
/// Step 2 for Landlock.
const INNER: &str = "inner";
/// Step 2 inside bubblewrap.
pub const INSIDE: &str = "inside";

/// How often the launcher counts the call's processes: a fork bomb grows by a few
/// hundred in this time on a small machine, well within what the machine can take.
const COUNT_EVERY: Duration = Duration::from_millis(20);

/// This program, to run the steps: the pincer binary.
pub fn program() -> Result<PathBuf, SandboxError> {
    std::env::current_exe().map_err(|e| {
        SandboxError(format!(
            "cannot find the pincer binary to launch the sandbox: {e}"
        ))
    })
}

/// If this process was started as a sandbox step, run it and return its exit code.
/// Called first thing in `main`, before anything else starts.
pub fn entry() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != ARG {
        return None;
    }
    let step = args.next().unwrap_or_default();
    let rest: Vec<OsString> = args.collect();
    let result = match step.to_str() {
        Some(LAUNCH) => launch(&rest),
        Some(WATCH) => watch(&rest),
        Some(INNER) => inner(&rest),
        Some(INSIDE) => inside(&rest),
        _ => Err(SandboxError("unknown sandbox step".into())),
    };
    Some(result.unwrap_or_else(|err| {
        eprintln!("pincer sandbox: {err}");
        ExitCode::from(126)
    }))
}

/// `<spec json> [<tmp>] -- <program> <args…>`
fn parse(
    args: &[OsString],
    with_tmp: bool,
) -> Result<(Confinement, Option<PathBuf>, &[OsString]), SandboxError> {
    let bad = || SandboxError("malformed sandbox arguments".into());
    let spec = args.first().and_then(|s| s.to_str()).ok_or_else(bad)?;
    let confinement: Confinement = serde_json::from_str(spec).map_err(|_| bad())?;
    let (tmp, rest) = if with_tmp {
        (
            Some(PathBuf::from(args.get(1).ok_or_else(bad)?)),
            &args[2..],
        )
    } else {
        (None, &args[1..])
    };
    match rest.split_first() {
        Some((dashes, command)) if dashes == "--" && !command.is_empty() => {
            Ok((confinement, tmp, command))
        }
        _ => Err(bad()),
    }
}

fn launch(args: &[OsString]) -> Result<ExitCode, SandboxError> {
    let (confinement, _, command) = parse(args, false)?;
    let fail = |what: &str, e: std::io::Error| SandboxError(format!("{what}: {e}"));
    let mut inner = tokio::process::Command::new(program()?.as_path());
    let tmp = private_tmp().map_err(|e| fail("cannot make the private temp dir", e))?;
    inner
        .arg(ARG)
        .arg(INNER)
        .args(&args[..1])
        .arg(&tmp)
        .arg("--")
        .args(command)
        // Caches go to the private temp dir (see bwrap's CACHES for why).
        .env("TMPDIR", &tmp)
        .env("XDG_CACHE_HOME", tmp.join(".cache"))
        .env("npm_config_cache", tmp.join(".npm"));
    let status = supervise(&confinement, inner);
    // Best effort: a leftover temp dir holds only the call's own scratch files.
    let _ = std::fs::remove_dir_all(&tmp);
    status
}

/// `<spec json> -- bwrap <its arguments…>`: step 1 around bubblewrap.
fn watch(args: &[OsString]) -> Result<ExitCode, SandboxError> {
    let (confinement, _, command) = parse(args, false)?;
    let mut bwrap = tokio::process::Command::new(&command[0]);
    bwrap.args(&command[1..]);
    supervise(&confinement, bwrap)
}

/// Run `sandbox` (which starts the command) under this process, as step 1 describes.
fn supervise(
    confinement: &Confinement,
    mut sandbox: tokio::process::Command,
) -> Result<ExitCode, SandboxError> {
    let fail = |what: &str, e: std::io::Error| SandboxError(format!("{what}: {e}"));
    rustix::process::set_parent_process_death_signal(Some(Signal::TERM))
        .map_err(|e| fail("cannot follow the gateway", e.into()))?;
    let me = rustix::process::getpid();
    rustix::process::set_child_subreaper(Some(me))
        .map_err(|e| fail("cannot become a subreaper", e.into()))?;
    let limits = confinement.limits;
    // No cgroup (none can be made here, or this one failed): rlimits alone hold.
    let group = confinement
        .cgroup
        .as_ref()
        .and_then(|plan| CallGroup::enter(plan, &limits, &random_hex().ok()?).ok());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail("cannot start", e))?;
    let mut hit = None;
    let status = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut child = sandbox.spawn()?;
        let mut count = tokio::time::interval(COUNT_EVERY);
        loop {
            tokio::select! {
                status = child.wait() => return status.map(Some),
                _ = term.recv() => return Ok(None),
                _ = count.tick(), if limits.processes > 0 => {
                    tree::reap_orphans(child.id());
                    if tree::count_tasks(me) as u64 >= limits.processes {
                        hit = Some(Hit::Processes);
                        return Ok(None);
                    }
                }
            }
        }
    });
    tree::kill_tree();
    if let Some(group) = group {
        hit = hit.or_else(|| group.hit());
        group.leave();
    }
    let code = match status {
        Ok(Some(status)) => status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(1),
        Ok(None) if hit.is_some() => 128 + 9,
        Ok(None) => 128 + 15,
        Err(err) => return Err(fail("cannot run the command", err)),
    };
    if let Some(hit) = hit.or_else(|| Hit::from_exit(&limits, code)) {
        // The command's stderr: the model (or the server's log) reads it.
        eprintln!("pincer sandbox: {}", hit.describe(&limits));
    }
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

impl From<SandboxError> for std::io::Error {
    fn from(err: SandboxError) -> Self {
        std::io::Error::other(err.0)
    }
}

fn inner(args: &[OsString]) -> Result<ExitCode, SandboxError> {
    let (confinement, tmp, command) = parse(args, true)?;
    let tmp = tmp.ok_or_else(|| SandboxError("malformed sandbox arguments".into()))?;
    super::landlock::restrict(&confinement, &tmp)?;
    super::limits::apply(&confinement.limits, false)?;
    Err(exec(command))
}

/// Become `command`; what comes back is why it could not run.
fn exec(command: &[OsString]) -> SandboxError {
    let err = std::process::Command::new(&command[0])
        .args(&command[1..])
        .exec();
    SandboxError(format!(
        "cannot run {}: {err}",
        Path::new(&command[0]).display()
    ))
}

/// `<spec json> -- <program> <args…>`, inside bubblewrap: with the network on no
/// listening TCP port and no abstract socket outside, with it off no pathname socket
/// outside the workspace and `/tmp` (both through Landlock, as far as the kernel has
/// it), then the limits, then the command.
fn inside(args: &[OsString]) -> Result<ExitCode, SandboxError> {
    let (confinement, _, command) = parse(args, false)?;
    // A kernel without these Landlock features cannot refuse them; the command still
    // runs confined by bubblewrap (docs/tools.md: what the sandbox does not cover).
    let _ = if confinement.network {
        super::landlock::no_tcp_bind()
    } else {
        super::landlock::unix_sockets_only_in(&[&confinement.workspace, Path::new("/tmp")])
    };
    if !confinement.network {
        super::landlock::no_foreign_sockets()?;
    }
    super::limits::apply(&confinement.limits, super::limits::in_child_userns())?;
    Err(exec(command))
}

/// A random name: 16 hex digits.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A fresh 0700 directory for the call's temporary files.
fn private_tmp() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let name = random_hex()?;
    let dir = std::env::temp_dir().join(format!("pincer-sandbox-{name}"));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
