//! Tool calls a model wrote as text. Local servers without a tool-call parser for the
//! model's chat template, and many small models, answer a request that offered tools
//! with the call in the reply's text — a fenced `{"name": "memory_write", "arguments":
//! {…}}`, `<tool_call>…</tool_call>`, `[TOOL_CALLS] […]` (`forms` lists them all) — and
//! `finish_reason: "stop"`. `read` makes such text the calls it names, but only calls to
//! a tool the request offered, with arguments that tool's schema accepts (checked as MCP
//! calls are, `mcp::schema`); anything else stays text, and `clean` hides its markup.
//!
//! `[models."P/M"] text_tool_calls` says when: `auto` (the default) reads the text of a
//! reply without a structured call, `on` also reads it beside structured calls, `off`
//! never. While a reply streams, `StreamCleaner` asks `block_at` whether a JSON block
//! starting a line is a call, so the person never sees one go by.

mod forms;
#[cfg(test)]
mod tests;

use pincer_config::TextToolCalls;
use serde_json::Value;

use crate::mcp::schema;
use crate::provider::{ChatResponse, Part, StopReason, ToolSpec};

/// A JSON block longer than this, still open, is not a call (a call is a few hundred
/// bytes; a long code block must not be held back whole while it streams).
const MAX_CALL_BYTES: usize = 16 * 1024;

/// The keys a call object starts with (`{"name": …}`, `{"type": "function", …}` …).
const FIRST_KEYS: &[&str] = &["name", "type", "function", "id", "arguments", "parameters"];

/// `response` with the calls written in its text made tool calls, as `mode` allows for
/// a request that offered `offered`.
pub fn read(mut response: ChatResponse, offered: &[ToolSpec], mode: TextToolCalls) -> ChatResponse {
    let structured: Vec<(String, Value)> = response
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::ToolCall {
                name, arguments, ..
            } => Some((name.clone(), arguments.clone())),
            _ => None,
        })
        .collect();
    let reads = match mode {
        TextToolCalls::Off => false,
        TextToolCalls::Auto => structured.is_empty(),
        TextToolCalls::On => true,
    };
    if !reads || offered.is_empty() {
        return response;
    }
    let mut calls = Vec::new();
    for part in &mut response.parts {
        if let Part::Text { text } = part
            && let Some((kept, found)) = find(text, offered)
        {
            *text = kept;
            calls.extend(found);
        }
    }
    // A server that parsed a call may have left its text too.
    calls.retain(|call| !structured.contains(call));
    if calls.is_empty() {
        return response;
    }
    let names: Vec<&str> = calls.iter().map(|(name, _)| name.as_str()).collect();
    tracing::info!(calls = ?names, "tool calls written as text, run as calls");
    let stamp = crate::store::now_ms();
    for (n, (name, arguments)) in calls.into_iter().enumerate() {
        response.parts.push(Part::ToolCall {
            id: format!("text_{stamp}_{n}"),
            name,
            arguments,
        });
    }
    response
        .parts
        .retain(|part| !matches!(part, Part::Text { text } if text.trim().is_empty()));
    response.stop = StopReason::ToolUse;
    response
}

/// The calls written in `text` that `offered` accepts, and the text without them.
fn find(text: &str, offered: &[ToolSpec]) -> Option<(String, Vec<(String, Value)>)> {
    let mut kept = String::new();
    let mut calls = Vec::new();
    let mut from = 0;
    for span in forms::spans(text) {
        if span.calls.iter().all(|call| accepts(offered, call)) {
            kept.push_str(&text[from..span.start]);
            from = span.end;
            calls.extend(span.calls.into_iter().map(|c| (c.name, c.arguments)));
        }
    }
    if calls.is_empty() {
        return None;
    }
    kept.push_str(&text[from..]);
    Some((kept, calls))
}

/// Whether `call` names an offered tool and its schema takes the arguments.
fn accepts(offered: &[ToolSpec], call: &forms::Call) -> bool {
    offered
        .iter()
        .find(|tool| tool.name == call.name)
        .is_some_and(|tool| schema::validate(&tool.input_schema, &call.arguments).is_ok())
}

/// What a block starting a line of a streaming reply is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// Not a call: show it.
    Text,
    /// Cannot tell until more of it comes: hold it back.
    Unsure,
    /// A call `read` will take, this many bytes long: never show it.
    Call(usize),
}

/// What the text at the start of `text` is, a line's start in a reply streaming to a
/// request that offered `offered`: a fenced block or JSON object that will be a call,
/// or ordinary text.
pub fn block_at(text: &str, offered: &[ToolSpec]) -> Block {
    if offered.is_empty() {
        return Block::Text;
    }
    let taken = |found: Option<(usize, Vec<forms::Call>)>| match found {
        Some((len, calls)) if calls.iter().all(|call| accepts(offered, call)) => Block::Call(len),
        _ => Block::Text,
    };
    let unsure = || match text.len() > MAX_CALL_BYTES {
        true => Block::Text,
        false => Block::Unsure,
    };
    if text.starts_with('`') {
        let Some((body_start, language)) = forms::fence_language(text) else {
            return match "```".starts_with(text) {
                true => Block::Unsure,
                false => Block::Text,
            };
        };
        if body_start == text.len() {
            return match forms::may_be_call_language(language) {
                true => Block::Unsure,
                false => Block::Text,
            };
        }
        if !forms::is_call_language(language) {
            return Block::Text;
        }
        let body = text[body_start..].trim_start();
        if body.is_empty() {
            return Block::Unsure;
        }
        if !json_may_be_call(body) {
            return Block::Text;
        }
        return match text[body_start..].contains("```") {
            true => taken(forms::fenced(text)),
            false => unsure(),
        };
    }
    if !json_may_be_call(text) {
        return Block::Text;
    }
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(_)) => taken(forms::json_calls(text, true)),
        Some(Err(err)) if err.is_eof() => unsure(),
        _ => match text.trim().is_empty() {
            true => Block::Unsure,
            false => Block::Text,
        },
    }
}

/// Whether `text` may begin a call object or a list of them: `{` (or `[{`) and a first
/// key that call objects start with, as far as it has come.
fn json_may_be_call(text: &str) -> bool {
    let rest = match text.strip_prefix('[') {
        Some(list) => match list.trim_start() {
            "" => return true,
            item => item,
        },
        None => text,
    };
    let Some(object) = rest.strip_prefix('{') else {
        return false;
    };
    let object = object.trim_start();
    if object.is_empty() {
        return true;
    }
    let Some(key) = object.strip_prefix('"') else {
        return false;
    };
    match key.find('"') {
        Some(end) => FIRST_KEYS.contains(&&key[..end]),
        None => FIRST_KEYS.iter().any(|k| k.starts_with(key)),
    }
}
