//! # pincer-channels
//!
//! How Pincer meets the outside world, and nothing else: it knows no agent, store or
//! model.
//!
//! ## Layout
//! - `message`  — `InboundMessage` / `OutboundMessage` and their typed parts
//! - `channel`  — the `Channel` trait every adapter implements, `ChannelError`
//! - `terminal` — the local terminal adapter (stdin/stdout)

#![forbid(unsafe_code)]

pub mod channel;
pub mod message;
pub mod terminal;

pub use channel::{Channel, ChannelError, InboundSender};
pub use message::{
    Ack, ChatKind, InboundMessage, MediaKind, MediaRef, OutboundBody, OutboundMessage, Sender,
    Target,
};
pub use terminal::Terminal;
