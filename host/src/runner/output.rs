//! What the core says, as seed 001's events. The turn's one chunk stream
//! (`pincer_channels::chunk`) becomes `init`, `assistant_text` (a paragraph at a time,
//! force-flushed past 4 KiB), `thinking_start` / `thinking_delta` / `thinking`,
//! `tool_start`, `todo_update`, `tool_progress` (each second a tool runs), `tool_end`,
//! `subagent_started` / `subagent_stopped` (the `task` tool's child), `error`, and at its
//! end `compact_boundary` (when the turn summarised the conversation), `context_usage`,
//! `result` with the seed's eight stats, `context_window_size` and `turn_complete`. A
//! chat command (`/compact`) is answered as a turn too: its text, `result`,
//! `turn_complete`. What comes outside a turn (a background task's report, a notice) is
//! an `agent_notification`. Nothing here re-derives the turn: only the chunks say what
//! happened.

use std::collections::HashMap;
use std::time::Instant;

use pincer_channels::{Chunk, FinishReason, OutboundBody, TurnUsage};
use serde_json::Value;

use super::super::stream_json::COMPAT_VERSION;
use super::Runner;
use super::wire::{BudgetConfig, Event, Init, Stats, TurnResult, Usage};
use pincer_core::tools::preset::ToolPreset;
use pincer_core::tools::{Effects, TypedTool};

/// Text held for the next paragraph break is flushed past this many bytes.
const FLUSH_AT: usize = 4096;
/// The subagent tool: its calls are seed 001's sub-agents.
const TASK: &str = pincer_core::tasks::TaskTool::NAME;

/// One turn (or chat command) in progress.
pub(super) struct Turn {
    /// A chat command: answered by text and `Done`, not by chunks.
    command: bool,
    /// Its chunks began (`start`): only `finish` ends it now.
    begun: bool,
    /// Text not yet sent: everything after the last paragraph break.
    text: String,
    thinking: String,
    last_text: String,
    /// What went wrong, for a failed `result`.
    errors: Vec<String>,
    /// The calls running, by id.
    tools: HashMap<String, Running>,
    stats: Stats,
    started: Instant,
}

struct Running {
    name: String,
    started: Instant,
    /// A `task` call whose child runs while it waits (not `background`).
    subagent: bool,
}

impl Turn {
    pub(super) fn new(command: bool) -> Turn {
        Turn {
            command,
            begun: false,
            text: String::new(),
            thinking: String::new(),
            last_text: String::new(),
            errors: Vec::new(),
            tools: HashMap::new(),
            stats: Stats::default(),
            started: Instant::now(),
        }
    }

    pub(super) fn tools_running(&self) -> bool {
        !self.tools.is_empty()
    }
}

impl Stats {
    fn count(&mut self, tool: &str, effects: Effects) {
        self.tool_calls += 1;
        *self.tools_by_type.entry(tool.to_string()).or_default() += 1;
        if tool == TASK {
            self.sub_agents += 1;
        }
        if effects.contains(Effects::READS_WORKSPACE) && !effects.acts() {
            self.files_read += 1;
        }
        if effects.contains(Effects::WRITES_WORKSPACE) && effects.only_edits() {
            self.files_written += 1;
        }
        if effects.contains(Effects::RUNS) {
            self.bash_commands += 1;
        }
        // A command may fetch too, but it counts as a command.
        if effects.contains(Effects::FETCHES) && !effects.contains(Effects::RUNS) {
            self.web_searches += 1;
        }
    }
}

impl Runner {
    pub(super) async fn output(&mut self, body: OutboundBody) -> anyhow::Result<()> {
        let command = self.turn.as_ref().is_some_and(|t| t.command);
        // A message that failed before its turn began (it could not be stored).
        let refused = self
            .turn
            .as_ref()
            .is_some_and(|t| !t.begun && !t.errors.is_empty());
        match body {
            OutboundBody::Chunk(chunk) => self.chunk(chunk).await,
            OutboundBody::Text(text) if command => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.last_text = text.clone();
                }
                self.line(Event::AssistantText { content: text }).await
            }
            OutboundBody::Text(text) => self.notify("message", text).await,
            OutboundBody::Notice(text) => self.notify("notice", text).await,
            OutboundBody::Error(text) => {
                if let Some(turn) = self.turn.as_mut().filter(|t| !t.begun) {
                    turn.errors.push(text.clone());
                }
                let session_id = self.session();
                self.line(Event::Error {
                    message: text,
                    session_id,
                })
                .await
            }
            OutboundBody::Done if command || refused => {
                let errors = self.turn.as_ref().is_some_and(|t| !t.errors.is_empty());
                let reason = if errors {
                    FinishReason::Error
                } else {
                    FinishReason::Stop
                };
                self.finish(reason, TurnUsage::default()).await
            }
            // The end of something outside this runner's turn (a background report).
            OutboundBody::Done => Ok(()),
            OutboundBody::File { sent, .. } => {
                sent.fire(Err(pincer_channels::ChannelError::permanent(
                    "pincer agent sends no files to its host; the file stays in the workspace, name its path instead",
                )));
                Ok(())
            }
            OutboundBody::React { .. } => Ok(()),
        }
    }

    async fn notify(&mut self, kind: &str, message: String) -> anyhow::Result<()> {
        let session_id = self.session();
        self.line(Event::AgentNotification {
            title: "Pincer".into(),
            message,
            notification_type: kind.into(),
            session_id,
        })
        .await
    }

    async fn chunk(&mut self, chunk: Chunk) -> anyhow::Result<()> {
        match chunk {
            Chunk::Start { .. } => {
                self.turn.get_or_insert_with(|| Turn::new(false)).begun = true;
                let init = self.init();
                self.line(Event::Init(Box::new(init))).await?;
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
            // What was held back of the abandoned text never goes out.
            Chunk::Retract => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.text.clear();
                }
            }
            Chunk::ReasoningStart { .. } => {
                self.line(Event::ThinkingStart).await?;
            }
            Chunk::ReasoningDelta { delta, .. } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.thinking.push_str(&delta);
                }
                self.line(Event::ThinkingDelta { content: delta }).await?;
            }
            Chunk::ReasoningEnd { .. } => {
                let thinking = self
                    .turn
                    .as_mut()
                    .map(|t| std::mem::take(&mut t.thinking))
                    .unwrap_or_default();
                self.line(Event::Thinking { content: thinking }).await?;
            }
            Chunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
            } => self.tool_start(tool_call_id, tool_name, input).await?,
            Chunk::ToolOutputAvailable {
                tool_call_id,
                output,
            } => self.tool_end(&tool_call_id, &output, true).await?,
            Chunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => self.tool_end(&tool_call_id, &error_text, false).await?,
            Chunk::Error { error_text } => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.errors.push(error_text.clone());
                }
                let session_id = self.session();
                self.line(Event::Error {
                    message: error_text,
                    session_id,
                })
                .await?;
            }
            Chunk::Finish { reason, usage } => self.finish(reason, usage).await?,
            Chunk::StartStep
            | Chunk::FinishStep
            | Chunk::TextStart { .. }
            | Chunk::ToolInputStart { .. } => {}
        }
        Ok(())
    }

    fn init(&self) -> Init {
        // What bounds a turn here: Pincer's own limits, not the seed's flags.
        let limits = self.agent.limits();
        Init {
            model: self.model_name(),
            tools: self.tools.clone(),
            mcp_servers: self.mcp_servers(),
            slash_commands: pincer_core::dispatch::HELP
                .lines()
                .filter_map(|l| l.strip_prefix('/')?.split(' ').next())
                .map(String::from)
                .collect(),
            skills: Vec::new(),
            plugins: Vec::new(),
            agents: vec![TASK.into()],
            permission_mode: self.mode.as_str().into(),
            tool_preset: self.preset.as_str().into(),
            budget_config: BudgetConfig {
                max_budget_usd: limits.max_turn_cost_usd,
                max_turns: limits.max_iterations,
                max_thinking_tokens: None,
            },
            claude_code_version: COMPAT_VERSION.into(),
            api_key_source: "none".into(),
            session_id: self.session(),
            cwd: self.workspace.clone(),
        }
    }

    async fn tool_start(&mut self, id: String, tool: String, input: Value) -> anyhow::Result<()> {
        self.flush(true).await?;
        let effects = self.agent.tools().effects_of(&tool);
        let subagent = tool == TASK && input.get("background") != Some(&Value::Bool(true));
        if let Some(turn) = self.turn.as_mut() {
            turn.stats.count(&tool, effects);
            turn.tools.insert(
                id.clone(),
                Running {
                    name: tool.clone(),
                    started: Instant::now(),
                    subagent,
                },
            );
        }
        // The todo tool's list and the task's description, from the free-form input.
        if tool == "todo" {
            let todos = input.get("items").cloned().unwrap_or_default();
            self.line(Event::TodoUpdate {
                id: id.clone(),
                todos,
            })
            .await?;
        }
        let description = input.get("description").cloned().unwrap_or_default();
        let task = tool == TASK;
        self.line(Event::ToolStart {
            id: id.clone(),
            tool,
            params: input,
        })
        .await?;
        if task {
            let session_id = self.session();
            self.line(Event::SubagentStarted {
                agent_id: id.clone(),
                agent_type: TASK.into(),
                parent_tool_use_id: id,
                description,
                session_id,
            })
            .await?;
        }
        Ok(())
    }

    async fn tool_end(&mut self, id: &str, result: &str, success: bool) -> anyhow::Result<()> {
        let running = self.turn.as_mut().and_then(|t| t.tools.remove(id));
        let (tool, duration, subagent) = match running {
            Some(r) => (r.name, r.started.elapsed().as_millis() as u64, r.subagent),
            None => (String::new(), 0, false),
        };
        if let Some(turn) = self.turn.as_mut() {
            turn.stats.total_tool_duration_ms += duration;
        }
        let summary: String = result.chars().take(100).collect();
        self.line(Event::ToolEnd {
            id: id.into(),
            tool,
            success,
            summary,
            duration,
        })
        .await?;
        if subagent {
            let session_id = self.session();
            self.line(Event::SubagentStopped {
                agent_id: id.into(),
                success,
                stop_hook_active: false,
                transcript_path: None,
                session_id,
            })
            .await?;
        }
        Ok(())
    }

    /// `tool_progress` for each call running a second or more.
    pub(super) async fn progress(&mut self) -> anyhow::Result<()> {
        let Some(turn) = self.turn.as_ref() else {
            return Ok(());
        };
        let lines: Vec<Event> = turn
            .tools
            .iter()
            .filter(|(_, r)| r.started.elapsed() >= super::PROGRESS_EVERY)
            .map(|(id, r)| Event::ToolProgress {
                tool_use_id: id.clone(),
                tool_name: r.name.clone(),
                elapsed_time_seconds: r.started.elapsed().as_secs_f64(),
                parent_tool_use_id: None,
                session_id: self.session(),
            })
            .collect();
        for line in lines {
            self.line(line).await?;
        }
        Ok(())
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
        self.line(Event::AssistantText { content }).await
    }

    /// The turn (or command) ended: what it did, and `turn_complete`.
    async fn finish(&mut self, reason: FinishReason, usage: TurnUsage) -> anyhow::Result<()> {
        self.flush(true).await?;
        let turn = self.turn.take().unwrap_or_else(|| Turn::new(false));
        let session = self.session();
        if let Some(boundary) = self.compaction(turn.command).await {
            self.line(boundary).await?;
        }
        if turn.command {
            self.follow_new_session().await;
        }
        if usage.model_calls > 0 {
            let last = usage.last_call;
            self.line(Event::ContextUsage {
                input_tokens: last.input,
                output_tokens: last.output,
                cache_read_input_tokens: last.cache_read,
                cache_creation_input_tokens: last.cache_write,
                session_id: session.clone(),
            })
            .await?;
        }
        let duration_ms = match usage.duration_ms {
            0 => turn.started.elapsed().as_millis() as u64,
            ms => ms,
        };
        let result = result(reason, &usage, turn, duration_ms, session.clone());
        self.line(Event::Result(Box::new(result))).await?;
        if let Some(model) = usage.model {
            let context_window = self.agent.models().caps.context_tokens(&model);
            self.line(Event::ContextWindowSize {
                context_window,
                model,
                session_id: session.clone(),
            })
            .await?;
        }
        self.line(Event::TurnComplete {
            session_id: session,
        })
        .await
    }

    /// After `/new` the key has a new session: the host's mode and tool preset go with
    /// it (they are kept by session), before the next message is sent.
    async fn follow_new_session(&mut self) {
        let session = match self.agent.store().current_session(&self.chat.key).await {
            Ok(session) if session != self.chat.session => session,
            Ok(_) => return,
            Err(err) => {
                tracing::warn!("cannot tell whether /new started a new session: {err}");
                return;
            }
        };
        let mode = self
            .agent
            .modes()
            .get(self.chat.session)
            .unwrap_or(self.mode);
        self.chat.session = session;
        self.agent.modes().set(session, mode);
        if self.preset != ToolPreset::Full {
            self.agent.modes().set_preset(session, self.preset);
        }
        self.summary_upto = None;
    }

    /// `compact_boundary` when the conversation's summary moved since the last turn
    /// ended (this turn, or the `/compact` command, summarised it).
    async fn compaction(&mut self, command: bool) -> Option<Event> {
        let meta = match self.agent.store().session_meta(self.chat.session).await {
            Ok(meta) => meta,
            Err(err) => {
                tracing::warn!("cannot tell whether the turn compacted the conversation: {err}");
                return None;
            }
        };
        if meta.summary_upto == self.summary_upto {
            return None;
        }
        self.summary_upto = meta.summary_upto;
        let trigger = if command { "manual" } else { "auto" };
        // Pincer does not keep the size before: `preTokens` is null.
        Some(Event::CompactBoundary {
            trigger: trigger.into(),
            pre_tokens: None,
            session_id: self.session(),
        })
    }
}

/// The `result` of a turn that ended for `reason`.
fn result(
    reason: FinishReason,
    usage: &TurnUsage,
    turn: Turn,
    duration_ms: u64,
    session_id: String,
) -> TurnResult {
    let (success, subtype, summary, stop_reason, errors) = match reason {
        FinishReason::Stop => (
            true,
            "success",
            Some(turn.last_text),
            Some("end_turn".to_string()),
            None,
        ),
        other => {
            let errors = match other {
                FinishReason::Aborted => vec!["interrupted".to_string()],
                _ if turn.errors.is_empty() => vec![turn.last_text],
                _ => turn.errors,
            };
            let subtype = match other {
                FinishReason::Length => "error_max_turns",
                _ => "error_during_execution",
            };
            (false, subtype, None, None, Some(errors))
        }
    };
    TurnResult {
        cost: usage.cost_usd,
        turns: usage.model_calls,
        duration_ms,
        duration_api_ms: usage.model_ms,
        usage: Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_input_tokens: usage.cache_read_tokens,
            cache_creation_input_tokens: usage.cache_write_tokens,
        },
        model: usage.model.clone(),
        session_id,
        stats: turn.stats,
        success,
        subtype: subtype.into(),
        summary,
        stop_reason,
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stats_count_by_what_each_tool_declares() {
        let read = Effects::READS_WORKSPACE | Effects::PLAN;
        let write = Effects::READS_WORKSPACE | Effects::WRITES_WORKSPACE | Effects::REPLACES_FILES;
        // As exec declares it: a command may reach the network too.
        let exec = Effects::RUNS | Effects::WRITES_WORKSPACE | Effects::FETCHES;
        let fetch = Effects::FETCHES | Effects::UNTRUSTED;
        let mut stats = Stats::default();
        for (tool, effects) in [
            ("read_file", read),
            ("grep", read),
            ("write_file", write),
            ("exec", exec),
            ("web_search", fetch),
            (TASK, Effects::ALONE),
        ] {
            stats.count(tool, effects);
        }
        let json = serde_json::to_value(&stats).expect("JSON");
        assert_eq!(json["toolCalls"], 6);
        assert_eq!(json["toolsByType"]["read_file"], 1);
        assert_eq!(
            (json["filesRead"].clone(), json["filesWritten"].clone()),
            (json!(2), json!(1))
        );
        assert_eq!(json["bashCommands"], 1);
        assert_eq!(json["webSearches"], 1);
        assert_eq!(json["subAgents"], 1);
        assert_eq!(json.as_object().map(|o| o.len()), Some(8));
    }

    fn recorded(name: &str) -> String {
        let fixture = include_str!("../../tests/fixtures/runner/pincer_output.jsonl");
        crate::round_trip::fixture(fixture)
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no line {name}"))
            .1
    }

    fn written(result: TurnResult) -> String {
        serde_json::to_string(&Event::Result(Box::new(result))).expect("JSON")
    }

    #[test]
    fn a_result_is_written_as_before_the_types() {
        let usage = TurnUsage {
            input_tokens: 86,
            output_tokens: 2,
            cache_read_tokens: 1950,
            model_calls: 1,
            model: Some("fake/m".into()),
            model_ms: 1210,
            ..TurnUsage::default()
        };
        let mut turn = Turn::new(false);
        turn.last_text = "echo: hi".into();
        turn.stats.total_tool_duration_ms = 35;
        let session = "terminal:dm:conv-1".to_string();
        assert_eq!(
            written(result(FinishReason::Stop, &usage, turn, 1840, session)),
            recorded("result/success")
        );

        let usage = TurnUsage {
            model_ms: 1210,
            ..TurnUsage::default()
        };
        let mut turn = Turn::new(false);
        turn.errors =
            vec!["provider fake rejected the request (HTTP 400): Invalid request.".into()];
        turn.stats.total_tool_duration_ms = 35;
        let session = "terminal:dm:conv-2".to_string();
        assert_eq!(
            written(result(FinishReason::Error, &usage, turn, 1840, session)),
            recorded("result/error_during_execution")
        );
    }
}
