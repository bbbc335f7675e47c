//! Tests of retry, backoff, cooldowns and fallback, with scripted in-memory providers
//! and tokio's paused clock.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::time::Instant;

use super::*;
use crate::types::{Part, StopReason, Usage};

/// What one scripted call does.
enum Step {
    Reply(&'static str),
    Fail(ProviderError),
    /// Stream some text, then fail (a stall, a cut connection, garbage).
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

    fn push(&self, step: Step) {
        self.steps.lock().unwrap().push_back(step);
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
        thinking_budget: 0,
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

fn rate_limited(retry_after_secs: u64) -> ProviderError {
    err(ErrorKind::RateLimit)
        .with_status(429)
        .with_retry_after(Some(Duration::from_secs(retry_after_secs)))
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Run one call; the events seen are text deltas, and `<restart>` for a restart.
async fn run(chain: &Chain) -> (Result<(ChatResponse, String), ProviderError>, Vec<String>) {
    let mut seen = Vec::new();
    let mut on_event = |event: StreamEvent<'_>| match event {
        StreamEvent::Text(text) => seen.push(text.to_string()),
        StreamEvent::Restart => seen.push("<restart>".to_string()),
        _ => {}
    };
    let result = chain.stream(ChatRequest::default(), &mut on_event).await;
    (result, seen)
}

/// The label of the entry that answered.
async fn answered_by(chain: &Chain) -> String {
    run(chain).await.0.unwrap().1
}

fn text(reply: &ChatResponse) -> String {
    match reply.parts.as_slice() {
        [Part::Text { text }] => text.clone(),
        other => panic!("unexpected parts {other:?}"),
    }
}

fn assert_within(elapsed: Duration, low: Duration, high: Duration) {
    assert!(
        (low..=high).contains(&elapsed),
        "{elapsed:?} not within {low:?}..={high:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_with_jittered_backoff() {
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
    assert_eq!(text(&reply), "hello");
    assert_eq!(seen, vec!["hello"]);
    assert_eq!(first.calls(), vec!["m1", "m1", "m1"]);
    // 500 ms, then 1 s, each plus up to half again.
    assert_within(
        start.elapsed(),
        Duration::from_millis(1500),
        Duration::from_millis(2250),
    );
    // A success leaves no rest behind.
    assert_eq!(chain.cooldowns().cooling("a/m1", Instant::now()), None);
}

#[test]
fn jitter_keeps_each_delay_between_base_and_one_and_a_half_times_it() {
    for (attempt, base) in [
        (0, 500),
        (1, 1000),
        (2, 2000),
        (3, 4000),
        (4, 8000),
        (9, 8000),
    ] {
        let base = Duration::from_millis(base);
        assert_eq!(backoff(attempt, 0.0), base);
        assert_eq!(backoff(attempt, 1.0), base.mul_f64(1.5));
        for _ in 0..200 {
            let delay = backoff(attempt, random_unit());
            assert!(delay >= base && delay < base.mul_f64(1.5), "{delay:?}");
        }
    }
    // The rolls actually spread.
    let rolls: Vec<f64> = (0..200).map(|_| random_unit()).collect();
    assert!(rolls.iter().all(|r| (0.0..1.0).contains(r)));
    assert!(rolls.iter().any(|r| *r < 0.5) && rolls.iter().any(|r| *r >= 0.5));
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_waited_out_exactly() {
    let first = Scripted::new(vec![
        Step::Fail(rate_limited(3)),
        Step::Fail(rate_limited(7)),
        Step::Reply("ok"),
    ]);
    let chain = Chain::new(vec![entry(&first, "a/m1")]);
    let start = Instant::now();
    let (result, _) = run(&chain).await;
    assert_eq!(text(&result.unwrap().0), "ok");
    assert_eq!(start.elapsed(), secs(3 + 7));
}

#[tokio::test(start_paused = true)]
async fn a_long_retry_after_falls_back_at_once_and_rests_the_model_that_long() {
    let first = Scripted::new(vec![Step::Fail(rate_limited(600))]);
    let second = Scripted::new(vec![Step::Reply("from b"), Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let start = Instant::now();
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(start.elapsed(), Duration::ZERO);
    // Longer than the 30 s first step: the provider's word wins.
    assert_eq!(
        chain.cooldowns().cooling("a/m1", Instant::now()),
        Some((secs(600), ErrorKind::RateLimit))
    );
    tokio::time::advance(secs(599)).await;
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(first.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_long_retry_after_on_the_only_model_is_reported_not_waited_on() {
    let first = Scripted::new(vec![Step::Fail(rate_limited(600))]);
    let chain = Chain::new(vec![entry(&first, "a/m1")]);
    let start = Instant::now();
    let error = run(&chain).await.0.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(error.kind, ErrorKind::RateLimit);
    let message = error.to_string();
    assert!(message.contains("retry after 600s"), "{message}");
    assert!(!message.contains("models failed"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn server_errors_are_retried_then_fall_back_and_the_model_rests() {
    let first = Scripted::new(vec![
        Step::Fail(err(ErrorKind::Server).with_status(500)),
        Step::Fail(err(ErrorKind::Server).with_status(500)),
        Step::Fail(err(ErrorKind::Server).with_status(500)),
    ]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let start = Instant::now();
    let (result, seen) = run(&chain).await;
    assert_eq!(result.unwrap().1, "b/m2");
    assert_eq!(seen, vec!["from b"]);
    assert_eq!(first.calls().len(), 3);
    assert_eq!(second.calls(), vec!["m2"]);
    assert_within(
        start.elapsed(),
        Duration::from_millis(1500),
        Duration::from_millis(2250),
    );
    assert_eq!(
        chain.cooldowns().cooling("a/m1", Instant::now()),
        Some((secs(10), ErrorKind::Server))
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_the_server_was_still_reading_is_not_retried_on_that_model() {
    let mut reading = err(ErrorKind::Timeout);
    reading.still_reading = true;
    let first = Scripted::new(vec![Step::Fail(reading.clone()), Step::Fail(reading)]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let start = Instant::now();
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(
        first.calls().len(),
        1,
        "sent once, not again while it is read"
    );
    assert_eq!(start.elapsed(), Duration::ZERO, "no backoff either");
    // Alone in its chain, the timeout is the answer.
    let chain = Chain::new(vec![entry(&first, "a/m1")]);
    let error = run(&chain).await.0.unwrap_err();
    assert!(error.still_reading);
    assert_eq!(first.calls().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_server_missing_a_flag_is_not_retried_and_rests_for_an_hour() {
    let first = Scripted::new(vec![Step::Fail(
        err(ErrorKind::ServerConfig).with_status(500),
    )]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(first.calls().len(), 1);
    assert_eq!(
        chain.cooldowns().cooling("a/m1", Instant::now()),
        Some((secs(3600), ErrorKind::ServerConfig))
    );
}

#[tokio::test(start_paused = true)]
async fn an_auth_failure_falls_back_at_once_and_rests_the_model_for_an_hour() {
    let first = Scripted::new(vec![Step::Fail(err(ErrorKind::Auth).with_status(401))]);
    let second = Scripted::new(vec![Step::Reply("from b"), Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let start = Instant::now();
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(first.calls().len(), 1, "auth failures are not retried");
    assert_eq!(start.elapsed(), Duration::ZERO);

    // The next turn goes straight to the fallback.
    tokio::time::advance(secs(3599)).await;
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(first.calls().len(), 1);

    // After the hour the model is asked again.
    tokio::time::advance(secs(1)).await;
    first.push(Step::Reply("from a"));
    assert_eq!(answered_by(&chain).await, "a/m1");
    assert_eq!(first.calls().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn rate_limit_rests_escalate_and_a_success_resets_them() {
    let first = Scripted::new(Vec::new());
    let second = Scripted::new(Vec::new());
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]).with_max_retries(0);
    let limited = || Step::Fail(err(ErrorKind::RateLimit).with_status(429));
    let rest = || chain.cooldowns().cooling("a/m1", Instant::now());

    for expected in [30, 60, 300, 300] {
        first.push(limited());
        second.push(Step::Reply("from b"));
        assert_eq!(answered_by(&chain).await, "b/m2");
        assert_eq!(rest(), Some((secs(expected), ErrorKind::RateLimit)));
        tokio::time::advance(secs(expected)).await;
    }

    first.push(Step::Reply("from a"));
    assert_eq!(answered_by(&chain).await, "a/m1");
    first.push(limited());
    second.push(Step::Reply("from b"));
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(rest(), Some((secs(30), ErrorKind::RateLimit)));

    // A streak is also forgotten after a quiet quarter of an hour.
    tokio::time::advance(secs(30 + 15 * 60)).await;
    first.push(limited());
    second.push(Step::Reply("from b"));
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(rest(), Some((secs(30), ErrorKind::RateLimit)));
}

#[tokio::test(start_paused = true)]
async fn rests_are_shared_by_every_chain_given_the_same_cooldowns() {
    let cooldowns = Arc::new(Cooldowns::new());
    let first = Scripted::new(vec![Step::Fail(err(ErrorKind::Billing))]);
    let second = Scripted::new(vec![Step::Reply("from b"), Step::Reply("from b")]);
    let entries = vec![entry(&first, "a/m1"), entry(&second, "b/m2")];
    let one = Chain::new(entries.clone()).with_cooldowns(cooldowns.clone());
    let other = Chain::new(entries).with_cooldowns(cooldowns);
    assert_eq!(answered_by(&one).await, "b/m2");
    assert_eq!(answered_by(&other).await, "b/m2");
    assert_eq!(first.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_reply_that_stalls_restarts_on_the_next_model() {
    let stalled = err(ErrorKind::Timeout);
    let first = Scripted::new(vec![Step::PartialThenFail("Hel", stalled)]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let start = Instant::now();
    let (result, seen) = run(&chain).await;
    let (reply, label) = result.unwrap();
    assert_eq!(label, "b/m2");
    assert_eq!(text(&reply), "from b");
    assert_eq!(seen, vec!["Hel", "<restart>", "from b"]);
    assert_eq!(
        first.calls().len(),
        1,
        "a reply that began is never repeated"
    );
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(
        chain.cooldowns().cooling("a/m1", Instant::now()),
        Some((secs(10), ErrorKind::Timeout))
    );
}

#[tokio::test(start_paused = true)]
async fn the_restart_waits_for_the_model_that_answers() {
    // Garbage from a, b fails before saying anything, c answers: one restart, just
    // before c's reply.
    let first = Scripted::new(vec![Step::PartialThenFail(
        "\u{fffd}\u{fffd}",
        err(ErrorKind::InvalidResponse),
    )]);
    let second = Scripted::new(vec![Step::Fail(err(ErrorKind::ModelNotFound))]);
    let third = Scripted::new(vec![Step::Reply("from c")]);
    let chain = Chain::new(vec![
        entry(&first, "a/m1"),
        entry(&second, "b/m2"),
        entry(&third, "c/m3"),
    ]);
    let (result, seen) = run(&chain).await;
    assert_eq!(result.unwrap().1, "c/m3");
    assert_eq!(seen, vec!["\u{fffd}\u{fffd}", "<restart>", "from c"]);
}

#[tokio::test(start_paused = true)]
async fn a_cut_reply_with_no_model_left_is_an_error_and_keeps_what_was_shown() {
    let first = Scripted::new(vec![Step::PartialThenFail("Hel", err(ErrorKind::Network))]);
    let chain = Chain::new(vec![entry(&first, "a/m1")]);
    let (result, seen) = run(&chain).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::Network);
    assert_eq!(seen, vec!["Hel"]);
    assert_eq!(first.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn when_every_model_rests_the_one_that_rests_least_is_tried_anyway() {
    let cooldowns = Arc::new(Cooldowns::new());
    let now = Instant::now();
    cooldowns.record_failure("a/m1", ErrorKind::Auth, None, now);
    cooldowns.record_failure("b/m2", ErrorKind::RateLimit, None, now);
    let first = Scripted::new(Vec::new());
    let second = Scripted::new(vec![
        Step::Reply("from b"),
        Step::Fail(err(ErrorKind::RateLimit).with_status(429)),
    ]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")])
        .with_cooldowns(cooldowns.clone())
        .with_max_retries(0);
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert!(first.calls().is_empty());
    // The success ended b's rest.
    assert_eq!(cooldowns.cooling("b/m2", Instant::now()), None);

    cooldowns.record_failure("b/m2", ErrorKind::RateLimit, None, Instant::now());
    tokio::time::advance(secs(5)).await;
    let error = run(&chain).await.0.unwrap_err();
    assert_eq!(error.kind, ErrorKind::RateLimit);
    let message = error.to_string();
    assert!(
        message.contains(
            "no model could answer (a/m1: cooling down for 60 min after authentication failure, b/m2: rate limit)"
        ),
        "{message}"
    );
    assert!(first.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn bad_request_stops_the_chain_and_rests_nothing() {
    let first = Scripted::new(vec![Step::Fail(err(ErrorKind::BadRequest))]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let (result, _) = run(&chain).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::BadRequest);
    assert!(second.calls().is_empty());
    assert_eq!(chain.cooldowns().cooling("a/m1", Instant::now()), None);
}

#[tokio::test(start_paused = true)]
async fn a_too_long_conversation_falls_back_without_resting_the_model() {
    let first = Scripted::new(vec![Step::Fail(err(ErrorKind::ContextTooLong))]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    assert_eq!(answered_by(&chain).await, "b/m2");
    assert_eq!(chain.cooldowns().cooling("a/m1", Instant::now()), None);
}

#[tokio::test(start_paused = true)]
async fn all_failing_returns_the_last_error_naming_every_model() {
    let first = Scripted::new(vec![Step::Fail(err(ErrorKind::Auth))]);
    let second = Scripted::new(vec![Step::Fail(err(ErrorKind::Billing))]);
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")]);
    let error = run(&chain).await.0.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Billing);
    let message = error.to_string();
    assert!(
        message.contains(
            "scripted; all 2 models failed (a/m1: authentication failure, b/m2: billing refusal)"
        ),
        "{message}"
    );
    // The last error's own fix still closes the message.
    assert!(
        message.ends_with("raise the quota on the provider account"),
        "{message}"
    );

    let empty = Chain::new(Vec::new());
    let (result, _) = run(&empty).await;
    assert!(result.unwrap_err().to_string().contains("[router]"));
}

#[tokio::test(start_paused = true)]
async fn a_failure_during_a_rest_does_not_climb_the_ladder() {
    // Two sessions hit the same rate limit at once: one step, not two.
    let cooldowns = Cooldowns::new();
    let now = Instant::now();
    cooldowns.record_failure("a/m1", ErrorKind::RateLimit, None, now);
    cooldowns.record_failure("a/m1", ErrorKind::RateLimit, None, now + secs(2));
    assert_eq!(
        cooldowns.cooling("a/m1", now + secs(2)),
        Some((secs(30), ErrorKind::RateLimit))
    );
    // A different kind of failure starts its own ladder.
    cooldowns.record_failure("a/m1", ErrorKind::Overloaded, None, now + secs(40));
    assert_eq!(
        cooldowns.cooling("a/m1", now + secs(40)),
        Some((secs(15), ErrorKind::Overloaded))
    );
    // A Retry-After beyond an hour rests an hour.
    cooldowns.record_failure("b/m2", ErrorKind::RateLimit, Some(secs(86_400)), now);
    assert_eq!(
        cooldowns.cooling("b/m2", now),
        Some((secs(3600), ErrorKind::RateLimit))
    );
}

/// Remembers what a chain told it, in order.
#[derive(Default)]
struct Recorded(Mutex<Vec<String>>);

impl CallObserver for Recorded {
    fn call(&self, label: &str, outcome: &'static str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("call {label} {outcome}"));
    }

    fn fallback(&self, label: &str) {
        self.0.lock().unwrap().push(format!("fallback {label}"));
    }
}

#[tokio::test(start_paused = true)]
async fn the_observer_hears_each_request_and_each_fallback() {
    let first = Scripted::new(vec![
        Step::Fail(err(ErrorKind::Server)),
        Step::Fail(err(ErrorKind::Server)),
        Step::Fail(err(ErrorKind::Server)),
    ]);
    let second = Scripted::new(vec![Step::Reply("from b")]);
    let observer = Arc::new(Recorded::default());
    let chain = Chain::new(vec![entry(&first, "a/m1"), entry(&second, "b/m2")])
        .with_observer(Arc::clone(&observer) as Arc<dyn CallObserver>);
    assert_eq!(answered_by(&chain).await, "b/m2");
    let server = ErrorKind::Server.as_str();
    assert_eq!(
        *observer.0.lock().unwrap(),
        vec![
            format!("call a/m1 {server}"),
            format!("call a/m1 {server}"),
            format!("call a/m1 {server}"),
            "fallback a/m1".to_string(),
            "call b/m2 ok".to_string(),
        ]
    );
}
