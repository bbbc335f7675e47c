//! Slack end to end: the real `pincer run` binary against the fake Slack (Socket Mode,
//! or the Events API) and the fake model. Each test owns its fakes and its Pincer home.

use crate::common;

use std::time::Duration;

use common::pairing_code;
use common::platform::{self, Setup};
use pincer_fakes::Step;
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::slack::{FakeSlack, Incoming, Signing};

async fn setup(extra_channel: &str, extra_agent: &str) -> Setup<FakeSlack> {
    platform::setup(FakeSlack::start().await, extra_channel, extra_agent).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_gets_a_pairing_code_and_the_owner_gets_the_reply() {
    let s = setup("", "owners = [\"slack:U42\"]").await;
    s.model.push(Step::text("Hello from **Pincer** over Slack"));
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(7, "who are you?"));
    let reply = s.wait_shown("D7", "pairing code").await;
    let code = pairing_code(&reply.text);
    // The code is the gate's answer, given instead of a turn.
    assert!(
        s.model.requests().is_empty(),
        "a stranger never reaches the model"
    );
    assert!(s.home.run(&["pairing", "list"]).stdout.contains(&code));

    s.platform.inject(Incoming::dm(42, "hi there"));
    let reply = s.wait_shown("D42", "Hello from").await;
    assert_eq!(
        reply.text, "Hello from *Pincer* over Slack",
        "sent as mrkdwn"
    );
    assert_eq!(s.model.requests()[0].last_user_text(), "hi there");
    // `!new` is the way to type a command Slack would otherwise take for itself.
    s.platform.inject(Incoming::dm(42, "!new"));
    s.wait_shown("D42", "new conversation").await;
    assert_eq!(
        s.model.requests().len(),
        1,
        "commands never reach the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_channel_a_mention_is_answered_once_and_other_talk_is_not() {
    let s = setup("groups = [\"C1\"]\ngroup_policy = \"mention\"", "").await;
    s.platform.set_name("U11", "Ann");
    let _gateway = s.start();
    s.platform
        .inject(Incoming::channel("C1", 11, "we should pick a date"));
    s.platform
        .inject(Incoming::channel("C9", 12, "not an allowed channel").mentioning_bot());
    s.platform
        .inject(Incoming::channel("C1", 12, "what do you think?").mentioning_bot());
    s.wait_shown("C1", "echo:").await;
    // The channel's turns run one at a time: a second answer to the mention would
    // come before this one.
    s.platform
        .inject(Incoming::channel("C1", 12, "and now?").mentioning_bot());
    s.wait_shown("C1", "and now?").await;
    let requests = s.model.requests();
    assert_eq!(
        requests.len(),
        2,
        "the mention arrived twice but is answered once"
    );
    let seen = requests[0].last_user_text();
    assert!(
        seen.contains("Ann (slack:U11): we should pick a date"),
        "unmentioned talk is context: {seen}"
    );
    assert!(seen.contains("what do you think?"), "{seen}");
    assert_eq!(s.texts_in("C1").len(), 2, "{:?}", s.texts_in("C1"));
    assert!(s.texts_in("C9").is_empty());
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    assert!(!sessions.contains("slack:group:C9"), "let in: {sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_is_answered_in_its_thread_as_its_own_session() {
    let s = setup("groups = [\"*\"]", "").await;
    let _gateway = s.start();
    let parent = s.platform.existing_message("C1", "U5", "planning thread");
    s.platform.inject(
        Incoming::channel("C1", 5, "in the thread")
            .in_thread(&parent)
            .mentioning_bot(),
    );
    let reply = s.wait_shown("C1", "in the thread").await;
    assert_eq!(reply.thread.as_deref(), Some(parent.as_str()));
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    assert!(
        sessions.contains(&format!("slack:group:C1:thread:{parent}")),
        "{sessions}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_is_split_and_a_streamed_one_is_edited_in_place() {
    let s = setup("", "owners = [\"slack:U42\"]").await;
    let mut long = String::new();
    for n in 0..10 {
        long.push_str(&format!("Section {n}: {}\n\n", filler(14)));
    }
    assert!(long.chars().count() > 5000);
    s.model.push(Step::text(long));
    let stream = "streaming words arrive one by one ".repeat(6);
    s.model.push(Step::slow_text(&stream, 120));
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "write a lot"));
    s.wait_shown("D42", "Section 9").await;
    let texts = s.texts_in("D42");
    assert!(texts.len() >= 2, "{} chunks", texts.len());
    assert!(texts.iter().all(|t| t.chars().count() <= 4000));
    let order: Vec<usize> = (0..10)
        .map(|n| {
            texts
                .iter()
                .position(|t| t.contains(&format!("Section {n}:")))
                .unwrap()
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");

    s.platform.inject(Incoming::dm(42, "now stream"));
    let streamed = s
        .platform
        .wait_for_text("D42", stream.trim(), common::PATIENCE)
        .await
        .expect("the streamed reply");
    assert!(
        !streamed.history[0].is_empty() && streamed.history[0] != streamed.text,
        "shown early with the text so far: {:?}",
        streamed.history
    );
    assert!(
        streamed.edits >= 2,
        "edited as it streamed: {:?}",
        streamed.history
    );
    assert!(s.platform.calls_of("chat.update").len() >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelopes_are_acknowledged_within_3_s_while_the_model_takes_10() {
    let s = setup("", "owners = [\"slack:U42\"]").await;
    s.model.push(Step::text("finally").after_ms(10_000));
    let _gateway = s.start();
    assert!(s.platform.wait_for_connection(1, common::PATIENCE).await);
    s.platform.inject(Incoming::dm(42, "take your time"));
    let deliveries = s.platform.wait_for_acks(1, Duration::from_secs(5)).await;
    let latency = deliveries[0].ack_latency().expect("acknowledged");
    assert!(latency < Duration::from_secs(3), "acked after {latency:?}");
    assert!(
        s.platform
            .posted()
            .iter()
            .all(|m| !m.text.contains("finally")),
        "the model is still busy"
    );
    s.platform
        .wait_for_text("D42", "finally", Duration::from_secs(20))
        .await
        .expect("answered");
    assert_eq!(
        s.platform.deliveries()[0].retry_attempt,
        0,
        "never redelivered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_and_a_dropped_socket_reconnect_and_lose_nothing() {
    let s = setup("", "owners = [\"slack:U42\"]").await;
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "before"));
    s.wait_shown("D42", "echo: before").await;
    s.status_shows("up").await;

    assert!(s.platform.ask_to_reconnect("refresh_requested"));
    assert!(s.platform.wait_for_connection(2, common::PATIENCE).await);
    s.platform.inject(Incoming::dm(42, "after refresh"));
    s.wait_shown("D42", "echo: after refresh").await;

    s.platform.outage(Duration::from_secs(6));
    s.platform.inject(Incoming::dm(42, "during the outage"));
    s.status_shows("degraded: reconnecting").await;
    s.wait_shown("D42", "echo: during the outage").await;
    s.status_shows("up").await;
    // A message delivered twice would be answered twice before this one is.
    s.round_trip(42, "last").await;
    let texts = s.texts_in("D42");
    for needle in [
        "echo: before",
        "echo: after refresh",
        "echo: during the outage",
    ] {
        assert_eq!(
            texts.iter().filter(|t| t.contains(needle)).count(),
            1,
            "{needle}: {texts:?}"
        );
    }
    assert_eq!(s.model.requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_api_answers_signed_events_and_refuses_the_rest() {
    let listen = {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        socket.local_addr().unwrap()
    };
    let s = setup("", "owners = [\"slack:U42\"]").await;
    // The fake's table says Socket Mode; this test wants the Events API instead.
    let config = std::fs::read_to_string(s.home.config_file()).unwrap();
    s.home.write_config(&config.replace(
        "mode = \"socket\"",
        &format!("mode = \"events\"\nlisten = \"{listen}\""),
    ));
    s.home.write_secrets(&format!(
        "channels:\n  slack:\n    bot_token: \"{}\"\n    signing_secret: \"{}\"\n",
        s.platform.bot_token(),
        s.platform.signing_secret()
    ));
    let _gateway = s.start();
    s.status_shows("up").await;
    let check = s
        .platform
        .url_verification(listen, "c0ffee", Signing::Good)
        .await;
    assert_eq!(check.status, 200);
    assert!(check.body.contains("c0ffee"), "{}", check.body);

    for signing in [Signing::BadSignature, Signing::Stale] {
        let answers = s
            .platform
            .post_events(listen, Incoming::dm(42, "forged"), signing)
            .await;
        assert_eq!(answers[0].status, 401, "{signing:?}");
    }
    let answers = s
        .platform
        .post_events(listen, Incoming::dm(42, "signed and fresh"), Signing::Good)
        .await;
    assert_eq!(answers[0].status, 200);
    s.wait_shown("D42", "echo: signed and fresh").await;
    assert_eq!(
        s.model.requests().len(),
        1,
        "forged events never reach the model"
    );
    assert_eq!(s.platform.connections(), 0, "no socket in events mode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_shows_as_down_with_the_fix_and_the_gateway_keeps_running() {
    let s = setup("", "owners = [\"slack:U42\"]").await;
    s.platform.reject_tokens(true);
    let mut gateway = s.start();
    let status = s.status_shows("down: Slack rejected the bot token").await;
    assert!(status.contains("SLACK_BOT_TOKEN"), "{status}");
    assert!(
        gateway.child.try_wait().unwrap().is_none(),
        "a bad token must not crash the gateway"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_app_token_is_an_error_naming_both_places() {
    let s = setup("", "").await;
    s.home.write_secrets(&format!(
        "channels:\n  slack:\n    bot_token: \"{}\"\n",
        s.platform.bot_token()
    ));
    s.home
        .run(&["run"])
        .fails_with(&["app_token", "SLACK_APP_TOKEN", ".security.yml"]);
}

/// The fake through the `FakePlatform` contract the conformance suite uses, so the
/// mapping of users, chats and threads is proven before that suite runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_platform_contract_holds_for_slack() {
    let fake = FakeSlack::start().await;
    let owner = platform::owners(&fake, &[1]);
    let s = platform::setup(fake, "groups = [\"*\"]", &owner).await;
    let _gateway = s.start_connected().await;
    let p: &dyn FakePlatform = &s.platform;
    let dm = s.round_trip(1, "one").await;
    let group = p.group(5, 2, "two", true).await;
    s.wait_shown(&group, "two").await;
    let (chat, thread) = p.thread(5, 2, "three").await.expect("Slack has threads");
    let reply = s.wait_shown(&chat, "three").await;
    assert_eq!(reply.thread, Some(thread));
    p.disconnect(Duration::from_secs(2)).await;
    s.round_trip(1, "four").await;
    assert_eq!(p.typing(&dm), None);
    assert!(!p.press(&dm, 1, "once").await, "no buttons shown yet");
    assert!(p.limit() >= 4000);
}

/// `n` different runs of filler words: the same words over and over would be a model
/// looping, which the agent stops.
fn filler(n: usize) -> String {
    (0..n)
        .map(|i| format!("words that fill the paragraph & more, run {i} "))
        .collect()
}
