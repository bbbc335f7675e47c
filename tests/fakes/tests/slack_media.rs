//! The fake Slack and media over raw HTTP: the three-step upload read back as a
//! completed `Upload`, reactions, and incoming files shaped as Slack shapes them.

use pincer_fakes::PATIENCE;
use pincer_fakes::slack::{BOT_TOKEN, FakeSlack, Incoming};
use serde_json::{Value, json};

async fn api(fake: &FakeSlack, method: &str, params: Value) -> Value {
    reqwest::Client::new()
        .post(format!("{}/{method}", fake.api_url()))
        .bearer_auth(BOT_TOKEN)
        .json(&params)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_completed_upload_keeps_name_bytes_channel_and_comment() {
    let fake = FakeSlack::start().await;
    let begun = api(
        &fake,
        "files.getUploadURLExternal",
        json!({"filename": "report.pdf", "length": 8}),
    )
    .await;
    assert_eq!(begun["ok"], true);
    let posted = reqwest::Client::new()
        .post(begun["upload_url"].as_str().unwrap())
        .header("content-type", "application/pdf")
        .body(b"%PDF-1.4".to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 200);
    assert!(fake.completed_uploads().is_empty());

    let file_id = begun["file_id"].as_str().unwrap();
    let done = api(
        &fake,
        "files.completeUploadExternal",
        json!({"files": [{"id": file_id, "title": "Report"}], "channel_id": "C1",
               "initial_comment": "the *report*"}),
    )
    .await;
    assert_eq!(done["ok"], true);

    let uploads = fake.wait_for_uploads(1, PATIENCE).await;
    let upload = &uploads[0];
    assert_eq!(upload.file_name, "report.pdf");
    assert_eq!(upload.bytes, b"%PDF-1.4");
    assert_eq!(upload.content_type.as_deref(), Some("application/pdf"));
    assert_eq!(upload.channel.as_deref(), Some("C1"));
    assert_eq!(upload.title.as_deref(), Some("Report"));
    assert_eq!(upload.comment.as_deref(), Some("the *report*"));
}

#[tokio::test]
async fn an_upload_may_come_as_a_multipart_form() {
    let fake = FakeSlack::start().await;
    let begun = api(
        &fake,
        "files.getUploadURLExternal",
        json!({"filename": "a.png", "length": 4}),
    )
    .await;
    let part = reqwest::multipart::Part::bytes(b"\x89PNG".to_vec())
        .file_name("a.png")
        .mime_str("image/png")
        .unwrap();
    let form = reqwest::multipart::Form::new().part("file", part);
    let posted = reqwest::Client::new()
        .post(begun["upload_url"].as_str().unwrap())
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 200);
    let upload = &fake.uploads()[0];
    assert_eq!(upload.bytes, b"\x89PNG");
    assert_eq!(upload.content_type.as_deref(), Some("image/png"));
}

#[tokio::test]
async fn reactions_and_incoming_files() {
    let fake = FakeSlack::start().await;
    let ts = fake.inject(
        Incoming::dm(7, "look")
            .with_file("photo.jpeg", "image/jpeg", vec![0xFF, 0xD8, 0xFF])
            .with_file("notes.txt", "text/plain", b"hello".to_vec())
            .with_file("Makefile", "application/octet-stream", b"all:".to_vec()),
    );
    let added = api(
        &fake,
        "reactions.add",
        json!({"channel": "D7", "timestamp": ts, "name": "eyes"}),
    )
    .await;
    assert_eq!(added["ok"], true);
    assert_eq!(
        fake.reactions(),
        vec![("D7".into(), ts.clone(), "eyes".into())]
    );

    let event = &fake.payloads()[0]["event"];
    let files = &event["files"];
    assert_eq!(files[0]["mimetype"], "image/jpeg");
    assert_eq!(files[0]["filetype"], "jpg");
    assert_eq!(files[0]["size"], 3);
    assert_eq!(files[1]["filetype"], "text");
    assert_eq!(files[2]["filetype"], "binary");
    assert_eq!(event["subtype"], "file_share");
}
