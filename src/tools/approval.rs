//! Approvals: a call the permission rules mark "ask" waits for the owner's answer —
//! allow once, always (stored, so the same call never asks again), or no. Who asks
//! depends on where the turn came from: each channel that can ask registers an
//! approver (the terminal asks y/n when it is a real terminal). Where nobody can be
//! asked (piped input, `chat -m`, scheduled runs), "ask" is a no with the reason.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    Once,
    Always,
    Deny,
}

/// One question to the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub tool: String,
    /// What the call would do, in a line ("git push origin", "notes/plan.md").
    pub subject: String,
}

#[async_trait]
pub trait Approver: Send + Sync {
    /// Ask and wait; no answer in time is a no.
    async fn approve(&self, request: &Request) -> Approval;
}

/// The approver of each channel that has one, registered at start-up.
#[derive(Default)]
pub struct Approvers {
    by_channel: RwLock<HashMap<String, Arc<dyn Approver>>>,
}

impl Approvers {
    pub fn register(&self, channel: &str, approver: Arc<dyn Approver>) {
        if let Ok(mut map) = self.by_channel.write() {
            map.insert(channel.to_string(), approver);
        }
    }

    pub fn get(&self, channel: &str) -> Option<Arc<dyn Approver>> {
        self.by_channel
            .read()
            .ok()
            .and_then(|m| m.get(channel).cloned())
    }
}

/// The terminal asks on its own line and takes the next line typed as the answer.
pub struct TerminalApprover(pub Arc<pincer_channels::Terminal>);

/// How long the terminal waits for an answer.
const TERMINAL_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &Request) -> Approval {
        let question = format!(
            "\nAllow {} `{}`? [y] once, [a] always, [N] no: ",
            request.tool, request.subject
        );
        match self
            .0
            .ask(&question, TERMINAL_WAIT)
            .await
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("y" | "yes") => Approval::Once,
            Some("a" | "always") => Approval::Always,
            _ => Approval::Deny,
        }
    }
}
