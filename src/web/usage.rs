//! `/usage`: tokens and cost per day and per model, as SVG.

pub async fn page() -> &'static str {
    "usage"
}
