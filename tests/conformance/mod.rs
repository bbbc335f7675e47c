//! The channel conformance suite: the same guarantees, proved the same way, for every
//! chat channel. Each `tests/conformance_<channel>.rs` invokes `conformance!` with its
//! fake platform's start expression; every test runs the real `pincer run` binary
//! against that fake and the fake model, through `pincer_fakes::platform::FakePlatform`
//! — except deliveries the core starts by itself (to a person, by their user id), which
//! drive the real adapter and the real channel manager in this process (`adapter`).
#![allow(dead_code)] // each channel file uses the whole suite, but through a macro

pub(crate) mod adapter;

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use pincer_channels::{OutboundBody, OutboundMessage, Registry, Target, manager};
use pincer_fakes::Step;
use pincer_fakes::platform::FakePlatform;
use serde_json::json;
use tokio::sync::mpsc;

use crate::common::Gateway;
use crate::common::platform::{self, Setup, owners};
pub(crate) use adapter::InProcess;

/// In `agent.owners`.
pub(crate) const OWNER: u64 = 42;
/// Nobody the bot knows.
pub(crate) const STRANGER: u64 = 7;

/// A running gateway with its fakes (the shared `Setup`); the gateway is killed when
/// dropped.
pub(crate) struct Harness<P> {
    _gateway: Gateway,
    setup: Setup<P>,
}

impl<P> Deref for Harness<P> {
    type Target = Setup<P>;

    fn deref(&self) -> &Setup<P> {
        &self.setup
    }
}

impl<P: FakePlatform> Harness<P> {
    /// `pincer run` with the channel enabled (plus `channel` lines in its table) and
    /// `extra` TOML at the end; returns once the adapter is connected.
    pub(crate) async fn start(platform: P, channel: &str, extra: &str) -> Self {
        let owner = owners(&platform, &[OWNER]);
        let setup = platform::setup(platform, &format!("{channel}\n{extra}"), &owner).await;
        Harness {
            _gateway: setup.start_connected().await,
            setup,
        }
    }
}

pub(crate) async fn dm_round_trip<P: FakePlatform>(platform: P) {
    let h = Harness::start(platform, "", "").await;
    let chat = h.platform.dm(OWNER, "hello there").await;
    h.wait_shown(&chat, "echo: hello there").await;
    assert_eq!(h.model.requests()[0].last_user_text(), "hello there");
}

pub(crate) async fn a_stranger_gets_a_pairing_code_and_never_the_model<P: FakePlatform>(
    platform: P,
) {
    let h = Harness::start(platform, "", "").await;
    let chat = h.platform.dm(STRANGER, "let me in").await;
    let reply = h.wait_shown(&chat, "pairing code").await;
    assert!(
        h.model.requests().is_empty(),
        "a stranger reached the model"
    );
    let code = crate::common::pairing_code(&reply.text);
    let approve = h
        .home
        .run(&["pairing", "approve", h.platform.name(), &code]);
    assert!(approve.ok(), "{approve:?}");
    h.platform.dm(STRANGER, "now?").await;
    h.wait_shown(&chat, "echo: now?").await;
}

pub(crate) async fn a_long_reply_is_split_at_the_limit_in_order<P: FakePlatform>(platform: P) {
    let h = Harness::start(platform, "", "").await;
    let limit = h.platform.limit();
    let mut long = String::new();
    let mut n = 0;
    while long.chars().count() < limit * 5 / 2 {
        long.push_str(&format!(
            "Part {n}: {}\n\n",
            "words to fill a paragraph ".repeat(8)
        ));
        n += 1;
    }
    h.model.push(Step::text(long));
    let chat = h.platform.dm(OWNER, "say a lot").await;
    h.wait_shown(&chat, &format!("Part {}:", n - 1)).await;
    // The reply is all out (edits too) once the next message's is.
    h.round_trip(OWNER, "done?").await;
    let mut shown = h.shown_in(&chat);
    shown.pop(); // the echo
    assert!(shown.len() >= 3, "{} messages", shown.len());
    for message in &shown {
        assert!(
            message.text.chars().count() <= limit,
            "a message of {} characters",
            message.text.chars().count()
        );
    }
    let all: String = shown.iter().map(|m| m.text.as_str()).collect();
    let positions: Vec<usize> = (0..n)
        .map(|i| all.find(&format!("Part {i}:")).expect("every part shown"))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "out of order");
}

pub(crate) async fn a_group_answers_only_when_mentioned<P: FakePlatform>(platform: P) {
    let h = Harness::start(platform, "groups = [\"*\"]\n", "").await;
    let chat = h
        .platform
        .group(1, OWNER, "talking among ourselves", false)
        .await;
    h.platform.group(1, STRANGER, "bot, what's up?", true).await;
    // The group's turns run one at a time: the message before was dealt with first.
    h.wait_shown(&chat, "what's up?").await;
    let requests = h.model.requests();
    assert_eq!(
        requests.len(),
        1,
        "an unmentioned message reached the model"
    );
    assert!(requests[0].last_user_text().contains("what's up?"));
    assert_eq!(h.shown_in(&chat).len(), 1, "{:#?}", h.shown_in(&chat));
}

pub(crate) async fn a_reply_streams_by_edits_with_typing_shown<P: FakePlatform>(platform: P) {
    let h = Harness::start(platform, "", "").await;
    h.model.push(Step::slow_text(
        "one two three four five six seven eight nine ten eleven twelve",
        250,
    ));
    let chat = h.platform.dm(OWNER, "count slowly").await;
    let reply = h.wait_shown(&chat, "twelve").await;
    assert!(reply.edits >= 1, "the reply was not streamed: {reply:?}");
    if let Some(typing) = h.platform.typing(&chat) {
        assert!(typing >= 1, "no typing shown");
    }
}

pub(crate) async fn a_thread_reply_stays_in_its_thread<P: FakePlatform>(platform: P) {
    let h = Harness::start(platform, "groups = [\"*\"]\n", "").await;
    let Some((chat, thread)) = h.platform.thread(1, OWNER, "in the thread").await else {
        return; // the platform has no threads
    };
    let reply = h.wait_shown(&chat, "in the thread").await;
    assert_eq!(reply.thread.as_deref(), Some(thread.as_str()), "{reply:?}");
}

pub(crate) async fn a_reconnect_loses_nothing_and_answers_once<P: FakePlatform>(platform: P) {
    let h = Harness::start(platform, "", "").await;
    let chat = h.round_trip(OWNER, "before").await;
    h.platform.disconnect(Duration::from_secs(3)).await;
    h.round_trip(OWNER, "during").await;
    h.round_trip(OWNER, "after").await;
    // A message delivered twice would be answered twice before this one is.
    h.round_trip(OWNER, "last").await;
    let texts = h.texts_in(&chat);
    for word in ["before", "during", "after"] {
        let n = texts
            .iter()
            .filter(|t| t.contains(&format!("echo: {word}")))
            .count();
        assert_eq!(n, 1, "`{word}` answered {n} times: {texts:?}");
    }
    assert_eq!(h.model.requests().len(), 4, "{texts:?}");
}

/// The silence limit the stall test gives every channel (`silence_secs`).
const SILENCE_SECS: u64 = 3;

/// A connection that goes silent (accepted, answering nothing) is noticed within the
/// channel's silence limit and replaced: what was said while it was silent is answered
/// once, and so is what comes after; `pincer status` shows when the channel last heard
/// from its platform.
pub(crate) async fn a_stalled_connection_is_noticed_and_restored<P: FakePlatform>(platform: P) {
    let h = Harness::start(platform, &format!("silence_secs = {SILENCE_SECS}"), "").await;
    let chat = h.round_trip(OWNER, "before").await;
    h.platform.stall();
    let stalled = std::time::Instant::now();
    h.platform.dm(OWNER, "during").await;
    h.wait_shown(&chat, "echo: during").await;
    // Noticed within the limit: the platform's own timeouts would take far longer
    // (Telegram's HTTP client gives up after 17 s, Slack's default limit is 60 s).
    // The bound leaves room for the reconnect's backoff, the turn and a busy machine.
    let took = stalled.elapsed();
    assert!(
        took < Duration::from_secs(5 * SILENCE_SECS),
        "the silent connection was replaced only after {took:?}; gateway log:\n{}",
        h.log()
    );
    assert_eq!(h.platform.stalled(), 1, "the stall never took effect");
    h.round_trip(OWNER, "after").await;
    // A message delivered twice would be answered twice before this one is.
    h.round_trip(OWNER, "last").await;
    let texts = h.texts_in(&chat);
    for word in ["before", "during", "after"] {
        let n = texts
            .iter()
            .filter(|t| t.contains(&format!("echo: {word}")))
            .count();
        assert_eq!(n, 1, "`{word}` answered {n} times: {texts:?}");
    }
    let status = h.status_shows("up").await;
    let line = status
        .lines()
        .find(|l| l.trim_start().starts_with(h.platform.name()))
        .unwrap_or_default();
    assert!(line.contains("last event"), "{status}");
}

pub(crate) async fn an_approval_button_reaches_the_waiting_call<P: FakePlatform>(platform: P) {
    let h = Harness::start(
        platform,
        "",
        "[tools.permissions]\nask = [\"write_file\"]\napproval_timeout_secs = 20\n",
    )
    .await;
    h.model.push_all([
        Step::tool_call("write_file", json!({"path": "ok.md", "content": "yes"})),
        Step::text("Saved it."),
    ]);
    let chat = h.platform.dm(OWNER, "save it").await;
    let asked = h.wait_shown(&chat, "Allow write_file `ok.md`?").await;
    // Its buttons (on Matrix, the bot's own reactions, sent just after it).
    let question = crate::common::wait_for(
        async || {
            h.shown_in(&chat)
                .into_iter()
                .find(|m| m.id == asked.id && m.buttons)
        },
        || format!("the question has no buttons: {:#?}", h.shown_in(&chat)),
    )
    .await;
    // `press` returns once the bot has answered the press: it was decided on.
    assert!(
        h.platform.press(&chat, STRANGER, "once").await,
        "no button to press"
    );
    assert!(
        !h.home.workspace().join("ok.md").exists(),
        "a stranger's press counted"
    );
    assert!(
        h.platform.press(&chat, OWNER, "once").await,
        "buttons gone too early"
    );
    h.wait_shown(&chat, "Saved it.").await;
    assert!(h.home.workspace().join("ok.md").exists());
    let settled = h.wait_shown(&chat, "Allowed once").await;
    assert_eq!(settled.id, question.id);
    assert!(!settled.buttons, "buttons left on an answered question");
}

/// A message to a person (`Target::user`, as the core sends the owner a job's result,
/// the heartbeat or a pairing notice) reaches their direct chat with the bot, opened on
/// demand where the platform needs it (a Discord DM channel, a Slack IM; on Telegram
/// their id is the chat) — through the real adapter and the real channel manager.
pub(crate) async fn a_message_to_a_user_id_reaches_their_dm<P: InProcess>(platform: P) {
    let inbox = tempfile::tempdir().expect("an inbox directory");
    let mut registry = Registry::default();
    registry.insert(platform.handle(inbox.path()));
    let (outbound, queue) = mpsc::channel(8);
    let delivering = tokio::spawn(manager::run(Arc::new(registry), queue, None));
    let owner = platform.canonical(OWNER);
    let person = Target::user(&owner).expect("a canonical id names a person");
    for text in ["A note for you.", "And another."] {
        let message = OutboundMessage {
            target: person.clone(),
            body: OutboundBody::Notice(text.into()),
            reply_to: None,
            entry: None,
        };
        outbound
            .send(message)
            .await
            .expect("the manager is running");
    }
    // The manager returns once what was queued is delivered (or given up on).
    drop(outbound);
    delivering.await.expect("the manager finished");
    let chat = platform
        .direct_chat(OWNER)
        .unwrap_or_else(|| panic!("the bot never opened a direct chat with {owner}"));
    let texts: Vec<String> = platform
        .shown()
        .into_iter()
        .filter(|m| m.chat == chat)
        .map(|m| m.text)
        .collect();
    assert_eq!(
        texts,
        ["A note for you.", "And another."],
        "in {chat}; everything shown: {:#?}",
        platform.shown()
    );
}

/// Every conformance test for one channel: `conformance!(FakeTelegram::start());`
#[macro_export]
macro_rules! conformance {
    ($start:expr) => {
        $crate::conformance_tests!(
            $start;
            dm_round_trip,
            a_stranger_gets_a_pairing_code_and_never_the_model,
            a_long_reply_is_split_at_the_limit_in_order,
            a_group_answers_only_when_mentioned,
            a_reply_streams_by_edits_with_typing_shown,
            a_thread_reply_stays_in_its_thread,
            a_reconnect_loses_nothing_and_answers_once,
            a_stalled_connection_is_noticed_and_restored,
            an_approval_button_reaches_the_waiting_call,
            a_message_to_a_user_id_reaches_their_dm
        );
    };
}

#[macro_export]
macro_rules! conformance_tests {
    ($start:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                conformance::$name($start.await).await;
            }
        )*
    };
}
