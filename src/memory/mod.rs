//! Memory in the core: the four memory tools, recall before a turn and the daily log
//! after it, and the dream (asking the heavy chain to tidy the memory files, on
//! schedule, `pincer memory dream` or `/dream`). The files themselves, their checks
//! and the git repository belong to `pincer-memory`.
//!
//! - `tool`     — memory_write, memory_search, memory_read, memory_forget
//! - `turn`     — recall into a turn, the daily log of a turn
//! - `dream`    — one dream: material, the model call, applying its operations
//! - `schedule` — the nightly dream in the gateway

pub mod dream;
pub mod schedule;
pub mod tool;

pub use dream::{DreamError, Dreamt, dream};
pub use schedule::DreamSchedule;
