//! A Pincer home wired to the fake Telegram Bot API and the fake model, and the real
//! `pincer run` against them: what tests of the Telegram gateway share.

use std::process::Stdio;
use std::time::{Duration, Instant};

use pincer_fakes::FakeModel;
use pincer_fakes::telegram::{FakeTelegram, Sent};

use super::{Gateway, TestHome};

/// How long a test waits for something the gateway should do.
const WAIT: Duration = Duration::from_secs(15);

pub struct Setup {
    pub home: TestHome,
    pub model: FakeModel,
    pub telegram: FakeTelegram,
}

/// A home with Telegram enabled (`extra_channel` goes under `[channels.telegram]`,
/// `extra_agent` under `[agent]`; a line starting with `[` opens more tables).
pub async fn setup(extra_channel: &str, extra_agent: &str) -> Setup {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new();
    home.write_config(&format!(
        "version = 1\n[agent]\n{extra_agent}\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n\n[channels.telegram]\nenabled = true\napi_url = \"{}\"\n{extra_channel}\n",
        model.openai_base(),
        telegram.api_url()
    ));
    home.write_secrets(&format!(
        "channels:\n  telegram:\n    bot_token: \"{}\"\n",
        telegram.token()
    ));
    Setup {
        home,
        model,
        telegram,
    }
}

impl Setup {
    pub fn start(&self) -> Gateway {
        let child = self
            .home
            .command(&["run"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start pincer run");
        Gateway { child }
    }

    /// What each message the bot sent finally says (edits applied), in order sent.
    pub fn shown(&self) -> Vec<Sent> {
        let mut out: Vec<Sent> = Vec::new();
        for sent in self.telegram.sent() {
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
    pub async fn wait_for_text(&self, chat: i64, needle: &str) -> Sent {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(found) = self
                .shown()
                .into_iter()
                .find(|m| m.chat_id == chat && m.text.contains(needle))
            {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no message to {chat} containing {needle:?}; shown: {:#?}",
                self.shown()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn texts_to(&self, chat: i64) -> Vec<String> {
        self.shown()
            .into_iter()
            .filter(|m| m.chat_id == chat)
            .map(|m| m.text)
            .collect()
    }
}
