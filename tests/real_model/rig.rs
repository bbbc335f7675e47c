//! A Pincer home pointed at the real model through the tap, set up as a person would
//! (`pincer onboard --provider-kind openai --base-url …/v1`), and ways to run the real
//! binary in it within a deadline.

use std::process::Stdio;
use std::time::Duration;

use super::server::{Flavor, MODEL, Server};
use super::tap::Tap;
use crate::common::{Captured, PATIENCE, Run, TestHome, wait_for_within};

/// How long one `pincer` run may take before the test fails: thirty `PATIENCE`s (15
/// min), since a real model on a 2-core machine shared with builds may take minutes
/// per answer, and a run asks it several times. Only a failing test waits it out.
pub(super) const RUN_DEADLINE: Duration = PATIENCE.saturating_mul(30);

/// The chat-template control tokens a person must never see (SmolLM2 speaks ChatML;
/// the others are the families' own).
pub(super) const TEMPLATE_TOKENS: &[&str] = &[
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|start_header_id|>",
    "<end_of_turn>",
    "</s>",
];

/// The template tokens in `text`.
pub(super) fn template_tokens_in(text: &str) -> Vec<&'static str> {
    TEMPLATE_TOKENS
        .iter()
        .copied()
        .filter(|token| text.contains(token))
        .collect()
}

/// A home onboarded against the real model server, with the tap in between.
pub(super) struct Local {
    pub home: TestHome,
    pub tap: Tap,
    pub server: &'static Server,
}

impl Local {
    /// `None` (skip) where the model is not installed outside CI.
    pub(super) async fn start(flavor: Flavor) -> Option<Local> {
        let server = Server::get(flavor).await?;
        let tap = Tap::start(&server.url).await;
        let home = TestHome::new();
        let base_url = tap.base_url();
        let onboard = home.run(&[
            "onboard",
            "--non-interactive",
            "--provider-kind",
            "openai",
            "--base-url",
            &base_url,
            "--light-model",
            MODEL,
            "--heavy-model",
            MODEL,
            "--timezone",
            "UTC",
        ]);
        assert!(onboard.ok(), "onboard failed: {onboard:?}");
        Some(Local { home, tap, server })
    }

    /// Run `pincer ARGS` with `input` on stdin, to its end within `RUN_DEADLINE`.
    pub(super) async fn run(&self, args: &[&str], input: &str) -> Run {
        use tokio::io::AsyncWriteExt;
        let mut command = tokio::process::Command::from(self.home.command(args));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("start pincer");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.as_bytes())
            .await
            .expect("write stdin");
        drop(stdin);
        let output = tokio::time::timeout(RUN_DEADLINE, child.wait_with_output())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "pincer {args:?} did not finish within {RUN_DEADLINE:?}; {}",
                    self.evidence()
                )
            })
            .expect("wait for pincer");
        Run::from(output)
    }

    /// `pincer ARGS` in the background, its output read as it comes; killed when dropped.
    pub(super) fn spawn(&self, args: &[&str]) -> Background {
        let mut child = self
            .home
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start pincer");
        let stdout = Captured::of(child.stdout.take().expect("stdout"));
        let stderr = Captured::of(child.stderr.take().expect("stderr"));
        Background {
            child,
            stdout,
            stderr,
        }
    }

    /// `pincer sessions ARGS`, which must succeed; its stdout.
    pub(super) async fn sessions(&self, args: &[&str]) -> String {
        let mut all = vec!["sessions"];
        all.extend_from_slice(args);
        let run = self.run(&all, "").await;
        assert!(run.ok(), "pincer {all:?} failed: {run:?}");
        run.stdout
    }

    /// What the model server saw and said, and its log: for failure messages.
    pub(super) fn evidence(&self) -> String {
        let mut text = String::from("the model calls through the tap:\n");
        for exchange in self.tap.exchanges() {
            text.push_str(&format!(
                "  {} {} -> {}{}: {:?} (usage {})\n",
                exchange.method,
                exchange.path,
                exchange.status,
                if exchange.finished { "" } else { " (cut)" },
                truncate(&exchange.content(), 300),
                exchange.usage().unwrap_or_default(),
            ));
            if exchange.status >= 400 {
                text.push_str(&format!("    {}\n", truncate(&exchange.answer, 500)));
            }
        }
        text.push_str(&format!(
            "the server's log (end):\n{}",
            self.server.log_text()
        ));
        text
    }
}

fn truncate(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// A `pincer` process in the background.
pub(super) struct Background {
    child: std::process::Child,
    pub stdout: Captured,
    pub stderr: Captured,
}

impl Background {
    /// Wait for its exit (within `RUN_DEADLINE`); its exit code.
    pub(super) async fn wait(mut self) -> Option<i32> {
        let Background { child, stderr, .. } = &mut self;
        wait_for_within(
            RUN_DEADLINE,
            async || child.try_wait().expect("poll pincer").map(|s| s.code()),
            || format!("pincer did not exit; stderr:\n{}", stderr.text()),
        )
        .await
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
