//! The Anthropic Messages side of the fake, as a client sees it.

use crate::common;

use common::{anthropic_body, anthropic_text, events, post_anthropic};
use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

#[tokio::test]
async fn text_stream_has_the_real_event_sequence_and_usage() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("Hello from the fake model"));

    let response = post_anthropic(&fake, &anthropic_body("hi", true)).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let events = events(&body);
    let names: Vec<_> = events.iter().map(|e| e.name.clone().unwrap()).collect();
    assert_eq!(names[..3], ["message_start", "ping", "content_block_start"]);
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(
        events
            .iter()
            .all(|e| e.json()["type"] == e.name.as_deref().unwrap())
    );
    assert_eq!(anthropic_text(&events), "Hello from the fake model");
    let deltas = names.iter().filter(|n| *n == "content_block_delta").count();
    assert!(deltas >= 4, "text is split into words, got {deltas}");

    let start = events[0].json();
    let usage = &start["message"]["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() >= 1);
    assert!(usage["cache_read_input_tokens"].is_u64());
    assert!(usage["cache_creation_input_tokens"].is_u64());
    let delta = events[events.len() - 2].json();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert!(delta["usage"]["output_tokens"].as_u64().unwrap() >= 1);
}

#[tokio::test]
async fn tool_use_input_json_fragments_concatenate_to_the_arguments() {
    let fake = FakeModel::start().await;
    let args = json!({"command": "ls -la /tmp", "timeout_secs": 30});
    fake.push(Step::ToolCalls {
        text: Some("Running it.".into()),
        calls: vec![("shell".into(), args.clone())],
    });

    let body = post_anthropic(&fake, &anthropic_body("list", true))
        .await
        .text()
        .await
        .unwrap();
    let events = events(&body);
    let starts: Vec<Value> = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_start"))
        .map(|e| e.json())
        .collect();
    assert_eq!(starts[0]["content_block"]["type"], "text");
    let tool = &starts[1];
    assert_eq!(tool["index"], 1);
    assert_eq!(tool["content_block"]["type"], "tool_use");
    assert_eq!(tool["content_block"]["id"], "toolu_1");
    assert_eq!(tool["content_block"]["name"], "shell");

    let fragments: Vec<String> = events
        .iter()
        .map(|e| e.json())
        .filter(|e| e["type"] == "content_block_delta" && e["index"] == 1)
        .map(|e| {
            assert_eq!(e["delta"]["type"], "input_json_delta");
            e["delta"]["partial_json"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(fragments.iter().filter(|f| !f.is_empty()).count() >= 2);
    let input: Value = serde_json::from_str(&fragments.concat()).unwrap();
    assert_eq!(input, args);
    assert_eq!(anthropic_text(&events), "Running it.");
    let delta = events
        .iter()
        .find(|e| e.name.as_deref() == Some("message_delta"))
        .unwrap();
    assert_eq!(delta.json()["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn tool_ids_stay_unique_across_turns() {
    let fake = FakeModel::start().await;
    fake.push(Step::tool_call("a", json!({})));
    fake.push(Step::tool_call("b", json!({})));
    for expected in ["toolu_1", "toolu_2"] {
        let body = post_anthropic(&fake, &anthropic_body("go", false)).await;
        let body: Value = body.json().await.unwrap();
        assert_eq!(body["content"][0]["id"], expected);
        assert_eq!(body["content"][0]["input"], json!({}));
    }
}

#[tokio::test]
async fn stream_error_is_an_error_event_after_200() {
    let fake = FakeModel::start().await;
    fake.push(Step::stream_error("overloaded_error"));
    let response = post_anthropic(&fake, &anthropic_body("hi", true)).await;
    assert_eq!(response.status(), 200);
    let events = events(&response.text().await.unwrap());
    let error = events.last().unwrap();
    assert_eq!(error.name.as_deref(), Some("error"));
    assert_eq!(
        error.json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
}

#[tokio::test]
async fn truncated_stops_with_max_tokens() {
    let fake = FakeModel::start().await;
    fake.push(Step::Truncated("partial answer".into()));
    let body: Value = post_anthropic(&fake, &anthropic_body("hi", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["type"], "message");
    assert_eq!(body["stop_reason"], "max_tokens");
    assert_eq!(body["content"][0]["text"], "partial answer");
    assert!(body["usage"]["output_tokens"].as_u64().unwrap() >= 1);
}

#[tokio::test]
async fn missing_version_header_or_max_tokens_is_a_400() {
    let fake = FakeModel::start().await;
    let response = common::client()
        .post(format!("{}/v1/messages", fake.anthropic_base()))
        .json(&anthropic_body("hi", true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");

    let mut no_max = anthropic_body("hi", true);
    no_max.as_object_mut().unwrap().remove("max_tokens");
    assert_eq!(post_anthropic(&fake, &no_max).await.status(), 400);
}

#[tokio::test]
async fn cache_control_reports_cache_reads_on_the_next_turn() {
    let fake = FakeModel::start().await;
    let mut body = anthropic_body(&"long context ".repeat(50), false);
    body["system"] =
        json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]);
    let first: Value = post_anthropic(&fake, &body).await.json().await.unwrap();
    assert_eq!(first["usage"]["cache_read_input_tokens"], 0);
    assert!(
        first["usage"]["cache_creation_input_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    let second: Value = post_anthropic(&fake, &body).await.json().await.unwrap();
    assert!(second["usage"]["cache_read_input_tokens"].as_u64().unwrap() > 0);
}
