//! The OpenAI chat-completions side of the fake, as a client sees it.

use crate::common;

use common::{events, openai_body, openai_text, post_openai};
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

#[tokio::test]
async fn text_streams_in_several_chunks_and_ends_with_done() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("Hello there, how are you?"));

    let response = post_openai(&fake, &openai_body("hi", true, false)).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(content_type.starts_with("text/event-stream"));
    let body = response.text().await.unwrap();
    let events = events(&body);

    assert!(body.ends_with("data: [DONE]\n\n"));
    let chunks: Vec<_> = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let content_chunks = chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
        .count();
    assert!(
        content_chunks >= 4,
        "text is split into words, got {content_chunks}"
    );
    assert_eq!(openai_text(&events), "Hello there, how are you?");
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(
        chunks.iter().all(|c| c.get("usage").is_none()),
        "no usage unless asked"
    );
}

#[tokio::test]
async fn usage_arrives_only_with_include_usage() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("some words here"));

    let body = post_openai(&fake, &openai_body("hi", true, true))
        .await
        .text()
        .await
        .unwrap();
    let chunks: Vec<_> = events(&body)
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json())
        .collect();
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    let usage = &last["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() >= 1);
    assert!(usage["completion_tokens"].as_u64().unwrap() >= 1);
    assert!(usage["prompt_tokens_details"]["cached_tokens"].is_u64());
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c["usage"].is_null())
    );
}

#[tokio::test]
async fn tool_call_arguments_arrive_in_fragments_keyed_by_index() {
    let fake = FakeModel::start().await;
    let args = json!({"path": "notes/today.md", "limit": 20});
    fake.push(Step::tool_calls([
        ("read_file", args.clone()),
        ("list_dir", json!({})),
    ]));

    let body = post_openai(&fake, &openai_body("read", true, false))
        .await
        .text()
        .await
        .unwrap();
    let chunks: Vec<_> = events(&body)
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json())
        .collect();
    let mut ids = Vec::new();
    let mut names = Vec::new();
    let mut arguments = [String::new(), String::new()];
    let mut fragments = 0;
    for chunk in &chunks {
        for call in chunk["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = call["index"].as_u64().unwrap() as usize;
            if let Some(id) = call["id"].as_str() {
                ids.push(id.to_string());
                names.push(call["function"]["name"].as_str().unwrap().to_string());
            }
            let part = call["function"]["arguments"].as_str().unwrap();
            if !part.is_empty() {
                fragments += 1;
            }
            arguments[index].push_str(part);
        }
    }
    assert_eq!(ids, ["call_1", "call_2"]);
    assert_eq!(names, ["read_file", "list_dir"]);
    assert!(
        fragments >= 3,
        "arguments are split, got {fragments} fragments"
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&arguments[0]).unwrap(),
        args
    );
    assert_eq!(arguments[1], "{}");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[tokio::test]
async fn truncated_stops_with_length() {
    let fake = FakeModel::start().await;
    fake.push(Step::Truncated("cut short".into()));
    let body = post_openai(&fake, &openai_body("hi", true, false))
        .await
        .text()
        .await
        .unwrap();
    let events = events(&body);
    let last = events
        .iter()
        .rev()
        .find(|e| e.data != "[DONE]")
        .unwrap()
        .json();
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(openai_text(&events), "cut short");
}

#[tokio::test]
async fn a_runaway_streams_its_repeats_and_counts_a_client_that_hangs_up() {
    let fake = FakeModel::start().await;
    fake.push(Step::Runaway {
        text: "hello".into(),
        repeat: " again".into(),
        times: 3,
        chunk_delay_ms: 1,
    });
    let body = post_openai(&fake, &openai_body("hi", true, false))
        .await
        .text()
        .await
        .unwrap();
    let events = events(&body);
    assert_eq!(openai_text(&events), "hello again again again");
    let last = events.iter().rev().find(|e| e.data != "[DONE]").unwrap();
    assert_eq!(last.json()["choices"][0]["finish_reason"], "length");
    assert_eq!(fake.hung_up(), 0, "read to its end");

    fake.push(Step::runaway("hello", " again"));
    let mut response = post_openai(&fake, &openai_body("hi", true, false)).await;
    let first = response.chunk().await.unwrap();
    assert!(first.is_some());
    drop(response);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while fake.hung_up() == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(fake.hung_up(), 1, "the client left mid-stream");
}

#[tokio::test]
async fn non_streamed_request_gets_a_chat_completion_object() {
    let fake = FakeModel::start().await;
    fake.push(Step::ToolCalls {
        text: Some("Let me look.".into()),
        calls: vec![("read_file".into(), json!({"path": "a"}))],
    });
    let response = post_openai(&fake, &openai_body("hi", false, false)).await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    let message = &body["choices"][0]["message"];
    assert_eq!(message["content"], "Let me look.");
    assert_eq!(message["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"a"}"#
    );
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert!(body["usage"]["total_tokens"].as_u64().unwrap() >= 2);
}

#[tokio::test]
async fn stream_error_arrives_after_200() {
    let fake = FakeModel::start().await;
    fake.push(Step::stream_error("server_error"));
    let response = post_openai(&fake, &openai_body("hi", true, false)).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let last = events(&body).last().unwrap().json();
    assert_eq!(last["error"]["type"], "server_error");
    assert!(!body.contains("[DONE]"));
}

#[tokio::test]
async fn malformed_stream_has_data_that_is_not_json() {
    let fake = FakeModel::start().await;
    fake.push(Step::Malformed);
    let response = post_openai(&fake, &openai_body("hi", true, false)).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let bad = events(&body)
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter(|e| serde_json::from_str::<serde_json::Value>(&e.data).is_err())
        .count();
    assert!(bad >= 1);
}

#[tokio::test]
async fn stream_options_without_stream_is_refused_like_openai() {
    let fake = FakeModel::start().await;
    let response = post_openai(&fake, &openai_body("hi", false, true)).await;
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
}
