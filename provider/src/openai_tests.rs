//! Tests of the OpenAI-compatible encoder and stream decoder, without HTTP.

use super::*;
use crate::ErrorKind;
use crate::types::{ChatMessage, ToolSpec};

fn request() -> ChatRequest {
    ChatRequest {
        model: "gpt-4.1-mini".into(),
        system_stable: "You are Pincer.".into(),
        system_volatile: "It is Monday.".into(),
        messages: vec![
            ChatMessage::user_text("list files"),
            ChatMessage {
                role: Role::Assistant,
                parts: vec![
                    Part::reasoning("hmm"),
                    Part::Text {
                        text: "Looking.".into(),
                    },
                    Part::ToolCall {
                        id: "call_1".into(),
                        name: "ls".into(),
                        arguments: json!({"path": "."}),
                    },
                    Part::ToolCall {
                        id: "call_2".into(),
                        name: "ls".into(),
                        arguments: Value::String("{broken".into()),
                    },
                ],
            },
            ChatMessage {
                role: Role::User,
                parts: vec![
                    Part::Text {
                        text: "also this".into(),
                    },
                    Part::ToolResult {
                        call_id: "call_1".into(),
                        name: "ls".into(),
                        content: "a.txt".into(),
                        is_error: false,
                    },
                    Part::ToolResult {
                        call_id: "call_2".into(),
                        name: "ls".into(),
                        content: "bad arguments".into(),
                        is_error: true,
                    },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "ls".into(),
            description: "List a directory".into(),
            input_schema: json!({"type": "object"}).into(),
        }],
        max_tokens: 1024,
        thinking_budget: 0,
        recalled_at: None,
    }
}

#[test]
fn request_encodes_tool_calls_and_results() {
    let body =
        serde_json::to_value(encode_request(&request(), true, request().max_tokens)).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "gpt-4.1-mini",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 1024,
            "messages": [
                {"role": "system", "content": "You are Pincer.\n\nIt is Monday."},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "ls", "arguments": "{broken"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: bad arguments"},
                {"role": "user", "content": "also this"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "ls", "description": "List a directory", "parameters": {"type": "object"}}}],
        })
    );
}

#[test]
fn empty_halves_and_options_are_omitted() {
    let req = ChatRequest {
        model: "m".into(),
        system_volatile: "volatile only".into(),
        messages: vec![ChatMessage::user_text("hi")],
        ..ChatRequest::default()
    };
    let body = serde_json::to_value(encode_request(&req, false, req.max_tokens)).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "m",
            "stream": true,
            "messages": [
                {"role": "system", "content": "volatile only"},
                {"role": "user", "content": "hi"},
            ],
        })
    );
}

/// Decode `lines` (SSE data payloads); return the reply and the events seen.
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
fn stream_with_text_and_interleaved_tool_calls() {
    let (reply, events) = decode(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Let me "}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"check."}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"grep","arguments":"{\"pat"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"x\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.rs\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":50,"prompt_tokens_details":{"cached_tokens":800}}}"#,
        "[DONE]",
    ]);
    let reply = reply.unwrap();
    assert_eq!(
        reply.parts,
        vec![
            Part::reasoning("think"),
            Part::Text {
                text: "Let me check.".into()
            },
            Part::ToolCall {
                id: "call_a".into(),
                name: "read".into(),
                arguments: json!({"path": "a.rs"}),
            },
            Part::ToolCall {
                id: "call_b".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "x"}),
            },
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 200,
            output_tokens: 50,
            cache_read_tokens: 800,
            cache_write_tokens: 0,
        }
    );
    assert_eq!(
        events,
        vec![
            r#"Reasoning("think")"#,
            r#"Text("Let me ")"#,
            r#"Text("check.")"#,
            r#"ToolCallStarted { id: "call_a", name: "read" }"#,
            r#"ToolCallStarted { id: "call_b", name: "grep" }"#,
        ]
    );
}

#[test]
fn bad_and_empty_arguments() {
    let (reply, _) = decode(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"a","arguments":"{oops"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"b"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
    ]);
    let reply = reply.unwrap();
    assert_eq!(
        reply.parts,
        vec![
            Part::ToolCall {
                id: "c1".into(),
                name: "a".into(),
                arguments: Value::String("{oops".into()),
            },
            Part::ToolCall {
                id: "call_1".into(),
                name: "b".into(),
                arguments: json!({}),
            },
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
}

#[test]
fn finish_reasons_map() {
    let stop_of = |reason: &str| {
        let line =
            format!(r#"{{"choices":[{{"delta":{{"content":"x"}},"finish_reason":"{reason}"}}]}}"#);
        decode(&[line.as_str()]).0.unwrap().stop
    };
    assert_eq!(stop_of("stop"), StopReason::EndTurn);
    assert_eq!(stop_of("length"), StopReason::MaxTokens);
    assert_eq!(
        stop_of("content_filter"),
        StopReason::Other("content_filter".into())
    );
}

#[test]
fn error_chunk_mid_stream_is_classified() {
    let (reply, events) = decode(&[
        r#"{"choices":[{"delta":{"content":"par"}}]}"#,
        r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
    ]);
    assert_eq!(reply.unwrap_err().kind, ErrorKind::RateLimit);
    assert_eq!(events.len(), 1);
}

#[test]
fn malformed_json_and_cut_streams() {
    let (reply, _) = decode(&[r#"{"choices":[{"delta":{"content":"x"}"#]);
    assert_eq!(reply.unwrap_err().kind, ErrorKind::InvalidResponse);
    let (reply, _) = decode(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#]);
    let err = reply.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Network);
    assert_eq!(err.message, "connection closed mid-reply");
}

/// The data payloads of a recorded stream.
fn recorded(stream: &str) -> Vec<String> {
    crate::round_trip::sse_data(stream)
}

#[test]
fn a_documented_stream_of_parallel_tool_calls_decodes() {
    let data = recorded(include_str!("fixtures/openai_stream_tool_calls.sse"));
    let lines: Vec<&str> = data.iter().map(String::as_str).collect();
    let (reply, events) = decode(&lines);
    let reply = reply.unwrap();
    assert_eq!(
        reply.parts,
        vec![
            Part::ToolCall {
                id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
                name: "get_weather".into(),
                arguments: json!({"location": "Paris, France"}),
            },
            Part::ToolCall {
                id: "call_4T2b9aUq3cPBQf1ZKmLLzVh8".into(),
                name: "get_time".into(),
                arguments: json!({"timezone": "Europe/Paris"}),
            },
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 39,
            cache_read_tokens: 64,
            cache_write_tokens: 0,
        }
    );
    assert_eq!(
        events,
        vec![
            r#"ToolCallStarted { id: "call_DdmO9pD3xa9XTPNJ32zg2hcA", name: "get_weather" }"#,
            r#"ToolCallStarted { id: "call_4T2b9aUq3cPBQf1ZKmLLzVh8", name: "get_time" }"#,
        ]
    );
}

#[test]
fn fields_of_an_unexpected_shape_read_as_absent_and_the_rest_still_counts() {
    let (reply, events) = decode(&[
        // JSON that is no chunk at all is skipped.
        r#""keep-alive""#,
        r"[1, 2]",
        r#"{"choices":null}"#,
        // vLLM and LM Studio: explicit nulls.
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi","tool_calls":null,"reasoning":null},"finish_reason":null}],"usage":null}"#,
        // Content as a list (Mistral's thinking chunks): not text Pincer reads.
        r#"{"choices":[{"delta":{"content":[{"type":"thinking","thinking":"x"}]}}]}"#,
        // Arguments as an object, not a JSON text: the name still counts.
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"c1","function":{"name":"now","arguments":{}}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":7}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":"many","completion_tokens":3}}"#,
        r#"{"choices":[],"usage":"n/a","timings":{"prompt_n":1}}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let reply = reply.unwrap();
    assert_eq!(
        reply.parts,
        vec![
            Part::Text { text: "Hi".into() },
            Part::ToolCall {
                id: "c1".into(),
                name: "now".into(),
                arguments: json!({}),
            },
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (0, 3)
    );
    assert_eq!(events.len(), 2);
}
