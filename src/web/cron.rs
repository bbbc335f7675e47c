//! `/cron`: scheduled jobs and their actions.

pub async fn page() -> &'static str {
    "cron"
}
pub async fn add() -> &'static str {
    "add"
}
pub async fn run() -> &'static str {
    "run"
}
pub async fn enable() -> &'static str {
    "enable"
}
pub async fn disable() -> &'static str {
    "disable"
}
pub async fn remove() -> &'static str {
    "remove"
}
