//! `/metrics`.

pub async fn handler() -> &'static str {
    "metrics"
}
