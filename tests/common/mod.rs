//! Shared helpers for the integration tests: a private Pincer home pointed at a fake
//! model, and ways to run the real `pincer` binary or the core in-process.
#![allow(dead_code)] // each test file uses its own subset

pub(crate) mod platform;
pub(crate) mod telegram;
pub(crate) mod trust;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pincer_fakes::FakeModel;

/// A Pincer home in a temp dir. The dir is removed on drop.
pub(crate) struct TestHome {
    pub dir: tempfile::TempDir,
}

impl TestHome {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A home whose config uses the fake model over the OpenAI wire format.
    pub(crate) fn openai(fake: &FakeModel) -> Self {
        let home = Self::new();
        home.write_config(&openai_config(fake, ""));
        home
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn config_file(&self) -> PathBuf {
        self.path().join("config.toml")
    }

    pub(crate) fn write_config(&self, text: &str) {
        std::fs::write(self.config_file(), text).expect("write config");
    }

    /// Write .security.yml with mode 0600.
    pub(crate) fn write_secrets(&self, text: &str) {
        let path = self.path().join(".security.yml");
        std::fs::write(&path, text).expect("write secrets");
        set_mode(&path, 0o600);
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.path().join("workspace")
    }

    /// `pincer --home <home> ARGS` with a clean environment (no real keys leak in).
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        command_at(self.path(), args)
    }

    /// Run `pincer ARGS` to completion (stdin closed).
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        let output = self.command(args).output().expect("run pincer");
        Run::from(output)
    }

    /// Run `pincer ARGS` feeding `input` on stdin.
    pub(crate) fn run_with_stdin(&self, args: &[&str], input: &str) -> Run {
        self.run_with_bytes(args, input.as_bytes())
    }

    /// `run_with_stdin` with any bytes, UTF-8 or not.
    pub(crate) fn run_with_bytes(&self, args: &[&str], input: &[u8]) -> Run {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pincer");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write stdin");
        Run::from(child.wait_with_output().expect("wait pincer"))
    }

    /// `pincer run` in the background, its stderr appended to `gateway.log` (so a
    /// restart keeps the earlier run's lines); killed when the `Gateway` is dropped.
    pub(crate) fn start_gateway(&self) -> Gateway {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path().join("gateway.log"))
            .expect("gateway log file");
        let child = self
            .command(&["run"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start pincer run");
        Gateway { child }
    }

    /// What every `start_gateway` run logged so far.
    pub(crate) fn gateway_log(&self) -> String {
        std::fs::read_to_string(self.path().join("gateway.log")).unwrap_or_default()
    }

    /// `pincer sessions show terminal:dm:local`.
    pub(crate) fn transcript(&self) -> String {
        let run = self.run(&["sessions", "show", "terminal:dm:local"]);
        assert!(run.ok(), "sessions show failed: {}", run.stderr);
        run.stdout
    }
}

/// `pincer --home <dir> ARGS` with a clean environment (no real keys leak in), for a
/// home that is not a `TestHome` (a restore's target).
pub(crate) fn command_at(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pincer"));
    cmd.arg("--home").arg(dir).args(args);
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "TELEGRAM_BOT_TOKEN",
        "DISCORD_BOT_TOKEN",
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "PINCER_HOME",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
    for (key, _) in std::env::vars() {
        if key.starts_with("PINCER_") {
            cmd.env_remove(key);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// Run `pincer --home <dir> ARGS` to completion (stdin closed).
pub(crate) fn run_at(dir: &Path, args: &[&str]) -> Run {
    Run::from(command_at(dir, args).output().expect("run pincer"))
}

/// The pairing code in a reply: the word of 8 upper-case letters and digits.
pub(crate) fn pairing_code(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() == 8
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .expect("a pairing code in the reply")
        .to_string()
}

/// A running `pincer run`, killed when dropped.
pub(crate) struct Gateway {
    pub child: std::process::Child,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a finished `pincer` run printed.
#[derive(Debug)]
pub(crate) struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub(crate) fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// Assert a failure with exit code 1 whose stderr mentions every needle.
    pub(crate) fn fails_with(&self, needles: &[&str]) {
        assert_eq!(
            self.code,
            Some(1),
            "expected exit 1; stdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr lacks {needle:?}:\n{}",
                self.stderr
            );
        }
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// A config using the fake over the OpenAI wire format, plus `extra` TOML.
pub(crate) fn openai_config(fake: &FakeModel, extra: &str) -> String {
    format!(
        "version = 1\n{extra}\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\ntimeout_secs = 20\nidle_timeout_secs = 5\n",
        fake.openai_base()
    )
}

pub(crate) fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// How every test waits for what it expects (see `pincer_fakes::wait`).
pub(crate) use pincer_fakes::{PATIENCE, wait_for, wait_for_within, wait_until};

/// What a child process writes to a pipe, read as it comes by a thread (so the pipe
/// never fills up).
#[derive(Clone, Default)]
pub(crate) struct Captured(std::sync::Arc<std::sync::Mutex<String>>);

impl Captured {
    pub(crate) fn of(mut pipe: impl std::io::Read + Send + 'static) -> Captured {
        let captured = Captured::default();
        let sink = captured.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.0
                    .lock()
                    .expect("capture lock")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        captured
    }

    /// Everything read so far.
    pub(crate) fn text(&self) -> String {
        self.0.lock().expect("capture lock").clone()
    }

    /// Wait until what was read shows `needle` `count` times.
    pub(crate) async fn shows(&self, needle: &str, count: usize) {
        wait_for(
            async || (self.text().matches(needle).count() >= count).then_some(()),
            || format!("never showed {needle:?} {count} times:\n{}", self.text()),
        )
        .await
    }
}

/// The fake MCP server binary (`pincer-fakes`' `fake-mcp`), built beside `pincer` by
/// `cargo test --workspace`.
pub(crate) fn fake_mcp() -> String {
    let path = Path::new(env!("CARGO_BIN_EXE_pincer")).with_file_name("fake-mcp");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build -p pincer-fakes --bin fake-mcp` (cargo test --workspace builds it)",
        path.display()
    );
    path.display().to_string()
}
