//! Tests of retry and fallback, with scripted in-memory providers and tokio's paused
//! clock.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::time::Instant;

use super::*;
use crate::provider::types::{Part, StopReason, Usage};

/// What one scripted call does.
enum Step {
    Reply(&'static str),
    Fail(ProviderError),
    /// Stream some text, then fail.
    PartialThenFail(&'static str, ProviderError),
}

struct Scripted {
    steps: Mutex<VecDeque<Step>>,
    /// Models the calls asked for, in order.
    calls: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(steps: Vec<Step>) -> Arc<Self> {
        Arc::new(Self {
            steps: Mutex::new(steps.into()),
            calls: Mutex::new(Vec::new()),
        })
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Provider for Scripted {
    async fn stream(
        &self,
        req: &ChatRequest,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        self.calls.lock().unwrap().push(req.model.clone());
        let step = self.steps.lock().unwrap().pop_front();
        match step.expect("script ran out") {
            Step::Reply(text) => {
                on_event(StreamEvent::Text(text));
                Ok(ChatResponse {
                    parts: vec![Part::Text { text: text.into() }],
                    stop: StopReason::EndTurn,
                    usage: Usage::default(),
                })
            }
            Step::Fail(err) => Err(err),
            Step::PartialThenFail(text, err) => {
                on_event(StreamEvent::Text(text));
                Err(err)
            }
        }
    }
}

fn entry(provider: &Arc<Scripted>, label: &str) -> ChainEntry {
    ChainEntry {
        provider: provider.clone(),
        label: label.into(),
        model: label
            .split_once('/')
            .map(|(_, m)| m)
            .unwrap_or(label)
            .into(),
    }
}

fn err(kind: ErrorKind) -> ProviderError {
    ProviderError::new(kind, "scripted")
}

async fn run(chain: &Chain) -> (Result<(ChatResponse, String), ProviderError>, Vec<String>) {
    let mut seen = Vec::new();
    let mut on_event = |event: StreamEvent<'_>| {
        if let StreamEvent::Text(text) = event {
            seen.push(text.to_string());
        }
    };
    let result = chain.stream(ChatRequest::default(), &mut on_event).await;
    (result, seen)
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_with_backoff() {
    let first = Scripted::new(vec![
        Step::Fail(err(ErrorKind::Server)),
        Step::Fail(err(ErrorKind::Server)),
        Step::Reply("hello"),
    ]);
    let chain = Chain::new(vec![entry(&first, "a/m1")]);
    let start = Instant::now();
    let (result, seen) = run(&chain).await;
    let (reply, label) = result.unwrap();
    assert_eq!(label, "a/m1");
    assert_eq!(
        reply.parts,
        vec![Part::Text {
            text: "hello".into()
        }]
    );
    assert_eq!(seen, vec!["hello"]);
    assert_eq!(first.calls(), vec!["m1", "m1", "m1"]);
    // 500 ms, then 1 s.
    assert_eq!(start.elapsed(), Duration::from_millis(1500));
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_and_capped() {
    let limited =
        |secs| err(ErrorKind::RateLimit).with_retry_after(Some(Duration::from_secs(secs)));
    let first = Scripted::new(vec![
        Step::Fail(limited(3)),
        Step::Fail(limited(600)),
        Step::Reply("ok"),
    ]);
    let chain = Chain::new(vec![entry(&first, "a/m1")]);
    let start = Instant::now();
    let (result, _) = run(&chain).await;
    assert!(result.is_ok());
    assert_eq!(start.elapsed(), Duration::from_secs(3 + 30));
}

#[tokio::test(start_paused = true)]
async fn exhausted_retries_fall_back_to_the_next_entry() {
    let first = Scripted::new(vec![
        Step::Fail(err(ErrorKind::Overloaded)),
        Step::Fail(err(ErrorKind::Overloaded)),
        Step::Fail(err(ErrorKind::Overloaded)),
    ]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let (result, _) = run(&chain).await;
    assert_eq!(result.unwrap().1, "b/m2");
    assert_eq!(first.calls().len(), 3);
    assert_eq!(second.calls(), vec!["m2"]);
}

#[tokio::test(start_paused = true)]
async fn model_not_found_falls_back_at_once() {
    let first = Scripted::new(vec![Step::Fail(err(ErrorKind::ModelNotFound))]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let start = Instant::now();
    let (result, seen) = run(&chain).await;
    assert_eq!(result.unwrap().1, "b/m2");
    assert_eq!(seen, vec!["from b"]);
    assert_eq!(first.calls().len(), 1);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn no_retry_or_fallback_after_partial_output() {
    let first = Scripted::new(vec![Step::PartialThenFail("Hel", err(ErrorKind::Network))]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let (result, seen) = run(&chain).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::Network);
    assert_eq!(seen, vec!["Hel"]);
    assert_eq!(first.calls().len(), 1);
    assert!(second.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn bad_request_stops_the_chain() {
    let first = Scripted::new(vec![Step::Fail(err(ErrorKind::BadRequest))]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let (result, _) = run(&chain).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::BadRequest);
    assert!(second.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn all_failing_returns_the_last_error() {
    let first = Scripted::new(vec![Step::Fail(err(ErrorKind::Auth))]);
    let second = Scripted::new(vec![Step::Fail(err(ErrorKind::Billing))]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let (result, _) = run(&chain).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::Billing);
    let empty = Chain::new(Vec::new());
    let (result, _) = run(&empty).await;
    assert!(result.unwrap_err().to_string().contains("[router]"));
}
