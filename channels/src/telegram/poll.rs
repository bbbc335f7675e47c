//! The long-poll loop. It survives network errors, server errors, 409 conflicts and a
//! revoked token with backoff, reporting each as the channel's health. An update is
//! confirmed to Telegram (by asking for the next offset) only after the core has
//! stored its message, so an outage or crash never loses a message; the store's
//! dedupe on message ids means a re-delivered one is never answered twice. A poll (or
//! the start-up calls) unanswered within the silence limit is abandoned and asked again:
//! a stalled connection is noticed, and the update it held is fetched by the next poll.

use std::sync::Arc;

use async_trait::async_trait;
use teloxide::prelude::*;
use teloxide::types::{AllowedUpdate, BotCommand, CallbackQuery, UpdateKind};
use tokio_util::sync::CancellationToken;

use super::Telegram;
use super::convert::{self, CHANNEL, Me};
use super::errors::channel_error;
use crate::approval::parse_button;
use crate::backoff;
use crate::channel::{Channel, ChannelError, Health, InboundSender};
use crate::inbox::MediaFetcher;
use crate::message::Target;

#[async_trait]
impl Channel for Telegram {
    fn name(&self) -> &str {
        CHANNEL
    }

    async fn listen(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let mut backoff = backoff::reconnect();
        let mut offset: i32 = 0;
        let fetcher = self.fetcher();
        let pulse = self.health.pulse();
        loop {
            if shutdown.is_cancelled() {
                return Ok(());
            }
            pulse.attempt();
            let step = match self.me.get() {
                None => self.setup().await.map(|_| true),
                Some(_) => self.poll_once(&bus, &mut offset, &fetcher, &shutdown).await,
            };
            let wait = match step {
                Ok(true) => {
                    backoff.reset();
                    continue;
                }
                Ok(false) => return Ok(()), // the core is gone
                Err(err) => {
                    let (health, wait) = backoff::after(&mut backoff, &err);
                    self.set_health(health);
                    pulse.waiting(wait);
                    wait
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn send(&self, target: &Target, text: &str) -> Result<String, ChannelError> {
        self.send_text(target, text).await
    }
}

impl Telegram {
    /// Delete any webhook (it would block polling) and learn who we are, side by side;
    /// publish the command list in the background (polling need not wait for it).
    async fn setup(&self) -> Result<(), ChannelError> {
        let asked =
            async { tokio::join!(self.bot.delete_webhook().send(), self.bot.get_me().send()) };
        let (webhook, me) = tokio::time::timeout(self.settings.silence_limit(), asked)
            .await
            .map_err(|_| self.silent())?;
        self.health.pulse().heard();
        webhook.map_err(|e| channel_error(&e))?;
        let me = me.map_err(|e| channel_error(&e))?;
        let commands = [
            ("new", "Start a new conversation"),
            ("stop", "Stop the reply in progress"),
            ("status", "Session, model and today's usage"),
            ("model", "Show or pin the model"),
            ("usage", "Tokens and cost"),
            ("compact", "Summarise the older conversation"),
            ("tasks", "Tasks running for this conversation"),
            ("memory", "What I remember (the index)"),
            ("dream", "Tidy my memory now"),
            ("trust", "Vouch for what this conversation took in"),
            ("help", "What I can do"),
        ]
        .map(|(name, about)| BotCommand::new(name, about));
        let bot = self.bot.clone();
        tokio::spawn(async move {
            if let Err(err) = bot.set_my_commands(commands).await {
                tracing::warn!(
                    channel = CHANNEL,
                    "could not publish bot commands: {}",
                    channel_error(&err)
                );
            }
        });
        let username = me.username.clone().unwrap_or_default();
        tracing::info!(channel = CHANNEL, bot = %username, "logged in");
        // Losing a race to set it is harmless: both values come from the same getMe.
        let _ = self.me.set(Me {
            id: me.id,
            username,
        });
        Ok(())
    }

    /// One getUpdates round. Ok(false) when the core has stopped listening. Attachments
    /// go on the bus pending (see `files`): nothing is downloaded here.
    async fn poll_once(
        &self,
        bus: &InboundSender,
        offset: &mut i32,
        fetcher: &Arc<dyn MediaFetcher>,
        shutdown: &CancellationToken,
    ) -> Result<bool, ChannelError> {
        let request = self
            .bot
            .get_updates()
            .offset(*offset)
            .timeout(self.settings.poll_secs())
            .allowed_updates([AllowedUpdate::Message, AllowedUpdate::CallbackQuery]);
        // A poll unanswered past the silence limit (a stalled connection, a proxy that
        // holds it) is abandoned; the next one opens a new connection.
        let answered = tokio::time::timeout(self.settings.silence_limit(), request.send());
        let updates = tokio::select! {
            _ = shutdown.cancelled() => return Ok(false),
            updates = answered => updates.map_err(|_| self.silent())?.map_err(|e| channel_error(&e))?,
        };
        self.health.pulse().heard();
        self.set_health(Health::Up);
        let Some(me) = self.me.get() else {
            return Ok(true);
        };
        for update in updates {
            let next = i32::try_from(update.id.0)
                .unwrap_or(i32::MAX)
                .saturating_add(1);
            if let UpdateKind::CallbackQuery(query) = &update.kind {
                self.button_pressed(query).await;
            } else if let UpdateKind::Message(message) = &update.kind
                && let Some((mut inbound, attachments)) = convert::inbound(message, me)
            {
                let prefix = inbound.chat_id.clone();
                crate::inbox::attach(&mut inbound, attachments, fetcher, &prefix);
                // Not stored: the offset stays, and Telegram sends it again.
                if !crate::channel::store(bus, inbound).await? {
                    return Ok(false);
                }
            }
            *offset = next;
        }
        Ok(true)
    }

    /// Telegram said nothing within the silence limit.
    fn silent(&self) -> ChannelError {
        ChannelError::transient(format!(
            "reconnecting: no word from Telegram for {} s",
            self.settings.silence_limit().as_secs()
        ))
    }

    /// An approval button: hand the answer to whoever waits for it and tell the presser
    /// what became of it (Telegram shows a spinner until the query is answered).
    async fn button_pressed(&self, query: &CallbackQuery) {
        let Some((request_id, choice)) = query.data.as_deref().and_then(parse_button) else {
            return;
        };
        let sender = format!("{CHANNEL}:{}", query.from.id.0);
        let answered = self.approvals.answer(request_id, &sender, choice);
        tracing::info!(channel = CHANNEL, %sender, ?answered, "approval button pressed");
        if let Err(err) = self
            .bot
            .answer_callback_query(query.id.clone())
            .text(answered.toast())
            .await
        {
            tracing::warn!(
                channel = CHANNEL,
                "could not answer a button press: {}",
                channel_error(&err)
            );
        }
    }
}
