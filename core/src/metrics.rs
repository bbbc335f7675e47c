//! The process's Prometheus metrics: one registry for the whole process, counted where
//! things happen through the one-line functions below, and read by `GET /metrics`
//! (`pincer-web`), which adds what is read at scrape time (`Scrape`). A count is an
//! atomic add after a label lookup; nothing here blocks or does I/O except `encode`.
//!
//! Labels are a small fixed vocabulary: channel names, tiers, model labels from the
//! config ("provider/model"), tool names, outcome words. Never a chat id, a sender, or
//! anything a person or a model wrote — a name the model made up counts as `unknown`.
//!
//! Where each is measured:
//! - messages in: the dispatcher, as it takes a message off the inbound bus
//! - messages out and outbound overhead: the channel manager's chat worker (a hook in
//!   `pincer_channels::manager`, installed by `install` at start), per message a person
//!   sees — from the worker taking it to the platform having it: pacing, splitting,
//!   retries and the platform's HTTP calls (a failed delivery is counted, not timed).
//!   The web chat's replies do not pass the manager and are not counted there.
//! - inbound overhead: from the dispatcher taking a message off the bus (or, if it
//!   waited behind its conversation's previous turn, from that turn's end) to the
//!   turn's first model request going out: access check, store, queue, the wait for
//!   a turn slot, history and prompt. Not the time in the bus before it (see the
//!   queue depth) nor the platform's own delay (`received_at` is the platform's clock,
//!   in whole seconds on Telegram). Messages with files are left out: their downloads
//!   and transcription take seconds and are not overhead.
//! - turns, turn duration, turns running: the turn loop (`agent::turn`), subagent
//!   runs included
//! - model calls and fallbacks: the model chain, one per attempt (a retry is a call),
//!   through `Recorder`, the observer the gateway hands every chain
//! - tokens and cost: `Store::record_usage`, which every call that costs goes through,
//!   through `Recorder`, the observer the gateway hands the store
//! - tool calls: the turn, per call the model asked for
//! - session queue depth: `steering`, messages waiting for their turn

use std::sync::LazyLock;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::time::Duration;

use pincer_config::Tier;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::provider::{CallObserver, Usage};
use crate::store::UsageObserver;

/// What `/metrics` answers with: the Prometheus text format, version 0.0.4, which every
/// Prometheus scrapes (the OpenMetrics encoder's output would need negotiating).
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabel {
    channel: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutLabels {
    channel: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TurnLabels {
    tier: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabel {
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    model: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    model: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    outcome: &'static str,
}

type ChannelHistograms = Family<ChannelLabel, Histogram, fn() -> Histogram>;

/// Every metric counted while the process runs.
struct Metrics {
    messages_in: Family<ChannelLabel, Counter>,
    messages_out: Family<OutLabels, Counter>,
    outbound_overhead: ChannelHistograms,
    inbound_overhead: Histogram,
    turns: Family<TurnLabels, Counter>,
    turn_duration: Histogram,
    turns_running: Gauge<i64, AtomicI64>,
    session_queue: Gauge<i64, AtomicI64>,
    model_calls: Family<CallLabels, Counter>,
    model_fallbacks: Family<ModelLabel, Counter>,
    tokens: Family<TokenLabels, Counter>,
    cost: Family<ModelLabel, Counter<f64, AtomicU64>>,
    tool_calls: Family<ToolLabels, Counter>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
/// The same handles as `METRICS`, named and described for encoding.
static REGISTRY: LazyLock<Registry> = LazyLock::new(|| METRICS.register());

/// 1 ms to 16 s: a delivery is a platform round trip or a few, paced.
fn delivery_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

impl Metrics {
    fn new() -> Self {
        Metrics {
            messages_in: Family::default(),
            messages_out: Family::default(),
            outbound_overhead: Family::new_with_constructor(
                delivery_histogram as fn() -> Histogram,
            ),
            // 0.5 ms to 8 s: the in-process overhead is milliseconds.
            inbound_overhead: Histogram::new(exponential_buckets(0.0005, 2.0, 15)),
            turns: Family::default(),
            turn_duration: Histogram::new([
                0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
            ]),
            turns_running: Gauge::default(),
            session_queue: Gauge::default(),
            model_calls: Family::default(),
            model_fallbacks: Family::default(),
            tokens: Family::default(),
            cost: Family::default(),
            tool_calls: Family::default(),
        }
    }

    fn register(&self) -> Registry {
        let mut registry = Registry::with_prefix("pincer");
        registry.register(
            "messages_in",
            "Messages taken off the inbound bus, by channel",
            self.messages_in.clone(),
        );
        registry.register(
            "messages_out",
            "Messages a person sees (texts, notices, errors, files) the channel manager was given, by channel and outcome (delivered, failed)",
            self.messages_out.clone(),
        );
        registry.register(
            "outbound_overhead_seconds",
            "From a chat's delivery worker taking a message to the platform having it (pacing, splitting, retries, platform calls), by channel; delivered messages only",
            self.outbound_overhead.clone(),
        );
        registry.register(
            "inbound_overhead_seconds",
            "From the dispatcher taking a message off the bus (or its conversation's previous turn ending) to the turn's first model request; messages with files left out",
            self.inbound_overhead.clone(),
        );
        registry.register(
            "turns",
            "Turns ended, by the tier they ran at and how they ended (finished, budget, stopped, failed, stuck)",
            self.turns.clone(),
        );
        registry.register(
            "turn_duration_seconds",
            "How long turns ran, from start to end",
            self.turn_duration.clone(),
        );
        registry.register(
            "turns_running",
            "Turns running now",
            self.turns_running.clone(),
        );
        registry.register(
            "session_queue_depth",
            "Stored messages waiting in their conversation's queue for a turn",
            self.session_queue.clone(),
        );
        registry.register(
            "model_calls",
            "Model requests, one per attempt, by model and outcome (ok, or the error kind)",
            self.model_calls.clone(),
        );
        registry.register(
            "model_fallbacks",
            "Times a chain gave up on a model and moved on to the next, by the model given up on",
            self.model_fallbacks.clone(),
        );
        registry.register(
            "tokens",
            "Tokens used, by model and kind (input, output, cache_read, cache_write)",
            self.tokens.clone(),
        );
        registry.register(
            "cost_usd",
            "What model calls cost in US dollars at the configured prices, by model",
            self.cost.clone(),
        );
        registry.register(
            "tool_calls",
            "Tool calls the model asked for, by tool (mcp for any MCP server's) and outcome (ok, error, skipped, cancelled)",
            self.tool_calls.clone(),
        );
        registry
    }
}

/// Count the channel manager's deliveries from now on (called once at start; a second
/// call changes nothing).
pub fn install() {
    pincer_channels::manager::observe(message_out);
}

fn channel(name: &str) -> ChannelLabel {
    ChannelLabel {
        channel: name.to_string(),
    }
}

/// A message came in on `channel`.
pub fn message_in(channel_name: &str) {
    METRICS
        .messages_in
        .get_or_create(&channel(channel_name))
        .inc();
}

/// A message a person sees went out on `channel_name`, its delivery having taken `took`;
/// `None`: some of it did not reach the platform (the delivery time is not observed).
pub fn message_out(channel_name: &str, took: Option<Duration>) {
    let labels = OutLabels {
        channel: channel_name.to_string(),
        outcome: if took.is_some() {
            "delivered"
        } else {
            "failed"
        },
    };
    METRICS.messages_out.get_or_create(&labels).inc();
    if let Some(took) = took {
        METRICS
            .outbound_overhead
            .get_or_create(&channel(channel_name))
            .observe(took.as_secs_f64());
    }
}

/// A message's turn sent its first model request `took` after the message came in.
pub fn inbound_overhead(took: Duration) {
    METRICS.inbound_overhead.observe(took.as_secs_f64());
}

/// Counts a turn as running until dropped.
pub struct TurnRunning(());

impl Drop for TurnRunning {
    fn drop(&mut self) {
        METRICS.turns_running.dec();
    }
}

/// A turn began; it counts as running until the returned guard is dropped.
pub fn turn_running() -> TurnRunning {
    METRICS.turns_running.inc();
    TurnRunning(())
}

/// A turn at `tier` ended after `took`; `outcome` is how (`Ended::word`).
pub fn turn_ended(tier: Tier, outcome: &'static str, took: Duration) {
    let labels = TurnLabels {
        tier: tier.name(),
        outcome,
    };
    METRICS.turns.get_or_create(&labels).inc();
    METRICS.turn_duration.observe(took.as_secs_f64());
}

/// `delta` stored messages joined (positive) or left (negative) the sessions' queues.
pub fn session_queue(delta: i64) {
    METRICS.session_queue.inc_by(delta);
}

/// One request to `model` ended: "ok", or the error kind's name.
fn model_call(model: &str, outcome: &'static str) {
    let labels = CallLabels {
        model: model.to_string(),
        outcome,
    };
    METRICS.model_calls.get_or_create(&labels).inc();
}

/// A chain gave up on `model` and moves on to the next one, if any.
fn model_fallback(model: &str) {
    let label = ModelLabel {
        model: model.to_string(),
    };
    METRICS.model_fallbacks.get_or_create(&label).inc();
}

/// A call to `model` used `usage` and cost `cost_usd`.
fn usage(model: &str, usage: Usage, cost_usd: f64) {
    for (kind, tokens) in [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cache_read", usage.cache_read_tokens),
        ("cache_write", usage.cache_write_tokens),
    ] {
        let labels = TokenLabels {
            model: model.to_string(),
            kind,
        };
        METRICS.tokens.get_or_create(&labels).inc_by(tokens);
    }
    let label = ModelLabel {
        model: model.to_string(),
    };
    // A negative or NaN cost (a bad price) would break the counter's promise to rise.
    if cost_usd.is_finite() && cost_usd >= 0.0 {
        METRICS.cost.get_or_create(&label).inc_by(cost_usd);
    }
}

/// A call of `tool` ended as `outcome`.
pub fn tool_call(tool: &str, outcome: &'static str) {
    let labels = ToolLabels {
        tool: tool.to_string(),
        outcome,
    };
    METRICS.tool_calls.get_or_create(&labels).inc();
}

/// The process's metrics as the model chains and the store report to them: the gateway
/// hands one to each when it builds them, so neither crate reaches this module itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Recorder;

impl CallObserver for Recorder {
    fn call(&self, label: &str, outcome: &'static str) {
        model_call(label, outcome);
    }

    fn fallback(&self, label: &str) {
        model_fallback(label);
    }
}

impl UsageObserver for Recorder {
    fn usage(&self, model: &str, used: Usage, cost_usd: f64) {
        usage(model, used, cost_usd);
    }
}

/// One chat channel as `/metrics` reads it.
pub struct ChannelNow<'a> {
    pub name: &'a str,
    /// Whether it is up (degraded counts as not).
    pub up: bool,
    /// When it last heard from its platform, Unix ms; `None` before it heard anything.
    pub last_event_ms: Option<i64>,
}

/// What is read when `/metrics` is asked, not counted along the way.
pub struct Scrape<'a> {
    /// Each chat channel.
    pub channels: Vec<ChannelNow<'a>>,
    /// Messages waiting on the inbound bus for the dispatcher.
    pub inbound_queue: usize,
    /// Messages waiting on the outbound bus for the channel side.
    pub outbound_queue: usize,
}

/// Everything, in the Prometheus text format (`CONTENT_TYPE`).
pub fn encode(scrape: &Scrape<'_>) -> Result<String, std::fmt::Error> {
    let mut now = Registry::default();
    let up = Family::<ChannelLabel, Gauge>::default();
    let heard = Family::<ChannelLabel, Gauge<f64, AtomicU64>>::default();
    for one in &scrape.channels {
        up.get_or_create(&channel(one.name)).set(i64::from(one.up));
        if let Some(ms) = one.last_event_ms {
            // Unix seconds, with the milliseconds as the fraction.
            heard
                .get_or_create(&channel(one.name))
                .set(ms as f64 / 1000.0);
        }
    }
    now.register(
        "pincer_channel_up",
        "Whether each chat channel is up (1) or not (0: starting, degraded or down)",
        up,
    );
    now.register(
        "pincer_channel_last_event_seconds",
        "When each chat channel last heard from its platform (an update, a gateway event, a heartbeat ACK, a frame), Unix time in seconds; absent before it heard anything",
        heard,
    );
    now.register(
        "pincer_inbound_queue_depth",
        "Messages waiting on the inbound bus for the dispatcher",
        gauge(scrape.inbound_queue),
    );
    now.register(
        "pincer_outbound_queue_depth",
        "Messages waiting on the core's outbound bus for the channel side",
        gauge(scrape.outbound_queue),
    );
    if let Some(bytes) = resident_bytes() {
        now.register(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            gauge(bytes),
        );
    }
    let mut out = String::new();
    prometheus_text::encode(&mut out, &REGISTRY)?;
    prometheus_text::encode(&mut out, &now)?;
    Ok(out)
}

/// A gauge set to a count read now.
fn gauge(value: usize) -> Gauge<i64, AtomicI64> {
    let gauge = Gauge::default();
    gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
    gauge
}

/// The process's resident set size: `VmRSS` of /proc/self/status (the resident pages
/// of /proc/self/statm, in kB, without needing the page size). None off Linux.
fn resident_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: usize = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}
