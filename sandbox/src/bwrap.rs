//! bubblewrap: `/` bound read-only, `/dev` and `/proc` fresh, a private `/tmp`,
//! `$PINCER_HOME` hidden under an empty tmpfs with only the workspace bound back
//! read-write (and the prompt's own files in it read-only), every capability dropped
//! (root inside could otherwise unmount the tmpfs), new PID, IPC and UTS namespaces (the gateway is not in this `/proc` and cannot be signalled), a new
//! session (no terminal), and the whole sandbox killed with its parent. With
//! `network = false`, a network namespace with only loopback and the places where the
//! system keeps its UNIX sockets (`/run`, `/var/run`, `$XDG_RUNTIME_DIR`; `/tmp` is
//! private anyway) under empty tmpfs: a socket on a read-only mount still answers
//! `connect`, so it must be out of sight. With the network on, the host's network, but no
//! listening TCP port. Either way the pincer binary, mounted in, runs first inside
//! (`launcher`'s `inside` step: Landlock rules, then the rlimits) and execs the command.
//! The tmpfs mounts are sized where bubblewrap can (0.6+), so no call fills the
//! machine's memory through them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::{Confinement, SandboxError};

/// Where bubblewrap is, if it is installed and can make namespaces here (some
/// containers forbid user namespaces), and whether it can size a tmpfs (`--size`,
/// bubblewrap 0.6+): quick runs of `bwrap … true` tell.
pub(crate) fn find() -> Result<(PathBuf, bool), SandboxError> {
    let program = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| SandboxError("bubblewrap (bwrap) is not installed".into()))?;
    let probe = |extra: &[&str]| {
        std::process::Command::new(&program)
            .args([
                "--ro-bind",
                "/",
                "/",
                "--unshare-pid",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
            ])
            .args(extra)
            .args(["--die-with-parent", "--", "/bin/true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| SandboxError(format!("cannot run {}: {e}", program.display())))
    };
    let plain = probe(&[])?;
    if !plain.status.success() {
        return Err(SandboxError(format!(
            "bubblewrap cannot create namespaces here ({}); enable unprivileged user namespaces or use landlock",
            String::from_utf8_lossy(&plain.stderr).trim()
        )));
    }
    let sized = probe(&["--size", "1048576", "--tmpfs", "/tmp"])?
        .status
        .success();
    Ok((program, sized))
}

/// Where the pincer binary is mounted inside the sandbox to run its `inside` step
/// before the command (in the private `/tmp`, so wherever the binary lives outside).
pub(crate) const PINCER_INSIDE: &str = "/tmp/.pincer-inside";

/// The size of a tmpfs that only hides something (it holds mount points at most).
const HIDING: u64 = 1 << 20;

/// Where tools keep caches inside the sandbox (an `npx` MCP server needs a writable one).
const CACHES: [(&str, &str); 3] = [
    ("TMPDIR", "/tmp"),
    ("XDG_CACHE_HOME", "/tmp/.cache"),
    ("npm_config_cache", "/tmp/.npm"),
];

/// Where the system keeps UNIX sockets that a command with `network = false` must not
/// see: `/run` (`/var/run` is usually a link to it), and `$XDG_RUNTIME_DIR` where it is
/// elsewhere. `/tmp` (X11's and ssh-agent's sockets) is private already.
fn socket_dirs(runtime_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/run")];
    let var_run = Path::new("/var/run");
    if std::fs::symlink_metadata(var_run).is_ok_and(|m| m.is_dir()) {
        dirs.push(var_run.to_path_buf());
    }
    if let Some(dir) = runtime_dir
        && dir.is_absolute()
        && !dir.starts_with("/run")
        && !dir.starts_with("/tmp")
        && dir.is_dir()
    {
        dirs.push(dir.to_path_buf());
    }
    dirs
}

/// bwrap's arguments before `--` for `confinement`; `sized`: bwrap takes `--size`.
pub(crate) fn args(confinement: &Confinement, sized: bool) -> Vec<OsString> {
    let mut args = Args(Vec::new(), sized);
    let ws = confinement.workspace.as_os_str();
    let tmp_size = match confinement.limits.file_size_mb {
        0 => None,
        mb => Some(mb.saturating_mul(1 << 20)),
    };
    args.push(&["--ro-bind", "/", "/"]);
    args.push(&["--dev", "/dev", "--proc", "/proc"]);
    args.tmpfs("/tmp".as_ref(), tmp_size);
    // /dev/shm is memory too: as big as /tmp at most.
    args.tmpfs("/dev/shm".as_ref(), tmp_size);
    if !confinement.network {
        let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
        for dir in socket_dirs(runtime.as_deref()) {
            args.tmpfs(dir.as_os_str(), Some(HIDING));
        }
    }
    args.tmpfs(confinement.hidden.as_os_str(), Some(HIDING));
    args.push_os(&["--bind".as_ref(), ws, ws]);
    if let Some(own) = &confinement.own {
        args.push_os(&["--bind".as_ref(), own.as_os_str(), own.as_os_str()]);
    }
    for path in &confinement.read_only {
        if path.exists() {
            args.push_os(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
        }
    }
    args.push(&["--unshare-pid", "--unshare-ipc", "--unshare-uts"]);
    if !confinement.network {
        args.push(&["--unshare-net"]);
    }
    // Root inside would keep its capabilities (and could unmount the tmpfs over the home).
    args.push(&["--cap-drop", "ALL"]);
    args.push(&["--die-with-parent", "--new-session"]);
    let start = confinement.own.as_deref().map_or(ws, |own| own.as_os_str());
    args.push_os(&["--chdir".as_ref(), start]);
    // Caches go to the private /tmp: the user's own (~/.npm, ~/.cache) stay read-only,
    // so nothing a command does there can poison what the user later runs unconfined.
    for (var, value) in CACHES {
        args.push(&["--setenv", var, value]);
    }
    args.0
}

/// bwrap's arguments as they are built; `.1`: whether `--size` may be given.
struct Args(Vec<OsString>, bool);

impl Args {
    fn push(&mut self, items: &[&str]) {
        self.0.extend(items.iter().map(OsString::from));
    }

    fn push_os(&mut self, items: &[&std::ffi::OsStr]) {
        self.0.extend(items.iter().map(|s| s.to_os_string()));
    }

    /// An empty tmpfs at `path`, of `size` bytes where bwrap can size it.
    fn tmpfs(&mut self, path: &std::ffi::OsStr, size: Option<u64>) {
        if let Some(size) = size.filter(|_| self.1) {
            self.push(&["--size", &size.to_string()]);
        }
        self.push_os(&["--tmpfs".as_ref(), path]);
    }
}
