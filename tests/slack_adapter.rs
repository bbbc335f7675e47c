//! The Slack adapter driven directly against the fake Slack: what reaches the bus (dedupe,
//! gating facts, threads, files), acknowledgements and redelivery across reconnects,
//! health, approval buttons, the Events API listener, and sending. (Conversations
//! through the whole binary are in tests/slack.rs.)

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::conformance::adapter::slack_settings;
use pincer_channels::approval::{Choice, PendingApprovals, button_data};
use pincer_channels::inbox::fetch_all;
use pincer_channels::slack::{Slack, SlackMode, SlackSettings};
use pincer_channels::{ChatKind, Health, Inbound, InboundMessage, OutboundMedia, Target};
use pincer_fakes::slack::{FakeSlack, Incoming, Signing, SlackFault};
use pincer_fakes::{PATIENCE, wait_for};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

struct Running {
    slack: Arc<Slack>,
    bus: mpsc::Receiver<Inbound>,
    stop: CancellationToken,
    approvals: Arc<PendingApprovals>,
    _inbox: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn settings(fake: &FakeSlack, inbox: &std::path::Path) -> SlackSettings {
    SlackSettings {
        media_max_bytes: 1024,
        ..slack_settings(fake, inbox)
    }
}

fn start_with(settings: impl FnOnce(SlackSettings) -> SlackSettings, fake: &FakeSlack) -> Running {
    let inbox = tempfile::tempdir().unwrap();
    let approvals = Arc::new(PendingApprovals::default());
    let slack = Slack::new(
        settings(self::settings(fake, inbox.path())),
        Arc::clone(&approvals),
    )
    .unwrap();
    let (tx, bus) = mpsc::channel(16);
    let stop = CancellationToken::new();
    let listener: Arc<dyn pincer_channels::Channel> = Arc::clone(&slack) as _;
    let token = stop.clone();
    tokio::spawn(async move {
        if let Err(err) = listener.listen(tx, token).await {
            panic!("listen failed: {err}");
        }
    });
    Running {
        slack,
        bus,
        stop,
        approvals,
        _inbox: inbox,
    }
}

impl Running {
    /// The next message on the bus, acknowledged as the core would once stored.
    async fn next(&mut self) -> InboundMessage {
        let mut inbound = tokio::time::timeout(PATIENCE, self.bus.recv())
            .await
            .expect("a message on the bus in time")
            .expect("the bus is open");
        if let Some(ack) = inbound.ack.take() {
            ack.fire();
        }
        inbound.message
    }

    /// Nothing more is on its way: `last` (sent after everything else) is the next
    /// message on the bus.
    async fn nothing_more(&mut self, last: impl std::future::Future<Output = ()>) {
        last.await;
        let next = self.next().await;
        assert_eq!(next.text, "the last word", "unexpected message on the bus");
    }

    /// Wait until the adapter's health passes `check`; that health.
    async fn wait_health(&self, check: impl Fn(&Health) -> bool) -> Health {
        let handle = self.slack.handle();
        wait_for(
            async || Some(handle.health()).filter(|health| check(health)),
            || format!("the health never passed the check: {:?}", handle.health()),
        )
        .await
    }
}

/// The last word, sent over the socket.
async fn last_word(fake: &FakeSlack) {
    fake.inject(Incoming::dm(99, "the last word"));
}

/// The last word, posted to the Events API listener.
async fn signed_last_word(fake: &FakeSlack, listen: SocketAddr) {
    let answers = fake
        .post_events(listen, Incoming::dm(99, "the last word"), Signing::Good)
        .await;
    assert_eq!(answers[0].status, 200);
}

fn dm(user: &str) -> Target {
    Target {
        channel: "slack".into(),
        chat_id: format!("D{}", user.trim_start_matches('U')),
        thread_id: None,
        user: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_arriving_twice_reaches_the_bus_once_and_bots_and_edits_never() {
    let fake = FakeSlack::start().await;
    fake.set_name("U7", "Ann");
    let mut run = start_with(|s| s, &fake);
    fake.inject(Incoming::channel("C1", 7, "lunch anyone?"));
    fake.inject(Incoming::channel("C1", 7, "what do you think?").mentioning_bot());
    fake.inject(Incoming::channel("C1", 8, "beep").from_bot());
    fake.inject(Incoming::channel("C1", 7, "lunch anyone??").edited());
    fake.inject(Incoming::dm(7, "hello in private"));

    let plain = run.next().await;
    assert_eq!((plain.chat_kind, plain.addressed), (ChatKind::Group, false));
    assert_eq!(
        plain.sender.display_name, "Ann",
        "names come from users.info"
    );
    let mention = run.next().await;
    assert!(mention.addressed);
    assert_eq!(
        mention.text, "what do you think?",
        "the leading mention is dropped"
    );
    assert_eq!(mention.sender.canonical, "slack:U7");
    let private = run.next().await;
    assert_eq!(
        (private.chat_kind, private.chat_id.as_str()),
        (ChatKind::Dm, "D7")
    );
    run.nothing_more(last_word(&fake)).await;
    // Every envelope was acknowledged, the duplicate and the ignored ones too (and the
    // last word).
    let deliveries = fake.wait_for_acks(7, PATIENCE).await;
    assert!(
        deliveries.iter().all(|d| d.acked_at.is_some()),
        "{deliveries:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_is_its_own_session_and_replies_go_into_it() {
    let fake = FakeSlack::start().await;
    let mut run = start_with(|s| s, &fake);
    let parent = fake.existing_message("C1", "UBOT", "a question from the bot");
    fake.inject(
        Incoming::channel("C1", 7, "answering you")
            .in_thread(&parent)
            .under_bot_message(),
    );
    let reply = run.next().await;
    assert_eq!(reply.chat_kind, ChatKind::Thread);
    assert_eq!(reply.thread_id.as_deref(), Some(parent.as_str()));
    assert!(
        reply.addressed,
        "a reply under the bot's message addresses it"
    );
    assert_eq!(
        reply.session_key().to_string(),
        format!("slack:group:C1:thread:{parent}")
    );
    let target = reply.target();
    run.slack
        .handle()
        .channel
        .send(&target, "**noted**")
        .await
        .unwrap();
    let sent = fake.wait_for_text("C1", "noted", PATIENCE).await.unwrap();
    assert_eq!(sent.thread_ts.as_deref(), Some(parent.as_str()));
    assert_eq!(sent.text, "*noted*", "markdown goes out as mrkdwn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacknowledged_envelopes_come_back_after_a_dropped_socket_and_a_disconnect() {
    let fake = FakeSlack::start().await;
    let mut run = start_with(|s| s, &fake);
    assert!(fake.wait_for_connection(1, PATIENCE).await);
    assert_eq!(run.wait_health(|h| *h == Health::Up).await, Health::Up);

    // Slack asks to reconnect: the adapter opens a new connection at once.
    assert!(fake.ask_to_reconnect("refresh_requested"));
    assert!(
        fake.wait_for_connection(2, PATIENCE).await,
        "reconnected after disconnect"
    );
    fake.inject(Incoming::dm(7, "after the refresh"));
    assert_eq!(run.next().await.text, "after the refresh");

    // A message the core is slow to store is not acked before the socket drops...
    fake.inject(Incoming::dm(7, "in flight"));
    let mut held = tokio::time::timeout(PATIENCE, run.bus.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(fake.drop_socket());
    let degraded = run.wait_health(|h| matches!(h, Health::Degraded(_))).await;
    assert!(degraded.to_string().contains("reconnecting"), "{degraded}");
    assert!(
        fake.wait_for_connection(3, PATIENCE).await,
        "reconnected after a drop"
    );
    assert_eq!(run.wait_health(|h| *h == Health::Up).await, Health::Up);
    // ...so Slack sends it again on the new connection, and the adapter does not pass it
    // on twice; once stored, the redelivery is acknowledged.
    held.ack.take().unwrap().fire();
    let deliveries = fake.wait_for_acks(3, PATIENCE).await;
    let in_flight = deliveries
        .iter()
        .find(|d| d.payload["event"]["text"] == "in flight")
        .unwrap();
    assert_eq!(in_flight.retry_attempt, 1, "{in_flight:#?}");
    assert!(in_flight.acked_at.is_some());
    run.nothing_more(last_word(&fake)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_keeps_dropping_is_reopened_promptly_every_time() {
    let fake = FakeSlack::start().await;
    let mut run = start_with(|s| s, &fake);
    assert!(fake.wait_for_connection(1, PATIENCE).await);
    // Four working connections drop in a row. Backing off as from failures would wait
    // 1, 2, 4 and then 8 s; each was greeted, so each is reopened after a second.
    for n in 2..=5 {
        assert_eq!(run.wait_health(|h| *h == Health::Up).await, Health::Up);
        let dropped = tokio::time::Instant::now();
        assert!(fake.drop_socket());
        assert!(fake.wait_for_connection(n, PATIENCE).await);
        let waited = dropped.elapsed();
        assert!(
            waited < Duration::from_secs(5),
            "connection {n} came {waited:?} after the drop"
        );
    }
    fake.inject(Incoming::dm(7, "still here"));
    assert_eq!(run.next().await.text, "still here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_token_is_down_and_names_the_fix() {
    let fake = FakeSlack::start().await;
    fake.fail_next(
        "apps.connections.open",
        SlackFault::Error("invalid_auth".into()),
    );
    let run = start_with(|s| s, &fake);
    let health = run.wait_health(|h| matches!(h, Health::Down(_))).await;
    let text = health.to_string();
    assert!(
        text.starts_with("down: Slack rejected the app token"),
        "{text}"
    );
    assert!(
        text.contains("SLACK_APP_TOKEN") && text.contains("channels.slack.app_token"),
        "{text}"
    );

    let fake = FakeSlack::start().await;
    fake.reject_tokens(true);
    let run = start_with(|s| s, &fake);
    let text = run
        .wait_health(|h| matches!(h, Health::Down(_)))
        .await
        .to_string();
    assert!(
        text.contains("bot token") && text.contains("SLACK_BOT_TOKEN"),
        "{text}"
    );
    assert_eq!(fake.connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_buttons_answer_the_owner_and_refuse_anyone_else() {
    let fake = FakeSlack::start().await;
    let run = start_with(|s| s, &fake);
    assert!(fake.wait_for_connection(1, PATIENCE).await);
    let handle = run.slack.handle();
    let prompter = handle
        .approvals
        .clone()
        .expect("Slack shows approval buttons");
    let (id, answer) = run.approvals.open(vec!["slack:U7".into()]);
    let target = dm("U7");
    let ts = prompter
        .ask(&target, "Run `rm -rf build`?", &id)
        .await
        .unwrap();
    let question = fake.posted().into_iter().find(|m| m.ts == ts).unwrap();
    let values: Vec<String> = question
        .buttons()
        .map(|b| b["value"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(values, Choice::ALL.map(|c| button_data(&id, c)));

    // Someone else presses: refused, and told so privately.
    assert!(fake.press("D7", "U9", "always"));
    let refusal = fake.wait_for_ephemerals(1).await;
    assert_eq!(refusal[0].text, "Only the owner can answer this.");
    assert_eq!(refusal[0].user, "U9");
    // The owner presses (through the conformance suite's contract): the waiting call
    // gets the answer.
    assert!(pincer_fakes::platform::FakePlatform::press(&fake, "D7", 7, "once").await);
    let choice = tokio::time::timeout(PATIENCE, answer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(choice, Choice::Once);
    let toasts = fake.wait_for_ephemerals(2).await;
    assert_eq!(toasts[1].text, "✅ Allowed once");
    // Settling replaces the question and removes the buttons.
    prompter
        .settle(&target, &ts, "✅ Allowed once: `rm -rf build`")
        .await
        .unwrap();
    let settled = fake.posted().into_iter().find(|m| m.ts == ts).unwrap();
    assert!(!settled.has_buttons(), "{settled:#?}");
    assert!(settled.text.starts_with("✅ Allowed once"));
    // Presses are acknowledged at once.
    let presses: Vec<_> = fake
        .deliveries()
        .into_iter()
        .filter(|d| d.kind == "interactive")
        .collect();
    assert_eq!(presses.len(), 2);
    assert!(
        presses
            .iter()
            .all(|d| d.ack_latency().is_some_and(|t| t < Duration::from_secs(1)))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_questions_choices_are_buttons_for_the_person_asked() {
    let fake = FakeSlack::start().await;
    let run = start_with(|s| s, &fake);
    assert!(fake.wait_for_connection(1, PATIENCE).await);
    let prompter = run.slack.handle().approvals.clone().expect("buttons");
    let target = dm("U7");
    let (id, answer) = run
        .approvals
        .open_question(vec!["slack:U7".into()], target.key());
    let options = vec!["Tea".to_string(), "Coffee".to_string(), "x".repeat(120)];
    let ts = prompter
        .ask_with(
            &target,
            "Which?",
            &id,
            &pincer_channels::approval::option_buttons(&options),
        )
        .await
        .unwrap();
    let question = fake.posted().into_iter().find(|m| m.ts == ts).unwrap();
    let labels: Vec<String> = question
        .buttons()
        .map(|b| b["text"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels[..2], ["Tea", "Coffee"]);
    assert_eq!(labels[2].chars().count(), 75, "cut to Slack's limit");
    assert!(fake.press("D7", "U9", "p1"));
    let refusal = fake.wait_for_ephemerals(1).await;
    assert_eq!(refusal[0].text, "Only the person asked can answer this.");
    assert!(fake.press("D7", "U7", "p1"));
    let reply = tokio::time::timeout(PATIENCE, answer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply, pincer_channels::approval::Reply::Picked(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_fetched_only_when_the_core_asks_and_the_token_stays_on_slack() {
    let fake = FakeSlack::start().await;
    // Another server, standing for wherever an external file lives.
    let elsewhere = FakeSlack::start().await;
    let mut run = start_with(|s| s, &fake);
    let external = format!("http://{}/files/F9/report.pdf", elsewhere.addr());
    fake.inject(
        Incoming::channel("C1", 7, "from a stranger")
            .with_file("notes.txt", "text/plain", b"hello file".to_vec())
            .with_external_file("report.pdf", &external),
    );
    fake.inject(Incoming::channel("C1", 7, "and more"));
    let mut got = run.next().await;
    // The adapter has moved on to the next message without fetching a file.
    assert_eq!(run.next().await.text, "and more");
    assert!(fake.calls_of("download").is_empty(), "no url_private fetch");
    assert_eq!(got.media.len(), 2);
    assert!(got.media.iter().all(|m| m.path.is_none()));
    assert_eq!(got.text, "from a stranger");

    let mut allowance = 1 << 20;
    assert_eq!(
        fetch_all(
            &mut got,
            &mut allowance,
            &std::env::temp_dir().join("pincer-kept")
        )
        .await,
        10
    );
    assert_eq!(fake.calls_of("download").len(), 1);
    assert!(elsewhere.calls().is_empty(), "nothing went outside Slack");
    let path = got.media[0].path.clone().expect("saved");
    assert_eq!(
        path.parent(),
        Some(run._inbox.path().join("slack").as_path())
    );
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("C1-") && name.ends_with("-notes.txt"),
        "{name}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"hello file");
    assert!(got.media[1].path.is_none());
    assert_eq!(
        got.text,
        format!(
            "from a stranger\n[attached: {}]\n[report.pdf is stored outside Slack; not downloaded]",
            path.display()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_come_in_within_the_cap_and_go_out_by_upload_url() {
    let fake = FakeSlack::start().await;
    let mut run = start_with(|s| s, &fake);
    fake.inject(Incoming::dm(7, "look").with_file(
        "notes.txt",
        "text/plain",
        b"hello file".to_vec(),
    ));
    fake.inject(Incoming::dm(7, "too big").with_file(
        "big.bin",
        "application/octet-stream",
        vec![0; 4096],
    ));
    let mut small = run.next().await;
    let mut allowance = 1 << 20;
    assert_eq!(
        fetch_all(
            &mut small,
            &mut allowance,
            &std::env::temp_dir().join("pincer-kept")
        )
        .await,
        10
    );
    let path = small.media[0].path.clone().expect("downloaded");
    assert_eq!(std::fs::read(&path).unwrap(), b"hello file");
    assert!(small.text.contains("[attached:"), "{}", small.text);
    let mut big = run.next().await;
    assert_eq!(
        fetch_all(
            &mut big,
            &mut allowance,
            &std::env::temp_dir().join("pincer-kept")
        )
        .await,
        0
    );
    assert!(big.media[0].path.is_none());
    assert!(
        big.text.contains("larger than channels.slack.media_max_mb"),
        "{}",
        big.text
    );

    let report = run._inbox.path().join("report.pdf");
    std::fs::write(&report, b"%PDF-1.4 fake").unwrap();
    let mut target = dm("U7");
    target.thread_id = Some("1700000000.000101".into());
    let media = run.slack.handle().media.clone().unwrap();
    let id = media
        .send_media(
            &target,
            &OutboundMedia {
                file_name: "report.pdf".into(),
                bytes: std::fs::read(&report).unwrap(),
                source: None,
                caption: Some("the **report**".into()),
                as_photo: false,
                as_voice: false,
            },
        )
        .await
        .unwrap();
    let upload = fake
        .uploads()
        .into_iter()
        .find(|u| u.file_id == id)
        .unwrap();
    assert!(upload.completed);
    assert_eq!(upload.bytes, b"%PDF-1.4 fake");
    assert_eq!(upload.channel.as_deref(), Some("D7"));
    assert_eq!(upload.thread_ts.as_deref(), Some("1700000000.000101"));
    assert_eq!(upload.comment.as_deref(), Some("the *report*"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_edited_in_place_and_rate_limits_say_when_to_retry() {
    let fake = FakeSlack::start().await;
    let run = start_with(|s| s, &fake);
    let handle = run.slack.handle();
    let target = dm("U7");
    let id = handle.channel.send(&target, "so far").await.unwrap();
    handle
        .editor
        .clone()
        .unwrap()
        .edit(&target, &id, "half")
        .await
        .unwrap();
    handle
        .editor
        .clone()
        .unwrap()
        .edit(&target, &id, "half and **done**")
        .await
        .unwrap();
    let message = fake.posted().into_iter().find(|m| m.ts == id).unwrap();
    assert_eq!(message.history, ["so far", "half", "half and *done*"]);
    handle
        .reactions
        .clone()
        .unwrap()
        .react(&target, &id, "👍")
        .await
        .unwrap();
    assert_eq!(fake.reactions()[0].2, "thumbsup");

    fake.fail_next(
        "chat.postMessage",
        SlackFault::RateLimited { retry_after: 3 },
    );
    let err = handle.channel.send(&target, "hi").await.unwrap_err();
    assert!(err.retryable);
    assert_eq!(err.retry_after, Some(Duration::from_secs(3)));
    fake.fail_next(
        "chat.postMessage",
        SlackFault::Error("channel_not_found".into()),
    );
    let err = handle.channel.send(&target, "hi").await.unwrap_err();
    assert!(
        !err.retryable && err.message.contains("invite the bot"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_im_is_opened_once_and_their_approval_question_asked_there() {
    let fake = FakeSlack::start().await;
    let run = start_with(|s| s, &fake);
    let handle = run.slack.handle();
    let opener = handle.direct.clone().expect("Slack opens IMs");
    assert_eq!(opener.open_direct("U7").await.unwrap(), "D7");
    assert_eq!(opener.open_direct("U7").await.unwrap(), "D7");
    let opened = fake.calls_of("conversations.open");
    assert_eq!(opened.len(), 1, "the second time comes from the cache");
    assert_eq!(opened[0].params["users"], serde_json::json!(["U7"]));
    assert_eq!(fake.opened_im("U7").as_deref(), Some("D7"));

    // A question for the person (a job's turn delivered to the owner) goes to their IM.
    let person = Target::user("slack:U7").unwrap();
    let prompter = handle.approvals.clone().unwrap();
    let ts = prompter.ask(&person, "Allow?", "req1").await.unwrap();
    prompter.settle(&person, &ts, "Allowed once").await.unwrap();
    let question = fake.posted().into_iter().find(|m| m.ts == ts).unwrap();
    assert_eq!(question.channel, "D7");
    assert_eq!(question.text, "Allowed once");
    assert_eq!(fake.calls_of("conversations.open").len(), 1);

    // Nobody Slack knows: refused for good, saying how a person is written.
    let err = opener.open_direct("alice").await.unwrap_err();
    assert!(!err.retryable);
    assert!(err.message.contains("slack:<member id>"), "{err}");
    fake.fail_next(
        "conversations.open",
        SlackFault::Error("missing_scope".into()),
    );
    let err = opener.open_direct("U8").await.unwrap_err();
    assert!(err.message.contains("U8"), "{err}");
    assert!(err.message.contains("im:write"), "{err}");
}

fn free_port() -> SocketAddr {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_api_takes_only_correctly_signed_fresh_requests() {
    let fake = FakeSlack::start().await;
    let listen = free_port();
    let mut run = start_with(
        |s| SlackSettings {
            mode: SlackMode::Events,
            app_token: None,
            signing_secret: Some(fake.signing_secret().into()),
            listen: Some(listen),
            ..s
        },
        &fake,
    );
    run.wait_health(|h| *h == Health::Up).await;
    let check = fake.url_verification(listen, "abc123", Signing::Good).await;
    assert_eq!(check.status, 200);
    assert!(
        check.body.contains("\"challenge\":\"abc123\""),
        "{}",
        check.body
    );

    for signing in [Signing::BadSignature, Signing::Stale, Signing::Missing] {
        let answers = fake
            .post_events(listen, Incoming::dm(7, "forged"), signing)
            .await;
        assert_eq!(answers[0].status, 401, "{signing:?}: {answers:?}");
    }
    assert_eq!(
        fake.url_verification(listen, "x", Signing::BadSignature)
            .await
            .status,
        401
    );
    run.nothing_more(signed_last_word(&fake, listen)).await;

    let bus = tokio::spawn(async move {
        let message = run.next().await;
        (message, run)
    });
    let answers = fake
        .post_events(
            listen,
            Incoming::channel("C1", 7, "hi there").mentioning_bot(),
            Signing::Good,
        )
        .await;
    assert_eq!(
        answers.iter().map(|a| a.status).collect::<Vec<_>>(),
        [200, 200]
    );
    let (message, mut run) = bus.await.unwrap();
    assert_eq!(message.text, "hi there");
    assert!(message.addressed);
    run.nothing_more(signed_last_word(&fake, listen)).await;
}
