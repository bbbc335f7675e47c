//! Discord end to end: the real `pincer run` binary against the fake Discord (REST and
//! gateway) and the fake model. Each test owns its fakes and its Pincer home.

use crate::common;

use std::time::{Duration, Instant};

use common::pairing_code;
use common::platform::{self, Setup, owners};
use pincer_fakes::Step;
use pincer_fakes::discord::{FakeDiscord, Fault, Incoming, objects};

const OWNER: u64 = 42;

async fn setup(extra_channel: &str) -> Setup<FakeDiscord> {
    let discord = FakeDiscord::start().await;
    let owner = owners(&discord, &[OWNER]);
    platform::setup(discord, extra_channel, &owner).await
}

fn dm(user: u64) -> String {
    objects::dm_channel(user).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_gets_a_pairing_code_and_the_owner_gets_the_reply() {
    let s = setup("").await;
    let _gateway = s.start_connected().await;
    s.platform.inject(Incoming::dm(7, "hello, who are you?"));
    let reply = s.wait_shown(&dm(7), "pairing code").await;
    let code = pairing_code(&reply.text);
    // The code is the gate's answer, given instead of a turn.
    assert!(
        s.model.requests().is_empty(),
        "a stranger's message must never reach the model"
    );
    let approve = s.home.run(&["pairing", "approve", "discord", &code]);
    assert!(approve.ok(), "{approve:?}");

    s.model.push(Step::text("Hello from Pincer over Discord"));
    s.platform.inject(Incoming::dm(OWNER, "hi there"));
    s.wait_shown(&dm(OWNER), "Hello from Pincer over Discord")
        .await;
    assert_eq!(s.model.requests()[0].last_user_text(), "hi there");
    assert!(
        s.platform.typing_in(objects::dm_channel(OWNER)) >= 1,
        "typing was shown during the turn"
    );
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    assert!(
        sessions.contains(&format!("discord:dm:{}", objects::dm_channel(OWNER))),
        "{sessions}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_guild_channel_the_bot_answers_only_when_mentioned() {
    let allowed = objects::text_channel(1);
    let s = setup(&format!(
        "group_policy = \"mention\"\ngroups = [\"{allowed}\"]"
    ))
    .await;
    let _gateway = s.start_connected().await;
    s.platform
        .inject(Incoming::channel(1, 11, "we should pick a date"));
    s.platform
        .inject(Incoming::channel(2, 11, "not an allowed channel").mentioning_bot());
    s.platform
        .inject(Incoming::channel(1, 12, "what do you think?").mentioning_bot());
    // The gateway takes messages in the order Discord sends them, and this channel's
    // one turn at a time: the two before were dealt with before this answer.
    s.wait_shown(&allowed.to_string(), "echo:").await;
    let requests = s.model.requests();
    assert_eq!(
        requests.len(),
        1,
        "unmentioned or disallowed messages reached the model"
    );
    assert_eq!(s.texts_in(&allowed.to_string()).len(), 1);
    let seen = requests[0].last_user_text();
    assert!(
        seen.contains("we should pick a date"),
        "context kept: {seen}"
    );
    assert!(
        seen.contains("@pincer_test_bot what do you think?"),
        "{seen}"
    );
    assert!(s.texts_in(&objects::text_channel(2).to_string()).is_empty());
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    let other = objects::text_channel(2).to_string();
    assert!(!sessions.contains(&other), "let in: {sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_is_its_own_session_and_its_reply_stays_in_it() {
    let s = setup("groups = [\"*\"]").await;
    let _gateway = s.start_connected().await;
    s.platform
        .inject(Incoming::thread(1, OWNER, "in the thread").mentioning_bot());
    let reply = s
        .wait_shown(&objects::text_channel(1).to_string(), "in the thread")
        .await;
    let thread = objects::thread_channel(1).to_string();
    assert_eq!(reply.thread.as_deref(), Some(thread.as_str()));
    assert!(
        s.shown_in(&objects::text_channel(1).to_string())
            .iter()
            .all(|m| m.thread.as_deref() == Some(thread.as_str())),
        "nothing posted in the parent channel"
    );
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    let key = format!(
        "discord:group:{}:thread:{}",
        objects::text_channel(1),
        objects::thread_channel(1)
    );
    assert!(sessions.contains(&key), "{sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_arrives_in_ordered_chunks_within_2000_characters() {
    let s = setup("").await;
    let mut long = String::new();
    for n in 0..8 {
        long.push_str(&format!("Section {n}: {}\n\n", filler(10)));
        long.push_str(&format!(
            "```rust\n{}```\n\n",
            format!("let x{n} = {n}; // a line of code\n").repeat(12)
        ));
    }
    assert!(long.chars().count() > 5000);
    s.model.push(Step::text(long));
    let _gateway = s.start_connected().await;
    s.platform.inject(Incoming::dm(OWNER, "write a lot"));
    s.wait_shown(&dm(OWNER), "Section 7").await;
    // The reply is all out once the next message's is.
    s.round_trip(OWNER, "done?").await;
    let mut texts = s.texts_in(&dm(OWNER));
    texts.pop(); // the echo
    assert!(texts.len() >= 3, "{} chunks", texts.len());
    for text in &texts {
        assert!(text.chars().count() <= 2000, "{}", text.chars().count());
        assert_eq!(
            text.matches("```").count() % 2,
            0,
            "unbalanced fence: {text}"
        );
    }
    let positions: Vec<usize> = (0..8)
        .map(|n| {
            texts
                .iter()
                .position(|t| t.contains(&format!("Section {n}:")))
                .unwrap()
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] <= w[1]), "{positions:?}");
    assert!(
        s.platform
            .calls_of("create_message")
            .iter()
            .all(|c| c.body["content"].as_str().unwrap_or("").chars().count() <= 2000),
        "nothing over the limit was even tried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reply_streams_by_editing_one_message() {
    let s = setup("").await;
    s.model.push(Step::slow_text(
        "one two three four five six seven eight nine ten eleven twelve",
        250,
    ));
    let _gateway = s.start_connected().await;
    s.platform.inject(Incoming::dm(OWNER, "count slowly"));
    let reply = s.wait_shown(&dm(OWNER), "twelve").await;
    assert!(reply.edits >= 2, "not streamed: {} edits", reply.edits);
    assert_eq!(
        s.texts_in(&dm(OWNER)).len(),
        1,
        "one message, edited in place"
    );
    let edits = s.platform.calls_of("edit_message");
    assert!(
        edits.iter().any(|c| c.body["content"]
            .as_str()
            .is_some_and(|t| t.contains("one") && !t.contains("twelve"))),
        "a partial text was shown while streaming"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_gateway_resumes_without_losing_or_repeating_a_message() {
    let s = setup("").await;
    let _gateway = s.start_connected().await;
    s.round_trip(OWNER, "before").await;
    s.platform.drop_socket();
    s.round_trip(OWNER, "during").await;
    s.round_trip(OWNER, "after").await;
    // A message replayed twice would be answered twice before this one is.
    s.round_trip(OWNER, "last").await;
    let texts = s.texts_in(&dm(OWNER));
    for word in ["before", "during", "after"] {
        let n = texts
            .iter()
            .filter(|t| t.contains(&format!("echo: {word}")))
            .count();
        assert_eq!(n, 1, "`{word}` answered {n} times: {texts:?}");
    }
    assert_eq!(s.model.requests().len(), 4);
    assert!(s.platform.resumes() >= 1, "the session was resumed");
    assert_eq!(s.platform.identifies(), 1, "never re-identified");
    assert!(s.log().contains("resumed"), "{}", s.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_waited_out_for_retry_after() {
    let s = setup("").await;
    s.model.push(Step::text("after the wait"));
    let _gateway = s.start_connected().await;
    for route in ["create_message", "edit_message"] {
        s.platform
            .fail_next(route, Fault::TooManyRequests { retry_after: 1.2 });
    }
    let sent_at = Instant::now();
    s.platform.inject(Incoming::dm(OWNER, "go"));
    s.wait_shown(&dm(OWNER), "after the wait").await;
    assert!(
        sent_at.elapsed() >= Duration::from_millis(1200),
        "retry_after was not honoured"
    );
    let creates = s.platform.calls_of("create_message");
    let gap = creates[1].at.duration_since(creates[0].at);
    assert!(gap >= Duration::from_millis(1100), "retried after {gap:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_shows_as_down_in_status_and_the_gateway_keeps_running() {
    let s = setup("").await;
    s.platform.revoke_token(true);
    let mut gateway = s.start();
    let status = s.status_shows("down: Discord rejected the bot token").await;
    assert!(status.contains("DISCORD_BOT_TOKEN"), "{status}");
    assert!(status.contains("Gateway: running"), "{status}");
    assert!(
        gateway.child.try_wait().unwrap().is_none(),
        "a bad token must not crash the gateway"
    );
    assert!(
        !s.log().contains(s.platform.token()),
        "the token was logged"
    );
}

/// `n` different runs of filler words: the same words over and over would be a model
/// looping, which the agent stops.
fn filler(n: usize) -> String {
    (0..n)
        .map(|i| format!("words that fill the paragraph, run {i} "))
        .collect()
}

/// serenity gives a new gateway connection 15 s to say HELLO; the adapter's silence
/// limit gives up on it sooner and connects again, and a message waiting meanwhile is
/// answered. A quiet connection that acknowledges heartbeats is not silent: it is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_that_never_says_hello_is_given_up_within_the_silence_limit() {
    let s = setup("silence_secs = 3").await;
    // The first socket the bot opens is accepted and silent: no HELLO, nothing.
    s.platform.stall();
    s.platform.inject(Incoming::dm(OWNER, "anyone there?"));
    let _gateway = s.start_connected().await;
    s.wait_shown(&dm(OWNER), "echo: anyone there?").await;
    assert_eq!(s.platform.stalled(), 1);
    let log = s.log();
    assert!(
        log.contains("no word from the Discord gateway for 3 s"),
        "the silent connection was not given up by the silence limit:\n{log}"
    );
    // Nothing but heartbeat ACKs for longer than the limit (one every 2 s here).
    let identified = s.platform.identifies();
    let beats = s.platform.heartbeats() + 3;
    assert!(
        s.platform
            .wait_for_heartbeats(beats, common::PATIENCE)
            .await
    );
    assert_eq!(
        s.platform.identifies(),
        identified,
        "a connection answering heartbeats was dropped:\n{}",
        s.log()
    );
    assert_eq!(s.log().matches("no word from").count(), 1, "{}", s.log());
}
