//! # A fake Slack: the Web API and the Socket Mode WebSocket
//!
//! Speaks enough of Slack for slack-morphism 2.x to deserialize every answer, so tests
//! can drive Pincer's real Slack adapter (`SlackClientHyperConnector::with_slack_api_url`)
//! and the real `pincer` binary without reaching Slack. It binds `127.0.0.1` only. For
//! the Events API mode it plays Slack's side too: it signs events and posts them to the
//! adapter's listener.
//!
//! ```no_run
//! # async fn demo() {
//! use pincer_fakes::slack::{FakeSlack, Incoming, SlackFault};
//! let fake = FakeSlack::start().await;
//! let ts = fake.inject(Incoming::channel("C1", 7, "hi").mentioning_bot());
//! fake.fail_next("chat.postMessage", SlackFault::RateLimited { retry_after: 1 });
//! // point the adapter at fake.api_url() with BOT_TOKEN and APP_TOKEN, then:
//! let posted = fake.wait_for_posted(1, std::time::Duration::from_secs(5)).await;
//! # let _ = (ts, posted);
//! # }
//! ```
//!
//! ## Layout
//! - `fake`     — `FakeSlack`, the handle: start, inject, inspect, faults, disconnects,
//!   stalls
//! - `incoming` — `Incoming`, what a user sends, and the event payloads it becomes
//! - `record`   — `Call`, `Posted`, `Delivery` (an envelope and its ack), `Upload`
//! - `api`      — the Web API methods
//! - `socket`   — the Socket Mode WebSocket: hello, envelopes, acks, redelivery
//! - `server`   — the router: token check, recording, faults, uploads, downloads
//! - `events`   — Slack's side of the Events API: signed requests to the adapter
//! - `platform` — `FakePlatform` for the conformance suite
//! - `state`    — everything above that handlers and handle share, behind one lock
//!
//! ## Behaviour worth knowing
//! - Web API calls go to `{api_url}/{method}` (`api_url` ends in `/api`) with
//!   `Authorization: Bearer`: `apps.connections.open` takes [`APP_TOKEN`], everything
//!   else [`BOT_TOKEN`]; a wrong token gets `{"ok":false,"error":"invalid_auth"}` with
//!   status 200, like Slack. Every call is recorded first, refused ones too.
//! - `apps.connections.open` answers `ws://127.0.0.1:PORT/socket?ticket=N`. On connect
//!   the fake says `hello`, then sends every envelope not yet acknowledged. An envelope
//!   sent on a connection that ended before its ack is sent again on the next one with
//!   `retry_attempt` one higher and `retry_reason: "timeout"`, as Slack does.
//! - A user message in a channel that mentions the bot becomes two envelopes, `message`
//!   then `app_mention`, with the same `channel` and `ts` (Slack does the same).
//! - Ids: user `n` is `U{n}`, their DM `D{n}`, group `g` is `C{g}`; the bot is `UBOT`
//!   (bot id `BBOT`). Message ts count up from `1700000000.000100`.
//! - `chat.update` of a message the bot did not send → `cant_update_message`; unknown →
//!   `message_not_found`. Text over 40,000 characters → `msg_too_long`.
//! - Files a user attaches are served at `/files/{id}/{name}` to the bot token only;
//!   their objects carry `mimetype`, `filetype` and `size`.
//! - Uploads: `files.getUploadURLExternal` → a POST of the bytes (raw or multipart) to
//!   `/upload/{file_id}` → `files.completeUploadExternal`; each is an `Upload`
//!   (`uploads`, `completed_uploads`).
//! - `conversations.open` with one user `U{n}` answers their IM `D{n}` (the same each
//!   time, `already_open` after the first) and remembers it (`opened_im`); `UBOT` is
//!   `cannot_dm_bot`, an id not starting with `U` is `user_not_found`.

mod api;
mod events;
mod fake;
mod incoming;
mod platform;
mod record;
mod server;
mod socket;
mod state;

pub use events::{EventsAnswer, Signing};
pub use fake::{FakeSlack, SlackFault};
pub use incoming::Incoming;
pub use record::{Call, Delivery, Posted, Upload};

/// The bot token the fake accepts for the Web API.
pub const BOT_TOKEN: &str = "xoxb-fake-bot-token";
/// The app-level token the fake accepts for `apps.connections.open`.
pub const APP_TOKEN: &str = "xapp-fake-app-token";
/// The signing secret the fake signs Events API requests with.
pub const SIGNING_SECRET: &str = "fake-signing-secret";
/// The bot's user id.
pub const BOT_USER: &str = "UBOT";
/// The bot's name.
pub const BOT_NAME: &str = "pincer";
