//! # pincer-core
//!
//! The assistant without its surfaces: it takes typed messages off a bus, decides who may
//! talk, runs one turn at a time per conversation, calls models and tools, and stores
//! everything in SQLite. The gateway, the web panel (`pincer-web`) and the stdio hosts
//! (`pincer-host`) sit on it; nothing here knows them.
//!
//! # Layout
//! The modules in their layers (docs/architecture.md; a file imports only from its own
//! layer and the ones above it in this list):
//!
//! Ground
//! - `clock`    — the wall clock, read in one place
//! - `tz`       — IANA time zones for chrono, from jiff's bundled tz database
//! - `home`     — where files live (`$PINCER_HOME`), the gateway lock, the environment
//!   the process started with
//! - `scrub`    — the credential scrubber for replies, logs and tool results
//! - `capabilities` — what each model can do (vision, context window)
//!
//! Models and records
//! - `prices`   — what each call costs
//! - `router`   — the cheap-first score that picks light or heavy per turn
//! - `models`   — light/heavy chains from `[router]` and `[providers.*]`, pinned models
//! - `metrics`  — the process's Prometheus counters and histograms, counted where things
//!   happen; `metrics::Recorder` is the observer handed to the chains and the store
//!
//! Who may do what
//! - `access`   — who may reach the model: policies, pairing, group context
//! - `media`    — attachments for the model: images, voice transcripts, inlined documents;
//!   and spoken replies out (`speech`, `ogg_opus`)
//! - `tools`    — the tools the model may call, confined to the workspace
//! - `mcp`      — MCP servers' tools, connected in the background
//! - `cron`     — scheduled jobs, the scheduler, the heartbeat, the `cron` tool
//! - `retention` — removes old inbox/ and tool-output/ files (`[workspace] retention_days`)
//!
//! Conversations
//! - `steering` — one conversation's inbox and the handle on its running turn (read by
//!   the dispatcher and the turn)
//! - `agent`    — the turn loop, system prompt, budget gates
//! - `tasks`    — subagents: the `task` tool, background tasks, `/tasks`
//! - `memory`   — memory tools, the dream (recall and the daily log are the turn's)
//! - `dispatch` — session workers, queue modes, chat commands, speaking a finished reply
//! - `outbox`   — what a person is to see, booked before it is sent; what a restart
//!   finds unsent is sent again, not made again
//! - `start`    — builds all of the above from config (`start`, `start_wired`)
//!
//! Message types and channel adapters live in `pincer-channels`, configuration in
//! `pincer-config`, memory files in `pincer-memory`; model clients in `pincer-provider`,
//! the session store in `pincer-store`, the sandbox in `pincer-sandbox`. Those three are
//! re-exported as `provider`, `store` and `sandbox`; none of them depends on this crate.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod access;
pub mod agent;
pub mod capabilities;
pub mod clock;
pub mod cron;
pub mod dispatch;
pub mod home;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod metrics;
pub mod models;
pub mod outbox;
pub mod prices;
pub mod retention;
pub mod router;
pub mod scrub;
pub mod start;
pub mod steering;
pub mod tasks;
pub mod tools;
pub mod tz;

pub use pincer_provider as provider;
pub use pincer_sandbox as sandbox;
pub use pincer_store as store;

pub use home::Home;
pub use start::{Running, StartError, Wiring, start, start_wired, start_with};
