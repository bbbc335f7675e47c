//! One turn as a stream of events, shaped like the AI SDK v6 UI message chunks: `start`,
//! per model call `start-step` … `finish-step`, text and reasoning in `*-start`,
//! `*-delta`, `*-end` blocks, a tool call as `tool-input-start` then
//! `tool-input-available` then `tool-output-available` or `tool-output-error`, and one
//! `finish` (or `error` first). Every consumer — chat channels, the terminal, the
//! embedding protocols, the web panel — reads this one stream; none re-derives it.
//!
//! Ordering: a block's deltas and end follow its start with the same id; a tool's output
//! follows its `tool-input-available`; `finish-step` closes a step after its tools ran.
//! Two fields are Pincer's own and are not sent on the AI SDK wire: `TextEnd::text` (the
//! block whole, as stored: cleaned and scrubbed, which the deltas may differ from) and
//! `Retract` (the step's streamed text is abandoned; another model answers).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// The turn began; its assistant message is `message_id`.
    Start {
        message_id: String,
    },
    /// A model call began.
    StartStep,
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    /// The text block is complete; `text` is it whole.
    TextEnd {
        id: String,
        text: String,
    },
    ReasoningStart {
        id: String,
    },
    ReasoningDelta {
        id: String,
        delta: String,
    },
    ReasoningEnd {
        id: String,
    },
    /// The model began a tool call; its input is still coming.
    ToolInputStart {
        tool_call_id: String,
        tool_name: String,
    },
    /// The call's input is complete.
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    ToolOutputAvailable {
        tool_call_id: String,
        output: String,
    },
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
    },
    /// A model call and its tools are done.
    FinishStep,
    /// What this step streamed so far is abandoned: another model answers instead.
    Retract,
    /// The turn ended.
    Finish {
        reason: FinishReason,
        usage: TurnUsage,
    },
    /// The turn could not finish; the text says why and what to do.
    Error {
        error_text: String,
    },
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FinishReason {
    /// The model answered.
    #[default]
    Stop,
    /// A budget stopped it: model calls, cost or time.
    Length,
    /// It failed (an `Error` chunk came first).
    Error,
    /// Someone stopped it (`/stop`, an interrupt, shutdown).
    Aborted,
}

/// What a turn used, for `finish`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub cost_usd: f64,
    /// Model calls made.
    pub model_calls: u32,
    /// The last model that answered ("provider/model").
    pub model: Option<String>,
    /// The turn's wall-clock time, and the part spent waiting on models.
    pub duration_ms: u64,
    pub model_ms: u64,
    /// The last model call's tokens: how full its context was (the totals above add
    /// every call up).
    pub last_call: CallTokens,
}

impl TurnUsage {
    /// Add one model call's tokens and cost.
    pub fn record(&mut self, model: &str, tokens: CallTokens, cost_usd: f64) {
        self.input_tokens += tokens.input;
        self.output_tokens += tokens.output;
        self.cache_read_tokens += tokens.cache_read;
        self.cache_write_tokens += tokens.cache_write;
        self.cost_usd += cost_usd;
        self.model_calls += 1;
        self.model = Some(model.to_string());
        self.last_call = tokens;
    }
}

/// One model call's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallTokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Chunk {
    /// The AI SDK v6 `type` of this chunk; `None` for Pincer's own (`Retract`).
    pub fn kind(&self) -> Option<&'static str> {
        Some(match self {
            Chunk::Start { .. } => "start",
            Chunk::StartStep => "start-step",
            Chunk::TextStart { .. } => "text-start",
            Chunk::TextDelta { .. } => "text-delta",
            Chunk::TextEnd { .. } => "text-end",
            Chunk::ReasoningStart { .. } => "reasoning-start",
            Chunk::ReasoningDelta { .. } => "reasoning-delta",
            Chunk::ReasoningEnd { .. } => "reasoning-end",
            Chunk::ToolInputStart { .. } => "tool-input-start",
            Chunk::ToolInputAvailable { .. } => "tool-input-available",
            Chunk::ToolOutputAvailable { .. } => "tool-output-available",
            Chunk::ToolOutputError { .. } => "tool-output-error",
            Chunk::FinishStep => "finish-step",
            Chunk::Finish { .. } => "finish",
            Chunk::Error { .. } => "error",
            Chunk::Retract => return None,
        })
    }
}

/// The ordering rules of a chunk log, checked: every delta and end follows its block's
/// start, every tool output follows its input, the stream starts with `start` and ends
/// with `finish`. `Err` names the first chunk that breaks one. For tests of every
/// consumer (and of the producer).
pub fn check_order(chunks: &[Chunk]) -> Result<(), OutOfOrder> {
    use std::collections::HashSet;
    let mut open_text = HashSet::new();
    let mut open_reasoning = HashSet::new();
    let mut inputs = HashSet::new();
    let mut started_tools = HashSet::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let fail = |rule: &'static str| {
            Err(OutOfOrder::Chunk {
                index: i,
                chunk: Box::new(chunk.clone()),
                rule,
            })
        };
        match chunk {
            Chunk::Start { .. } if i != 0 => return fail("start is not first"),
            _ if i == 0 && !matches!(chunk, Chunk::Start { .. }) => {
                return fail("the stream does not open with start");
            }
            Chunk::TextStart { id } if !open_text.insert(id.clone()) => {
                return fail("the text block was started twice");
            }
            Chunk::TextDelta { id, .. } if !open_text.contains(id) => {
                return fail("text-delta before its text-start");
            }
            Chunk::TextEnd { id, .. } if !open_text.remove(id) => {
                return fail("text-end before its text-start");
            }
            Chunk::ReasoningStart { id } if !open_reasoning.insert(id.clone()) => {
                return fail("the reasoning block was started twice");
            }
            Chunk::ReasoningDelta { id, .. } if !open_reasoning.contains(id) => {
                return fail("reasoning-delta before its reasoning-start");
            }
            Chunk::ReasoningEnd { id } if !open_reasoning.remove(id) => {
                return fail("reasoning-end before its reasoning-start");
            }
            Chunk::ToolInputStart { tool_call_id, .. } => {
                started_tools.insert(tool_call_id.clone());
            }
            Chunk::ToolInputAvailable { tool_call_id, .. } => {
                if !started_tools.contains(tool_call_id) {
                    return fail("tool-input-available before its tool-input-start");
                }
                inputs.insert(tool_call_id.clone());
            }
            Chunk::ToolOutputAvailable { tool_call_id, .. }
            | Chunk::ToolOutputError { tool_call_id, .. }
                if !inputs.contains(tool_call_id) =>
            {
                return fail("tool output before its tool-input-available");
            }
            Chunk::Finish { .. } if i + 1 != chunks.len() => return fail("finish is not last"),
            _ => {}
        }
    }
    match chunks.last() {
        Some(Chunk::Finish { .. }) => Ok(()),
        _ => Err(OutOfOrder::NoFinish),
    }
}

/// The first break of a chunk log's ordering rules, as `check_order` found it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OutOfOrder {
    /// The chunk at `index` breaks `rule`. Boxed: a chunk is large, and the `Ok` side
    /// of every check pays for the error's size.
    #[error("chunk {index} ({chunk:?}): {rule}")]
    Chunk {
        index: usize,
        chunk: Box<Chunk>,
        rule: &'static str,
    },
    #[error("the stream does not end with finish")]
    NoFinish,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(id: &str) -> [Chunk; 3] {
        [
            Chunk::TextStart { id: id.into() },
            Chunk::TextDelta {
                id: id.into(),
                delta: "hi".into(),
            },
            Chunk::TextEnd {
                id: id.into(),
                text: "hi".into(),
            },
        ]
    }

    #[test]
    fn a_well_made_stream_passes_and_a_broken_one_is_named() {
        let mut chunks = vec![Chunk::Start {
            message_id: "m".into(),
        }];
        chunks.extend(text("t0"));
        chunks.push(Chunk::ToolInputStart {
            tool_call_id: "c".into(),
            tool_name: "read".into(),
        });
        chunks.push(Chunk::ToolInputAvailable {
            tool_call_id: "c".into(),
            tool_name: "read".into(),
            input: Value::Null,
        });
        chunks.push(Chunk::ToolOutputAvailable {
            tool_call_id: "c".into(),
            output: "x".into(),
        });
        chunks.push(Chunk::Finish {
            reason: FinishReason::Stop,
            usage: TurnUsage::default(),
        });
        assert_eq!(check_order(&chunks), Ok(()));
        let mut early = chunks.clone();
        early.swap(4, 6);
        assert!(check_order(&early).is_err());
        let mut delta_first = chunks.clone();
        delta_first.swap(1, 2);
        assert!(
            check_order(&delta_first)
                .unwrap_err()
                .to_string()
                .contains("before its text-start")
        );
    }
}
