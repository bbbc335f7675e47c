//! What a model call answered, made ready for the loop: a reply the runaway guard
//! stopped on the stream keeps only what came before the stop — and, ending as a
//! finished reply, is never sent back to "continue" — and the tool calls a model wrote
//! as text become calls (`text_calls`), unless the reply ran away: what a runaway kept
//! is never run. The turn calls `output` on every answer.

use pincer_config::TextToolCalls;

use super::Turn;
use crate::agent::runaway::Why;
use crate::agent::text_calls;
use crate::provider::{ChatResponse, Part, StopReason};

/// The stop reason of a call the turn hung up on.
const HUNG_UP: &str = "hung up on";

/// What a call the turn hung up on answers until `output` fills it in: no parts, and
/// no label (the chain did not say which of its models was streaming).
pub(super) fn hung_up() -> (ChatResponse, String) {
    let response = ChatResponse {
        parts: Vec::new(),
        stop: StopReason::Other(HUNG_UP.into()),
        usage: Default::default(),
    };
    (response, String::new())
}

impl Turn<'_> {
    /// `answer` as the loop uses it.
    pub(super) fn output(&mut self, answer: (ChatResponse, String)) -> (ChatResponse, String) {
        let (mut response, mut label) = answer;
        let ended = response.stop != StopReason::Other(HUNG_UP.into());
        // Whether the reply ran away: not a stray end-of-message token it ended on.
        let mut ran_away = false;
        match self.reply.take_cut(ended) {
            Some(cut) => {
                ran_away = cut.ran_on || !ended || !matches!(cut.why, Why::Template(_));
                tracing::warn!(
                    session_id = self.session_id,
                    why = ?cut.why,
                    kept = cut.kept.len(),
                    "the model's reply ran away; stopped it on the stream"
                );
                response
                    .parts
                    .retain(|part| matches!(part, Part::Reasoning { .. }));
                response.parts.push(Part::Text { text: cut.kept });
                // Cut short on purpose: a finished reply, not one to continue.
                response.stop = StopReason::EndTurn;
                if label.is_empty() {
                    label = self.route.chain.labels().next().unwrap_or_default().into();
                }
            }
            // The stream ended whole: what the guard still held goes on.
            None => self.reply.call_ended(),
        }
        if ran_away {
            return (response, label);
        }
        let mode = self.agent.models.caps.of(&label).text_tool_calls;
        let response = text_calls::read(
            response,
            self.reply.offered(),
            mode,
            &mut self.text_call_ids,
        );
        (response, label)
    }

    /// How the stream treats calls written as text: the way of the chain's most willing
    /// model, since which of them answers is known only at the end (a call must never
    /// stream by; JSON held back that is not one is shown with the finished text).
    pub(super) fn stream_mode(&self) -> TextToolCalls {
        let caps = &self.agent.models.caps;
        self.route
            .chain
            .labels()
            .map(|label| caps.of(label).text_tool_calls)
            .max_by_key(|mode| match mode {
                TextToolCalls::Off => 0,
                TextToolCalls::Auto => 1,
                TextToolCalls::On => 2,
            })
            .unwrap_or_default()
    }
}
