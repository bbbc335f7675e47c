//! The gate in front of the model: who may talk to the assistant, exactly as
//! DESIGN.md's access rules say. The terminal and scheduled jobs are always admitted. In a DM:
//! owners, `allow_from` and senders approved by pairing (per `dm_policy`). In a
//! group: only allowed groups, and under `group_policy = "mention"` only messages
//! that address the bot — the others are kept briefly as context. An unknown sender
//! is never stored and never reaches a model.

mod context;
mod pairing;

use std::collections::HashMap;

use pincer_channels::{ChatKind, InboundMessage};
use pincer_config::{Config, DmPolicy, GroupPolicy};

use crate::store::{Store, StoreError};
use context::GroupContext;

pub use pairing::{CODE_ALPHABET, CODE_LEN, MAX_PENDING, new_code};

/// What to do with an inbound message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let it through; `text` is what the model sees (group context prepended).
    Admit { text: String },
    /// Answer the sender with this (a pairing code, "try later"), nothing else.
    Reply(String),
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
    /// `agent.owners`: canonical ids. Empty means "the first approved sender".
    owners: Vec<String>,
    policies: HashMap<String, Policy>,
    context: GroupContext,
}

impl Gate {
    pub fn new(config: &Config, store: Store) -> Self {
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
        }
    }

    pub async fn check(&self, message: &InboundMessage) -> Result<Decision, StoreError> {
        if matches!(message.channel.as_str(), "terminal" | "cron") {
            return Ok(Decision::Admit {
                text: message.text.clone(),
            });
        }
        let Some(policy) = self.policies.get(&message.channel) else {
            tracing::warn!(channel = %message.channel, "message from a channel with no access settings dropped");
            return Ok(Decision::Refuse);
        };
        let decision = match message.chat_kind {
            ChatKind::Dm => self.check_dm(message, policy).await?,
            ChatKind::Group | ChatKind::Thread => self.check_group(message, policy),
        };
        if decision == Decision::Refuse {
            tracing::info!(channel = %message.channel, sender = %message.sender.canonical, chat = %message.chat_id, "message not admitted");
        }
        Ok(decision)
    }

    /// Whether this sender owns the channel: named in `agent.owners`, or, when that is
    /// empty, the first sender ever approved on the channel.
    pub async fn is_owner(&self, message: &InboundMessage) -> Result<bool, StoreError> {
        if message.channel == "terminal" {
            return Ok(true);
        }
        Ok(self
            .owner_ids(&message.channel)
            .await?
            .contains(&message.sender.canonical))
    }

    /// The canonical ids of those who own `channel`: its entries in `agent.owners`, or,
    /// when that names nobody at all, the first sender ever approved on it.
    pub async fn owner_ids(&self, channel: &str) -> Result<Vec<String>, StoreError> {
        if !self.owners.is_empty() {
            let prefix = format!("{channel}:");
            return Ok(self
                .owners
                .iter()
                .filter(|o| o.starts_with(&prefix))
                .cloned()
                .collect());
        }
        let approved = self.store.approved(Some(channel)).await?;
        Ok(approved
            .first()
            .map(|first| vec![format!("{channel}:{}", first.sender_raw)])
            .unwrap_or_default())
    }

    async fn check_dm(
        &self,
        message: &InboundMessage,
        policy: &Policy,
    ) -> Result<Decision, StoreError> {
        let admit = Decision::Admit {
            text: message.text.clone(),
        };
        if policy.dm == DmPolicy::Disabled {
            return Ok(Decision::Refuse);
        }
        if policy.dm == DmPolicy::Open || self.is_owner(message).await? {
            return Ok(admit);
        }
        if policy
            .allow_from
            .iter()
            .any(|id| id == &message.sender.raw_id)
            || self
                .store
                .is_approved(&message.channel, &message.sender.raw_id)
                .await?
        {
            return Ok(admit);
        }
        match policy.dm {
            DmPolicy::Pairing => pairing::respond(&self.store, message).await,
            _ => Ok(Decision::Refuse),
        }
    }

    fn check_group(&self, message: &InboundMessage, policy: &Policy) -> Decision {
        if policy.group == GroupPolicy::Disabled {
            return Decision::Refuse;
        }
        let allowed = policy
            .groups
            .iter()
            .any(|g| g == "*" || g == &message.chat_id);
        if !allowed {
            return Decision::Refuse;
        }
        let key = message.session_key();
        if policy.group == GroupPolicy::Mention && !message.addressed {
            self.context
                .remember(&key, &message.sender.display_name, &message.text);
            return Decision::Refuse;
        }
        let said = format!("{}: {}", message.sender.display_name, message.text);
        Decision::Admit {
            text: self.context.with_context(&key, said),
        }
    }
}
