//! The Telegram side of `common::platform`: a home wired to the fake Bot API, and what
//! only Telegram shows — each message as `Sent` (edits applied, with its parse mode and
//! forum topic) and the update offset, which the gateway confirms only once it has
//! decided about a message.

use pincer_fakes::telegram::{FakeTelegram, Sent};

use super::platform;
use super::wait_for;

/// A home with Telegram enabled, the fake model, and the fake Bot API.
pub(crate) type Setup = platform::Setup<FakeTelegram>;

/// A home with Telegram enabled (`extra_channel` goes under `[channels.telegram]`,
/// `extra_agent` under `[agent]`; a line starting with `[` opens more tables).
pub(crate) async fn setup(extra_channel: &str, extra_agent: &str) -> Setup {
    platform::setup(FakeTelegram::start().await, extra_channel, extra_agent).await
}

impl platform::Setup<FakeTelegram> {
    /// What each message the bot sent finally says (edits applied), in order sent.
    pub(crate) fn shown(&self) -> Vec<Sent> {
        let mut out: Vec<Sent> = Vec::new();
        for sent in self.platform.sent() {
            if sent.method == "editMessageText" {
                if let Some(original) = out
                    .iter_mut()
                    .find(|m| m.message_id == sent.message_id && m.chat_id == sent.chat_id)
                {
                    original.text = sent.text;
                    original.parse_mode = sent.parse_mode;
                }
            } else {
                out.push(sent);
            }
        }
        out
    }

    /// Wait until a message to `chat` finally shows `needle`.
    pub(crate) async fn wait_for_text(&self, chat: i64, needle: &str) -> Sent {
        wait_for(
            async || {
                self.shown()
                    .into_iter()
                    .find(|m| m.chat_id == chat && m.text.contains(needle))
            },
            || {
                format!(
                    "no message to {chat} containing {needle:?}; shown: {:#?}\ngateway log:\n{}",
                    self.shown(),
                    self.log()
                )
            },
        )
        .await
    }

    pub(crate) fn texts_to(&self, chat: i64) -> Vec<String> {
        self.shown()
            .into_iter()
            .filter(|m| m.chat_id == chat)
            .map(|m| m.text)
            .collect()
    }

    /// Wait until the gateway has confirmed every update injected so far. It confirms
    /// one only once the gate has decided about it — refused it, answered it itself (a
    /// pairing code), or let it in, which stores it in its session first — so after
    /// this, a message nobody answered was refused, or is in `pincer sessions`.
    pub(crate) async fn settled(&self) {
        wait_for(
            async || (self.platform.pending_updates() == 0).then_some(()),
            || {
                format!(
                    "{} updates still unconfirmed; gateway log:\n{}",
                    self.platform.pending_updates(),
                    self.log()
                )
            },
        )
        .await
    }
}
