//! Tests of context-overflow recognition on the bodies servers send: llama.cpp's
//! recorded from a real `llama-server` (xllamacpp 2026.10.11549, SmolLM2-135M, `-c
//! 2048`; `fixtures/`), the others as their servers document and send them. Each must
//! classify as `ContextTooLong` and carry the window the server named.

use super::*;
use crate::error::{ErrorKind, classify_http, classify_stream_error};
use crate::error_body::ErrorBody;

/// llama.cpp's answer to a 3,031-token request on a 2,048-token server, verbatim.
const LLAMACPP_RECORDED: &str = include_str!("fixtures/llamacpp_exceed_context.json");

struct Case {
    server: &'static str,
    status: u16,
    body: &'static str,
    limit: Option<u64>,
    prompt: Option<u64>,
}

const CASES: &[Case] = &[
    Case {
        server: "llama.cpp (recorded)",
        status: 400,
        body: LLAMACPP_RECORDED,
        limit: Some(2048),
        prompt: Some(3031),
    },
    Case {
        server: "llama.cpp (issue 34, an 8K server)",
        status: 400,
        body: r#"{"error":{"code":400,"message":"request (8627 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8627,"n_ctx":8192}}"#,
        limit: Some(8192),
        prompt: Some(8627),
    },
    Case {
        server: "vLLM (older: the error object is the body)",
        status: 400,
        body: r#"{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        limit: Some(2048),
        prompt: None,
    },
    Case {
        server: "vLLM (newer)",
        status: 400,
        body: r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 4096 output tokens and your prompt contains at least 4097 input tokens, for a total of at least 8193 tokens. Please reduce the length of the input prompt or the number of requested output tokens.","type":"BadRequestError","param":null,"code":400}}"#,
        limit: Some(8192),
        prompt: Some(4097),
    },
    Case {
        server: "vLLM (engine check)",
        status: 400,
        body: r#"{"error":{"message":"The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}"#,
        limit: Some(8192),
        prompt: None,
    },
    Case {
        server: "Ollama (native error)",
        status: 400,
        body: r#"{"error":"prompt too long; exceeded max context length by 4021 tokens"}"#,
        limit: None,
        prompt: None,
    },
    Case {
        server: "Ollama (OpenAI-compatible, as a 500)",
        status: 500,
        body: r#"{"error":{"message":"the input length exceeds the context length","type":"api_error","param":null,"code":null}}"#,
        limit: None,
        prompt: None,
    },
    Case {
        server: "OpenAI",
        status: 400,
        body: r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        limit: Some(128_000),
        prompt: Some(130_512),
    },
    Case {
        server: "Anthropic",
        status: 400,
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
        limit: Some(200_000),
        prompt: Some(208_310),
    },
];

#[test]
fn every_servers_overflow_is_context_too_long_with_its_window() {
    for case in CASES {
        let err = classify_http(case.status, case.body, None);
        assert_eq!(err.kind, ErrorKind::ContextTooLong, "{}", case.server);
        assert_eq!(err.context_limit(), case.limit, "{}", case.server);
        assert_eq!(err.prompt_tokens(), case.prompt, "{}", case.server);
        assert!(!err.is_transient(), "{}", case.server);
    }
}

#[test]
fn an_overflow_inside_a_stream_carries_its_window_too() {
    let chunk: ErrorBody = serde_json::from_str(LLAMACPP_RECORDED).unwrap();
    let err = classify_stream_error(chunk.detail());
    assert_eq!(err.kind, ErrorKind::ContextTooLong);
    assert_eq!(err.context_limit(), Some(2048));
}

#[test]
fn the_message_names_the_window_and_the_setting() {
    let err = classify_http(400, LLAMACPP_RECORDED, None).for_provider("local", None);
    let text = err.to_string();
    assert!(
        text.starts_with(
            "the conversation is too long for the model (3031 tokens; its window is 2048) (HTTP 400)"
        ),
        "{text}"
    );
    assert!(text.contains("/compact"), "{text}");
    assert!(
        text.contains("context_tokens = 2048 under [models.\"local/<model>\"]"),
        "{text}"
    );
}

#[test]
fn other_errors_are_not_overflows_and_name_no_window() {
    let not_overflows = [
        (
            500,
            r#"{"error":{"message":"failed to allocate the context","type":"server_error"}}"#,
        ),
        (
            429,
            r#"{"error":{"message":"Rate limit reached for tokens per min","type":"tokens","code":"rate_limit_exceeded"}}"#,
        ),
        (
            400,
            r#"{"error":{"message":"Invalid value for 'tools'","type":"invalid_request_error"}}"#,
        ),
    ];
    for (status, body) in not_overflows {
        let err = classify_http(status, body, None);
        assert_ne!(err.kind, ErrorKind::ContextTooLong, "{body}");
        assert_eq!(err.context_limit(), None, "{body}");
    }
    // The phrase that is weak on its own counts on a 4xx only.
    let weak = r#"{"error":{"message":"request exceeds the context window"}}"#;
    assert_eq!(
        classify_http(400, weak, None).kind,
        ErrorKind::ContextTooLong
    );
    assert_eq!(classify_http(502, weak, None).kind, ErrorKind::Server);
}

#[test]
fn numbers_follow_their_phrases_with_separators() {
    assert_eq!(number_after("is 128,000 tokens", "is "), Some(128_000));
    assert_eq!(number_after("is  8192.", "is "), Some(8192));
    assert_eq!(number_after("is many", "is "), None);
    assert_eq!(number_after("nothing here", "is "), None);
}
