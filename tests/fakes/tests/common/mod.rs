//! Helpers shared by the fake's own tests: posting chat requests and splitting SSE.

#![allow(dead_code)]

use pincer_fakes::FakeModel;
use serde_json::{Value, json};

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// An OpenAI chat request for `text`.
pub(crate) fn openai_body(text: &str, stream: bool, include_usage: bool) -> Value {
    let mut body = json!({
        "model": "gpt-fake",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}],
        "stream": stream,
    });
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// An Anthropic Messages request for `text`.
pub(crate) fn anthropic_body(text: &str, stream: bool) -> Value {
    json!({
        "model": "claude-fake",
        "max_tokens": 1024,
        "system": "be brief",
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "stream": stream,
    })
}

pub(crate) async fn post_openai(fake: &FakeModel, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", fake.openai_base()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .expect("the fake answers")
}

pub(crate) async fn post_anthropic(fake: &FakeModel, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", fake.anthropic_base()))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .expect("the fake answers")
}

/// One SSE event: its `event:` name (if any) and its `data:` text.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub name: Option<String>,
    pub data: String,
}

impl Event {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("event data is JSON")
    }
}

/// Splits a whole SSE body into events.
pub(crate) fn events(body: &str) -> Vec<Event> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = Event {
                name: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event.name = Some(name.to_string());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    event.data.push_str(data);
                }
            }
            event
        })
        .collect()
}

/// The text of an OpenAI stream, accumulated from its content deltas.
pub(crate) fn openai_text(events: &[Event]) -> String {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

/// The text of an Anthropic stream, accumulated from its text deltas.
pub(crate) fn anthropic_text(events: &[Event]) -> String {
    events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_delta"))
        .filter_map(|e| e.json()["delta"]["text"].as_str().map(String::from))
        .collect()
}
