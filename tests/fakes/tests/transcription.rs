//! `POST /v1/audio/transcriptions` as a client sees it: the three answer shapes, the
//! checks OpenAI makes, scripted transcripts and failures, and the record of requests
//! (on the handle and over `/_fake/*`).

use crate::common;

use std::time::Duration;

use pincer_fakes::FakeModel;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

const OGG: &[u8] = b"OggS\0fake voice note";

fn form(file_name: &str, bytes: &[u8], response_format: Option<&str>) -> Form {
    let file = Part::bytes(bytes.to_vec())
        .file_name(file_name.to_string())
        .mime_str("audio/ogg")
        .unwrap();
    let mut form = Form::new().part("file", file).text("model", "whisper-1");
    if let Some(format) = response_format {
        form = form.text("response_format", format.to_string());
    }
    form
}

async fn post(fake: &FakeModel, form: Form) -> reqwest::Response {
    common::client()
        .post(format!("{}/audio/transcriptions", fake.openai_base()))
        .bearer_auth("sk-test")
        .multipart(form)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn json_is_the_default_and_the_transcript_is_scriptable() {
    let fake = FakeModel::start().await;
    let response = post(&fake, form("voice.oga", OGG, None)).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body, json!({"text": "remind me to water the plants"}));

    fake.set_transcript("buy milk", 3.5);
    let response = post(&fake, form("voice.ogg", OGG, Some("verbose_json"))).await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"task": "transcribe", "language": "english", "duration": 3.5,
               "text": "buy milk", "segments": []})
    );

    let response = post(&fake, form("voice.mp3", OGG, Some("text"))).await;
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(response.text().await.unwrap().trim_end(), "buy milk");

    let seen = fake.transcriptions();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].model, "whisper-1");
    assert_eq!(seen[0].file_name, "voice.oga");
    assert_eq!(seen[0].size, OGG.len());
    assert_eq!(seen[0].bytes, OGG);
    assert_eq!(seen[0].content_type.as_deref(), Some("audio/ogg"));
    assert_eq!(seen[0].response_format, None);
    assert_eq!(seen[1].response_format.as_deref(), Some("verbose_json"));
    assert!(seen.iter().all(|t| t.status == 200));
    assert!(
        fake.requests().is_empty(),
        "chat requests are a separate log"
    );
}

#[tokio::test]
async fn missing_fields_and_bad_bodies_get_openai_400s() {
    let fake = FakeModel::start().await;
    let client = common::client();
    let url = format!("{}/audio/transcriptions", fake.openai_base());

    let no_model = Form::new().part("file", Part::bytes(OGG.to_vec()).file_name("a.ogg"));
    let response = client.post(&url).multipart(no_model).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(body["error"]["message"].as_str().unwrap().contains("model"));

    let no_file = Form::new().text("model", "whisper-1");
    let response = client.post(&url).multipart(no_file).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'file'")
    );

    let response = client
        .post(&url)
        .json(&json!({"model": "whisper-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("multipart/form-data")
    );

    // OpenAI tells the audio format by the file name's extension.
    let response = post(&fake, form("voice", OGG, None)).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("'oga'"));
    let response = post(&fake, form("voice.ogg", b"", None)).await;
    assert_eq!(response.status(), 400);
    let response = post(&fake, form("voice.ogg", OGG, Some("xml"))).await;
    assert_eq!(response.status(), 400);

    let statuses: Vec<u16> = fake.transcriptions().iter().map(|t| t.status).collect();
    assert_eq!(statuses, [400, 400, 400, 400, 400, 400]);
}

#[tokio::test]
async fn the_key_is_checked_like_the_chat_endpoints() {
    let fake = FakeModel::start().await;
    fake.require_key("sk-right");
    let response = post(&fake, form("voice.ogg", OGG, None)).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key");

    let response = common::client()
        .post(format!("{}/audio/transcriptions", fake.openai_base()))
        .bearer_auth("sk-right")
        .multipart(form("voice.ogg", OGG, None))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn scripted_failures_come_once_each_in_order() {
    let fake = FakeModel::start().await;
    fake.fail_next_transcription(429, Some(2));
    fake.fail_next_transcription(500, None);

    let response = post(&fake, form("voice.ogg", OGG, None)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    let response = post(&fake, form("voice.ogg", OGG, None)).await;
    assert_eq!(response.status(), 500);
    let response = post(&fake, form("voice.ogg", OGG, None)).await;
    assert_eq!(response.status(), 200);

    let seen = fake
        .wait_for_transcriptions(3, Duration::from_secs(1))
        .await;
    let statuses: Vec<u16> = seen.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [429, 500, 200]);
}

#[tokio::test]
async fn control_routes_script_and_show_transcriptions() {
    let fake = FakeModel::start().await;
    let client = common::client();
    let control = |path: &str| format!("{}/_fake/{path}", fake.url());

    let response = client
        .post(control("transcript"))
        .json(&json!({"text": "call mum", "duration_secs": 7.0}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let response = client
        .post(control("transcription_failure"))
        .json(&json!({"status": 503}))
        .send()
        .await
        .unwrap();
    let queued: Value = response.json().await.unwrap();
    assert_eq!(queued, json!({"queued": 1}));

    let response = post(&fake, form("voice.ogg", OGG, None)).await;
    assert_eq!(response.status(), 503);
    let response = post(&fake, form("voice.ogg", OGG, Some("verbose_json"))).await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["text"], "call mum");
    assert_eq!(body["duration"], 7.0);

    let seen: Value = client
        .get(control("transcriptions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(seen[1]["file_name"], "voice.ogg");
    assert_eq!(seen[1]["size"], OGG.len());
    assert_eq!(seen[1]["status"], 200);
    assert!(seen[1].get("bytes").is_none(), "bytes stay out of the JSON");

    let response = client.post(control("reset")).send().await.unwrap();
    assert_eq!(response.status(), 204);
    assert!(fake.transcriptions().is_empty());
    let body: Value = post(&fake, form("voice.ogg", OGG, None))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["text"], "remind me to water the plants");
}
