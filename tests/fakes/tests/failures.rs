//! Failing on demand: HTTP errors, auth, unknown models, delays, stalls and cut streams.

use crate::common;

use std::time::{Duration, Instant};

use common::{anthropic_body, events, openai_body, post_anthropic, post_openai};
use futures_util::StreamExt;
use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

#[tokio::test]
async fn error_step_returns_status_retry_after_and_provider_shape() {
    let fake = FakeModel::start().await;
    fake.push(Step::rate_limited(7));
    fake.push(Step::overloaded());

    let response = post_openai(&fake, &openai_body("hi", true, false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert!(body["error"]["message"].is_string());

    let response = post_anthropic(&fake, &anthropic_body("hi", true)).await;
    assert_eq!(response.status().as_u16(), 529);
    assert!(response.headers().get("retry-after").is_none());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn error_step_with_a_body_sends_it_verbatim() {
    let fake = FakeModel::start().await;
    fake.push(Step::Error {
        status: 502,
        body: "<html>Bad gateway</html>".into(),
        retry_after: None,
    });
    let response = post_openai(&fake, &openai_body("hi", true, false)).await;
    assert_eq!(response.status(), 502);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(response.text().await.unwrap(), "<html>Bad gateway</html>");
}

#[tokio::test]
async fn required_key_gives_each_provider_its_401() {
    let fake = FakeModel::start().await;
    fake.require_key("sk-right");

    let response = post_openai(&fake, &openai_body("hi", true, false)).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key");
    assert_eq!(body["error"]["message"], "Incorrect API key provided");

    let response = post_anthropic(&fake, &anthropic_body("hi", true)).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    );

    let response = common::client()
        .post(format!("{}/chat/completions", fake.openai_base()))
        .bearer_auth("sk-right")
        .json(&openai_body("hi", false, false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        fake.requests().len(),
        3,
        "refused requests are recorded too"
    );
}

#[tokio::test]
async fn missing_model_is_a_404_in_each_shape() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("kept for later"));
    let mut body = openai_body("hi", true, false);
    body["model"] = json!(pincer_fakes::MISSING_MODEL);
    let response = post_openai(&fake, &body).await;
    assert_eq!(response.status(), 404);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "model_not_found");

    let mut body = anthropic_body("hi", false);
    body["model"] = json!("missing-model");
    let response = post_anthropic(&fake, &body).await;
    assert_eq!(response.status(), 404);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["type"], "not_found_error");

    let ok: Value = post_anthropic(&fake, &anthropic_body("hi", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        ok["content"][0]["text"], "kept for later",
        "refusals take no step"
    );
}

#[tokio::test]
async fn delay_holds_back_the_headers() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("late").after_ms(150));
    let started = Instant::now();
    let response = post_openai(&fake, &openai_body("hi", true, false)).await;
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn stall_sends_one_chunk_then_nothing() {
    let fake = FakeModel::start().await;
    fake.push(Step::Stall);
    let response = post_anthropic(&fake, &anthropic_body("hi", true)).await;
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("text_delta") {
        let chunk = stream.next().await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let next = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(next.is_err(), "nothing more arrives: {next:?}");
    drop(fake);
    let after_shutdown = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
    assert!(
        matches!(after_shutdown, Ok(None | Some(Err(_)))),
        "the stall ends with the fake"
    );
}

#[tokio::test]
async fn slow_text_spaces_its_chunks() {
    let fake = FakeModel::start().await;
    fake.push(Step::slow_text("one two three", 80));
    let started = Instant::now();
    let body = post_openai(&fake, &openai_body("hi", true, false))
        .await
        .text()
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(160));
    assert_eq!(common::openai_text(&events(&body)), "one two three");
}

#[tokio::test]
async fn cut_drops_the_connection_mid_stream() {
    let fake = FakeModel::start().await;
    fake.push(Step::Cut("one two three four five six".into()));
    let response = post_openai(&fake, &openai_body("hi", true, false)).await;
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "the body ends in a transport error");
    assert!(seen.contains("one") && !seen.contains("six") && !seen.contains("[DONE]"));
}

#[tokio::test]
async fn unfinished_ends_cleanly_without_a_final_event() {
    let fake = FakeModel::start().await;
    fake.push(Step::Unfinished("one two three four".into()));
    let response = post_anthropic(&fake, &anthropic_body("hi", true)).await;
    let body = response.text().await.expect("the body ends cleanly");
    let names: Vec<_> = events(&body).into_iter().filter_map(|e| e.name).collect();
    assert!(names.contains(&"content_block_delta".to_string()));
    assert!(!names.contains(&"message_stop".to_string()));
    assert!(!body.contains("four"));
}
