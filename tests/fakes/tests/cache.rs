//! The fake's imitated prompt cache, as a client reads it in `usage`: per model, and in
//! the providers' order (tools, system prompt, messages), not the order of the JSON keys
//! (serde sorts `messages` before `tools`).

use crate::common;

use common::{post_anthropic, post_openai};
use pincer_fakes::FakeModel;
use serde_json::{Value, json};

/// Two tools of about 1 KB each; `variant` changes the second one's description.
fn tools(variant: &str) -> Value {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    json!([
        {"type": "function", "function": {"name": "read_file",
            "description": "Reads a file. ".repeat(70), "parameters": schema}},
        {"type": "function", "function": {"name": "write_file",
            "description": format!("{variant} {}", "Writes a file. ".repeat(70)), "parameters": schema}},
    ])
}

/// An OpenAI request of `model`: a long system prompt, eight earlier messages, then `last`.
fn conversation(model: &str, tools: Value, last: &str) -> Value {
    let mut messages = vec![json!({"role": "system", "content": "You are Pincer. ".repeat(60)})];
    for n in 0..8 {
        let role = if n % 2 == 0 { "user" } else { "assistant" };
        let text = format!("message {n}: {}", "some earlier words ".repeat(15));
        messages.push(json!({"role": role, "content": text}));
    }
    messages.push(json!({"role": "user", "content": last}));
    json!({"model": model, "messages": messages, "tools": tools, "stream": false})
}

/// `(prompt_tokens, cached_tokens)` of one OpenAI request.
async fn openai_usage(fake: &FakeModel, body: &Value) -> (u64, u64) {
    let reply: Value = post_openai(fake, body).await.json().await.unwrap();
    let usage = &reply["usage"];
    (
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap(),
    )
}

#[tokio::test]
async fn a_new_last_message_leaves_almost_all_the_prompt_cached() {
    let fake = FakeModel::start().await;
    let (_, first) = openai_usage(&fake, &conversation("m", tools("a"), "first?")).await;
    assert_eq!(first, 0, "nothing cached before the model's first request");
    let (total, cached) = openai_usage(&fake, &conversation("m", tools("a"), "second?")).await;
    assert!(
        cached * 100 >= total * 95,
        "{cached} of {total} tokens cached"
    );
    assert!(cached < total);
}

#[tokio::test]
async fn a_request_of_another_model_in_between_does_not_disturb_the_cache() {
    let fake = FakeModel::start().await;
    openai_usage(&fake, &conversation("m", tools("a"), "first?")).await;
    let other = json!({"model": "other", "messages": [{"role": "user", "content": "unrelated"}]});
    let (_, cached) = openai_usage(&fake, &other).await;
    assert_eq!(cached, 0, "the other model's first request finds nothing");
    let (total, cached) = openai_usage(&fake, &conversation("m", tools("a"), "second?")).await;
    assert!(
        cached * 100 >= total * 95,
        "{cached} of {total} tokens cached"
    );
}

#[tokio::test]
async fn a_changed_tool_invalidates_the_system_prompt_and_messages_after_it() {
    let fake = FakeModel::start().await;
    openai_usage(&fake, &conversation("m", tools("a"), "first?")).await;
    let (total, cached) = openai_usage(&fake, &conversation("m", tools("b"), "first?")).await;
    // Only the first tool and the start of the second are the same: about 1 KB of ~5 KB,
    // although every message (sent before `tools` in the JSON) is byte for byte the same.
    let tools_tokens = serde_json::to_vec(&tools("a")).unwrap().len() as u64 / 4;
    assert!(cached > 0 && cached < tools_tokens, "{cached} of {total}");
    assert!(cached * 100 < total * 30, "{cached} of {total}");
}

#[tokio::test]
async fn anthropic_caches_in_its_order_with_a_marker_and_ignores_where_the_marker_sits() {
    let fake = FakeModel::start().await;
    let body = |system: &str, marked_last: bool| {
        let mut last = json!({"type": "text", "text": "and now?"});
        if marked_last {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({
            "model": "claude-fake",
            "max_tokens": 1024,
            "tools": [{"name": "read_file", "description": "Reads a file. ".repeat(70),
                "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
            "system": [{"type": "text", "text": system.repeat(60)}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "earlier words ".repeat(60)}]},
                {"role": "assistant", "content": [{"type": "text", "text": "a reply ".repeat(60)}]},
                {"role": "user", "content": [last]},
            ],
        })
    };
    let usage = |reply: Value| {
        let usage = &reply["usage"];
        let read = usage["cache_read_input_tokens"].as_u64().unwrap();
        let total = read
            + usage["cache_creation_input_tokens"].as_u64().unwrap()
            + usage["input_tokens"].as_u64().unwrap();
        (total, read)
    };
    let first = post_anthropic(&fake, &body("You are Pincer. ", true)).await;
    assert_eq!(usage(first.json().await.unwrap()).1, 0);
    // The marker moved off the last message: the same content, so the same prefix.
    let again = post_anthropic(&fake, &body("You are Pincer. ", false)).await;
    let (total, read) = usage(again.json().await.unwrap());
    assert!(read * 100 >= total * 90, "{read} of {total}");
    // A new system prompt keeps the tools (before it) and loses the messages (after it).
    let changed = post_anthropic(&fake, &body("You are Claw. ", false)).await;
    let (total, read) = usage(changed.json().await.unwrap());
    let tool_tokens = "Reads a file. ".repeat(70).len() as u64 / 4;
    assert!(
        read >= tool_tokens && read * 100 < total * 40,
        "{read} of {total}"
    );
}
