//! # pincer-host
//!
//! Conversations another program drives over stdio: `pincer agent` (the Claude Code
//! CLI's stream-json protocol, or seed 001's runner lines) and `pincer acp` (the Agent
//! Client Protocol, for editors). The host is the owner: the same router, memory,
//! tools, budgets and sandbox as everywhere else, in a local conversation of its own
//! (`terminal:dm:<id>`). The front-ends read the turn's one chunk stream
//! (`pincer_channels::chunk`) and write it in their protocol; none re-derives it.
//! It sits on `pincer-core` (`pincer_core::start_wired`) and knows no other surface.
//!
//! # Layout
//! - `args`        — the command line, with the flags the Claude Agent SDKs pass
//! - `stream_json` — `pincer agent --protocol stream-json` (its lines as types: `wire`)
//! - `hooks`       — the SDK hooks stream-json registers and calls
//! - `runner`      — `pincer agent --protocol runner` (its lines as types: `wire`)
//! - `acp`         — `pincer acp` (its types are the `agent-client-protocol` crate's)
//! - `lenient`     — reading lines as tolerantly as the hosts must: an odd field is absent
//! - `round_trip`  — (tests) holding the wire types to recorded lines

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod acp;
mod args;
mod hooks;
mod lenient;
mod runner;
mod stream_json;

#[cfg(test)]
mod round_trip;

use std::sync::Arc;

use anyhow::Context as _;
use async_trait::async_trait;
use pincer_channels::{SessionKey, Terminal};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use acp::run as acp;
pub use args::{Args, ArgsError, Protocol};

use pincer_core::home::Home;
use pincer_core::start::Running;
use pincer_core::tools::approval::{Approval, Approver, Request};
use pincer_core::tools::mode::PermissionMode;

/// `pincer agent`: run the chosen protocol until stdin ends or `stop`.
pub async fn agent(home: &Home, args: Args) -> anyhow::Result<std::process::ExitCode> {
    match args.protocol {
        Protocol::StreamJson => stream_json::run(home, args).await,
        Protocol::Runner => runner::run(home, args).await,
    }
}

/// The core, started for a host.
pub(crate) struct Core {
    pub(crate) running: Running,
    pub(crate) shutdown: CancellationToken,
    pub(crate) workspace: std::path::PathBuf,
}

impl Core {
    /// Load the configuration (never onboarding: there is nobody to ask) and start the
    /// core, approvals going to `asks`.
    pub(crate) fn start(home: &Home, asks: mpsc::Sender<Ask>) -> anyhow::Result<Core> {
        Self::start_hooked(home, asks, None, Vec::new())
    }

    /// `start`, with the host's own hooks called through `hooks` (`hooks::HookCall`)
    /// and the host's in-process MCP servers `mcp` beside the configured ones.
    pub(crate) fn start_hooked(
        home: &Home,
        asks: mpsc::Sender<Ask>,
        hooks: Option<mpsc::Sender<hooks::HookCall>>,
        mcp: Vec<pincer_core::mcp::McpServerConfig>,
    ) -> anyhow::Result<Core> {
        let env = pincer_core::home::env_vars();
        let config = match pincer_config::load(&home.config_file, &home.security_file, &env) {
            Err(pincer_config::ConfigError::Missing { path }) => anyhow::bail!(
                "no configuration at {}; run `pincer onboard` first",
                path.display()
            ),
            other => other?,
        };
        let secrets = pincer_config::load_secrets(&home.security_file)?;
        if config.router.light.is_empty() && config.router.heavy.is_empty() {
            anyhow::bail!(
                "no model is configured: add [router] light = [\"<provider>/<model>\"] to {}",
                home.config_file.display()
            );
        }
        if let Some(server) = mcp
            .iter()
            .find(|s| config.mcp.servers.contains_key(&s.name))
        {
            anyhow::bail!(
                "the host's MCP server {0} has the name of [mcp.servers.{0}] in {1}; give one of them another name",
                server.name,
                home.config_file.display()
            );
        }
        home.ensure()
            .with_context(|| format!("cannot create {}", home.dir.display()))?;
        let shutdown = CancellationToken::new();
        let mut approvers = pincer_core::tools::approval::Approvers::default();
        approvers.register(
            pincer_channels::terminal::CHANNEL,
            Arc::new(HostApprover { asks, hooks }),
        );
        let wiring = pincer_core::start::Wiring {
            approvers,
            mcp,
            ..Default::default()
        };
        let running = pincer_core::start::start_wired(
            home,
            &config,
            &secrets,
            &env,
            wiring,
            shutdown.clone(),
        )?;
        Ok(Core {
            running,
            shutdown,
            workspace: home.workspace(&config),
        })
    }

    /// Open the local conversation `key` (`terminal:dm:<id>`; a new `agent-…` id when
    /// none) in `mode`.
    pub(crate) async fn open(
        &self,
        key: Option<&str>,
        mode: PermissionMode,
    ) -> anyhow::Result<Chat> {
        open_chat(&self.running.agent, &self.workspace, key, mode, "agent").await
    }
}

/// Open the local conversation `key` (`terminal:dm:<id>`; a new `<prefix>-…` id when
/// none) in `mode`.
pub(crate) async fn open_chat(
    agent: &pincer_core::agent::Agent,
    workspace: &std::path::Path,
    key: Option<&str>,
    mode: PermissionMode,
    prefix: &str,
) -> anyhow::Result<Chat> {
    let id = match key {
        None => new_id(prefix),
        Some(key) => match key.parse::<SessionKey>() {
            Ok(SessionKey::Chat {
                channel,
                group: false,
                chat_id,
                thread: None,
            }) if channel == pincer_channels::terminal::CHANNEL => chat_id,
            // A bare id (an SDK's `session_id=<uuid>`): the local conversation of that id,
            // new or resumed.
            _ if bare_id(key) => key.to_string(),
            _ => anyhow::bail!(
                "{key} is not a local conversation; hosts resume conversations named terminal:dm:<id>, or give an id of letters, digits, - and _ (see `pincer sessions list`)"
            ),
        },
    };
    let key = SessionKey::direct(pincer_channels::terminal::CHANNEL, &id);
    let session = agent.store().current_session(&key).await?;
    agent.modes().set(session, mode);
    let terminal = Terminal::new(true)
        .with_chat(&id)
        .with_inbox(workspace.join("inbox"));
    Ok(Chat {
        key,
        id,
        session,
        terminal,
    })
}

/// What a front-end uses of the running core while it reads its output.
pub(crate) struct Handles {
    pub(crate) inbound: mpsc::Sender<pincer_channels::Inbound>,
    pub(crate) dispatcher: Arc<pincer_core::dispatch::Dispatcher>,
    pub(crate) agent: Arc<pincer_core::agent::Agent>,
}

impl Core {
    /// The handles, the output and the way to stop the core.
    pub(crate) fn split(
        self,
    ) -> (
        Handles,
        mpsc::Receiver<pincer_channels::OutboundMessage>,
        impl std::future::Future<Output = ()>,
    ) {
        let Running {
            inbound,
            outbound,
            dispatcher,
            agent,
            task,
            ..
        } = self.running;
        let shutdown = self.shutdown;
        let stop = async move {
            shutdown.cancel();
            let _ = task.await;
        };
        (
            Handles {
                inbound,
                dispatcher,
                agent,
            },
            outbound,
            stop,
        )
    }
}

/// One conversation a host drives.
pub(crate) struct Chat {
    /// `terminal:dm:<id>`: the session key; its text is the `session_id` the host sees.
    pub(crate) key: SessionKey,
    pub(crate) id: String,
    /// The stored session (its mode is set by id).
    pub(crate) session: i64,
    pub(crate) terminal: Terminal,
}

impl Chat {
    pub(crate) fn message(&self, text: String) -> pincer_channels::InboundMessage {
        self.terminal.message(text)
    }

    /// Start a turn with `text`, as if typed.
    pub(crate) async fn send(&self, text: String, running: &Handles) -> anyhow::Result<()> {
        running
            .inbound
            .send(self.message(text).into())
            .await
            .map_err(|_| anyhow::anyhow!("the core stopped"))
    }
}

/// One JSON line on stdout, flushed at once (a host reads line by line).
pub(crate) async fn write_line<T: serde::Serialize>(
    out: &mut tokio::io::Stdout,
    line: &T,
) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut text = serde_json::to_string(line)?;
    text.push('\n');
    out.write_all(text.as_bytes()).await?;
    out.flush().await?;
    Ok(())
}

/// A question for the host: a call needs its approval.
pub(crate) struct Ask {
    pub(crate) request: Request,
    pub(crate) answer: oneshot::Sender<Approval>,
}

/// Hands every approval the core needs to the host's front-end.
struct HostApprover {
    asks: mpsc::Sender<Ask>,
    /// Where the host's own hooks are called, when it registers any.
    hooks: Option<mpsc::Sender<hooks::HookCall>>,
}

#[async_trait]
impl Approver for HostApprover {
    async fn approve(&self, request: &Request) -> Approval {
        let (answer, answered) = oneshot::channel();
        let ask = Ask {
            request: request.clone(),
            answer,
        };
        if self.asks.send(ask).await.is_err() {
            return Approval::Unavailable("the host is gone; nobody can approve".into());
        }
        answered.await.unwrap_or(Approval::Unavailable(
            "the host did not answer the approval".into(),
        ))
    }

    async fn hook(
        &self,
        event: pincer_core::tools::host_hooks::HostHook,
        input: &serde_json::Value,
    ) -> Vec<serde_json::Value> {
        let Some(hooks) = &self.hooks else {
            return Vec::new();
        };
        let (answer, answered) = oneshot::channel();
        let call = hooks::HookCall {
            event,
            input: input.clone(),
            answer,
        };
        if hooks.send(call).await.is_err() {
            return Vec::new();
        }
        answered.await.unwrap_or_default()
    }
}

/// An MCP server's state ("ready, 3 tools", "failed: …") as the Claude Code CLI and
/// seed 001 name states: connected, failed or pending.
pub(crate) fn mcp_state(state: &str) -> &'static str {
    if state.starts_with("ready") {
        "connected"
    } else if state.starts_with("failed") {
        "failed"
    } else {
        "pending"
    }
}

/// An id a host may name a conversation by: 1 to 64 letters, digits, `-` and `_`.
fn bare_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A fresh conversation id: `<prefix>-` and 8 hex digits.
fn new_id(prefix: &str) -> String {
    format!("{prefix}-{:08x}", getrandom::u32().unwrap_or_default())
}

/// A UUID-shaped random id, as the SDKs expect in `uuid` fields.
pub(crate) fn uuid() -> String {
    let mut bytes = [0u8; 16];
    // An id that is not random is still an id; the hosts only compare them.
    let _ = getrandom::fill(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A model `set_model` takes, as both stream-json's `initialize` answer and the runner's
/// `supported_models` list it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelChoice {
    pub(crate) value: String,
    pub(crate) display_name: String,
    pub(crate) description: String,
}

/// A chat command a message may be, as both protocols list them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct Command {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) argument_hint: String,
}
