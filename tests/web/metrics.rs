//! Tests of the panel: `/metrics` parses as Prometheus parses it, its counters move
//! after a message, `web.metrics_token` closes it, and when each channel last heard
//! from its platform shows there and on the overview. The metrics are the process's and
//! other tests run turns beside these: counters are compared before and after, never to
//! a number.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use pincer::web::WebState;
use pincer_channels::{
    Channel, ChannelError, ChannelHandle, ChannelInfo, Health, HealthCell, HealthChecker,
    InboundSender, Liveness, OutboundBody, OutboundMessage, Rate, Registry, Target,
};
use pincer_fakes::Step;
use prometheus_parse::{Scrape, Value};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::harness::{Panel, get};

/// GET /metrics, parsed.
async fn scrape(panel: &Panel) -> Scrape {
    let page = panel.request(get("/metrics")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert_eq!(
        page.headers[header::CONTENT_TYPE],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    parse(&page.text)
}

/// The value of the sample `metric` whose labels include `labels` (0 when absent).
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(buckets) => buckets.iter().map(|b| b.count).fold(0.0, f64::max),
            Value::Summary(_) => 0.0,
        })
        .sum()
}

/// Send `text` through the web chat as the owner and read the whole reply.
async fn chat(panel: &Panel, text: &str) {
    let page = panel.chat(text).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("\"finish\""), "{}", page.text);
}

#[tokio::test]
async fn metrics_parse_and_move_after_a_message() {
    let panel = Panel::start("").await;
    let before = scrape(&panel).await;
    // Families with labels appear with their first count; these are there from the start.
    for family in [
        "pincer_inbound_overhead_seconds",
        "pincer_turn_duration_seconds",
        "pincer_inbound_queue_depth",
        "pincer_session_queue_depth",
        "process_resident_memory_bytes",
    ] {
        assert!(before.docs.contains_key(family), "{family} is described");
    }
    assert!(value(&before, "process_resident_memory_bytes", &[]) > 1e6);

    panel.fake.push(Step::text("Counted."));
    chat(&panel, "count this").await;

    let after = scrape(&panel).await;
    let moved = |metric: &str, labels: &[(&str, &str)]| {
        let (was, is) = (
            value(&before, metric, labels),
            value(&after, metric, labels),
        );
        assert!(is > was, "{metric} {labels:?}: {was} then {is}");
    };
    moved("pincer_messages_in_total", &[("channel", "web")]);
    moved(
        "pincer_turns_total",
        &[("tier", "owner"), ("outcome", "finished")],
    );
    moved(
        "pincer_model_calls_total",
        &[("model", "fake/m"), ("outcome", "ok")],
    );
    moved(
        "pincer_tokens_total",
        &[("model", "fake/m"), ("kind", "output")],
    );
    moved("pincer_turn_duration_seconds", &[]);
    moved("pincer_inbound_overhead_seconds", &[]);
    // No label carries what was said.
    let page = panel.request(get("/metrics")).await;
    assert!(!page.text.contains("count this"), "{}", page.text);
}

/// The panel's state with another channel registry and metrics token.
fn state(panel: &Panel, registry: Arc<Registry>, metrics_token: Option<&str>) -> Arc<WebState> {
    let s = &panel.state;
    Arc::new(WebState {
        home: s.home.clone(),
        config: Arc::clone(&s.config),
        agent: Arc::clone(&s.agent),
        registry,
        inbound: s.inbound.clone(),
        scheduler: s.scheduler.clone(),
        wake: Arc::clone(&s.wake),
        chat: Arc::clone(&s.chat),
        token: s.token.clone(),
        metrics_token: metrics_token.map(SecretString::from),
        sessions: Default::default(),
        started: s.started,
    })
}

/// GET /metrics from `state`'s panel, with `auth` as the Authorization header.
async fn fetch(state: &Arc<WebState>, auth: Option<&str>) -> (StatusCode, String) {
    let mut request = Request::get("/metrics").header(header::HOST, "127.0.0.1:8790");
    if let Some(auth) = auth {
        request = request.header(header::AUTHORIZATION, auth);
    }
    let response = pincer::web::app(Arc::clone(state))
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn parse(text: &str) -> Scrape {
    Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("the Prometheus text format")
}

#[tokio::test]
async fn the_metrics_token_is_required_when_set() {
    let panel = Panel::start("").await;
    let secret = "metrics-secret-0123456789";
    let state = state(&panel, Arc::clone(&panel.state.registry), Some(secret));
    let (status, text) = fetch(&state, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(text.contains("web.metrics_token"), "{text}");
    let (status, _) = fetch(&state, Some("Bearer not-it")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The panel's own token is not the metrics token.
    let panel_token = format!("Bearer {}", super::harness::TOKEN);
    let (status, _) = fetch(&state, Some(&panel_token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, text) = fetch(&state, Some(&format!("Bearer {secret}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(text.contains("pincer_turn_duration_seconds"), "{text}");
}

/// A channel that takes every message at once, except "refused".
struct Metered;

#[async_trait::async_trait]
impl Channel for Metered {
    fn name(&self) -> &str {
        METERED
    }
    async fn listen(
        &self,
        _bus: InboundSender,
        _shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send(&self, _target: &Target, text: &str) -> Result<String, ChannelError> {
        match text {
            "refused" => Err(ChannelError::permanent("chat not found")),
            _ => Ok("1".into()),
        }
    }
}

/// Its name, which no other test uses: its counts are this test's alone.
const METERED: &str = "metered";

#[tokio::test]
async fn deliveries_count_as_messages_out_and_channels_report_up() {
    let panel = Panel::start("").await;
    let info = ChannelInfo {
        split: |text| vec![text.to_string()],
        chat_rate: |_| Rate {
            burst: 1,
            every: Duration::from_millis(1),
        },
        channel_rate: Rate {
            burst: 1,
            every: Duration::from_millis(1),
        },
        edit_interval: Duration::from_millis(1),
        typing_interval: Duration::from_secs(4),
    };
    let mut registry = Registry::default();
    registry.insert(ChannelHandle::new(Arc::new(Metered), info));
    let registry = Arc::new(registry);
    let state = state(&panel, Arc::clone(&registry), None);
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let delivery = tokio::spawn(pincer_channels::manager::run(registry, rx, None));
    let target = Target::chat(METERED, "42", None);
    for body in [
        OutboundBody::Text("one".into()),
        OutboundBody::Notice("two".into()),
        OutboundBody::Text("refused".into()),
        // Not a message anyone sees.
        OutboundBody::Done,
    ] {
        let message = OutboundMessage {
            target: target.clone(),
            body,
            reply_to: None,
            entry: None,
        };
        tx.send(message).await.unwrap();
    }
    drop(tx);
    delivery.await.unwrap();
    let (status, text) = fetch(&state, None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let scrape = parse(&text);
    let labels = [("channel", METERED)];
    let out = |outcome| {
        let labels = [("channel", METERED), ("outcome", outcome)];
        value(&scrape, "pincer_messages_out_total", &labels)
    };
    assert_eq!((out("delivered"), out("failed")), (2.0, 1.0));
    // Only deliveries are timed.
    assert_eq!(
        value(&scrape, "pincer_outbound_overhead_seconds", &labels),
        2.0
    );
    assert_eq!(value(&scrape, "pincer_channel_up", &labels), 1.0);
}

/// A channel that only listens (its name no other test uses), with a pulse.
struct Listening;

#[async_trait::async_trait]
impl Channel for Listening {
    fn name(&self) -> &str {
        LISTENING
    }
    async fn listen(
        &self,
        _bus: InboundSender,
        _shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send(&self, _target: &Target, _text: &str) -> Result<String, ChannelError> {
        Ok("1".into())
    }
}

const LISTENING: &str = "listening";

/// Its health as an adapter keeps it.
struct Pulsing(HealthCell);

impl HealthChecker for Pulsing {
    fn health(&self) -> Health {
        self.0.get()
    }
    fn liveness(&self) -> Liveness {
        self.0.liveness()
    }
}

#[tokio::test]
async fn when_a_channel_last_heard_from_its_platform_shows_in_the_metrics_and_the_overview() {
    let panel = Panel::start("").await;
    let cell = HealthCell::new(LISTENING, Some(Duration::from_secs(60)));
    cell.set(Health::Up);
    let info = ChannelInfo {
        split: |text| vec![text.to_string()],
        chat_rate: |_| Rate {
            burst: 1,
            every: Duration::from_millis(1),
        },
        channel_rate: Rate {
            burst: 1,
            every: Duration::from_millis(1),
        },
        edit_interval: Duration::from_millis(1),
        typing_interval: Duration::from_secs(4),
    };
    let pulsing = Arc::new(Pulsing(cell));
    let mut handle = ChannelHandle::new(Arc::new(Listening), info);
    handle.health = Some(Arc::clone(&pulsing) as _);
    let mut registry = Registry::default();
    registry.insert(handle);
    let state = state(&panel, Arc::new(registry), None);
    let labels = [("channel", LISTENING)];

    // Nothing heard yet: no sample, and the overview says so.
    let (_, text) = fetch(&state, None).await;
    let scrape = parse(&text);
    assert!(
        !scrape
            .samples
            .iter()
            .any(|s| s.metric == "pincer_channel_last_event_seconds"),
        "{text}"
    );
    assert!(overview(&state).await.contains(">never<"));

    pulsing.0.pulse().heard();
    let (_, text) = fetch(&state, None).await;
    let at = value(&parse(&text), "pincer_channel_last_event_seconds", &labels);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - at).abs() < 60.0, "last event at {at}, now {now}");
    let page = overview(&state).await;
    assert!(page.contains("Last event"), "{page}");
    assert!(page.contains(" s ago<"), "{page}");
}

/// The overview page of `state`'s panel, logged in with the login link.
async fn overview(state: &Arc<WebState>) -> String {
    let app = || pincer::web::app(Arc::clone(state));
    let host = |r: axum::http::request::Builder| r.header(header::HOST, "127.0.0.1:8790");
    let login = host(Request::get(format!(
        "/login?token={}",
        super::harness::TOKEN
    )))
    .body(Body::empty())
    .unwrap();
    let response = app().oneshot(login).await.unwrap();
    let cookie = response.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let page = host(Request::get("/"))
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    let response = app().oneshot(page).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}
