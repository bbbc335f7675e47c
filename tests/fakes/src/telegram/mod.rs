//! # A fake Telegram Bot API server
//!
//! Speaks enough of the Bot API for teloxide 0.17 to deserialize every answer, so tests
//! can drive Pincer's real Telegram adapter (`Bot::new(token).set_api_url(url)`) and the
//! real `pincer` binary without reaching Telegram. It binds `127.0.0.1` only.
//!
//! ```no_run
//! # async fn demo() {
//! use pincer_fakes::telegram::{FakeTelegram, Fault, Incoming};
//! let fake = FakeTelegram::start().await;
//! let id = fake.inject(Incoming::group(-100123, 42, "hi").mentioning_bot().in_topic(7));
//! fake.fail_next("sendMessage", Fault::TooManyRequests { retry_after: 1 });
//! // point teloxide at fake.api_url() with fake.token(), then:
//! let sent = fake.wait_for_sent(1, std::time::Duration::from_secs(5)).await;
//! # let _ = (id, sent);
//! # }
//! ```
//!
//! ## Layout
//! - `fake`       — `FakeTelegram`, the handle: start, URLs, inject, inspect, faults,
//!   outage, stall
//! - `incoming`   — `Incoming`, the builder for what a user sends, and its injection
//! - `entities`   — final text and its entities (mentions, bot commands, UTF-16 offsets)
//! - `attachment` — photos, documents, voice notes, audio: stored bytes and their JSON
//! - `objects`    — the bot, users, chats and `Message` objects as JSON
//! - `store`      — chats, messages and files the fake knows (for replies, edits, getFile)
//! - `updates`    — the update queue: ids, `offset` confirmation, pending count
//! - `record`     — `Call` (every API request), `Sent` (every message sent or edited),
//!   `SentFile` (every file sent)
//! - `fault`      — `Fault`, a scripted failure, and `Refusal`, any `{"ok":false}` answer
//! - `html`       — a checker for `parse_mode: HTML` imitating Telegram's parser errors
//! - `params`     — request parameters from a query, JSON, form or multipart body
//! - `methods`    — one file per group of Bot API methods; the dispatch table
//! - `server`     — the router: token check, recording, faults, `/file/` downloads
//! - `listener`   — the accept loop that can drop every connection and come back (outage)
//! - `control`    — the `/_fake/*` routes for another process
//! - `platform`   — `FakePlatform` for the conformance suite
//! - `state`      — everything above that handlers and handle share, behind one lock
//!
//! ## Behaviour worth knowing
//! - Requests go to `{api_url}/bot{TOKEN}/{Method}`; the method is matched
//!   case-insensitively (teloxide sends `GetUpdates`) and recorded under the Bot API's
//!   camelCase name. A wrong token gets 401 `Unauthorized` (teloxide: `InvalidToken`), an
//!   unknown method 404 `Not Found: method not found`. Every call is recorded first, even
//!   refused ones. Parameters may come in the query, as JSON, form or multipart.
//! - Errors are `{"ok":false,"error_code":N,"description":..}` with 4xx statuses (teloxide
//!   sleeps 10 s after any 5xx, so only `Fault::ServerError` answers one).
//! - `getUpdates`: every update with `update_id < offset` is confirmed and dropped; a
//!   negative offset keeps only the last `-offset`. With nothing pending the request is
//!   held up to `min(timeout, 10)` s and answered as soon as something is injected.
//!   `allowed_updates` is recorded but not applied. After `stall()` the poll held then
//!   (or the next) is never answered, as over a connection gone silent. `press` queues a `callback_query`
//!   update for an inline button on screen; `answerCallbackQuery` is recorded.
//! - Message ids come from one counter shared by injected and sent messages; update ids
//!   count from 1.
//! - Like Telegram: a message in a forum topic carries `message_thread_id` and
//!   `is_topic_message: true`, and when it is not an explicit reply its
//!   `reply_to_message` is the topic's `forum_topic_created` service message; a reply in
//!   an ordinary supergroup carries `message_thread_id` (the replied message) without
//!   `is_topic_message`. Every `@username` in text is a `mention` entity.
//! - Sending: `parse_mode: HTML` text is checked like Telegram does (supported tags,
//!   balanced, see `html`) unless `validate_html(false)`; `reject_html(true)` refuses all
//!   HTML. Text over 4096 characters (caption: 1024) is refused "message is too long", an
//!   empty text "message text is empty", a reply to an unknown message "message to be
//!   replied not found" (unless `allow_sending_without_reply`). Unknown chats are made up:
//!   a positive id is a private chat, a negative one a supergroup.
//! - `editMessageText` with the same text and parse mode as now gets Telegram's "message
//!   is not modified" 400; editing a message the bot did not send, "message can't be
//!   edited"; an unknown one, "message to edit not found".
//! - Returned `Message` objects carry the parsed (tag-free) text without entities; `Sent`
//!   keeps the text exactly as the bot sent it.
//! - File downloads (`GET /file/bot{TOKEN}/{file_path}`) are recorded as calls of the
//!   made-up method `downloadFile` with `{"file_path": ..}`.
//! - Media: incoming documents and audio carry a `mime_type` guessed from the file name,
//!   voice notes `duration` 1 and `audio/ogg`. Sending: an uploaded photo over 10 MB, or
//!   any upload over 50 MB, gets 413 `Request Entity Too Large`; every file sent is kept
//!   with its bytes and caption (`sent_files`).
//! - `setMessageReaction` wants a message the fake knows (`MESSAGE_ID_INVALID`), at
//!   most one reaction (`REACTIONS_TOO_MANY`), and an emoji from the Bot API's list of
//!   reaction emoji (`REACTION_INVALID`); accepted ones are kept (`reactions`).
//!
//! ## Control routes (for another process; same port as the API)
//! - `POST /_fake/inject` — one incoming message as JSON, answers
//!   `{"message_id":N,"update_id":N}`. Only `user_id` is required:
//!   `{"user_id":42, "chat_id":-100123, "chat_type":"private"|"supergroup",
//!   "first_name":"Ann", "username":"ann", "title":"Group", "text":"hi", "thread_id":7,
//!   "reply_to":12, "reply_to_bot":true, "mention":true, "command":true,
//!   "photo":{"base64":".."}, "document":{"name":"a.txt","text":".."},
//!   "voice":{"base64":".."}, "audio":{"name":"song.mp3","base64":".."}}`. `chat_id` defaults to `user_id` (a DM); `chat_type`
//!   defaults to `private` for positive ids and `supergroup` for negative ones. Files
//!   take `base64` or `text` for their bytes.
//! - `GET /_fake/sent` — `[{"method","chat_id","message_id","text","parse_mode",
//!   "message_thread_id","reply_to","file_name"}]`, oldest first.
//! - `GET /_fake/calls` — `[{"method":"sendMessage","params":{..},"at_ms":N}]`.
//! - `GET /_fake/files` — `[{"kind":"photo"|"document"|"voice"|"audio","chat_id",
//!   "message_id","message_thread_id","file_name","size","caption","base64"}]`.
//! - `GET /_fake/reactions` — `[{"chat_id","message_id","emoji"}]`.
//! - `GET /_fake/updates` — `{"confirmed_offset":N,"pending":N}`.
//! - `POST /_fake/fail` — `{"method":"sendMessage","fault":F}` with F one of
//!   `{"too_many_requests":{"retry_after":1}}`, `"conflict"`, `"unauthorized"`,
//!   `{"forbidden":"bot was blocked by the user"}`, `{"bad_request":"chat not found"}`,
//!   `{"server_error":502}`; answers 204.
//! - `POST /_fake/reject_html` — `{"on":true}`; answers 204.
//! - `POST /_fake/outage` — `{"ms":2000}`; answers 202, goes down 100 ms later.
//! - `POST /_fake/stall` — the held (or next) `getUpdates` is never answered; answers 204.

mod attachment;
mod control;
mod entities;
mod fake;
mod fault;
mod html;
mod incoming;
mod listener;
mod methods;
mod objects;
mod params;
mod platform;
mod record;
mod server;
mod state;
mod store;
mod updates;

pub use attachment::MediaKind;
pub use fake::FakeTelegram;
pub use fault::Fault;
pub use incoming::Incoming;
pub use record::{Call, CallJson, Sent, SentFile};

/// The fake bot's token: requests go to `/bot123456:TEST-TOKEN/{Method}`.
pub const TOKEN: &str = "123456:TEST-TOKEN";
/// The fake bot's user id.
pub const BOT_ID: i64 = 999;
/// The fake bot's username (without `@`).
pub const BOT_USERNAME: &str = "pincer_test_bot";
/// The fake bot's first name.
pub const BOT_NAME: &str = "Pincer Test";
