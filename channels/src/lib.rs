//! # pincer-channels
//!
//! How Pincer meets the outside world, and nothing else: it knows no agent, store or
//! model.
//!
//! ## Layout
//! - `approval` — questions asked with buttons, and who may answer them
//! - `escape`   — control, bidi and zero-width characters shown as `\u{…}` where a
//!   person judges text (approval questions, speaker names)
//! - `inbox`    — incoming attachments: fetched only for admitted messages (`fetch_all`),
//!   within the size cap and the sender's daily allowance; where they are saved, the note
//!   the model gets
//! - `key`      — `SessionKey`: which conversation a message belongs to, built and parsed in one place
//! - `message`  — `InboundMessage` / `OutboundMessage` and their typed parts
//! - `ledger`   — `Ledger`: told when a message with an outbox entry reached its platform
//! - `channel`  — the `Channel` trait every adapter implements, the capability traits
//!   (typing, editing, media, reactions, approvals, direct chats, health), `ChannelError`
//! - `pulse`    — when a channel last heard from its platform, its silence limit, and
//!   whether its adapter is stuck (read by `pincer status`, the panel, `/metrics` and
//!   the watchdog)
//! - `direct`   — a person's direct chat for a target naming them: the cache, `resolve`
//! - `registry` — the one registry of running channels and what each can do
//! - `manager`  — delivery shared by every channel: split, pace, retry, stream, typing
//! - `render`   — splitting markdown to a platform's limit, platform markup
//! - `telegram` — the Telegram adapter (teloxide, long polling; feature `telegram`)
//! - `discord`  — the Discord adapter (serenity, gateway; feature `discord`)
//! - `slack`    — the Slack adapter (slack-morphism, Socket Mode or Events API; feature `slack`)
//! - `matrix`   — the Matrix adapter (matrix-sdk, the sync loop, end-to-end encryption;
//!   feature `matrix`)
//! - `terminal` — the local terminal adapter (stdin/stdout)

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod approval;
pub mod backoff;
pub mod channel;
pub mod chunk;
pub mod clock;
pub mod direct;
#[cfg(feature = "discord")]
pub mod discord;
pub mod escape;
pub mod inbox;
pub mod key;
pub mod ledger;
pub mod manager;
#[cfg(feature = "matrix")]
pub mod matrix;
pub mod message;
pub mod pulse;
pub mod registry;
pub mod render;
#[cfg(feature = "slack")]
pub mod slack;
#[cfg(feature = "telegram")]
pub mod telegram;
pub mod terminal;

pub use channel::{
    ApprovalPrompter, Channel, ChannelError, DirectOpener, Health, HealthCell, HealthChecker,
    InboundSender, MediaSender, MessageEditor, OutboundMedia, ReactionCapable, TypingCapable,
};
pub use chunk::{Chunk, FinishReason, TurnUsage};
pub use key::SessionKey;
pub use ledger::Ledger;
pub use message::{
    Ack, ChatKind, Done, Entry, Inbound, InboundMessage, MediaKind, MediaRef, OutboundBody,
    OutboundMessage, Receipt, SYSTEM, Scheduled, Sender, Target, Tier, TurnFailed,
};
pub use pulse::{Liveness, Pulse};
pub use registry::{ChannelHandle, ChannelInfo, Rate, Registry};
pub use terminal::Terminal;
