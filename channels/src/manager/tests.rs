//! The manager against a recording channel: streaming by edits, plain
//! messages beside it, typing from turn start to turn end, splitting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::channel::{Channel, ChannelError, InboundSender, MessageEditor, TypingCapable};
use crate::message::{OutboundBody, OutboundMessage, Target};
use crate::registry::{ChannelHandle, ChannelInfo, Registry};

#[derive(Default)]
struct Recorder {
    ops: Mutex<Vec<String>>,
    next_id: Mutex<u32>,
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
    async fn send(&self, _target: &Target, text: &str) -> Result<String, ChannelError> {
        Ok(self.log(format!("send {text}")))
    }
}

#[async_trait]
impl TypingCapable for Recorder {
    async fn typing(&self, _target: &Target) -> Result<(), ChannelError> {
        self.log("typing".into());
        Ok(())
    }
}

#[async_trait]
impl MessageEditor for Recorder {
    async fn edit(&self, _target: &Target, id: &str, text: &str) -> Result<(), ChannelError> {
        self.log(format!("edit {id} {text}"));
        Ok(())
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
    let recorder = Arc::new(Recorder::default());
    let info = ChannelInfo {
        split: split_at_10,
        min_interval: Duration::from_millis(10),
        edit_interval: Duration::from_millis(100),
        typing_interval: Duration::from_secs(4),
    };
    let mut handle = ChannelHandle::new(Arc::clone(&recorder) as _, info);
    handle.typing = Some(Arc::clone(&recorder) as _);
    if streaming {
        handle.editor = Some(Arc::clone(&recorder) as _);
    }
    let mut registry = Registry::default();
    registry.insert(handle);
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(super::run(Arc::new(registry), rx));
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
    }
}

#[tokio::test(start_paused = true)]
async fn a_quick_reply_goes_out_whole_without_a_placeholder_or_edits() {
    let (rec, tx, task) = setup(true);
    tx.send(out(OutboundBody::TurnStart)).await.unwrap();
    for piece in ["Hel", "lo"] {
        tx.send(out(OutboundBody::Delta(piece.into())))
            .await
            .unwrap();
    }
    tx.send(out(OutboundBody::Text {
        text: "Hello".into(),
        streamed: true,
    }))
    .await
    .unwrap();
    tx.send(out(OutboundBody::TurnEnd)).await.unwrap();
    drop(tx);
    task.await.unwrap();
    let ops: Vec<String> = rec.ops().into_iter().filter(|o| o != "typing").collect();
    assert_eq!(ops, ["send Hello"]);
}

#[tokio::test(start_paused = true)]
async fn a_slow_reply_is_shown_early_then_edited_and_typing_stops_at_the_end() {
    let (rec, tx, task) = setup(true);
    tx.send(out(OutboundBody::TurnStart)).await.unwrap();
    tx.send(out(OutboundBody::Delta("Hel".into())))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        rec.ops().contains(&"send Hel".to_string()),
        "{:?}",
        rec.ops()
    );
    tx.send(out(OutboundBody::Delta("lo".into())))
        .await
        .unwrap();
    // A command answered mid-stream is its own message, not the streamed one.
    tx.send(out(OutboundBody::Text {
        text: "status".into(),
        streamed: false,
    }))
    .await
    .unwrap();
    tx.send(out(OutboundBody::Text {
        text: "Hello".into(),
        streamed: true,
    }))
    .await
    .unwrap();
    tx.send(out(OutboundBody::TurnEnd)).await.unwrap();
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
    tx.send(out(OutboundBody::Delta("ignored while streaming".into())))
        .await
        .unwrap();
    tx.send(out(OutboundBody::Text {
        text: "0123456789abcdefghij".into(),
        streamed: true,
    }))
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
    tx.send(out(OutboundBody::Delta("partial".into())))
        .await
        .unwrap();
    tx.send(out(OutboundBody::TurnEnd)).await.unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(rec.ops(), ["send partial"]);
    // Stopped after the start was shown: the rest that came is edited in.
    let (rec, tx, task) = setup(true);
    tx.send(out(OutboundBody::Delta("part".into())))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    tx.send(out(OutboundBody::Delta("ial".into())))
        .await
        .unwrap();
    tx.send(out(OutboundBody::TurnEnd)).await.unwrap();
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
