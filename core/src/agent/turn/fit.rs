//! Keeping a turn's requests inside the model's context window: before each call the
//! request is estimated (corrected by what the server counted last time, `window::Seen`)
//! against `agent.compact_at` of the chain's smallest window; over it, old tool results
//! are pruned, then the older conversation is summarised down to `window::TARGET` of the
//! window. When the server still says the context is too long, the window it names is
//! learned, the conversation is compacted once more and the call retried; failing that,
//! what the turn added is set aside (kept in the store, out of the model's view), so a
//! failed turn never leaves the conversation larger than it found it.

use super::Turn;
use crate::agent::compact::Keep;
use crate::agent::outcome::{Ended, TurnError};
use crate::agent::window;
use crate::provider::{ChatRequest, ProviderError};
use crate::store;

impl Turn<'_> {
    /// The chain's smallest context window, as assumed or as its servers said; and the
    /// label whose token counts correct the estimate (the chain's first).
    pub(super) fn window(&self) -> (u64, String) {
        let caps = &self.agent.models.caps;
        let seen = &self.agent.seen;
        let labels: Vec<&str> = self.route.chain.labels().collect();
        let window = labels
            .iter()
            .map(|label| seen.window(label, caps.context_tokens(label)))
            .min()
            .unwrap_or(crate::capabilities::DEFAULT_CONTEXT_TOKENS);
        (
            window,
            labels.first().map(|l| l.to_string()).unwrap_or_default(),
        )
    }

    /// How many tokens of the conversation a compaction keeps word for word: what is
    /// left of `window::TARGET` of the window after the system prompt, the tools and
    /// the summary.
    fn keep(&self, request: &ChatRequest, window: u64, label: &str) -> Keep {
        let bare = ChatRequest {
            messages: Vec::new(),
            ..request.clone()
        };
        let fixed = self.agent.seen.size(label, window::Estimate::of(&bare));
        let target = (window as f64 * window::TARGET) as u64;
        let summary = (window / 8).min(1024);
        Keep::Tokens {
            budget: target.saturating_sub(fixed + summary),
            window,
        }
    }

    /// The next request, made to fit `agent.compact_at` of the chain's smallest context
    /// window: old tool results pruned first, then the older conversation summarised
    /// (once a turn). A request still over goes as it is; the provider's answer decides.
    pub(super) async fn fitted_request(&mut self) -> Result<ChatRequest, Ended> {
        let mut request = self.request();
        let (window, label) = self.window();
        let limit = (window as f64 * self.agent.limits.compact_at) as u64;
        let size = |r: &ChatRequest| self.agent.seen.size(&label, window::Estimate::of(r));
        if size(&request) <= limit {
            return Ok(request);
        }
        match self.agent.prune(self.session_id).await {
            Ok(true) => {
                self.reload().await?;
                request = self.request();
                if size(&request) <= limit {
                    return Ok(request);
                }
            }
            Ok(false) => {}
            Err(err) => tracing::warn!("old tool results not pruned: {err}"),
        }
        if !self.window_compacted {
            self.window_compacted = true;
            let keep = self.keep(&request, window, &label);
            match self
                .agent
                .compact_keeping(self.session_id, &self.spender(), keep)
                .await
            {
                Ok(Some(done)) => {
                    tracing::info!(
                        messages = done.messages,
                        "the conversation was summarised to fit the context window"
                    );
                    self.reload().await?;
                    request = self.request();
                }
                Ok(None) => {}
                Err(err) => tracing::warn!("compaction before the context limit failed: {err}"),
            }
        }
        Ok(request)
    }

    /// The server said the context is too long: learn the window it named, compact to
    /// fit and try again (`Ok(None)`), once a turn; else set aside what the turn added
    /// and fail, saying so.
    pub(super) async fn overflowed(
        &mut self,
        err: ProviderError,
        estimated: window::Estimate,
    ) -> Result<Option<(crate::provider::ChatResponse, String)>, Ended> {
        let (_, label) = self.window();
        if let Some(told) = err.context_limit() {
            self.agent.seen.learn_window(&label, told);
        }
        // What the server counted of the refused request corrects the estimate.
        if let Some(counted) = err.prompt_tokens() {
            self.agent.seen.calibrate(&label, estimated, counted);
        }
        if !self.compacted {
            self.compacted = true;
            let (window, label) = self.window();
            let spender = self.spender();
            // By the window; where that leaves nothing to summarise (the estimate says
            // it fits, the server says it does not), the last few messages kept.
            for keep in [self.keep(&self.request(), window, &label), Keep::Messages] {
                if let Ok(Some(_)) = self
                    .agent
                    .compact_keeping(self.session_id, &spender, keep)
                    .await
                {
                    self.reload().await?;
                    return Ok(None);
                }
            }
        }
        let (window, _) = self.window();
        let named = match self.agent.seen.told(&label) {
            Some(_) => format!("the model's window of {window} tokens"),
            None => "the model's window".to_string(),
        };
        self.set_aside().await;
        Err(Ended::Failed(TurnError::TooLong {
            said: err.message,
            window: named,
        }))
    }

    /// Take what this turn added out of the model's view (the store keeps it): its
    /// messages, and what was written after the first of them. Others' messages that
    /// arrived meanwhile stay.
    async fn set_aside(&mut self) {
        let store = &self.agent.store;
        let history = match store.history(self.session_id).await {
            Ok(history) => history,
            Err(err) => return tracing::warn!("cannot set the failed turn aside: {err}"),
        };
        let Some(from) = history
            .iter()
            .filter(|m| self.answered.contains(&m.id))
            .map(|m| m.position)
            .min()
        else {
            return;
        };
        let ids: Vec<i64> = history
            .iter()
            .filter(|m| {
                self.answered.contains(&m.id) || (m.role != store::Role::User && m.position > from)
            })
            .map(|m| m.id)
            .collect();
        match store.set_status(ids, store::Status::Ignored).await {
            // Not answered, and not to be marked so: they are set aside.
            Ok(()) => self.answered.clear(),
            Err(err) => tracing::warn!("cannot set the failed turn aside: {err}"),
        }
    }
}
