//! `/usage`: tokens and cost per day over the last 30 days and per model, drawn on the
//! server as SVG bar charts (no script), and how many model calls the light and the
//! heavy chain answered. Days are the agent's time zone's.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use chrono::{Duration, NaiveDate, TimeZone, Utc};
use maud::{Markup, html};

use super::WebState;
use super::auth::Login;
use super::layout::{self, usd};
use pincer_core::store::UsageRow;

/// Days the charts cover.
const DAYS: i64 = 30;

#[derive(Default, Clone, Copy)]
struct Sum {
    calls: u64,
    input: u64,
    output: u64,
    cost: f64,
}

impl Sum {
    fn add(&mut self, row: &UsageRow) {
        self.calls += 1;
        self.input += row.input_tokens;
        self.output += row.output_tokens;
        self.cost += row.cost_usd;
    }

    fn tokens(&self) -> u64 {
        self.input + self.output
    }
}

/// `GET /usage`.
pub(crate) async fn page(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
) -> Response {
    let tz = state.agent.timezone();
    let today = pincer_core::clock::utc().with_timezone(&tz).date_naive();
    let first = today - Duration::days(DAYS - 1);
    let since = tz
        .from_local_datetime(&first.and_hms_opt(0, 0, 0).unwrap_or_default())
        .earliest()
        .map_or(0, |t| t.timestamp_millis());
    let rows = match state.agent.store().usage_rows_since(since).await {
        Ok(rows) => rows,
        Err(err) => {
            let body = layout::flash(&Some(Err(format!("cannot read usage: {err}"))));
            return layout::page("Usage", "/usage", &login.csrf, body);
        }
    };
    let mut days: BTreeMap<NaiveDate, Sum> = (0..DAYS)
        .map(|n| (first + Duration::days(n), Sum::default()))
        .collect();
    let mut models: BTreeMap<&str, Sum> = BTreeMap::new();
    let (mut light, mut heavy) = (0u64, 0u64);
    let light_chain = &state.config.router.light;
    for row in &rows {
        if let Some(t) = Utc.timestamp_millis_opt(row.at).single() {
            days.entry(t.with_timezone(&tz).date_naive())
                .or_default()
                .add(row);
        }
        models.entry(&row.model).or_default().add(row);
        if light_chain.iter().any(|m| m == &row.model) {
            light += 1;
        } else {
            heavy += 1;
        }
    }
    let total = days.values().fold(Sum::default(), |mut a, s| {
        a.calls += s.calls;
        a.input += s.input;
        a.output += s.output;
        a.cost += s.cost;
        a
    });
    let labels: Vec<String> = days.keys().map(|d| d.format("%m-%d").to_string()).collect();
    let tokens: Vec<f64> = days.values().map(|s| s.tokens() as f64).collect();
    let costs: Vec<f64> = days.values().map(|s| s.cost).collect();
    let mut by_model: Vec<(&str, Sum)> = models.into_iter().collect();
    by_model.sort_by(|a, b| {
        b.1.cost
            .total_cmp(&a.1.cost)
            .then(b.1.tokens().cmp(&a.1.tokens()))
    });
    let body = html! {
        div.cards {
            div.card { div.muted { "Last " (DAYS) " days" } div.big { (usd(total.cost)) } div.muted { (total.tokens()) " tokens" } }
            div.card #split {
                div.muted { "Model calls" }
                div.big { (total.calls) }
                div.muted { (light) " light · " (heavy) " heavy" }
            }
        }
        h2 { "Tokens per day" }
        (bars("tokens-per-day", &labels, &tokens, &|v| format!("{}", v as u64)))
        h2 { "Cost per day" }
        (bars("cost-per-day", &labels, &costs, &|v| usd(v)))
        h2 { "By model" }
        @if by_model.is_empty() {
            p.muted { "No model calls in the last " (DAYS) " days." }
        } @else {
            div.table-wrap { table {
                tr { th { "Model" } th { "Chain" } th.num { "Calls" } th.num { "Input" } th.num { "Output" } th.num { "Cost" } }
                @for (model, sum) in &by_model {
                    tr {
                        td { (model) }
                        td { @if light_chain.iter().any(|m| m == model) { "light" } @else { "heavy" } }
                        td.num { (sum.calls) } td.num { (sum.input) } td.num { (sum.output) } td.num { (usd(sum.cost)) }
                    }
                }
            } }
        }
    };
    layout::page("Usage", "/usage", &login.csrf, body)
}

/// A bar chart: one bar per value, labels under every fifth bar, the largest value at
/// the top. Each bar carries a `<title>` with its exact value.
fn bars(id: &str, labels: &[String], values: &[f64], show: &dyn Fn(f64) -> String) -> Markup {
    const W: f64 = 600.0;
    const H: f64 = 180.0;
    const TOP: f64 = 14.0;
    const BOTTOM: f64 = 20.0;
    let max = values.iter().copied().fold(0.0, f64::max);
    let step = W / values.len().max(1) as f64;
    let height = |v: f64| {
        if max > 0.0 {
            (H - TOP - BOTTOM) * v / max
        } else {
            0.0
        }
    };
    html! {
        svg.chart id=(id) viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(format!("{id}: largest {}", show(max))) {
            line.axis x1="0" y1=(H - BOTTOM) x2=(W) y2=(H - BOTTOM) {}
            text x="2" y="11" { (show(max)) }
            @for (i, value) in values.iter().enumerate() {
                @let h = height(*value);
                @let x = i as f64 * step + 1.0;
                rect.bar x=(format!("{x:.1}")) y=(format!("{:.1}", H - BOTTOM - h)) width=(format!("{:.1}", step - 2.0)) height=(format!("{h:.1}")) {
                    title { (labels.get(i).map(String::as_str).unwrap_or_default()) ": " (show(*value)) }
                }
                @if i % 5 == 0 {
                    text x=(format!("{x:.1}")) y=(format!("{:.1}", H - 5.0)) { (labels.get(i).map(String::as_str).unwrap_or_default()) }
                }
            }
        }
    }
}
