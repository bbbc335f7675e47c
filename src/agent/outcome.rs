//! How a turn ends, and the sentence the user is told when it ends early.

use crate::steering::StopReason;

#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    Finished,
    /// A budget gate closed the turn.
    Budget(Budget),
    Stopped(StopReason),
    /// The model chain failed; the text says why and what to do.
    Failed(String),
    /// The turn kept repeating itself after being told; the text names what.
    Stuck(String),
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
            Ended::Failed(why) | Ended::Stuck(why) => Some(why.clone()),
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
