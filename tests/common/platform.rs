//! A Pincer home wired to one fake chat platform and the fake model, and the real
//! `pincer run` against them: what every end-to-end channel test shares — the
//! conformance suite (tests/conformance), tests/{telegram,discord,slack}.rs, and the
//! tests that reach the gateway through a platform (trust, agent, media). Any fake that
//! implements `pincer_fakes::platform::FakePlatform` fits; what only one platform shows
//! (Telegram's parse mode, a Discord thread's own channel) stays with that platform.
//!
//! Waiting: `wait_shown` polls for a positive outcome; `round_trip` is the barrier for
//! negative ones — the gateway runs one turn at a time per conversation and sends its
//! replies in order, so once a later message's answer is shown, everything said before
//! it in that conversation was handled and its answer (if any) is on screen.

use pincer_fakes::FakeModel;
use pincer_fakes::platform::{FakePlatform, Shown};

use super::{Gateway, PATIENCE, TestHome, wait_for};

/// A home with one channel enabled against its fake, and the fake model (which echoes
/// `echo: <text>` once its scripted steps are used up).
pub(crate) struct Setup<P> {
    pub home: TestHome,
    pub model: FakeModel,
    pub platform: P,
}

/// `owners = [...]`, for `[agent]`: each of `users` on `platform`.
pub(crate) fn owners(platform: &dyn FakePlatform, users: &[u64]) -> String {
    let ids: Vec<String> = users
        .iter()
        .map(|user| format!("\"{}\"", platform.canonical(*user)))
        .collect();
    format!("owners = [{}]", ids.join(", "))
}

/// `[channels.<name>]`, enabled and pointed at `platform`, then `lines`.
pub(crate) fn channel_table(platform: &dyn FakePlatform, lines: &str) -> String {
    format!(
        "[channels.{}]\nenabled = true\n{}{lines}\n",
        platform.name(),
        platform.config()
    )
}

/// A home with `platform`'s channel enabled (`channel` lines in its table) and `agent`
/// lines under `[agent]`; either may open more tables with a line starting with `[`.
pub(crate) async fn setup<P: FakePlatform>(platform: P, channel: &str, agent: &str) -> Setup<P> {
    let model = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&format!(
        "version = 1\n[agent]\n{agent}\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n\n{}",
        model.openai_base(),
        channel_table(&platform, channel)
    ));
    home.write_secrets(&format!("channels:\n{}", platform.secrets()));
    Setup {
        home,
        model,
        platform,
    }
}

/// Wait until `platform` shows a message in `chat` containing `needle`; on failure,
/// say what it shows and what `log` gives (the gateway's log).
pub(crate) async fn wait_shown(
    platform: &dyn FakePlatform,
    chat: &str,
    needle: &str,
    log: impl FnOnce() -> String,
) -> Shown {
    wait_for(
        async || {
            platform
                .shown()
                .into_iter()
                .find(|m| m.chat == chat && m.text.contains(needle))
        },
        || {
            format!(
                "nothing in {} {chat} shows {needle:?}; shown: {:#?}\ngateway log:\n{}",
                platform.name(),
                platform.shown(),
                log()
            )
        },
    )
    .await
}

impl<P: FakePlatform> Setup<P> {
    /// `pincer run` (`TestHome::start_gateway`), without waiting for it to connect.
    pub(crate) fn start(&self) -> Gateway {
        self.home.start_gateway()
    }

    /// `pincer run`, returned once the adapter is connected to the fake.
    pub(crate) async fn start_connected(&self) -> Gateway {
        let gateway = self.start();
        assert!(
            self.platform.connected(PATIENCE).await,
            "{} never connected; gateway log:\n{}",
            self.platform.name(),
            self.log()
        );
        gateway
    }

    /// The gateway's log, every run of it.
    pub(crate) fn log(&self) -> String {
        self.home.gateway_log()
    }

    /// Wait until a message in `chat` shows `needle`.
    pub(crate) async fn wait_shown(&self, chat: &str, needle: &str) -> Shown {
        wait_shown(&self.platform, chat, needle, || self.log()).await
    }

    /// What the bot shows in `chat` now, in the order it was sent.
    pub(crate) fn shown_in(&self, chat: &str) -> Vec<Shown> {
        self.platform
            .shown()
            .into_iter()
            .filter(|m| m.chat == chat)
            .collect()
    }

    /// The texts of `shown_in(chat)`.
    pub(crate) fn texts_in(&self, chat: &str) -> Vec<String> {
        self.shown_in(chat).into_iter().map(|m| m.text).collect()
    }

    /// The barrier: `user` says `text` in their direct chat and waits for the model's
    /// echo of it there. Returns the chat.
    pub(crate) async fn round_trip(&self, user: u64, text: &str) -> String {
        let chat = self.platform.dm(user, text).await;
        self.wait_shown(&chat, &format!("echo: {text}")).await;
        chat
    }

    /// Wait until `pincer status` shows this channel's state starting with `state`;
    /// returns the whole status.
    pub(crate) async fn status_shows(&self, state: &str) -> String {
        let name = format!("{} ", self.platform.name());
        wait_for(
            async || {
                let status = self.home.run(&["status"]).stdout;
                let shows = status.lines().any(|line| {
                    line.trim_start()
                        .strip_prefix(&name)
                        .is_some_and(|rest| rest.trim_start().starts_with(state))
                });
                shows.then_some(status)
            },
            || {
                let status = self.home.run(&["status"]).stdout;
                let log = self.log();
                format!("status never showed {name}{state:?}: {status}\ngateway log:\n{log}")
            },
        )
        .await
    }
}
