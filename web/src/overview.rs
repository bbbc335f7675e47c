//! `/`: how the gateway is doing at a glance — each channel's and MCP server's state
//! (and when each channel last heard from its platform), uptime and version, today's tokens and cost against the day budget, the last
//! warnings and errors. `/healthz`: 200 when every enabled channel is up, 503 naming
//! the ones that are not (their state only: nothing from the conversations).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use maud::{Markup, html};
use pincer_channels::Health;
use serde_json::json;

use super::WebState;
use super::auth::Login;
use super::layout::{self, usd};

/// `GET /`.
pub(crate) async fn page(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
) -> Response {
    let agent = &state.agent;
    let today = agent.store().usage_since(agent.start_of_day_ms()).await;
    let budget = state.config.agent.max_day_cost_usd;
    let uptime = state.started.elapsed().as_secs();
    let now_ms = pincer_core::clock::utc().timestamp_millis();
    let channels: Vec<(String, String, String)> = state
        .registry
        .handles()
        .map(|h| {
            let heard = h.liveness().and_then(|l| l.last_event_ms);
            (
                h.name().to_string(),
                pincer_core::scrub::scrub_global(&h.health().to_string()).into_owned(),
                heard.map_or_else(
                    || "never".to_string(),
                    |at| format!("{} ago", duration(((now_ms - at).max(0) / 1000) as u64)),
                ),
            )
        })
        .collect();
    let servers = agent.mcp_status();
    let errors = recent();
    let body = html! {
        div.cards {
            div.card { div.muted { "Up for" } div.big { (duration(uptime)) } div.muted { "Pincer " (env!("CARGO_PKG_VERSION")) } }
            @match &today {
                Ok((usage, cost)) => {
                    div.card #today-cost {
                        div.muted { "Spent today" }
                        div.big { (usd(*cost)) }
                        div.muted { "of " (usd(budget)) " a day (agent.max_day_cost_usd)" }
                    }
                    div.card {
                        div.muted { "Tokens today" }
                        div.big { (usage.input_tokens + usage.output_tokens) }
                        div.muted { (usage.input_tokens) " in · " (usage.output_tokens) " out" }
                    }
                }
                Err(err) => div.card { div.muted { "Spent today" } div.flash.err { "cannot read usage: " (err) } },
            }
        }
        h2 { "Channels" }
        @if channels.is_empty() {
            p.muted { "No chat channel is enabled. Enable one in config.toml ([channels.telegram] enabled = true) and restart." }
        } @else {
            (channel_states(&channels))
        }
        h2 { "MCP servers" }
        @if servers.is_empty() {
            p.muted { "None configured ([mcp.servers.NAME] in config.toml)." }
        } @else {
            (states(&servers))
        }
        h2 { "Recent warnings and errors" }
        @if errors.is_empty() {
            p.muted { "None since the gateway started." }
        } @else {
            div.table-wrap { table {
                tr { th { "When (UTC)" } th { "Level" } th { "What" } }
                @for e in errors.iter().rev() {
                    tr { td { (e.at) } td { (e.level) } td { (e.text) } }
                }
            } }
        }
    };
    layout::page("Overview", "/", &login.csrf, body)
}

/// Each channel's state and when it last heard from its platform.
fn channel_states(rows: &[(String, String, String)]) -> Markup {
    html! {
        div.table-wrap { table #channels {
            tr { th { "Name" } th { "State" } th { "Last event" } }
            @for (name, state, heard) in rows {
                @let class = format!("state-{}", state.split([':', ' ']).next().unwrap_or_default());
                tr { td { (name) } td class=(class) { (state) } td.last-event { (heard) } }
            }
        } }
    }
}

fn states(rows: &[(String, String)]) -> Markup {
    html! {
        div.table-wrap { table {
            tr { th { "Name" } th { "State" } }
            @for (name, state) in rows {
                @let class = format!("state-{}", state.split([':', ' ']).next().unwrap_or_default());
                tr { td { (name) } td class=(class) { (state) } }
            }
        } }
    }
}

fn duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// `GET /healthz`.
pub(crate) async fn healthz(State(state): State<Arc<WebState>>) -> Response {
    let failing: Vec<_> = state
        .registry
        .handles()
        .filter_map(|h| {
            let (status, why) = match h.health() {
                Health::Up => return None,
                Health::Starting => ("starting", None),
                Health::Degraded(why) => ("degraded", Some(why)),
                Health::Down(why) => ("down", Some(why)),
            };
            let why = why.map(|w| pincer_core::scrub::scrub_global(&w).into_owned());
            Some(json!({"name": h.name(), "status": status, "why": why}))
        })
        .collect();
    if failing.is_empty() {
        (StatusCode::OK, Json(json!({"status": "ok"}))).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "failing", "failing": failing})),
        )
            .into_response()
    }
}

/// How many warnings and errors the overview keeps.
const KEPT: usize = 20;

/// One warning or error the gateway logged.
#[derive(Clone)]
pub(crate) struct Logged {
    pub at: String,
    pub level: &'static str,
    pub text: String,
}

static RECENT: Mutex<VecDeque<Logged>> = Mutex::new(VecDeque::new());

fn recent() -> Vec<Logged> {
    RECENT
        .lock()
        .map(|r| r.iter().cloned().collect())
        .unwrap_or_default()
}

/// A tracing layer that keeps the last warnings and errors (scrubbed) for the overview.
pub struct ErrorLog;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ErrorLog {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let level = *event.metadata().level();
        if level > tracing::Level::WARN {
            return;
        }
        let mut text = Text(String::new());
        event.record(&mut text);
        let logged = Logged {
            at: pincer_core::clock::utc()
                .format("%Y-%m-%d %H:%M:%S")
                .to_string(),
            level: if level == tracing::Level::ERROR {
                "error"
            } else {
                "warning"
            },
            text: pincer_core::scrub::scrub_global(text.0.trim()).into_owned(),
        };
        if let Ok(mut recent) = RECENT.lock() {
            if recent.len() == KEPT {
                recent.pop_front();
            }
            recent.push_back(logged);
        }
    }
}

/// An event's message and fields as one line.
struct Text(String);

impl tracing::field::Visit for Text {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?} ");
        } else {
            let _ = write!(self.0, "{}={value:?} ", field.name());
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
            self.0.push(' ');
        } else {
            self.0.push_str(&format!("{}={value} ", field.name()));
        }
    }
}
