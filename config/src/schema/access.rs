//! `[access]` and `[workspace]`: what each tier of sender may do once admitted (tools,
//! owner memory in groups, message rate, daily spending, inbox bytes) and how long the
//! workspace keeps received files and saved tool output. Who is admitted at all is the
//! channels' business (`dm_policy`, `allow_from`, `groups`); tiers are decided by the
//! core's gate.

use serde::{Deserialize, Serialize};

/// How much a sender is trusted, decided per turn. Ordered: `Guest < Member < Owner`, so
/// a turn with several senders runs at the `min` of their tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Admitted without being named: other members of an allowed group, DM senders
    /// under `dm_policy = "open"`.
    Guest,
    /// Let in by name: `allow_from`, or approved by pairing.
    Member,
    /// `agent.owners`, the terminal, jobs an owner made, the heartbeat.
    Owner,
}

impl Tier {
    /// The name users see and config uses: "owner", "member", "guest".
    pub fn name(self) -> &'static str {
        match self {
            Tier::Guest => "guest",
            Tier::Member => "member",
            Tier::Owner => "owner",
        }
    }

    /// The stored form back (`None` for text that names no tier).
    pub fn parse(text: &str) -> Option<Tier> {
        match text {
            "guest" => Some(Tier::Guest),
            "member" => Some(Tier::Member),
            "owner" => Some(Tier::Owner),
            _ => None,
        }
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `[access]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccessConfig {
    /// Tools members may use: names or globs (`"mcp__weather__*"`). Owners have every tool.
    pub member_tools: Vec<String>,
    /// Tools guests may use.
    pub guest_tools: Vec<String>,
    /// Whether the owner's USER.md, MEMORY.md, recall and memory tools are in the owner's
    /// group turns too (always in their direct chats and the terminal).
    pub owner_memory_in_groups: bool,
    /// Messages a minute each non-owner sender may send; past it one notice a minute, and
    /// the rest are stored but not answered.
    pub rate_per_minute: u32,
    /// What one member's turns may cost a day, USD.
    pub member_day_cost_usd: f64,
    /// What one guest's turns may cost a day, USD.
    pub guest_day_cost_usd: f64,
    /// Attachment bytes downloaded per sender a day, MB.
    pub inbox_max_mb_per_day: u64,
}

impl Default for AccessConfig {
    fn default() -> Self {
        Self {
            member_tools: ["web_search", "web_fetch", "todo", "task", "question"]
                .map(String::from)
                .to_vec(),
            guest_tools: ["web_search", "web_fetch"].map(String::from).to_vec(),
            owner_memory_in_groups: false,
            rate_per_minute: 10,
            member_day_cost_usd: 0.50,
            guest_day_cost_usd: 0.10,
            inbox_max_mb_per_day: 50,
        }
    }
}

impl AccessConfig {
    /// The day budget of one sender of `tier`; `None` for owners (only
    /// `agent.max_day_cost_usd` caps them).
    pub fn day_cost_usd(&self, tier: Tier) -> Option<f64> {
        match tier {
            Tier::Owner => None,
            Tier::Member => Some(self.member_day_cost_usd),
            Tier::Guest => Some(self.guest_day_cost_usd),
        }
    }

    /// The tool patterns of `tier`; `None` for owners (every tool).
    pub fn tools(&self, tier: Tier) -> Option<&[String]> {
        match tier {
            Tier::Owner => None,
            Tier::Member => Some(&self.member_tools),
            Tier::Guest => Some(&self.guest_tools),
        }
    }
}

/// `[workspace]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// Files in `inbox/` and `tool-output/` older than this many days are removed by the
    /// gateway once a day; 0 keeps them for ever.
    pub retention_days: u64,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        Self { retention_days: 30 }
    }
}

/// `[web]`: the control panel in the browser, `/healthz` and `/metrics`, served by
/// `pincer run`. Its login token lives in `.security.yml` (`web.token`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Serve the panel (off unless asked for).
    pub enabled: bool,
    /// Address and port; a non-loopback address needs `web.token`.
    pub listen: String,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            listen: "127.0.0.1:8790".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_order_from_guest_to_owner() {
        assert!(Tier::Guest < Tier::Member && Tier::Member < Tier::Owner);
        assert_eq!(Tier::Owner.min(Tier::Guest), Tier::Guest);
        for tier in [Tier::Guest, Tier::Member, Tier::Owner] {
            assert_eq!(Tier::parse(tier.name()), Some(tier));
        }
    }
}
