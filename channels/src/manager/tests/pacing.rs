//! Pacing through the manager, on tokio's paused clock: a chat answering about once a
//! second is never held, a burst in one chat is spread at the sustained rate, the channel's
//! bucket spreads many chats together, a 429's `retry_after` is still waited out, and a
//! streamed reply's final text never waits behind its own progress edits.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{delta, end_text, finish, start};
use crate::channel::{Channel, ChannelError, InboundSender, MessageEditor};
use crate::message::{OutboundBody, OutboundMessage, Target};
use crate::registry::{ChannelHandle, ChannelInfo, Rate, Registry};

/// A chat: three at once, then one a second (as Telegram's private chats).
const CHAT: Rate = Rate {
    burst: 3,
    every: Duration::from_secs(1),
};
/// The whole channel: four at once, then one each 100 ms.
const CHANNEL: Rate = Rate {
    burst: 4,
    every: Duration::from_millis(100),
};

/// Records each send and edit with when it reached the platform.
struct Timed {
    began: Instant,
    /// (ms since the test began, what was done), in order.
    ops: Mutex<Vec<(u128, String)>>,
    /// The next send is refused with a 429 asking for this wait.
    refuse_next: Mutex<Option<Duration>>,
}

impl Timed {
    fn record(&self, op: String) -> String {
        let mut ops = self.ops.lock().unwrap();
        ops.push((self.began.elapsed().as_millis(), op));
        ops.len().to_string()
    }

    fn ops(&self) -> Vec<(u128, String)> {
        self.ops.lock().unwrap().clone()
    }
}

#[async_trait]
impl Channel for Timed {
    fn name(&self) -> &str {
        "timed"
    }
    async fn listen(
        &self,
        _bus: InboundSender,
        _shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send(&self, _target: &Target, text: &str) -> Result<String, ChannelError> {
        if let Some(wait) = self.refuse_next.lock().unwrap().take() {
            self.record("429".into());
            return Err(ChannelError::rate_limited("Too Many Requests", wait));
        }
        Ok(self.record(format!("send {text}")))
    }
}

#[async_trait]
impl MessageEditor for Timed {
    async fn edit(&self, _target: &Target, _id: &str, text: &str) -> Result<(), ChannelError> {
        self.record(format!("edit {text}"));
        Ok(())
    }
}

fn setup() -> (
    Arc<Timed>,
    mpsc::Sender<OutboundMessage>,
    tokio::task::JoinHandle<()>,
) {
    let timed = Arc::new(Timed {
        began: Instant::now(),
        ops: Mutex::default(),
        refuse_next: Mutex::default(),
    });
    let info = ChannelInfo {
        split: |text| vec![text.to_string()],
        chat_rate: |_| CHAT,
        channel_rate: CHANNEL,
        edit_interval: Duration::from_millis(100),
        typing_interval: Duration::from_secs(4),
    };
    let mut handle = ChannelHandle::new(Arc::clone(&timed) as _, info);
    handle.editor = Some(Arc::clone(&timed) as _);
    let mut registry = Registry::default();
    registry.insert(handle);
    let (tx, rx) = mpsc::channel(64);
    let task = tokio::spawn(super::super::run(Arc::new(registry), rx, None));
    (timed, tx, task)
}

fn to(chat: &str, body: OutboundBody) -> OutboundMessage {
    OutboundMessage {
        target: Target::chat("timed", chat, None),
        body,
        reply_to: None,
        entry: None,
    }
}

fn text(text: &str) -> OutboundBody {
    OutboundBody::Text(text.into())
}

fn times(ops: &[(u128, String)]) -> Vec<u128> {
    ops.iter().map(|(at, _)| *at).collect()
}

#[tokio::test(start_paused = true)]
async fn a_chat_answering_about_once_a_second_is_never_held() {
    let (timed, tx, task) = setup();
    let mut expected = Vec::new();
    for i in 0..20 {
        // A turn's quick reply, as the core sends it.
        let reply = format!("reply {i}");
        expected.push((timed.began.elapsed().as_millis(), format!("send {reply}")));
        for body in [
            start(),
            delta(reply.clone()),
            end_text(reply.clone()),
            finish(),
        ] {
            tx.send(to("1", body)).await.unwrap();
        }
        // The person answers after 0.7 s, then 1.3 s, and so on: once a second on average.
        let pause = if i % 2 == 0 { 700 } else { 1300 };
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
    drop(tx);
    task.await.unwrap();
    assert_eq!(
        timed.ops(),
        expected,
        "every reply goes out the moment it is done"
    );
}

#[tokio::test(start_paused = true)]
async fn a_burst_in_one_chat_goes_at_once_up_to_its_size_then_at_the_sustained_rate() {
    let (timed, tx, task) = setup();
    for i in 0..6 {
        tx.send(to("1", text(&format!("m{i}")))).await.unwrap();
    }
    drop(tx);
    task.await.unwrap();
    let ops = timed.ops();
    assert_eq!(times(&ops), [0, 0, 0, 1000, 2000, 3000], "{ops:?}");
    let order: Vec<String> = ops.into_iter().map(|(_, op)| op).collect();
    assert_eq!(
        order,
        (0..6).map(|i| format!("send m{i}")).collect::<Vec<_>>()
    );
}

#[tokio::test(start_paused = true)]
async fn the_channel_bucket_spreads_many_chats_together() {
    let (timed, tx, task) = setup();
    for chat in 0..8 {
        tx.send(to(&chat.to_string(), text("hi"))).await.unwrap();
    }
    drop(tx);
    task.await.unwrap();
    let mut at = times(&timed.ops());
    at.sort_unstable();
    // Each chat's own bucket is full; the channel's lets four go, then one each 100 ms.
    assert_eq!(at, [0, 0, 0, 0, 100, 200, 300, 400]);
}

#[tokio::test(start_paused = true)]
async fn a_429_is_still_waited_out_for_its_retry_after() {
    let (timed, tx, task) = setup();
    *timed.refuse_next.lock().unwrap() = Some(Duration::from_secs(7));
    tx.send(to("1", text("one"))).await.unwrap();
    tx.send(to("1", text("two"))).await.unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(
        timed.ops(),
        [
            (0, "429".to_string()),
            (7000, "send one".to_string()),
            (7000, "send two".to_string())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_streamed_replys_final_text_never_waits_behind_its_edits() {
    let (timed, tx, task) = setup();
    tx.send(to("1", start())).await.unwrap();
    tx.send(to("1", delta("a".into()))).await.unwrap();
    // Shown after half a second; then more arrives every 50 ms for three seconds, far
    // faster than the chat's bucket allows edits.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mut reply = "a".to_string();
    for _ in 0..60 {
        reply.push('b');
        tx.send(to("1", delta("b".into()))).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let done = timed.began.elapsed().as_millis();
    tx.send(to("1", end_text(reply.clone()))).await.unwrap();
    tx.send(to("1", finish())).await.unwrap();
    drop(tx);
    task.await.unwrap();
    let ops = timed.ops();
    assert_eq!(ops.first(), Some(&(500, "send a".to_string())), "{ops:?}");
    assert_eq!(
        ops.last(),
        Some(&(done, format!("edit {reply}"))),
        "the final text goes the moment it is done: {ops:?}"
    );
    let progress = ops.len() - 2;
    assert!(
        (1..=4).contains(&progress),
        "progress edits were skipped while the bucket was low, not queued: {ops:?}"
    );
}
