//! `pincer agent --protocol runner`: seed 001's JSON lines, one process per
//! conversation. In: `message {content}`, `stop`, `interrupt`, `set_model {model}`,
//! `set_permission_mode {permissionMode}`, `plan_approval_response {planApprovalRequestId,
//! planApproved}`, and Pincer's `permission_response {requestId, allow, message?}`. Out:
//! `ready` first; per turn `init`, `assistant_text` (by paragraph), `thinking`,
//! `tool_start`, `tool_end`, `todo_update`, `result`, `turn_complete`; `interrupted`,
//! `model_changed`, `permission_mode_changed`, `command_error`, `error`; at the end
//! `complete` and `shutdown`. Seed 001 has no question for a single call's approval, so
//! Pincer adds `permission_request {requestId, tool, input, toolUseId}`;
//! `exit_plan_mode` asks with `plan_approval_request {requestId, plan}`.

use std::collections::{HashMap, VecDeque};
use std::process::ExitCode;
use std::time::Instant;

use pincer_channels::{Chunk, FinishReason, OutboundBody};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, oneshot};

use super::stream_json::COMPAT_VERSION;
use super::{Args, Ask, Chat, Core};
use crate::home::Home;
use crate::tools::approval::Approval;
use crate::tools::mode::{EXIT_PLAN_MODE, PermissionMode};

/// Text held for the next paragraph break is flushed past this many bytes.
const FLUSH_AT: usize = 4096;

pub async fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let (asks_tx, asks) = mpsc::channel(8);
    let core = Core::start(home, asks_tx)?;
    let resuming = args.session.is_some();
    let chat = core.open(args.session.as_deref(), args.mode).await?;
    let mut runner = Runner {
        out: tokio::io::stdout(),
        chat,
        mode: args.mode,
        model: args.model.clone(),
        pending: HashMap::new(),
        questions: HashMap::new(),
        next_request: 0,
        turn: None,
        queue: VecDeque::new(),
        workspace: core.workspace.display().to_string(),
        tools: core
            .running
            .agent
            .tools()
            .specs()
            .iter()
            .map(|spec| spec.name.clone())
            .collect(),
    };
    if let Some(model) = &args.model
        && let Err(err) = core
            .running
            .dispatcher
            .pin_model(&runner.chat.key, model)
            .await
    {
        runner
            .line(json!({"type": "command_error", "command": "set_model", "error": err}))
            .await?;
    }
    runner
        .line(json!({
            "type": "ready",
            "conversationId": runner.chat.key,
            "cwd": runner.workspace,
            "resuming": resuming,
            "forking": false,
            "model": runner.model.clone().unwrap_or_else(|| "(default)".into()),
        }))
        .await?;
    runner.serve(core, asks).await
}

struct Runner {
    out: tokio::io::Stdout,
    chat: Chat,
    mode: PermissionMode,
    model: Option<String>,
    pending: HashMap<String, oneshot::Sender<Approval>>,
    /// Questions asked, by request id (answers are keyed by the question's text).
    questions: HashMap<String, String>,
    next_request: u64,
    turn: Option<Turn>,
    queue: VecDeque<String>,
    workspace: String,
    /// The built-in tools, for `init`.
    tools: Vec<String>,
}

#[derive(Default)]
struct Turn {
    /// Text not yet sent: everything after the last paragraph break.
    text: String,
    thinking: String,
    last_text: String,
    /// When each running tool started, by call id, and its name.
    tools: HashMap<String, (String, Instant)>,
    calls: u32,
}

impl Runner {
    async fn line(&mut self, value: Value) -> anyhow::Result<()> {
        super::write_line(&mut self.out, &value).await
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
        let reason = loop {
            if (stopping || !stdin_open) && self.turn.is_none() && self.queue.is_empty() {
                break if stopping { "stop" } else { "input closed" };
            }
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
            }
        };
        let session = self.chat.key.clone();
        self.line(json!({"type": "complete", "sessionId": session}))
            .await?;
        self.line(json!({"type": "shutdown", "reason": reason}))
            .await?;
        stop.await;
        Ok(ExitCode::SUCCESS)
    }

    /// One line from the host; true when it asked to stop.
    async fn input(&mut self, line: &str, running: &super::Handles) -> anyhow::Result<bool> {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            if !line.trim().is_empty() {
                self.line(
                    json!({"type": "warning", "message": "a line that is not JSON was ignored"}),
                )
                .await?;
            }
            return Ok(false);
        };
        match message["type"].as_str().unwrap_or_default() {
            "message" => {
                let text = message["content"].as_str().unwrap_or_default().to_string();
                if self.turn.is_some() {
                    self.queue.push_back(text);
                } else {
                    self.begin(text, running).await?;
                }
            }
            "stop" => return Ok(true),
            "interrupt" => {
                running.dispatcher.stop(&self.chat.key);
                for (_, answer) in self.pending.drain() {
                    let _ = answer.send(Approval::Deny);
                }
                self.line(json!({"type": "interrupted"})).await?;
            }
            "set_model" => {
                let model = message["model"].as_str().unwrap_or("auto").to_string();
                match running.dispatcher.pin_model(&self.chat.key, &model).await {
                    Ok(_) => {
                        self.model = Some(model.clone());
                        self.line(json!({"type": "model_changed", "model": model}))
                            .await?;
                    }
                    Err(error) => {
                        self.line(json!({"type": "command_error", "command": "set_model", "error": error}))
                            .await?;
                    }
                }
            }
            "set_permission_mode" => {
                let name = message["permissionMode"].as_str().unwrap_or_default();
                match PermissionMode::parse(name) {
                    Some(mode) => {
                        self.mode = mode;
                        running.agent.modes().set(self.chat.session, mode);
                        self.line(
                            json!({"type": "permission_mode_changed", "mode": mode.as_str()}),
                        )
                        .await?;
                    }
                    None => {
                        let error = format!(
                            "{name} is not a permission mode; use default, acceptEdits, plan or bypassPermissions"
                        );
                        self.line(json!({"type": "command_error", "command": "set_permission_mode", "error": error}))
                            .await?;
                    }
                }
            }
            "plan_approval_response" => {
                let id = request_id(&message, "planApprovalRequestId");
                if let Some(answer) = self.pending.remove(id) {
                    let approved = message["planApproved"] == true;
                    let _ = answer.send(if approved {
                        Approval::Once
                    } else {
                        Approval::Deny
                    });
                }
            }
            "user_question_response" => {
                let id = request_id(&message, "questionRequestId");
                let question = self.questions.remove(id).unwrap_or_default();
                if let Some(answer) = self.pending.remove(id) {
                    let answers = &message["answers"];
                    let approval = match answers[question.as_str()].as_str() {
                        _ if answers["__cancelled"] == "true" => {
                            Approval::Refused("the question was cancelled".into())
                        }
                        Some(text) => Approval::Answered(text.to_string()),
                        // One answer, whatever it is keyed by.
                        None => match answers.as_object().and_then(|m| m.values().next()) {
                            Some(Value::String(text)) => Approval::Answered(text.clone()),
                            _ => Approval::Refused("no answer was given".into()),
                        },
                    };
                    let _ = answer.send(approval);
                }
            }
            "permission_response" => {
                let id = message["requestId"].as_str().unwrap_or_default();
                if let Some(answer) = self.pending.remove(id) {
                    let approval = if message["allow"] == true {
                        Approval::Once
                    } else {
                        Approval::Refused(
                            message["message"]
                                .as_str()
                                .unwrap_or("the host said no")
                                .to_string(),
                        )
                    };
                    let _ = answer.send(approval);
                }
            }
            other => {
                self.line(json!({"type": "command_error", "command": other, "error": "not supported by pincer agent"}))
                    .await?;
            }
        }
        Ok(false)
    }

    async fn begin(&mut self, text: String, running: &super::Handles) -> anyhow::Result<()> {
        self.turn = Some(Turn::default());
        self.chat.send(text, running).await
    }

    async fn ask(&mut self, ask: Ask) -> anyhow::Result<()> {
        self.next_request += 1;
        let id = format!("pincer-req-{}", self.next_request);
        let request = &ask.request;
        let line = if request.tool == crate::tools::question::QUESTION {
            let options: Vec<Value> = request.input["options"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| json!({"label": o, "description": ""}))
                .collect();
            self.questions.insert(
                id.clone(),
                request.input["question"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            json!({"type": "user_question_request", "requestId": id, "sessionId": self.chat.key,
                   "questions": [{"question": request.input["question"], "header": "Question",
                                  "options": options, "multiSelect": false}]})
        } else if request.tool == EXIT_PLAN_MODE {
            json!({"type": "plan_approval_request", "requestId": id, "sessionId": self.chat.key,
                   "plan": request.input["plan"]})
        } else {
            json!({"type": "permission_request", "requestId": id, "sessionId": self.chat.key,
                   "tool": request.tool, "input": request.input, "toolUseId": request.call_id})
        };
        self.pending.insert(id, ask.answer);
        self.line(line).await
    }

    /// Send the held text up to its last paragraph break (all of it when `all`).
    async fn flush(&mut self, all: bool) -> anyhow::Result<()> {
        let Some(turn) = self.turn.as_mut() else {
            return Ok(());
        };
        let cut = if all {
            turn.text.len()
        } else if let Some(at) = turn.text.rfind("\n\n") {
            at + 2
        } else if turn.text.len() > FLUSH_AT {
            turn.text.rfind('\n').map_or(turn.text.len(), |at| at + 1)
        } else {
            0
        };
        if cut == 0 {
            return Ok(());
        }
        let content: String = turn.text.drain(..cut).collect();
        if content.trim().is_empty() {
            return Ok(());
        }
        self.line(json!({"type": "assistant_text", "content": content}))
            .await
    }

    async fn output(&mut self, body: OutboundBody) -> anyhow::Result<()> {
        let OutboundBody::Chunk(chunk) = body else {
            if let OutboundBody::Done = body {
                self.turn = None;
            }
            return Ok(());
        };
        match chunk {
            Chunk::Start { .. } => {
                self.turn.get_or_insert_with(Turn::default);
                let init = json!({
                    "type": "init",
                    "model": self.model.clone().unwrap_or_else(|| "(default)".into()),
                    "tools": self.tools, "mcpServers": [], "slashCommands": [], "skills": [],
                    "plugins": [], "agents": [],
                    "permissionMode": self.mode.as_str(),
                    "claudeCodeVersion": COMPAT_VERSION,
                    "apiKeySource": "none",
                    "sessionId": self.chat.key,
                    "cwd": self.workspace,
                });
                self.line(init).await?;
            }
            Chunk::TextDelta { delta, .. } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.text.push_str(&delta);
                }
                self.flush(false).await?;
            }
            Chunk::TextEnd { text, .. } => {
                if let Some(turn) = self.turn.as_mut()
                    && !text.trim().is_empty()
                {
                    turn.last_text = text;
                }
            }
            Chunk::ReasoningDelta { delta, .. } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.thinking.push_str(&delta);
                }
            }
            Chunk::ReasoningEnd { .. } => {
                let thinking = self
                    .turn
                    .as_mut()
                    .map(|t| std::mem::take(&mut t.thinking))
                    .unwrap_or_default();
                self.line(json!({"type": "thinking", "content": thinking}))
                    .await?;
            }
            Chunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
            } => {
                self.flush(true).await?;
                if let Some(turn) = self.turn.as_mut() {
                    turn.calls += 1;
                    turn.tools
                        .insert(tool_call_id.clone(), (tool_name.clone(), Instant::now()));
                }
                if tool_name == "todo" {
                    self.line(
                        json!({"type": "todo_update", "id": tool_call_id, "todos": input["items"]}),
                    )
                    .await?;
                }
                self.line(json!({"type": "tool_start", "id": tool_call_id, "tool": tool_name, "params": input}))
                    .await?;
            }
            Chunk::ToolOutputAvailable {
                tool_call_id,
                output,
            } => {
                self.tool_end(&tool_call_id, &output, true).await?;
            }
            Chunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => {
                self.tool_end(&tool_call_id, &error_text, false).await?;
            }
            Chunk::Error { error_text } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.last_text = error_text;
                }
            }
            Chunk::Finish { reason, usage } => {
                self.flush(true).await?;
                let turn = self.turn.take().unwrap_or_default();
                let session = self.chat.key.clone();
                let usage_json = json!({
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "cache_read_input_tokens": usage.cache_read_tokens,
                    "cache_creation_input_tokens": usage.cache_write_tokens,
                });
                let result = match reason {
                    FinishReason::Stop => json!({
                        "type": "result", "success": true, "subtype": "success",
                        "summary": turn.last_text, "stopReason": "end_turn",
                        "cost": usage.cost_usd, "turns": usage.model_calls,
                        "durationMs": usage.duration_ms, "durationApiMs": usage.model_ms,
                        "usage": usage_json, "sessionId": session,
                        "stats": {"toolCalls": turn.calls},
                    }),
                    other => json!({
                        "type": "result", "success": false,
                        "subtype": if other == FinishReason::Length { "error_max_turns" } else { "error_during_execution" },
                        "stopReason": null,
                        "errors": [if other == FinishReason::Aborted { "interrupted".to_string() } else { turn.last_text.clone() }],
                        "cost": usage.cost_usd, "turns": usage.model_calls,
                        "durationMs": usage.duration_ms, "durationApiMs": usage.model_ms,
                        "usage": usage_json, "sessionId": session,
                        "stats": {"toolCalls": turn.calls},
                    }),
                };
                self.line(result).await?;
                self.line(json!({"type": "turn_complete", "sessionId": session}))
                    .await?;
            }
            _ => {}
        }
        Ok(())
    }

    async fn tool_end(&mut self, id: &str, result: &str, success: bool) -> anyhow::Result<()> {
        let (tool, started) = self
            .turn
            .as_mut()
            .and_then(|t| t.tools.remove(id))
            .unwrap_or_else(|| (String::new(), Instant::now()));
        let summary: String = result.chars().take(100).collect();
        self.line(json!({
            "type": "tool_end",
            "id": id,
            "tool": tool,
            "success": success,
            "summary": summary,
            "duration": started.elapsed().as_millis() as u64,
        }))
        .await
    }
}

/// The request an answer names: by its own field (`planApprovalRequestId`,
/// `questionRequestId`) or, as the request itself carried it, `requestId`.
fn request_id<'a>(message: &'a Value, field: &str) -> &'a str {
    message[field]
        .as_str()
        .or(message["requestId"].as_str())
        .unwrap_or_default()
}
