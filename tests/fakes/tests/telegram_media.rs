//! The fake Telegram and media: the files and reactions a bot sends (read back on the
//! handle and over `/_fake/*`), Telegram's upload limits, and incoming media shaped as
//! Telegram shapes it (driven by teloxide where a bot would use it, raw HTTP elsewhere).

use pincer_fakes::PATIENCE;
use pincer_fakes::telegram::{FakeTelegram, Incoming, MediaKind};
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use teloxide::prelude::*;
use teloxide::types::{InputFile, ReactionType, UpdateKind};
use teloxide::{ApiError, RequestError};

const MB: usize = 1024 * 1024;

fn bot(fake: &FakeTelegram) -> Bot {
    let url = reqwest::Url::parse(&fake.api_url()).unwrap();
    Bot::new(fake.token()).set_api_url(url)
}

fn method_url(fake: &FakeTelegram, method: &str) -> String {
    format!("{}/bot{}/{method}", fake.api_url(), fake.token())
}

/// Uploads `bytes` under `field` with raw multipart, as any client could.
async fn upload(fake: &FakeTelegram, method: &str, field: &str, bytes: Vec<u8>) -> (u16, Value) {
    let form = Form::new()
        .text("chat_id", "42")
        .part(field.to_string(), Part::bytes(bytes).file_name("big.bin"));
    let response = reqwest::Client::new()
        .post(method_url(fake, method))
        .multipart(form)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn files_the_bot_sends_are_listed_per_chat_with_bytes_and_caption() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let photo = vec![0xFF, 0xD8, 0xFF, 0xE0, 9, 9];
    bot.send_photo(
        ChatId(42),
        InputFile::memory(photo.clone()).file_name("chart.jpg"),
    )
    .caption("the chart")
    .await
    .unwrap();
    let sent = bot
        .send_document(
            ChatId(42),
            InputFile::memory(b"a,b\n1,2\n".to_vec()).file_name("data.csv"),
        )
        .await
        .unwrap();
    bot.send_document(
        ChatId(7),
        InputFile::memory(b"%PDF".to_vec()).file_name("x.pdf"),
    )
    .await
    .unwrap();

    let files = fake.wait_for_sent_files(3, PATIENCE).await;
    assert_eq!(files.len(), 3);
    let in_42 = fake.sent_files_in(42);
    assert_eq!(in_42.len(), 2);
    assert_eq!(in_42[0].kind, MediaKind::Photo);
    assert_eq!(in_42[0].file_name.as_deref(), Some("chart.jpg"));
    assert_eq!(in_42[0].bytes, photo);
    assert_eq!(in_42[0].caption, "the chart");
    assert_eq!(in_42[1].kind, MediaKind::Document);
    assert_eq!(in_42[1].file_name.as_deref(), Some("data.csv"));
    assert_eq!(in_42[1].bytes, b"a,b\n1,2\n");
    assert_eq!(in_42[1].caption, "");
    assert_eq!(in_42[1].message_id, i64::from(sent.id.0));
    assert_eq!(
        sent.document()
            .unwrap()
            .mime_type
            .as_ref()
            .map(|m| m.to_string()),
        Some("text/csv".into())
    );

    let listed: Value = reqwest::get(format!("{}/_fake/files", fake.api_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed[0]["kind"], "photo");
    assert_eq!(listed[2]["chat_id"], 7);
    assert_eq!(listed[2]["file_name"], "x.pdf");
    assert_eq!(listed[2]["base64"], "JVBERg==");
}

#[tokio::test]
async fn reactions_are_recorded_and_checked_like_telegram() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let id = fake.inject(Incoming::dm(42, "hello"));
    let message = teloxide::types::MessageId(i32::try_from(id).unwrap());
    let emoji = |e: &str| vec![ReactionType::Emoji { emoji: e.into() }];

    bot.set_message_reaction(ChatId(42), message)
        .reaction(emoji("👀"))
        .await
        .unwrap();
    // Not one of the reactions Telegram offers.
    let refused = bot
        .set_message_reaction(ChatId(42), message)
        .reaction(emoji("🦖"))
        .await;
    match refused {
        Err(RequestError::Api(ApiError::Unknown(text))) => {
            assert!(text.contains("REACTION_INVALID"))
        }
        other => panic!("expected REACTION_INVALID, got {other:?}"),
    }
    let unknown = bot
        .set_message_reaction(ChatId(42), teloxide::types::MessageId(9999))
        .reaction(emoji("👍"))
        .await;
    assert!(unknown.is_err());
    bot.set_message_reaction(ChatId(42), message).await.unwrap();

    let reactions = fake.wait_for_reactions(2, PATIENCE).await;
    assert_eq!(
        reactions,
        vec![(42, id, "👀".into()), (42, id, String::new())]
    );
    let listed: Value = reqwest::get(format!("{}/_fake/reactions", fake.api_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        listed[0],
        json!({"chat_id": 42, "message_id": id, "emoji": "👀"})
    );
    assert_eq!(fake.calls_of("setMessageReaction").len(), 4);
}

#[tokio::test]
async fn uploads_over_telegrams_limits_get_413() {
    let fake = FakeTelegram::start().await;
    let (status, body) = upload(&fake, "sendPhoto", "photo", vec![0xFF; 10 * MB + 1]).await;
    assert_eq!(status, 413);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 413, "description": "Request Entity Too Large"})
    );
    let (status, _) = upload(&fake, "sendDocument", "document", vec![1; 10 * MB + 1]).await;
    assert_eq!(status, 200, "a document may be bigger than a photo");
    let (status, body) = upload(&fake, "sendDocument", "document", vec![1; 50 * MB + 1]).await;
    assert_eq!(status, 413);
    assert_eq!(body["description"], "Request Entity Too Large");
    // Past what the fake reads at all, the answer is the same.
    let (status, body) = upload(&fake, "sendDocument", "document", vec![1; 53 * MB]).await;
    assert_eq!(status, 413);
    assert_eq!(body["error_code"], 413);
    assert_eq!(fake.sent_files().len(), 1);
}

#[tokio::test]
async fn incoming_media_carries_telegrams_fields() {
    let fake = FakeTelegram::start().await;
    fake.inject(Incoming::dm(42, "").with_voice(b"OggS voice".to_vec()));
    fake.inject(Incoming::dm(42, "").with_document("report.pdf", b"%PDF-1.4".to_vec()));
    fake.inject(Incoming::dm(42, "").with_document("table.csv", b"a,b".to_vec()));
    fake.inject(Incoming::dm(42, "").with_document("shot.png", b"\x89PNG".to_vec()));
    fake.inject(Incoming::dm(42, "listen").with_audio("song.mp3", b"ID3".to_vec()));

    let updates: Value = reqwest::get(method_url(&fake, "getUpdates"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let message = |i: usize| updates["result"][i]["message"].clone();
    let voice = &message(0)["voice"];
    assert_eq!(voice["duration"], 1);
    assert_eq!(voice["mime_type"], "audio/ogg");
    assert_eq!(voice["file_size"], 10);
    assert_eq!(message(1)["document"]["mime_type"], "application/pdf");
    assert_eq!(message(2)["document"]["mime_type"], "text/csv");
    assert_eq!(message(3)["document"]["mime_type"], "image/png");
    let audio = &message(4)["audio"];
    assert_eq!(audio["file_name"], "song.mp3");
    assert_eq!(audio["mime_type"], "audio/mpeg");
    assert_eq!(message(4)["caption"], "listen");

    // teloxide reads every one of them.
    let bot = bot(&fake);
    let parsed = bot.get_updates().await.unwrap();
    assert_eq!(parsed.len(), 5);
    assert!(
        parsed
            .iter()
            .all(|u| matches!(u.kind, UpdateKind::Message(_)))
    );
}
