//! The agent loop, one for every channel and model: build the prompt, call the model
//! chain, run the tools it asks for, and repeat until the model answers without
//! tools or a budget gate closes the turn. Steering checkpoints sit at the loop's
//! start, before each tool call, after a tool-free reply and before finishing.
//! Every tool call gets a result before the next model call.

mod history;
mod outcome;
pub mod prompt;
mod reply;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use chrono_tz::Tz;
use pincer_channels::OutboundMessage;
use pincer_memory::Memory;
use tokio::sync::mpsc;

use crate::dispatch::queue::{Queued, SessionQueue, StopReason, TurnControl};
use crate::models::Models;
use crate::prices::Prices;
use crate::provider::{ChatMessage, ChatRequest, Part, StopReason as ModelStop, StreamEvent};
use crate::store::{self, Store};
use crate::tools::{Registry, ToolContext};

pub use outcome::{Budget, Ended};
use reply::Reply;

/// What a tool call that never started is told when a user message jumped the queue.
pub const SKIPPED: &str = "Skipped due to queued user message.";
/// What a tool call is told when the turn was stopped under it.
pub const CANCELLED: &str = "cancelled: the turn was stopped before this tool finished";
/// How often a reply cut by the output limit is continued.
const MAX_CONTINUATIONS: u32 = 3;
const CONTINUE: &str = "Continue exactly where you stopped.";

/// The per-turn limits from `[agent]`.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_iterations: u32,
    pub max_turn_cost_usd: f64,
    pub max_day_cost_usd: f64,
    pub max_turn: Duration,
    pub max_tokens: u32,
}

/// Everything a turn needs, shared by all sessions.
pub struct Agent {
    pub store: Store,
    pub models: Models,
    pub tools: Registry,
    pub memory: Memory,
    pub prices: Prices,
    pub limits: Limits,
    pub workspace: PathBuf,
    pub timezone: Tz,
    pub outbound: mpsc::Sender<OutboundMessage>,
}

/// The result of one turn: how it ended and which stored user messages it answered.
pub struct TurnReport {
    pub ended: Ended,
    pub answered: Vec<i64>,
}

impl Agent {
    pub async fn run_turn(
        &self,
        session_id: i64,
        first: Queued,
        queue: &SessionQueue,
        control: &TurnControl,
    ) -> TurnReport {
        let mut reply = Reply::new(
            self.outbound.clone(),
            first.target.clone(),
            first.reply_to.clone(),
        );
        let mut answered = first.message_ids.clone();
        reply.start().await;
        let ended = match self.load(session_id, &first, &mut answered).await {
            Ok(messages) => {
                self.turn_loop(
                    session_id,
                    &first,
                    messages,
                    queue,
                    control,
                    &mut reply,
                    &mut answered,
                )
                .await
            }
            Err(err) => Ended::Failed(err.to_string()),
        };
        if let Some(notice) = ended.notice() {
            match ended {
                // A turn that could not finish is a failure to scripts (`chat -m` exits 1).
                Ended::Failed(_) | Ended::Budget(_) => reply.error(notice).await,
                _ => reply.notice(notice).await,
            }
        }
        reply.end().await;
        TurnReport { ended, answered }
    }

    /// The session's transcript, repaired, as the model will see it; open user
    /// messages in it count as answered by this turn. Messages stored after this
    /// turn's newest one are left out while unanswered: they are still on their way
    /// through the queue and join at a checkpoint or in a later turn.
    async fn load(
        &self,
        session_id: i64,
        first: &Queued,
        answered: &mut Vec<i64>,
    ) -> Result<Vec<ChatMessage>, store::StoreError> {
        self.store.repair(session_id).await?;
        let newest = first.message_ids.iter().copied().max().unwrap_or(i64::MAX);
        let mut stored = self.store.history(session_id).await?;
        stored.retain(|m| {
            m.role != store::Role::User || m.status == store::Status::Done || m.id <= newest
        });
        for message in &stored {
            if message.role == store::Role::User
                && message.status != store::Status::Done
                && !answered.contains(&message.id)
            {
                answered.push(message.id);
            }
        }
        Ok(history::to_chat(&stored))
    }

    #[allow(clippy::too_many_arguments)]
    async fn turn_loop(
        &self,
        session_id: i64,
        first: &Queued,
        mut messages: Vec<ChatMessage>,
        queue: &SessionQueue,
        control: &TurnControl,
        reply: &mut Reply,
        answered: &mut Vec<i64>,
    ) -> Ended {
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + self.limits.max_turn;
        let Some(chain) = self.models.pick(&messages) else {
            return Ended::Failed(
                "no model is configured: add models to [router] light/heavy in config.toml, or run `pincer onboard`".into(),
            );
        };
        let ctx = ToolContext {
            workspace: self.workspace.clone(),
        };
        let (mut iterations, mut turn_cost, mut continuations) = (0u32, 0f64, 0u32);
        let mut text_so_far = String::new();
        loop {
            // Checkpoint: loop start.
            if let Err(err) = self
                .steer_in(session_id, queue, &mut messages, answered)
                .await
            {
                return Ended::Failed(err.to_string());
            }
            if let Some(ended) = self.gate(iterations, turn_cost, started, control).await {
                return ended;
            }
            iterations += 1;
            let request = self.request(first, &messages);
            // What the user has already seen of this reply, kept if the call is cut short.
            let mut shown = String::new();
            let mut on_event = |event: StreamEvent<'_>| {
                if let StreamEvent::Text(text) = event {
                    shown.push_str(text);
                    reply.delta(text);
                }
            };
            let result = tokio::select! {
                biased;
                _ = control.token().cancelled() => None,
                _ = tokio::time::sleep_until(deadline) => {
                    self.keep_shown(session_id, shown).await;
                    return Ended::Budget(Budget::Time(started.elapsed().as_secs()));
                }
                result = chain.stream(request, &mut on_event) => Some(result),
            };
            let Some(result) = result else {
                self.keep_shown(session_id, shown).await;
                return stopped(control);
            };
            let (response, label) = match result {
                Ok(ok) => ok,
                Err(err) => return Ended::Failed(err.to_string()),
            };
            let cost = self.prices.cost(&label, response.usage);
            turn_cost += cost;
            if let Err(err) = self
                .store
                .record_usage(session_id, &label, response.usage, cost)
                .await
            {
                tracing::warn!("usage not recorded: {err}");
            }
            let parts: Vec<Part> = response
                .parts
                .into_iter()
                .filter(|p| !is_empty_text(p))
                .collect();
            if !parts.is_empty()
                && let Err(err) = self
                    .store
                    .append(session_id, store::Role::Assistant, parts.clone())
                    .await
            {
                return Ended::Failed(err.to_string());
            }
            let calls: Vec<(String, String, serde_json::Value)> = parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall {
                        id,
                        name,
                        arguments,
                    } => Some((id.clone(), name.clone(), arguments.clone())),
                    _ => None,
                })
                .collect();
            for part in &parts {
                if let Part::Text { text } = part {
                    text_so_far.push_str(text);
                }
            }
            history::push_assistant(&mut messages, parts);
            if calls.is_empty() {
                if response.stop == ModelStop::MaxTokens && continuations < MAX_CONTINUATIONS {
                    continuations += 1;
                    history::push_user(
                        &mut messages,
                        Part::Text {
                            text: CONTINUE.into(),
                        },
                    );
                    continue;
                }
                reply.finished_text(std::mem::take(&mut text_so_far)).await;
                // Checkpoint: after a reply without tool calls.
                if queue.steering_pending() {
                    continue;
                }
                // Checkpoint: before finishing.
                if queue.steering_pending() {
                    continue;
                }
                return Ended::Finished;
            }
            reply.finished_text(std::mem::take(&mut text_so_far)).await;
            continuations = 0;
            if let Some(ended) = self
                .run_tools(
                    session_id,
                    calls,
                    &ctx,
                    queue,
                    control,
                    deadline,
                    &mut messages,
                )
                .await
            {
                return ended;
            }
        }
    }

    /// Store the part of a reply the user saw before the turn was cut short, so the
    /// transcript matches what was shown.
    async fn keep_shown(&self, session_id: i64, shown: String) {
        if shown.trim().is_empty() {
            return;
        }
        if let Err(err) = self
            .store
            .append(
                session_id,
                store::Role::Assistant,
                vec![Part::Text { text: shown }],
            )
            .await
        {
            tracing::warn!("the partial reply was not stored: {err}");
        }
    }

    fn request(&self, first: &Queued, messages: &[ChatMessage]) -> ChatRequest {
        let chat = match first.target.channel.as_str() {
            "terminal" => "a direct chat with your owner".to_string(),
            _ => format!("chat {}", first.target.chat_id),
        };
        let system = prompt::build(
            &self.memory,
            &self.workspace,
            !self.tools.specs().is_empty(),
            &prompt::Context {
                channel: &first.target.channel,
                chat: &chat,
                timezone: self.timezone,
                now: Utc::now(),
            },
        );
        ChatRequest {
            model: String::new(),
            system_stable: system.stable,
            system_volatile: system.volatile,
            messages: messages.to_vec(),
            tools: self.tools.specs().to_vec(),
            max_tokens: self.limits.max_tokens,
        }
    }

    /// Budget gates, checked at the top of every iteration.
    async fn gate(
        &self,
        iterations: u32,
        turn_cost: f64,
        started: Instant,
        control: &TurnControl,
    ) -> Option<Ended> {
        if control.token().is_cancelled() {
            return Some(stopped(control));
        }
        if iterations >= self.limits.max_iterations {
            return Some(Ended::Budget(Budget::Iterations(iterations)));
        }
        if turn_cost >= self.limits.max_turn_cost_usd {
            return Some(Ended::Budget(Budget::TurnCost {
                spent: turn_cost,
                limit: self.limits.max_turn_cost_usd,
            }));
        }
        if started.elapsed() >= self.limits.max_turn {
            return Some(Ended::Budget(Budget::Time(started.elapsed().as_secs())));
        }
        match self.store.cost_since(self.start_of_day_ms()).await {
            Ok(spent) if spent >= self.limits.max_day_cost_usd => {
                Some(Ended::Budget(Budget::DayCost {
                    spent,
                    limit: self.limits.max_day_cost_usd,
                }))
            }
            Ok(_) => None,
            Err(err) => Some(Ended::Failed(err.to_string())),
        }
    }

    /// Midnight today in `agent.timezone`, in unix milliseconds (the day budget's start).
    pub fn start_of_day_ms(&self) -> i64 {
        let now = Utc::now().with_timezone(&self.timezone);
        let midnight = now.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default();
        self.timezone
            .from_local_datetime(&midnight)
            .earliest()
            .map(|t| t.timestamp_millis())
            .unwrap_or_else(|| now.timestamp_millis() - 86_400_000)
    }

    /// Run one reply's tool calls in order, each result stored as it completes.
    #[allow(clippy::too_many_arguments)]
    async fn run_tools(
        &self,
        session_id: i64,
        calls: Vec<(String, String, serde_json::Value)>,
        ctx: &ToolContext,
        queue: &SessionQueue,
        control: &TurnControl,
        deadline: tokio::time::Instant,
        messages: &mut Vec<ChatMessage>,
    ) -> Option<Ended> {
        let mut ended = None;
        for (id, name, arguments) in calls {
            let (content, is_error) = if ended.is_some() {
                (CANCELLED.to_string(), true)
            } else if queue.steering_pending() {
                // Checkpoint: before each tool call (after the previous result).
                (SKIPPED.to_string(), true)
            } else {
                tracing::info!(tool = %name, "tool call");
                tokio::select! {
                    biased;
                    _ = control.token().cancelled() => {
                        ended = Some(stopped(control));
                        (CANCELLED.to_string(), true)
                    }
                    _ = tokio::time::sleep_until(deadline) => {
                        ended = Some(Ended::Budget(Budget::Time(self.limits.max_turn.as_secs())));
                        (CANCELLED.to_string(), true)
                    }
                    outcome = self.tools.call(&name, arguments, ctx) => (outcome.content, outcome.is_error),
                }
            };
            let result = Part::ToolResult {
                call_id: id,
                name,
                content,
                is_error,
            };
            if let Err(err) = self
                .store
                .append(session_id, store::Role::Tool, vec![result.clone()])
                .await
            {
                ended.get_or_insert(Ended::Failed(err.to_string()));
            }
            history::push_user(messages, result);
        }
        ended
    }
}

impl Agent {
    /// Deliver steered messages into the running conversation (and move them to this
    /// point of the stored transcript).
    async fn steer_in(
        &self,
        session_id: i64,
        queue: &SessionQueue,
        messages: &mut Vec<ChatMessage>,
        answered: &mut Vec<i64>,
    ) -> Result<(), store::StoreError> {
        for item in queue.take_steering() {
            tracing::info!("steering a queued message into the running turn");
            self.store
                .take(session_id, item.message_ids.clone(), store::Status::Active)
                .await?;
            answered.extend(item.message_ids);
            history::push_user(messages, Part::Text { text: item.text });
        }
        Ok(())
    }
}

fn stopped(control: &TurnControl) -> Ended {
    Ended::Stopped(control.reason().unwrap_or(StopReason::User))
}

fn is_empty_text(part: &Part) -> bool {
    matches!(part, Part::Text { text } if text.is_empty())
}
