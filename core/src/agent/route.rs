//! Which chain answers a turn: a `/model` pin if the session has one (a pinned model
//! never falls back to another), else the router's score against `router.threshold`.
//! A light turn may move to the heavy chain — when the light model calls `escalate`,
//! when the light chain fails, or when it answers with nothing — never by reading
//! phrases in its reply.
//!
//! A turn showing pictures goes to models that see them (`Models::seeing`): the light
//! chain's seeing models if it has any, else the heavy chain's; it escalates only to
//! heavy models that see. When no model sees, the route says so (`sees = false`) and
//! the turn goes on without the pictures.

use std::sync::Arc;

use serde_json::json;

use super::Agent;
use crate::models::Pin;
use crate::provider::{Chain, ChatMessage, ToolSpec};
use crate::router::{self, Tier};

/// The tool a light model calls to hand a turn to the heavy chain.
pub const ESCALATE: &str = "escalate";

pub(super) struct Route {
    pub chain: Arc<Chain>,
    pub tier: Tier,
    /// Pinned by `/model`: no escalation, no fallback beyond the pin.
    pub pinned: bool,
    /// The turn shows pictures: only models that see them may answer it.
    pub images: bool,
    /// Every model of `chain` sees pictures (or there are none to see).
    pub sees: bool,
}

impl Route {
    /// Whether this turn may still move to the heavy chain.
    pub(super) fn can_escalate(&self, agent: &Agent) -> bool {
        self.tier == Tier::Light && !self.pinned && agent.models.can_escalate()
    }

    /// Move to the heavy chain. Returns false when there is none to move to.
    pub(super) fn escalate(&mut self, agent: &Agent, why: &str) -> bool {
        if !self.can_escalate(agent) {
            return false;
        }
        let Some((tier, chain)) = agent.models.tier(Tier::Heavy) else {
            return false;
        };
        let chain = match self.images && self.sees {
            true => match agent.models.seeing_part(&chain) {
                Some(chain) => chain,
                None => return false,
            },
            false => chain,
        };
        tracing::info!(reason = why, "escalating the turn to the heavy chain");
        self.tier = tier;
        self.chain = chain;
        true
    }
}

pub(super) fn escalate_spec() -> ToolSpec {
    ToolSpec {
        name: ESCALATE.into(),
        description: "Hand this turn to a stronger model. Call it when the task is beyond you (hard reasoning, long code, careful writing); say why.".into(),
        input_schema: json!({"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}).into(),
    }
}

/// Why no model could take a turn.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error(
        "no model is configured: add models to [router] light/heavy in config.toml, or run `pincer onboard`"
    )]
    NoModel,
    #[error("the pinned model {0}; change it with /model")]
    Pin(#[from] crate::models::ModelsError),
}

impl Agent {
    /// `pin`: the session's `/model` pin, as `load` read it.
    pub(super) fn route(
        &self,
        pin: Option<&str>,
        messages: &[ChatMessage],
        attachment: bool,
        images: bool,
    ) -> Result<Route, RouteError> {
        let mut route = self.route_text(pin, messages, attachment)?;
        route.images = images;
        if !images {
            return Ok(route);
        }
        let seeing = match (route.pinned, route.tier) {
            // A pinned model is the pin's alone: it sees or it does not.
            (true, _) if route.chain.entries().len() == 1 => self
                .models
                .seeing_part(&route.chain)
                .map(|c| (route.tier, c)),
            (true, tier) => self
                .models
                .seeing_part(&route.chain)
                .map(|c| (tier, c))
                .or_else(|| self.models.seeing()),
            (false, _) => self.models.seeing(),
        };
        match seeing {
            Some((tier, chain)) => {
                tracing::info!(
                    tier = tier.as_str(),
                    "turn with pictures routed to models that see"
                );
                route.tier = tier;
                route.chain = chain;
            }
            None => route.sees = false,
        }
        Ok(route)
    }

    /// The route by pin or router score alone.
    fn route_text(
        &self,
        pin: Option<&str>,
        messages: &[ChatMessage],
        attachment: bool,
    ) -> Result<Route, RouteError> {
        let pin = pin.map(Pin::parse);
        match pin {
            Some(Pin::Model(label)) => {
                let chain = self.models.pinned(&label)?;
                tracing::info!(model = %label, "turn routed to the pinned model");
                Ok(Route {
                    chain,
                    tier: Tier::Heavy,
                    pinned: true,
                    images: false,
                    sees: true,
                })
            }
            Some(Pin::Tier(wanted)) => {
                let (tier, chain) = self.models.tier(wanted).ok_or(RouteError::NoModel)?;
                tracing::info!(tier = tier.as_str(), "turn routed to the pinned tier");
                Ok(Route {
                    chain,
                    tier,
                    pinned: true,
                    images: false,
                    sees: true,
                })
            }
            None => {
                let score = router::score(messages, attachment);
                let wanted = router::tier(score.value, self.models.threshold);
                let (tier, chain) = self.models.tier(wanted).ok_or(RouteError::NoModel)?;
                tracing::info!(
                    score = score.value,
                    tokens = score.tokens,
                    recent_tool_calls = score.recent_tool_calls,
                    depth = score.depth,
                    tier = tier.as_str(),
                    "turn routed"
                );
                Ok(Route {
                    chain,
                    tier,
                    pinned: false,
                    images: false,
                    sees: true,
                })
            }
        }
    }
}
