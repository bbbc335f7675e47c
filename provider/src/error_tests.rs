//! Tests of error classification and the messages users see.

use super::*;

fn kind(status: u16, body: &str) -> ErrorKind {
    classify_http(status, body, None).kind
}

#[test]
fn statuses_and_bodies_classify() {
    let openai = |t: &str, code: &str, msg: &str| {
        format!(r#"{{"error":{{"message":"{msg}","type":"{t}","code":"{code}"}}}}"#)
    };
    let anthropic = |t: &str, msg: &str| {
        format!(r#"{{"type":"error","error":{{"type":"{t}","message":"{msg}"}}}}"#)
    };
    let cases: Vec<(u16, String, ErrorKind)> = vec![
        (
            401,
            openai(
                "invalid_request_error",
                "invalid_api_key",
                "Incorrect API key provided",
            ),
            ErrorKind::Auth,
        ),
        (
            403,
            anthropic("permission_error", "no access"),
            ErrorKind::Auth,
        ),
        (402, "payment required".into(), ErrorKind::Billing),
        (
            429,
            openai(
                "insufficient_quota",
                "insufficient_quota",
                "You exceeded your current quota",
            ),
            ErrorKind::Billing,
        ),
        (
            400,
            anthropic(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API.",
            ),
            ErrorKind::Billing,
        ),
        (
            429,
            openai(
                "requests",
                "rate_limit_exceeded",
                "Rate limit reached for gpt-4.1",
            ),
            ErrorKind::RateLimit,
        ),
        (
            429,
            anthropic(
                "rate_limit_error",
                "Number of requests has exceeded your rate limit",
            ),
            ErrorKind::RateLimit,
        ),
        (
            529,
            anthropic("overloaded_error", "Overloaded"),
            ErrorKind::Overloaded,
        ),
        (503, "Service Unavailable".into(), ErrorKind::Overloaded),
        (408, String::new(), ErrorKind::Timeout),
        (504, "gateway timeout".into(), ErrorKind::Timeout),
        (
            500,
            anthropic("api_error", "Internal server error"),
            ErrorKind::Server,
        ),
        (502, "<html>bad gateway</html>".into(), ErrorKind::Server),
        (
            404,
            openai(
                "invalid_request_error",
                "model_not_found",
                "The model `gpt-9` does not exist",
            ),
            ErrorKind::ModelNotFound,
        ),
        (
            404,
            anthropic("not_found_error", "model: claude-nope"),
            ErrorKind::ModelNotFound,
        ),
        (
            404,
            r#"{"error":"model \"llama9\" not found, try pulling it first"}"#.into(),
            ErrorKind::ModelNotFound,
        ),
        (
            400,
            openai(
                "invalid_request_error",
                "context_length_exceeded",
                "This model's maximum context length is 128000 tokens",
            ),
            ErrorKind::ContextTooLong,
        ),
        (
            400,
            anthropic(
                "invalid_request_error",
                "prompt is too long: 210000 tokens > 200000 maximum",
            ),
            ErrorKind::ContextTooLong,
        ),
        (
            413,
            anthropic(
                "request_too_large",
                "Request exceeds the maximum allowed number of bytes",
            ),
            ErrorKind::ContextTooLong,
        ),
        (
            400,
            openai("invalid_request_error", "", "Invalid value for 'tools'"),
            ErrorKind::BadRequest,
        ),
        (422, "unprocessable".into(), ErrorKind::BadRequest),
    ];
    for (status, body, want) in cases {
        assert_eq!(kind(status, &body), want, "HTTP {status} {body}");
    }
}

/// Classify `json` as an error that arrived inside a stream.
fn stream_error(json: &str) -> ProviderError {
    let body: ErrorBody = serde_json::from_str(json).unwrap();
    classify_stream_error(body.detail())
}

#[test]
fn stream_errors_classify_from_their_type() {
    let overloaded = stream_error(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    assert_eq!(overloaded.kind, ErrorKind::Overloaded);
    let routed = stream_error(r#"{"error":{"code":502,"message":"upstream died"}}"#);
    assert_eq!((routed.kind, routed.status), (ErrorKind::Server, Some(502)));
    let vague = stream_error(r#"{"error":{"message":"oops"}}"#);
    assert!(vague.is_transient());
    // An error of no known shape is still an error.
    let bare = stream_error(r#"{"error":true}"#);
    assert_eq!(
        (bare.kind, bare.message.as_str()),
        (ErrorKind::Server, "the stream reported an error")
    );
}

#[test]
fn retry_after_seconds_and_dates() {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("retry-after", "2".parse().unwrap());
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
    headers.insert(
        "retry-after",
        "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
    );
    assert_eq!(retry_after(&headers), None);
    headers.insert("retry-after-ms", "1500".parse().unwrap());
    assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
}

#[test]
fn display_names_the_fix() {
    let err = classify_http(429, "{}", Some(Duration::from_secs(2)));
    assert_eq!(
        err.to_string(),
        "rate limited by the provider (HTTP 429); retry after 2s"
    );
    let err = classify_http(401, r#"{"error":{"message":"bad key"}}"#, None)
        .for_provider("openai", Some("OPENAI_API_KEY"));
    assert_eq!(
        err.to_string(),
        "authentication failed at provider openai (HTTP 401): bad key; \
         check the API key in .security.yml (providers.openai) or OPENAI_API_KEY"
    );
    let err = ProviderError::new(ErrorKind::ContextTooLong, "too long");
    assert!(err.to_string().contains("/compact"));
}

#[test]
fn long_messages_are_cut() {
    let err = ProviderError::new(ErrorKind::Server, "é".repeat(1000));
    assert_eq!(err.message.chars().count(), MAX_MESSAGE_CHARS + 1);
}

/// llama-server started without `--jinja`, asked for tools: recorded verbatim from a
/// real server (xllamacpp 2026.10.11549).
const NO_JINJA: &str = include_str!("fixtures/llamacpp_no_jinja.json");

#[test]
fn a_server_missing_a_flag_is_a_configuration_error_that_names_the_flag() {
    let err = classify_http(500, NO_JINJA, None).for_provider("local", None);
    assert_eq!(err.kind, ErrorKind::ServerConfig);
    assert!(
        !err.is_transient(),
        "retrying cannot help until it restarts"
    );
    assert_eq!(
        err.to_string(),
        "provider local's server was started without a setting it needs (HTTP 500): \
         tools param requires --jinja flag; restart the server with --jinja"
    );
    assert!(!err.to_string().contains("try again later"));

    let vllm = r#"{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}"#;
    let err = classify_http(400, vllm, None);
    assert_eq!(err.kind, ErrorKind::ServerConfig);
    assert!(
        err.to_string()
            .ends_with("restart the server with --enable-auto-tool-choice and --tool-call-parser"),
        "{err}"
    );
}

#[test]
fn a_command_line_quoted_in_passing_is_not_a_missing_flag() {
    assert!(missing_flags("llama-server --port 8080 crashed: out of memory").is_empty());
    assert_eq!(
        missing_flags("start it with `--embeddings`"),
        ["--embeddings"]
    );
    assert_eq!(
        classify_http(
            500,
            r#"{"error":{"message":"model crashed (--ctx-size 8192)"}}"#,
            None
        )
        .kind,
        ErrorKind::Server
    );
}
