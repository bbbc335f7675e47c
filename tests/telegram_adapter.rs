//! The Telegram adapter's capabilities driven directly against the fake Bot API: files
//! in only once the core asks, files out, reactions, edits, typing in a topic.
//! (Conversations through the whole binary are in tests/telegram.rs.)

use std::sync::Arc;

use crate::conformance::adapter::telegram_settings;
use pincer_channels::inbox::fetch_all;
use pincer_channels::telegram::{Telegram, TelegramSettings};
use pincer_channels::{Channel, Inbound, InboundMessage, OutboundMedia, Target};
use pincer_fakes::PATIENCE;
use pincer_fakes::telegram::{FakeTelegram, Incoming};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn adapter(fake: &FakeTelegram, inbox: &std::path::Path) -> Arc<Telegram> {
    Telegram::new(telegram_settings(fake, inbox), Default::default()).unwrap()
}

/// The next message on the bus, acknowledged as the core does once it is stored.
async fn next(bus: &mut mpsc::Receiver<Inbound>) -> InboundMessage {
    let mut inbound = tokio::time::timeout(PATIENCE, bus.recv())
        .await
        .expect("a message on the bus in time")
        .expect("the bus is open");
    if let Some(ack) = inbound.ack.take() {
        ack.fire();
    }
    inbound.message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_are_fetched_only_when_the_core_asks_within_the_allowance() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let telegram = adapter(&fake, dir.path());
    let (tx, mut bus) = mpsc::channel(4);
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    tokio::spawn(async move { telegram.listen(tx, stop).await });

    let photo = vec![0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3];
    let first_id = fake.inject(Incoming::dm(42, "first").with_photo(photo.clone()));
    let id = fake.inject(Incoming::dm(42, "second").with_photo(photo.clone()));
    fake.inject(Incoming::dm(42, "just text"));
    let mut first = next(&mut bus).await;
    let mut second = next(&mut bus).await;
    // The adapter has moved past both photos: it converted them without fetching.
    assert_eq!(next(&mut bus).await.text, "just text");
    assert!(
        fake.calls_of("getFile").is_empty(),
        "no getFile before the core asks"
    );
    assert!(fake.calls_of("downloadFile").is_empty());
    assert_eq!(first.media.len(), 1);
    assert!(first.media[0].path.is_none());
    assert_eq!(first.text, "first");

    // A sender with too little left today: still nothing asked of Telegram.
    let mut allowance = 3;
    assert_eq!(
        fetch_all(
            &mut first,
            &mut allowance,
            &std::env::temp_dir().join("pincer-kept")
        )
        .await,
        0
    );
    assert!(fake.calls_of("getFile").is_empty());
    assert!(
        first.text.ends_with(&format!(
            "[photo-{first_id}.jpg not downloaded: over today's inbox allowance (access.inbox_max_mb_per_day)]"
        )),
        "{}",
        first.text
    );

    let mut allowance = 1024;
    assert_eq!(
        fetch_all(
            &mut second,
            &mut allowance,
            &std::env::temp_dir().join("pincer-kept")
        )
        .await,
        7
    );
    assert_eq!(allowance, 1024 - 7);
    assert_eq!(fake.calls_of("getFile").len(), 1);
    assert_eq!(fake.calls_of("downloadFile").len(), 1);
    let path = second.media[0].path.clone().expect("saved");
    assert_eq!(path.parent(), Some(dir.path().join("telegram").as_path()));
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("42-") && name.ends_with(&format!("-photo-{id}.jpg")),
        "{name}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), photo);
    assert_eq!(
        second.text,
        format!("second\n[attached: {}]", path.display())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn photos_and_documents_go_out_with_captions_into_their_topic() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let telegram = adapter(&fake, dir.path());
    let handle = telegram.handle();
    let media = handle.media.clone().expect("Telegram sends media");
    let photo = dir.path().join("chart.png");
    std::fs::write(&photo, [0x89, b'P', b'N', b'G']).unwrap();
    let report = dir.path().join("report.pdf");
    std::fs::write(&report, b"%PDF-1.4").unwrap();
    let topic = Target {
        channel: "telegram".into(),
        chat_id: "-100123".into(),
        thread_id: Some("7".into()),
        user: false,
    };
    media
        .send_media(
            &topic,
            &OutboundMedia {
                file_name: "chart.png".into(),
                bytes: std::fs::read(&photo).unwrap(),
                source: None,
                caption: Some("the chart".into()),
                as_photo: true,
                as_voice: false,
            },
        )
        .await
        .unwrap();
    media
        .send_media(
            &topic,
            &OutboundMedia {
                file_name: "report.pdf".into(),
                bytes: std::fs::read(&report).unwrap(),
                source: None,
                caption: None,
                as_photo: false,
                as_voice: false,
            },
        )
        .await
        .unwrap();
    let sent = fake.sent();
    assert_eq!(sent[0].method, "sendPhoto");
    assert_eq!(sent[0].text, "the chart");
    assert_eq!(sent[0].message_thread_id, Some(7));
    assert_eq!(sent[1].method, "sendDocument");
    assert_eq!(sent[1].file_name.as_deref(), Some("report.pdf"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sent_messages_are_edited_in_place_and_reactions_land() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let telegram = adapter(&fake, dir.path());
    let handle = telegram.handle();
    let dm = Target {
        channel: "telegram".into(),
        chat_id: "42".into(),
        thread_id: None,
        user: false,
    };
    let id = handle.channel.send(&dm, "so far").await.unwrap();
    let editor = handle.editor.clone().unwrap();
    editor.edit(&dm, &id, "**done**").await.unwrap();
    // Editing to the same text is not an error (Telegram says "not modified").
    editor.edit(&dm, &id, "**done**").await.unwrap();
    handle.typing.clone().unwrap().typing(&dm).await.unwrap();
    handle
        .reactions
        .clone()
        .unwrap()
        .react(&dm, &id, "👍")
        .await
        .unwrap();
    let sent = fake.sent();
    let edit = sent.iter().find(|s| s.method == "editMessageText").unwrap();
    assert_eq!(edit.text, "<b>done</b>");
    assert_eq!(edit.message_id.to_string(), id);
    assert_eq!(fake.calls_of("sendChatAction").len(), 1);
    assert_eq!(fake.calls_of("setMessageReaction").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_api_url_is_refused_with_the_setting_named() {
    let err = Telegram::new(
        TelegramSettings {
            token: "1:x".into(),
            api_url: "not a url".into(),
            inbox: std::env::temp_dir(),
            media_max_bytes: 1,
            poll_timeout_secs: 1,
            silence: None,
        },
        Default::default(),
    )
    .err()
    .expect("refused");
    assert!(err.message.contains("channels.telegram.api_url"), "{err}");
}
