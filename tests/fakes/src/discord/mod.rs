//! # A fake Discord: REST API and gateway
//!
//! Speaks enough of Discord's API v10 and gateway for serenity 0.12 to deserialize
//! every answer and event, so tests drive Pincer's real Discord adapter (its `api_url`
//! pointed here) and the real `pincer` binary without reaching Discord. It binds
//! `127.0.0.1` only.
//!
//! ```no_run
//! # async fn demo() {
//! use pincer_fakes::discord::{FakeDiscord, Fault, Incoming};
//! let fake = FakeDiscord::start().await;
//! fake.inject(Incoming::channel(1, 42, "hi").mentioning_bot());
//! fake.fail_next("create_message", Fault::TooManyRequests { retry_after: 1.0 });
//! fake.drop_socket(); // the adapter resumes and gets what it missed
//! # }
//! ```
//!
//! ## Layout
//! - `fake`     — `FakeDiscord`, the handle: start, inject, press, inspect, faults, outages,
//!   stalls
//! - `incoming` — `Incoming`, the builder for what a user sends, and its injection
//! - `objects`  — users, channels, messages, READY, interactions as JSON; the id map
//! - `rest`     — the REST routes, with Discord's validation errors
//! - `gateway`  — the WebSocket: HELLO, IDENTIFY/READY, heartbeats, RESUME and replay
//! - `fault`    — `Fault`, a scripted failure, and Discord's error bodies
//! - `server`   — the router
//! - `state`    — everything the handlers and the handle share, behind one lock
//! - `platform` — `FakePlatform` for the conformance suite
//!
//! ## Behaviour worth knowing
//! - Ids: test user `n` is `1_000_000_000_000 + n` and their DM channel
//!   `2_000_000_000_000 + n`; guild text channel `g` is `3_000_000_000_000 + g` and its
//!   thread (type 11, `parent_id` = the channel) `4_000_000_000_000 + g`. Messages,
//!   files and interactions take increasing snowflakes from one counter.
//! - REST needs `Authorization: Bot {TOKEN}` (401 otherwise, and for everything while
//!   `revoke_token(true)`), except `GET /gateway` and interaction callbacks. Every call
//!   is recorded first under a route name (see `Call::route`); `fail_next(route, …)`
//!   scripts that route's next answer.
//! - Sent messages over 2000 characters get 400 (code 50035), empty ones 400 (50006);
//!   editing a user's message 403 (50005); unknown channels and messages 404. The bot's
//!   own messages are echoed to it as MESSAGE_CREATE, as Discord does.
//! - `GET /channels/{id}/messages?after=&limit=` lists what came after, newest first.
//! - Files: the bot's multipart `files[n]` parts keep their `Content-Type` (guessed from
//!   the file name when they have none, as Discord does) and are kept with their bytes
//!   (`sent_files`); more than 10 MB in one message gets 413 `{"code": 40005, "message":
//!   "Request entity too large"}`.
//! - Reactions (`PUT …/reactions/{emoji}/@me`) need a known message (404, 10008) and a
//!   Unicode emoji or `name:id` (400 Unknown Emoji, 10014, for a name like `eyes`); they
//!   are kept percent-decoded (`reactions`).
//! - `POST /users/@me/channels` (`{"recipient_id"}`) answers a test user's DM channel
//!   object (type 1, the user as recipient), the same for the same user each time, and
//!   remembers it (`opened_dm`); any other id is 404 Unknown User (10013).
//! - The gateway is at `ws://127.0.0.1:PORT/gateway` (`GET /gateway` says so). See
//!   `gateway` for sessions, replay and kicks.

mod fake;
mod fault;
mod gateway;
mod incoming;
pub mod objects;
mod platform;
mod rest;
mod server;
mod state;

pub use fake::FakeDiscord;
pub use fault::Fault;
pub use incoming::Incoming;
pub use state::{Answer, Call, SentFile, Stored};

/// The fake bot's token.
pub const TOKEN: &str = "FAKE-DISCORD-BOT-TOKEN.x.y";
/// The fake bot's user id (and application id).
pub const BOT_ID: u64 = 6_000_000_000_000;
/// The fake bot's username.
pub const BOT_NAME: &str = "pincer_test_bot";
/// The one guild every guild channel belongs to.
pub const GUILD_ID: u64 = 5_000_000_000_000;
/// Snowflakes for messages, files and interactions count up from here.
pub(crate) const FIRST_SNOWFLAKE: u64 = 100_000_000_000_000_000;
