//! The Messages types held to the documented format: recorded replies and stream
//! events read into them and give themselves back (`round_trip`), and the request
//! Pincer builds has the documented shape, field for field and in Pincer's order.

use serde_json::{Value, json};

use super::*;
use crate::anthropic::encode_request;
use crate::round_trip::{assert_round_trip, sse_data};
use crate::types::{ChatMessage, ChatRequest, ImageData, Part};

const REPLY: &str = include_str!("../fixtures/anthropic_message_tool_use.json");
const STREAM: &str = include_str!("../fixtures/anthropic_stream.sse");
const STREAM_ERROR: &str = include_str!("../fixtures/anthropic_stream_error.sse");
const REQUEST: &str = include_str!("../fixtures/anthropic_request.json");

/// What the message object carries that Pincer does not read.
const MESSAGE_UNMODELLED: &[&str] = &[
    "/id",
    "/type",
    "/role",
    "/model",
    "/stop_sequence",
    "/usage/service_tier",
];

/// The same, inside the events of a stream.
const EVENT_UNMODELLED: &[&str] = &[
    "/message/id",
    "/message/type",
    "/message/role",
    "/message/model",
    "/message/stop_sequence",
    "/delta/stop_sequence",
];

#[test]
fn a_documented_reply_reads_and_gives_itself_back() {
    let reply: Reply = assert_round_trip(REPLY, MESSAGE_UNMODELLED);
    let [
        Block::Thinking { signature, .. },
        Block::Text { text },
        Block::ToolUse { id, name, input },
    ] = reply.content.as_slice()
    else {
        panic!("thinking, text, tool use: {reply:?}")
    };
    assert!(signature.as_deref().is_some_and(|s| s.starts_with("EqQB")));
    assert_eq!(
        text,
        "I'll check the current weather in San Francisco for you."
    );
    assert_eq!(
        (id.as_str(), name.as_str()),
        ("toolu_01A09q90qw90lq917835lq9", "get_weather")
    );
    assert_eq!(
        input,
        &json!({"location": "San Francisco, CA", "unit": "celsius"})
    );
    assert_eq!(reply.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(reply.usage.unwrap().output_tokens, Some(89));
}

#[test]
fn a_documented_stream_reads_event_by_event_and_gives_itself_back() {
    let events: Vec<Event> = sse_data(STREAM)
        .iter()
        .map(|event| assert_round_trip(event, EVENT_UNMODELLED))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| match event {
            Event::MessageStart { .. } => "message_start",
            Event::ContentBlockStart { .. } => "content_block_start",
            Event::ContentBlockDelta { delta, .. } => match delta {
                Delta::Text { .. } => "text_delta",
                Delta::Thinking { .. } => "thinking_delta",
                Delta::Signature { .. } => "signature_delta",
                Delta::InputJson { .. } => "input_json_delta",
                Delta::Other => "other delta",
            },
            Event::ContentBlockStop { .. } => "content_block_stop",
            Event::MessageDelta { .. } => "message_delta",
            Event::MessageStop => "message_stop",
            Event::Ping => "ping",
            Event::Error { .. } => "error",
            Event::Unknown => "unknown",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "ping",
            "thinking_delta",
            "thinking_delta",
            "signature_delta",
            "content_block_stop",
            "content_block_start",
            "text_delta",
            "text_delta",
            "content_block_stop",
            "content_block_start",
            "input_json_delta",
            "input_json_delta",
            "input_json_delta",
            "input_json_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
}

#[test]
fn a_documented_error_event_reads_and_gives_itself_back() {
    let events: Vec<Event> = sse_data(STREAM_ERROR)
        .iter()
        .map(|event| assert_round_trip(event, EVENT_UNMODELLED))
        .collect();
    let Some(Event::Error { error }) = events.last() else {
        panic!("ends in an error: {events:?}")
    };
    let error = error.object().unwrap();
    assert_eq!(error.kind.as_deref(), Some("overloaded_error"));
    assert_eq!(error.message.as_deref(), Some("Overloaded"));
}

#[test]
fn an_event_type_from_after_this_was_written_reads_as_unknown() {
    let event: Event = serde_json::from_str(r#"{"type":"content_block_pause","index":3}"#).unwrap();
    assert!(matches!(event, Event::Unknown));
    let event: Event = serde_json::from_str(
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
    )
    .unwrap();
    assert!(matches!(
        event,
        Event::ContentBlockStart {
            index: 1,
            content_block: Block::Other
        }
    ));
}

/// The conversation of `fixtures/anthropic_request.json`: a question, the model's
/// signed thinking and tool call, its result with a follow-up and a picture.
fn documented_request() -> ChatRequest {
    ChatRequest {
        model: "claude-sonnet-4-5".into(),
        system_stable: "You are a helpful assistant.".into(),
        system_volatile: "Today is Monday.".into(),
        messages: vec![
            ChatMessage::user_text("What's the weather like in San Francisco?"),
            ChatMessage {
                role: Role::Assistant,
                parts: vec![
                    Part::Reasoning {
                        text: "The user wants the weather in San Francisco. The get_weather tool takes a location.".into(),
                        signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds0KxBJv3iESt3M8aWhoU".into()),
                        redacted: false,
                    },
                    Part::ToolCall {
                        id: "toolu_01A09q90qw90lq917835lq9".into(),
                        name: "get_weather".into(),
                        arguments: json!({"location": "San Francisco, CA", "unit": "celsius"}),
                    },
                ],
            },
            ChatMessage {
                role: Role::User,
                parts: vec![
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
                    Part::ToolResult {
                        call_id: "toolu_01A09q90qw90lq917835lq9".into(),
                        name: "get_weather".into(),
                        content: "15 degrees".into(),
                        is_error: false,
                    },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Get the current weather in a given location".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "location": {"type": "string",
                        "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                        "description": "The unit of temperature, either 'celsius' or 'fahrenheit'"},
                },
                "required": ["location"],
            })
            .into(),
        }],
        max_tokens: 1024,
        thinking_budget: 2048,
        recalled_at: None,
    }
}

#[test]
fn the_request_has_the_documented_shape() {
    let req = documented_request();
    let body = serde_json::to_value(encode_request(&req, req.max_tokens)).unwrap();
    let documented: Value = serde_json::from_str(REQUEST).unwrap();
    assert_eq!(body, documented);
}

#[test]
fn the_request_keeps_pincers_field_order() {
    // The order Pincer has always sent, byte for byte.
    let req = ChatRequest {
        model: "m".into(),
        system_stable: "s".into(),
        messages: vec![ChatMessage::user_text("hi")],
        tools: vec![ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}).into(),
        }],
        thinking_budget: 10,
        ..ChatRequest::default()
    };
    assert_eq!(
        serde_json::to_string(&encode_request(&req, 5)).unwrap(),
        concat!(
            r#"{"model":"m","max_tokens":15,"stream":true,"#,
            r#""messages":[{"role":"user","content":[{"type":"text","text":"hi","#,
            r#""cache_control":{"type":"ephemeral"}}]}],"#,
            r#""system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"#,
            r#""thinking":{"type":"enabled","budget_tokens":10},"#,
            r#""tools":[{"name":"t","description":"d","input_schema":{"type":"object"},"#,
            r#""cache_control":{"type":"ephemeral"}}]}"#,
        )
    );
}
