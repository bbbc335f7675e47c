//! How a turn ends, and the sentence the user is told when it ends early.

use crate::provider::{ErrorKind, ProviderError};
use crate::steering::StopReason;

#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    Finished,
    /// A budget gate closed the turn.
    Budget(Budget),
    Stopped(StopReason),
    /// Something the turn needed failed; its `Display` says why and what to do.
    Failed(TurnError),
    /// The turn kept repeating itself after being told; the text names what.
    Stuck(String),
}

/// Why a turn failed, with its kind kept: the text (`Display`) is what the user is
/// told, the kind what logs and counters may tell apart.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TurnError {
    /// The model chain failed (its last model's error, with its `ErrorKind`).
    #[error(transparent)]
    Model(ProviderError),
    /// The conversation could not be read or written: the store's own sentence.
    #[error("{0}")]
    Store(String),
    /// No model could take the turn (nothing configured, a bad `/model` pin).
    #[error("{0}")]
    Route(String),
    /// The host's `UserPromptSubmit` hook refused the prompt; its reason.
    #[error("the host's UserPromptSubmit hook blocked this prompt: {0}")]
    Blocked(String),
    /// The model refused the conversation as too long, and even summarised it does not
    /// fit: `said` is the server's words, `window` names the window.
    #[error(
        "the model refused the conversation as too long ({said}). Even summarised, it and this message do not fit {window}, so this message was set aside (it is kept: `pincer sessions show` has it) and the conversation is as it was; send it shorter or in parts, or start over with /new"
    )]
    TooLong { said: String, window: String },
}

impl TurnError {
    /// The model's error kind, when the model chain failed (or refused the length).
    pub fn model_kind(&self) -> Option<ErrorKind> {
        match self {
            TurnError::Model(err) => Some(err.kind),
            TurnError::TooLong { .. } => Some(ErrorKind::ContextTooLong),
            _ => None,
        }
    }

    /// One word for what failed, for logs: "model", "store", "route", "blocked",
    /// "too_long".
    pub fn word(&self) -> &'static str {
        match self {
            TurnError::Model(_) => "model",
            TurnError::Store(_) => "store",
            TurnError::Route(_) => "route",
            TurnError::Blocked(_) => "blocked",
            TurnError::TooLong { .. } => "too_long",
        }
    }
}

impl From<ProviderError> for TurnError {
    fn from(err: ProviderError) -> TurnError {
        TurnError::Model(err)
    }
}

impl From<crate::store::StoreError> for TurnError {
    fn from(err: crate::store::StoreError) -> TurnError {
        TurnError::Store(err.to_string())
    }
}

impl From<super::route::RouteError> for TurnError {
    fn from(err: super::route::RouteError) -> TurnError {
        TurnError::Route(err.to_string())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    Iterations(u32),
    /// A subagent used its `agent.task_max_iterations`.
    TaskIterations(u32),
    /// A host's `--max-turns` (model calls in one turn).
    HostTurns(u32),
    TurnCost {
        spent: f64,
        limit: f64,
    },
    DayCost {
        spent: f64,
        limit: f64,
    },
    /// A non-owner sender used their own day's allowance (`access.*_day_cost_usd`).
    SenderDay {
        tier: pincer_config::Tier,
        limit: f64,
    },
    Time(u64),
}

impl Ended {
    /// How the turn's stream says it ended.
    pub fn finish_reason(&self) -> pincer_channels::FinishReason {
        use pincer_channels::FinishReason;
        match self {
            Ended::Finished => FinishReason::Stop,
            Ended::Budget(_) => FinishReason::Length,
            Ended::Stopped(_) => FinishReason::Aborted,
            Ended::Failed(_) | Ended::Stuck(_) => FinishReason::Error,
        }
    }

    /// One word for how the turn ended, for `/metrics`.
    pub fn word(&self) -> &'static str {
        match self {
            Ended::Finished => "finished",
            Ended::Budget(_) => "budget",
            Ended::Stopped(_) => "stopped",
            Ended::Failed(_) => "failed",
            Ended::Stuck(_) => "stuck",
        }
    }

    /// What to tell the user, if anything.
    pub fn notice(&self) -> Option<String> {
        match self {
            Ended::Finished | Ended::Stopped(StopReason::Interrupted | StopReason::Shutdown) => {
                None
            }
            Ended::Stopped(StopReason::User) => Some("Stopped.".into()),
            Ended::Failed(why) => Some(why.to_string()),
            Ended::Stuck(why) => Some(why.clone()),
            Ended::Budget(Budget::Iterations(n)) => Some(format!(
                "Stopped: this turn used its {n} model calls (agent.max_iterations). Say \"continue\" to go on."
            )),
            Ended::Budget(Budget::HostTurns(n)) => Some(format!(
                "Stopped: this turn used its {n} model calls (--max-turns)."
            )),
            Ended::Budget(Budget::TaskIterations(n)) => Some(format!(
                "Stopped: this task used its {n} model calls (agent.task_max_iterations)."
            )),
            Ended::Budget(Budget::TurnCost { spent, limit }) => Some(format!(
                "Stopped: this turn has cost ${spent:.2}, over agent.max_turn_cost_usd = {limit:.2}. Say \"continue\" to go on, or raise the limit in config.toml."
            )),
            Ended::Budget(Budget::DayCost { spent, limit }) => Some(format!(
                "Stopped: today's model spending is ${spent:.2}, over agent.max_day_cost_usd = {limit:.2}. It resets at midnight in agent.timezone, or raise the limit in config.toml."
            )),
            Ended::Budget(Budget::SenderDay { tier, limit }) => Some(format!(
                "You have used today's allowance of ${limit:.2} ({tier} budget, access.{tier}_day_cost_usd); it renews at midnight."
            )),
            Ended::Budget(Budget::Time(secs)) => Some(format!(
                "Stopped: this turn ran for {secs}s, the limit set by agent.max_turn_secs."
            )),
        }
    }
}
