//! bubblewrap: `/` bound read-only, `/dev` and `/proc` fresh, a private `/tmp`,
//! `$PINCER_HOME` hidden under an empty tmpfs with only the workspace bound back
//! read-write (and the prompt's own files in it read-only), every capability dropped
//! (root inside could otherwise unmount the tmpfs), new PID, IPC and UTS namespaces (the gateway is not in this `/proc` and cannot be signalled), a new
//! session (no terminal), and the whole sandbox killed with its parent. With
//! `network = false`, a network namespace with only loopback; with it on, the host's
//! network, but no listening TCP port (the pincer binary, mounted in, refuses binds with
//! Landlock before it execs the command).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::{Confinement, SandboxError};

/// Where bubblewrap is, if it is installed and can make namespaces here (some
/// containers forbid user namespaces): one quick run of `bwrap … true` tells.
pub fn find() -> Result<PathBuf, SandboxError> {
    let program = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| SandboxError("bubblewrap (bwrap) is not installed".into()))?;
    let probe = std::process::Command::new(&program)
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
        .args(["--die-with-parent", "--", "/bin/true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| SandboxError(format!("cannot run {}: {e}", program.display())))?;
    if !probe.status.success() {
        return Err(SandboxError(format!(
            "bubblewrap cannot create namespaces here ({}); enable unprivileged user namespaces or use landlock",
            String::from_utf8_lossy(&probe.stderr).trim()
        )));
    }
    Ok(program)
}

/// Where the pincer binary is mounted inside the sandbox to refuse listening ports
/// before the command runs (in the private `/tmp`, so wherever the binary lives outside).
pub const PINCER_INSIDE: &str = "/tmp/.pincer-no-listen";

/// Where tools keep caches inside the sandbox (an `npx` MCP server needs a writable one).
const CACHES: [(&str, &str); 3] = [
    ("TMPDIR", "/tmp"),
    ("XDG_CACHE_HOME", "/tmp/.cache"),
    ("npm_config_cache", "/tmp/.npm"),
];

/// bwrap's arguments before `--` for `confinement`.
pub fn args(confinement: &Confinement) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |items: &[&std::ffi::OsStr]| args.extend(items.iter().map(|s| s.to_os_string()));
    let ws = confinement.workspace.as_os_str();
    push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    push(&["--dev".as_ref(), "/dev".as_ref()]);
    push(&["--proc".as_ref(), "/proc".as_ref()]);
    push(&["--tmpfs".as_ref(), "/tmp".as_ref()]);
    push(&["--tmpfs".as_ref(), confinement.hidden.as_os_str()]);
    push(&["--bind".as_ref(), ws, ws]);
    for path in &confinement.read_only {
        if path.exists() {
            push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
        }
    }
    push(&[
        "--unshare-pid".as_ref(),
        "--unshare-ipc".as_ref(),
        "--unshare-uts".as_ref(),
    ]);
    if !confinement.network {
        push(&["--unshare-net".as_ref()]);
    }
    // Root inside would keep its capabilities (and could unmount the tmpfs over the home).
    push(&["--cap-drop".as_ref(), "ALL".as_ref()]);
    push(&["--die-with-parent".as_ref(), "--new-session".as_ref()]);
    push(&["--chdir".as_ref(), ws]);
    // Caches go to the private /tmp: the user's own (~/.npm, ~/.cache) stay read-only,
    // so nothing a command does there can poison what the user later runs unconfined.
    for (var, value) in CACHES {
        push(&["--setenv".as_ref(), var.as_ref(), value.as_ref()]);
    }
    args
}
