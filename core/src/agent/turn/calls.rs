//! One reply's tool calls: consecutive read-only calls side by side, the rest alone,
//! steering checked before each group, results stored and returned in the order asked.

use super::{CANCELLED, ESCALATE, SKIPPED, Turn, stopped};
use crate::agent::history;
use crate::agent::outcome::{Budget, Ended};
use crate::agent::stuck::Verdict;
use crate::provider::Part;
use crate::store;
use crate::tools::ToolContext;

impl Turn<'_> {
    /// Run one reply's tool calls. Consecutive read-only calls run side by side; any
    /// other call runs alone. Results are stored and returned in the order the model
    /// asked. Steering is checked before each group.
    pub(super) async fn run_tools(
        &mut self,
        calls: Vec<(String, String, serde_json::Value)>,
    ) -> Option<Ended> {
        let ctx = ToolContext {
            workspace: self.agent.workspace.clone(),
            origin: Some(self.first.target.clone()),
            caller: self.caller(),
            taint: self.taint.clone(),
            pictures: Default::default(),
            session: Some(self.session_id),
            mode: self.agent.modes.get(self.session_id),
        };
        let tools = &self.agent.tools;
        let mut ended = None;
        let mut escalate = false;
        let mut verdict = Verdict::Fine;
        let named: Vec<(&str, &serde_json::Value)> = calls
            .iter()
            .map(|(_, name, args)| (name.as_str(), args))
            .collect();
        for batch in tools.batches(&named) {
            let group = &calls[batch];
            let outcomes: Vec<(String, bool)> = if ended.is_some() {
                group
                    .iter()
                    .map(|_| (CANCELLED.to_string(), true))
                    .collect()
            } else if self.queue.steering_pending() {
                // Checkpoint: before each tool call (after the previous result).
                group.iter().map(|_| (SKIPPED.to_string(), true)).collect()
            } else if group.len() == 1 && group[0].1 == ESCALATE {
                escalate = true;
                vec![(
                    "Escalated: a stronger model takes over this turn.".to_string(),
                    false,
                )]
            } else {
                for (_, name, _) in group {
                    tracing::info!(tool = %name, "tool call");
                }
                let running =
                    futures_util::future::join_all(group.iter().map(|(id, name, args)| {
                        tools.execute(id, name, args.clone(), &ctx, &self.agent.guard)
                    }));
                tokio::select! {
                    biased;
                    _ = self.control.token().cancelled() => {
                        ended = Some(stopped(self.control));
                        group.iter().map(|_| (CANCELLED.to_string(), true)).collect()
                    }
                    _ = tokio::time::sleep_until(self.deadline) => {
                        ended = Some(Ended::Budget(Budget::Time(self.agent.limits.max_turn.as_secs())));
                        group.iter().map(|_| (CANCELLED.to_string(), true)).collect()
                    }
                    outcomes = running => outcomes.into_iter().map(|o| (o.content, o.is_error)).collect(),
                }
            };
            for ((id, name, args), (content, is_error)) in group.iter().zip(outcomes) {
                count(tools, name, &content, is_error);
                self.reply.tool_output(id, &content, is_error).await;
                // Calls that never ran are no repeats of anything.
                if content != SKIPPED && content != CANCELLED {
                    let seen = self.watch.call(name, args, &content, is_error);
                    verdict = worse(verdict, seen);
                }
                let result = Part::ToolResult {
                    call_id: id.clone(),
                    name: name.clone(),
                    content,
                    is_error,
                };
                if let Err(err) = self
                    .agent
                    .store
                    .append_as(
                        self.session_id,
                        store::Role::Tool,
                        vec![result.clone()],
                        Some(self.origin.tier),
                    )
                    .await
                {
                    ended.get_or_insert(Ended::Failed(err.into()));
                }
                history::push_user(&mut self.messages, result);
            }
            self.show_pictures(&ctx);
        }
        if escalate {
            self.route
                .escalate(self.agent, "the light model asked for it");
        }
        verdict = worse(verdict, self.watch.end_step());
        if ended.is_none() {
            ended = self.heed(verdict);
        }
        ended
    }
}

impl Turn<'_> {
    /// The pictures this group's calls made (a browser screenshot), after their
    /// results, when every model of the turn's chain sees images; else only their
    /// results' words, which name the saved files. Shown in this turn only: the
    /// transcript keeps the results' words.
    fn show_pictures(&mut self, ctx: &ToolContext) {
        let pictures = ctx.pictures.take();
        if pictures.is_empty() {
            return;
        }
        let chain = &self.route.chain;
        let sees = self
            .agent
            .models
            .seeing_part(chain)
            .is_some_and(|seeing| std::sync::Arc::ptr_eq(&seeing, chain));
        if !sees {
            return;
        }
        self.route.images = true;
        for (path, data) in pictures.into_iter().take(crate::media::image::MAX_IMAGES) {
            history::push_user(
                &mut self.messages,
                Part::Image {
                    path,
                    data: Some(data),
                },
            );
        }
    }
}

/// Count a call in `/metrics`, under a name no model can make up.
fn count(tools: &crate::tools::Registry, name: &str, content: &str, is_error: bool) {
    let tool = match name {
        ESCALATE => ESCALATE,
        _ => tools.metric_name(name),
    };
    let outcome = match content {
        SKIPPED => "skipped",
        CANCELLED => "cancelled",
        _ if is_error => "error",
        _ => "ok",
    };
    crate::metrics::tool_call(tool, outcome);
}

/// The verdict that asks more of the loop.
fn worse(a: Verdict, b: Verdict) -> Verdict {
    match (&a, &b) {
        (Verdict::Stop(_), _) => a,
        (_, Verdict::Stop(_)) => b,
        (Verdict::Warn(_), _) => a,
        _ => b,
    }
}
