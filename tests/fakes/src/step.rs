//! The script: what the fake model answers to one request.
//!
//! A `Step` is plain data. It says *what* happens (text, tool calls, an error, a stall);
//! turning it into either provider's bytes is `reply`'s job, so this file must not know
//! any wire format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One scripted answer. Queued with `FakeModel::push` (or `POST /_fake/script`) and consumed
/// first-in first-out, one per chat request, whichever wire format the request used.
///
/// The JSON form is serde's externally tagged form with snake_case names, e.g.
/// `{"text":"hi"}`, `{"tool_calls":{"calls":[["read_file",{"path":"a"}]]}}`, `"stall"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Stream this text as the reply, one word per chunk; stop = `end_turn` / `"stop"`.
    Text(String),
    /// Reply with tool calls (optionally after some text); stop = `tool_use` / `"tool_calls"`.
    /// Ids are numbered across the fake's life: `call_1`, `call_2` … / `toolu_1` ….
    ToolCalls {
        #[serde(default)]
        text: Option<String>,
        /// `(tool name, arguments)`.
        calls: Vec<(String, Value)>,
    },
    /// Stream the text, then stop with `max_tokens` / `"length"`.
    Truncated(String),
    /// A plain HTTP error before any streaming. An empty `body` becomes the provider's own
    /// error JSON for that status; `retry_after` (seconds) sets the `Retry-After` header.
    Error {
        status: u16,
        #[serde(default)]
        body: String,
        #[serde(default)]
        retry_after: Option<u64>,
    },
    /// Wait this long before answering at all (no headers are sent meanwhile), then do `then`.
    Delay { ms: u64, then: Box<Step> },
    /// Stream one word per chunk with a pause between chunks.
    SlowText { text: String, chunk_delay_ms: u64 },
    /// Send headers and one text chunk, then hang until the fake shuts down (idle timeouts).
    Stall,
    /// Stream about half the text, then drop the connection mid-body (the chunked body is
    /// never terminated, so the client sees a transport error) — no final event, no `[DONE]`.
    Cut(String),
    /// Stream about half the text, then end the HTTP body *cleanly* without a final event or
    /// `[DONE]`: a client must notice the missing end rather than take the part as complete.
    Unfinished(String),
    /// 200 and an SSE stream whose `data:` lines are not valid JSON.
    Malformed,
    /// A model that runs away: stream `text`, then `repeat` again and again, up to `times`
    /// copies, one word per chunk `chunk_delay_ms` apart, then stop with `max_tokens` /
    /// `"length"`. A client that stops it early hangs up: `FakeModel::hung_up` counts it.
    Runaway {
        text: String,
        repeat: String,
        times: u32,
        chunk_delay_ms: u64,
    },
    /// 200, then an in-stream error: Anthropic `event: error` with
    /// `{"type":"error","error":{"type":kind,..}}`; OpenAI `data: {"error":{"type":kind,..}}`.
    StreamError { kind: String },
}

impl Step {
    /// A plain text reply.
    pub fn text(text: impl Into<String>) -> Step {
        Step::Text(text.into())
    }

    /// A reply made of one tool call and no text.
    pub fn tool_call(name: impl Into<String>, args: Value) -> Step {
        Step::ToolCalls {
            text: None,
            calls: vec![(name.into(), args)],
        }
    }

    /// A reply made of several tool calls (parallel tool use) and no text.
    pub fn tool_calls<S: Into<String>>(calls: impl IntoIterator<Item = (S, Value)>) -> Step {
        Step::ToolCalls {
            text: None,
            calls: calls.into_iter().map(|(n, a)| (n.into(), a)).collect(),
        }
    }

    /// An HTTP error with the provider's own error body and no `Retry-After`.
    pub fn error(status: u16) -> Step {
        Step::Error {
            status,
            body: String::new(),
            retry_after: None,
        }
    }

    /// 429 with `Retry-After: secs`.
    pub fn rate_limited(retry_after_secs: u64) -> Step {
        Step::Error {
            status: 429,
            body: String::new(),
            retry_after: Some(retry_after_secs),
        }
    }

    /// 529, Anthropic's "overloaded" status (OpenAI clients see it as a 5xx).
    pub fn overloaded() -> Step {
        Step::error(529)
    }

    /// A text reply streamed one word per chunk, `chunk_delay_ms` apart.
    pub fn slow_text(text: impl Into<String>, chunk_delay_ms: u64) -> Step {
        Step::SlowText {
            text: text.into(),
            chunk_delay_ms,
        }
    }

    /// `text`, then `repeat` 2,000 times, 2 ms a chunk: long enough that a client that
    /// reads it all is seen to.
    pub fn runaway(text: impl Into<String>, repeat: impl Into<String>) -> Step {
        Step::Runaway {
            text: text.into(),
            repeat: repeat.into(),
            times: 2000,
            chunk_delay_ms: 2,
        }
    }

    /// 200, then an in-stream error of this kind (e.g. `"overloaded_error"`).
    pub fn stream_error(kind: impl Into<String>) -> Step {
        Step::StreamError { kind: kind.into() }
    }

    /// This step, answered only after `ms` milliseconds.
    pub fn after_ms(self, ms: u64) -> Step {
        Step::Delay {
            ms,
            then: Box::new(self),
        }
    }

    /// The step that finally answers, looking through any `Delay`s.
    pub(crate) fn innermost(&self) -> &Step {
        match self {
            Step::Delay { then, .. } => then.innermost(),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_form_is_externally_tagged_snake_case() {
        let steps: Vec<Step> = serde_json::from_value(json!([
            {"text": "hi"},
            {"tool_calls": {"calls": [["read_file", {"path": "a"}]]}},
            {"error": {"status": 429, "retry_after": 1}},
            {"delay": {"ms": 5, "then": "stall"}},
            {"slow_text": {"text": "a b", "chunk_delay_ms": 10}},
            {"cut": "half"},
            "malformed",
            {"stream_error": {"kind": "overloaded_error"}},
            {"runaway": {"text": "hi", "repeat": " hi", "times": 2000, "chunk_delay_ms": 2}}
        ]))
        .expect("the documented JSON forms parse");
        assert_eq!(steps[0], Step::text("hi"));
        assert_eq!(steps[1], Step::tool_call("read_file", json!({"path": "a"})));
        assert_eq!(steps[2], Step::rate_limited(1));
        assert_eq!(steps[3], Step::Stall.after_ms(5));
        assert_eq!(steps[4], Step::slow_text("a b", 10));
        assert_eq!(steps[7], Step::stream_error("overloaded_error"));
        assert_eq!(steps[8], Step::runaway("hi", " hi"));
    }

    #[test]
    fn innermost_looks_through_delays() {
        let step = Step::text("x").after_ms(1).after_ms(2);
        assert_eq!(step.innermost(), &Step::text("x"));
    }
}
