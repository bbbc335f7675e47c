//! `pincer __sandbox …`: the two steps of a landlock-sandboxed call, run as the pincer
//! binary itself so no unsafe code is needed.
//!
//! 1. `launch` (outside the sandbox): becomes a child subreaper and gets SIGTERM if the
//!    gateway dies, makes the call's private temp dir, starts step 2, waits for it —
//!    or for SIGTERM, which the gateway sends on a timeout or a stopped turn — and then
//!    kills every process left under it (also those that called `setsid`: as orphans
//!    they come back to the subreaper), removes the temp dir and exits with the
//!    command's status.
//! 2. `inner` (becomes the sandbox): restricts itself with Landlock and execs the
//!    command. The sandbox cannot signal the launcher (Landlock's signal scope), so it
//!    cannot kill its way out of the cleanup.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rustix::process::{Pid, Signal, WaitOptions};

use super::{Confinement, SandboxError};

/// The first argument that makes `pincer` a sandbox step.
pub const ARG: &str = "__sandbox";
/// Step 1.
pub const LAUNCH: &str = "launch";
/// Step 2.
const INNER: &str = "inner";
/// Inside bubblewrap with the network on: refuse TCP binds, then exec the command.
pub const NO_LISTEN: &str = "no-listen";

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
        Some(INNER) => inner(&rest),
        Some(NO_LISTEN) => no_listen(&rest),
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
    let (_, _, command) = parse(args, false)?;
    let fail = |what: &str, e: std::io::Error| SandboxError(format!("{what}: {e}"));
    rustix::process::set_parent_process_death_signal(Some(Signal::TERM))
        .map_err(|e| fail("cannot follow the gateway", e.into()))?;
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| fail("cannot become a subreaper", e.into()))?;
    let tmp = private_tmp().map_err(|e| fail("cannot make the private temp dir", e))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail("cannot start", e))?;
    let status = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut child = tokio::process::Command::new(program()?.as_path())
            .arg(ARG)
            .arg(INNER)
            .args(&args[..1])
            .arg(&tmp)
            .arg("--")
            .args(command)
            // Caches go to the private temp dir (see bwrap's CACHES for why).
            .env("TMPDIR", &tmp)
            .env("XDG_CACHE_HOME", tmp.join(".cache"))
            .env("npm_config_cache", tmp.join(".npm"))
            .spawn()?;
        tokio::select! {
            status = child.wait() => status.map(Some),
            _ = term.recv() => Ok(None),
        }
    });
    kill_tree();
    // Best effort: a leftover temp dir holds only the call's own scratch files.
    let _ = std::fs::remove_dir_all(&tmp);
    let code = match status {
        Ok(Some(status)) => status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(1),
        Ok(None) => 128 + 15,
        Err(err) => return Err(fail("cannot run the command", err)),
    };
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

/// `-- <program> <args…>`: no listening TCP port from here on, then the command.
fn no_listen(args: &[OsString]) -> Result<ExitCode, SandboxError> {
    let command = match args.split_first() {
        Some((dashes, command)) if dashes == "--" && !command.is_empty() => command,
        _ => return Err(SandboxError("malformed sandbox arguments".into())),
    };
    // A kernel without Landlock's network rules (before 6.7) cannot refuse binds; the
    // command still runs confined by bubblewrap (README: what the sandbox does not cover).
    let _ = super::landlock::no_tcp_bind();
    Err(exec(command))
}

/// A fresh 0700 directory for the call's temporary files.
fn private_tmp() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("pincer-sandbox-{name}"));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// Kill every process under this one, until none is left; reap them all.
fn kill_tree() {
    let me = rustix::process::getpid();
    for _ in 0..100 {
        let below = descendants(me);
        if below.is_empty() {
            break;
        }
        for pid in below {
            // Gone already is fine.
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
        #[expect(
            clippy::disallowed_methods,
            reason = "the launcher is a process of its own with no runtime left"
        )]
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

/// Every process whose chain of parents leads to `root`, from `/proc`.
fn descendants(root: Pid) -> Vec<Pid> {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat"))
                && let Some(ppid) = parent_of(&stat)
            {
                parents.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root.as_raw_nonzero().get()];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    found
        .into_iter()
        .skip(1)
        .filter_map(Pid::from_raw)
        .collect()
}

/// The parent pid in a `/proc/<pid>/stat` line: the second field after the command
/// name, which is in parentheses and may itself hold spaces and parentheses.
fn parent_of(stat: &str) -> Option<i32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_past_a_tricky_command_name() {
        assert_eq!(parent_of("42 (a) b) (c) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of("1 (init) S 0 1 1"), Some(0));
        assert_eq!(parent_of("garbage"), None);
    }
}
