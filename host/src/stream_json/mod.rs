//! `pincer agent --protocol stream-json`: the Claude Code CLI's stdio protocol (seed
//! 002), one JSON object a line both ways. In: `user` messages (queued, one turn each),
//! `control_request`s (`initialize`, `interrupt`, `set_permission_mode`, `set_model`,
//! `mcp_status`, `get_context_usage`; others answered as unsupported) and
//! `control_response`s to ours (`can_use_tool`, `hook_callback`, `mcp_message`). Out, per turn:
//! `system`/`init`, an `assistant` line per content block (text, thinking, tool_use), a
//! `user` line per tool result, `stream_event`s with `--include-partial-messages`, and
//! one `result`; `control_request` `can_use_tool` whenever a call needs approval (with
//! `--permission-prompt-tool stdio`; else such a call is refused with the reason).
//!
//! - `wire`    — the lines, as types
//! - `turn`    — a turn's chunks written as the conversation's lines
//! - `sdk_mcp` — the SDK's in-process MCP servers, reached through `mcp_message`
//!
//! This file reads the host's lines and answers them, and asks the host what the core
//! needs asked. Stdin ending is not a cancel: the queued messages are answered, then it
//! exits, 1 if the last turn failed. `session_id` in every line is the conversation's
//! key, so an SDK's `resume` comes back as `--resume <key>`.

use std::collections::{HashMap, VecDeque};
use std::process::ExitCode;

use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, oneshot};

mod sdk_mcp;
mod turn;
mod wire;

use super::hooks::{self, HookCall};
use super::{Args, Ask, Chat, Core};
use pincer_core::home::Home;
use pincer_core::tools::approval::Approval;
use pincer_core::tools::mode::PermissionMode;
use turn::Turn;
pub(crate) use wire::Hooks;
use wire::{
    Answered, CanUseTool, ContextUsage, Decision, Denial, HostRequest, Initialized, Input, Kept,
    Known, McpServer, Output, PincerReply, PincerRequest, Question, ReplyBody, Request, Rule,
    suggestions,
};

/// What `claude_code_version` says: the SDKs warn below 2.0.0.
pub(crate) const COMPAT_VERSION: &str = "2.1.0";

pub(crate) async fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    if !args.ignored.is_empty() {
        eprintln!(
            "pincer agent: ignoring {} (see README, Driving Pincer from other programs)",
            args.ignored.join(" ")
        );
    }
    let (asks_tx, asks) = mpsc::channel(8);
    let (hooks_tx, hook_calls) = mpsc::channel(8);
    let (servers, mcp_messages) = sdk_mcp::servers(&args.sdk_servers);
    let core = Core::start_hooked(home, asks_tx, Some(hooks_tx), servers)?;
    // `--fork-session`: the conversation goes on in a copy; the original is only read.
    let session = match (&args.session, args.fork_session) {
        (Some(from), true) => {
            let from = super::runner::open::local_key(from)?;
            Some(super::runner::open::fork(core.running.agent.store(), &from, None).await?)
        }
        (None, true) => {
            anyhow::bail!("--fork-session needs --resume: the conversation to fork")
        }
        (session, false) => session.clone(),
    };
    let chat = core.open(session.as_deref(), args.mode).await?;
    if let Some(max) = args.max_turns {
        core.running.agent.modes().set_max_calls(chat.session, max);
    }
    let mut host = Host {
        out: tokio::io::stdout(),
        chat,
        args,
        pending: HashMap::new(),
        next_request: 0,
        turn: None,
        queue: VecDeque::new(),
        failed: false,
        model: None,
        workspace: core.workspace.display().to_string(),
        agent: std::sync::Arc::clone(&core.running.agent),
        hooks: hooks::Registered::default(),
        hook_requests: HashMap::new(),
        gatherings: HashMap::new(),
        session_rules: Vec::new(),
        context_tokens: 0,
        sdk_mcp: sdk_mcp::SdkServers::default(),
    };
    if let Some(model) = host.args.model.clone()
        && let Err(err) = core
            .running
            .dispatcher
            .pin_model(&host.chat.key, &model)
            .await
    {
        eprintln!("pincer agent: --model {model}: {err}");
    }
    let result = host.serve(core, asks, hook_calls, mcp_messages).await;
    result.map(|failed| {
        if failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    })
}

struct Host {
    out: tokio::io::Stdout,
    chat: Chat,
    args: Args,
    /// Our `can_use_tool` requests waiting for the host's answer, by request id.
    pending: HashMap<String, Pending>,
    next_request: u64,
    /// The turn being answered, if any.
    turn: Option<Turn>,
    /// User messages waiting for the turn in progress to end.
    queue: VecDeque<String>,
    /// The last turn failed (the exit code).
    failed: bool,
    /// The last model that answered ("provider/model").
    model: Option<String>,
    workspace: String,
    /// For what `system/init` lists: the tools and the MCP servers.
    agent: std::sync::Arc<pincer_core::agent::Agent>,
    /// The hooks the SDK registered in `initialize`.
    hooks: hooks::Registered,
    /// Our `hook_callback` requests waiting for an answer: the call they gather for,
    /// whether a failure blocks, and the event.
    hook_requests: HashMap<String, (u64, bool, pincer_core::tools::host_hooks::HostHook)>,
    /// Hook calls from the core waiting for their callbacks, by a number of our own.
    gatherings: HashMap<u64, hooks::Gathering>,
    /// Allow rules the host added for this session (`updatedPermissions`, `addRules`):
    /// a call they cover is not asked again.
    session_rules: Vec<Rule>,
    /// The last model call's prompt size (input, cache read and write tokens), for
    /// `get_context_usage`.
    context_tokens: u64,
    /// Messages for the SDK's in-process MCP servers waiting for their answer.
    sdk_mcp: sdk_mcp::SdkServers,
}

struct Pending {
    answer: oneshot::Sender<Approval>,
    tool: String,
    input: Value,
    /// The call's id (`permission_denials[].tool_use_id`).
    call_id: String,
    /// What the call would do, as a permission rule names it (`addRules`).
    subject: String,
}

impl Host {
    async fn line(&mut self, line: Output) -> anyhow::Result<()> {
        super::write_line(&mut self.out, &line).await
    }

    /// The conversation's key: every line's `session_id`.
    fn session(&self) -> String {
        self.chat.key.to_string()
    }

    /// Serve until stdin ended and the queue is answered; whether the last turn failed.
    async fn serve(
        &mut self,
        core: Core,
        mut asks: mpsc::Receiver<Ask>,
        mut hook_calls: mpsc::Receiver<HookCall>,
        mut mcp_messages: mpsc::Receiver<pincer_core::mcp::HostMessage>,
    ) -> anyhow::Result<bool> {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let (handles, mut outbound, stop) = core.split();
        let running = &handles;
        let mut stdin_open = true;
        loop {
            if !stdin_open && self.turn.is_none() && self.queue.is_empty() {
                break;
            }
            tokio::select! {
                line = lines.next_line(), if stdin_open => match line {
                    Ok(Some(line)) => self.input(&line, running).await?,
                    // End of input (or unreadable input): answer what is queued, then go.
                    _ => {
                        stdin_open = false;
                        self.nobody_answers();
                    }
                },
                call = hook_calls.recv() => {
                    if let Some(call) = call {
                        self.hook_call(call, stdin_open).await?;
                    }
                }
                message = outbound.recv() => {
                    let Some(message) = message else { break };
                    self.output(message.body).await?;
                    if self.turn.is_none() && let Some(next) = self.queue.pop_front() {
                        self.begin(next, running).await?;
                    }
                }
                Some(message) = mcp_messages.recv() => {
                    if let Some(line) = self.sdk_mcp.request(message, stdin_open) {
                        self.line(Output::ControlRequest(line)).await?;
                    }
                }
                ask = asks.recv() => {
                    if let Some(ask) = ask {
                        self.ask(ask, stdin_open).await?;
                    }
                }
            }
        }
        let failed = self.failed;
        stop.await;
        Ok(failed)
    }

    /// One line from the host.
    async fn input(&mut self, line: &str, running: &super::Handles) -> anyhow::Result<()> {
        if line.trim().is_empty() {
            return Ok(());
        }
        let input = match Input::read(line) {
            Ok(input) => input,
            Err(err) => {
                eprintln!("pincer agent: a line that is not JSON was ignored: {err}");
                return Ok(());
            }
        };
        match input {
            Input::User(user) => {
                let text = user.message.content.text();
                if self.turn.is_some() {
                    self.queue.push_back(text);
                } else {
                    self.begin(text, running).await?;
                }
            }
            Input::ControlRequest(request) => self.control(request, running).await?,
            Input::ControlResponse(answer) => self.answered(answer.answered(), running),
            Input::ControlCancelRequest { request_id } => {
                if let Some(pending) = request_id.and_then(|id| self.pending.remove(&id)) {
                    let _ = pending.answer.send(Approval::Deny);
                }
            }
            Input::KeepAlive | Input::UpdateEnvironmentVariables { .. } | Input::Other => {}
        }
        Ok(())
    }

    /// The host closed its input: nobody is left to answer approvals, hooks or MCP.
    fn nobody_answers(&mut self) {
        for (_, pending) in self.pending.drain() {
            let why = "the host closed its input; nobody can approve";
            let _ = pending.answer.send(Approval::Unavailable(why.into()));
        }
        self.hook_requests.clear();
        self.sdk_mcp.close();
        for (_, gathering) in self.gatherings.drain() {
            let _ = gathering.answer.send(gathering.answers);
        }
    }

    async fn begin(&mut self, text: String, running: &super::Handles) -> anyhow::Result<()> {
        self.turn = Some(Turn::default());
        self.chat.send(text, running).await
    }

    async fn control(
        &mut self,
        message: HostRequest,
        running: &super::Handles,
    ) -> anyhow::Result<()> {
        let HostRequest {
            request_id,
            request,
        } = message;
        let request = match request {
            Request::Known(request) => request,
            Request::Unsupported(other) => {
                let why = format!("{} is not supported by pincer agent", other.subtype);
                return self.reply(request_id, Err(why)).await;
            }
        };
        let answer = match request {
            Known::Initialize(initialize) => {
                match hooks::Registered::from_initialize(initialize.hooks.unwrap_or_default()) {
                    Ok(registered) => {
                        self.hooks = registered;
                        Ok(ReplyBody::Initialized(Box::new(Initialized::pincer())))
                    }
                    Err(why) => Err(why.to_string()),
                }
            }
            Known::Interrupt => {
                running.dispatcher.stop(&self.chat.key);
                for (_, pending) in self.pending.drain() {
                    let _ = pending.answer.send(Approval::Deny);
                }
                Ok(ReplyBody::Interrupted {
                    still_queued: Vec::new(),
                })
            }
            Known::SetPermissionMode { mode: name } => match PermissionMode::parse(&name) {
                Some(mode) => {
                    running.agent.modes().set(self.chat.session, mode);
                    Ok(ReplyBody::Mode {
                        mode: mode.as_str().into(),
                    })
                }
                None => Err(format!(
                    "{name} is not a permission mode; use default, acceptEdits, plan, bypassPermissions or dontAsk"
                )),
            },
            Known::SetModel { model } => {
                let model = model.unwrap_or_else(|| "auto".into());
                running
                    .dispatcher
                    .pin_model(&self.chat.key, &model)
                    .await
                    .map(|_| ReplyBody::Model { model })
                    .map_err(|err| err.to_string())
            }
            Known::McpStatus => Ok(ReplyBody::McpStatus {
                mcp_servers: McpServer::all(self.agent.mcp_status()),
            }),
            Known::GetContextUsage => match &self.model {
                Some(model) => Ok(ReplyBody::ContextUsage(Box::new(ContextUsage::new(
                    model,
                    self.agent.models().caps.context_tokens(model),
                    self.context_tokens,
                )))),
                None => Err(NO_MODEL_YET.into()),
            },
        };
        self.reply(request_id, answer).await
    }

    async fn reply(&mut self, id: String, answer: Result<ReplyBody, String>) -> anyhow::Result<()> {
        self.line(Output::ControlResponse(PincerReply::to(id, answer)))
            .await
    }

    /// The host answered one of our requests: an MCP message, a hook callback or a
    /// `can_use_tool`.
    fn answered(&mut self, answer: Answered, running: &super::Handles) {
        let Some(id) = answer.request_id else {
            return;
        };
        let outcome = answer.outcome;
        if self.sdk_mcp.waits_for(&id) {
            self.sdk_mcp.answered(&id, outcome);
            return;
        }
        if let Some((gathering, block, event)) = self.hook_requests.remove(&id) {
            let answer = match outcome {
                Err(error) => {
                    let error = error.unwrap_or_else(|| "no reason given".into());
                    eprintln!(
                        "pincer agent: the host's {} hook failed: {error}",
                        event.name()
                    );
                    hooks::failed(block, event, &error)
                }
                Ok(output) => Some(output),
            };
            self.hook_answered(gathering, answer);
            return;
        }
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        let approval = match outcome {
            Err(error) => {
                Approval::Refused(error.unwrap_or_else(|| "the host could not answer".into()))
            }
            Ok(body) => self.decided(crate::lenient::read(body), &pending, running),
        };
        let _ = pending.answer.send(approval);
    }

    /// What the host's decision on a `can_use_tool` means for the call.
    fn decided(
        &mut self,
        decision: Decision,
        pending: &Pending,
        running: &super::Handles,
    ) -> Approval {
        // A `setMode` among the permission updates applies to this conversation.
        if let Some(mode) = decision.set_mode() {
            running.agent.modes().set(self.chat.session, mode);
        }
        if !decision.allows() {
            let why = decision
                .message
                .clone()
                .unwrap_or_else(|| "the host said no".into());
            if let Some(turn) = self.turn.as_mut() {
                turn.denials.push(Denial {
                    tool_name: pending.tool.clone(),
                    tool_use_id: pending.call_id.clone(),
                    tool_input: pending.input.clone(),
                });
            }
            if decision.interrupts() {
                running.dispatcher.stop(&self.chat.key);
            }
            return Approval::Refused(why);
        }
        if pending.tool == pincer_core::tools::question::QUESTION {
            // The answer is the question's input as the host gave it back.
            let answer = decision
                .updated_input
                .as_ref()
                .and_then(|input| input.get("answer"))
                .and_then(Value::as_str);
            return match answer {
                Some(answer) => Approval::Answered(answer.to_string()),
                None => Approval::Refused(
                    "the host allowed the question without an answer (updatedInput.answer)".into(),
                ),
            };
        }
        match decision.updated_input {
            Some(ref input) if *input != pending.input && input.is_object() => {
                Approval::Edited(input.clone())
            }
            _ => match decision.allow_rule(&pending.tool, &pending.subject) {
                Some(Kept::Stored) => Approval::Always,
                Some(Kept::Session) => {
                    self.session_rules.extend(decision.added_rules());
                    Approval::Once
                }
                None => Approval::Once,
            },
        }
    }

    /// The core calls the host's hooks: a `hook_callback` for each callback that
    /// matches; the answers go back when all are in (none match: at once).
    async fn hook_call(&mut self, call: HookCall, stdin_open: bool) -> anyhow::Result<()> {
        let tool = call.input.get("tool_name").and_then(Value::as_str);
        let matching = self.hooks.matching(call.event, tool);
        if matching.is_empty() || !stdin_open {
            let _ = call.answer.send(Vec::new());
            return Ok(());
        }
        let mut input = call.input;
        let mode = self
            .agent
            .modes()
            .get(self.chat.session)
            .unwrap_or(self.args.mode);
        // The hook input is the core's, free-form; the session's fields go beside its own.
        if let Some(fields) = input.as_object_mut() {
            fields.insert("session_id".into(), self.session().into());
            fields.insert("transcript_path".into(), "".into());
            fields.insert("cwd".into(), self.workspace.clone().into());
            fields.insert("permission_mode".into(), mode.as_str().into());
        }
        let tool_use_id = input
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        self.next_request += 1;
        let gathering = self.next_request;
        self.gatherings.insert(
            gathering,
            hooks::Gathering {
                answer: call.answer,
                waiting: matching.len(),
                answers: Vec::new(),
            },
        );
        for (callback, block) in matching {
            self.next_request += 1;
            let id = format!("pincer-hook-{}", self.next_request);
            self.hook_requests
                .insert(id.clone(), (gathering, block, call.event));
            let request = Question::HookCallback {
                callback_id: callback,
                input: input.clone(),
                tool_use_id: tool_use_id.clone(),
            };
            self.line(Output::ControlRequest(PincerRequest {
                request_id: id,
                request,
            }))
            .await?;
        }
        Ok(())
    }

    fn hook_answered(&mut self, gathering: u64, answer: Option<Value>) {
        let Some(waiting) = self.gatherings.get_mut(&gathering) else {
            return;
        };
        waiting.answers.extend(answer);
        waiting.waiting -= 1;
        if waiting.waiting == 0
            && let Some(done) = self.gatherings.remove(&gathering)
        {
            let _ = done.answer.send(done.answers);
        }
    }

    /// A question for the host: `can_use_tool`, when it asked to be asked.
    async fn ask(&mut self, ask: Ask, stdin_open: bool) -> anyhow::Result<()> {
        if !self.args.ask_host || !stdin_open {
            let why = format!(
                "{} needs approval, and the host did not ask to approve calls (--permission-prompt-tool stdio); do not retry it",
                ask.request.tool
            );
            let _ = ask.answer.send(Approval::Unavailable(why));
            return Ok(());
        }
        let request = &ask.request;
        let answered_before = request.tool != pincer_core::tools::question::QUESTION
            && request.tool != pincer_core::tools::mode::EXIT_PLAN_MODE
            && self
                .session_rules
                .iter()
                .any(|rule| rule.covers(&request.tool, &request.subject));
        if answered_before {
            let _ = ask.answer.send(Approval::Once);
            return Ok(());
        }
        self.next_request += 1;
        let id = format!("pincer-req-{}", self.next_request);
        // The model's message is complete once its calls are asked about.
        self.end_message().await?;
        let exit_plan = request.tool == pincer_core::tools::mode::EXIT_PLAN_MODE;
        let question = CanUseTool {
            tool_name: request.tool.clone(),
            display_name: request.tool.clone(),
            input: request.input.clone(),
            tool_use_id: request.call_id.clone(),
            description: format!("{} {}", request.tool, request.subject),
            permission_suggestions: suggestions(&request.tool, &request.subject),
            // A file tool's input names its file.
            blocked_path: request
                .input
                .get("path")
                .and_then(Value::as_str)
                .map(str::to_string),
            decision_reason: request.why.as_ref().map(|why| format!("asked {why}")),
            requires_user_interaction: exit_plan.then_some(true),
        };
        let line = PincerRequest {
            request_id: id.clone(),
            request: Question::CanUseTool(Box::new(question)),
        };
        self.pending.insert(
            id,
            Pending {
                answer: ask.answer,
                tool: request.tool.clone(),
                input: request.input.clone(),
                call_id: request.call_id.clone(),
                subject: request.subject.clone(),
            },
        );
        self.line(Output::ControlRequest(line)).await
    }
}

/// `get_context_usage` before any model answered.
const NO_MODEL_YET: &str =
    "no model has answered in this conversation yet; ask again after the first turn";
