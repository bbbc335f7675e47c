//! The Discord adapter driven directly against the fake Discord: what reaches the bus
//! (DMs, mentions, threads, order, attachments), resumes and re-identifies, approval
//! buttons, errors and health, files and edits out. (Conversations through the whole
//! binary are in tests/discord.rs.)

use std::sync::Arc;
use std::time::Duration;

use crate::conformance::adapter::discord_settings;
use pincer_channels::approval::{self, Choice, PendingApprovals};
use pincer_channels::discord::{Discord, DiscordSettings};
use pincer_channels::inbox::fetch_all;
use pincer_channels::{
    Channel, ChatKind, Health, HealthChecker, Inbound, InboundMessage, MediaKind, OutboundMedia,
    Target,
};
use pincer_fakes::discord::{BOT_ID, FakeDiscord, Fault, Incoming, objects};
use pincer_fakes::{PATIENCE, wait_for, wait_until};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

struct Running {
    fake: FakeDiscord,
    discord: Arc<Discord>,
    approvals: Arc<PendingApprovals>,
    bus: mpsc::Receiver<Inbound>,
    stop: CancellationToken,
    _inbox: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Running {
    async fn start() -> Running {
        Running::start_with(FakeDiscord::start().await).await
    }

    /// Starts the adapter against a fake already set up.
    async fn start_with(fake: FakeDiscord) -> Running {
        let inbox = tempfile::tempdir().unwrap();
        let approvals = Arc::new(PendingApprovals::default());
        let discord = Discord::new(
            discord_settings(&fake, inbox.path()),
            Arc::clone(&approvals),
        )
        .unwrap();
        let (tx, bus) = mpsc::channel(64);
        let stop = CancellationToken::new();
        let listener = Arc::clone(&discord);
        let token = stop.clone();
        tokio::spawn(async move {
            if let Err(err) = listener.listen(tx, token).await {
                panic!("listen failed: {err}");
            }
        });
        Running {
            fake,
            discord,
            approvals,
            bus,
            stop,
            _inbox: inbox,
        }
    }

    async fn connected(&self) {
        assert!(self.fake.wait_connected(PATIENCE).await, "never connected");
        wait_for(
            async || (self.discord.health() == Health::Up).then_some(()),
            || format!("never up: {}", self.discord.health()),
        )
        .await;
    }

    async fn next(&mut self) -> InboundMessage {
        tokio::time::timeout(PATIENCE, self.bus.recv())
            .await
            .expect("a message on the bus in time")
            .expect("the bus open")
            .message
    }

    /// Nothing more is on its way: a message sent now is the next on the bus (the
    /// adapter passes messages on in the order the gateway sends them).
    async fn quiet(&mut self) {
        self.fake.inject(Incoming::dm(99, "the last word"));
        let next = self.next().await;
        assert_eq!(next.text, "the last word", "unexpected message: {next:?}");
    }
}

fn target(chat: u64, thread: Option<u64>) -> Target {
    Target {
        channel: "discord".into(),
        chat_id: chat.to_string(),
        thread_id: thread.map(|t| t.to_string()),
        user: false,
    }
}

/// Wait until the adapter says it is down; why it says.
async fn down(r: &Running) -> String {
    wait_for(
        async || match r.discord.health() {
            Health::Down(why) => Some(why),
            _ => None,
        },
        || format!("never down: {}", r.discord.health()),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dms_mentions_and_threads_arrive_as_their_kinds() {
    let mut r = Running::start().await;
    r.connected().await;
    r.fake.inject(Incoming::dm(42, "hello"));
    let dm = r.next().await;
    assert_eq!(dm.chat_kind, ChatKind::Dm);
    assert_eq!(dm.chat_id, objects::dm_channel(42).to_string());
    assert_eq!(
        dm.sender.canonical,
        format!("discord:{}", objects::user_id(42))
    );
    assert!(dm.addressed);

    r.fake.inject(Incoming::channel(1, 42, "just chatting"));
    let plain = r.next().await;
    assert_eq!(plain.chat_kind, ChatKind::Group);
    assert!(
        !plain.addressed,
        "an unmentioned channel message is not addressed"
    );

    r.fake
        .inject(Incoming::channel(1, 42, "what now?").mentioning_bot());
    let mentioned = r.next().await;
    assert!(mentioned.addressed);
    assert_eq!(mentioned.text, "@pincer_test_bot what now?");

    // A reply to one of the bot's messages addresses it too.
    let said = r
        .discord
        .handle()
        .channel
        .send(&target(objects::text_channel(1), None), "I said this")
        .await
        .unwrap();
    r.fake
        .inject(Incoming::channel(1, 43, "about that").replying_to(said.parse().unwrap()));
    let reply = r.next().await;
    assert!(reply.addressed, "a reply to the bot is addressed");
    assert_eq!(reply.reply_to.as_deref(), Some(said.as_str()));

    r.fake.inject(Incoming::thread(1, 42, "in a thread"));
    let threaded = r.next().await;
    assert_eq!(threaded.chat_kind, ChatKind::Thread);
    assert_eq!(threaded.chat_id, objects::text_channel(1).to_string());
    assert_eq!(
        threaded.thread_id,
        Some(objects::thread_channel(1).to_string())
    );
    // The bot's own messages (echoed by Discord) never come back as inbound.
    r.quiet().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_messages_reaches_the_bus_in_order() {
    let mut r = Running::start().await;
    r.connected().await;
    // Hundreds, so that a race between serenity's per-event tasks would show: with 400
    // a multi-threaded gateway runtime swapped some in about every other run.
    for n in 0..400 {
        r.fake.inject(Incoming::dm(42, &format!("message {n}")));
    }
    for n in 0..400 {
        assert_eq!(r.next().await.text, format!("message {n}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_socket_resumes_and_replays_exactly_what_was_missed() {
    let mut r = Running::start().await;
    r.connected().await;
    r.fake.inject(Incoming::dm(42, "before"));
    assert_eq!(r.next().await.text, "before");
    r.fake.drop_socket();
    r.fake.inject(Incoming::dm(42, "while away"));
    assert!(r.fake.wait_for_resumes(1, PATIENCE).await, "no RESUME");
    assert_eq!(r.next().await.text, "while away");
    r.fake.send_reconnect(); // op 7: resume again
    r.fake.inject(Incoming::dm(42, "after op 7"));
    assert!(
        r.fake.wait_for_resumes(2, PATIENCE).await,
        "no RESUME after op 7"
    );
    assert_eq!(r.next().await.text, "after op 7");
    r.quiet().await;
    assert_eq!(r.fake.identifies(), 1, "resumed, never re-identified");
    r.connected().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_outage_missed_messages_are_fetched_once() {
    let mut r = Running::start().await;
    r.connected().await;
    r.fake.inject(Incoming::dm(42, "before"));
    assert_eq!(r.next().await.text, "before");
    r.fake.outage(Duration::from_secs(3));
    r.fake.inject(Incoming::dm(42, "during the outage"));
    // serenity gives up resuming and identifies anew; a message sent the moment the
    // new session is up must not hide the gap from the catch-up over REST.
    wait_until("a second IDENTIFY", async || r.fake.identifies() >= 2).await;
    r.fake.inject(Incoming::dm(42, "just after"));
    let mut got = vec![r.next().await.text, r.next().await.text];
    got.sort();
    assert_eq!(got, vec!["during the outage", "just after"]);
    assert!(!r.fake.calls_of("list_messages").is_empty());
    r.fake.inject(Incoming::dm(42, "after"));
    assert_eq!(r.next().await.text, "after");
    r.quiet().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_catch_up_does_not_hold_back_live_messages() {
    let mut r = Running::start().await;
    r.connected().await;
    r.fake.inject(Incoming::dm(42, "before"));
    assert_eq!(r.next().await.text, "before");
    r.fake.slow_next("list_messages", Duration::from_secs(4));
    r.fake.outage(Duration::from_secs(3));
    r.fake.inject(Incoming::dm(42, "during the outage"));
    assert!(
        !r.fake
            .wait_for_calls("list_messages", 1, PATIENCE)
            .await
            .is_empty(),
        "never caught up"
    );
    let sent = tokio::time::Instant::now();
    r.fake.inject(Incoming::dm(43, "live"));
    assert_eq!(r.next().await.text, "live");
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "the live message waited {:?} for the catch-up",
        sent.elapsed()
    );
    assert_eq!(r.next().await.text, "during the outage");
    r.quiet().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_buttons_answer_the_owner_and_refuse_others() {
    let mut r = Running::start().await;
    r.connected().await;
    let owner = format!("discord:{}", objects::user_id(42));
    let (request, answer) = r.approvals.open(vec![owner]);
    let prompter = r
        .discord
        .handle()
        .approvals
        .expect("Discord asks with buttons");
    let dm = target(objects::dm_channel(42), None);
    let id = prompter
        .ask(&dm, "Allow write_file `ok.md`?", &request)
        .await
        .unwrap();
    let question = r.fake.bot_messages().into_iter().last().unwrap();
    assert_eq!(question.id.to_string(), id);
    let buttons: Vec<String> = question.json["components"][0]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["custom_id"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = Choice::ALL
        .into_iter()
        .map(|c| approval::button_data(&request, c))
        .collect();
    assert_eq!(buttons, expected);

    // A stranger's press is refused with the toast, and decides nothing.
    let channel = objects::dm_channel(42);
    r.fake.press(channel, question.id, 7, &expected[0]).unwrap();
    let answers = r.fake.wait_for_answers(1, PATIENCE).await;
    assert_eq!(answers[0].body["type"], 4);
    assert_eq!(
        answers[0].body["data"]["content"],
        "Only the owner can answer this."
    );
    assert_eq!(answers[0].body["data"]["flags"], 64, "ephemeral");
    // The owner's press answers the waiting call.
    r.fake
        .press(channel, question.id, 42, &expected[1])
        .unwrap();
    let answers = r.fake.wait_for_answers(2, PATIENCE).await;
    assert_eq!(answers[1].body["data"]["content"], Choice::Always.outcome());
    assert_eq!(
        tokio::time::timeout(PATIENCE, answer)
            .await
            .unwrap()
            .unwrap(),
        Choice::Always
    );
    prompter
        .settle(&dm, &id, Choice::Always.outcome())
        .await
        .unwrap();
    let settled = r
        .fake
        .bot_messages()
        .into_iter()
        .find(|m| m.id == question.id)
        .unwrap();
    assert_eq!(settled.content(), Choice::Always.outcome());
    assert!(!settled.has_buttons(), "buttons removed");
    r.quiet().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_questions_choices_are_buttons_in_rows_of_five_for_the_person_asked() {
    let mut r = Running::start().await;
    r.connected().await;
    let asker = format!("discord:{}", objects::user_id(42));
    let dm = target(objects::dm_channel(42), None);
    let (request, answer) = r.approvals.open_question(vec![asker], dm.key());
    let prompter = r.discord.handle().approvals.expect("buttons");
    let options: Vec<String> = (1..=7).map(|n| format!("Option {n}")).collect();
    prompter
        .ask_with(
            &dm,
            "Which one?",
            &request,
            &approval::option_buttons(&options),
        )
        .await
        .unwrap();
    let question = r.fake.bot_messages().into_iter().last().unwrap();
    let rows = question.json["components"].as_array().unwrap();
    let sizes: Vec<usize> = rows
        .iter()
        .map(|row| row["components"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [5, 2], "Discord takes five buttons a row");
    let sixth = &rows[1]["components"][0];
    assert_eq!(sixth["label"], "Option 6");
    let data = sixth["custom_id"].as_str().unwrap().to_string();
    let channel = objects::dm_channel(42);
    r.fake.press(channel, question.id, 7, &data).unwrap();
    let answers = r.fake.wait_for_answers(1, PATIENCE).await;
    assert_eq!(
        answers[0].body["data"]["content"],
        "Only the person asked can answer this."
    );
    r.fake.press(channel, question.id, 42, &data).unwrap();
    assert_eq!(
        tokio::time::timeout(PATIENCE, answer)
            .await
            .unwrap()
            .unwrap(),
        approval::Reply::Picked(5)
    );
    r.quiet().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_dm_is_opened_once_and_their_approval_question_asked_there() {
    let r = Running::start().await;
    let handle = r.discord.handle();
    let opener = handle.direct.clone().expect("Discord opens DMs");
    let user = objects::user_id(42);
    let dm = opener.open_direct(&user.to_string()).await.unwrap();
    assert_eq!(dm, objects::dm_channel(42).to_string());
    assert_eq!(opener.open_direct(&user.to_string()).await.unwrap(), dm);
    let opened = r.fake.calls_of("create_dm");
    assert_eq!(opened.len(), 1, "the second time comes from the cache");
    assert_eq!(opened[0].path, "/api/v10/users/@me/channels");
    assert_eq!(opened[0].body["recipient_id"], user.to_string());
    assert_eq!(r.fake.opened_dm(user), Some(objects::dm_channel(42)));

    // A question for the person (a job's turn delivered to the owner) goes to their DM.
    let person = Target::user(&format!("discord:{user}")).unwrap();
    let prompter = handle.approvals.clone().unwrap();
    let id = prompter.ask(&person, "Allow?", "req1").await.unwrap();
    prompter.settle(&person, &id, "Allowed once").await.unwrap();
    let question = r.fake.bot_messages().pop().unwrap();
    assert_eq!(question.id.to_string(), id);
    assert_eq!(question.channel, objects::dm_channel(42));
    assert_eq!(question.content(), "Allowed once");
    assert_eq!(r.fake.calls_of("create_dm").len(), 1);

    // Nobody Discord knows, or no user id at all: refused for good, saying what to do.
    let err = opener.open_direct("80351110224678912").await.unwrap_err();
    assert!(!err.retryable);
    assert!(err.message.contains("80351110224678912"), "{err}");
    assert!(err.message.contains("share a server"), "{err}");
    let err = opener.open_direct("alice").await.unwrap_err();
    assert!(err.message.contains("discord:<user id>"), "{err}");
    // A rate limit keeps Discord's wait, for the manager to honour.
    r.fake
        .fail_next("create_dm", Fault::TooManyRequests { retry_after: 2.0 });
    let err = opener
        .open_direct(&objects::user_id(43).to_string())
        .await
        .unwrap_err();
    assert_eq!(err.retry_after, Some(Duration::from_secs(2)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_is_down_with_the_fix_named() {
    let fake = FakeDiscord::start().await;
    fake.revoke_token(true);
    let r = Running::start_with(fake).await;
    let why = down(&r).await;
    assert!(why.contains("rejected the bot token"), "{why}");
    assert!(why.contains("DISCORD_BOT_TOKEN"), "{why}");
    assert!(!why.contains(r.fake.token()), "the token leaked: {why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_message_content_intent_is_down_with_the_portal_setting_named() {
    let fake = FakeDiscord::start().await;
    fake.refuse_intents(true);
    let r = Running::start_with(fake).await;
    let why = down(&r).await;
    assert!(why.contains("Message Content Intent"), "{why}");
    assert!(why.contains("developer portal"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_errors_carry_retry_after_and_retryability() {
    let r = Running::start().await;
    let channel = r.discord.handle().channel;
    let dm = target(objects::dm_channel(42), None);
    r.fake.fail_next(
        "create_message",
        Fault::TooManyRequests { retry_after: 1.5 },
    );
    let err = channel.send(&dm, "hi").await.unwrap_err();
    assert!(err.retryable);
    assert_eq!(err.retry_after, Some(Duration::from_millis(1500)));
    r.fake.fail_next("create_message", Fault::ServerError(502));
    assert!(channel.send(&dm, "hi").await.unwrap_err().retryable);
    r.fake.fail_next("create_message", Fault::Forbidden);
    assert!(!channel.send(&dm, "hi").await.unwrap_err().retryable);
    let err = channel.send(&dm, &"x".repeat(2001)).await.unwrap_err();
    assert!(!err.retryable, "too long is not retried: {err}");
    channel.send(&dm, "hi").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_come_in_to_the_inbox_and_go_out_with_captions() {
    let mut r = Running::start().await;
    r.connected().await;
    r.fake.inject(Incoming::dm(42, "look").with_file(
        "cat.png",
        "image/png",
        vec![0x89, b'P', b'N', b'G'],
    ));
    let mut got = r.next().await;
    assert_eq!(got.media.len(), 1);
    assert_eq!(got.media[0].kind, MediaKind::Photo);
    let mut allowance = 1024;
    assert_eq!(
        fetch_all(
            &mut got,
            &mut allowance,
            &std::env::temp_dir().join("pincer-kept")
        )
        .await,
        4
    );
    let path = got.media[0].path.clone().expect("downloaded");
    assert_eq!(std::fs::read(&path).unwrap(), vec![0x89, b'P', b'N', b'G']);
    assert!(got.text.contains("[attached:"), "{}", got.text);

    let handle = r.discord.handle();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.pdf");
    std::fs::write(&report, b"%PDF-1.4").unwrap();
    let thread = target(objects::text_channel(1), Some(objects::thread_channel(1)));
    handle
        .media
        .clone()
        .unwrap()
        .send_media(
            &thread,
            &OutboundMedia {
                file_name: "report.pdf".into(),
                bytes: std::fs::read(&report).unwrap(),
                source: None,
                caption: Some("the report".into()),
                as_photo: false,
                as_voice: false,
            },
        )
        .await
        .unwrap();
    let call = r.fake.calls_of("create_message").pop().unwrap();
    assert_eq!(
        call.path,
        format!("/api/v10/channels/{}/messages", objects::thread_channel(1))
    );
    assert_eq!(call.body["content"], "the report");
    assert_eq!(call.body["files"][0]["file_name"], "report.pdf");
    assert_eq!(call.body["files"][0]["size"], 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attachment_is_not_fetched_from_the_cdn_until_the_core_asks() {
    let mut r = Running::start().await;
    r.connected().await;
    let id = r
        .fake
        .inject(Incoming::channel(1, 77, "from a stranger").with_file(
            "payload.bin",
            "application/octet-stream",
            b"0123456789".to_vec(),
        ));
    r.fake.inject(Incoming::channel(1, 77, "and more"));
    let mut got = r.next().await;
    // The adapter has moved on to the next message without touching the CDN.
    assert_eq!(r.next().await.text, "and more");
    assert!(r.fake.calls_of("download").is_empty(), "no CDN fetch");
    assert_eq!(got.media.len(), 1);
    assert_eq!(got.media[0].size_bytes, Some(10));
    assert!(got.media[0].path.is_none());
    assert_eq!(got.text, "from a stranger");

    let mut allowance = 1024;
    assert_eq!(
        fetch_all(
            &mut got,
            &mut allowance,
            &std::env::temp_dir().join("pincer-kept")
        )
        .await,
        10
    );
    assert_eq!(r.fake.calls_of("download").len(), 1);
    let path = got.media[0].path.clone().expect("saved");
    assert_eq!(
        path.parent(),
        Some(r._inbox.path().join("discord").as_path())
    );
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("{id}-")) && name.ends_with("-payload.bin"),
        "{name}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"0123456789");
    assert!(
        got.text
            .ends_with(&format!("[attached: {}]", path.display())),
        "{}",
        got.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_edited_in_place_with_typing_and_reactions() {
    let r = Running::start().await;
    let handle = r.discord.handle();
    let thread = target(objects::text_channel(1), Some(objects::thread_channel(1)));
    let id = handle.channel.send(&thread, "**do**").await.unwrap();
    handle
        .editor
        .clone()
        .unwrap()
        .edit(&thread, &id, "**done**")
        .await
        .unwrap();
    handle
        .typing
        .clone()
        .unwrap()
        .typing(&thread)
        .await
        .unwrap();
    handle
        .reactions
        .clone()
        .unwrap()
        .react(&thread, &id, "👍")
        .await
        .unwrap();
    let shown = r.fake.bot_messages();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].content(), "**done**");
    assert_eq!(shown[0].edits, 1);
    assert_eq!(shown[0].channel, objects::thread_channel(1));
    assert_eq!(r.fake.typing_in(objects::thread_channel(1)), 1);
    let react = r.fake.calls_of("react").pop().unwrap();
    assert!(react.path.ends_with("/reactions/👍/@me"), "{}", react.path);
    assert_ne!(BOT_ID, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_api_url_is_refused_with_the_setting_named() {
    let err = Discord::new(
        DiscordSettings {
            token: "x".into(),
            api_url: "not a url".into(),
            inbox: std::env::temp_dir(),
            media_max_bytes: 1,
            silence: None,
        },
        Default::default(),
    )
    .err()
    .expect("refused");
    assert!(err.message.contains("channels.discord.api_url"), "{err}");
}
