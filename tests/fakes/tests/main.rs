//! The fakes' own tests, in one binary: each module is one fake (or one of its failure
//! modes) driven over real HTTP, as a client of the platform or model would.

mod common;

mod anthropic;
mod cache;
mod discord_media;
mod failures;
mod images;
mod openai;
mod script;
mod slack_media;
mod synapse;
mod telegram;
mod telegram_media;
mod telegram_wire;
mod transcription;
