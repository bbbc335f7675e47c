//! The one registry of running channels: each channel with the capabilities it has,
//! known at start-up. Everything that delivers (the manager, cron delivery, the send
//! tool, the CLI) reads this, so no list of channels is repeated elsewhere.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::channel::{
    ApprovalPrompter, Channel, DirectOpener, Health, HealthChecker, MediaSender, MessageEditor,
    ReactionCapable, TypingCapable,
};
use crate::message::Target;
use crate::pulse::Liveness;

/// A platform's send limit as a token bucket: `burst` operations may go back to back
/// after a quiet spell, and after that one each `every` (the sustained rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// How many may go at once (at least one).
    pub burst: u32,
    /// The sustained pace: one operation's allowance comes back this often.
    pub every: Duration,
}

/// How the manager treats a channel's messages.
#[derive(Clone, Copy)]
pub struct ChannelInfo {
    /// Split a markdown reply into chunks the platform accepts, in order.
    pub split: fn(&str) -> Vec<String>,
    /// How fast one chat may be written to, messages and edits alike; by target, as a
    /// platform may hold groups to a slower pace than private chats.
    pub chat_rate: fn(&Target) -> Rate,
    /// How fast the whole channel may write, all its chats together (the bot's limit).
    pub channel_rate: Rate,
    /// How often a streaming reply is edited.
    pub edit_interval: Duration,
    /// How often "typing…" must be refreshed to stay visible.
    pub typing_interval: Duration,
}

/// A channel and its optional capabilities.
#[derive(Clone)]
pub struct ChannelHandle {
    pub channel: Arc<dyn Channel>,
    pub info: ChannelInfo,
    pub typing: Option<Arc<dyn TypingCapable>>,
    pub editor: Option<Arc<dyn MessageEditor>>,
    pub media: Option<Arc<dyn MediaSender>>,
    pub reactions: Option<Arc<dyn ReactionCapable>>,
    pub approvals: Option<Arc<dyn ApprovalPrompter>>,
    /// Opens a person's direct chat (`Target::user`). `None` where a user's id is their
    /// private chat's id (Telegram), so a person's target is delivered as it is.
    pub direct: Option<Arc<dyn DirectOpener>>,
    pub health: Option<Arc<dyn HealthChecker>>,
}

impl ChannelHandle {
    /// A channel with no capabilities beyond sending text.
    pub fn new(channel: Arc<dyn Channel>, info: ChannelInfo) -> Self {
        Self {
            channel,
            info,
            typing: None,
            editor: None,
            media: None,
            reactions: None,
            approvals: None,
            direct: None,
            health: None,
        }
    }

    pub fn name(&self) -> &str {
        self.channel.name()
    }

    /// Whether replies can stream by editing the message in place.
    pub fn can_stream(&self) -> bool {
        self.editor.is_some()
    }

    pub fn health(&self) -> Health {
        self.health.as_ref().map_or(Health::Up, |h| h.health())
    }

    /// When it last heard from its platform and whether it is stuck; `None` for a
    /// channel that keeps no pulse (the terminal).
    pub fn liveness(&self) -> Option<Liveness> {
        self.health.as_ref().map(|h| h.liveness())
    }
}

#[derive(Clone, Default)]
pub struct Registry {
    handles: BTreeMap<String, ChannelHandle>,
}

impl Registry {
    pub fn insert(&mut self, handle: ChannelHandle) {
        self.handles.insert(handle.name().to_string(), handle);
    }

    pub fn get(&self, name: &str) -> Option<&ChannelHandle> {
        self.handles.get(name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.handles.keys().map(String::as_str).collect()
    }

    pub fn handles(&self) -> impl Iterator<Item = &ChannelHandle> {
        self.handles.values()
    }

    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }
}
