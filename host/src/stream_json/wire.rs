//! The stream-json protocol's own lines and forms: the `result` of a turn, the answer
//! to `initialize`, user message text, and the shapes a host may answer a
//! `can_use_tool` in.

use pincer_channels::{FinishReason, TurnUsage};
use serde_json::{Value, json};

use super::{Pending, Turn};
use crate::uuid;
use pincer_core::tools::mode::PermissionMode;

/// The answer to `initialize`.
pub(super) fn initialized() -> Value {
    json!({
        "commands": [],
        "agents": [],
        "output_style": "default",
        "available_output_styles": ["default"],
        "models": models(),
        "account": {"apiKeySource": "none", "tokenSource": "none"},
        // A callback whose matcher says `onFailure: "block"` blocks when it fails.
        "hook_on_failure_supported": true,
        "hooks_applied": true,
    })
}

/// The answer to `get_context_usage`: how much of `model`'s window of `window` tokens
/// the last call's prompt (`used`) took, as one category (Pincer does not split the
/// prompt up).
pub(super) fn context_usage(model: &str, window: u64, used: u64) -> Value {
    let percentage = if window == 0 {
        0.0
    } else {
        used as f64 * 100.0 / window as f64
    };
    json!({
        "categories": [{"name": "Conversation", "tokens": used, "color": "blue"}],
        "totalTokens": used,
        "maxTokens": window,
        "rawMaxTokens": window,
        "percentage": percentage,
        "model": model,
        "isAutoCompactEnabled": true,
        "memoryFiles": [],
        "mcpTools": [],
        "agents": [],
        "gridRows": [],
    })
}

/// Each MCP server and its state, as the CLI names them (connected, pending, failed),
/// with the error of one that failed.
pub(super) fn mcp_servers(status: Vec<(String, String)>) -> Vec<Value> {
    status
        .into_iter()
        .map(|(name, state)| {
            let status = crate::mcp_state(&state);
            let mut server = json!({"name": name, "status": status});
            if status == "failed" {
                server["error"] = json!(state);
            }
            server
        })
        .collect()
}

/// The `result` line of a turn.
pub(super) fn result(session: &str, reason: FinishReason, usage: &TurnUsage, turn: Turn) -> Value {
    let model = usage.model.clone().unwrap_or_else(|| "pincer".into());
    let (subtype, is_error) = match reason {
        FinishReason::Stop => ("success", false),
        FinishReason::Length => ("error_max_turns", true),
        FinishReason::Error | FinishReason::Aborted => ("error_during_execution", true),
    };
    let mut line = json!({
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": usage.duration_ms,
        "duration_api_ms": usage.model_ms,
        // A call cut short (an interrupt) is a turn too, as the CLI counts.
        "num_turns": usage.model_calls.max(turn.step),
        "stop_reason": if is_error { Value::Null } else { json!("end_turn") },
        "session_id": session,
        "total_cost_usd": usage.cost_usd,
        "usage": {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "output_tokens": usage.output_tokens,
        },
        "modelUsage": {model: {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "cacheReadInputTokens": usage.cache_read_tokens,
            "cacheCreationInputTokens": usage.cache_write_tokens,
            "costUSD": usage.cost_usd,
        }},
        "permission_denials": turn.denials,
        "terminal_reason": match reason {
            FinishReason::Stop => "completed",
            FinishReason::Length => "max_turns",
            FinishReason::Aborted => "aborted_streaming",
            FinishReason::Error => "error",
        },
        "uuid": uuid(),
    });
    if is_error {
        let why = match reason {
            FinishReason::Aborted => "interrupted".to_string(),
            _ => turn.last_text.clone(),
        };
        line["errors"] = json!([why]);
    } else {
        line["result"] = json!(turn.last_text);
    }
    line
}

/// The text of a user message's content: a string, or its text blocks.
pub(super) fn user_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A `setMode` update among `updatedPermissions`.
pub(super) fn set_mode(updates: &Value) -> Option<PermissionMode> {
    updates
        .as_array()?
        .iter()
        .find(|u| u["type"] == "setMode")
        .and_then(|u| u["mode"].as_str())
        .and_then(PermissionMode::parse)
}

/// A `control_response` as the SDKs send it, or in the adapter form of seed 002 §6 —
/// `request_id` beside `response`, and `response: {"subtype": "allow", …}` — as the
/// SDK form: `{"subtype": "success", "request_id", "response": {"behavior", …}}`.
pub(super) fn adapted(message: &Value) -> Value {
    let response = &message["response"];
    let mut adapted = response.clone();
    if adapted["request_id"].is_null() {
        adapted["request_id"] = message["request_id"].clone();
    }
    if let Some(behavior @ ("allow" | "deny")) = response["subtype"].as_str() {
        let mut body = response.clone();
        body["behavior"] = json!(behavior);
        adapted =
            json!({"subtype": "success", "request_id": adapted["request_id"], "response": body});
    }
    adapted
}

/// What can_use_tool suggests: allow this call from now on (for the session).
pub(super) fn suggestions(tool: &str, subject: &str) -> Value {
    json!([{"type": "addRules", "rules": [{"toolName": tool, "ruleContent": subject}],
            "behavior": "allow", "destination": "session"}])
}

/// Where an allow rule among `updatedPermissions` that covers this call is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kept {
    /// For this process (`destination: "session"`, or none).
    Session,
    /// For good: Pincer's "always" grant (`localSettings`, `userSettings`, …).
    Stored,
}

/// Whether `updatedPermissions` adds an allow rule covering this call — its tool, by
/// Pincer's or the CLI's name, with no content or with this call's subject — and
/// where it is kept.
pub(super) fn allow_rule(updates: &Value, pending: &Pending) -> Option<Kept> {
    updates.as_array()?.iter().find_map(|update| {
        let covered = update["type"] == "addRules"
            && update["behavior"] == "allow"
            && update["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|rule| covers(rule, &pending.tool, &pending.subject));
        covered.then(|| match update["destination"].as_str() {
            None | Some("session" | "cliArg") => Kept::Session,
            Some(_) => Kept::Stored,
        })
    })
}

/// Whether a rule (`{toolName, ruleContent?}`) covers a call of `tool` on `subject`.
pub(super) fn covers(rule: &Value, tool: &str, subject: &str) -> bool {
    let named = rule["toolName"].as_str();
    let cli = crate::hooks::cli_name(tool);
    (named == Some(tool) || (named.is_some() && named == cli))
        && rule["ruleContent"]
            .as_str()
            .filter(|content| !content.is_empty())
            .is_none_or(|content| content == subject)
}

/// The models a host may pick, for `initialize`.
fn models() -> Value {
    let mut models = vec![
        json!({"value": "auto", "displayName": "Auto", "description": "the router picks light or heavy"}),
    ];
    for tier in ["light", "heavy"] {
        models.push(
            json!({"value": tier, "displayName": tier, "description": format!("the {tier} chain")}),
        );
    }
    Value::Array(models)
}

/// The allow rules of `updatedPermissions`' `addRules` entries.
pub(super) fn added_rules(updates: &Value) -> Vec<Value> {
    updates
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| u["type"] == "addRules" && u["behavior"] == "allow")
        .flat_map(|u| u["rules"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// `get_context_usage` before any model answered.
pub(super) const NO_MODEL_YET: &str =
    "no model has answered in this conversation yet; ask again after the first turn";
