//! Turning one `Step` into one HTTP response, for either format, streamed or not.
//!
//! This owns the *order* of things (start, text deltas, tool calls, finish; where a stall
//! hangs, where a cut cuts). The bytes of each event belong to `openai` / `anthropic`
//! through the small `Wire` trait; the body mechanics belong to `sse`.

use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::watch;

use crate::recorded::Format;
use crate::sse::{self, Frame};
use crate::step::Step;
use crate::tokens::{self, Prompt};
use crate::{anthropic, openai};

/// How long a cut stream waits before dropping the connection. Without it hyper may drop
/// the response before its headers and first chunks ever leave, and the client would see
/// a failed request instead of a stream cut mid-way.
const FLUSH_BEFORE_CUT: Duration = Duration::from_millis(50);

/// What the server knows about the request being answered.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    pub format: Format,
    /// `"stream": true` in the request; anything else gets one JSON response, as the real
    /// APIs do.
    pub stream: bool,
    /// OpenAI `stream_options.include_usage`: only then does a stream end with usage.
    pub include_usage: bool,
    pub model: String,
    /// 1-based request number, for message ids (`chatcmpl-fake-N`, `msg_fake_N`).
    pub number: u64,
    /// Number for this turn's first tool-call id (`call_N`, `toolu_N`).
    pub first_call: u64,
    pub prompt: Prompt,
    /// Unix seconds, for OpenAI's `created`.
    pub created: u64,
    /// Anthropic `thinking: {"type": "enabled"}`: the reply opens with a signed
    /// thinking block.
    pub thinking: bool,
    /// Counts streams whose client hung up before their end.
    pub hung_up: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// Why the reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    EndTurn,
    ToolUse,
    MaxTokens,
}

/// One tool call of a reply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    pub number: u64,
    pub name: &'a str,
    pub args: &'a Value,
}

/// One provider's streamed events. Each method returns whole SSE events, in order.
pub(crate) trait Wire: Send {
    /// Events before any content (OpenAI's role chunk; Anthropic's message_start + ping).
    fn start(&mut self) -> Vec<String>;
    /// One text delta.
    fn text(&mut self, piece: &str) -> Vec<String>;
    /// One whole tool call, its JSON arguments sent as these fragments.
    fn tool_call(&mut self, call: &Call<'_>, fragments: &[&str]) -> Vec<String>;
    /// The stop reason, usage and end-of-stream marker.
    fn finish(&mut self, stop: Stop, output_tokens: u64) -> Vec<String>;
    /// An error reported inside a 200 stream.
    fn stream_error(&mut self, kind: &str) -> Vec<String>;
    /// A whole stream whose data lines are not JSON.
    fn malformed(&mut self) -> Vec<String>;
}

/// A step with its delays spent and its errors answered.
enum Plan {
    Reply {
        text: String,
        calls: Vec<(String, Value)>,
        stop: Stop,
        pause: Option<Duration>,
    },
    Stall,
    Partial {
        text: String,
        abort: bool,
    },
    Malformed,
    StreamError {
        kind: String,
    },
}

/// Answer `step`. Delays are slept here, before any header goes out.
pub(crate) async fn respond(step: Step, turn: Turn, shutdown: watch::Receiver<bool>) -> Response {
    let mut step = step;
    let plan = loop {
        let reply = |text: String, calls, stop, pause| Plan::Reply {
            text,
            calls,
            stop,
            pause,
        };
        step = match step {
            Step::Delay { ms, then } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                *then
            }
            Step::Error {
                status,
                body,
                retry_after,
            } => return error_step(turn.format, status, body, retry_after),
            Step::Text(text) => break reply(text, Vec::new(), Stop::EndTurn, None),
            Step::Truncated(text) => break reply(text, Vec::new(), Stop::MaxTokens, None),
            Step::ToolCalls { text, calls } => {
                break reply(text.unwrap_or_default(), calls, Stop::ToolUse, None);
            }
            Step::SlowText {
                text,
                chunk_delay_ms,
            } => {
                let pause = Some(Duration::from_millis(chunk_delay_ms));
                break reply(text, Vec::new(), Stop::EndTurn, pause);
            }
            Step::Runaway {
                text,
                repeat,
                times,
                chunk_delay_ms,
            } => {
                let pause = Some(Duration::from_millis(chunk_delay_ms));
                let text = text + &repeat.repeat(times as usize);
                break reply(text, Vec::new(), Stop::MaxTokens, pause);
            }
            Step::Stall => break Plan::Stall,
            Step::Cut(text) => break Plan::Partial { text, abort: true },
            Step::Unfinished(text) => break Plan::Partial { text, abort: false },
            Step::Malformed => break Plan::Malformed,
            Step::StreamError { kind } => break Plan::StreamError { kind },
        };
    };
    if turn.stream {
        streamed(plan, &turn, shutdown)
    } else {
        whole(plan, &turn, shutdown).await
    }
}

fn streamed(plan: Plan, turn: &Turn, shutdown: watch::Receiver<bool>) -> Response {
    let mut wire: Box<dyn Wire> = match turn.format {
        Format::OpenAi => Box::new(openai::Stream::new(turn)),
        Format::Anthropic => Box::new(anthropic::Stream::new(turn)),
    };
    let mut frames = Vec::new();
    let send = |frames: &mut Vec<Frame>, events: Vec<String>| {
        frames.extend(events.into_iter().map(Frame::Send));
    };
    let mut close = false;
    match plan {
        Plan::Reply {
            text,
            calls,
            stop,
            pause,
        } => {
            send(&mut frames, wire.start());
            for (i, word) in sse::words(&text).into_iter().enumerate() {
                if let Some(pause) = pause.filter(|_| i > 0) {
                    frames.push(Frame::Pause(pause));
                }
                send(&mut frames, wire.text(word));
            }
            let args: Vec<String> = calls.iter().map(|(_, args)| args.to_string()).collect();
            for (call, args) in numbered(turn, &calls).iter().zip(&args) {
                send(&mut frames, wire.tool_call(call, &sse::fragments(args)));
            }
            let output = tokens::output(&text, args.iter().map(String::as_str));
            send(&mut frames, wire.finish(stop, output));
        }
        Plan::Stall => {
            send(&mut frames, wire.start());
            send(&mut frames, wire.text("Thinking"));
            frames.push(Frame::Hang);
        }
        Plan::Partial { text, abort } => {
            send(&mut frames, wire.start());
            let words = sse::words(&text);
            for word in &words[..words.len().div_ceil(2)] {
                send(&mut frames, wire.text(word));
            }
            if abort {
                frames.extend([Frame::Pause(FLUSH_BEFORE_CUT), Frame::Abort]);
                close = true;
            }
        }
        Plan::Malformed => send(&mut frames, wire.malformed()),
        Plan::StreamError { kind } => {
            send(&mut frames, wire.start());
            send(&mut frames, wire.stream_error(&kind));
        }
    }
    let mut headers = HeaderMap::new();
    let event_stream = HeaderValue::from_static("text/event-stream; charset=utf-8");
    headers.insert(CONTENT_TYPE, event_stream);
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if close {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    let body = sse::counted_body(frames, shutdown, Some(turn.hung_up.clone()));
    (StatusCode::OK, headers, body).into_response()
}

async fn whole(plan: Plan, turn: &Turn, mut shutdown: watch::Receiver<bool>) -> Response {
    let json_body = |frames, shutdown| {
        let headers = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        (StatusCode::OK, headers, sse::body(frames, shutdown)).into_response()
    };
    match plan {
        Plan::Reply {
            text,
            calls,
            stop,
            pause,
        } => {
            if let Some(pause) = pause {
                let gaps = sse::words(&text).len().saturating_sub(1);
                tokio::time::sleep(pause * u32::try_from(gaps).unwrap_or(u32::MAX)).await;
            }
            let args: Vec<String> = calls.iter().map(|(_, args)| args.to_string()).collect();
            let output = tokens::output(&text, args.iter().map(String::as_str));
            let body = whole_json(turn, &text, &numbered(turn, &calls), stop, output);
            let headers = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
            (StatusCode::OK, headers, body.to_string()).into_response()
        }
        Plan::Stall => {
            // Either the fake shuts down or it is already gone: stop stalling both ways.
            let _ = shutdown.wait_for(|down| *down).await;
            error_step(turn.format, 503, String::new(), None)
        }
        Plan::Partial { text, abort } => {
            let full = whole_json(turn, &text, &[], Stop::EndTurn, 1).to_string();
            let half = full.char_indices().nth(full.chars().count() / 2);
            let part = full[..half.map_or(0, |(at, _)| at)].to_string();
            let mut frames = vec![Frame::Send(part)];
            if abort {
                frames.extend([Frame::Pause(FLUSH_BEFORE_CUT), Frame::Abort]);
            }
            json_body(frames, shutdown)
        }
        Plan::Malformed => {
            let broken = r#"{"id":"fake","content":["#.to_string();
            json_body(vec![Frame::Send(broken)], shutdown)
        }
        Plan::StreamError { kind } => {
            let status = status_for_kind(&kind);
            let body = error_json(turn.format, status, Some(&kind), None);
            error_response(status, body.to_string(), None)
        }
    }
}

/// The tool calls of this turn with their id numbers.
fn numbered<'a>(turn: &Turn, calls: &'a [(String, Value)]) -> Vec<Call<'a>> {
    (turn.first_call..)
        .zip(calls)
        .map(|(number, (name, args))| Call { number, name, args })
        .collect()
}

fn whole_json(turn: &Turn, text: &str, calls: &[Call<'_>], stop: Stop, output: u64) -> Value {
    match turn.format {
        Format::OpenAi => openai::whole(turn, text, calls, stop, output),
        Format::Anthropic => anthropic::whole(turn, text, calls, stop, output),
    }
}

/// The provider's error JSON for `status`; `kind` overrides the error type it implies.
pub(crate) fn error_json(
    format: Format,
    status: u16,
    kind: Option<&str>,
    message: Option<&str>,
) -> Value {
    match format {
        Format::OpenAi => openai::error_json(status, kind, message),
        Format::Anthropic => anthropic::error_json(status, kind, message),
    }
}

/// An error response; a body that is JSON is labelled so, anything else is plain text.
pub(crate) fn error_response(status: u16, body: String, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut headers = HeaderMap::new();
    let is_json = serde_json::from_str::<Value>(&body).is_ok();
    let content_type = if is_json {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(secs) = retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    (status, headers, Body::from(body)).into_response()
}

fn error_step(format: Format, status: u16, body: String, retry_after: Option<u64>) -> Response {
    let body = if body.is_empty() {
        error_json(format, status, None, None).to_string()
    } else {
        body
    };
    error_response(status, body, retry_after)
}

/// The HTTP status that goes with an error type, for a stream error asked of a
/// non-streamed request.
fn status_for_kind(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" | "rate_limit_exceeded" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}
