//! The rig every workspace attack uses: a Pincer home pointed at the fake model, a chosen
//! sandbox, the exec deny groups at their defaults (all on: the attacks take the
//! indirect route, a script written then run, which no deny group reads), and either a
//! turn of the real `pincer chat -m go` in which the model makes scripted calls, or the
//! real `pincer run` (its web panel included) for attacks that need the gateway.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use crate::common::{Gateway, TestHome};

/// A home with the fake model and one sandbox.
pub(super) struct Rig {
    pub home: TestHome,
    pub model: FakeModel,
    /// Runs the fake model's server.
    pub runtime: tokio::runtime::Runtime,
    pub sandbox: &'static str,
    /// Extra environment for every `pincer` this rig starts.
    env: Vec<(String, String)>,
}

/// What one turn left: the chat's exit code and output, and every tool result the model
/// was sent, in order.
#[derive(Debug)]
pub(super) struct Turn {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub results: Vec<String>,
}

impl Turn {
    /// The result of the `n`th call (from 0), or a failure naming the whole turn.
    pub(super) fn result(&self, n: usize) -> &str {
        self.results
            .get(n)
            .unwrap_or_else(|| panic!("no result {n} in the turn: {self:#?}"))
    }
}

impl Rig {
    /// A home under `sandbox` whose config is `[tools.exec] sandbox = "…"` followed by
    /// `extra` (so keys at its top land in `[tools.exec]`; it may open tables of its own).
    pub(super) fn new(sandbox: &'static str, extra: &str) -> Rig {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the fake model");
        let model = runtime.block_on(FakeModel::start());
        let rig = Rig {
            home: TestHome::new(),
            model,
            runtime,
            sandbox,
            env: Vec::new(),
        };
        rig.configure(extra);
        std::fs::create_dir_all(rig.home.workspace()).expect("workspace");
        rig
    }

    /// Write the config again with another `extra` (see `new`).
    pub(super) fn configure(&self, extra: &str) {
        self.home.write_config(&crate::common::openai_config(
            &self.model,
            &format!("[tools.exec]\nsandbox = \"{}\"\n{extra}\n", self.sandbox),
        ));
    }

    /// Set `key` in the environment of every `pincer` started from now on.
    pub(super) fn env(&mut self, key: &str, value: &str) {
        self.env.push((key.into(), value.into()));
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.home.command(args);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Script the model: `calls` in order, then `reply`.
    pub(super) fn script(&self, calls: &[(&str, Value)], reply: &str) {
        let _enter = self.runtime.enter();
        self.model.reset();
        self.model.push_all(
            calls
                .iter()
                .map(|(tool, args)| Step::tool_call(*tool, args.clone())),
        );
        self.model.push(Step::text(reply));
    }

    /// The tool results of this turn, from the model's last request.
    pub(super) fn results(&self) -> Vec<String> {
        self.model
            .requests()
            .last()
            .map(|r| tool_results(&r.body))
            .unwrap_or_default()
    }

    /// One turn of `pincer chat -m go` in which the model makes `calls`, then says `reply`.
    pub(super) fn turn(&self, calls: &[(&str, Value)], reply: &str) -> Turn {
        self.script(calls, reply);
        let output = self
            .command(&["chat", "-m", "go"])
            .output()
            .expect("run pincer chat");
        Turn {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            results: self.results(),
        }
    }

    /// `pincer run` in the background (stderr in `gateway.log`), killed when dropped.
    pub(super) fn start_gateway(&self) -> Gateway {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.home.path().join("gateway.log"))
            .expect("gateway log file");
        let child = self
            .command(&["run"])
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start pincer run");
        Gateway { child }
    }
}

/// The tool results since the last user message: this turn's (the conversation goes on
/// from one turn to the next).
fn tool_results(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "user")
        .map_or(0, |i| i + 1);
    messages[start..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The sandboxes to try: both where bubblewrap is installed (CI installs it).
pub(super) fn sandboxes() -> Vec<&'static str> {
    if std::path::Path::new("/usr/bin/bwrap").exists() || std::env::var_os("CI").is_some() {
        vec!["bwrap", "landlock"]
    } else {
        eprintln!("bubblewrap is not installed: only landlock is tried");
        vec!["landlock"]
    }
}

/// The call `write_file {path, content}`.
pub(super) fn write_file(path: &str, content: &str) -> (&'static str, Value) {
    ("write_file", json!({ "path": path, "content": content }))
}

/// The call `exec {command}`.
pub(super) fn exec(command: &str) -> (&'static str, Value) {
    ("exec", json!({ "command": command }))
}

/// The call `exec {command, timeout_secs}`.
pub(super) fn exec_for(command: &str, secs: u64) -> (&'static str, Value) {
    ("exec", json!({ "command": command, "timeout_secs": secs }))
}

/// A port nothing listens on yet.
pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One HTTP/1.1 request to `127.0.0.1:port`, answered within `wait`: the whole answer
/// (the connection is closed after it), or why there was none.
pub(super) fn http(port: u16, request: &str, wait: Duration) -> Result<String, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(wait))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) if answer.is_empty() => Err("closed without an answer".into()),
        Ok(_) => Ok(String::from_utf8_lossy(&answer).into_owned()),
        Err(e) if !answer.is_empty() => {
            Err(format!("{e} after {:?}", String::from_utf8_lossy(&answer)))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// A `GET path` request for the panel on `port`, with the bearer `token` if any.
pub(super) fn get(port: u16, path: &str, token: Option<&str>) -> String {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n")
}
