//! Memory in the core: the four memory tools and the dream (asking the heavy chain to
//! tidy the memory files, on schedule, `pincer memory dream` or `/dream`). Recall
//! before a turn and the daily log after it are the turn's (`agent/remember.rs`). The
//! files themselves, their checks and the git repository belong to `pincer-memory`.
//!
//! - `tool`     — memory_write, memory_search, memory_read, memory_forget
//! - `dream`    — one dream: material, the model call, applying its operations
//! - `schedule` — the nightly dream in the gateway

pub mod dream;
pub mod schedule;
pub mod tool;

pub use dream::{DreamError, Dreamt, dream};
pub use schedule::DreamSchedule;
