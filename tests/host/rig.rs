//! A `pincer agent` (or `pincer acp`) process driven over its stdio, line by line, as a
//! host program drives it; with the ordering rules every protocol's output must keep.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::common::PATIENCE;
use crate::common::TestHome;

pub(super) struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Every line read so far.
    pub seen: Vec<Value>,
}

impl Proc {
    /// `pincer --home H ARGS` with piped stdio (stderr inherited).
    pub(super) fn spawn(home: &TestHome, args: &[&str]) -> Proc {
        let mut command = tokio::process::Command::from(home.command(args));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn pincer");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Proc {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }

    pub(super) async fn send(&mut self, value: Value) {
        let mut line = value.to_string();
        line.push('\n');
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.flush().await.expect("flush");
    }

    /// The next line, within `PATIENCE`.
    pub(super) async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line in time; seen: {:#?}", self.seen))
            .expect("read stdout")?;
        let value: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        self.seen.push(value.clone());
        Some(value)
    }

    /// Read until a line matches; that line.
    pub(super) async fn until(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        loop {
            match self.next().await {
                Some(value) if matches(&value) => return value,
                Some(_) => {}
                None => panic!("the output ended before {what}; seen: {:#?}", self.seen),
            }
        }
    }

    /// Read a line of `type` (and `subtype`, when given).
    pub(super) async fn until_type(&mut self, kind: &str, subtype: Option<&str>) -> Value {
        let what = format!("{kind}/{subtype:?}");
        self.until(&what, |v| {
            v["type"] == kind
                && subtype.is_none_or(|s| v["subtype"] == s || v["request"]["subtype"] == s)
        })
        .await
    }

    /// Close stdin, read the rest, and wait for the exit.
    pub(super) async fn finish(mut self) -> (Option<i32>, Vec<Value>) {
        self.stdin = None;
        while self.next().await.is_some() {}
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("exit in time")
            .expect("wait");
        (status.code(), self.seen)
    }
}

/// The lines of `kind`.
pub(super) fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|v| v["type"] == kind).collect()
}

/// stream-json's ordering: in each model call a block's deltas and stop follow its
/// start; every tool result follows the tool_use it answers.
pub(super) fn check_stream_json(lines: &[Value]) {
    let mut open = std::collections::HashSet::new();
    let mut tool_uses = std::collections::HashSet::new();
    for (i, line) in lines.iter().enumerate() {
        match line["type"].as_str() {
            Some("stream_event") => {
                let event = &line["event"];
                let index = event["index"].as_u64();
                match event["type"].as_str() {
                    Some("message_start") => open.clear(),
                    Some("content_block_start") => {
                        assert!(
                            open.insert(index),
                            "line {i}: block {index:?} started twice"
                        );
                    }
                    Some("content_block_delta") => {
                        assert!(
                            open.contains(&index),
                            "line {i}: a delta before its block's start"
                        );
                    }
                    Some("content_block_stop") => {
                        assert!(
                            open.remove(&index),
                            "line {i}: a stop before its block's start"
                        );
                    }
                    _ => {}
                }
            }
            Some("assistant") => {
                for block in line["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_use" {
                        tool_uses.insert(block["id"].as_str().unwrap_or_default().to_string());
                    }
                }
            }
            Some("user") => {
                for block in line["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        let id = block["tool_use_id"].as_str().unwrap_or_default();
                        assert!(
                            tool_uses.contains(id),
                            "line {i}: a tool_result before its tool_use"
                        );
                    }
                }
            }
            _ => {}
        }
    }
}
