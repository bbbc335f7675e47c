//! The dispatcher and queue modes, driven in-process through `pincer::start` with the
//! real store, agent loop and providers against the fake model: steering, followup,
//! collect, interrupt, and many sessions at once.

use crate::common;

use std::time::{Duration, SystemTime};

use pincer::store::Status;
use pincer_channels::{ChatKind, Inbound, InboundMessage, OutboundBody, OutboundMessage, Sender};
use pincer_fakes::{FakeModel, Step};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use common::{PATIENCE, wait_until};

struct Core {
    _home: common::TestHome,
    running: pincer::Running,
    shutdown: CancellationToken,
}

fn start(fake: &FakeModel, queue_mode: &str) -> Core {
    start_wired(fake, queue_mode, pincer::Wiring::default()).expect("start")
}

fn start_wired(
    fake: &FakeModel,
    queue_mode: &str,
    wiring: pincer::Wiring,
) -> Result<Core, pincer::StartError> {
    let home = common::TestHome::new();
    let text = common::openai_config(fake, &format!("[agent]\nqueue_mode = \"{queue_mode}\"\n"));
    let paths = pincer::Home::resolve(Some(home.path().to_path_buf()), None);
    let config = pincer_config::load_str(&text, &paths.config_file, &paths.security_file, &[])
        .expect("config");
    let secrets = pincer_config::Secrets::default();
    let shutdown = CancellationToken::new();
    let running = pincer::start_wired(&paths, &config, &secrets, &[], wiring, shutdown.clone())?;
    Ok(Core {
        _home: home,
        running,
        shutdown,
    })
}

fn message(chat: &str, n: usize, text: &str) -> Inbound {
    InboundMessage {
        channel: "terminal".into(),
        account: "default".into(),
        chat_id: chat.into(),
        chat_kind: ChatKind::Dm,
        thread_id: None,
        sender: Sender {
            raw_id: chat.into(),
            canonical: format!("terminal:{chat}"),
            display_name: chat.into(),
        },
        message_id: format!("{chat}-{n}"),
        text: text.into(),
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: SystemTime::now(),
        deliver_to: None,
        scheduled: None,
    }
    .into()
}

/// Collect outbound messages until `turns` turns have ended.
async fn until_turns_end(
    outbound: &mut mpsc::Receiver<OutboundMessage>,
    turns: usize,
) -> Vec<OutboundMessage> {
    let mut seen = Vec::new();
    let mut ended = 0;
    while ended < turns {
        let message = tokio::time::timeout(PATIENCE, outbound.recv())
            .await
            .expect("turn did not end in time")
            .expect("bus open");
        if message.body.is_end() {
            ended += 1;
        }
        seen.push(message);
    }
    check_chunk_order(&seen);
    seen
}

/// Every turn's chunks, in the order they came, keep the stream's rules (each delta
/// after its start, each tool output after its input, start first, finish last).
fn check_chunk_order(messages: &[OutboundMessage]) {
    let mut turns: std::collections::HashMap<String, Vec<pincer_channels::Chunk>> =
        std::collections::HashMap::new();
    for message in messages {
        let OutboundBody::Chunk(chunk) = &message.body else {
            continue;
        };
        // Turns of different chats interleave on the bus; each chat's is in order.
        // A turn whose start the test read before is not checked.
        let turn = turns.entry(message.target.chat_id.clone()).or_default();
        turn.push(chunk.clone());
        if matches!(chunk, pincer_channels::Chunk::Finish { .. }) {
            if matches!(turn.first(), Some(pincer_channels::Chunk::Start { .. }))
                && let Err(err) = pincer_channels::chunk::check_order(turn)
            {
                panic!("in chat {}: {err}", message.target.chat_id);
            }
            turn.clear();
        }
    }
}

fn texts(messages: &[OutboundMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.body.complete_text().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_delivers_a_mid_turn_message_and_skips_unstarted_tool_calls() {
    let fake = FakeModel::start().await;
    // The model takes a moment to ask for two tools; the user speaks meanwhile.
    fake.push(
        Step::tool_calls([
            ("list_dir", json!({"path": "."})),
            ("list_dir", json!({"path": "."})),
        ])
        .after_ms(400),
    );
    fake.push(Step::text("Understood, switching to the new request."));
    let mut core = start(&fake, "steer");
    core.running
        .inbound
        .send(message("local", 1, "list my files"))
        .await
        .unwrap();
    fake.wait_for_requests(1, PATIENCE).await;
    core.running
        .inbound
        .send(message("local", 2, "actually, just say hi"))
        .await
        .unwrap();
    let out = until_turns_end(&mut core.running.outbound, 1).await;
    assert_eq!(texts(&out), ["Understood, switching to the new request."]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one turn, two model calls");
    let second = requests[1].body["messages"].to_string();
    assert_eq!(
        second
            .matches("Skipped due to queued user message.")
            .count(),
        2,
        "{second}"
    );
    assert!(second.contains("actually, just say hi"));
    assert_eq!(requests[1].last_user_text(), "actually, just say hi");
    // The steered message ended no turn of its own: the session's next turn is the
    // next message's.
    core.running
        .inbound
        .send(message("local", 3, "and now?"))
        .await
        .unwrap();
    let out = until_turns_end(&mut core.running.outbound, 1).await;
    assert_eq!(texts(&out), ["echo: and now?"]);
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_after_the_first_tool_skips_only_the_rest() {
    let fake = FakeModel::start().await;
    fake.push(Step::tool_calls([
        ("list_dir", json!({"path": "."})),
        ("list_dir", json!({"path": "."})),
    ]));
    fake.push(Step::text("ok"));
    let mut core = start(&fake, "steer");
    // Both arrive before the first model call returns: steering starts at the first checkpoint
    // after it, so both tool calls are skipped and the second message joins the turn.
    core.running
        .inbound
        .send(message("local", 1, "one"))
        .await
        .unwrap();
    core.running
        .inbound
        .send(message("local", 2, "two"))
        .await
        .unwrap();
    let out = until_turns_end(&mut core.running.outbound, 1).await;
    assert_eq!(texts(&out).last().map(String::as_str), Some("ok"));
    let all: String = fake
        .requests()
        .iter()
        .map(|r| r.body["messages"].to_string())
        .collect();
    assert!(all.contains("two"), "the second message reached the model");
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followup_runs_each_queued_message_as_its_own_turn() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("first answer").after_ms(400));
    let mut core = start(&fake, "followup");
    core.running
        .inbound
        .send(message("local", 1, "one"))
        .await
        .unwrap();
    fake.wait_for_requests(1, PATIENCE).await;
    core.running
        .inbound
        .send(message("local", 2, "two"))
        .await
        .unwrap();
    core.running
        .inbound
        .send(message("local", 3, "three"))
        .await
        .unwrap();
    let out = until_turns_end(&mut core.running.outbound, 3).await;
    assert_eq!(texts(&out), ["first answer", "echo: two", "echo: three"]);
    let seen: Vec<String> = fake.requests().iter().map(|r| r.last_user_text()).collect();
    assert_eq!(seen, ["one", "two", "three"]);
    // Each later turn sees the earlier answers in order.
    let third = fake.requests()[2].body["messages"].to_string();
    assert!(third.find("first answer") < third.find("echo: two"));
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collect_merges_queued_messages_into_one_next_turn() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("first answer").after_ms(400));
    let mut core = start(&fake, "collect");
    core.running
        .inbound
        .send(message("local", 1, "one"))
        .await
        .unwrap();
    fake.wait_for_requests(1, PATIENCE).await;
    core.running
        .inbound
        .send(message("local", 2, "two"))
        .await
        .unwrap();
    core.running
        .inbound
        .send(message("local", 3, "three"))
        .await
        .unwrap();
    let out = until_turns_end(&mut core.running.outbound, 2).await;
    let texts = texts(&out);
    assert_eq!(texts[0], "first answer");
    // One turn answers both waiting messages, each with its own time stamp.
    assert!(
        texts[1].starts_with("echo: two\n\n[") && texts[1].ends_with("] three"),
        "{texts:?}"
    );
    assert_eq!(texts.len(), 2);
    assert_eq!(fake.requests().len(), 2);
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_aborts_the_running_turn_and_answers_the_newest() {
    let fake = FakeModel::start().await;
    fake.push(Step::slow_text(
        "a very long answer that takes ages to stream",
        300,
    ));
    let mut core = start(&fake, "interrupt");
    core.running
        .inbound
        .send(message("local", 1, "tell me a long story"))
        .await
        .unwrap();
    // Once the first words are out, the long answer is surely the one streaming.
    let first = loop {
        let next = tokio::time::timeout(PATIENCE, core.running.outbound.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(
            next.body,
            OutboundBody::Chunk(pincer_channels::Chunk::TextDelta { .. })
        ) {
            break next;
        }
    };
    assert!(
        matches!(
            first.body,
            OutboundBody::Chunk(pincer_channels::Chunk::TextDelta { .. })
        ),
        "{first:?}"
    );
    core.running
        .inbound
        .send(message("local", 2, "never mind, what time is it?"))
        .await
        .unwrap();
    let out = until_turns_end(&mut core.running.outbound, 2).await;
    let texts = texts(&out);
    assert_eq!(
        texts.len(),
        1,
        "the first turn ends without a finished reply: {texts:?}"
    );
    // The newest message is what the model answers (the interrupted one stays as context).
    assert!(
        texts[0].ends_with("never mind, what time is it?"),
        "{texts:?}"
    );
    assert_eq!(fake.requests().len(), 2);
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_a_running_turn_and_says_so() {
    let fake = FakeModel::start().await;
    fake.push(Step::slow_text("one two three four five six seven", 300));
    let mut core = start(&fake, "steer");
    core.running
        .inbound
        .send(message("local", 1, "talk slowly"))
        .await
        .unwrap();
    fake.wait_for_requests(1, PATIENCE).await;
    core.running
        .inbound
        .send(message("local", 2, "/stop"))
        .await
        .unwrap();
    let out = until_turns_end(&mut core.running.outbound, 2).await;
    let bodies: Vec<&OutboundBody> = out.iter().map(|m| &m.body).collect();
    assert!(
        bodies.contains(&&OutboundBody::Text("Stopping the current reply.".into())),
        "{bodies:?}"
    );
    assert!(
        bodies.contains(&&OutboundBody::Notice("Stopped.".into())),
        "{bodies:?}"
    );
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_sessions_run_side_by_side_each_strictly_in_order() {
    const SESSIONS: usize = 30; // under the cap on turns at once
    const PER_SESSION: usize = 3;
    let fake = FakeModel::start().await;
    for _ in 0..SESSIONS * PER_SESSION {
        fake.push(Step::text("ok").after_ms(1000));
    }
    let mut core = start(&fake, "followup");
    for n in 1..=PER_SESSION {
        for s in 0..SESSIONS {
            core.running
                .inbound
                .send(message(&format!("s{s}"), n, &format!("s{s} m{n}")))
                .await
                .unwrap();
        }
    }
    let out = until_turns_end(&mut core.running.outbound, SESSIONS * PER_SESSION).await;
    assert_eq!(texts(&out).len(), SESSIONS * PER_SESSION);
    let requests = fake.requests();
    // In order within each session.
    for s in 0..SESSIONS {
        let seen: Vec<String> = requests
            .iter()
            .map(|r| r.last_user_text())
            .filter(|t| t.starts_with(&format!("s{s} ")))
            .collect();
        let want: Vec<String> = (1..=PER_SESSION).map(|n| format!("s{s} m{n}")).collect();
        assert_eq!(seen, want, "session s{s} out of order");
    }
    // Side by side: every session's first request reached the model before any
    // session could have had its first (1 s) answer and asked again. One session at a
    // time, session 0's second message would have come second.
    let firsts: Vec<_> = requests
        .iter()
        .filter(|r| r.last_user_text().ends_with(" m1"))
        .collect();
    let first_second = requests
        .iter()
        .position(|r| r.last_user_text().ends_with(" m2"))
        .unwrap();
    assert_eq!(firsts.len(), SESSIONS);
    assert!(
        first_second >= SESSIONS,
        "a second message ran before all first messages started"
    );
    core.shutdown.cancel();
    core.running.task.await.unwrap();
}

/// Store `text` from the other side of `key` (`channel:dm:chat`) in its current
/// session, unanswered, as the last run left it; its id.
async fn left(store: &pincer::store::Store, key: &str, text: &str) -> i64 {
    let session = store.current_session(&key.parse().unwrap()).await.unwrap();
    let (channel, chat) = key.split_once(":dm:").unwrap();
    let sender = format!("{channel}:{chat}");
    let id = store.insert_user(session, channel, text, &sender, text);
    id.await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_answers_what_the_last_run_left_unanswered_exactly_once() {
    let fake = FakeModel::start().await;
    let mut core = start(&fake, "steer");
    let (store, dispatcher) = (&core.running.agent.store(), &core.running.dispatcher);
    let id = left(store, "terminal:dm:s1", "are you there?").await;
    // The last run had started answering it when it died.
    store.set_status(vec![id], Status::Active).await.unwrap();

    let unanswered = dispatcher.left_unanswered().await;
    // Stored by this run after the look: its own turn answers it, not recovery.
    let now = left(store, "terminal:dm:s2", "new").await;
    let live = dispatcher.live_sessions();
    dispatcher.recover(unanswered, &["terminal"]).await;
    assert_eq!(dispatcher.live_sessions(), live + 1, "s1 only");
    let out = until_turns_end(&mut core.running.outbound, 1).await;
    assert_eq!(texts(&out), ["echo: are you there?"]);
    assert_eq!(
        out[0].target.chat_id, "s1",
        "the reply goes back to the chat it came from"
    );
    store.set_status(vec![now], Status::Done).await.unwrap();
    wait_until("the answered messages settling", async || {
        store.unanswered().await.unwrap().is_empty()
    })
    .await;

    // Sessions of channels that are not running are left for later.
    left(store, "telegram:dm:7", "hello?").await;
    let live = dispatcher.live_sessions();
    let unanswered = dispatcher.left_unanswered().await;
    dispatcher.recover(unanswered, &["terminal"]).await;
    // Recovery queues what it takes before it returns: nothing was.
    assert!(dispatcher.live_sessions() <= live);
    assert_eq!(store.unanswered().await.unwrap().len(), 1);
    assert_eq!(fake.requests().len(), 1);
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_chat_s_unanswered_message_is_answered_after_a_restart() {
    let fake = FakeModel::start().await;
    let mut core = start(&fake, "steer");
    let store = &core.running.agent.store();
    left(store, "web:dm:owner", "still there?").await;
    let unanswered = core.running.dispatcher.left_unanswered().await;
    core.running.dispatcher.recover(unanswered, &["web"]).await;
    let out = until_turns_end(&mut core.running.outbound, 1).await;
    assert_eq!(texts(&out), ["echo: still there?"]);
    let target = &out[0].target;
    assert_eq!(
        (target.channel.as_str(), target.chat_id.as_str()),
        ("web", "owner")
    );
    wait_until("the message settling", async || {
        store.unanswered().await.unwrap().is_empty()
    })
    .await;
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_session_workers_are_reaped() {
    let fake = FakeModel::start().await;
    let home = common::TestHome::new();
    let text = common::openai_config(&fake, "[agent]\nidle_session_secs = 1\n");
    let paths = pincer::Home::resolve(Some(home.path().to_path_buf()), None);
    let config =
        pincer_config::load_str(&text, &paths.config_file, &paths.security_file, &[]).unwrap();
    let mut running = pincer::start(
        &paths,
        &config,
        &pincer_config::Secrets::default(),
        &[],
        CancellationToken::new(),
    )
    .unwrap();
    for s in 0..5 {
        running
            .inbound
            .send(message(&format!("s{s}"), 1, "hi"))
            .await
            .unwrap();
    }
    until_turns_end(&mut running.outbound, 5).await;
    assert_eq!(running.dispatcher.live_sessions(), 5);
    wait_until("the idle workers exiting", async || {
        running.dispatcher.live_sessions() == 0
    })
    .await;
    // A reaped session comes back on its next message, with its history.
    running
        .inbound
        .send(message("s0", 2, "still there?"))
        .await
        .unwrap();
    until_turns_end(&mut running.outbound, 1).await;
    assert!(
        fake.requests().last().unwrap().body["messages"]
            .to_string()
            .contains("echo: hi")
    );
}

fn stranger(id: u32, text: &str) -> Inbound {
    InboundMessage {
        channel: "telegram".into(),
        account: "default".into(),
        chat_id: id.to_string(),
        chat_kind: ChatKind::Dm,
        thread_id: None,
        sender: Sender {
            raw_id: id.to_string(),
            canonical: format!("telegram:{id}"),
            display_name: format!("S{id}"),
        },
        message_id: format!("{id}:{}", text.len()),
        text: text.into(),
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: SystemTime::now(),
        deliver_to: None,
        scheduled: None,
    }
    .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_cannot_jam_pairing_and_a_repeat_sender_keeps_their_code() {
    let fake = FakeModel::start().await;
    let mut core = start(&fake, "steer");
    let max = pincer::access::MAX_PENDING as u32;
    // One more stranger than there is room for: everyone gets a code, the oldest
    // unanswered one makes room.
    for id in 1..=max + 1 {
        core.running
            .inbound
            .send(stranger(id, "hello"))
            .await
            .unwrap();
        let reply = tokio::time::timeout(PATIENCE, core.running.outbound.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            reply
                .body
                .complete_text()
                .is_some_and(|text| text.contains("pairing code")),
            "{reply:?}"
        );
    }
    let pending = core
        .running
        .agent
        .store()
        .pending_codes(Some("telegram"))
        .await
        .unwrap();
    assert_eq!(pending.len() as u32, max);
    assert!(
        !pending.iter().any(|c| c.sender_raw == "1"),
        "the oldest code made room"
    );
    // A repeat sender is not sent their code again right away, nor a new one.
    core.running
        .inbound
        .send(stranger(max + 1, "hello again"))
        .await
        .unwrap();
    // Messages are decided in order, and a code goes out before the next is read: what
    // comes out next is the answer to the command after it.
    core.running
        .inbound
        .send(message("local", 1, "/status"))
        .await
        .unwrap();
    let next = tokio::time::timeout(PATIENCE, core.running.outbound.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.target.chat_id, "local", "{next:?}");
    let again = core
        .running
        .agent
        .store()
        .pending_codes(Some("telegram"))
        .await
        .unwrap();
    assert_eq!(again, pending, "one code per sender");
    assert!(fake.requests().is_empty(), "no stranger reached the model");
    core.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_sessions_runs_at_most_the_cap_at_once_and_all_are_answered() {
    const SESSIONS: usize = pincer::dispatch::MAX_PARALLEL_TURNS + 8;
    let fake = FakeModel::start().await;
    for _ in 0..SESSIONS {
        fake.push(Step::text("ok").after_ms(1500));
    }
    let mut core = start(&fake, "followup");
    for s in 0..SESSIONS {
        core.running
            .inbound
            .send(message(&format!("b{s}"), 1, &format!("b{s} m1")))
            .await
            .unwrap();
    }
    let out = until_turns_end(&mut core.running.outbound, SESSIONS).await;
    assert_eq!(texts(&out).len(), SESSIONS);
    // The model holds every answer 1.5 s, so no turn ends (and frees its place) sooner
    // than that after the first request: a request beyond the cap comes after.
    let mut arrivals: Vec<_> = fake.requests().iter().map(|r| r.at).collect();
    arrivals.sort();
    let over = arrivals[pincer::dispatch::MAX_PARALLEL_TURNS] - arrivals[0];
    assert!(
        over >= Duration::from_millis(1500),
        "turns beyond the cap wait: one started {over:?} after the first"
    );
    core.shutdown.cancel();
    core.running.task.await.unwrap();
}

/// A model that answers in-process, as an embedding program's own provider.
struct StandIn;

#[async_trait::async_trait]
impl pincer::provider::Provider for StandIn {
    async fn stream(
        &self,
        req: &pincer::provider::ChatRequest,
        on_event: &mut (dyn for<'a> FnMut(pincer::provider::StreamEvent<'a>) + Send),
    ) -> Result<pincer::provider::ChatResponse, pincer::provider::ProviderError> {
        let text = format!("stand-in answers {}", req.model);
        on_event(pincer::provider::StreamEvent::Text(&text));
        Ok(pincer::provider::ChatResponse {
            parts: vec![pincer::provider::Part::Text { text }],
            stop: pincer::provider::StopReason::EndTurn,
            usage: pincer::provider::Usage::default(),
        })
    }
}

fn wiring(name: &str) -> pincer::Wiring {
    let mut wiring = pincer::Wiring::default();
    let provider: std::sync::Arc<dyn pincer::provider::Provider> = std::sync::Arc::new(StandIn);
    wiring.providers.insert(name.to_string(), provider);
    wiring
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_handed_in_stands_in_for_the_configured_one_of_its_name() {
    let fake = FakeModel::start().await;
    let mut core = start_wired(&fake, "followup", wiring("fake")).expect("start");
    core.running
        .inbound
        .send(message("w", 1, "hello"))
        .await
        .unwrap();
    let out = until_turns_end(&mut core.running.outbound, 1).await;
    assert_eq!(texts(&out), ["stand-in answers m"]);
    assert!(
        fake.requests().is_empty(),
        "the configured endpoint was not called"
    );
    // A name no `[providers.*]` has is refused: no chain could name it.
    let Err(err) = start_wired(&fake, "followup", wiring("nobody")) else {
        panic!("a stand-in for an unconfigured provider was taken")
    };
    assert!(err.to_string().contains("nobody"), "{err}");
    core.shutdown.cancel();
    core.running.task.await.unwrap();
}

/// On one thread the dispatcher runs only when the test waits: the three messages are
/// on the bus together and taken off it together.
#[tokio::test]
async fn messages_taken_off_the_bus_together_keep_their_order_around_a_command() {
    let fake = FakeModel::start().await;
    let mut core = start(&fake, "followup");
    for (n, text) in ["before the reset", "/new", "after the reset"]
        .into_iter()
        .enumerate()
    {
        core.running
            .inbound
            .send(message("together", n, text))
            .await
            .unwrap();
    }
    // `/new` drops what waits unanswered in the session it closes: two ends, its own
    // reply's and the turn after it.
    let out = until_turns_end(&mut core.running.outbound, 2).await;
    let said = texts(&out);
    assert!(
        said.iter()
            .any(|t| t.contains("Started a new conversation"))
            && said.iter().any(|t| t.contains("echo: after the reset"))
            && !said.iter().any(|t| t.contains("echo: before the reset")),
        "{said:?}"
    );
    let requests = fake.requests();
    let after = requests
        .iter()
        .find(|r| r.last_user_text().contains("after the reset"))
        .expect("the message after /new reached the model");
    assert!(
        !after.body.to_string().contains("before the reset"),
        "the message before /new was stored in the session /new closed"
    );
    core.shutdown.cancel();
    core.running.task.await.unwrap();
}

/// A message that cannot be stored among others taken off the bus with it: it is told
/// to send again, they are answered.
#[tokio::test]
async fn a_message_that_cannot_be_stored_costs_the_others_taken_with_it_nothing() {
    let fake = FakeModel::start().await;
    let mut core = start(&fake, "followup");
    let db = pincer::Home::resolve(Some(core._home.path().to_path_buf()), None).db_file;
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER poison BEFORE INSERT ON parts WHEN NEW.body LIKE '%poison%'
             BEGIN SELECT RAISE(ABORT, 'poisoned'); END",
        )
        .unwrap();
    for (n, chat) in ["first", "poisoned", "last"].into_iter().enumerate() {
        let text = format!(
            "{chat} says {}",
            if chat == "poisoned" { "poison" } else { "hi" }
        );
        core.running
            .inbound
            .send(message(chat, n, &text))
            .await
            .unwrap();
    }
    let out = until_turns_end(&mut core.running.outbound, 3).await;
    let said = texts(&out);
    assert!(
        said.iter().any(|t| t.contains("echo: first says hi"))
            && said.iter().any(|t| t.contains("echo: last says hi")),
        "{said:?}"
    );
    let refused = out
        .iter()
        .find(|m| m.target.chat_id == "poisoned" && matches!(m.body, OutboundBody::Error(_)))
        .expect("the poisoned message is told it was not saved");
    assert!(format!("{:?}", refused.body).contains("could not be saved"));
    core.shutdown.cancel();
    core.running.task.await.unwrap();
}
