//! The gate in front of the model: who may talk to the assistant, exactly as
//! DESIGN.md's access rules say, and at which tier. The terminal is the owner; a
//! scheduled run is its creator, at no more than the tier the job was made at. In a
//! DM: owners, `allow_from` and senders approved by pairing (per `dm_policy`). In a
//! group: only allowed groups, and under `group_policy = "mention"` only messages
//! that address the bot — the others are kept briefly as context. An unknown sender
//! is never stored and never reaches a model. Owners come from `agent.owners` only.
//!
//! - `origin`  — the `Origin` (sender, tier, place) a turn carries
//! - `pairing` — codes for strangers, and the owner's one-line notice of each
//! - `context` — recent unaddressed group messages
//! - `limits`  — the per-sender message rate for non-owners

mod context;
mod limits;
mod origin;
mod pairing;

use std::collections::HashMap;

use pincer_channels::{ChatKind, InboundMessage, SessionKey, Target};
use pincer_config::{Config, DmPolicy, GroupPolicy, Tier};

use crate::store::{Store, StoreError};
use context::GroupContext;

pub use limits::{InboxAllowance, RateLimiter, Rated};
pub use origin::{
    Origin, Place, TERMINAL_SENDER, WEB_CHANNEL, indent, message_tier, sanitize_name, speaker_line,
    tier_of_message,
};
pub use pairing::{CODE_ALPHABET, CODE_LEN, MAX_PENDING, new_code};

/// What to do with an inbound message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let it through; `text` is what the model sees (group context prepended), and
    /// `origin` says who asked, at which tier.
    Admit { text: String, origin: Origin },
    /// Answer the sender with `text` (a pairing code, "try later"), nothing else; tell
    /// the channel's owners `owners_note` in their direct chats, if there is one.
    Reply {
        text: String,
        owners_note: Option<String>,
    },
    /// Drop it quietly.
    Refuse,
}

/// One channel's access settings, owned.
#[derive(Debug, Clone)]
struct Policy {
    dm: DmPolicy,
    allow_from: Vec<String>,
    group: GroupPolicy,
    groups: Vec<String>,
}

pub struct Gate {
    store: Store,
    /// `agent.owners`: canonical ids, and nobody else (besides the terminal).
    owners: Vec<String>,
    policies: HashMap<String, Policy>,
    context: GroupContext,
    /// When the owners were last told of a pairing request (at most once a minute).
    pairing_notes: pairing::NoteLimit,
    /// `access.rate_per_minute` for non-owners.
    rate: RateLimiter,
    /// `access.inbox_max_mb_per_day` for non-owners.
    inbox: InboxAllowance,
    /// The gateway's own folder, where an attachment goes when the workspace inbox has
    /// a link or file in its way (`$PINCER_HOME/state/inbox`).
    kept: std::path::PathBuf,
}

impl Gate {
    pub fn new(config: &Config, store: Store, kept: std::path::PathBuf) -> Self {
        let policies = config
            .channels
            .all()
            .into_iter()
            .map(|access| {
                let policy = Policy {
                    dm: access.dm_policy,
                    allow_from: access.allow_from.to_vec(),
                    group: access.group_policy,
                    groups: access.groups.to_vec(),
                };
                (access.name.to_string(), policy)
            })
            .collect();
        Self {
            store,
            owners: config.agent.owners.clone(),
            policies,
            context: GroupContext::default(),
            pairing_notes: pairing::NoteLimit::default(),
            rate: RateLimiter::new(config.access.rate_per_minute),
            inbox: InboxAllowance::new(config.access.inbox_max_mb_per_day.saturating_mul(1 << 20)),
            kept,
        }
    }

    /// Download an admitted message's attachments into the inbox, within the sender's
    /// allowance for the day that started at `day_ms` (owners: no allowance). Returns
    /// the notes the model reads about them (where each file is, or why it is not).
    pub async fn fetch_media(
        &self,
        message: &mut InboundMessage,
        origin: &Origin,
        day_ms: i64,
    ) -> String {
        if message.media.iter().all(|m| m.remote.is_none()) {
            return String::new();
        }
        let before = message.text.len();
        let mut allowance = if origin.is_owner() {
            u64::MAX
        } else {
            self.inbox.left(&origin.sender, day_ms)
        };
        let used = pincer_channels::inbox::fetch_all(message, &mut allowance, &self.kept).await;
        if !origin.is_owner() {
            self.inbox.spend(&origin.sender, day_ms, used);
        }
        message.text.get(before..).unwrap_or_default().to_string()
    }

    /// Count a message of a non-owner `sender` against `access.rate_per_minute`.
    pub fn rate(&self, sender: &str) -> Rated {
        self.rate.check(sender)
    }

    pub async fn check(&self, message: &InboundMessage) -> Result<Decision, StoreError> {
        if let Some(origin) = Origin::local(&message.channel) {
            return Ok(Decision::Admit {
                text: message.text.clone(),
                origin,
            });
        }
        if let Some(scheduled) = &message.scheduled {
            let now = self.tier_of(&message.sender.canonical).await?;
            return Ok(Decision::Admit {
                text: message.text.clone(),
                origin: Origin {
                    sender: message.sender.canonical.clone(),
                    name: sanitize_name(&message.sender.display_name),
                    tier: tier_of_message(scheduled.tier).min(now),
                    place: if scheduled.in_group {
                        Place::Group
                    } else {
                        Place::Scheduled {
                            job: scheduled.job.clone(),
                        }
                    },
                },
            });
        }
        let Some(policy) = self.policies.get(&message.channel) else {
            tracing::warn!(channel = %message.channel, "message from a channel with no access settings dropped");
            return Ok(Decision::Refuse);
        };
        let decision = match message.chat_kind {
            ChatKind::Dm => self.check_dm(message, policy).await?,
            ChatKind::Group | ChatKind::Thread => self.check_group(message, policy).await?,
        };
        if decision == Decision::Refuse {
            tracing::info!(channel = %message.channel, sender = %message.sender.canonical, chat = %message.chat_id, "message not admitted");
        }
        Ok(decision)
    }

    /// The canonical ids of those who own `channel`: its entries in `agent.owners`.
    pub fn owner_ids(&self, channel: &str) -> Vec<String> {
        owners_of(&self.owners, channel)
    }

    /// The direct chats of `channel`'s owners (each opened by user id).
    pub fn owner_targets(&self, channel: &str) -> Vec<Target> {
        self.owner_ids(channel)
            .iter()
            .filter_map(|o| Target::user(o))
            .collect()
    }

    /// The tier a sender has wherever they are admitted: owner (`agent.owners`, the
    /// terminal), member (`allow_from` by name, or approved by pairing), else guest.
    pub async fn tier_of(&self, canonical: &str) -> Result<Tier, StoreError> {
        if Origin::is_owner_id(canonical, &self.owners) {
            return Ok(Tier::Owner);
        }
        let Some((channel, raw)) = canonical.split_once(':') else {
            return Ok(Tier::Guest);
        };
        let named = self
            .policies
            .get(channel)
            .is_some_and(|p| p.allow_from.iter().any(|id| id == raw));
        if named || self.store.is_approved(channel, raw).await? {
            return Ok(Tier::Member);
        }
        Ok(Tier::Guest)
    }

    async fn check_dm(
        &self,
        message: &InboundMessage,
        policy: &Policy,
    ) -> Result<Decision, StoreError> {
        if policy.dm == DmPolicy::Disabled {
            return Ok(Decision::Refuse);
        }
        let tier = self.tier_of(&message.sender.canonical).await?;
        if tier >= Tier::Member || policy.dm == DmPolicy::Open {
            return Ok(Decision::Admit {
                text: message.text.clone(),
                origin: self.origin(message, tier, Place::Direct),
            });
        }
        match policy.dm {
            DmPolicy::Pairing => {
                pairing::respond(
                    &self.store,
                    message,
                    !self.owner_ids(&message.channel).is_empty(),
                    &self.pairing_notes,
                )
                .await
            }
            _ => Ok(Decision::Refuse),
        }
    }

    async fn check_group(
        &self,
        message: &InboundMessage,
        policy: &Policy,
    ) -> Result<Decision, StoreError> {
        if policy.group == GroupPolicy::Disabled {
            return Ok(Decision::Refuse);
        }
        let allowed = policy
            .groups
            .iter()
            .any(|g| g == "*" || g == &message.chat_id);
        if !allowed {
            return Ok(Decision::Refuse);
        }
        let key = message.session_key();
        let said = speaker_line(
            &message.sender.display_name,
            &message.sender.canonical,
            &message.text,
        );
        if policy.group == GroupPolicy::Mention && !message.addressed {
            self.context.remember(&key, said);
            return Ok(Decision::Refuse);
        }
        let tier = self.tier_of(&message.sender.canonical).await?;
        Ok(Decision::Admit {
            text: self.context.with_context(&key, said),
            origin: self.origin(message, tier, Place::Group),
        })
    }

    fn origin(&self, message: &InboundMessage, tier: Tier, place: Place) -> Origin {
        Origin {
            sender: message.sender.canonical.clone(),
            name: sanitize_name(&message.sender.display_name),
            tier,
            place,
        }
    }

    /// Whether the gate would still let `origin` in at `target` (a stored message is
    /// answered after a restart only then: the sender may have been revoked, the group
    /// dropped from `groups`, or the policy changed).
    pub fn still_admits(&self, target: &Target, origin: &Origin) -> bool {
        if Origin::local(&target.channel).is_some() {
            return true; // the owner's own terminal or panel
        }
        let Some(policy) = self.policies.get(&target.channel) else {
            return false;
        };
        match origin.place {
            Place::Direct => {
                policy.dm != DmPolicy::Disabled
                    && (origin.tier >= Tier::Member || policy.dm == DmPolicy::Open)
            }
            _ => {
                policy.group != GroupPolicy::Disabled
                    && policy
                        .groups
                        .iter()
                        .any(|g| g == "*" || *g == target.chat_id)
            }
        }
    }

    /// The origin of a stored message answered again after a restart: its sender's
    /// tier now, in the kind of place its session key names.
    pub async fn origin_of_stored(
        &self,
        key: &SessionKey,
        sender: &str,
    ) -> Result<Origin, StoreError> {
        if let Some(local) = key.channel().and_then(Origin::local) {
            return Ok(local);
        }
        let place = if key.is_direct() {
            Place::Direct
        } else {
            Place::Group
        };
        let tier = self.tier_of(sender).await?;
        Ok(Origin {
            sender: sender.to_string(),
            name: sender.to_string(),
            tier,
            place,
        })
    }
}

/// The entries of `owners` (`agent.owners`) on `channel`.
pub fn owners_of(owners: &[String], channel: &str) -> Vec<String> {
    let prefix = format!("{channel}:");
    owners
        .iter()
        .filter(|o| o.starts_with(&prefix))
        .cloned()
        .collect()
}
