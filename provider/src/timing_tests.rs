//! End-to-end tests of the time a call is given, against the scripted local server:
//! keep-alive comments count as life, a slow first read is not cut off by the reply
//! limit, a call that runs out of time while the server still reads is neither
//! retried on the same model nor forgotten (the model's reading speed drops), a slow
//! writer is asked for fewer tokens, and a server missing `--jinja` is asked once.
//! Short real delays with wide margins, no paused clock (the sockets are real).

use std::time::Duration;

use serde_json::json;

use super::fake_server::{End, FakeServer, Reply};
use super::*;

/// llama.cpp's stream for a 2,928-token prompt: a `:` keep-alive at 30 s, then a
/// four-token reply and its `timings`. Recorded from a real `llama-server`.
const RECORDED: &str = include_str!("fixtures/llamacpp_keepalive.sse");
/// llama-server without `--jinja`, asked for tools: HTTP 500 and this body.
const NO_JINJA: &str = include_str!("fixtures/llamacpp_no_jinja.json");

const PING: &str = ":\n\n";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn settings(server: &FakeServer) -> ProviderSettings {
    ProviderSettings {
        timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(1),
        ..ProviderSettings::new("fake", format!("{}/v1", server.base))
    }
}

/// A request of about 1,000 tokens (4,000 bytes), asking for 4,096.
fn request(model: &str) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages: vec![ChatMessage::user_text("x".repeat(4_000))],
        max_tokens: 4_096,
        ..ChatRequest::default()
    }
}

async fn call(provider: &dyn Provider, model: &str) -> Result<ChatResponse, ProviderError> {
    provider.stream(&request(model), &mut |_| {}).await
}

/// A 200 stream: `pings` keep-alives `every` apart, then `rest` at once.
fn reading_then(pings: usize, every: Duration, rest: &str) -> Reply {
    let mut chunks: Vec<(Duration, String)> = (0..pings).map(|_| (every, PING.into())).collect();
    chunks.push((every, rest.to_string()));
    Reply {
        chunks,
        ..Reply::sse(&[], Duration::ZERO)
    }
}

/// The recorded reply, without its leading keep-alive.
fn recorded_reply() -> &'static str {
    RECORDED.strip_prefix(PING).unwrap()
}

fn text(reply: &ChatResponse) -> String {
    text_of(&reply.parts)
}

#[tokio::test]
async fn keep_alives_count_as_life_while_the_server_reads() {
    // 1.5 s of reading with a keep-alive every 100 ms, under a 1 s idle timeout.
    let server = FakeServer::start(vec![
        reading_then(15, ms(100), recorded_reply()),
        // The same wait in silence is a stall.
        reading_then(0, ms(1_500), recorded_reply()),
    ])
    .await;
    let provider = OpenAiProvider::new(settings(&server), http_client().unwrap());
    let reply = call(&provider, "m1").await.unwrap();
    assert_eq!(text(&reply), "The quick brown fox");
    assert_eq!(reply.stop, StopReason::MaxTokens);
    let err = call(&provider, "m1").await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(err.message.contains("idle_timeout_secs"), "{err}");
}

#[tokio::test]
async fn a_slow_first_read_is_given_time_beyond_the_reply_limit() {
    // timeout_secs would allow 300 ms; reading ~1,000 tokens takes 1.2 s here. An
    // unmeasured model is allowed 1,000 / 40 × 1.5 = 37.5 s more for reading.
    let server = FakeServer::start(vec![reading_then(12, ms(100), recorded_reply())]).await;
    let mut settings = settings(&server);
    settings.timeout = ms(300);
    let provider = OpenAiProvider::new(settings, http_client().unwrap());
    let reply = call(&provider, "m1").await.unwrap();
    assert_eq!(text(&reply), "The quick brown fox");
}

#[tokio::test]
async fn running_out_of_time_while_the_server_reads_is_marked_and_remembered() {
    let server = FakeServer::start(vec![reading_then(30, ms(100), recorded_reply())]).await;
    let mut settings = settings(&server);
    settings.call_timeouts.insert("m1".into(), ms(500));
    let pace = Arc::clone(&settings.pace);
    let provider = OpenAiProvider::new(settings, http_client().unwrap());
    let err = call(&provider, "m1").await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(err.still_reading);
    assert!(
        err.message
            .contains("still reading the request (about 1000 tokens)")
            && err
                .message
                .contains("[models.\"fake/m1\"] call_timeout_secs"),
        "{err}"
    );
    // It reads no faster than 1,000 tokens in 0.5 s; the next call is sized to that.
    let read = pace.speeds("fake/m1").prompt_per_sec.unwrap();
    assert!(read > 0.0 && read <= 2_000.0, "{read}");
}

#[tokio::test]
async fn a_call_still_being_read_is_not_sent_again_to_the_same_model() {
    let stalled = || reading_then(30, ms(100), recorded_reply());
    let server = FakeServer::start(vec![
        stalled(),
        Reply::sse(&[recorded_reply()], Duration::ZERO),
    ])
    .await;
    let mut settings = settings(&server);
    settings.call_timeouts.insert("slow".into(), ms(500));
    let provider = build(ProviderKind::Openai, settings, http_client().unwrap());
    let entry = |model: &str| ChainEntry {
        provider: Arc::clone(&provider),
        label: format!("fake/{model}"),
        model: model.into(),
        thinking_budget: 0,
    };
    let chain = Chain::new(vec![entry("slow"), entry("next")]).with_max_retries(2);
    let (reply, label) = chain.stream(request(""), &mut |_| {}).await.unwrap();
    assert_eq!(
        (text(&reply).as_str(), label.as_str()),
        ("The quick brown fox", "fake/next")
    );
    let models: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, [json!("slow"), json!("next")], "no retry of `slow`");
}

/// An OpenAI-compatible stream of `words`, ending with llama.cpp's `timings`.
fn with_timings(words: &[&str], timings: serde_json::Value) -> Reply {
    let mut pieces: Vec<String> = words
        .iter()
        .map(|w| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": w}}]})
            )
        })
        .collect();
    pieces.push(format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100}, "timings": timings})
    ));
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    Reply::sse(&pieces, Duration::ZERO)
}

#[tokio::test]
async fn a_slow_writer_is_asked_for_what_it_can_write_in_time() {
    // The server measured 5 output tokens a second: 4,096 tokens would take 819 s, far
    // past the 120 s a reply is given; 80% of 120 s at 5/s is 480.
    let slow =
        json!({"prompt_n": 1000, "prompt_ms": 1000.0, "predicted_n": 100, "predicted_ms": 20000.0});
    let server = FakeServer::start(vec![
        with_timings(&["Hel", "lo"], slow),
        with_timings(&["again"], json!({})),
    ])
    .await;
    let mut settings = settings(&server);
    settings.timeout = Duration::from_secs(120);
    let pace = Arc::clone(&settings.pace);
    let provider = OpenAiProvider::new(settings, http_client().unwrap());
    call(&provider, "m1").await.unwrap();
    assert_eq!(pace.speeds("fake/m1").output_per_sec, Some(5.0));
    assert_eq!(pace.speeds("fake/m1").prompt_per_sec, Some(1000.0));
    call(&provider, "m1").await.unwrap();
    let asked: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.body["max_tokens"].clone())
        .collect();
    assert_eq!(asked, [json!(4096), json!(480)]);
}

#[tokio::test]
async fn llama_cpps_own_timings_are_the_measured_speeds() {
    let server = FakeServer::start(vec![Reply::sse(&[RECORDED], Duration::ZERO)]).await;
    let settings = settings(&server);
    let pace = Arc::clone(&settings.pace);
    let provider = OpenAiProvider::new(settings, http_client().unwrap());
    call(&provider, "m1").await.unwrap();
    let speeds = pace.speeds("fake/m1");
    // 2,928 prompt tokens in 32,173.639 ms; four output tokens are too few to time.
    let read = speeds.prompt_per_sec.unwrap();
    assert!((read - 91.006).abs() < 0.01, "{read}");
    assert_eq!(speeds.output_per_sec, None);
}

#[tokio::test]
async fn anthropic_replies_are_timed_by_the_clock() {
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n\
        event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    let delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ab \"}}\n\n";
    let end = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
        event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\n\
        event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let server = FakeServer::start(vec![
        Reply::sse(&[start, delta, delta, delta, delta, end], ms(100)),
        Reply::sse(&[start, delta, end], Duration::ZERO),
    ])
    .await;
    let mut settings = settings(&server);
    settings.base_url = server.base.clone();
    settings.timeout = Duration::from_secs(10);
    let provider = AnthropicProvider::new(settings, http_client().unwrap());
    call(&provider, "m1").await.unwrap();
    call(&provider, "m1").await.unwrap();
    // 20 tokens over about 0.4 s: some 50 a second, some 400 in 80% of 10 s (4,096
    // would need 512 a second).
    let asked: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.body["max_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(asked[0], 4096);
    assert!((128..4096).contains(&asked[1]), "{asked:?}");
}

#[tokio::test]
async fn a_server_missing_jinja_is_asked_once_and_the_flag_is_named() {
    let server = FakeServer::start(vec![
        Reply::json(500, NO_JINJA),
        Reply::json(500, NO_JINJA),
        Reply::json(500, NO_JINJA),
    ])
    .await;
    let provider = build(
        ProviderKind::Openai,
        settings(&server),
        http_client().unwrap(),
    );
    let chain = Chain::new(vec![ChainEntry {
        provider,
        label: "fake/m1".into(),
        model: "m1".into(),
        thinking_budget: 0,
    }])
    .with_max_retries(2);
    let err = chain.stream(request(""), &mut |_| {}).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::ServerConfig);
    assert!(
        err.to_string().contains("restart the server with --jinja"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stall_after_the_reply_began_is_not_still_reading() {
    let server = FakeServer::start(vec![
        Reply::sse(
            &["data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"],
            Duration::ZERO,
        )
        .ending(End::Stall),
    ])
    .await;
    let provider = OpenAiProvider::new(settings(&server), http_client().unwrap());
    let err = call(&provider, "m1").await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(!err.still_reading);
}

#[test]
fn each_providers_models_bring_their_own_call_limit() {
    let caps = |secs| pincer_config::ModelCaps {
        call_timeout_secs: secs,
        ..Default::default()
    };
    let models = std::collections::BTreeMap::from([
        ("local/qwen".to_string(), caps(Some(600))),
        ("local/smol".to_string(), caps(None)),
        ("other/qwen".to_string(), caps(Some(30))),
    ]);
    let mut settings = ProviderSettings::new("local", "http://127.0.0.1:1/v1");
    assert_eq!(settings.idle_timeout, Duration::from_secs(90));
    settings.read_call_timeouts(&models);
    assert_eq!(
        settings.call_timeouts,
        std::collections::BTreeMap::from([("qwen".to_string(), Duration::from_secs(600))])
    );
}
