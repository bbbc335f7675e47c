//! `FakePlatform` for the fake Telegram, for the channel conformance suite. Users are
//! Telegram user ids as they are; group `g` is the supergroup `-(1000 + g)`, and its
//! forum topic for threads is topic 77.

use std::time::Duration;

use async_trait::async_trait;

use super::{FakeTelegram, Incoming};
use crate::PATIENCE;
use crate::platform::{FakePlatform, Shown};

/// The forum topic `thread` writes in.
const TOPIC: i64 = 77;

fn group_id(group: u64) -> i64 {
    -(1000 + i64::try_from(group).unwrap_or(0))
}

fn user_id(user: u64) -> i64 {
    i64::try_from(user).unwrap_or(i64::MAX)
}

#[async_trait]
impl FakePlatform for FakeTelegram {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn config(&self) -> String {
        format!("api_url = \"{}\"\n", self.api_url())
    }

    fn secrets(&self) -> String {
        format!("  telegram:\n    bot_token: \"{}\"\n", self.token())
    }

    fn limit(&self) -> usize {
        4096
    }

    fn canonical(&self, user: u64) -> String {
        format!("telegram:{user}")
    }

    async fn connected(&self, timeout: Duration) -> bool {
        self.wait_for_call("getUpdates", timeout).await.is_some()
    }

    async fn dm(&self, user: u64, text: &str) -> String {
        self.inject(Incoming::dm(user_id(user), text));
        user.to_string()
    }

    async fn group(&self, group: u64, user: u64, text: &str, mention: bool) -> String {
        let mut message = Incoming::group(group_id(group), user_id(user), text);
        if mention {
            message = message.mentioning_bot();
        }
        self.inject(message);
        group_id(group).to_string()
    }

    async fn thread(&self, group: u64, user: u64, text: &str) -> Option<(String, String)> {
        let message = Incoming::group(group_id(group), user_id(user), text)
            .mentioning_bot()
            .in_topic(TOPIC);
        self.inject(message);
        Some((group_id(group).to_string(), TOPIC.to_string()))
    }

    fn shown(&self) -> Vec<Shown> {
        let sent = self.sent();
        self.shared.read(|inner| {
            sent.iter()
                .filter(|s| s.method != "editMessageText")
                .map(|s| {
                    let edits = || {
                        sent.iter().filter(|e| {
                            e.method == "editMessageText"
                                && e.chat_id == s.chat_id
                                && e.message_id == s.message_id
                        })
                    };
                    let stored = inner.store.message(s.chat_id, s.message_id);
                    let json = stored.map(|m| m.json.clone()).unwrap_or_default();
                    let text = json["text"]
                        .as_str()
                        .or(json["caption"].as_str())
                        .unwrap_or_default()
                        .to_string();
                    Shown {
                        chat: s.chat_id.to_string(),
                        id: s.message_id.to_string(),
                        text,
                        thread: s.message_thread_id.map(|t| t.to_string()),
                        edits: edits().count(),
                        buttons: json["reply_markup"].is_object(),
                        at: edits().map(|e| e.at).max().unwrap_or(s.at).max(s.at),
                    }
                })
                .collect()
        })
    }

    fn typing(&self, chat: &str) -> Option<usize> {
        let calls = self.calls_of("sendChatAction");
        let to_chat = |c: &&crate::telegram::Call| {
            c.param_i64("chat_id").map(|id| id.to_string()).as_deref() == Some(chat)
        };
        Some(calls.iter().filter(to_chat).count())
    }

    async fn disconnect(&self, outage: Duration) {
        self.outage(outage).await;
    }

    fn stall(&self) {
        FakeTelegram::stall(self);
    }

    fn stalled(&self) -> usize {
        FakeTelegram::stalled(self)
    }

    async fn press(&self, chat: &str, user: u64, choice: &str) -> bool {
        let Ok(chat) = chat.parse::<i64>() else {
            return false;
        };
        let Some(query) = FakeTelegram::press(self, chat, user_id(user), &format!(":{choice}"))
        else {
            return false;
        };
        // Like a person's client: wait (up to `PATIENCE`) until the bot answers the press.
        self.shared
            .wait_until(PATIENCE, |inner| {
                inner.calls.iter().any(|c| {
                    c.method.eq_ignore_ascii_case("answerCallbackQuery")
                        && c.param("callback_query_id").as_str() == Some(query.as_str())
                })
            })
            .await;
        true
    }
}
