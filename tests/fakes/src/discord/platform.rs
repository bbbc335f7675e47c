//! `FakePlatform` for the fake Discord, for the channel conformance suite. User `n` is
//! the snowflake `objects::user_id(n)`, their DM the channel `objects::dm_channel(n)`;
//! group `g` is guild text channel `objects::text_channel(g)` and its one thread
//! `objects::thread_channel(g)`. Messages in threads mention the bot (as the suite's
//! threads are answered under `group_policy = "mention"`).

use std::time::Duration;

use async_trait::async_trait;

use super::objects::{self, channel_json};
use super::{FakeDiscord, Incoming};
use crate::platform::{FakePlatform, Shown};

/// A thread's parent channel; other channels are their own chat.
fn chat_of(channel: u64) -> (u64, Option<u64>) {
    let parent =
        channel_json(channel).and_then(|c| c["parent_id"].as_str().and_then(|p| p.parse().ok()));
    match parent {
        Some(parent) => (parent, Some(channel)),
        None => (channel, None),
    }
}

#[async_trait]
impl FakePlatform for FakeDiscord {
    fn name(&self) -> &'static str {
        "discord"
    }

    fn config(&self) -> String {
        format!("api_url = \"{}\"\n", self.api_url())
    }

    fn secrets(&self) -> String {
        format!("  discord:\n    bot_token: \"{}\"\n", self.token())
    }

    fn limit(&self) -> usize {
        2000
    }

    fn canonical(&self, user: u64) -> String {
        format!("discord:{}", objects::user_id(user))
    }

    async fn connected(&self, timeout: Duration) -> bool {
        self.wait_connected(timeout).await
    }

    async fn dm(&self, user: u64, text: &str) -> String {
        let msg = Incoming::dm(user, text);
        let chat = msg.channel_id();
        self.inject(msg);
        chat.to_string()
    }

    async fn group(&self, group: u64, user: u64, text: &str, mention: bool) -> String {
        let mut msg = Incoming::channel(group, user, text);
        if mention {
            msg = msg.mentioning_bot();
        }
        let chat = msg.channel_id();
        self.inject(msg);
        chat.to_string()
    }

    async fn thread(&self, group: u64, user: u64, text: &str) -> Option<(String, String)> {
        self.inject(Incoming::thread(group, user, text).mentioning_bot());
        Some((
            objects::text_channel(group).to_string(),
            objects::thread_channel(group).to_string(),
        ))
    }

    fn shown(&self) -> Vec<Shown> {
        // Under the lock, and only the bot's: a bench polls this while replies arrive.
        self.shared.read(|inner| {
            inner
                .messages
                .iter()
                .filter(|m| m.from_bot)
                .map(|m| {
                    let (chat, thread) = chat_of(m.channel);
                    Shown {
                        chat: chat.to_string(),
                        id: m.id.to_string(),
                        text: m.content().to_string(),
                        thread: thread.map(|t| t.to_string()),
                        edits: m.edits,
                        buttons: m.has_buttons(),
                        at: m.at,
                    }
                })
                .collect()
        })
    }

    fn typing(&self, chat: &str) -> Option<usize> {
        let Ok(chat) = chat.parse::<u64>() else {
            return Some(0);
        };
        self.calls_of("typing")
            .iter()
            .filter_map(|c| {
                c.path
                    .trim_start_matches("/api/v10/channels/")
                    .split('/')
                    .next()
                    .and_then(|id| id.parse::<u64>().ok())
            })
            .filter(|channel| chat_of(*channel).0 == chat)
            .count()
            .into()
    }

    async fn disconnect(&self, outage: Duration) {
        self.outage(outage);
    }

    fn stall(&self) {
        FakeDiscord::stall(self);
    }

    fn stalled(&self) -> usize {
        FakeDiscord::stalled(self)
    }

    async fn press(&self, chat: &str, user: u64, choice: &str) -> bool {
        let Ok(chat) = chat.parse::<u64>() else {
            return false;
        };
        let newest = self
            .bot_messages()
            .into_iter()
            .rev()
            .find(|m| m.has_buttons() && chat_of(m.channel).0 == chat);
        let Some(message) = newest else {
            return false;
        };
        let suffix = format!(":{choice}");
        let custom_id = message.json["components"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
            .filter_map(|button| button["custom_id"].as_str().map(str::to_string))
            .find(|id| id.ends_with(&suffix));
        let Some(custom_id) = custom_id else {
            return false;
        };
        let Some(interaction) = self.press(message.channel, message.id, user, &custom_id) else {
            return false;
        };
        // Like a person's client: wait (briefly) until the bot answers the press.
        self.shared
            .wait_until(Duration::from_secs(3), |inner| {
                inner
                    .answers
                    .iter()
                    .any(|a| a.interaction_id == interaction)
            })
            .await;
        true
    }
}
