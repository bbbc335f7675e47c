//! Finding the installed client libraries and running a client script against Pincer.
#![allow(dead_code)] // each client module uses its own part of the rig

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::PATIENCE;

/// How long one client script may take before the case fails: a few `PATIENCE`s, since
/// the script waits up to `PATIENCE` itself for what it expects (it is told so in
/// `PINCER_TEST_PATIENCE_MS`) and its own failure says more than this one.
fn script_deadline() -> Duration {
    PATIENCE * 3
}

/// `tests/clients`, where the scripts and the installed libraries are.
pub(super) fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Node 22 from `tests/clients/node_modules` (the npm package `node`), or `None` (and
/// the case is skipped) when the clients are not installed outside CI. In CI a missing
/// install fails the case: it would otherwise pass by testing nothing.
pub(super) fn node() -> Option<PathBuf> {
    installed(dir().join("node_modules/.bin/node"))
}

/// The Python of `tests/clients/.venv`, with the PyPI clients, likewise.
pub(super) fn python() -> Option<PathBuf> {
    installed(dir().join(".venv/bin/python"))
}

fn installed(path: PathBuf) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "{} is missing: run scripts/install-clients.sh to install the real client libraries",
        path.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// What a client script printed: its JSON lines, and its stderr for failures.
pub(super) struct Ran {
    pub lines: Vec<Value>,
    pub stderr: String,
    pub code: Option<i32>,
}

impl Ran {
    /// The lines whose `"event"` is `event`.
    pub(super) fn events(&self, event: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["event"] == event).collect()
    }

    /// The one line whose `"event"` is `event`; fails with everything seen if none.
    pub(super) fn event(&self, event: &str) -> &Value {
        self.events(event)
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no {event:?} line; {self}"))
    }

    pub(super) fn succeeded(&self) -> &Self {
        assert_eq!(self.code, Some(0), "the client script failed; {self}");
        self
    }
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "exit {:?}; lines:", self.code)?;
        for line in &self.lines {
            writeln!(f, "  {line}")?;
        }
        write!(f, "stderr:\n{}", self.stderr)
    }
}

/// Run `interpreter script args…` in `tests/clients` with `env` added, within
/// `script_deadline()`. Lines of stdout that are not JSON are kept as strings.
pub(super) async fn run(
    interpreter: &Path,
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Ran {
    let mut command = tokio::process::Command::new(interpreter);
    command
        .arg(dir().join(script))
        .args(args)
        .current_dir(dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "PINCER_HOME",
        "RUST_LOG",
    ] {
        command.env_remove(var);
    }
    // Node's own binary beside the packages, first on the PATH (npx, the suite's
    // child processes).
    let bin = dir().join("node_modules/.bin");
    let path = std::env::var("PATH").unwrap_or_default();
    command.env("PATH", format!("{}:{path}", bin.display()));
    command.env("PINCER_TEST_PATIENCE_MS", PATIENCE.as_millis().to_string());
    command.envs(env.iter().copied());
    let child = command.spawn().expect("start the client script");
    let deadline = script_deadline();
    let output = tokio::time::timeout(deadline, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish in {deadline:?}"))
        .expect("wait for the client script");
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_string())))
        .collect();
    Ran {
        lines,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        code: output.status.code(),
    }
}
