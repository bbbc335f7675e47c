//! Chat commands the dispatcher answers itself, without the model: /new, /stop,
//! /status, /model, /usage, /compact, /memory, /dream, /approve, /tasks and /help.
//! They work while a turn is running.

use std::sync::Arc;

use pincer_channels::{InboundMessage, OutboundBody, SessionKey, Target};
use pincer_config::QueueMode;

use super::Dispatcher;
use crate::access::{Origin, Place};
use crate::steering::StopReason;
use crate::store::{Status, StoreError};
use crate::tasks::Whose;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/approve CODE`: the owner lets a pairing sender in.
    Approve(String),
    New,
    Stop,
    Status,
    /// `/model [light|heavy|auto|<provider>/<model>]`: show or pin the session's model.
    Model(String),
    /// `/usage`: this session's and today's tokens and cost.
    Usage,
    /// `/compact`: summarise the older part of the conversation now.
    Compact,
    /// `/memory`: show the memory index (the owner, in a direct chat).
    Memory,
    /// `/dream`: tidy the memory now and say what changed (the owner).
    Dream,
    /// `/tasks`: this conversation's subagent tasks (a non-owner's: their own);
    /// `/tasks stop N` stops one.
    Tasks(Option<i64>),
    /// `/trust`: the owner vouches for what this conversation took in (a web page, a
    /// file, someone's message): acting tools stop asking until something new comes in.
    Trust,
    Help,
}

pub const HELP: &str = "Commands:\n/new — start a new conversation (the old one stays in `pincer sessions`)\n/stop — stop the reply in progress\n/status — session, model, queue and today's usage\n/model [light|heavy|auto|provider/model] — show or pin the model for this conversation\n/usage — tokens and cost of this conversation and of today\n/compact — summarise the older part of this conversation to keep it small\n/tasks — the tasks I run for this conversation (yours, unless you are my owner); /tasks stop N stops one\n/memory — what I remember (the MEMORY.md index)\n/dream — tidy my memory now and say what changed\n/trust — (owner) vouch for what this conversation took in, so commands and writes stop asking\n/approve CODE — (owner) let in the sender holding this pairing code\n/help — this list";

/// A message that is one of our commands ("/new", "/new@my_bot", " /STOP ").
pub fn parse(text: &str) -> Option<Command> {
    let word = text.split_whitespace().next()?;
    let name = word.strip_prefix('/')?;
    let name = name.split('@').next().unwrap_or(name).to_ascii_lowercase();
    match name.as_str() {
        "approve" => Some(Command::Approve(
            text.split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_string(),
        )),
        "new" | "reset" => Some(Command::New),
        "stop" => Some(Command::Stop),
        "status" => Some(Command::Status),
        "model" => Some(Command::Model(
            text.split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_string(),
        )),
        "usage" => Some(Command::Usage),
        "compact" => Some(Command::Compact),
        "memory" => Some(Command::Memory),
        "dream" => Some(Command::Dream),
        "tasks" => {
            let mut words = text.split_whitespace().skip(1);
            match (words.next(), words.next()) {
                (Some(stop), number) if stop.eq_ignore_ascii_case("stop") => {
                    Some(Command::Tasks(Some(
                        number
                            .and_then(|n| n.trim_start_matches('#').parse().ok())
                            .unwrap_or(0),
                    )))
                }
                _ => Some(Command::Tasks(None)),
            }
        }
        "trust" => Some(Command::Trust),
        "help" | "start" => Some(Command::Help),
        _ => None,
    }
}

impl Dispatcher {
    pub(super) async fn command(
        self: &Arc<Self>,
        command: Command,
        key: &SessionKey,
        message: &InboundMessage,
        origin: &Origin,
    ) -> String {
        if let Some(refusal) = not_for(&command, origin) {
            return refusal.to_string();
        }
        match command {
            Command::Approve(code) => self.approve(&code, message, origin).await,
            Command::Help => HELP.to_string(),
            Command::Stop => {
                let reply = self
                    .queue(key)
                    .is_some_and(|q| q.stop_turn(StopReason::User));
                let tasks = self.agent.tasks().stop_all(key, Whose::of(origin));
                match (reply, tasks) {
                    (false, 0) => "Nothing is running.".into(),
                    (true, 0) => "Stopping the current reply.".into(),
                    (false, n) => format!("Stopping {n} running task(s)."),
                    (true, n) => format!("Stopping the current reply and {n} running task(s)."),
                }
            }
            Command::Tasks(None) => self.agent.tasks().list(key, Whose::of(origin)).await,
            Command::Tasks(Some(number)) => {
                if self.agent.tasks().stop(key, number, Whose::of(origin)) {
                    format!("Stopping task {number}.")
                } else if origin.is_owner() {
                    format!(
                        "Task {number} is not running here; /tasks lists this conversation's tasks."
                    )
                } else {
                    format!("Task {number} is not one of yours running here; /tasks lists yours.")
                }
            }
            Command::New => {
                self.agent.tasks().stop_all(key, Whose::of(origin));
                if let Some(queue) = self.queue(key) {
                    queue.stop_turn(StopReason::User);
                    let dropped: Vec<i64> = queue
                        .clear()
                        .into_iter()
                        .flat_map(|q| q.message_ids)
                        .collect();
                    if !dropped.is_empty() {
                        let _ = self.store.set_status(dropped, Status::Done).await;
                    }
                }
                match self.store.new_session(key).await {
                    Ok(_) => "Started a new conversation.".into(),
                    Err(err) => format!("Could not start a new conversation: {err}"),
                }
            }
            Command::Trust => match self.store.current_session(key).await {
                Ok(session) => match self.store.set_untrusted(session, false).await {
                    Ok(()) => "This conversation is trusted again: what it took in so far no longer makes commands, writes and messages ask. Anything new from the web, a file or someone else does.".into(),
                    Err(err) => format!("Could not trust this conversation: {err}"),
                },
                Err(err) => format!("Could not find this conversation: {err}"),
            },
            Command::Status => self.status(key, origin).await,
            Command::Memory => self.memory_index(origin),
            // Answered by `dream` (it runs in the background); here only by mistake.
            Command::Dream => "Dreaming…".into(),
            Command::Model(choice) => self.model(key, &choice).await,
            Command::Usage if !origin.is_owner() => self.own_usage(origin).await,
            Command::Usage => self.usage(key).await,
            Command::Compact => {
                if self.queue(key).is_some_and(|q| q.busy()) {
                    return "A reply is in progress; send /compact after it.".into();
                }
                let session = match self.store.current_session(key).await {
                    Ok(id) => id,
                    Err(err) => return format!("Could not find this conversation: {err}"),
                };
                let spender = crate::store::Spender {
                    sender: origin.sender.clone(),
                    tier: origin.tier,
                };
                match self.agent.compact(session, &spender).await {
                    Ok(Some(done)) => match done.refused {
                        Some(why) => format!(
                            "The model's summary was not good enough ({why}), so {} older messages were left out of what the model sees instead; the latest stay word for word, and the full transcript stays in `pincer sessions show`.",
                            done.messages
                        ),
                        None => format!(
                            "Compacted {} older messages into a summary of {} characters; the full transcript stays in `pincer sessions show`.",
                            done.messages, done.summary_chars
                        ),
                    },
                    Ok(None) => {
                        "This conversation is short; there is nothing to compact yet.".into()
                    }
                    Err(err) => err.to_string(),
                }
            }
        }
    }

    /// `/dream`: dream in the background (it calls the heavy model, which takes a
    /// while) and say what changed when done, in answer to the message `to`; the turn
    /// ends then, and `done` hears it.
    pub(super) async fn dream(
        self: &Arc<Self>,
        target: &Target,
        to: &str,
        origin: &Origin,
        done: Option<pincer_channels::Done>,
    ) {
        if !origin.is_owner() {
            self.say_text(target, Some(to), "Only the owner can start a dream.".into())
                .await;
            self.say(target, Some(to), OutboundBody::Done).await;
            return;
        }
        let target = target.clone();
        let to = to.to_string();
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let text = match crate::memory::dream(&this.agent, this.agent.dream_max_tokens()).await
            {
                Ok(dreamt) => dreamt.describe(),
                Err(err) => format!("The dream failed: {err}"),
            };
            this.say_text(&target, Some(&to), text).await;
            this.say(&target, Some(&to), OutboundBody::Done).await;
            if let Some(done) = done {
                done.fire(Ok(()));
            }
        });
    }

    /// `/memory`: the index, for the owner where their memory belongs (a direct chat).
    fn memory_index(&self, origin: &Origin) -> String {
        if !origin.is_owner() {
            return "Only the owner can see my memory.".into();
        }
        if !self.agent.tool_policy().owner_memory(origin) {
            return "Ask for /memory in your direct chat with me, not in a group.".into();
        }
        match self.agent.memory().index() {
            Ok(Some(index)) => format!(
                "{}
(MEMORY.md in {}; `pincer memory log` shows what changed)",
                index.text.trim_end(),
                self.agent.workspace().display()
            ),
            Ok(None) => "I have no memories yet. Tell me something worth keeping, or write MEMORY.md in the workspace.".into(),
            Err(err) => format!("Could not read the memory index: {err}"),
        }
    }

    async fn approve(&self, code: &str, message: &InboundMessage, origin: &Origin) -> String {
        if code.is_empty() {
            return "Usage: /approve CODE".into();
        }
        if !origin.is_owner() {
            return "Only the owner can approve pairing codes.".into();
        }
        if !matches!(origin.place, Place::Direct | Place::Terminal) {
            return "Approve pairing codes in your direct chat with me, not in a group.".into();
        }
        // The terminal owns every channel; a chat channel's owner approves for it.
        let channel = (origin.place != Place::Terminal).then_some(message.channel.as_str());
        let by = message.sender.canonical.clone();
        match self.store.approve_code(channel, code, &by).await {
            Ok(Some(approved)) => {
                let Some(welcome) = Target::user(&approved.sender) else {
                    return format!("Approved {} on {}.", approved.sender, approved.channel);
                };
                let hello = "You're approved; go ahead and talk to me.".to_string();
                self.say_text(&welcome, None, hello).await;
                format!(
                    "Approved {} ({}) on {}.",
                    crate::access::sanitize_name(&approved.display_name),
                    approved.sender,
                    approved.channel
                )
            }
            Ok(None) => {
                "That code is wrong or has expired. `pincer pairing list` shows the pending ones."
                    .into()
            }
            Err(err) => format!("Could not approve: {err}"),
        }
    }

    async fn model(&self, key: &SessionKey, choice: &str) -> String {
        let store = &self.store;
        let session = match store.current_session(key).await {
            Ok(id) => id,
            Err(err) => return format!("Could not find this conversation: {err}"),
        };
        let models = &self.agent.models();
        if choice.is_empty() {
            let pin = store.session_meta(session).await.ok().and_then(|m| m.pin);
            let now = match pin {
                Some(pin) => format!("pinned to {pin}"),
                None => format!(
                    "auto (the router picks light or heavy; threshold {})",
                    models.threshold
                ),
            };
            return format!(
                "Model: {now}\n{}\nChange it with /model light, /model heavy, /model provider/model, or /model auto.",
                models.describe()
            );
        }
        match self.pin_model(key, choice).await {
            Ok(said) => said,
            Err(err) => err.to_string(),
        }
    }

    /// Pin the conversation `key` to `choice` (`light`, `heavy`, `auto`, or a
    /// `provider/model` label) and say so; `Err` says why not.
    pub async fn pin_model(&self, key: &SessionKey, choice: &str) -> Result<String, PinError> {
        let store = &self.store;
        let session = store
            .current_session(key)
            .await
            .map_err(PinError::Session)?;
        let pin = match choice {
            "auto" | "" | "default" => None,
            "light" | "heavy" => Some(choice.to_string()),
            label => match self.agent.models().pinned(label) {
                Ok(_) => Some(label.to_string()),
                Err(err) => return Err(PinError::Model(err)),
            },
        };
        let said = match &pin {
            None => "Model: auto (the router picks light or heavy).".to_string(),
            Some(tier) if tier == "light" || tier == "heavy" => {
                format!("Model: pinned to the {tier} chain for this conversation.")
            }
            Some(label) => format!(
                "Model: pinned to {label} for this conversation; it will not fall back to another model."
            ),
        };
        match store.set_pin(session, pin).await {
            Ok(()) => Ok(said),
            Err(err) => Err(PinError::Save(err)),
        }
    }
}

/// Why a conversation could not be pinned to a model (`/model`, a host's `set_model`).
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("Could not find this conversation: {0}")]
    Session(StoreError),
    #[error("Cannot pin {0}")]
    Model(crate::models::ModelsError),
    #[error("Could not change the model: {0}")]
    Save(StoreError),
}

impl Dispatcher {
    async fn usage(&self, key: &SessionKey) -> String {
        let store = &self.store;
        let mut lines = Vec::new();
        if let Ok(session) = store.current_session(key).await
            && let Ok((usage, cost)) = store.session_usage(session).await
        {
            lines.push(format!(
                "This conversation: {} tokens in, {} out, {} cached; ${cost:.4}",
                usage.input_tokens, usage.output_tokens, usage.cache_read_tokens
            ));
        }
        if let Ok((usage, cost)) = store.usage_since(self.agent.start_of_day_ms()).await {
            let limits = &self.agent.limits();
            lines.push(format!(
                "Today: {} tokens in, {} out, {} cached; ${cost:.4} of ${:.2} (agent.max_day_cost_usd); a turn may spend ${:.2}",
                usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, limits.max_day_cost_usd, limits.max_turn_cost_usd
            ));
        }
        lines.join("\n")
    }

    /// A non-owner's own spending today and their allowance; nothing of anyone else's.
    async fn own_usage(&self, origin: &Origin) -> String {
        let since = self.agent.start_of_day_ms();
        let spent = self
            .store
            .sender_cost_since(&origin.sender, since)
            .await
            .unwrap_or_default();
        let allowance = self
            .agent
            .access()
            .day_cost_usd(origin.tier)
            .unwrap_or_default();
        format!(
            "You: {} ({}). Today you have used ${spent:.4} of your ${allowance:.2} allowance; it renews at midnight.",
            origin.label(),
            origin.tier
        )
    }

    async fn status(&self, key: &SessionKey, origin: &Origin) -> String {
        if !origin.is_owner() {
            let busy = self.queue(key).is_some_and(|q| q.busy());
            let state = if busy {
                "a reply is in progress"
            } else {
                "idle"
            };
            return format!("{}\nConversation: {state}", self.own_usage(origin).await);
        }
        let store = &self.store;
        let mut lines = vec![format!("You: {} ({})", origin.label(), origin.tier)];
        match store.current_session(key).await {
            Ok(id) => {
                let count = store.history(id).await.map(|h| h.len()).unwrap_or(0);
                lines.push(format!("Session {key} (#{id}, {count} messages)"));
            }
            Err(err) => lines.push(format!("Session {key}: {err}")),
        }
        let pin = match store.current_session(key).await {
            Ok(id) => store.session_meta(id).await.ok().and_then(|m| m.pin),
            Err(_) => None,
        };
        let routing = pin.map_or_else(|| "auto".to_string(), |p| format!("pinned to {p}"));
        lines.push(format!(
            "Models: {routing} ({})",
            self.agent.models().describe()
        ));
        let busy = self.queue(key).is_some_and(|q| q.busy());
        let mode = match self.mode {
            QueueMode::Steer => "steer",
            QueueMode::Followup => "followup",
            QueueMode::Collect => "collect",
            QueueMode::Interrupt => "interrupt",
        };
        let state = if busy {
            "a reply is in progress"
        } else {
            "idle"
        };
        lines.push(format!("Queue mode: {mode}; {state}"));
        let midnight = self.agent.start_of_day_ms();
        if let Ok((usage, cost)) = store.usage_since(midnight).await {
            lines.push(format!(
                "Today: {} tokens in, {} out, {} cached; ${cost:.4} of ${:.2}",
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                self.agent.limits().max_day_cost_usd
            ));
        }
        lines.push(format!(
            "Up {}s, {} active sessions",
            self.started.elapsed().as_secs(),
            self.live_sessions()
        ));
        let (warned, stopped) = self.agent.stuck().get();
        lines.push(format!(
            "Stuck loops since start: {warned} noticed, {stopped} stopped"
        ));
        lines.join("\n")
    }
}

/// Why `origin` may not use `command`, if they may not: /model and /compact spend and
/// change the conversation for everyone, so they are the owner's; in a group so are
/// /stop and /new (a guest must not stop or reset the owner's conversation). `/tasks
/// stop N` is anyone's, for their own tasks (`Whose`).
fn not_for(command: &Command, origin: &Origin) -> Option<&'static str> {
    if origin.is_owner() {
        return None;
    }
    match command {
        Command::Model(_) => Some("Only the owner can change the model."),
        Command::Compact => Some("Only the owner can compact the conversation."),
        Command::Trust => Some("Only the owner can vouch for this conversation."),
        Command::Stop | Command::New if origin.place == Place::Group => {
            Some("Only the owner can stop or restart the conversation in a group.")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_recognised_loosely_and_only_at_the_start() {
        assert_eq!(parse("/new"), Some(Command::New));
        assert_eq!(parse("  /STOP please"), Some(Command::Stop));
        assert_eq!(parse("/status@pincer_bot"), Some(Command::Status));
        assert_eq!(parse("/help"), Some(Command::Help));
        assert_eq!(parse("/dream"), Some(Command::Dream));
        assert_eq!(parse("/memory@pincer_bot"), Some(Command::Memory));
        assert_eq!(parse("what does /new do?"), None);
        assert_eq!(parse("/unknown"), None);
        assert_eq!(
            parse("/approve abcd2345"),
            Some(Command::Approve("abcd2345".into()))
        );
    }
}
