//! End-to-end tests of both providers against the scripted local server: streaming,
//! headers, error classification, timeouts, cut streams and key rotation. Short real
//! delays, no paused clock (the sockets are real).

use std::time::{Duration, Instant};

use secrecy::SecretString;
use serde_json::json;

use super::fake_server::{End, FakeServer, Reply};
use super::*;

const PAUSE: Duration = Duration::from_millis(120);

fn settings(server: &FakeServer, keys: &[&str]) -> ProviderSettings {
    ProviderSettings {
        api_keys: keys
            .iter()
            .map(|k| SecretString::from(k.to_string()))
            .collect(),
        timeout: Duration::from_secs(5),
        // Generous, so a loaded CI machine never trips it by accident; the stall test
        // sets its own.
        idle_timeout: Duration::from_secs(2),
        ..ProviderSettings::new("fake", format!("{}/v1", server.base))
    }
}

fn openai(server: &FakeServer, keys: &[&str]) -> OpenAiProvider {
    OpenAiProvider::new(settings(server, keys), http_client().unwrap())
}

fn anthropic(server: &FakeServer, keys: &[&str]) -> AnthropicProvider {
    let mut settings = settings(server, keys);
    settings.base_url = format!("{}/", server.base);
    AnthropicProvider::new(settings, http_client().unwrap())
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "m1".into(),
        system_stable: "be brief".into(),
        messages: vec![ChatMessage::user_text("hi")],
        max_tokens: 100,
        ..ChatRequest::default()
    }
}

/// Run one call; return the result and each text delta with when it arrived.
async fn call(
    provider: &dyn Provider,
) -> (Result<ChatResponse, ProviderError>, Vec<(String, Instant)>) {
    let mut seen = Vec::new();
    let mut on_event = |event: StreamEvent<'_>| {
        if let StreamEvent::Text(text) = event {
            seen.push((text.to_string(), Instant::now()));
        }
    };
    let result = provider.stream(&request(), &mut on_event).await;
    (result, seen)
}

fn openai_delta(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": text}}]})
    )
}

const OPENAI_END: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
    data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n";

fn anthropic_delta(text: &str) -> String {
    let data = json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": text}});
    format!("event: content_block_delta\r\ndata: {data}\r\n\r\n")
}

const ANTHROPIC_START: &str = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\r\n\r\n\
    event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n";

const ANTHROPIC_END: &str = "event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n\
    event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\r\n\r\n\
    event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";

/// Text arrived as separate deltas, spread over time (not buffered to the end).
fn assert_streamed(seen: &[(String, Instant)]) {
    let texts: Vec<&str> = seen.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(texts, vec!["Hel", "lo"]);
    assert!(seen[1].1 - seen[0].1 >= PAUSE / 2);
}

#[tokio::test]
async fn openai_streams_text_as_it_arrives() {
    let server = FakeServer::start(vec![Reply::sse(
        &[&openai_delta("Hel"), &openai_delta("lo"), OPENAI_END],
        PAUSE,
    )])
    .await;
    let (result, seen) = call(&openai(&server, &["sk-test-1"])).await;
    let reply = result.unwrap();
    assert_eq!(
        reply.parts,
        vec![Part::Text {
            text: "Hello".into()
        }]
    );
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (7, 3)
    );
    assert_streamed(&seen);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-1"));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.body["model"], json!("m1"));
}

#[tokio::test]
async fn anthropic_streams_text_as_it_arrives() {
    let server = FakeServer::start(vec![Reply::sse(
        &[
            ANTHROPIC_START,
            &anthropic_delta("Hel"),
            &anthropic_delta("lo"),
            ANTHROPIC_END,
        ],
        PAUSE,
    )])
    .await;
    let (result, seen) = call(&anthropic(&server, &["sk-ant-test"])).await;
    let reply = result.unwrap();
    assert_eq!(
        reply.parts,
        vec![Part::Text {
            text: "Hello".into()
        }]
    );
    assert_eq!(reply.stop, StopReason::EndTurn);
    assert_streamed(&seen);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let body = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    let server = FakeServer::start(vec![Reply::json(429, body).header("retry-after", "2")]).await;
    let err = call(&openai(&server, &[])).await.0.unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimit);
    assert_eq!(err.status, Some(429));
    assert_eq!(err.retry_after, Some(Duration::from_secs(2)));
    assert_eq!(
        err.to_string(),
        "rate limited by provider fake (HTTP 429): Rate limit reached; retry after 2s"
    );
    assert_eq!(server.requests()[0].header("authorization"), None);

    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = FakeServer::start(vec![Reply::json(529, body)]).await;
    let err = call(&anthropic(&server, &["k"])).await.0.unwrap_err();
    assert_eq!((err.kind, err.status), (ErrorKind::Overloaded, Some(529)));
}

#[tokio::test]
async fn anthropic_error_event_after_200() {
    let error = "event: error\r\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\r\n\r\n";
    let server = FakeServer::start(vec![Reply::sse(
        &[ANTHROPIC_START, &anthropic_delta("Hel"), error],
        Duration::ZERO,
    )])
    .await;
    let (result, seen) = call(&anthropic(&server, &["k"])).await;
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Overloaded);
    assert_eq!(err.provider, "fake");
    assert_eq!(seen.len(), 1);
}

#[tokio::test]
async fn stalled_streams_hit_the_idle_timeout() {
    let server = FakeServer::start(vec![
        Reply::sse(&[&openai_delta("Hel")], Duration::ZERO).ending(End::Stall),
        Reply::sse(&[ANTHROPIC_START], Duration::ZERO).ending(End::Stall),
    ])
    .await;
    let mut settings = settings(&server, &[]);
    settings.idle_timeout = Duration::from_millis(200);
    let started = Instant::now();
    let provider = OpenAiProvider::new(settings.clone(), http_client().unwrap());
    let err = call(&provider).await.0.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(
        err.message.contains("no data from the model for 200ms")
            && err.message.contains("providers.fake.idle_timeout_secs"),
        "{err}"
    );
    // Well before the 5 s whole-call timeout.
    assert!(started.elapsed() < Duration::from_secs(3));
    settings.base_url = server.base.clone();
    let provider = AnthropicProvider::new(settings, http_client().unwrap());
    let err = call(&provider).await.0.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
}

#[tokio::test]
async fn a_slow_trickle_hits_the_whole_call_timeout() {
    let trickle: Vec<String> = (0..40).map(|_| ": still here\n\n".to_string()).collect();
    let trickle: Vec<&str> = trickle.iter().map(String::as_str).collect();
    let server = FakeServer::start(vec![Reply::sse(&trickle, Duration::from_millis(50))]).await;
    let mut settings = settings(&server, &[]);
    settings.timeout = Duration::from_millis(400);
    let provider = OpenAiProvider::new(settings, http_client().unwrap());
    let err = call(&provider).await.0.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    // Keep-alives alone: the server never began its reply.
    assert!(err.still_reading);
    assert!(
        err.message.contains("still reading the request")
            && err.message.contains("providers.fake.timeout_secs"),
        "{err}"
    );
}

#[tokio::test]
async fn cut_streams_are_network_errors() {
    let server = FakeServer::start(vec![
        Reply::sse(&[&openai_delta("Hel")], Duration::ZERO).ending(End::Cut),
        Reply::sse(&[ANTHROPIC_START, &anthropic_delta("Hel")], Duration::ZERO).ending(End::Cut),
        // A cleanly ended body that lacks the terminal event is cut short too.
        Reply::sse(&[&openai_delta("Hel")], Duration::ZERO),
    ])
    .await;
    let (result, seen) = call(&openai(&server, &[])).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::Network);
    assert_eq!(seen.len(), 1);
    let err = call(&anthropic(&server, &[])).await.0.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Network);
    let err = call(&openai(&server, &[])).await.0.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Network);
    assert_eq!(err.message, "connection closed mid-reply");
}

#[tokio::test]
async fn unreachable_server_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let provider = OpenAiProvider::new(ProviderSettings::new("fake", base), http_client().unwrap());
    let err = call(&provider).await.0.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Network);
    assert!(err.to_string().contains("providers.fake.base_url"), "{err}");
}

#[tokio::test]
async fn servers_rejecting_stream_options_are_retried_once_and_remembered() {
    let rejected =
        r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#;
    let server = FakeServer::start(vec![
        Reply::json(400, rejected),
        Reply::sse(&[&openai_delta("a"), OPENAI_END], Duration::ZERO),
        Reply::sse(&[&openai_delta("b"), OPENAI_END], Duration::ZERO),
    ])
    .await;
    let provider = openai(&server, &[]);
    assert!(call(&provider).await.0.is_ok());
    assert!(call(&provider).await.0.is_ok());
    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    assert!(sent[0].body.get("stream_options").is_some());
    assert!(sent[1].body.get("stream_options").is_none());
    assert!(sent[2].body.get("stream_options").is_none());
}

#[tokio::test]
async fn keys_rotate_after_auth_and_rate_limit_failures() {
    let server = FakeServer::start(vec![
        Reply::json(
            401,
            r#"{"error":{"message":"Incorrect API key provided: sk-one-secret"}}"#,
        ),
        Reply::json(429, r#"{"error":{"message":"slow down"}}"#),
        Reply::sse(&[&openai_delta("ok"), OPENAI_END], Duration::ZERO),
    ])
    .await;
    let provider = openai(&server, &["sk-one-secret", "sk-two-secret"]);
    let err = call(&provider).await.0.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(!err.to_string().contains("sk-one-secret"), "{err}");
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    assert_eq!(
        call(&provider).await.0.unwrap_err().kind,
        ErrorKind::RateLimit
    );
    assert!(call(&provider).await.0.is_ok());
    let keys: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        keys,
        vec![
            "Bearer sk-one-secret",
            "Bearer sk-two-secret",
            "Bearer sk-one-secret"
        ]
    );
}
