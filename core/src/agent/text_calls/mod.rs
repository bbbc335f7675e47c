//! Tool calls a model wrote as text. Local servers without a tool-call parser for the
//! model's chat template, and many small models, answer a request that offered tools
//! with the call in the reply's text — a fenced `{"name": "memory_write", "arguments":
//! {…}}`, `<tool_call>…</tool_call>`, `[TOOL_CALLS] […]` (`forms` lists them all) — and
//! `finish_reason: "stop"`. `read` makes such text the calls it names, but only calls to
//! a tool the request offered, with arguments that tool's schema accepts (checked as MCP
//! calls are, `mcp::schema`); anything else stays text, and `clean` hides its markup.
//!
//! `[models."P/M"] text_tool_calls` says when: `auto` reads the text of a reply without a
//! structured call, and takes a bare or fenced JSON call only when it is the whole reply;
//! `on` also reads it beside structured calls, and JSON wherever a call may start; `off`
//! never. Which models default to which is `capabilities`' business.
//!
//! `scan` takes a reply's text apart the one way the stream cleaner and `read` share:
//! markup only where a call may start (`lines`: on its own line, outside code and quotes),
//! never inside reasoning, JSON only as the mode allows. A JSON block longer than
//! `MAX_CALL_BYTES` is never a call, and a text longer than `MAX_SCAN_BYTES` is not read.

mod forms;
mod lines;
pub(super) mod scan;
#[cfg(test)]
mod tests;

use pincer_config::TextToolCalls;
use serde_json::Value;

pub(super) use scan::{Piece, Scanner};

use crate::mcp::schema;
use crate::provider::{ChatResponse, Part, StopReason, ToolSpec};

/// A JSON block longer than this is not a call (a call is a few hundred bytes; a long
/// code block must not be held back whole while it streams).
const MAX_CALL_BYTES: usize = 16 * 1024;

/// A text longer than this is not read for calls: a reply that long is not a call, and
/// reading it would hold the turn up.
const MAX_SCAN_BYTES: usize = 256 * 1024;

/// The keys a call object may have (`{"name": …, "arguments": …}`, `{"type": "function",
/// "function": {…}}` …); a JSON object with any other key is data, not a call.
const CALL_KEYS: &[&str] = &["name", "type", "function", "id", "arguments", "parameters"];

/// `response` with the calls written in its text made tool calls, as `mode` allows for
/// a request that offered `offered`. `next_id` numbers them within the turn.
pub(super) fn read(
    mut response: ChatResponse,
    offered: &[ToolSpec],
    mode: TextToolCalls,
    next_id: &mut u64,
) -> ChatResponse {
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
        let Part::Text { text } = part else {
            continue;
        };
        if text.len() > MAX_SCAN_BYTES {
            tracing::debug!(
                bytes = text.len(),
                "a reply longer than {MAX_SCAN_BYTES} bytes is not read for tool calls"
            );
            continue;
        }
        if let Some((kept, found)) = find(text, offered, mode, !structured.is_empty()) {
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
    for (name, arguments) in calls {
        *next_id += 1;
        response.parts.push(Part::ToolCall {
            id: format!("text_{stamp}_{next_id}"),
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

/// The calls written in `text` that `offered` accepts, and the text without them (its
/// reasoning and any other markup still in it, for `clean`).
fn find(
    text: &str,
    offered: &[ToolSpec],
    mode: TextToolCalls,
    structured: bool,
) -> Option<(String, Vec<(String, Value)>)> {
    let pieces = scan::pieces(text, offered, mode, structured);
    // What came before a closing tag nobody opened was reasoning: never calls.
    let from = pieces
        .iter()
        .rposition(|piece| matches!(piece, Piece::Retract(_)))
        .map_or(0, |at| at + 1);
    let mut kept = String::new();
    let mut calls = Vec::new();
    for (at, piece) in pieces.iter().enumerate() {
        let found = match piece {
            _ if at < from => None,
            Piece::Markup(raw) => forms::markup_calls(raw),
            Piece::Call(raw) if raw.len() <= MAX_CALL_BYTES => forms::json_block_calls(raw),
            _ => None,
        };
        match found.filter(|found| found.iter().all(|call| accepts(offered, call))) {
            Some(found) => calls.extend(found.into_iter().map(|c| (c.name, c.arguments))),
            None => kept.push_str(piece.raw()),
        }
    }
    if calls.is_empty() {
        return None;
    }
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
pub(super) enum Block {
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
pub(super) fn block_at(text: &str, offered: &[ToolSpec]) -> Block {
    if offered.is_empty() {
        return Block::Text;
    }
    // The same test `read` makes of the block it is given.
    let taken = |found: Option<(usize, Vec<forms::Call>)>| match found {
        Some((len, calls))
            if len <= MAX_CALL_BYTES && calls.iter().all(|call| accepts(offered, call)) =>
        {
            Block::Call(len)
        }
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
/// key a call object may have, as far as it has come (`forms` refuses any other key).
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
        Some(end) => CALL_KEYS.contains(&&key[..end]),
        None => CALL_KEYS.iter().any(|k| k.starts_with(key)),
    }
}
