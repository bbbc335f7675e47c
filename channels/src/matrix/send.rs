//! What the bot puts in a room: `m.text` messages whose `body` is the markdown and whose
//! `formatted_body` is its HTML (`render::matrix`), in a thread where the target names
//! one; edits as `m.replace` with the new content in `m.new_content`; typing notices;
//! `m.annotation` reactions; files through the media repository (encrypted in an
//! encrypted room, by the SDK); and a person's direct room, found among the joined rooms
//! or created and the person invited.

use async_trait::async_trait;
use matrix_sdk::Room;
use matrix_sdk::attachment::{AttachmentConfig, AttachmentInfo, BaseAudioInfo};
use matrix_sdk::ruma::api::client::room::create_room::v3::{Request as CreateRoom, RoomPreset};
use matrix_sdk::ruma::events::InitialStateEvent;
use matrix_sdk::ruma::events::room::encryption::RoomEncryptionEventContent;
use matrix_sdk::ruma::events::room::message::TextMessageEventContent;
use matrix_sdk::ruma::{OwnedRoomId, RoomId, UserId};
use serde_json::{Value, json};

use super::errors::channel_error;
use super::{CHANNEL, Matrix};
use crate::channel::{
    ChannelError, DirectOpener, MediaSender, MessageEditor, OutboundMedia, ReactionCapable,
    TypingCapable,
};
use crate::message::Target;
use crate::render::to_matrix_html;

impl Matrix {
    /// The joined room a target names (a person's direct room, opened if need be).
    pub(super) async fn room(&self, target: &Target) -> Result<Room, ChannelError> {
        let target = crate::direct::resolve(self, target).await?;
        let (client, _) = self.client().await?;
        let id = RoomId::parse(target.chat_id.as_str()).map_err(|_| {
            ChannelError::permanent(format!(
                "`{}` is not a Matrix room id (they look like !abc:example.org)",
                target.chat_id
            ))
        })?;
        client.get_room(&id).ok_or_else(|| {
            ChannelError::permanent(format!(
                "the bot is not in Matrix room {id}: invite it, or check the room id"
            ))
        })
    }

    /// Send one chunk of markdown as `m.text`.
    pub(super) async fn send_text(
        &self,
        target: &Target,
        markdown: &str,
    ) -> Result<String, ChannelError> {
        let room = self.room(target).await?;
        let mut content = text_content("m.text", markdown);
        thread(&mut content, target.thread_id.as_deref());
        self.post(&room, "m.room.message", content).await
    }

    /// Send an `m.notice` (what the adapter says itself), replying to `reply_to`.
    pub(super) async fn send_notice(
        &self,
        target: &Target,
        text: &str,
        reply_to: Option<&str>,
    ) -> Result<String, ChannelError> {
        let room = self.room(target).await?;
        let mut content = text_content("m.notice", text);
        thread(&mut content, target.thread_id.as_deref());
        if let Some(event) = reply_to {
            content["m.relates_to"]["m.in_reply_to"] = json!({ "event_id": event });
        }
        self.post(&room, "m.room.message", content).await
    }

    /// Send an event's content; the event id, remembered as the bot's.
    pub(super) async fn post(
        &self,
        room: &Room,
        kind: &str,
        content: Value,
    ) -> Result<String, ChannelError> {
        let sent = room
            .send_raw(kind, content)
            .await
            .map_err(|e| channel_error(&e))?;
        let id = sent.response.event_id.to_string();
        self.remember(&id);
        Ok(id)
    }

    /// Put reaction `key` on `event`; the reaction's event id.
    pub(super) async fn annotate(
        &self,
        room: &Room,
        event: &str,
        key: &str,
    ) -> Result<String, ChannelError> {
        let content = json!({
            "m.relates_to": { "rel_type": "m.annotation", "event_id": event, "key": key }
        });
        self.post(room, "m.reaction", content).await
    }
}

/// `m.text`/`m.notice` content: the markdown as `body`, its HTML as `formatted_body`.
fn text_content(msgtype: &str, markdown: &str) -> Value {
    json!({
        "msgtype": msgtype,
        "body": markdown,
        "format": "org.matrix.custom.html",
        "formatted_body": to_matrix_html(markdown),
        // Nobody is mentioned: without the key, clients match names and `@room` in the
        // text, and a stranger's words echoed would ping the room.
        "m.mentions": {},
    })
}

/// Post in thread `root` (with the reply fallback older clients show).
fn thread(content: &mut Value, root: Option<&str>) {
    if let Some(root) = root {
        content["m.relates_to"] = json!({
            "rel_type": "m.thread",
            "event_id": root,
            "is_falling_back": true,
            "m.in_reply_to": { "event_id": root },
        });
    }
}

#[async_trait]
impl MessageEditor for Matrix {
    async fn edit(
        &self,
        target: &Target,
        message_id: &str,
        text: &str,
    ) -> Result<(), ChannelError> {
        let room = self.room(target).await?;
        let new = text_content("m.text", text);
        let content = json!({
            "msgtype": "m.text",
            "body": format!("* {text}"),
            "format": "org.matrix.custom.html",
            "formatted_body": format!("* {}", new["formatted_body"].as_str().unwrap_or_default()),
            "m.new_content": new,
            "m.mentions": {},
            "m.relates_to": { "rel_type": "m.replace", "event_id": message_id },
        });
        room.send_raw("m.room.message", content)
            .await
            .map_err(|e| channel_error(&e))?;
        Ok(())
    }
}

#[async_trait]
impl TypingCapable for Matrix {
    async fn typing(&self, target: &Target) -> Result<(), ChannelError> {
        let room = self.room(target).await?;
        room.typing_notice(true)
            .await
            .map_err(|e| channel_error(&e))
    }
}

#[async_trait]
impl ReactionCapable for Matrix {
    async fn react(
        &self,
        target: &Target,
        message_id: &str,
        emoji: &str,
    ) -> Result<(), ChannelError> {
        let room = self.room(target).await?;
        self.annotate(&room, message_id, emoji).await.map(|_| ())
    }
}

#[async_trait]
impl MediaSender for Matrix {
    async fn send_media(
        &self,
        target: &Target,
        media: &OutboundMedia,
    ) -> Result<String, ChannelError> {
        let room = self.room(target).await?;
        let mime = guess_mime(&media.file_name, media.as_voice);
        let mut config = AttachmentConfig::new();
        if let Some(caption) = &media.caption {
            config = config.caption(Some(TextMessageEventContent::html(
                caption.clone(),
                to_matrix_html(caption),
            )));
        }
        if media.as_voice {
            config = config.info(AttachmentInfo::Voice(BaseAudioInfo::default()));
        }
        let sent = room
            .send_attachment(&media.file_name, &mime, media.bytes.clone(), config)
            .await
            .map_err(|e| channel_error(&e))?;
        let id = sent.event_id.to_string();
        self.remember(&id);
        Ok(id)
    }
}

/// The MIME type a file is sent as, from its name.
fn guess_mime(name: &str, voice: bool) -> mime::Mime {
    if voice {
        return "audio/ogg"
            .parse()
            .unwrap_or(mime::APPLICATION_OCTET_STREAM);
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let known = match ext.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("ogg" | "oga" | "opus") => "audio/ogg",
        Some("mp3") => "audio/mpeg",
        Some("wav") => "audio/wav",
        Some("mp4") => "video/mp4",
        Some("pdf") => "application/pdf",
        Some("txt" | "md" | "log") => "text/plain",
        Some("json") => "application/json",
        Some("csv") => "text/csv",
        _ => "application/octet-stream",
    };
    known.parse().unwrap_or(mime::APPLICATION_OCTET_STREAM)
}

#[async_trait]
impl DirectOpener for Matrix {
    async fn open_direct(&self, user_id: &str) -> Result<String, ChannelError> {
        let user = UserId::parse(user_id).map_err(|_| {
            ChannelError::permanent(format!(
                "`{user_id}` is not a Matrix user id: a person is written matrix:@name:server, e.g. matrix:@alice:example.org"
            ))
        })?;
        self.directs
            .get_or_open(user_id, async {
                let (client, _) = self.client().await?;
                if let Some(room) = find_direct(&client.joined_rooms(), &user).await {
                    return Ok(room.to_string());
                }
                let room = client
                    .create_room(direct_room(&user, self.settings.encryption))
                    .await
                    .map_err(|e| channel_error(&e))?;
                tracing::info!(channel = CHANNEL, user = %user, room = %room.room_id(), "opened a direct room");
                Ok(room.room_id().to_string())
            })
            .await
    }
}

/// A new direct room with `user` invited: marked direct, private, and encrypted unless
/// `channels.matrix.encryption` is off (the SDK's own `create_dm` always encrypts).
fn direct_room(user: &UserId, encrypted: bool) -> CreateRoom {
    let mut request = CreateRoom::new();
    request.invite = vec![user.to_owned()];
    request.is_direct = true;
    request.preset = Some(RoomPreset::TrustedPrivateChat);
    if encrypted {
        request.initial_state = vec![
            InitialStateEvent::with_empty_state_key(
                RoomEncryptionEventContent::with_recommended_defaults(),
            )
            .to_raw_any(),
        ];
    }
    request
}

/// A joined room of at most two members where `user` is the other one.
async fn find_direct(rooms: &[Room], user: &UserId) -> Option<OwnedRoomId> {
    for room in rooms {
        if room.joined_members_count() + room.invited_members_count() > 2 {
            continue;
        }
        if let Ok(Some(member)) = room.get_member_no_sync(user).await
            && matches!(
                member.membership(),
                matrix_sdk::ruma::events::room::member::MembershipState::Join
                    | matrix_sdk::ruma::events::room::member::MembershipState::Invite
            )
        {
            return Some(room.room_id().to_owned());
        }
    }
    None
}
