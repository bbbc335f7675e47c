//! What every fake chat platform offers the channel conformance suite
//! (`tests/conformance.rs`): one set of tests runs the real `pincer run` against each
//! fake through this trait, so every channel proves the same guarantees.
//!
//! Users and chats are small numbers here; each fake maps them onto its platform's
//! ids (Telegram integers, Discord snowflakes, Slack "U…"/"D…"/"C…") and back.

use std::time::{Duration, Instant};

use async_trait::async_trait;

/// One message the bot shows, with every edit applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The platform's chat id, as `dm`/`group` returned it.
    pub chat: String,
    /// The platform's id of the message.
    pub id: String,
    pub text: String,
    /// The thread it was posted in, where the platform has threads.
    pub thread: Option<String>,
    /// How many times it was edited after it was sent.
    pub edits: usize,
    /// Whether it carries approval buttons now.
    pub buttons: bool,
    /// When the platform took it in: sent, or edited last.
    pub at: Instant,
}

#[async_trait]
pub trait FakePlatform: Send + Sync {
    /// The channel's name in config and session keys ("telegram").
    fn name(&self) -> &'static str;

    /// The body of `[channels.<name>]` that points Pincer at this fake (api_url and any
    /// mode keys), one key per line, without `enabled`.
    fn config(&self) -> String;

    /// The YAML under `channels:` in `.security.yml` for this channel, e.g.
    /// `"  telegram:\n    bot_token: \"…\"\n"`.
    fn secrets(&self) -> String;

    /// The most characters one message may hold.
    fn limit(&self) -> usize;

    /// Pincer's canonical id for `user` ("telegram:42"), as `agent.owners` takes it.
    fn canonical(&self, user: u64) -> String;

    /// Wait until the adapter is connected and listening (logged in, socket open).
    async fn connected(&self, timeout: Duration) -> bool;

    /// `user` writes to the bot in a direct message; returns the DM's chat id.
    async fn dm(&self, user: u64, text: &str) -> String;

    /// `user` writes in group channel `group`, mentioning the bot or not; returns the
    /// group's chat id.
    async fn group(&self, group: u64, user: u64, text: &str, mention: bool) -> String;

    /// `user` writes in a thread under a message in `group`; returns (chat id, thread id).
    /// `None` where the platform has no threads.
    async fn thread(&self, group: u64, user: u64, text: &str) -> Option<(String, String)>;

    /// What the bot shows now, in the order it was sent.
    fn shown(&self) -> Vec<Shown>;

    /// How many typing indications were sent to `chat`; `None` where bots cannot show
    /// one (Slack).
    fn typing(&self, chat: &str) -> Option<usize>;

    /// Cut the bot's connection for `outage`; events that happen meanwhile reach the
    /// bot when it reconnects (as the real platform replays or redelivers them).
    async fn disconnect(&self, outage: Duration);

    /// The bot's connection goes silent — accepted, answering nothing (Telegram: the
    /// getUpdates held now never returns; Discord and Slack: the socket stays open with
    /// no event, heartbeat ACK or pong) — until the bot gives up on it; the next one is
    /// served as usual. What happens meanwhile reaches the bot on that next connection.
    fn stall(&self);

    /// How many connections went silent so far (`stall`).
    fn stalled(&self) -> usize;

    /// `user` presses the approval button `choice` ("once" | "always" | "deny") on the
    /// newest message with buttons in `chat`; false if there is none.
    async fn press(&self, chat: &str, user: u64, choice: &str) -> bool;
}
