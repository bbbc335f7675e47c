//! The real adapters, built in this process against their fakes, for conformance cases
//! that drive the channel manager directly instead of `pincer run` (deliveries the core
//! starts by itself, which no chat message can trigger on cue). One `InProcess` per
//! fake: how to build its adapter, and where the fake holds a person's direct chat.
//! The settings that point each adapter at its fake serve the adapter tests too
//! (tests/{telegram,discord,slack}_adapter.rs use this module).
#![allow(dead_code)] // each adapter test uses one platform's settings

use std::path::Path;

use pincer_channels::ChannelHandle;
use pincer_channels::discord::{Discord, DiscordSettings};
use pincer_channels::matrix::{Joins, Login, Matrix, MatrixSettings};
use pincer_channels::slack::{Slack, SlackMode, SlackSettings};
use pincer_channels::telegram::{Telegram, TelegramSettings};
use pincer_fakes::discord::FakeDiscord;
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::slack::FakeSlack;
use pincer_fakes::synapse::MatrixPlatform;
use pincer_fakes::telegram::FakeTelegram;

const MEDIA_MAX_BYTES: u64 = 1024 * 1024;

/// The Telegram adapter's settings for `fake`, files saved under `inbox`.
pub(crate) fn telegram_settings(fake: &FakeTelegram, inbox: &Path) -> TelegramSettings {
    TelegramSettings {
        token: fake.token().to_string(),
        api_url: fake.api_url(),
        inbox: inbox.to_path_buf(),
        media_max_bytes: MEDIA_MAX_BYTES,
        poll_timeout_secs: 1,
        silence: None,
    }
}

/// The Discord adapter's settings for `fake`, files saved under `inbox`.
pub(crate) fn discord_settings(fake: &FakeDiscord, inbox: &Path) -> DiscordSettings {
    DiscordSettings {
        token: fake.token().to_string(),
        api_url: fake.api_url(),
        inbox: inbox.to_path_buf(),
        media_max_bytes: MEDIA_MAX_BYTES,
        silence: None,
    }
}

/// The Slack adapter's settings for `fake` in Socket Mode, files saved under `inbox`.
pub(crate) fn slack_settings(fake: &FakeSlack, inbox: &Path) -> SlackSettings {
    SlackSettings {
        bot_token: fake.bot_token().into(),
        app_token: Some(fake.app_token().into()),
        signing_secret: None,
        api_url: fake.api_url(),
        mode: SlackMode::Socket,
        listen: None,
        inbox: inbox.to_path_buf(),
        media_max_bytes: MEDIA_MAX_BYTES,
        silence: None,
    }
}

pub(crate) trait InProcess: FakePlatform {
    /// The real adapter pointed at this fake, with every capability it has.
    fn handle(&self, inbox: &Path) -> ChannelHandle;

    /// The chat the fake holds `user`'s direct messages with the bot in, as the bot
    /// opened it; `None` if the bot never did.
    fn direct_chat(&self, user: u64) -> Option<String>;
}

/// The platform's own id of `user` (what follows `channel:` in the canonical id).
fn raw_id<P: FakePlatform + ?Sized>(platform: &P, user: u64) -> String {
    let canonical = platform.canonical(user);
    match canonical.split_once(':') {
        Some((_, id)) => id.to_string(),
        None => canonical,
    }
}

impl InProcess for FakeTelegram {
    fn handle(&self, inbox: &Path) -> ChannelHandle {
        Telegram::new(telegram_settings(self, inbox), Default::default())
            .expect("the Telegram adapter for the fake")
            .handle()
    }

    /// Nothing is opened on Telegram: a user's id is their private chat's id.
    fn direct_chat(&self, user: u64) -> Option<String> {
        Some(raw_id(self, user))
    }
}

impl InProcess for FakeDiscord {
    fn handle(&self, inbox: &Path) -> ChannelHandle {
        Discord::new(discord_settings(self, inbox), Default::default())
            .expect("the Discord adapter for the fake")
            .handle()
    }

    /// The DM channel `POST /users/@me/channels` answered for the user.
    fn direct_chat(&self, user: u64) -> Option<String> {
        let user: u64 = raw_id(self, user).parse().ok()?;
        self.opened_dm(user).map(|channel| channel.to_string())
    }
}

impl InProcess for FakeSlack {
    fn handle(&self, inbox: &Path) -> ChannelHandle {
        Slack::new(slack_settings(self, inbox), Default::default())
            .expect("the Slack adapter for the fake")
            .handle()
    }

    /// The IM `conversations.open` answered for the user.
    fn direct_chat(&self, user: u64) -> Option<String> {
        self.opened_im(&raw_id(self, user))
    }
}

/// The Matrix adapter's settings for `platform`: a password login, its stores under
/// `state`, files saved under `inbox`. Encryption is off so the DM it opens is readable
/// by the test's plain HTTP person (the encrypted case is tests/matrix.rs's).
pub(crate) fn matrix_settings(
    platform: &MatrixPlatform,
    inbox: &Path,
    state: &Path,
) -> MatrixSettings {
    MatrixSettings {
        homeserver: platform.homeserver_url(),
        user_id: Some(platform.bot().to_string()),
        login: Login::Password(platform.bot_password().to_string()),
        state_dir: state.to_path_buf(),
        store_passphrase: None,
        recovery_key: None,
        encryption: false,
        joins: Joins {
            direct: true,
            groups: vec!["*".into()],
            per_hour: 0,
            trusted: Vec::new(),
        },
        inbox: inbox.to_path_buf(),
        media_max_bytes: MEDIA_MAX_BYTES,
        silence: None,
    }
}

impl InProcess for MatrixPlatform {
    fn handle(&self, inbox: &Path) -> ChannelHandle {
        Matrix::new(
            matrix_settings(self, inbox, &inbox.join("matrix-state")),
            Default::default(),
        )
        .expect("the Matrix adapter for Synapse")
        .handle()
    }

    /// The direct room the bot opened with the person, once the person's sync has seen
    /// every message the homeserver holds in it (a sync lags the send that made it).
    fn direct_chat(&self, user: u64) -> Option<String> {
        let room = MatrixPlatform::direct_chat(self, user)?;
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async {
                let person = self.person(user).await;
                let held: Vec<String> = person
                    .messages(&room)
                    .await
                    .iter()
                    .filter_map(|e| e["event_id"].as_str().map(str::to_string))
                    .collect();
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
                loop {
                    let seen = person.events(&room);
                    let all = held
                        .iter()
                        .all(|id| seen.iter().any(|e| e["event_id"] == id.as_str()));
                    if all || tokio::time::Instant::now() > deadline {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            })
        });
        Some(room)
    }
}
