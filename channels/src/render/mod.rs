//! Rendering replies for chat platforms: splitting markdown to a platform's message limit
//! and converting it to that platform's markup.
//!
//! Pure functions of text, no I/O: adapters (`telegram/`, …) call them and send the result.
//! It knows each platform's limit and markup but nothing about how a message is delivered.
//!
//! - `split`          — markdown → chunks under a limit, measured in the platform's units
//! - `cuts`           — where a markdown text may be cut (code fences, ranked cut points)
//! - `telegram`       — chunks of a reply that fit Telegram's limit, as HTML and as plain
//! - `telegram/html`  — the markdown → Telegram HTML writer (what maps to what)
//! - `discord`        — chunks of a reply that fit Discord's limit (Discord renders markdown)
//! - `fit`            — re-splitting chunks whose rendered form outgrew the limit
//! - `slack`          — chunks of a reply that fit Slack's limit; markdown → mrkdwn
//! - `matrix`         — chunks of a reply that fit one Matrix event; markdown → HTML

mod cuts;
pub mod discord;
pub mod fit;
#[cfg(feature = "matrix")]
pub mod matrix;
pub mod slack;
pub mod split;
pub mod telegram;

pub use discord::discord_chunks;
#[cfg(feature = "matrix")]
pub use matrix::{MATRIX_LIMIT, matrix_chunks, to_matrix_html};
pub use slack::{slack_chunks, to_slack_mrkdwn};
pub use split::{char_len, split, utf16_len};
pub use telegram::{TelegramChunk, telegram_chunks, to_telegram_html};

/// Telegram's message length limit, in UTF-16 code units of the text as sent.
pub const TELEGRAM_LIMIT: usize = 4096;
/// Discord's message length limit, in characters.
pub const DISCORD_LIMIT: usize = 2000;
/// Slack's guideline for the length of a message's text field, in characters.
pub const SLACK_LIMIT: usize = 4000;
