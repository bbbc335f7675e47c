//! `/memory`: MEMORY.md, the typed files, the dream history, restore.

pub async fn page() -> &'static str {
    "memory"
}
pub async fn restore() -> &'static str {
    "restore"
}
