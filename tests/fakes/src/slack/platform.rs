//! `FakePlatform` for the fake Slack: users and groups are small numbers mapped to
//! `U{n}`, `D{n}` (the user's DM) and `C{g}`. Slack bots cannot show "typing…", so
//! `typing` is always 0; a thread message mentions the bot (Slack gates threads like
//! their channel).

use std::time::Duration;

use async_trait::async_trait;

use super::fake::FakeSlack;
use super::incoming::{Incoming, user_id};
use crate::PATIENCE;
use crate::platform::{FakePlatform, Shown};

#[async_trait]
impl FakePlatform for FakeSlack {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn config(&self) -> String {
        format!("api_url = \"{}\"\nmode = \"socket\"\n", self.api_url())
    }

    fn secrets(&self) -> String {
        format!(
            "  slack:\n    bot_token: \"{}\"\n    app_token: \"{}\"\n",
            self.bot_token(),
            self.app_token()
        )
    }

    fn limit(&self) -> usize {
        4000
    }

    fn canonical(&self, user: u64) -> String {
        format!("slack:{}", user_id(user))
    }

    async fn connected(&self, timeout: Duration) -> bool {
        self.wait_for_connection(1, timeout).await
    }

    async fn dm(&self, user: u64, text: &str) -> String {
        let msg = Incoming::dm(user, text);
        let chat = msg.channel.clone();
        self.inject(msg);
        chat
    }

    async fn group(&self, group: u64, user: u64, text: &str, mention: bool) -> String {
        let chat = format!("C{group}");
        let mut msg = Incoming::channel(&chat, user, text);
        if mention {
            msg = msg.mentioning_bot();
        }
        self.inject(msg);
        chat
    }

    async fn thread(&self, group: u64, user: u64, text: &str) -> Option<(String, String)> {
        let chat = format!("C{group}");
        let parent = self.existing_message(&chat, &user_id(user), "a thread starts here");
        self.inject(
            Incoming::channel(&chat, user, text)
                .in_thread(&parent)
                .mentioning_bot(),
        );
        Some((chat, parent))
    }

    fn shown(&self) -> Vec<Shown> {
        self.posted()
            .into_iter()
            .map(|m| Shown {
                buttons: m.has_buttons(),
                chat: m.channel,
                id: m.ts,
                text: m.text,
                thread: m.thread_ts,
                edits: m.edits,
                at: m.at,
            })
            .collect()
    }

    fn typing(&self, _chat: &str) -> Option<usize> {
        None // Slack has no typing indicator for bots
    }

    async fn disconnect(&self, outage: Duration) {
        self.outage(outage);
    }

    fn stall(&self) {
        FakeSlack::stall(self);
    }

    fn stalled(&self) -> usize {
        usize::try_from(FakeSlack::stalled(self)).unwrap_or(usize::MAX)
    }

    async fn press(&self, chat: &str, user: u64, choice: &str) -> bool {
        let answered = |inner: &super::state::Inner| {
            inner
                .messages
                .iter()
                .filter(|m| m.ephemeral && m.channel == chat)
                .count()
        };
        let before = self.shared.read(answered);
        if !FakeSlack::press(self, chat, &user_id(user), choice) {
            return false;
        }
        // Like a person's client: wait (up to `PATIENCE`) until the bot shows the presser what
        // became of it (an ephemeral message).
        self.shared
            .wait_until(PATIENCE, |inner| answered(inner) > before)
            .await;
        true
    }
}
