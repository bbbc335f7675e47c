//! `pincer agent --protocol runner`: seed 001's JSON lines, one process per
//! conversation, as a backend written from seed 001 alone expects them (docs/protocols.md
//! lists every input, flag and event, and what Pincer does differently).
//!
//! - `open`   — the conversation the flags name (`--conversation-id`, `--resume`,
//!   `--fork`), its `--tool-preset`, and the note when `--cwd` is not the workspace
//! - `input`  — the host's lines: messages, commands, answers, and the queries
//!   (`get_supported_models`, `get_supported_commands`, `get_mcp_status`, …)
//! - `output` — the turn's one chunk stream (and command answers) as seed 001's events,
//!   with the turn's stats for `result`
//! - `asks`   — requests waiting for the host; an unanswered `permission_request` (Pincer's
//!   own event) is refused after `host.approval_timeout_secs`
//! - `wire`   — the lines both ways, as types
//!
//! This file starts the runner (`ready`, `session_started`, `session_id_update`) and
//! runs its loop until `stop` or the end of stdin (`session_ended`, `complete`,
//! `shutdown`). It writes only stdout; the core's state is the core's.

mod asks;
mod input;
pub(super) mod open;
mod output;
mod wire;

use std::collections::VecDeque;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use super::{Args, Ask, Chat, Core, Handles};
use asks::Asks;
use output::Turn;
use pincer_core::agent::Agent;
use pincer_core::home::Home;
use pincer_core::tools::mode::PermissionMode;
use pincer_core::tools::preset::ToolPreset;
use wire::{Event, Question, QuestionOption};

/// How often a tool still running is reported (`tool_progress`).
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

pub(crate) async fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let (asks_tx, asks) = mpsc::channel(8);
    let core = Core::start(home, asks_tx)?;
    let timeout = approval_timeout(home)?;
    let opened = open::open(&core, &args).await?;
    for note in &opened.notes {
        eprintln!("pincer agent: {note}");
    }
    let agent = Arc::clone(&core.running.agent);
    let summary_upto = agent
        .store()
        .session_meta(opened.chat.session)
        .await?
        .summary_upto;
    let preset = args.runner.preset;
    let tools = agent
        .tools()
        .specs()
        .iter()
        .filter(|spec| preset.allows(agent.tools().effects_of(&spec.name)))
        .map(|spec| spec.name.clone())
        .collect();
    let mut runner = Runner {
        out: tokio::io::stdout(),
        chat: opened.chat,
        agent,
        mode: args.mode,
        model: args.model.clone(),
        preset,
        asks: Asks::new(timeout),
        turn: None,
        queue: VecDeque::new(),
        workspace: core.workspace.display().to_string(),
        tools,
        summary_upto,
    };
    if let Some(model) = &args.model
        && let Err(err) = core
            .running
            .dispatcher
            .pin_model(&runner.chat.key, model)
            .await
    {
        runner.command_error("set_model", err.to_string()).await?;
    }
    let key = runner.session();
    runner
        .line(Event::Ready {
            provider: "pincer".into(),
            conversation_id: key.clone(),
            session_id: key.clone(),
            cwd: runner.workspace.clone(),
            resuming: opened.resuming,
            forking: opened.forked_from.is_some(),
            forked_from: opened.forked_from,
            model: runner.model_name(),
            permission_mode: runner.mode.as_str().into(),
            tool_preset: runner.preset.as_str().into(),
            ignored: args.ignored,
            notes: opened.notes,
        })
        .await?;
    let source = if opened.resuming { "resume" } else { "startup" };
    runner
        .line(Event::SessionStarted {
            session_id: key.clone(),
            source: source.into(),
            cwd: runner.workspace.clone(),
        })
        .await?;
    runner
        .line(Event::SessionIdUpdate { session_id: key })
        .await?;
    runner.serve(core, asks).await
}

/// `host.approval_timeout_secs` (the core read the same file a moment ago).
fn approval_timeout(home: &Home) -> anyhow::Result<Duration> {
    let env = pincer_core::home::env_vars();
    let config = pincer_config::load(&home.config_file, &home.security_file, &env)?;
    Ok(Duration::from_secs(config.host.approval_timeout_secs))
}

struct Runner {
    out: tokio::io::Stdout,
    chat: Chat,
    /// For the tools' effects (stats, presets), models, MCP state and the store.
    agent: Arc<Agent>,
    mode: PermissionMode,
    /// The model the host pinned (`--model`, `set_model`).
    model: Option<String>,
    preset: ToolPreset,
    asks: Asks,
    /// The turn (or command) in progress.
    turn: Option<Turn>,
    /// Messages that came while one was in progress, in order.
    queue: VecDeque<String>,
    workspace: String,
    /// The built-in tools the preset keeps, for `init`.
    tools: Vec<String>,
    /// How far the conversation's summary reached when the last turn ended: a change
    /// is a compaction (`compact_boundary`).
    summary_upto: Option<i64>,
}

impl Runner {
    async fn line(&mut self, event: Event) -> anyhow::Result<()> {
        super::write_line(&mut self.out, &event).await
    }

    /// The conversation's key: every event's `sessionId`.
    fn session(&self) -> String {
        self.chat.key.to_string()
    }

    fn model_name(&self) -> String {
        self.model.clone().unwrap_or_else(|| "(default)".into())
    }

    async fn serve(
        &mut self,
        core: Core,
        mut asks: mpsc::Receiver<Ask>,
    ) -> anyhow::Result<ExitCode> {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let (handles, mut outbound, stop) = core.split();
        let running = &handles;
        let mut stopping = false;
        let mut stdin_open = true;
        let mut progress = tokio::time::interval(PROGRESS_EVERY);
        progress.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let reason = loop {
            if (stopping || !stdin_open) && self.turn.is_none() && self.queue.is_empty() {
                break if stopping { "stop" } else { "input closed" };
            }
            let deadline = self.asks.next_deadline();
            let tools_running = self.turn.as_ref().is_some_and(Turn::tools_running);
            tokio::select! {
                line = lines.next_line(), if stdin_open && !stopping => match line {
                    Ok(Some(line)) => {
                        if self.input(&line, running).await? {
                            stopping = true;
                        }
                    }
                    _ => stdin_open = false,
                },
                message = outbound.recv() => {
                    let Some(message) = message else { break "the core stopped" };
                    self.output(message.body).await?;
                    if self.turn.is_none() && let Some(next) = self.queue.pop_front() {
                        self.begin(next, running).await?;
                    }
                }
                ask = asks.recv() => {
                    if let Some(ask) = ask {
                        self.ask(ask).await?;
                    }
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)),
                    if deadline.is_some() => self.expire().await?,
                _ = progress.tick(), if tools_running => self.progress().await?,
            }
        };
        let session = self.session();
        self.line(Event::SessionEnded {
            reason: reason.into(),
            session_id: session.clone(),
        })
        .await?;
        self.line(Event::Complete {
            session_id: session,
        })
        .await?;
        self.line(Event::Shutdown {
            reason: reason.into(),
        })
        .await?;
        stop.await;
        Ok(ExitCode::SUCCESS)
    }

    /// Start a turn (or a command) with `text`, as if typed.
    async fn begin(&mut self, text: String, running: &Handles) -> anyhow::Result<()> {
        let command = pincer_core::dispatch::parse_command(&text).is_some();
        self.turn = Some(Turn::new(command));
        self.chat.send(text, running).await
    }

    /// A request from the core for the host: sent as seed 001's plan or question
    /// request, or as Pincer's `permission_request`, which expires.
    async fn ask(&mut self, ask: Ask) -> anyhow::Result<()> {
        let request = &ask.request;
        let session = self.session();
        let line = if request.tool == pincer_core::tools::question::QUESTION {
            // The question tool's input, free-form: its question and options as given.
            let question = request.input.get("question").cloned().unwrap_or_default();
            let options = request
                .input
                .get("options")
                .and_then(|options| options.as_array())
                .into_iter()
                .flatten()
                .map(|option| QuestionOption {
                    label: option.clone(),
                    description: String::new(),
                })
                .collect();
            let text = question.as_str().unwrap_or_default().to_string();
            let id = self
                .asks
                .add(asks::Kind::Question, &request.tool, Some(text), ask.answer);
            Event::UserQuestionRequest {
                request_id: id,
                session_id: session,
                questions: vec![Question {
                    question,
                    header: "Question".into(),
                    options,
                    multi_select: false,
                }],
            }
        } else if request.tool == pincer_core::tools::mode::EXIT_PLAN_MODE {
            let id = self
                .asks
                .add(asks::Kind::Plan, &request.tool, None, ask.answer);
            Event::PlanApprovalRequest {
                request_id: id,
                session_id: session,
                plan: request.input.get("plan").cloned().unwrap_or_default(),
            }
        } else {
            let id = self
                .asks
                .add(asks::Kind::Permission, &request.tool, None, ask.answer);
            Event::PermissionRequest {
                request_id: id,
                session_id: session,
                tool: request.tool.clone(),
                input: request.input.clone(),
                tool_use_id: request.call_id.clone(),
                timeout_seconds: self.asks.timeout_secs(),
            }
        };
        self.line(line).await
    }

    /// Refuse the permission requests nobody answered in time, and tell the host.
    async fn expire(&mut self) -> anyhow::Result<()> {
        for (id, tool, why) in self.asks.expire(tokio::time::Instant::now()) {
            let message = format!(
                "permission request {id}: {why}; answer with permission_response {{requestId, allow}}, or start the runner with --permission-mode bypassPermissions"
            );
            self.line(Event::Warning {
                request_id: Some(id),
                tool: Some(tool),
                message,
            })
            .await?;
        }
        Ok(())
    }
}
