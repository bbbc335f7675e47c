//! Tests of the Anthropic encoder and stream decoder, without HTTP.

use super::*;
use crate::types::{ChatMessage, ToolSpec};

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        input_schema: json!({"type": "object"}).into(),
    }
}

#[test]
fn request_marks_the_cacheable_prefix() {
    let req = ChatRequest {
        model: "claude-sonnet-4-5".into(),
        system_stable: "You are Pincer.".into(),
        system_volatile: "It is Monday.".into(),
        messages: vec![
            ChatMessage::user_text("read a.rs"),
            ChatMessage {
                role: Role::Assistant,
                parts: vec![
                    Part::reasoning("hmm"),
                    Part::Text {
                        text: "Reading.".into(),
                    },
                    Part::ToolCall {
                        id: "toolu_1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a.rs"}),
                    },
                ],
            },
            ChatMessage {
                role: Role::User,
                parts: vec![
                    Part::Text {
                        text: "quickly".into(),
                    },
                    Part::ToolResult {
                        call_id: "toolu_1".into(),
                        name: "read".into(),
                        content: "no such file".into(),
                        is_error: true,
                    },
                ],
            },
        ],
        tools: vec![tool("read"), tool("grep")],
        max_tokens: 2048,
        thinking_budget: 0,
        recalled_at: None,
    };
    assert_eq!(
        serde_json::to_value(encode_request(&req, req.max_tokens)).unwrap(),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 2048,
            "stream": true,
            "system": [
                {"type": "text", "text": "You are Pincer.", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "It is Monday."},
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "read a.rs"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.rs"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true},
                    {"type": "text", "text": "quickly", "cache_control": {"type": "ephemeral"}},
                ]},
            ],
            "tools": [
                {"name": "read", "description": "the read tool", "input_schema": {"type": "object"}},
                {"name": "grep", "description": "the grep tool", "input_schema": {"type": "object"},
                 "cache_control": {"type": "ephemeral"}},
            ],
        })
    );
}

#[test]
fn the_request_is_marked_before_the_recalled_memory_and_at_its_end() {
    let recalled = "[Recalled from memory] memory/tea.md — likes green tea";
    let mut req = ChatRequest {
        model: "m".into(),
        messages: vec![
            ChatMessage::user_text("hi"),
            ChatMessage {
                role: Role::Assistant,
                parts: vec![Part::Text {
                    text: "hello".into(),
                }],
            },
            ChatMessage {
                role: Role::User,
                parts: vec![
                    Part::Text {
                        text: "tea?".into(),
                    },
                    Part::Text {
                        text: recalled.into(),
                    },
                ],
            },
        ],
        recalled_at: Some((2, 1)),
        ..ChatRequest::default()
    };
    let marks = |req: &ChatRequest| -> Vec<String> {
        let body = serde_json::to_value(encode_request(req, req.max_tokens)).unwrap();
        let mut marked = Vec::new();
        for message in body["messages"].as_array().unwrap() {
            for block in message["content"].as_array().unwrap() {
                if block.get("cache_control").is_some() {
                    marked.push(block["text"].as_str().unwrap_or("?").to_string());
                }
            }
        }
        marked
    };
    assert_eq!(marks(&req), vec!["tea?".to_string(), recalled.to_string()]);
    // Nothing recalled: the end only.
    req.recalled_at = None;
    assert_eq!(marks(&req), vec![recalled.to_string()]);
    // A place that is not a clean split (nothing before it) adds no mark.
    req.recalled_at = Some((2, 0));
    assert_eq!(marks(&req), vec![recalled.to_string()]);
    // Thinking blocks cannot carry a mark.
    let mut blocks = vec![wire::Content::Thinking {
        thinking: "t",
        signature: "s",
    }];
    mark_last(&mut blocks);
    assert_eq!(
        serde_json::to_value(&blocks).unwrap(),
        json!([{"type": "thinking", "thinking": "t", "signature": "s"}])
    );
}

#[test]
fn empty_system_and_tools_are_omitted_and_max_tokens_defaults() {
    let req = ChatRequest {
        model: "m".into(),
        messages: vec![ChatMessage::user_text("hi")],
        ..ChatRequest::default()
    };
    let body = serde_json::to_value(encode_request(&req, req.max_tokens)).unwrap();
    assert!(body.get("system").is_none());
    assert!(body.get("tools").is_none());
    assert_eq!(body["max_tokens"], json!(DEFAULT_MAX_TOKENS));
}

#[test]
fn raw_arguments_travel_inside_an_object() {
    assert_eq!(
        tool_input(&Value::String("{oops".into())).into_owned(),
        json!({"_raw_arguments": "{oops"})
    );
    assert_eq!(
        tool_input(&Value::String("{\"a\":1}".into())).into_owned(),
        json!({"a": 1})
    );
}

fn decode(lines: &[&str]) -> (Result<ChatResponse, ProviderError>, Vec<String>) {
    let mut seen = Vec::new();
    let mut on_event = |event: StreamEvent<'_>| seen.push(format!("{event:?}"));
    let mut decoder = StreamDecoder::default();
    for line in lines {
        match decoder.on_data(line, &mut on_event) {
            Ok(Flow::More) => {}
            Ok(Flow::Done) => break,
            Err(e) => return (Err(e), seen),
        }
    }
    (decoder.finish(), seen)
}

#[test]
fn stream_with_thinking_text_and_tool_input_fragments() {
    let (reply, events) = decode(&[
        r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":12,"cache_read_input_tokens":900,"cache_creation_input_tokens":40,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lo"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_9","name":"read","input":{}}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"th\": \"a.rs\"}"}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_10","name":"now","input":{}}}"#,
        r#"{"type":"content_block_stop","index":3}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let reply = reply.unwrap();
    assert_eq!(
        reply.parts,
        vec![
            Part::Reasoning {
                text: "plan".into(),
                signature: Some("sig".into()),
                redacted: false,
            },
            Part::Text {
                text: "Hello".into()
            },
            Part::ToolCall {
                id: "toolu_9".into(),
                name: "read".into(),
                arguments: json!({"path": "a.rs"}),
            },
            Part::ToolCall {
                id: "toolu_10".into(),
                name: "now".into(),
                arguments: json!({}),
            },
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 42,
            cache_read_tokens: 900,
            cache_write_tokens: 40,
        }
    );
    assert_eq!(
        events,
        vec![
            r#"Reasoning("plan")"#,
            r#"Text("Hel")"#,
            r#"Text("lo")"#,
            r#"ToolCallStarted { id: "toolu_9", name: "read" }"#,
            r#"ToolCallStarted { id: "toolu_10", name: "now" }"#,
        ]
    );
}

#[test]
fn stop_reasons_map() {
    for (wire, want) in [
        ("end_turn", StopReason::EndTurn),
        ("stop_sequence", StopReason::EndTurn),
        ("max_tokens", StopReason::MaxTokens),
        ("refusal", StopReason::Other("refusal".into())),
    ] {
        let delta = format!(r#"{{"type":"message_delta","delta":{{"stop_reason":"{wire}"}}}}"#);
        let (reply, _) = decode(&[delta.as_str(), r#"{"type":"message_stop"}"#]);
        assert_eq!(reply.unwrap().stop, want);
    }
}

#[test]
fn error_event_after_200_is_classified() {
    let (reply, events) = decode(&[
        r#"{"type":"message_start","message":{"usage":{"input_tokens":5}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ]);
    let err = reply.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Overloaded);
    assert_eq!(err.message, "Overloaded");
    assert_eq!(events, vec![r#"Text("Hi")"#]);
}

#[test]
fn malformed_json_and_missing_message_stop() {
    let (reply, _) = decode(&[r#"{"type":"message_start""#]);
    assert_eq!(reply.unwrap_err().kind, ErrorKind::InvalidResponse);
    let (reply, _) = decode(&[
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
    ]);
    assert_eq!(reply.unwrap_err().kind, ErrorKind::Network);
}

#[test]
fn thinking_is_asked_for_and_its_signed_blocks_go_back_only_while_it_is_on() {
    let assistant = ChatMessage {
        role: Role::Assistant,
        parts: vec![
            Part::Reasoning {
                text: "check the file".into(),
                signature: Some("c2lnbmVk".into()),
                redacted: false,
            },
            Part::Reasoning {
                text: "ZW5jcnlwdGVk".into(),
                signature: None,
                redacted: true,
            },
            Part::reasoning("unsigned thoughts from another model"),
            Part::ToolCall {
                id: "toolu_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a.rs"}),
            },
        ],
    };
    let mut req = ChatRequest {
        model: "claude-sonnet-4-5".into(),
        messages: vec![ChatMessage::user_text("read a.rs"), assistant],
        max_tokens: 4096,
        thinking_budget: 2048,
        ..ChatRequest::default()
    };
    let body = serde_json::to_value(encode_request(&req, req.max_tokens)).unwrap();
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(body["max_tokens"], json!(4096 + 2048));
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "check the file", "signature": "c2lnbmVk"},
            {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.rs"},
             "cache_control": {"type": "ephemeral"}},
        ])
    );
    req.thinking_budget = 0;
    let body = serde_json::to_value(encode_request(&req, req.max_tokens)).unwrap();
    assert!(body.get("thinking").is_none());
    assert_eq!(
        body["messages"][1]["content"],
        json!([{"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.rs"},
                 "cache_control": {"type": "ephemeral"}}])
    );
}

#[test]
fn a_redacted_thinking_block_is_kept_with_its_data() {
    let (reply, _) = decode(&[
        r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"b3BhcXVl"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Hi"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    assert_eq!(
        reply.unwrap().parts,
        vec![
            Part::Reasoning {
                text: "b3BhcXVl".into(),
                signature: None,
                redacted: true,
            },
            Part::Text { text: "Hi".into() },
        ]
    );
}

/// The data payloads of a recorded stream.
fn recorded(stream: &str) -> Vec<String> {
    crate::round_trip::sse_data(stream)
}

#[test]
fn a_documented_stream_with_thinking_and_a_tool_call_decodes() {
    let data = recorded(include_str!("fixtures/anthropic_stream.sse"));
    let lines: Vec<&str> = data.iter().map(String::as_str).collect();
    let (reply, events) = decode(&lines);
    let reply = reply.unwrap();
    assert_eq!(
        reply.parts,
        vec![
            Part::Reasoning {
                text: "The user wants the weather in San Francisco.".into(),
                signature: Some(
                    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds0KxBJv3iESt3M8aWhoU"
                        .into()
                ),
                redacted: false,
            },
            Part::Text {
                text: "Okay, let's check the weather for San Francisco, CA:".into()
            },
            Part::ToolCall {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                arguments: json!({"location": "San Francisco, CA", "unit": "fahrenheit"}),
            },
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 472,
            output_tokens: 89,
            cache_read_tokens: 2048,
            cache_write_tokens: 0,
        }
    );
    assert_eq!(events.len(), 5, "{events:?}");
}

#[test]
fn a_documented_error_event_ends_the_reply_with_its_kind() {
    let data = recorded(include_str!("fixtures/anthropic_stream_error.sse"));
    let lines: Vec<&str> = data.iter().map(String::as_str).collect();
    let (reply, events) = decode(&lines);
    let err = reply.unwrap_err();
    assert_eq!(
        (err.kind, err.message.as_str()),
        (ErrorKind::Overloaded, "Overloaded")
    );
    assert_eq!(events, vec![r#"Text("Hello")"#]);
}

#[test]
fn fields_of_an_unexpected_shape_read_as_absent_and_the_rest_still_counts() {
    let (reply, events) = decode(&[
        // JSON that names no event is skipped, as are event types added later.
        r#"{"index":0}"#,
        r#""ping""#,
        r#"{"type":7}"#,
        r#"{"type":"content_block_pause","index":0}"#,
        r#"{"type":"message_start","message":{"usage":{"input_tokens":"n/a","output_tokens":1}}}"#,
        // No index: block 0.
        r#"{"type":"content_block_start","content_block":{"type":"text","text":null}}"#,
        r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
        // A block with no content_block is one Pincer does not keep.
        r#"{"type":"content_block_start","index":1}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lost"}}"#,
        r#"{"type":"message_delta","delta":null,"usage":null}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let reply = reply.unwrap();
    assert_eq!(reply.parts, vec![Part::Text { text: "Hi".into() }]);
    assert_eq!(reply.stop, StopReason::EndTurn);
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (0, 4)
    );
    assert_eq!(events, vec![r#"Text("Hi")"#]);
}
