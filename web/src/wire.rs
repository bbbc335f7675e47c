//! One `/api/chat` response on the wire: the outbound messages meant for it turned into
//! AI SDK v6 UI message chunks (camelCase, only the schema's keys), always well-formed
//! whatever the producer did — `start` first, every delta inside an open block, every
//! open text and reasoning block closed before `finish-step`, `error` and `finish` (the
//! AI SDK forgets open blocks at `finish-step` and a reader stops at `error`), and one
//! `finish` last, also when the stream is cut. It decides nothing about which messages
//! belong to the response (`relay` and `chat` do).

use pincer_channels::OutboundBody;
use pincer_channels::chunk::{Chunk, FinishReason};
use serde_json::{Value, json};

/// The chunks sent so far on one response, as far as they constrain the next ones.
#[derive(Default)]
pub(crate) struct Wire {
    /// `start` went out.
    started: bool,
    /// `finish` went out: nothing more may.
    finished: bool,
    /// Text blocks opened and not yet ended, in order.
    texts: Vec<String>,
    /// Reasoning blocks likewise.
    reasonings: Vec<String>,
    /// Notes made here (a command's answer, a notice), for their block ids.
    notes: u32,
    /// Something of the response's own answer went out (a turn's start, a text).
    answered: bool,
}

impl Wire {
    /// Whether anything of the request's own answer has gone out yet.
    pub(crate) fn answered(&self) -> bool {
        self.answered
    }

    /// Whether `finish` has gone out.
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    /// The chunks for one outbound message.
    pub(crate) fn chunks(&mut self, body: OutboundBody) -> Vec<Value> {
        let mut out = Vec::new();
        // A reaction is for chats that show one on the person's message.
        if self.finished || matches!(body, OutboundBody::React { .. }) {
            return out;
        }
        if !self.started {
            self.started = true;
            if let OutboundBody::Chunk(start @ Chunk::Start { .. }) = &body {
                self.answered = true;
                out.extend(chunk_json(start));
                return out;
            }
            out.push(json!({"type": "start"}));
        }
        match body {
            OutboundBody::Chunk(chunk) => self.chunk(chunk, &mut out),
            OutboundBody::Text(text) | OutboundBody::Notice(text) => self.note(&text, &mut out),
            OutboundBody::Error(text) => {
                self.answered = true;
                self.close(&mut out);
                out.push(json!({"type": "error", "errorText": text}));
            }
            OutboundBody::Done => {
                self.finish(json!({"type": "finish", "finishReason": "stop"}), &mut out)
            }
            OutboundBody::File { media, .. } => {
                let caption = media.caption.as_deref().unwrap_or_default();
                let line = format!(
                    "[file] {} ({} bytes) {caption}",
                    media.file_name,
                    media.bytes.len()
                );
                self.note(line.trim_end(), &mut out);
            }
            OutboundBody::React { .. } => {}
        }
        out
    }

    /// The response is cut before its answer ended (`why` says how): its open blocks are
    /// closed, an `error` says why, and `finish` ends it.
    pub(crate) fn cut(&mut self, why: &str) -> Vec<Value> {
        let mut out = self.chunks(OutboundBody::Error(why.to_string()));
        self.finish(json!({"type": "finish", "finishReason": "error"}), &mut out);
        out
    }

    fn chunk(&mut self, chunk: Chunk, out: &mut Vec<Value>) {
        match &chunk {
            // A second `start` would reset the reader's message.
            Chunk::Start { .. } => return,
            Chunk::TextStart { id } | Chunk::TextDelta { id, .. } => {
                if !self.texts.contains(id) {
                    self.texts.push(id.clone());
                    out.push(json!({"type": "text-start", "id": id}));
                }
                if matches!(chunk, Chunk::TextStart { .. }) {
                    return;
                }
            }
            Chunk::TextEnd { id, .. } => {
                let Some(at) = self.texts.iter().position(|open| open == id) else {
                    return;
                };
                self.texts.remove(at);
            }
            Chunk::ReasoningStart { id } | Chunk::ReasoningDelta { id, .. } => {
                if !self.reasonings.contains(id) {
                    self.reasonings.push(id.clone());
                    out.push(json!({"type": "reasoning-start", "id": id}));
                }
                if matches!(chunk, Chunk::ReasoningStart { .. }) {
                    return;
                }
            }
            Chunk::ReasoningEnd { id } => {
                let Some(at) = self.reasonings.iter().position(|open| open == id) else {
                    return;
                };
                self.reasonings.remove(at);
            }
            Chunk::FinishStep | Chunk::Error { .. } => self.close(out),
            Chunk::Finish { .. } => {
                if let Some(finish) = chunk_json(&chunk) {
                    self.finish(finish, out);
                }
                return;
            }
            _ => {}
        }
        self.answered = true;
        out.extend(chunk_json(&chunk));
    }

    /// A message of its own: a block with one delta.
    fn note(&mut self, text: &str, out: &mut Vec<Value>) {
        self.answered = true;
        self.notes += 1;
        let id = format!("note-{}", self.notes);
        out.push(json!({"type": "text-start", "id": id}));
        out.push(json!({"type": "text-delta", "id": id, "delta": text}));
        out.push(json!({"type": "text-end", "id": id}));
    }

    /// End every open block, reasoning first (it came before the text it led to).
    fn close(&mut self, out: &mut Vec<Value>) {
        for id in self.reasonings.drain(..) {
            out.push(json!({"type": "reasoning-end", "id": id}));
        }
        for id in self.texts.drain(..) {
            out.push(json!({"type": "text-end", "id": id}));
        }
    }

    fn finish(&mut self, finish: Value, out: &mut Vec<Value>) {
        self.close(out);
        self.finished = true;
        out.push(finish);
    }
}

/// One chunk on the AI SDK v6 wire (camelCase fields, only the schema's keys).
pub(crate) fn chunk_json(chunk: &Chunk) -> Option<Value> {
    Some(match chunk {
        Chunk::Start { message_id } => json!({"type": "start", "messageId": message_id}),
        Chunk::StartStep => json!({"type": "start-step"}),
        Chunk::TextStart { id } => json!({"type": "text-start", "id": id}),
        Chunk::TextDelta { id, delta } => json!({"type": "text-delta", "id": id, "delta": delta}),
        Chunk::TextEnd { id, .. } => json!({"type": "text-end", "id": id}),
        Chunk::ReasoningStart { id } => json!({"type": "reasoning-start", "id": id}),
        Chunk::ReasoningDelta { id, delta } => {
            json!({"type": "reasoning-delta", "id": id, "delta": delta})
        }
        Chunk::ReasoningEnd { id } => json!({"type": "reasoning-end", "id": id}),
        Chunk::ToolInputStart {
            tool_call_id,
            tool_name,
        } => json!({"type": "tool-input-start", "toolCallId": tool_call_id, "toolName": tool_name}),
        Chunk::ToolInputAvailable {
            tool_call_id,
            tool_name,
            input,
        } => json!({"type": "tool-input-available", "toolCallId": tool_call_id,
                     "toolName": tool_name, "input": input}),
        Chunk::ToolOutputAvailable {
            tool_call_id,
            output,
        } => json!({"type": "tool-output-available", "toolCallId": tool_call_id, "output": output}),
        Chunk::ToolOutputError {
            tool_call_id,
            error_text,
        } => {
            json!({"type": "tool-output-error", "toolCallId": tool_call_id, "errorText": error_text})
        }
        Chunk::FinishStep => json!({"type": "finish-step"}),
        Chunk::Retract => json!({"type": "data-retract", "data": null, "transient": true}),
        Chunk::Finish { reason, usage } => {
            let reason = match reason {
                FinishReason::Stop => "stop",
                FinishReason::Length => "length",
                FinishReason::Error => "error",
                FinishReason::Aborted => "other",
            };
            json!({"type": "finish", "finishReason": reason, "messageMetadata": {
                "usage": {
                    "inputTokens": usage.input_tokens,
                    "outputTokens": usage.output_tokens,
                    "cacheReadTokens": usage.cache_read_tokens,
                    "cacheWriteTokens": usage.cache_write_tokens,
                    "costUsd": usage.cost_usd,
                },
                "model": usage.model,
            }})
        }
        Chunk::Error { error_text } => json!({"type": "error", "errorText": error_text}),
    })
}

#[cfg(test)]
mod tests {
    use pincer_channels::TurnUsage;

    use super::*;

    fn chunk(chunk: Chunk) -> OutboundBody {
        OutboundBody::Chunk(chunk)
    }

    fn text(id: &str, delta: &str) -> OutboundBody {
        chunk(Chunk::TextDelta {
            id: id.into(),
            delta: delta.into(),
        })
    }

    /// The rules the AI SDK's reader holds a stream to, and what it forgets: `start`
    /// first and `finish` last, deltas and ends inside an open block, and (stricter than
    /// the reader, which would leave such a part streaming) no block open at
    /// `finish-step`, `error` or `finish`.
    fn check(chunks: &[Value]) {
        let mut open: Vec<String> = Vec::new();
        let kinds: Vec<&str> = chunks.iter().filter_map(|c| c["type"].as_str()).collect();
        assert_eq!(kinds.first(), Some(&"start"), "{kinds:?}");
        assert_eq!(kinds.last(), Some(&"finish"), "{kinds:?}");
        for c in chunks {
            let kind = c["type"].as_str().unwrap_or_default();
            let id = format!("{}:{}", kind.split('-').next().unwrap_or_default(), c["id"]);
            match kind {
                "text-start" | "reasoning-start" => open.push(id),
                "text-delta" | "reasoning-delta" => {
                    assert!(open.contains(&id), "{c} outside its block")
                }
                "text-end" | "reasoning-end" => {
                    assert!(open.contains(&id), "{c} outside its block");
                    open.retain(|o| *o != id);
                }
                "finish-step" | "error" | "finish" => {
                    assert!(open.is_empty(), "{open:?} open at {c}")
                }
                _ => {}
            }
        }
    }

    fn run(wire: &mut Wire, bodies: Vec<OutboundBody>) -> Vec<Value> {
        bodies.into_iter().flat_map(|b| wire.chunks(b)).collect()
    }

    #[test]
    fn a_stream_cut_mid_text_closes_its_blocks_then_says_why_and_finishes() {
        let mut wire = Wire::default();
        let mut chunks = run(
            &mut wire,
            vec![
                chunk(Chunk::Start {
                    message_id: "m".into(),
                }),
                chunk(Chunk::StartStep),
                chunk(Chunk::ReasoningStart { id: "r".into() }),
                text("t", "half a sen"),
            ],
        );
        chunks.extend(wire.cut("cut off"));
        check(&chunks);
        let kinds: Vec<&str> = chunks.iter().filter_map(|c| c["type"].as_str()).collect();
        assert_eq!(
            kinds[kinds.len() - 4..],
            ["reasoning-end", "text-end", "error", "finish"]
        );
        assert!(wire.finished());
        assert!(
            wire.chunks(text("t", "more")).is_empty(),
            "nothing after finish"
        );
    }

    #[test]
    fn what_a_turn_leaves_open_is_closed_at_its_step_and_stray_chunks_are_mended() {
        let mut wire = Wire::default();
        let chunks = run(
            &mut wire,
            vec![
                // A notice before the turn's start: the wire opens the message itself, and
                // the turn's own start is not sent a second time.
                OutboundBody::Notice("heads up".into()),
                chunk(Chunk::Start {
                    message_id: "m".into(),
                }),
                chunk(Chunk::StartStep),
                // A delta whose start never came.
                text("t", "Part"),
                // Stopped: no text-end from the producer.
                OutboundBody::Notice("Stopped.".into()),
                chunk(Chunk::FinishStep),
                chunk(Chunk::TextEnd {
                    id: "t".into(),
                    text: "Part".into(),
                }),
                chunk(Chunk::Finish {
                    reason: FinishReason::Aborted,
                    usage: TurnUsage::default(),
                }),
            ],
        );
        check(&chunks);
        let starts = chunks.iter().filter(|c| c["type"] == "start").count();
        assert_eq!(starts, 1, "{chunks:?}");
    }

    #[test]
    fn a_command_answer_is_a_whole_message() {
        let mut wire = Wire::default();
        let chunks = run(
            &mut wire,
            vec![
                OutboundBody::Text("Nothing is running.".into()),
                OutboundBody::Done,
            ],
        );
        check(&chunks);
        assert!(wire.answered() && wire.finished());
    }
}
