//! The fake Discord and media over raw HTTP: files the bot attaches (read back with
//! their types and bytes), the 10 MB upload limit, reactions, and incoming attachments
//! and voice messages shaped as Discord shapes them.

use pincer_fakes::PATIENCE;
use pincer_fakes::discord::{FakeDiscord, Incoming, TOKEN, objects};
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

fn url(fake: &FakeDiscord, path: &str) -> String {
    format!("{}/api/v10{path}", fake.api_url())
}

async fn send_files(fake: &FakeDiscord, channel: u64, parts: Vec<(&str, Part)>) -> (u16, Value) {
    let payload =
        json!({"content": "here you go", "attachments": [{"id": 0, "filename": "report.pdf"}]});
    let mut form = Form::new().text("payload_json", payload.to_string());
    for (field, part) in parts {
        form = form.part(field.to_string(), part);
    }
    let response = client()
        .post(url(fake, &format!("/channels/{channel}/messages")))
        .header("Authorization", format!("Bot {TOKEN}"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn files_the_bot_attaches_keep_names_types_and_bytes() {
    let fake = FakeDiscord::start().await;
    let channel = objects::dm_channel(42);
    let parts = vec![
        (
            "files[0]",
            Part::bytes(b"%PDF-1.4".to_vec()).file_name("report.pdf"),
        ),
        (
            "files[1]",
            Part::bytes(b"\x89PNG".to_vec())
                .file_name("chart")
                .mime_str("image/png")
                .unwrap(),
        ),
    ];
    let (status, message) = send_files(&fake, channel, parts).await;
    assert_eq!(status, 200);
    assert_eq!(message["attachments"][0]["content_type"], "application/pdf");
    assert_eq!(message["attachments"][1]["content_type"], "image/png");

    let files = fake.wait_for_sent_files(2, PATIENCE).await;
    assert_eq!(files.len(), 2);
    assert_eq!(files[0].file_name, "report.pdf");
    assert_eq!(files[0].content_type, "application/pdf");
    assert_eq!(files[0].bytes, b"%PDF-1.4");
    assert_eq!(files[0].content, "here you go");
    assert_eq!(files[0].channel, channel);
    assert_eq!(files[1].content_type, "image/png");
    assert_eq!(
        files[1].message.to_string(),
        message["id"].as_str().unwrap()
    );
    assert_eq!(fake.sent_files_in(channel).len(), 2);
    assert!(fake.sent_files_in(objects::dm_channel(7)).is_empty());

    // What was sent can be downloaded again, with its type.
    let link = message["attachments"][0]["url"].as_str().unwrap();
    let download = client().get(link).send().await.unwrap();
    assert_eq!(download.headers()["content-type"], "application/pdf");
    assert_eq!(download.bytes().await.unwrap().as_ref(), b"%PDF-1.4");
}

#[tokio::test]
async fn an_upload_over_10_mb_is_refused_with_40005() {
    let fake = FakeDiscord::start().await;
    let big = Part::bytes(vec![0; 10 * 1024 * 1024 + 1]).file_name("big.bin");
    let (status, body) = send_files(&fake, objects::dm_channel(42), vec![("files[0]", big)]).await;
    assert_eq!(status, 413);
    assert_eq!(
        body,
        json!({"message": "Request entity too large", "code": 40005})
    );
    assert!(fake.sent_files().is_empty());
    assert!(fake.bot_messages().is_empty());
}

#[tokio::test]
async fn reactions_are_recorded_percent_decoded() {
    let fake = FakeDiscord::start().await;
    let channel = objects::text_channel(1);
    let id = fake.inject(Incoming::channel(1, 42, "hello"));
    let react = |message: u64, emoji: &str| {
        client()
            .put(url(
                &fake,
                &format!("/channels/{channel}/messages/{message}/reactions/{emoji}/@me"),
            ))
            .header("Authorization", format!("Bot {TOKEN}"))
            .send()
    };
    // 👀, percent-encoded as a client puts it in the path.
    let response = react(id, "%F0%9F%91%80").await.unwrap();
    assert_eq!(response.status(), 204);
    let response = react(id, "party:123456789").await.unwrap();
    assert_eq!(response.status(), 204);

    let response = react(id, "eyes").await.unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], 10014);
    let response = react(id + 1000, "%F0%9F%91%80").await.unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], 10008);

    let reactions = fake.wait_for_reactions(2, PATIENCE).await;
    assert_eq!(
        reactions,
        vec![
            (channel, id, "👀".to_string()),
            (channel, id, "party:123456789".to_string())
        ]
    );
    assert_eq!(fake.calls_of("react").len(), 4);
}

#[tokio::test]
async fn incoming_files_and_voice_messages_look_like_discords() {
    let fake = FakeDiscord::start().await;
    fake.inject(
        Incoming::dm(42, "two files")
            .with_file("cat.jpg", "image/jpeg", vec![0xFF, 0xD8, 0xFF])
            .with_file("notes.txt", "text/plain; charset=utf-8", b"hi".to_vec()),
    );
    fake.inject(Incoming::dm(42, "").with_voice(b"OggS voice".to_vec(), 3.2));

    let messages = fake.messages();
    let files = &messages[0].json["attachments"];
    assert_eq!(files.as_array().unwrap().len(), 2);
    assert_eq!(files[0]["filename"], "cat.jpg");
    assert_eq!(files[0]["content_type"], "image/jpeg");
    assert_eq!(files[0]["size"], 3);
    assert_eq!(files[1]["content_type"], "text/plain; charset=utf-8");

    let voice = &messages[1].json;
    assert_eq!(voice["flags"], 8192);
    let clip = &voice["attachments"][0];
    assert_eq!(clip["filename"], "voice-message.ogg");
    assert_eq!(clip["content_type"], "audio/ogg");
    assert_eq!(clip["duration_secs"], 3.2);
    assert!(clip["waveform"].as_str().is_some_and(|w| !w.is_empty()));
    let bytes = client()
        .get(clip["url"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(bytes.as_ref(), b"OggS voice");
}
