//! One turn: load the conversation, route it, then loop — checkpoint, gates, model
//! call, tools — until the model answers without tools or something ends the turn.
//!
//! - `calls` — one reply's tool calls: batches, checkpoints, results stored in order
//! - `secrets` — tool-call arguments with secrets taken out; the owner told
//! - `host`    — the host's `UserPromptSubmit` and `Stop` hooks
//! - `output`  — a model call's answer made ready: a runaway's kept text, text calls

mod calls;
mod fit;
mod host;
mod output;
mod secrets;

use std::time::Instant;

use super::outcome::{Budget, Ended, TurnError};
use super::reply::Reply;
use super::route::{ESCALATE, Route, escalate_spec};
use super::stuck::{Verdict, Watch};
use super::{Agent, CANCELLED, SKIPPED, TurnReport, history, prompt, window};
use crate::access::{Origin, Place};
use crate::provider::{
    ChatMessage, ChatRequest, ErrorKind, Part, Role, StopReason as ModelStop, StreamEvent,
};
use crate::steering::{Queued, SessionQueue, StopReason, TurnControl};
use crate::store::{self, Spender, now_ms};
use crate::tools::Taint;

/// Whether any message carries a picture to show (see `crate::media::show`).
fn shows_images(messages: &[ChatMessage]) -> bool {
    messages
        .iter()
        .flat_map(|m| &m.parts)
        .any(|p| matches!(p, Part::Image { data: Some(_), .. }))
}

/// How often a reply cut by the output limit is continued.
const MAX_CONTINUATIONS: u32 = 3;
const CONTINUE: &str = "Continue exactly where you stopped.";

/// One turn's state.
struct Turn<'a> {
    agent: &'a Agent,
    session_id: i64,
    first: &'a Queued,
    queue: &'a SessionQueue,
    control: &'a TurnControl,
    reply: Reply,
    messages: Vec<ChatMessage>,
    /// Stored user messages this turn answers.
    answered: Vec<i64>,
    route: Route,
    started: Instant,
    deadline: tokio::time::Instant,
    iterations: u32,
    cost: f64,
    continuations: u32,
    /// Reply text of the current assistant message, across output-limit continuations.
    text: String,
    /// Compaction was already tried for a too-long context.
    compacted: bool,
    /// The conversation was already summarised to fit the window this turn.
    window_compacted: bool,
    /// Completion handles of steered-in messages.
    done: Vec<pincer_channels::Done>,
    /// Who the turn is for: the first message's sender, lowered by any steered in.
    origin: Origin,
    /// Set once the turn takes in untrusted content (see `crate::tools::Taint`).
    taint: Taint,
    /// The owner's memory recalled into this turn, taken out again if someone whose
    /// turn it must not be steers in.
    recalled: Option<String>,
    /// User texts steered into the turn, and everything the assistant said: the
    /// daily log's record of the turn.
    heard: Vec<String>,
    said: String,
    /// The last message the assistant wrote (a subagent's answer).
    last_text: String,
    /// What the turn did, to notice it going round in circles.
    watch: Watch,
    /// What the turn used, for its `finish`.
    usage: pincer_channels::TurnUsage,
    /// Tool calls of this step whose `tool-input-start` went out while streaming.
    started_tools: std::collections::HashSet<String>,
    /// How often the host's `Stop` hooks sent the model back to work.
    stop_blocks: u32,
    /// Tool calls written as text so far this turn: their ids are numbered by it.
    text_call_ids: u64,
}

pub(super) async fn run(
    agent: &Agent,
    session_id: i64,
    first: Queued,
    queue: &SessionQueue,
    control: &TurnControl,
) -> TurnReport {
    let began = Instant::now();
    let _running = crate::metrics::turn_running();
    let mut reply = Reply::new(
        agent.outbound.clone(),
        first.target.clone(),
        first.reply_to.clone(),
        first.quiet(),
        std::sync::Arc::clone(&agent.guard.scrubber),
    );
    if first.task.is_some() {
        reply.silence();
    }
    reply.keep(agent.outbox.clone(), session_id);
    if let Some(emoji) = agent.ack_reactions.get(&first.target.channel) {
        reply.react(emoji).await;
    }
    reply.start().await;
    // The first turn after start may come before the MCP servers are up.
    agent.tools.mcp_ready(agent.limits.mcp_wait).await;
    let mut answered = first.message_ids.clone();
    let mut untrusted_before = false;
    let prepared = match agent.load(session_id, &first, &mut answered).await {
        Ok((mut messages, pin, untrusted)) => {
            untrusted_before = untrusted;
            let images = shows_images(&messages);
            match agent.route(pin.as_deref(), &messages, first.attachment, images) {
                Ok(route) => {
                    if images && !route.sees {
                        for message in &mut messages {
                            crate::media::unshow(&mut message.parts);
                        }
                        reply.notice(crate::media::NO_VISION.to_string()).await;
                    }
                    match host::prompt_submitted(agent, &first).await {
                        Ok(context) => {
                            if let Some(context) = context {
                                history::push_user_apart(&mut messages, context);
                            }
                            Ok((messages, route))
                        }
                        Err(blocked) => Err(blocked),
                    }
                }
                Err(err) => Err(TurnError::from(err)),
            }
        }
        Err(err) => Err(TurnError::from(err)),
    };
    let mut heard = vec![first.text.clone()];
    let mut said = String::new();
    let mut last_text = String::new();
    let mut usage = pincer_channels::TurnUsage::default();
    let turn_started = Instant::now();
    let mut turn_origin = first.origin.clone();
    let (ended, answered, mut reply, done) = match prepared {
        Ok((mut messages, route)) => {
            // Recalled memory rides on the newest user message, after the cached prefix;
            // it is the owner's, so only where their memory belongs.
            let mut recalled = None;
            if agent.tool_policy.owner_memory(&first.origin)
                && let Some(text) = agent.recall(&first.text).await
            {
                history::push_user_apart(&mut messages, text.clone());
                recalled = Some(text);
            }
            let mut turn = Turn {
                agent,
                session_id,
                first: &first,
                queue,
                control,
                reply,
                messages,
                answered,
                route,
                started: Instant::now(),
                deadline: tokio::time::Instant::now() + agent.limits.max_turn,
                iterations: 0,
                cost: 0.0,
                continuations: 0,
                text: String::new(),
                compacted: false,
                window_compacted: false,
                done: Vec::new(),
                origin: first.origin.clone(),
                recalled,
                taint: untrusted_from_the_start(&first, untrusted_before),
                heard: Vec::new(),
                said: String::new(),
                last_text: String::new(),
                watch: Watch::default(),
                usage: Default::default(),
                started_tools: Default::default(),
                stop_blocks: 0,
                text_call_ids: 0,
            };
            let ended = turn.run().await;
            // What came in stays in the conversation: so does its distrust, for the turns
            // after this one, until it is summarised away, `/new` or `/trust`.
            if turn.taint.is_set()
                && let Err(err) = agent.store.set_untrusted(session_id, true).await
            {
                tracing::warn!("the conversation's distrust was not stored: {err}");
            }
            heard.append(&mut turn.heard);
            said = turn.said;
            last_text = turn.last_text;
            usage = turn.usage;
            turn_origin = turn.origin;
            (ended, turn.answered, turn.reply, turn.done)
        }
        Err(err) => (Ended::Failed(err), answered, reply, Vec::new()),
    };
    if let Some(notice) = ended.notice() {
        match ended {
            // A turn that could not finish is a failure to scripts (`chat -m` exits 1).
            Ended::Failed(_) | Ended::Budget(_) | Ended::Stuck(_) => reply.error(notice).await,
            _ => reply.notice(notice).await,
        }
    }
    // Logged before the turn ends, so whoever waits for the end finds it in the log.
    let who = match first.origin.place {
        Place::Terminal => String::new(),
        _ => first.origin.label(),
    };
    // The daily log feeds the dream, which tidies the owner's memory: only turns where
    // the owner's memory belongs are written to it.
    // A subagent's work reaches the log through its parent's turn.
    if agent.tool_policy.owner_memory(&turn_origin) && first.task.is_none() {
        agent.log_turn(&who, &heard, &said).await;
    }
    usage.duration_ms = turn_started.elapsed().as_millis() as u64;
    reply.end(ended.finish_reason(), usage).await;
    crate::metrics::turn_ended(turn_origin.tier, ended.word(), began.elapsed());
    TurnReport {
        ended,
        answered,
        done,
        last_text,
    }
}

impl Turn<'_> {
    async fn run(&mut self) -> Ended {
        loop {
            // Checkpoint: loop start.
            if let Err(err) = self.steer_in().await {
                return Ended::Failed(err.into());
            }
            if let Some(ended) = self.gate().await {
                return ended;
            }
            self.iterations += 1;
            let (response, label) = match self.call_model().await {
                Ok(Some(ok)) => ok,
                Ok(None) => continue, // moved to another chain or compacted: try again
                Err(ended) => return ended,
            };
            let cost = self.agent.prices.cost(&label, response.usage);
            self.cost += cost;
            let tokens = pincer_channels::chunk::CallTokens {
                input: response.usage.input_tokens,
                output: response.usage.output_tokens,
                cache_read: response.usage.cache_read_tokens,
                cache_write: response.usage.cache_write_tokens,
            };
            self.usage.record(&label, tokens, cost);
            // What the person sees and the transcript keeps, without reasoning blocks or
            // tool-call markup the model leaked into its text; stored with the call's
            // usage in one store call.
            let parts = super::clean::clean_parts(response.parts);
            // The calls as the model made them: the pipeline refuses one whose
            // arguments carry a secret. What is stored, shown and kept in the
            // conversation has its secrets taken out.
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
            let (parts, carried) = self.scrub_calls(parts);
            let reply = (!parts.is_empty()).then(|| (parts.clone(), Some(self.origin.tier)));
            let recorded = self
                .agent
                .store
                .record_call(
                    self.session_id,
                    &label,
                    response.usage,
                    cost,
                    &self.spender(),
                    reply,
                )
                .await;
            match recorded {
                Err(err) if !parts.is_empty() => return Ended::Failed(err.into()),
                Err(err) => tracing::warn!("usage not recorded: {err}"),
                Ok(Some(stored)) => self.reply.next_text_from(stored),
                Ok(None) => {}
            }
            if parts.is_empty()
                && self
                    .route
                    .escalate(self.agent, "the light model gave an empty answer")
            {
                continue;
            }
            let mut said = String::new();
            for part in &parts {
                if let Part::Text { text } = part {
                    said.push_str(text);
                }
            }
            self.text.push_str(&said);
            history::push_assistant(&mut self.messages, parts);
            let verdict = self.watch.text(&said);
            if let Some(ended) = self.heed(verdict) {
                self.finish_text().await;
                return ended;
            }
            if calls.is_empty() {
                if response.stop == ModelStop::MaxTokens && self.continuations < MAX_CONTINUATIONS {
                    self.continuations += 1;
                    history::push_user(
                        &mut self.messages,
                        Part::Text {
                            text: CONTINUE.into(),
                        },
                    );
                    continue;
                }
                self.finish_text().await;
                self.reply.step_finish().await;
                // Checkpoints: after a reply without tool calls, and before finishing.
                if self.queue.steering_pending() {
                    continue;
                }
                if self.stop_blocks < host::MAX_STOP_BLOCKS
                    && let Some(reason) = host::stopping(
                        self.agent,
                        self.first,
                        self.stop_blocks > 0,
                        &self.last_text,
                    )
                    .await
                {
                    self.stop_blocks += 1;
                    history::push_user(&mut self.messages, Part::Text { text: reason });
                    continue;
                }
                return Ended::Finished;
            }
            self.finish_text().await;
            self.continuations = 0;
            for (id, name, args) in &calls {
                let started = self.started_tools.contains(id);
                self.reply.tool_input(id, name, args, started).await;
            }
            self.started_tools.clear();
            if !carried.is_empty() {
                self.tell_owners_of_secrets(&carried).await;
            }
            let ended = self.run_tools(calls).await;
            self.reply.step_finish().await;
            if let Some(ended) = ended {
                return ended;
            }
        }
    }

    /// Act on what the watch saw: a first repeat becomes a note to the model, a repeat
    /// after it ends the turn.
    fn heed(&mut self, verdict: Verdict) -> Option<Ended> {
        self.agent.stuck.record(&verdict);
        match verdict {
            Verdict::Fine => None,
            Verdict::Warn(stuck) => {
                tracing::warn!(
                    session_id = self.session_id,
                    "stuck: {}; telling the model",
                    stuck.what()
                );
                history::push_user(&mut self.messages, Part::Text { text: stuck.note() });
                None
            }
            Verdict::Stop(stuck) => {
                tracing::warn!(
                    session_id = self.session_id,
                    "stuck: {}; stopping the turn",
                    stuck.what()
                );
                Some(Ended::Stuck(stuck.sentence()))
            }
        }
    }

    /// The current assistant message is complete: deliver it and note it for the log.
    async fn finish_text(&mut self) {
        let text = std::mem::take(&mut self.text);
        if !text.trim().is_empty() {
            if !self.said.is_empty() {
                self.said.push('\n');
            }
            self.said.push_str(&text);
            self.last_text.clone_from(&text);
        }
        self.reply.finished_text(text).await;
    }

    /// One model call. `Ok(None)`: nothing to use, but the turn may go on (it moved to
    /// the heavy chain, or compacted a too-long context); try again.
    async fn call_model(
        &mut self,
    ) -> Result<Option<(crate::provider::ChatResponse, String)>, Ended> {
        let request = self.fitted_request().await?;
        let estimated = window::Estimate::of(&request);
        let hang_up = self.reply.watch_call(&request.tools, self.stream_mode());
        self.reply.step_start().await;
        if self.iterations == 1
            && let Some(arrived) = self.first.arrived
        {
            crate::metrics::inbound_overhead(arrived.elapsed());
        }
        let called = std::time::Instant::now();
        let chain = std::sync::Arc::clone(&self.route.chain);
        // Whether the user has seen any of this reply (what they saw is kept, from the
        // reply, if the call is cut short).
        let mut shown = false;
        let reply = &mut self.reply;
        let started_tools = &mut self.started_tools;
        let mut on_event = |event: StreamEvent<'_>| match event {
            StreamEvent::Text(text) => {
                shown |= !text.is_empty();
                reply.delta(text);
            }
            StreamEvent::Reasoning(text) => reply.reasoning(text),
            StreamEvent::ToolCallStarted { id, name } if !id.is_empty() => {
                started_tools.insert(id.to_string());
                reply.tool_started(id, name);
            }
            StreamEvent::ToolCallStarted { .. } => reply.structured_call(),
            StreamEvent::Restart => {
                shown = false;
                started_tools.clear();
                reply.retract();
            }
        };
        let result = tokio::select! {
            biased;
            _ = self.control.token().cancelled() => None,
            _ = tokio::time::sleep_until(self.deadline) => {
                let shown = self.reply.take_call_shown();
                self.keep_shown(shown).await;
                return Err(Ended::Budget(Budget::Time(self.started.elapsed().as_secs())));
            }
            _ = hang_up.cancelled() => Some(Ok(output::hung_up())),
            result = chain.stream(request, &mut on_event) => Some(result),
        };
        self.usage.model_ms += called.elapsed().as_millis() as u64;
        let Some(result) = result else {
            let shown = self.reply.take_call_shown();
            self.keep_shown(shown).await;
            return Err(stopped(self.control));
        };
        match result {
            Ok(ok) => {
                let usage = ok.0.usage;
                let counted =
                    usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
                self.agent.seen.calibrate(&ok.1, estimated, counted);
                Ok(Some(self.output(ok)))
            }
            Err(err) if err.kind == ErrorKind::ContextTooLong => {
                self.overflowed(err, estimated).await
            }
            Err(err) => {
                if !shown && self.route.escalate(self.agent, "the light chain failed") {
                    return Ok(None);
                }
                Err(Ended::Failed(err.into()))
            }
        }
    }

    /// Read the conversation again from the store (after pruning or compaction), with
    /// the turn's own messages, pictures hidden where the model cannot see.
    async fn reload(&mut self) -> Result<(), Ended> {
        let mut answered = self.answered.clone();
        (self.messages, _, _) = self
            .agent
            .load(self.session_id, self.first, &mut answered)
            .await
            .map_err(|e| Ended::Failed(e.into()))?;
        if !self.route.sees {
            for message in &mut self.messages {
                crate::media::unshow(&mut message.parts);
            }
        }
        Ok(())
    }

    /// Who the turn's tool calls are for: a subagent has fewer tools than its parent,
    /// and a host may have kept only some (`--tool-preset`).
    fn caller(&self) -> crate::tools::Caller {
        let mut caller = self.agent.tool_policy.caller(self.origin.clone());
        if let Some(preset) = self.agent.modes.preset(self.session_id) {
            caller = caller.with_preset(preset);
        }
        match self.first.task {
            Some(_) => caller.subagent(),
            None => caller,
        }
    }

    /// Who pays for this turn's calls.
    fn spender(&self) -> Spender {
        Spender {
            sender: self.origin.sender.clone(),
            tier: self.origin.tier,
        }
    }

    fn request(&self) -> ChatRequest {
        let agent = self.agent;
        let target = &self.first.target;
        let chat = match self.origin.place {
            Place::Terminal => "a direct chat with your owner".to_string(),
            _ => match &target.thread_id {
                Some(thread) => format!("chat {} (topic {thread})", target.chat_id),
                None => format!("chat {}", target.chat_id),
            },
        };
        let caller = self.caller();
        let loaded = agent.loaded.get(self.session_id);
        let small = self.window().0 < agent.limits.small_window;
        let mut tools = match small {
            true => agent
                .tools
                .offered_small(&caller, &loaded, &agent.limits.small_tools),
            false => agent.tools.offered_with(&caller, &loaded),
        };
        crate::tools::mode::keep_offered(agent.modes.get(self.session_id), &mut tools, |n| {
            agent.tools.effects_of(n)
        });
        // An MCP server nobody vouches for wrote these tools' descriptions: they are
        // in the prompt now, so the turn is untrusted.
        if !self.taint.is_set()
            && tools
                .iter()
                .any(|t| agent.tools.effects_of(&t.name).unvouched())
        {
            self.taint.set();
        }
        // The skill tool is only worth its tokens when there are skills to load.
        let skills = crate::tools::skills::list(&agent.workspace);
        if tools.iter().any(|t| t.name == "skill") && skills.is_empty() {
            tools.retain(|t| t.name != "skill");
        }
        if self.route.can_escalate(agent) {
            // Among the built-ins, in name order; MCP tools stay after them.
            let at = tools
                .iter()
                .position(|t| t.name.starts_with("mcp__") || t.name.as_str() > ESCALATE)
                .unwrap_or(tools.len());
            tools.insert(at, escalate_spec());
        }
        let system = prompt::build(
            &agent.memory,
            &agent.workspace,
            !tools.is_empty(),
            &prompt::Context {
                channel: &target.channel,
                chat: &chat,
                timezone: agent.timezone,
                origin: &self.origin,
                owner_memory: agent.tool_policy.owner_memory(&self.origin),
                task: self.first.task.is_some(),
                skills: &skills,
                small,
            },
        );
        ChatRequest {
            model: String::new(),
            system_stable: system.stable,
            system_volatile: system.volatile,
            messages: self.messages.clone(),
            tools,
            max_tokens: agent.limits.max_tokens,
            thinking_budget: 0, // the chain sets it per model
            recalled_at: self.recalled_at(),
        }
    }

    /// Where this turn's recalled memory sits in the request: the newest user message
    /// holding it as a part of its own.
    fn recalled_at(&self) -> Option<(usize, usize)> {
        let recalled = self.recalled.as_deref()?;
        self.messages
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, message)| {
                let part = message
                    .parts
                    .iter()
                    .position(|part| matches!(part, Part::Text { text } if text == recalled))?;
                (message.role == Role::User).then_some((i, part))
            })
    }

    /// Store the part of a reply the user saw before the turn was cut short.
    async fn keep_shown(&self, shown: String) {
        if shown.trim().is_empty() {
            return;
        }
        let part = Part::Text { text: shown };
        if let Err(err) = self
            .agent
            .store
            .append_as(
                self.session_id,
                store::Role::Assistant,
                vec![part],
                Some(self.origin.tier),
            )
            .await
        {
            tracing::warn!("the partial reply was not stored: {err}");
        }
    }

    /// Budget gates, checked at the top of every iteration.
    async fn gate(&self) -> Option<Ended> {
        let limits = &self.agent.limits;
        if self.control.token().is_cancelled() {
            return Some(stopped(self.control));
        }
        if let Some(task) = self.first.task
            && self.iterations >= task.max_iterations.min(limits.max_iterations)
        {
            return Some(Ended::Budget(Budget::TaskIterations(self.iterations)));
        }
        if let Some(max) = self.agent.modes().max_calls(self.session_id)
            && self.iterations >= max
        {
            return Some(Ended::Budget(Budget::HostTurns(max)));
        }
        if self.iterations >= limits.max_iterations {
            return Some(Ended::Budget(Budget::Iterations(self.iterations)));
        }
        if self.cost >= limits.max_turn_cost_usd {
            return Some(Ended::Budget(Budget::TurnCost {
                spent: self.cost,
                limit: limits.max_turn_cost_usd,
            }));
        }
        if self.started.elapsed() >= limits.max_turn {
            return Some(Ended::Budget(Budget::Time(
                self.started.elapsed().as_secs(),
            )));
        }
        self.day_budget().await.err()
    }

    /// The day's budgets. Owners are stopped by what owner turns spent today (never by
    /// someone else's spending); anyone else by the whole day's spending and by their
    /// own allowance (`access.member_day_cost_usd` / `guest_day_cost_usd`).
    async fn day_budget(&self) -> Result<(), Ended> {
        let store = &self.agent.store;
        let limit = self.agent.limits.max_day_cost_usd;
        let since = self.agent.start_of_day_ms();
        let failed = |err: store::StoreError| Ended::Failed(err.into());
        let spent = if self.origin.is_owner() {
            store.owner_cost_since(since).await.map_err(failed)?
        } else {
            store.cost_since(since).await.map_err(failed)?
        };
        if spent >= limit {
            return Err(Ended::Budget(Budget::DayCost { spent, limit }));
        }
        if let Some(allowance) = self.agent.access.day_cost_usd(self.origin.tier) {
            let own = store
                .sender_cost_since(&self.origin.sender, since)
                .await
                .map_err(failed)?;
            if own >= allowance {
                return Err(Ended::Budget(Budget::SenderDay {
                    tier: self.origin.tier,
                    limit: allowance,
                }));
            }
        }
        Ok(())
    }

    /// Deliver steered messages into the running conversation (and move them to this
    /// point of the stored transcript).
    async fn steer_in(&mut self) -> Result<(), store::StoreError> {
        for mut item in self.queue.take_steering() {
            tracing::info!("steering a queued message into the running turn");
            self.done.append(&mut item.done);
            self.agent
                .store
                .take(
                    self.session_id,
                    item.message_ids.clone(),
                    store::Status::Active,
                )
                .await?;
            self.answered.extend(item.message_ids);
            if !item.origin.is_owner() || item.attachment {
                self.taint.set();
            }
            self.origin = self.origin.clone().join(item.origin);
            if self.origin.place == Place::Group {
                self.taint.set();
            }
            if !self.agent.tool_policy.owner_memory(&self.origin)
                && let Some(recalled) = self.recalled.take()
            {
                forget(&mut self.messages, &recalled);
            }
            self.heard.push(item.text.clone());
            let text = format!("{} {}", self.agent.stamp(now_ms()), item.text);
            history::push_user(&mut self.messages, Part::Text { text });
        }
        Ok(())
    }
}

/// Take `recalled` out of the conversation (it was added to a user message's text).
fn forget(messages: &mut [crate::provider::ChatMessage], recalled: &str) {
    for message in messages {
        for part in &mut message.parts {
            if let Part::Text { text } = part
                && text.contains(recalled)
            {
                *text = text
                    .replace(&format!("\n\n{recalled}"), "")
                    .replace(recalled, "");
            }
        }
    }
}

/// A turn for someone other than the owner, in a group (whose history and context hold
/// other people's words and files), about a file someone sent, in a conversation that
/// still holds untrusted content from earlier turns (`conversation`), or a task made by a
/// turn that had read untrusted content, is tainted from its first message.
fn untrusted_from_the_start(first: &Queued, conversation: bool) -> Taint {
    let taint = Taint::default();
    if !first.origin.is_owner()
        || first.origin.place == Place::Group
        || first.attachment
        || conversation
        || first.task.is_some_and(|t| t.tainted)
    {
        taint.set();
    }
    taint
}

fn stopped(control: &TurnControl) -> Ended {
    Ended::Stopped(control.reason().unwrap_or(StopReason::User))
}
