//! Runs one command: `/bin/sh -c` in the workspace, inside the sandbox (see
//! `crate::sandbox`), with a fresh environment (never Pincer's, so API keys and tokens
//! stay out), no stdin, and its own process group. When the command ends, times out,
//! or the call is dropped, the group is told to stop (SIGTERM: the landlock launcher
//! then kills every process of the call, `setsid` ones included; bwrap's namespace ends
//! with it) and then killed. stdout and stderr are captured separately, keeping each
//! one's head and tail.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::super::ToolError;
use crate::sandbox::Jail;

/// The shell every command runs in.
const SHELL: &str = "/bin/sh";

/// `PATH` when Pincer itself has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How long output still held by stray processes is waited for once the command is over,
/// and how long a stopped sandbox gets to clean up before it is killed.
const GRACE: Duration = Duration::from_millis(500);

/// The whole environment a command gets: `PATH`, `HOME` (the workspace), a UTF-8
/// locale, `TERM=dumb`, and `TZ` if Pincer has one. `lookup` reads Pincer's variables.
pub(crate) fn build_env(
    lookup: impl Fn(&str) -> Option<OsString>,
    workspace: &Path,
) -> Vec<(&'static str, OsString)> {
    let mut env = vec![
        (
            "PATH",
            lookup("PATH").unwrap_or_else(|| DEFAULT_PATH.into()),
        ),
        ("HOME", workspace.as_os_str().to_owned()),
        ("LANG", "C.UTF-8".into()),
        ("LC_ALL", "C.UTF-8".into()),
        ("TERM", "dumb".into()),
    ];
    if let Some(tz) = lookup("TZ") {
        env.push(("TZ", tz));
    }
    env
}

/// Run `command` in `workspace` and describe what happened, output capped at `max_output`.
pub(crate) async fn run(
    jail: Option<&Jail>,
    command: &str,
    workspace: &Path,
    timeout: Duration,
    max_output: usize,
) -> Result<String, ToolError> {
    if !workspace.is_dir() {
        return Err(ToolError::new(format!(
            "the workspace `{}` does not exist; create it or fix agent.workspace in config.toml",
            workspace.display()
        )));
    }
    let args = [OsString::from("-c"), OsString::from(command)];
    let mut cmd = match jail {
        Some(jail) => jail
            .command(SHELL, &args)
            .map_err(|err| ToolError::new(err.to_string()))?,
        None => {
            let mut cmd = Command::new(SHELL);
            cmd.args(&args);
            cmd
        }
    };
    cmd.current_dir(workspace)
        .env_clear()
        .envs(build_env(|key| std::env::var_os(key), workspace))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|err| ToolError::new(format!("cannot start {SHELL}: {err}")))?;
    let mut group = Group::new(child.id());
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let mut out = Capture::new(max_output);
    let mut err = Capture::new(max_output);
    let status = {
        let reading = async { tokio::join!(drain(stdout, &mut out), drain(stderr, &mut err)) };
        tokio::pin!(reading);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut read_all = false;
        let status = loop {
            tokio::select! {
                status = child.wait() => break Some(status),
                _ = &mut reading, if !read_all => read_all = true,
                () = &mut deadline => break None,
            }
        };
        if status.is_none() {
            // Timed out: ask the sandbox to clean up, give it a moment, then kill.
            group.signal(Signal::TERM);
            let _ = tokio::time::timeout(GRACE, child.wait()).await;
            let _ = child.start_kill();
        }
        // Background jobs do not outlive the command; their output so far is kept.
        group.kill();
        if status.is_none() {
            let _ = tokio::time::timeout(GRACE, child.wait()).await;
        }
        if !read_all {
            // A process that left the group may hold the pipes open; stop waiting for it.
            let _ = tokio::time::timeout(GRACE, &mut reading).await;
        }
        status
    };
    let status = match status {
        Some(Ok(status)) => Some(status),
        Some(Err(err)) => {
            return Err(ToolError::new(format!(
                "cannot wait for the command: {err}"
            )));
        }
        None => None,
    };
    Ok(report(status, timeout, &out, &err, max_output))
}

/// Read a pipe to its end. A read error ends the capture like an end of file: what was
/// read is still worth returning.
async fn drain(pipe: Option<impl AsyncRead + Unpin>, capture: &mut Capture) {
    let Some(mut pipe) = pipe else { return };
    let mut buf = [0u8; 8192];
    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
        capture.push(&buf[..n]);
    }
}

/// The command's process group (its id is the first process's pid), killed when done
/// with.
struct Group(Option<Pid>);

impl Group {
    fn new(id: Option<u32>) -> Group {
        Group(
            id.and_then(|id| i32::try_from(id).ok())
                .and_then(Pid::from_raw),
        )
    }

    fn signal(&self, signal: Signal) {
        if let Some(id) = self.0 {
            // An error means the group is gone already.
            let _ = rustix::process::kill_process_group(id, signal);
        }
    }

    fn kill(&mut self) {
        self.signal(Signal::KILL);
        self.0 = None;
    }
}

impl Drop for Group {
    /// The call was dropped mid-run (the turn was stopped): stop the group off-thread,
    /// giving a sandbox launcher its moment to clean up first.
    fn drop(&mut self) {
        let Some(id) = self.0.take() else { return };
        let _ = rustix::process::kill_process_group(id, Signal::TERM);
        std::thread::spawn(move || {
            #[expect(clippy::disallowed_methods, reason = "a thread of its own")]
            std::thread::sleep(GRACE);
            // Nothing to report to: the call that wanted the output is gone.
            let _ = rustix::process::kill_process_group(id, Signal::KILL);
        });
    }
}

/// One stream's output: the first and last `keep / 2` bytes, and how much there was.
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
    keep: usize,
}

impl Capture {
    pub(crate) fn new(keep: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            keep,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let room = (self.keep / 2).saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        let tail_keep = self.keep - self.keep / 2;
        if self.tail.len() > tail_keep {
            self.tail.drain(..self.tail.len() - tail_keep);
        }
    }

    /// The text in at most `budget` bytes, the middle replaced by a note when cut.
    pub(crate) fn render(&self, budget: usize) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let kept = self.head.len() + tail.len();
        if self.total == kept && kept <= budget {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let mut head_end = self.head.len().min(budget / 2);
        while head_end > 0 && head_end < self.head.len() && is_continuation(self.head[head_end]) {
            head_end -= 1;
        }
        let mut tail_start = tail.len() - tail.len().min(budget - head_end);
        while tail_start < tail.len() && is_continuation(tail[tail_start]) {
            tail_start += 1;
        }
        let cut = self.total - head_end - (tail.len() - tail_start);
        format!(
            "{}\n[… {cut} bytes cut …]\n{}",
            String::from_utf8_lossy(&self.head[..head_end]),
            String::from_utf8_lossy(&tail[tail_start..])
        )
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// How many bytes each stream may show: both whole if they fit, else the smaller one
/// whole when it is under half, else half each.
pub(crate) fn budgets(out: usize, err: usize, max: usize) -> (usize, usize) {
    let half = max / 2;
    if out + err <= max {
        (out, err)
    } else if out <= half {
        (out, max - out)
    } else if err <= half {
        (max - err, err)
    } else {
        (half, max - half)
    }
}

fn report(
    status: Option<ExitStatus>,
    timeout: Duration,
    out: &Capture,
    err: &Capture,
    max_output: usize,
) -> String {
    let silent = out.total == 0 && err.total == 0;
    let mut text = match status {
        None if silent => format!("timed out after {}s with no output", timeout.as_secs()),
        None => format!("timed out after {}s; partial output:", timeout.as_secs()),
        Some(status) => match status.code() {
            Some(code) => format!("exit code {code}"),
            None => killed_by(status),
        },
    };
    let (out_budget, err_budget) = budgets(out.total, err.total, max_output);
    for (name, capture, budget) in [("stdout", out, out_budget), ("stderr", err, err_budget)] {
        if capture.total > 0 {
            let body = capture.render(budget);
            let body = body.strip_suffix('\n').unwrap_or(&body);
            text.push_str(&format!("\n--- {name} ---\n{body}"));
        }
    }
    if silent && status.is_some() {
        text.push_str("\n(no output)");
    }
    text
}

#[cfg(unix)]
fn killed_by(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => format!("killed by signal {signal}"),
        None => format!("ended without an exit code ({status})"),
    }
}

#[cfg(not(unix))]
fn killed_by(status: ExitStatus) -> String {
    format!("ended without an exit code ({status})")
}
