//! One turn's output: the core's chunks (`pincer_channels::chunk`) as the conversation's
//! lines — `system/init` when it starts, an `assistant` line per finished content block,
//! a `user` line per tool result, with `--include-partial-messages` the stream events as
//! the model writes (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`), and the `result`. Nothing here re-derives the turn: only the chunks
//! say what happened.

use pincer_channels::{Chunk, FinishReason, OutboundBody};

use super::wire::{
    Assistant, Block, Delta, Denial, Event, Init, McpServer, Message, Output, OutputUsage, Role,
    StopDelta, StreamEvent, System, ToolResult, ToolResultMessage, ToolResultType, ToolResults,
    TurnEnd, TurnResult,
};
use super::{COMPAT_VERSION, Host};
use crate::uuid;

/// One turn's output state.
#[derive(Default)]
pub(super) struct Turn {
    started: bool,
    step: u32,
    /// The content block index within the current model call (stream events).
    index: u32,
    /// Reasoning text of the open block.
    thinking: String,
    /// The last text block: the turn's `result`.
    last_text: String,
    /// The calls the host refused (`permission_denials`).
    pub(super) denials: Vec<Denial>,
    /// The current model call made tool calls (its `stop_reason` is `tool_use`).
    step_tools: bool,
    /// The current model call's `message_delta`/`message_stop` went out.
    step_ended: bool,
}

impl Host {
    /// One piece of the core's output.
    pub(super) async fn output(&mut self, body: OutboundBody) -> anyhow::Result<()> {
        let OutboundBody::Chunk(chunk) = body else {
            // A command's answer, a notice: not part of the protocol's turn.
            if let OutboundBody::Done = body {
                // A message that started no turn (a command typed as a message).
                self.turn = None;
            }
            return Ok(());
        };
        match chunk {
            Chunk::Start { .. } => {
                self.turn.get_or_insert_with(Turn::default).started = true;
                let init = self.init();
                self.line(Output::System(System::Init(init))).await?;
            }
            Chunk::StartStep => {
                let turn = self.turn.get_or_insert_with(Turn::default);
                turn.step += 1;
                turn.index = 0;
                turn.step_tools = false;
                turn.step_ended = false;
                if self.args.partial {
                    let message = Message::start(self.message_id(), self.model_name());
                    self.event(Event::MessageStart { message }).await?;
                }
            }
            Chunk::TextStart { .. } => {
                self.block_start(Block::Text {
                    text: String::new(),
                })
                .await?;
            }
            Chunk::TextDelta { delta, .. } => {
                self.block_delta(Delta::Text { text: delta }).await?;
            }
            Chunk::TextEnd { text, .. } => {
                if !text.trim().is_empty() {
                    if let Some(turn) = self.turn.as_mut() {
                        turn.last_text.clone_from(&text);
                    }
                    self.assistant(Block::Text { text }).await?;
                }
                self.block_stop().await?;
            }
            Chunk::ReasoningStart { .. } => {
                self.block_start(Block::Thinking {
                    thinking: String::new(),
                    signature: None,
                })
                .await?;
            }
            Chunk::ReasoningDelta { delta, .. } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.thinking.push_str(&delta);
                }
                self.block_delta(Delta::Thinking { thinking: delta })
                    .await?;
            }
            Chunk::ReasoningEnd { .. } => {
                let thinking = self
                    .turn
                    .as_mut()
                    .map(|t| std::mem::take(&mut t.thinking))
                    .unwrap_or_default();
                self.assistant(Block::Thinking {
                    thinking,
                    signature: Some(String::new()),
                })
                .await?;
                self.block_stop().await?;
            }
            Chunk::ToolInputStart {
                tool_call_id,
                tool_name,
            } => {
                self.block_start(Block::ToolUse {
                    id: tool_call_id,
                    name: tool_name,
                    input: serde_json::Value::Object(serde_json::Map::new()),
                })
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
                self.block_delta(Delta::InputJson {
                    partial_json: input.to_string(),
                })
                .await?;
                self.assistant(Block::ToolUse {
                    id: tool_call_id,
                    name: tool_name,
                    input,
                })
                .await?;
                self.block_stop().await?;
            }
            Chunk::ToolOutputAvailable {
                tool_call_id,
                output,
            } => self.tool_result(tool_call_id, output, false).await?,
            Chunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => self.tool_result(tool_call_id, error_text, true).await?,
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
                let end = TurnEnd {
                    steps: turn.step,
                    last_text: turn.last_text,
                    denials: turn.denials,
                };
                let result = TurnResult::new(self.session(), reason, &usage, end, uuid());
                self.line(Output::Result(Box::new(result))).await?;
            }
        }
        Ok(())
    }

    /// The model's message is complete: `message_delta` (its `stop_reason`) and
    /// `message_stop`, once per model call, before its calls are asked about or run
    /// (as the CLI orders them).
    pub(super) async fn end_message(&mut self) -> anyhow::Result<()> {
        let Some(turn) = self.turn.as_mut().filter(|t| t.step > 0 && !t.step_ended) else {
            return Ok(());
        };
        turn.step_ended = true;
        let stop = if turn.step_tools {
            "tool_use"
        } else {
            "end_turn"
        };
        self.event(Event::MessageDelta {
            delta: StopDelta {
                stop_reason: stop.into(),
                stop_sequence: None,
            },
            usage: OutputUsage { output_tokens: 0 },
        })
        .await?;
        self.event(Event::MessageStop).await
    }

    fn init(&self) -> Init {
        let tools = self
            .agent
            .tools()
            .specs()
            .iter()
            .map(|spec| spec.name.clone())
            .collect();
        let slash_commands = [
            "new", "stop", "status", "model", "usage", "compact", "tasks", "help",
        ];
        Init {
            cwd: self.workspace.clone(),
            session_id: self.session(),
            tools,
            mcp_servers: McpServer::all(self.agent.mcp_status()),
            model: self.model_name(),
            permission_mode: self.args.mode.as_str().into(),
            slash_commands: slash_commands.map(String::from).into(),
            api_key_source: "none".into(),
            claude_code_version: COMPAT_VERSION.into(),
            output_style: "default".into(),
            agents: Vec::new(),
            skills: Vec::new(),
            plugins: Vec::new(),
            uuid: uuid(),
        }
    }

    fn model_name(&self) -> String {
        self.model.clone().unwrap_or_else(|| "pincer".into())
    }

    fn message_id(&self) -> String {
        let step = self.turn.as_ref().map_or(0, |t| t.step);
        format!("msg_pincer_{}_{step}", self.chat.id)
    }

    async fn assistant(&mut self, block: Block) -> anyhow::Result<()> {
        let line = Assistant {
            message: Message::assistant(self.message_id(), self.model_name(), vec![block]),
            parent_tool_use_id: None,
            session_id: self.session(),
            uuid: uuid(),
        };
        self.line(Output::Assistant(line)).await
    }

    async fn tool_result(
        &mut self,
        id: String,
        content: String,
        is_error: bool,
    ) -> anyhow::Result<()> {
        self.end_message().await?;
        let line = ToolResults {
            message: ToolResultMessage {
                role: Role::User,
                content: vec![ToolResult {
                    tool_use_id: id,
                    kind: ToolResultType::ToolResult,
                    content,
                    is_error,
                }],
            },
            parent_tool_use_id: None,
            session_id: self.session(),
            uuid: uuid(),
        };
        self.line(Output::User(line)).await
    }

    /// A raw stream event (`--include-partial-messages` only).
    async fn event(&mut self, event: Event) -> anyhow::Result<()> {
        if !self.args.partial {
            return Ok(());
        }
        let line = StreamEvent {
            event,
            session_id: self.session(),
            parent_tool_use_id: None,
            uuid: uuid(),
        };
        self.line(Output::StreamEvent(line)).await
    }

    fn index(&self) -> u32 {
        self.turn.as_ref().map_or(0, |t| t.index)
    }

    async fn block_start(&mut self, content_block: Block) -> anyhow::Result<()> {
        let index = self.index();
        self.event(Event::ContentBlockStart {
            index,
            content_block,
        })
        .await
    }

    async fn block_delta(&mut self, delta: Delta) -> anyhow::Result<()> {
        let index = self.index();
        self.event(Event::ContentBlockDelta { index, delta }).await
    }

    async fn block_stop(&mut self) -> anyhow::Result<()> {
        let index = self.index();
        if let Some(turn) = self.turn.as_mut() {
            turn.index += 1;
        }
        self.event(Event::ContentBlockStop { index }).await
    }
}
