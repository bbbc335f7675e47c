//! `/conversations`: sessions by channel, a transcript.

pub async fn list() -> &'static str {
    "list"
}
pub async fn transcript() -> &'static str {
    "transcript"
}
pub async fn media() -> &'static str {
    "media"
}
