//! The sync loop. Each `/sync` long-polls for `poll` (two thirds of the silence limit,
//! at most 30 s); one unanswered past the silence limit is abandoned and the next opens
//! a new connection. Its batch is handled in order — invites accepted or declined, each
//! message handed to the core and its storing awaited, reactions and replies matched to
//! open questions — and only then is the batch's `next_batch` written to `sync-token`.
//! A batch interrupted by a crash, a cut connection or a failed store is fetched again
//! from the last written token, so nothing is lost; the core drops what it already
//! stored. A room whose timeline comes limited (more events than a sync holds: a busy
//! room, or a long time away) has its gap fetched back first, up to the token the sync
//! was asked from. On the very first start there is no token: that sync's messages are
//! history and are not answered.

use std::path::PathBuf;
use std::sync::Arc;

use matrix_sdk::config::SyncSettings;
use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::room::MessagesOptions;
use matrix_sdk::ruma::api::client::filter::{
    Filter as EventFilter, FilterDefinition, RoomEventFilter, RoomFilter,
};
use matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter;
use matrix_sdk::ruma::{OwnedRoomId, UInt};
use matrix_sdk::sync::SyncResponse;
use matrix_sdk::{Client, Room};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::convert::{self, Event, RoomFacts};
use super::errors::channel_error;
use super::login::write_private;
use super::{CHANNEL, Matrix, Me};
use crate::backoff;
use crate::channel::{ChannelError, Health, InboundSender};
use crate::inbox::MediaFetcher;
use crate::message::Target;

/// The file that holds the token of the last batch handled whole.
const TOKEN_FILE: &str = "sync-token";
/// Events per room one sync returns at most; more makes a gap, fetched back before the
/// batch is handled.
const TIMELINE_LIMIT: u32 = 100;
/// Events of one room's gap fetched back at most; older ones are left, and logged.
const GAP_LIMIT: usize = 1000;

impl Matrix {
    /// Sync until shut down, reconnecting with backoff.
    pub(super) async fn run(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let mut backoff = backoff::reconnect();
        let pulse = self.health.pulse();
        let mut token = self.saved_token();
        loop {
            if shutdown.is_cancelled() {
                return Ok(());
            }
            pulse.attempt();
            let wait = match self.sync_once(&bus, &shutdown, &mut token).await {
                Ok(true) => {
                    backoff.reset();
                    continue;
                }
                Ok(false) => return Ok(()), // shut down, or the core is gone
                Err(err) => {
                    let (health, wait) = backoff::after(&mut backoff, &err);
                    self.health.set(health);
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

    fn token_file(&self) -> PathBuf {
        self.settings.state_dir.join(TOKEN_FILE)
    }

    fn saved_token(&self) -> Option<String> {
        std::fs::read_to_string(self.token_file())
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    }

    /// One sync and its batch; `false` when it is time to stop.
    async fn sync_once(
        &self,
        bus: &InboundSender,
        shutdown: &CancellationToken,
        token: &mut Option<String>,
    ) -> Result<bool, ChannelError> {
        let (client, me) = self.client().await?;
        let mut settings = SyncSettings::default()
            .timeout(self.settings.poll())
            .filter(filter());
        if let Some(since) = token.as_deref() {
            settings = settings.token(since);
        }
        let limit = self.settings.silence_limit();
        let response = tokio::select! {
            _ = shutdown.cancelled() => return Ok(false),
            answered = tokio::time::timeout(limit, client.sync_once(settings)) => match answered {
                Err(_) => return Err(ChannelError::transient(format!(
                    "reconnecting: no word from the Matrix homeserver for {} s",
                    limit.as_secs()
                ))),
                Ok(response) => response.map_err(|e| channel_error(&e))?,
            },
        };
        self.health.pulse().heard();
        self.health.set(Health::Up);
        self.accept_invites(client, &response).await;
        if !self
            .handle_batch(client, me, &response, token.as_deref(), bus)
            .await?
        {
            return Ok(false);
        }
        write_private(&self.token_file(), &response.next_batch)?;
        *token = Some(response.next_batch);
        Ok(true)
    }

    /// Join the invites `joins` allows (a direct chat, a listed group room), strangers'
    /// at its pace; decline the rest so they do not linger.
    async fn accept_invites(&self, client: &Client, response: &SyncResponse) {
        let me = client.user_id().map(|u| u.as_str()).unwrap_or("");
        for (room_id, invite) in &response.rooms.invited {
            // The bot's own membership event: who invited it, and whether as a DM.
            let invited = invite.invite_state.events.iter().find_map(|raw| {
                let e = serde_json::from_str::<Value>(raw.json().get()).ok()?;
                (e["type"] == "m.room.member" && e["state_key"] == me).then_some(e)
            });
            let direct = invited
                .as_ref()
                .is_some_and(|e| e["content"]["is_direct"] == true);
            let inviter = invited
                .as_ref()
                .and_then(|e| e["sender"].as_str())
                .unwrap_or("");
            let joins = &self.settings.joins;
            let wanted = match direct {
                true => joins.direct,
                false => joins.group(room_id.as_str()),
            };
            let Some(room) = client.get_room(room_id) else {
                continue;
            };
            let pace = match wanted && !joins.exempt(inviter, room_id.as_str()) {
                true => self.join_pace.as_ref(),
                false => None,
            };
            let paced = pace.is_some_and(|b| !b.try_take(0));
            if paced {
                tracing::warn!(
                    channel = CHANNEL,
                    room = %room_id,
                    direct,
                    %inviter,
                    "declining an invite: strangers' invites are past channels.matrix.invites_per_hour = {} (a flood of invites?); it can be sent again later",
                    joins.per_hour
                );
            }
            let join = wanted && !paced;
            let outcome = match join {
                true => room.join().await,
                false => room.leave().await,
            };
            if let (Some(pace), true, Err(_)) = (pace, join, &outcome) {
                // Not joined after all: the token is not spent.
                pace.give_back();
            }
            match outcome {
                Ok(()) => tracing::info!(
                    channel = CHANNEL,
                    room = %room_id,
                    direct,
                    "{} an invite",
                    if join { "accepted" } else { "declined" }
                ),
                Err(e) => tracing::warn!(
                    channel = CHANNEL,
                    room = %room_id,
                    "could not answer an invite: {}",
                    channel_error(&e)
                ),
            }
        }
    }

    /// Handle every room's new events in order, those of a gap first; `false` when the
    /// core is gone. `since` is the token this sync was asked from (none: history).
    async fn handle_batch(
        &self,
        client: &Client,
        me: &Me,
        response: &SyncResponse,
        since: Option<&str>,
        bus: &InboundSender,
    ) -> Result<bool, ChannelError> {
        let Some(since) = since else {
            return Ok(true);
        };
        let fetcher = self.fetcher(client);
        for (room_id, update) in &response.rooms.joined {
            let Some(room) = client.get_room(room_id) else {
                continue;
            };
            let gap = match (update.timeline.limited, &update.timeline.prev_batch) {
                (true, Some(from)) => missed(&room, from, since).await?,
                _ => Vec::new(),
            };
            let facts = RoomFacts {
                id: room_id.as_str(),
                direct: is_direct(&room).await,
            };
            for item in gap.iter().chain(&update.timeline.events) {
                let Ok(event) = serde_json::from_str::<Value>(item.raw().json().get()) else {
                    continue;
                };
                let ours = |id: &str| self.is_ours(id);
                match convert::classify(&event, &facts, me, &ours) {
                    Some(Event::Message(incoming)) => {
                        let going = self.hand_off(&room, *incoming, &fetcher, bus).await?;
                        if !going {
                            return Ok(false);
                        }
                    }
                    Some(Event::Reaction { on, key, sender }) => {
                        self.reaction(room_id, &on, &key, &sender).await;
                    }
                    Some(Event::Unreadable { sender }) => {
                        self.unreadable(room_id, facts.direct, &sender).await;
                    }
                    None => {}
                }
            }
        }
        Ok(true)
    }

    /// Put one message on the bus and wait until the core stored it; `false` when the
    /// core is gone. A reply that answers an open question goes no further.
    async fn hand_off(
        &self,
        room: &Room,
        incoming: convert::Incoming,
        fetcher: &Arc<dyn MediaFetcher>,
        bus: &InboundSender,
    ) -> Result<bool, ChannelError> {
        let convert::Incoming {
            mut inbound,
            attachments,
        } = incoming;
        if let Some(question) = inbound.reply_to.as_deref()
            && self
                .replied(
                    &inbound.chat_id,
                    question,
                    &inbound.sender.canonical,
                    &inbound.text,
                )
                .await
        {
            return Ok(true);
        }
        if let Ok(user) = matrix_sdk::ruma::UserId::parse(inbound.sender.raw_id.as_str())
            && let Ok(Some(member)) = room.get_member_no_sync(&user).await
            && let Some(name) = member.display_name()
        {
            inbound.sender.display_name = name.to_string();
        }
        let prefix = safe_prefix(&inbound.chat_id);
        crate::inbox::attach(&mut inbound, attachments, fetcher, &prefix);
        // Not stored: the token stays where it was, and the batch comes again.
        crate::channel::store(bus, inbound).await
    }

    /// An encrypted message the bot cannot read: said so in a direct chat (in a group
    /// it would be noise), and logged.
    async fn unreadable(&self, room_id: &OwnedRoomId, direct: bool, sender: &str) {
        tracing::warn!(channel = CHANNEL, room = %room_id, %sender, "an encrypted message could not be decrypted");
        if !direct || !self.first_unreadable_in(room_id.as_str()) {
            return;
        }
        let text = match self.settings.encryption {
            true => {
                "🔒 I could not decrypt that message: my device has no key for it yet. Please send it again."
            }
            false => {
                "🔒 I do not read encrypted messages here (channels.matrix.encryption = false)."
            }
        };
        let target = Target::chat(CHANNEL, room_id.as_str(), None);
        if let Err(e) = self.send_notice(&target, text, None).await {
            tracing::warn!(channel = CHANNEL, "could not say so: {}", e.message);
        }
    }
}

/// How often a room is told a message could not be decrypted: anyone can send garbage
/// ciphertext, and each notice spends the bot's sending pace.
const UNREADABLE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);
/// Rooms remembered for it before the oldest are forgotten.
const UNREADABLE_ROOMS: usize = 1024;

impl Matrix {
    /// Whether `room` may be told now (and note that it was).
    fn first_unreadable_in(&self, room: &str) -> bool {
        let Ok(mut told) = self.unreadable_told.lock() else {
            return false;
        };
        let now = std::time::Instant::now();
        if told
            .get(room)
            .is_some_and(|at| now.duration_since(*at) < UNREADABLE_EVERY)
        {
            return false;
        }
        if told.len() >= UNREADABLE_ROOMS {
            told.retain(|_, at| now.duration_since(*at) < UNREADABLE_EVERY);
            if told.len() >= UNREADABLE_ROOMS {
                return false;
            }
        }
        told.insert(room.to_string(), now);
        true
    }
}

/// The events of a room's gap, oldest first: those between the token the sync was asked
/// from and the first its limited timeline holds (a busy room, or a long time away),
/// fetched back page by page, at most `GAP_LIMIT`. A failure that may pass fails the
/// batch, which comes again from the same token; a refusal leaves the gap, logged.
async fn missed(room: &Room, from: &str, since: &str) -> Result<Vec<TimelineEvent>, ChannelError> {
    let mut events = Vec::new();
    let mut from = from.to_string();
    loop {
        let mut page = MessagesOptions::backward().from(Some(from.as_str()));
        page.to = Some(since.to_string());
        page.limit = UInt::from(TIMELINE_LIMIT);
        let page = match room.messages(page).await {
            Ok(page) => page,
            Err(e) => {
                let err = channel_error(&e);
                if err.retryable {
                    return Err(err);
                }
                // Refused for good (a token the homeserver no longer knows, a room it
                // will not page): failing the batch would wedge the sync on it.
                tracing::warn!(
                    channel = CHANNEL,
                    room = %room.room_id(),
                    "could not fetch back a gap in the timeline, so its older events are not answered: {}",
                    err.message
                );
                break;
            }
        };
        let done = page.chunk.is_empty() || page.end.is_none();
        events.extend(page.chunk);
        if done {
            break;
        }
        if events.len() >= GAP_LIMIT {
            tracing::warn!(
                channel = CHANNEL,
                room = %room.room_id(),
                "more than {GAP_LIMIT} events came while the bot was away; only the newest {GAP_LIMIT} and those after them are answered"
            );
            break;
        }
        from = page.end.unwrap_or_default();
    }
    if !events.is_empty() {
        tracing::info!(
            channel = CHANNEL,
            room = %room.room_id(),
            "fetched back {} events a sync left out (a gap in the timeline)",
            events.len()
        );
    }
    events.reverse();
    Ok(events)
}

/// A direct chat: marked direct (`m.direct`: the invite said so, or the bot opened it)
/// and still of at most two members, the bot and one person. A room someone else joins
/// becomes a group, so nobody reads a direct chat's answers over the person's shoulder.
async fn is_direct(room: &Room) -> bool {
    if !room.is_direct().await.unwrap_or(false) {
        return false;
    }
    let counted = room.joined_members_count() + room.invited_members_count();
    if counted > 0 {
        return counted <= 2;
    }
    room.members_no_sync(matrix_sdk::RoomMemberships::ACTIVE)
        .await
        .map(|members| members.len() <= 2)
        .unwrap_or(false)
}

/// A room id as part of a file name: `!abc:example.org` → `abc_example.org`.
fn safe_prefix(room_id: &str) -> String {
    room_id
        .trim_start_matches('!')
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '_',
        })
        .collect()
}

/// Room timelines of up to `TIMELINE_LIMIT` events, and no presence, typing or read
/// receipts: the bot uses none of them, and each would wake the sync (its own typing
/// notices too) for the SDK to process and store.
fn filter() -> Filter {
    let mut timeline = RoomEventFilter::default();
    timeline.limit = Some(UInt::from(TIMELINE_LIMIT));
    let mut room = RoomFilter::default();
    room.timeline = timeline;
    room.ephemeral = RoomEventFilter::ignore_all();
    let mut definition = FilterDefinition::default();
    definition.room = room;
    definition.presence = EventFilter::ignore_all();
    Filter::FilterDefinition(definition)
}
