//! `FakeModel`: the handle a test or a benchmark holds. Starting it binds a port and
//! spawns the server; dropping it stops the server and ends stalled streams.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::recorded::{Recorded, Transcription};
use crate::server;
use crate::state::Shared;
use crate::step::Step;
use crate::transcription::{Failure, Transcript};

/// A fake model server speaking both the OpenAI and the Anthropic wire format.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Set to `true` on drop: the server shuts down and stalled streams are cut.
    shutdown: watch::Sender<bool>,
}

impl FakeModel {
    /// Binds `127.0.0.1:0` and starts serving. Panics if no port can be bound (a test
    /// cannot go on without its fake).
    pub async fn start() -> FakeModel {
        let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
        FakeModel::bind(any_port)
            .await
            .expect("the fake model should bind 127.0.0.1:0")
    }

    /// Binds `addr` and starts serving on the current tokio runtime.
    pub async fn bind(addr: SocketAddr) -> io::Result<FakeModel> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (shutdown, mut stopped) = watch::channel(false);
        let shared = Arc::new(Shared::new(shutdown.subscribe()));
        let app = server::app(Arc::clone(&shared));
        tokio::spawn(async move {
            let stop = async move {
                // An error means the handle is gone, which is also a reason to stop.
                let _ = stopped.wait_for(|down| *down).await;
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
            {
                eprintln!("pincer-fakes: the fake model server stopped: {e}");
            }
        });
        Ok(FakeModel {
            addr,
            shared,
            shutdown,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The OpenAI base URL (`url` + `/v1`): requests go to `{base}/chat/completions`.
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The Anthropic base URL (`url`): requests go to `{base}/v1/messages`.
    pub fn anthropic_base(&self) -> String {
        self.url()
    }

    /// Queues one scripted answer (FIFO, one per chat request, either format).
    pub fn push(&self, step: Step) {
        self.shared.push([step]);
    }

    /// Queues several scripted answers in order.
    pub fn push_all(&self, steps: impl IntoIterator<Item = Step>) {
        self.shared.push(steps);
    }

    /// From now on, OpenAI requests need `Authorization: Bearer KEY` and Anthropic
    /// requests `x-api-key: KEY`, or get the provider's 401.
    pub fn require_key(&self, key: &str) {
        self.shared.require_key(Some(key.to_string()));
    }

    /// Every chat request received so far, oldest first.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests()
    }

    /// Waits until at least `n` requests are recorded or `timeout` passes, then returns
    /// all recorded requests (fewer than `n` on timeout).
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Recorded> {
        let mut count = self.shared.recorded_count();
        // Timing out is an answer too: the caller sees how many arrived.
        let _ = tokio::time::timeout(timeout, count.wait_for(|c| *c >= n)).await;
        self.requests()
    }

    /// Whether requests are recorded whole (the default). Off, each is recorded with a
    /// null body and no headers: counts and arrival times stay, memory does not grow by
    /// a whole request per turn (benchmarks).
    pub fn keep_bodies(&self, keep: bool) {
        self.shared.keep_bodies(keep);
    }

    /// What every later transcription (`POST /v1/audio/transcriptions`) answers: this
    /// text, and in `verbose_json` this `duration`. Until set: "remind me to water the
    /// plants", 42.0 s.
    pub fn set_transcript(&self, text: &str, duration_secs: f64) {
        self.shared.set_transcript(Transcript {
            text: text.to_string(),
            duration_secs,
        });
    }

    /// The next transcription that passes the checks fails with `status` and OpenAI's
    /// error body for it (`Retry-After: secs` when `retry_after` is set). Call again to
    /// queue more, FIFO; chat requests are not affected.
    pub fn fail_next_transcription(&self, status: u16, retry_after: Option<u64>) {
        self.shared.fail_next_transcription(Failure {
            status,
            retry_after,
        });
    }

    /// Every transcription request received so far, oldest first (refused ones too).
    pub fn transcriptions(&self) -> Vec<Transcription> {
        self.shared.transcriptions()
    }

    /// Waits until at least `n` transcription requests are recorded or `timeout` passes,
    /// then returns them all (fewer than `n` on timeout).
    pub async fn wait_for_transcriptions(&self, n: usize, timeout: Duration) -> Vec<Transcription> {
        let mut count = self.shared.transcribed_count();
        // Timing out is an answer too: the caller sees how many arrived.
        let _ = tokio::time::timeout(timeout, count.wait_for(|c| *c >= n)).await;
        self.transcriptions()
    }

    /// Every request to `POST /v1/audio/speech` so far, oldest first (refused ones too).
    pub fn speeches(&self) -> Vec<crate::SpeechRequest> {
        self.shared.speeches().all()
    }

    /// Waits until at least `n` speech requests are recorded or `timeout` passes, then
    /// returns them all (fewer than `n` on timeout).
    pub async fn wait_for_speeches(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Vec<crate::SpeechRequest> {
        let mut count = self.shared.speeches().count();
        // Timing out is an answer too: the caller sees how many arrived.
        let _ = tokio::time::timeout(timeout, count.wait_for(|c| *c >= n)).await;
        self.speeches()
    }

    /// The next speech request that passes the checks fails with `status` and OpenAI's
    /// error body for it; call again to queue more.
    pub fn fail_next_speech(&self, status: u16) {
        self.shared.speeches().fail_next(status);
    }

    /// Every later transcription answers only after `delay` (a slow local whisper);
    /// `None` answers at once again.
    pub fn delay_transcriptions(&self, delay: Option<Duration>) {
        self.shared.delay_transcriptions(delay);
    }

    /// Refuse requests over `tokens` (estimated as body bytes ÷ 4) as the provider
    /// refuses a context that is too long (400, OpenAI `context_length_exceeded`,
    /// Anthropic "prompt is too long"); `None` lifts the limit. Refused requests are
    /// recorded and take no step.
    pub fn limit_context(&self, tokens: Option<u64>) {
        self.shared.limit_context(tokens);
    }

    /// Neither count nor call the tools of requests (`true`), as a server whose chat
    /// template has no place for them: its prompt tokens and `limit_context` leave them
    /// out.
    pub fn drop_tools(&self, drop: bool) {
        self.shared.drop_tools(drop);
    }

    /// Answer every request whose system prompt contains `needle` with `step`, before
    /// and apart from the script queue (a standing answer, never used up): e.g. the
    /// summariser's requests while the conversation's turns follow the script.
    pub fn answer_when_system_contains(&self, needle: &str, step: Step) {
        self.shared.add_rule(needle.to_string(), step);
    }

    /// How many streamed replies so far lost their client before their end (the client
    /// hung up on a model that ran away, or gave up on a slow one).
    pub fn hung_up(&self) -> u64 {
        self.shared.hung_up()
    }

    /// Clears the script queue and the request log, as `POST /_fake/reset` does.
    pub fn reset(&self) {
        self.shared.reset();
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}
