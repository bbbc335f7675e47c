//! The script: FIFO steps shared across formats, the echo default, the control routes,
//! and the binary.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{anthropic_body, openai_body, post_anthropic, post_openai};
use pincer_fakes::{FakeModel, Format, RecordedJson, Step};
use serde_json::{Value, json};

async fn openai_reply(fake: &FakeModel, text: &str) -> String {
    let body: Value = post_openai(fake, &openai_body(text, false, false))
        .await
        .json()
        .await
        .unwrap();
    body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn anthropic_reply(fake: &FakeModel, text: &str) -> String {
    let body: Value = post_anthropic(fake, &anthropic_body(text, false))
        .await
        .json()
        .await
        .unwrap();
    body["content"][0]["text"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn steps_are_fifo_across_formats_then_echo() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("first"));
    fake.push(Step::text("second"));
    assert_eq!(openai_reply(&fake, "a").await, "first");
    assert_eq!(anthropic_reply(&fake, "b").await, "second");
    assert_eq!(openai_reply(&fake, "what now").await, "echo: what now");
    assert_eq!(anthropic_reply(&fake, "and now").await, "echo: and now");

    let requests = fake.requests();
    let formats: Vec<_> = requests.iter().map(|r| r.format).collect();
    assert_eq!(
        formats,
        [
            Format::OpenAi,
            Format::Anthropic,
            Format::OpenAi,
            Format::Anthropic
        ]
    );
    assert_eq!(requests[2].last_user_text(), "what now");
    assert_eq!(requests[1].header("anthropic-version"), Some("2023-06-01"));
    assert!(requests.windows(2).all(|w| w[0].at <= w[1].at));
}

#[tokio::test]
async fn wait_for_requests_returns_when_enough_arrived_or_on_timeout() {
    let fake = FakeModel::start().await;
    let got = fake.wait_for_requests(1, Duration::from_millis(50)).await;
    assert!(got.is_empty());
    let base = fake.openai_base();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let url = format!("{base}/chat/completions");
        let _ = common::client()
            .post(url)
            .json(&openai_body("late", false, false))
            .send()
            .await;
    });
    let got = fake.wait_for_requests(1, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].last_user_text(), "late");
}

#[tokio::test]
async fn control_routes_script_record_and_reset() {
    let fake = FakeModel::start().await;
    let client = common::client();
    let script = json!([{"text": "scripted"}, {"error": {"status": 500}}]);
    let queued: Value = client
        .post(format!("{}/_fake/script", fake.url()))
        .json(&script)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(queued, json!({"queued": 2}));

    assert_eq!(openai_reply(&fake, "x").await, "scripted");
    let failed = post_anthropic(&fake, &anthropic_body("y", true)).await;
    assert_eq!(failed.status(), 500);
    let body: Value = failed.json().await.unwrap();
    assert_eq!(body["error"]["type"], "api_error");

    let recorded: Vec<RecordedJson> = client
        .get(format!("{}/_fake/requests", fake.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[1].format, Format::Anthropic);
    assert_eq!(recorded[0].body["messages"][1]["content"], "x");

    let bad = client
        .post(format!("{}/_fake/script", fake.url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    client
        .post(format!("{}/_fake/script", fake.url()))
        .json(&json!(["stall"]))
        .send()
        .await
        .unwrap();
    let reset = client
        .post(format!("{}/_fake/reset", fake.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 204);
    assert!(fake.requests().is_empty());
    assert_eq!(
        openai_reply(&fake, "after").await,
        "echo: after",
        "the queue is empty too"
    );
}

#[tokio::test]
async fn binary_prints_its_url_and_serves() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer-fakes"))
        .args(["model", "--port", "0", "--require-key", "sk-bin"])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    })
    .await
    .unwrap()
    .unwrap();
    let url = line
        .trim()
        .strip_prefix("model ")
        .expect("`model URL` line")
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"));

    let client = common::client();
    client
        .post(format!("{url}/_fake/script"))
        .json(&json!([{"text": "from script"}]))
        .send()
        .await
        .unwrap();
    let response = client
        .post(format!("{url}/v1/messages"))
        .header("x-api-key", "sk-bin")
        .header("anthropic-version", "2023-06-01")
        .json(&anthropic_body("hi", false))
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["content"][0]["text"], "from script");
    child.kill().unwrap();
    child.wait().unwrap();
}
