//! [`McpManager`]: keeps every configured MCP server connected, each in its own
//! background task, and offers the tools of the servers that are ready.
//!
//! A server's task connects, lists its tools, then waits for the connection to end;
//! a failure or a disconnect marks the server failed with its reason and schedules a
//! retry after an exponential backoff. Tasks never touch each other, so one broken
//! server cannot hold up or break the rest. This file must not talk MCP itself
//! (`connect` and `tool` do).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::model::Tool as RemoteTool;
use rmcp::service::{Peer, QuitReason, RoleClient};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::asking::{Asker, Calls, InFlight};
use super::connect::{StderrTail, connect};
use super::tool::McpTool;
use super::{Backoff, McpServerConfig, RECONNECT};
use crate::tools::approval::Approvers;
use crate::tools::{Tool, ToolContext, ToolError};

/// A connection that lasted this long counts as healthy: the next failure starts the
/// backoff from `first` again.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// The configured MCP servers and their connections.
pub struct McpManager {
    /// One per configured server, in config order.
    servers: Vec<Arc<Server>>,
    /// The servers' supervisor tasks, stopped when the manager is dropped (which
    /// drops their connections and so kills their child processes).
    tasks: Vec<AbortHandle>,
    /// Asks the tasks to close their connections cleanly and end (`close`).
    stop: CancellationToken,
}

/// One server's name and current state, shared by its task and its tools.
pub(super) struct Server {
    name: String,
    /// `[mcp.servers.NAME] trusted`.
    trusted: bool,
    state: Mutex<State>,
    /// Its calls in flight, for whoever answers its questions (elicitations).
    calls: Arc<Calls>,
    /// Who can ask the owner, by channel: the same approvers as the turn's calls.
    approvers: Approvers,
}

enum State {
    Connecting,
    Ready {
        /// The live session, cloned for each call.
        peer: Peer<RoleClient>,
        tools: Vec<RemoteTool>,
        /// "name version, protocol 2025-11-25", for `pincer mcp check`.
        about: String,
    },
    Failed {
        reason: String,
        retry_at: Instant,
    },
}

/// Why a configured server cannot be used now, as `report` tells a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    #[error("no answer yet (still connecting)")]
    Connecting,
    /// Its last connection failed, for this reason (it is retried).
    #[error("{0}")]
    Failed(String),
}

impl McpManager {
    /// Start connecting every server in the background, retrying failures after
    /// 1 s, 2 s, 4 s … up to 5 minutes. A stdio server starts in its `cwd`, else in a
    /// folder of its own, `<folders>/<name>` (made when it starts) — never in the
    /// workspace. Returns at once; must be called inside a tokio runtime. Nobody
    /// answers the servers' questions: they are declined.
    pub fn start(servers: Vec<McpServerConfig>, folders: PathBuf) -> Arc<Self> {
        Self::start_with(servers, folders, RECONNECT)
    }

    /// [`McpManager::start`], where a server's question during a call goes to the
    /// owner of the call through `approvers` (the ones that answer the turn's "ask").
    pub fn start_asking(
        servers: Vec<McpServerConfig>,
        folders: PathBuf,
        approvers: Approvers,
    ) -> Arc<Self> {
        Self::launch(servers, folders, RECONNECT, approvers)
    }

    /// [`McpManager::start`] with a chosen backoff (tests use short ones).
    pub fn start_with(
        servers: Vec<McpServerConfig>,
        folders: PathBuf,
        backoff: Backoff,
    ) -> Arc<Self> {
        Self::launch(servers, folders, backoff, Approvers::default())
    }

    fn launch(
        servers: Vec<McpServerConfig>,
        folders: PathBuf,
        backoff: Backoff,
        approvers: Approvers,
    ) -> Arc<Self> {
        let mut manager = Self {
            servers: Vec::new(),
            tasks: Vec::new(),
            stop: CancellationToken::new(),
        };
        for config in servers {
            let server = Arc::new(Server {
                name: config.name.clone(),
                trusted: config.trusted,
                state: Mutex::new(State::Connecting),
                calls: Arc::default(),
                approvers: approvers.clone(),
            });
            let task = tokio::spawn(supervise(
                server.clone(),
                config,
                folders.clone(),
                backoff,
                manager.stop.clone(),
            ));
            manager.servers.push(server);
            manager.tasks.push(task.abort_handle());
        }
        Arc::new(manager)
    }

    /// Each server and its state in words: `connecting`, `ready, 3 tools`, or
    /// `failed: <reason>, retrying in 8s`. In config order.
    pub fn status(&self) -> Vec<(String, String)> {
        let now = Instant::now();
        self.servers
            .iter()
            .map(|server| {
                let words = match &*server.lock() {
                    State::Connecting => "connecting".to_string(),
                    State::Ready { tools, .. } if tools.len() == 1 => "ready, 1 tool".into(),
                    State::Ready { tools, .. } => format!("ready, {} tools", tools.len()),
                    State::Failed { reason, retry_at } => {
                        let wait = retry_at.saturating_duration_since(now);
                        let secs = wait.as_millis().div_ceil(1000);
                        format!("failed: {reason}, retrying in {secs}s")
                    }
                };
                (server.name.clone(), words)
            })
            .collect()
    }

    /// The tools of the servers ready right now, sorted by name. A server still
    /// connecting adds its tools to a later call. Of two tools whose sanitised names
    /// collide, the first server's (in config order) is kept.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut by_name: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
        for server in &self.servers {
            let remote = match &*server.lock() {
                State::Ready { tools, .. } => tools.clone(),
                _ => continue,
            };
            for tool in &remote {
                let tool = McpTool::new(server.clone(), tool);
                let name = tool.spec().name;
                if by_name.contains_key(&name) {
                    tracing::warn!(mcp_server = %server.name, tool = %name, "duplicate MCP tool name; skipped");
                    continue;
                }
                by_name.insert(name, Arc::new(tool));
            }
        }
        by_name.into_values().collect()
    }

    /// One server as a command reports it: `Ok` with how it introduced itself ("name
    /// version, protocol 2025-11-25") when ready, else `Err` with its state in words
    /// (still connecting, or why it failed). `None` for a name not configured.
    pub fn report(&self, name: &str) -> Option<Result<String, NotReady>> {
        let server = self.servers.iter().find(|s| s.name == name)?;
        Some(match &*server.lock() {
            State::Ready { about, .. } => Ok(about.clone()),
            State::Connecting => Err(NotReady::Connecting),
            State::Failed { reason, .. } => Err(NotReady::Failed(reason.clone())),
        })
    }

    /// Wait until no server is still connecting, or `within` has passed: for commands
    /// that show the servers, and for a turn that starts while they connect (see
    /// `ready_for_turn`).
    pub async fn settle(&self, within: Duration) {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline
            && self
                .servers
                .iter()
                .any(|s| matches!(*s.lock(), State::Connecting))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl McpManager {
    /// Close every connection cleanly (each server told the session ends, each child
    /// process stopped), waiting up to `within`; what is still open then is dropped.
    /// For a command that exits next: dropping the manager at exit leaves rmcp closing
    /// its transports while the runtime shuts down.
    pub async fn close(&self, within: Duration) {
        self.stop.cancel();
        let deadline = Instant::now() + within;
        while Instant::now() < deadline && self.tasks.iter().any(|t| !t.is_finished()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Before a turn: wait up to `within` for servers still making their first
    /// connection, so their tools are offered; a server still not up is left out of the
    /// turn, with a note in the log. Returns at once when none is connecting.
    pub async fn ready_for_turn(&self, within: Duration) {
        let connecting = |s: &Arc<Server>| matches!(*s.lock(), State::Connecting);
        if !self.servers.iter().any(connecting) {
            return;
        }
        self.settle(within).await;
        for server in self.servers.iter().filter(|s| connecting(s)) {
            tracing::info!(
                server = %server.name,
                "MCP server still connecting after {}s (mcp.connect_wait_secs); this turn goes without its tools",
                within.as_secs()
            );
        }
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Server {
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// Whether the owner vouches for this server's tool names and descriptions.
    pub(super) fn trusted(&self) -> bool {
        self.trusted
    }

    /// The live session, or why there is none (worded for the model and the user).
    pub(super) fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        match &*self.lock() {
            State::Ready { peer, .. } => Ok(peer.clone()),
            State::Connecting => Err(ToolError::new(format!(
                "MCP server {} is not available (still connecting); try again shortly",
                self.name
            ))),
            State::Failed { reason, .. } => Err(ToolError::new(format!(
                "MCP server {} is not available ({reason}); it is being retried",
                self.name
            ))),
        }
    }

    /// A call starts: a question the server asks until it ends goes to the owner of
    /// the turn in `ctx` where they can be asked (see `asking`).
    pub(super) fn enter(&self, ctx: &ToolContext) -> InFlight<'_> {
        self.calls
            .enter(|call_id| Asker::for_call(&self.approvers, ctx, call_id))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave `State` half-written (every
        // write is one assignment), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, state: State) {
        *self.lock() = state;
    }
}

/// Keep one server connected for as long as the manager lives (until `stop`).
async fn supervise(
    server: Arc<Server>,
    config: McpServerConfig,
    folders: PathBuf,
    backoff: Backoff,
    stop: CancellationToken,
) {
    let mut failures = 0u32;
    loop {
        server.set(State::Connecting);
        let stderr = StderrTail::default();
        let connecting = connect(&config, &folders, &stderr, Arc::clone(&server.calls));
        let connected = tokio::select! {
            connected = connecting => connected,
            () = stop.cancelled() => return,
        };
        let reason = match connected {
            Ok(connection) => {
                let connected_at = Instant::now();
                tracing::info!(mcp_server = %config.name, tools = connection.tools.len(), about = %connection.about, "MCP server ready");
                server.set(State::Ready {
                    peer: connection.client.peer().clone(),
                    tools: connection.tools,
                    about: connection.about,
                });
                let closing = connection.client.cancellation_token();
                let waiting = connection.client.waiting();
                tokio::pin!(waiting);
                let quit = tokio::select! {
                    quit = &mut waiting => quit,
                    () = stop.cancelled() => {
                        closing.cancel();
                        // How it ended no longer matters: the manager is closing.
                        let _ = waiting.await;
                        return;
                    }
                };
                if connected_at.elapsed() >= HEALTHY_AFTER {
                    failures = 0;
                }
                match quit {
                    Ok(QuitReason::Closed) => "the server closed the connection".to_string(),
                    Ok(QuitReason::Cancelled) => "the connection was cancelled".to_string(),
                    Ok(QuitReason::JoinError(e)) | Err(e) => {
                        format!("the connection task failed: {e}")
                    }
                    Ok(other) => format!("the connection ended ({other:?})"),
                }
            }
            Err(reason) => reason.to_string(),
        };
        // Give the stderr reader a moment to catch the server's last words.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let reason = stderr.explain(reason);
        failures = failures.saturating_add(1);
        let delay = backoff.delay(failures);
        tracing::warn!(mcp_server = %config.name, %reason, retry_in = ?delay, "MCP server failed");
        server.set(State::Failed {
            reason,
            retry_at: Instant::now() + delay,
        });
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stop.cancelled() => return,
        }
    }
}
