//! The chat-completions types held to the documented format: recorded replies read into
//! them and give themselves back (`round_trip`), and the request Pincer builds has the
//! documented shape, field for field and in Pincer's order.

use serde_json::{Value, json};

use super::*;
use crate::openai::encode_request;
use crate::round_trip::{assert_round_trip, sse_data};
use crate::types::{ChatMessage, ChatRequest, ImageData, Part, Role, ToolSpec};

const COMPLETION: &str = include_str!("../fixtures/openai_chat_completion.json");
const STREAM: &str = include_str!("../fixtures/openai_stream_tool_calls.sse");
const LLAMACPP_STREAM: &str = include_str!("../fixtures/llamacpp_keepalive.sse");
const REQUEST: &str = include_str!("../fixtures/openai_request.json");

/// What every reply and chunk carries that Pincer does not read.
const UNMODELLED: &[&str] = &[
    "/id",
    "/object",
    "/created",
    "/model",
    "/service_tier",
    "/system_fingerprint",
    "/choices/*/index",
    "/choices/*/logprobs",
    "/usage/total_tokens",
    "/usage/prompt_tokens_details/audio_tokens",
    "/usage/completion_tokens_details",
];

/// What a delta (or the reply's message) carries that Pincer does not read.
fn unmodelled(message: &str) -> Vec<String> {
    let mut paths: Vec<String> = UNMODELLED.iter().map(|p| p.to_string()).collect();
    for field in ["role", "refusal", "annotations", "tool_calls/*/type"] {
        paths.push(format!("/choices/*/{message}/{field}"));
    }
    paths
}

fn paths(owned: &[String]) -> Vec<&str> {
    owned.iter().map(String::as_str).collect()
}

#[test]
fn a_documented_reply_reads_and_gives_itself_back() {
    let unmodelled = unmodelled("message");
    let reply: Completion = assert_round_trip(COMPLETION, &paths(&unmodelled));
    let [choice] = reply.choices.as_slice() else {
        panic!("one choice: {reply:?}")
    };
    assert_eq!(choice.finish_reason.as_deref(), Some("tool_calls"));
    let calls = choice.message.tool_calls.as_deref().unwrap();
    let function = calls[0].function.as_ref().unwrap();
    assert_eq!(calls[0].id.as_deref(), Some("call_12345xyz"));
    assert_eq!(function.name.as_deref(), Some("get_weather"));
    assert_eq!(
        function.arguments.as_deref(),
        Some(r#"{"location":"Paris, France"}"#)
    );
    let usage = reply.usage.unwrap();
    assert_eq!(
        (usage.prompt_tokens, usage.completion_tokens),
        (Some(82), Some(17))
    );
}

#[test]
fn the_assistant_message_goes_back_as_the_reply_gave_it() {
    // The documented way to continue after tool calls: send the reply's message back.
    let documented: Value = serde_json::from_str(COMPLETION).unwrap();
    let mut message = documented["choices"][0]["message"].clone();
    for unmodelled in ["refusal", "annotations"] {
        message.as_object_mut().unwrap().remove(unmodelled);
    }
    let req = ChatRequest {
        model: "gpt-4.1".into(),
        messages: vec![ChatMessage {
            role: Role::Assistant,
            parts: vec![Part::ToolCall {
                id: "call_12345xyz".into(),
                name: "get_weather".into(),
                arguments: json!({"location": "Paris, France"}),
            }],
        }],
        ..ChatRequest::default()
    };
    let body = serde_json::to_value(encode_request(&req, false, 0)).unwrap();
    assert_eq!(body["messages"][0], message);
}

#[test]
fn a_documented_stream_reads_chunk_by_chunk_and_gives_itself_back() {
    let unmodelled = unmodelled("delta");
    let data = sse_data(STREAM);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Chunk> = data[..data.len() - 1]
        .iter()
        .map(|chunk| assert_round_trip(chunk, &paths(&unmodelled)))
        .collect();
    let last = chunks.last().unwrap();
    assert!(last.choices.is_empty());
    let usage = last.usage.as_ref().unwrap();
    assert_eq!(
        usage.prompt_tokens_details.as_ref().unwrap().cached_tokens,
        Some(64)
    );
}

#[test]
fn llama_cpp_chunks_and_their_timings_give_themselves_back() {
    let mut unmodelled = unmodelled("delta");
    for field in [
        "cache_n",
        "prompt_per_token_ms",
        "prompt_per_second",
        "predicted_per_token_ms",
        "predicted_per_second",
    ] {
        unmodelled.push(format!("/timings/{field}"));
    }
    let data = sse_data(LLAMACPP_STREAM);
    let chunks: Vec<Chunk> = data[..data.len() - 1]
        .iter()
        .map(|chunk| assert_round_trip(chunk, &paths(&unmodelled)))
        .collect();
    let timings = chunks.last().unwrap().timings.as_ref().unwrap();
    assert_eq!(timings.prompt_n, Some(2928));
    assert_eq!(timings.predicted_ms, Some(433.09));
}

/// The conversation of `fixtures/openai_request.json`: a question, the model's tool
/// call, its result with a follow-up and a picture.
fn documented_request() -> ChatRequest {
    ChatRequest {
        model: "gpt-4.1".into(),
        system_stable: "You are a helpful assistant.".into(),
        system_volatile: "Today is Monday.".into(),
        messages: vec![
            ChatMessage::user_text("What's the weather like in Paris today?"),
            ChatMessage {
                role: Role::Assistant,
                parts: vec![Part::ToolCall {
                    id: "call_12345xyz".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Paris, France"}),
                }],
            },
            ChatMessage {
                role: Role::User,
                parts: vec![
                    Part::ToolResult {
                        call_id: "call_12345xyz".into(),
                        name: "get_weather".into(),
                        content: "14 degrees Celsius, light rain".into(),
                        is_error: false,
                    },
                    Part::Text {
                        text: "And what is in this picture?".into(),
                    },
                    Part::Image {
                        path: "inbox/photo.jpg".into(),
                        data: Some(ImageData {
                            mime: "image/jpeg".into(),
                            base64: "/9j/4AAQSkZJRg==".into(),
                        }),
                    },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Get current temperature for a given location.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"location": {"type": "string",
                    "description": "City and country e.g. Bogotá, Colombia"}},
                "required": ["location"],
                "additionalProperties": false,
            })
            .into(),
        }],
        max_tokens: 1024,
        ..ChatRequest::default()
    }
}

#[test]
fn the_request_has_the_documented_shape() {
    let req = documented_request();
    let body = serde_json::to_value(encode_request(&req, true, req.max_tokens)).unwrap();
    let documented: Value = serde_json::from_str(REQUEST).unwrap();
    assert_eq!(body, documented);
}

#[test]
fn the_request_keeps_pincers_field_order() {
    // The order Pincer has always sent, byte for byte.
    let req = ChatRequest {
        model: "m".into(),
        system_stable: "s".into(),
        messages: vec![
            ChatMessage::user_text("hi"),
            ChatMessage {
                role: Role::Assistant,
                parts: vec![Part::ToolCall {
                    id: "c".into(),
                    name: "t".into(),
                    arguments: json!({}),
                }],
            },
        ],
        tools: vec![ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}).into(),
        }],
        ..ChatRequest::default()
    };
    assert_eq!(
        serde_json::to_string(&encode_request(&req, true, 5)).unwrap(),
        concat!(
            r#"{"model":"m","messages":[{"role":"system","content":"s"},"#,
            r#"{"role":"user","content":"hi"},{"role":"assistant","content":null,"#,
            r#""tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":"{}"}}]}],"#,
            r#""stream":true,"stream_options":{"include_usage":true},"max_tokens":5,"#,
            r#""tools":[{"type":"function","function":{"name":"t","description":"d","#,
            r#""parameters":{"type":"object"}}}]}"#,
        )
    );
}
