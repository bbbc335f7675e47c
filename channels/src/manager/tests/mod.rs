//! The manager against a recording channel: streaming by edits, plain
//! messages beside it, typing from turn start to turn end, splitting, and messages to a
//! person delivered into their direct chat.
//! Pacing has its own file (`pacing`).

mod pacing;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::channel::{
    Channel, ChannelError, DirectOpener, InboundSender, MessageEditor, TypingCapable,
};
use crate::message::{OutboundBody, OutboundMessage, Target};
use crate::registry::{ChannelHandle, ChannelInfo, Rate, Registry};

fn start() -> OutboundBody {
    OutboundBody::Chunk(crate::chunk::Chunk::Start {
        message_id: "m".into(),
    })
}

fn delta(text: String) -> OutboundBody {
    OutboundBody::Chunk(crate::chunk::Chunk::TextDelta {
        id: "t".into(),
        delta: text,
    })
}

fn end_text(text: String) -> OutboundBody {
    OutboundBody::Chunk(crate::chunk::Chunk::TextEnd {
        id: "t".into(),
        text,
    })
}

fn finish() -> OutboundBody {
    OutboundBody::Chunk(crate::chunk::Chunk::Finish {
        reason: crate::chunk::FinishReason::Stop,
        usage: crate::chunk::TurnUsage::default(),
    })
}

#[derive(Default)]
struct Recorder {
    ops: Mutex<Vec<String>>,
    next_id: Mutex<u32>,
    /// The target of every send, edit and typing, in order.
    targets: Mutex<Vec<Target>>,
    /// How many times opening a direct chat with user "flaky" failed so far.
    flaky: Mutex<u32>,
}

impl Recorder {
    fn log(&self, op: String) -> String {
        self.ops.lock().unwrap().push(op);
        let mut id = self.next_id.lock().unwrap();
        *id += 1;
        id.to_string()
    }

    fn ops(&self) -> Vec<String> {
        self.ops.lock().unwrap().clone()
    }

    fn aimed(&self, target: &Target) {
        self.targets.lock().unwrap().push(target.clone());
    }

    fn targets(&self) -> Vec<Target> {
        self.targets.lock().unwrap().clone()
    }
}

#[async_trait]
impl Channel for Recorder {
    fn name(&self) -> &str {
        "rec"
    }
    async fn listen(
        &self,
        _bus: InboundSender,
        _shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send(&self, target: &Target, text: &str) -> Result<String, ChannelError> {
        self.aimed(target);
        Ok(self.log(format!("send {text}")))
    }
}

#[async_trait]
impl TypingCapable for Recorder {
    async fn typing(&self, target: &Target) -> Result<(), ChannelError> {
        self.aimed(target);
        self.log("typing".into());
        Ok(())
    }
}

#[async_trait]
impl MessageEditor for Recorder {
    async fn edit(&self, target: &Target, id: &str, text: &str) -> Result<(), ChannelError> {
        self.aimed(target);
        self.log(format!("edit {id} {text}"));
        Ok(())
    }
}

/// The outbox's side: what became of each message with an entry, among the sends.
#[async_trait]
impl crate::ledger::Ledger for Recorder {
    async fn progress(&self, id: i64, parts: usize) {
        self.ops
            .lock()
            .unwrap()
            .push(format!("progress {id} {parts}"));
    }
    async fn settled(&self, id: i64, delivered: bool) {
        self.ops
            .lock()
            .unwrap()
            .push(format!("settled {id} {delivered}"));
    }
}

/// "nobody" cannot be written to; "flaky" fails once, then opens.
#[async_trait]
impl DirectOpener for Recorder {
    async fn open_direct(&self, user_id: &str) -> Result<String, ChannelError> {
        self.log(format!("open {user_id}"));
        match user_id {
            "nobody" => Err(ChannelError::permanent("unknown user")),
            "flaky" if *self.flaky.lock().unwrap() == 0 => {
                *self.flaky.lock().unwrap() += 1;
                Err(ChannelError::transient("network"))
            }
            id => Ok(format!("dm-{id}")),
        }
    }
}

fn split_at_10(text: &str) -> Vec<String> {
    text.as_bytes()
        .chunks(10)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect()
}

fn setup(
    streaming: bool,
) -> (
    Arc<Recorder>,
    mpsc::Sender<OutboundMessage>,
    tokio::task::JoinHandle<()>,
) {
    setup_with(streaming, false)
}

/// `direct`: the channel opens people's direct chats (as Discord and Slack do).
fn setup_with(
    streaming: bool,
    direct: bool,
) -> (
    Arc<Recorder>,
    mpsc::Sender<OutboundMessage>,
    tokio::task::JoinHandle<()>,
) {
    let recorder = Arc::new(Recorder::default());
    let info = ChannelInfo {
        split: split_at_10,
        chat_rate: |_| Rate {
            burst: 1,
            every: Duration::from_millis(10),
        },
        channel_rate: Rate {
            burst: 1,
            every: Duration::from_millis(35),
        },
        edit_interval: Duration::from_millis(100),
        typing_interval: Duration::from_secs(4),
    };
    let mut handle = ChannelHandle::new(Arc::clone(&recorder) as _, info);
    handle.typing = Some(Arc::clone(&recorder) as _);
    if streaming {
        handle.editor = Some(Arc::clone(&recorder) as _);
    }
    if direct {
        handle.direct = Some(Arc::clone(&recorder) as _);
    }
    let mut registry = Registry::default();
    registry.insert(handle);
    let (tx, rx) = mpsc::channel(16);
    let ledger = Arc::clone(&recorder) as Arc<dyn crate::ledger::Ledger>;
    let task = tokio::spawn(super::run(Arc::new(registry), rx, Some(ledger)));
    (recorder, tx, task)
}

fn out(body: OutboundBody) -> OutboundMessage {
    OutboundMessage {
        target: Target {
            channel: "rec".into(),
            chat_id: "1".into(),
            thread_id: None,
            user: false,
        },
        body,
        reply_to: None,
        entry: None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_quick_reply_goes_out_whole_without_a_placeholder_or_edits() {
    let (rec, tx, task) = setup(true);
    tx.send(out(start())).await.unwrap();
    for piece in ["Hel", "lo"] {
        tx.send(out(delta(piece.into()))).await.unwrap();
    }
    tx.send(out(end_text("Hello".into()))).await.unwrap();
    tx.send(out(finish())).await.unwrap();
    drop(tx);
    task.await.unwrap();
    let ops: Vec<String> = rec.ops().into_iter().filter(|o| o != "typing").collect();
    assert_eq!(ops, ["send Hello"]);
}

#[tokio::test(start_paused = true)]
async fn a_slow_reply_is_shown_early_then_edited_and_typing_stops_at_the_end() {
    let (rec, tx, task) = setup(true);
    tx.send(out(start())).await.unwrap();
    tx.send(out(delta("Hel".into()))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        rec.ops().contains(&"send Hel".to_string()),
        "{:?}",
        rec.ops()
    );
    tx.send(out(delta("lo".into()))).await.unwrap();
    // A command answered mid-stream is its own message, not the streamed one.
    tx.send(out(OutboundBody::Text("status".into())))
        .await
        .unwrap();
    tx.send(out(end_text("Hello".into()))).await.unwrap();
    tx.send(out(finish())).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let typing_at_end = rec.ops().iter().filter(|o| *o == "typing").count();
    tokio::time::sleep(Duration::from_secs(20)).await;
    let ops = rec.ops();
    assert!(ops.contains(&"send status".to_string()), "{ops:?}");
    // Ids are handed out in order, one per recorded operation.
    let first_id = ops
        .iter()
        .position(|o| o == "send Hel")
        .map(|n| (n + 1).to_string())
        .unwrap();
    assert!(
        ops.iter().any(|o| o == &format!("edit {first_id} Hello")),
        "{ops:?}"
    );
    assert!(
        !ops.iter().any(|o| o == "send Hello"),
        "the reply must not be sent twice: {ops:?}"
    );
    assert_eq!(
        ops.iter().filter(|o| *o == "typing").count(),
        typing_at_end,
        "typing stops at turn end"
    );
    drop(tx);
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn without_editing_the_finished_reply_is_split_and_sent_in_order() {
    let (rec, tx, task) = setup(false);
    tx.send(out(delta("ignored while streaming".into())))
        .await
        .unwrap();
    tx.send(out(end_text("0123456789abcdefghij".into())))
        .await
        .unwrap();
    tx.send(out(OutboundBody::Error("x".into()))).await.unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(
        rec.ops(),
        ["send 0123456789", "send abcdefghij", "send ⚠️ x"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_turn_stopped_mid_stream_leaves_what_was_streamed() {
    // Stopped before anything was shown: what came is sent.
    let (rec, tx, task) = setup(true);
    tx.send(out(delta("partial".into()))).await.unwrap();
    tx.send(out(finish())).await.unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(rec.ops(), ["send partial"]);
    // Stopped after the start was shown: the rest that came is edited in.
    let (rec, tx, task) = setup(true);
    tx.send(out(delta("part".into()))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    tx.send(out(delta("ial".into()))).await.unwrap();
    tx.send(out(finish())).await.unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(rec.ops(), ["send part", "edit 1 partial"]);
}

#[tokio::test(start_paused = true)]
async fn a_quiet_chat_frees_its_worker_within_a_minute_and_a_new_message_starts_one() {
    let (rec, tx, task) = setup(false);
    let idle = Arc::strong_count(&rec);
    tx.send(out(OutboundBody::Notice("one".into())))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(Arc::strong_count(&rec) > idle, "a worker serves the chat");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        Arc::strong_count(&rec),
        idle,
        "the quiet chat's worker left"
    );
    tx.send(out(OutboundBody::Notice("two".into())))
        .await
        .unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(rec.ops(), ["send one", "send two"]);
}

fn to_person(user: &str, body: OutboundBody) -> OutboundMessage {
    OutboundMessage {
        target: Target::user(&format!("rec:{user}")).unwrap(),
        body,
        reply_to: None,
        entry: None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_persons_messages_go_to_their_direct_chat_opened_once() {
    let (rec, tx, task) = setup_with(true, true);
    tx.send(to_person("7", start())).await.unwrap();
    tx.send(to_person("7", delta("Hel".into()))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    for body in [
        delta("lo".into()),
        end_text("Hello".into()),
        finish(),
        OutboundBody::Notice("later".into()),
    ] {
        tx.send(to_person("7", body)).await.unwrap();
    }
    drop(tx);
    task.await.unwrap();
    let ops = rec.ops();
    assert_eq!(ops[0], "open 7", "{ops:?}");
    assert_eq!(ops.iter().filter(|o| o.starts_with("open")).count(), 1);
    // Ids are handed out in order, one per recorded operation.
    let streamed = ops.iter().position(|o| o == "send Hel").unwrap() + 1;
    for op in [
        format!("edit {streamed} Hello"),
        "send later".into(),
        "typing".into(),
    ] {
        assert!(ops.contains(&op), "{op} missing: {ops:?}");
    }
    let dm = Target::chat("rec", "dm-7", None);
    assert!(
        rec.targets().iter().all(|t| *t == dm),
        "{:?}",
        rec.targets()
    );
}

#[tokio::test(start_paused = true)]
async fn a_direct_chat_that_fails_to_open_is_retried_like_a_send() {
    let (rec, tx, task) = setup_with(false, true);
    tx.send(to_person("flaky", OutboundBody::Notice("hi".into())))
        .await
        .unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(rec.ops(), ["open flaky", "open flaky", "send hi"]);
    assert_eq!(rec.targets(), [Target::chat("rec", "dm-flaky", None)]);
}

#[tokio::test(start_paused = true)]
async fn a_direct_chat_that_cannot_be_opened_drops_messages_and_is_asked_again_later() {
    let (rec, tx, task) = setup_with(false, true);
    for text in ["one", "two"] {
        tx.send(to_person("nobody", OutboundBody::Notice(text.into())))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(rec.ops(), ["open nobody"], "not asked again at once");
    tokio::time::sleep(Duration::from_secs(31)).await;
    tx.send(to_person("nobody", OutboundBody::Notice("three".into())))
        .await
        .unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(rec.ops(), ["open nobody", "open nobody"]);
    assert!(rec.targets().is_empty(), "nothing was sent anywhere");
}

#[tokio::test(start_paused = true)]
async fn without_an_opener_a_persons_id_is_their_chat() {
    // Telegram: a user's id is their private chat's id.
    let (rec, tx, task) = setup(false);
    tx.send(to_person("7", OutboundBody::Notice("hi".into())))
        .await
        .unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(rec.ops(), ["send hi"]);
    assert_eq!(rec.targets(), [Target::chat("rec", "7", None)]);
}

fn entered(id: i64, parts_sent: usize, body: OutboundBody) -> OutboundMessage {
    OutboundMessage {
        entry: Some(crate::message::Entry { id, parts_sent }),
        ..out(body)
    }
}

#[tokio::test(start_paused = true)]
async fn a_long_text_with_an_entry_records_each_part_before_the_next_goes() {
    let (rec, tx, task) = setup(false);
    tx.send(entered(
        7,
        0,
        OutboundBody::Text("aaaaaaaaaabbbbbbbbbbcc".into()),
    ))
    .await
    .unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(
        rec.ops(),
        [
            "send aaaaaaaaaa",
            "progress 7 1",
            "send bbbbbbbbbb",
            "progress 7 2",
            "send cc",
            "settled 7 true"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_entry_sent_again_after_a_restart_skips_the_parts_the_platform_has() {
    let (rec, tx, task) = setup(true);
    tx.send(entered(
        9,
        2,
        OutboundBody::Text("aaaaaaaaaabbbbbbbbbbcc".into()),
    ))
    .await
    .unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(rec.ops(), ["send cc", "settled 9 true"]);
}

#[tokio::test(start_paused = true)]
async fn a_message_to_a_person_who_cannot_be_reached_is_settled_undelivered() {
    let (rec, tx, task) = setup_with(false, true);
    let mut message = entered(3, 0, OutboundBody::Text("hi".into()));
    message.target = Target::user("rec:nobody").unwrap();
    tx.send(message).await.unwrap();
    drop(tx);
    task.await.unwrap();
    assert!(
        rec.ops().contains(&"settled 3 false".to_string()),
        "{:?}",
        rec.ops()
    );
}
