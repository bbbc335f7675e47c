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
//! Stdin ending is not a cancel: the queued messages are answered, then it exits, 1 if
//! the last turn failed. `session_id` in every line is the conversation's key, so an
//! SDK's `resume` comes back as `--resume <key>`.

use std::collections::{HashMap, VecDeque};
use std::process::ExitCode;

use pincer_channels::{Chunk, FinishReason, OutboundBody};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, oneshot};

mod sdk_mcp;
mod wire;

use super::hooks::{self, HookCall};
use super::{Args, Ask, Chat, Core, uuid};
use pincer_core::home::Home;
use pincer_core::tools::approval::Approval;
use pincer_core::tools::mode::PermissionMode;
use wire::{
    Kept, adapted, added_rules, allow_rule, context_usage, covers, initialized, mcp_servers,
    result, set_mode, suggestions, user_text,
};

/// What `claude_code_version` says: the SDKs warn below 2.0.0.
pub const COMPAT_VERSION: &str = "2.1.0";

pub async fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
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
    session_rules: Vec<Value>,
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

/// One turn's output state.
#[derive(Default)]
struct Turn {
    started: bool,
    step: u32,
    /// The content block index within the current model call (stream events).
    index: u32,
    /// Reasoning text of the open block.
    thinking: String,
    /// The last text block: the turn's `result`.
    last_text: String,
    denials: Vec<Value>,
    /// The current model call made tool calls (its `stop_reason` is `tool_use`).
    step_tools: bool,
    /// The current model call's `message_delta`/`message_stop` went out.
    step_ended: bool,
}

impl Host {
    async fn line(&mut self, value: Value) -> anyhow::Result<()> {
        super::write_line(&mut self.out, &value).await
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
                        self.line(line).await?;
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
        let message: Value = match serde_json::from_str(line) {
            Ok(message) => message,
            Err(err) => {
                eprintln!("pincer agent: a line that is not JSON was ignored: {err}");
                return Ok(());
            }
        };
        match message["type"].as_str().unwrap_or_default() {
            "user" => {
                let text = user_text(&message["message"]["content"]);
                if self.turn.is_some() {
                    self.queue.push_back(text);
                } else {
                    self.begin(text, running).await?;
                }
            }
            "control_request" => self.control(&message, running).await?,
            "control_response" => self.answered(&adapted(&message), running),
            "control_cancel_request" => {
                if let Some(id) = message["request_id"].as_str()
                    && let Some(pending) = self.pending.remove(id)
                {
                    let _ = pending.answer.send(Approval::Deny);
                }
            }
            // keep_alive, update_environment_variables and what comes after.
            _ => {}
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

    async fn control(&mut self, message: &Value, running: &super::Handles) -> anyhow::Result<()> {
        let id = message["request_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let request = &message["request"];
        let answer = match request["subtype"].as_str().unwrap_or_default() {
            "initialize" => match hooks::Registered::from_initialize(&request["hooks"]) {
                Ok(registered) => {
                    self.hooks = registered;
                    Ok(initialized())
                }
                Err(why) => Err(why),
            },
            "interrupt" => {
                running.dispatcher.stop(&self.chat.key);
                for (_, pending) in self.pending.drain() {
                    let _ = pending.answer.send(Approval::Deny);
                }
                Ok(json!({"still_queued": []}))
            }
            "set_permission_mode" => {
                let name = request["mode"].as_str().unwrap_or_default();
                match PermissionMode::parse(name) {
                    Some(mode) => {
                        running.agent.modes().set(self.chat.session, mode);
                        Ok(json!({"mode": mode.as_str()}))
                    }
                    None => Err(format!(
                        "{name} is not a permission mode; use default, acceptEdits, plan, bypassPermissions or dontAsk"
                    )),
                }
            }
            "set_model" => {
                let model = request["model"].as_str().unwrap_or("auto");
                running
                    .dispatcher
                    .pin_model(&self.chat.key, model)
                    .await
                    .map(|_| json!({"model": model}))
                    .map_err(|err| err.to_string())
            }
            "mcp_status" => Ok(json!({"mcpServers": mcp_servers(self.agent.mcp_status())})),
            "get_context_usage" => match &self.model {
                Some(model) => Ok(context_usage(
                    model,
                    self.agent.models().caps.context_tokens(model),
                    self.context_tokens,
                )),
                None => Err(wire::NO_MODEL_YET.into()),
            },
            other => Err(format!("{other} is not supported by pincer agent")),
        };
        let response = match answer {
            Ok(response) => json!({"subtype": "success", "request_id": id, "response": response}),
            Err(error) => json!({"subtype": "error", "request_id": id, "error": error}),
        };
        self.line(json!({"type": "control_response", "response": response}))
            .await
    }

    /// The host answered one of our `can_use_tool` requests.
    fn answered(&mut self, response: &Value, running: &super::Handles) {
        let Some(id) = response["request_id"].as_str() else {
            return;
        };
        if self.sdk_mcp.answered(response) {
            return;
        }
        if let Some((gathering, block, event)) = self.hook_requests.remove(id) {
            let answer = if response["subtype"] == "error" {
                let error = response["error"].as_str().unwrap_or("no reason given");
                eprintln!(
                    "pincer agent: the host's {} hook failed: {error}",
                    event.name()
                );
                hooks::failed(block, event, error)
            } else {
                Some(response["response"].clone())
            };
            self.hook_answered(gathering, answer);
            return;
        }
        let Some(pending) = self.pending.remove(id) else {
            return;
        };
        let body = &response["response"];
        let approval = if response["subtype"] == "error" {
            Approval::Refused(
                response["error"]
                    .as_str()
                    .unwrap_or("the host could not answer")
                    .to_string(),
            )
        } else {
            // `behavior`, or the older adapters' `subtype` in its place.
            let behavior = body["behavior"]
                .as_str()
                .or_else(|| body["subtype"].as_str())
                .unwrap_or("deny");
            // A `setMode` among the permission updates applies to this conversation.
            if let Some(mode) = set_mode(&body["updatedPermissions"]) {
                running.agent.modes().set(self.chat.session, mode);
            }
            match behavior {
                "allow" if pending.tool == pincer_core::tools::question::QUESTION => {
                    match body["updatedInput"]["answer"].as_str() {
                        Some(answer) => Approval::Answered(answer.to_string()),
                        None => Approval::Refused(
                            "the host allowed the question without an answer (updatedInput.answer)"
                                .into(),
                        ),
                    }
                }
                "allow" => match body.get("updatedInput") {
                    Some(input) if *input != pending.input && input.is_object() => {
                        Approval::Edited(input.clone())
                    }
                    _ => match allow_rule(&body["updatedPermissions"], &pending) {
                        Some(Kept::Stored) => Approval::Always,
                        Some(Kept::Session) => {
                            self.session_rules
                                .extend(added_rules(&body["updatedPermissions"]));
                            Approval::Once
                        }
                        None => Approval::Once,
                    },
                },
                _ => {
                    let why = body["message"]
                        .as_str()
                        .unwrap_or("the host said no")
                        .to_string();
                    if let Some(turn) = self.turn.as_mut() {
                        turn.denials.push(json!({
                            "tool_name": pending.tool,
                            "tool_use_id": pending.call_id,
                            "tool_input": pending.input,
                        }));
                    }
                    if body["interrupt"] == true {
                        running.dispatcher.stop(&self.chat.key);
                    }
                    Approval::Refused(why)
                }
            }
        };
        let _ = pending.answer.send(approval);
    }

    /// The core calls the host's hooks: a `hook_callback` for each callback that
    /// matches; the answers go back when all are in (none match: at once).
    async fn hook_call(&mut self, call: HookCall, stdin_open: bool) -> anyhow::Result<()> {
        let tool = call.input["tool_name"].as_str();
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
        input["session_id"] = json!(self.chat.key.to_string());
        input["transcript_path"] = json!("");
        input["cwd"] = json!(self.workspace);
        input["permission_mode"] = json!(mode.as_str());
        let tool_use_id = input["tool_use_id"].clone();
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
            let request = json!({"subtype": "hook_callback", "callback_id": callback,
                "input": input, "tool_use_id": tool_use_id});
            self.line(json!({"type": "control_request", "request_id": id, "request": request}))
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
                .any(|rule| covers(rule, &request.tool, &request.subject));
        if answered_before {
            let _ = ask.answer.send(Approval::Once);
            return Ok(());
        }
        self.next_request += 1;
        let id = format!("pincer-req-{}", self.next_request);
        let mut line = json!({
            "type": "control_request",
            "request_id": id,
            "request": {
                "subtype": "can_use_tool",
                "tool_name": request.tool,
                "display_name": request.tool,
                "input": request.input,
                "tool_use_id": request.call_id,
                "description": format!("{} {}", request.tool, request.subject),
                "permission_suggestions": suggestions(&request.tool, &request.subject),
            }
        });
        if let Some(path) = request.input["path"].as_str() {
            line["request"]["blocked_path"] = json!(path);
        }
        // The model's message is complete once its calls are asked about.
        self.end_message().await?;
        if let Some(why) = &request.why {
            line["request"]["decision_reason"] = json!(format!("asked {why}"));
        }
        if request.tool == pincer_core::tools::mode::EXIT_PLAN_MODE {
            line["request"]["requires_user_interaction"] = json!(true);
        }
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
        self.line(line).await
    }

    /// One piece of the core's output.
    async fn output(&mut self, body: OutboundBody) -> anyhow::Result<()> {
        let OutboundBody::Chunk(chunk) = body else {
            // A command's answer, a notice: not part of the protocol's turn.
            if let OutboundBody::Done = body {
                // A message that started no turn (a command typed as a message).
                self.turn = None;
            }
            return Ok(());
        };
        let session = self.chat.key.to_string();
        match chunk {
            Chunk::Start { .. } => {
                self.turn.get_or_insert_with(Turn::default).started = true;
                let init = self.init();
                self.line(init).await?;
            }
            Chunk::StartStep => {
                let turn = self.turn.get_or_insert_with(Turn::default);
                turn.step += 1;
                turn.index = 0;
                turn.step_tools = false;
                turn.step_ended = false;
                if self.args.partial {
                    let message = json!({"id": self.message_id(), "type": "message", "role": "assistant",
                        "model": self.model_name(), "content": [], "stop_reason": null, "stop_sequence": null,
                        "usage": {"input_tokens": 0, "output_tokens": 0}});
                    self.event(json!({"type": "message_start", "message": message}))
                        .await?;
                }
            }
            Chunk::TextStart { .. } => {
                self.block_start(json!({"type": "text", "text": ""}))
                    .await?;
            }
            Chunk::TextDelta { delta, .. } => {
                self.block_delta(json!({"type": "text_delta", "text": delta}))
                    .await?;
            }
            Chunk::TextEnd { text, .. } => {
                if !text.trim().is_empty() {
                    if let Some(turn) = self.turn.as_mut() {
                        turn.last_text.clone_from(&text);
                    }
                    self.assistant(json!({"type": "text", "text": text}))
                        .await?;
                }
                self.block_stop().await?;
            }
            Chunk::ReasoningStart { .. } => {
                self.block_start(json!({"type": "thinking", "thinking": ""}))
                    .await?;
            }
            Chunk::ReasoningDelta { delta, .. } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.thinking.push_str(&delta);
                }
                self.block_delta(json!({"type": "thinking_delta", "thinking": delta}))
                    .await?;
            }
            Chunk::ReasoningEnd { .. } => {
                let thinking = self
                    .turn
                    .as_mut()
                    .map(|t| std::mem::take(&mut t.thinking))
                    .unwrap_or_default();
                self.assistant(json!({"type": "thinking", "thinking": thinking, "signature": ""}))
                    .await?;
                self.block_stop().await?;
            }
            Chunk::ToolInputStart {
                tool_call_id,
                tool_name,
            } => {
                self.block_start(
                    json!({"type": "tool_use", "id": tool_call_id, "name": tool_name, "input": {}}),
                )
                .await?;
            }
            Chunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
            } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.step_tools = true;
                }
                self.block_delta(
                    json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                )
                .await?;
                self.assistant(json!({"type": "tool_use", "id": tool_call_id, "name": tool_name, "input": input}))
                    .await?;
                self.block_stop().await?;
            }
            Chunk::ToolOutputAvailable {
                tool_call_id,
                output,
            } => self.tool_result(&tool_call_id, &output, false).await?,
            Chunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => self.tool_result(&tool_call_id, &error_text, true).await?,
            Chunk::FinishStep => self.end_message().await?,
            Chunk::Retract => {}
            Chunk::Error { error_text } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.last_text = error_text;
                }
            }
            Chunk::Finish { reason, usage } => {
                if usage.model.is_some() {
                    self.model.clone_from(&usage.model);
                }
                let last = usage.last_call;
                if last.input + last.cache_read + last.cache_write > 0 {
                    self.context_tokens = last.input + last.cache_read + last.cache_write;
                }
                let turn = self.turn.take().unwrap_or_default();
                self.failed = reason != FinishReason::Stop;
                let result = result(&session, reason, &usage, turn);
                self.line(result).await?;
            }
        }
        Ok(())
    }

    /// The model's message is complete: `message_delta` (its `stop_reason`) and
    /// `message_stop`, once per model call, before its calls are asked about or run
    /// (as the CLI orders them).
    async fn end_message(&mut self) -> anyhow::Result<()> {
        let Some(turn) = self.turn.as_mut().filter(|t| t.step > 0 && !t.step_ended) else {
            return Ok(());
        };
        turn.step_ended = true;
        let stop = if turn.step_tools {
            "tool_use"
        } else {
            "end_turn"
        };
        self.event(json!({"type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 0}}))
            .await?;
        self.event(json!({"type": "message_stop"})).await
    }

    fn init(&self) -> Value {
        let tools: Vec<&str> = self
            .agent
            .tools()
            .specs()
            .iter()
            .map(|spec| spec.name.as_str())
            .collect();
        let mcp_servers = mcp_servers(self.agent.mcp_status());
        json!({
            "type": "system",
            "subtype": "init",
            "cwd": self.workspace,
            "session_id": self.chat.key.to_string(),
            "tools": tools,
            "mcp_servers": mcp_servers,
            "model": self.model_name(),
            "permissionMode": self.args.mode.as_str(),
            "slash_commands": ["new", "stop", "status", "model", "usage", "compact", "tasks", "help"],
            "apiKeySource": "none",
            "claude_code_version": COMPAT_VERSION,
            "output_style": "default",
            "agents": [],
            "skills": [],
            "plugins": [],
            "uuid": uuid(),
        })
    }

    fn model_name(&self) -> String {
        self.model.clone().unwrap_or_else(|| "pincer".into())
    }

    fn message_id(&self) -> String {
        let step = self.turn.as_ref().map_or(0, |t| t.step);
        format!("msg_pincer_{}_{step}", self.chat.id)
    }

    async fn assistant(&mut self, block: Value) -> anyhow::Result<()> {
        let line = json!({
            "type": "assistant",
            "message": {
                "id": self.message_id(),
                "type": "message",
                "role": "assistant",
                "model": self.model_name(),
                "content": [block],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            },
            "parent_tool_use_id": null,
            "session_id": self.chat.key.to_string(),
            "uuid": uuid(),
        });
        self.line(line).await
    }

    async fn tool_result(&mut self, id: &str, content: &str, is_error: bool) -> anyhow::Result<()> {
        self.end_message().await?;
        let line = json!({
            "type": "user",
            "message": {"role": "user", "content": [
                {"tool_use_id": id, "type": "tool_result", "content": content, "is_error": is_error}
            ]},
            "parent_tool_use_id": null,
            "session_id": self.chat.key.to_string(),
            "uuid": uuid(),
        });
        self.line(line).await
    }

    /// A raw stream event (`--include-partial-messages` only).
    async fn event(&mut self, event: Value) -> anyhow::Result<()> {
        if !self.args.partial {
            return Ok(());
        }
        let line = json!({
            "type": "stream_event",
            "event": event,
            "session_id": self.chat.key.to_string(),
            "parent_tool_use_id": null,
            "uuid": uuid(),
        });
        self.line(line).await
    }

    async fn block_start(&mut self, block: Value) -> anyhow::Result<()> {
        let index = self.turn.as_ref().map_or(0, |t| t.index);
        self.event(json!({"type": "content_block_start", "index": index, "content_block": block}))
            .await
    }

    async fn block_delta(&mut self, delta: Value) -> anyhow::Result<()> {
        let index = self.turn.as_ref().map_or(0, |t| t.index);
        self.event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
            .await
    }

    async fn block_stop(&mut self) -> anyhow::Result<()> {
        let index = self.turn.as_ref().map_or(0, |t| t.index);
        if let Some(turn) = self.turn.as_mut() {
            turn.index += 1;
        }
        self.event(json!({"type": "content_block_stop", "index": index}))
            .await
    }
}
