//! # Pincer
//!
//! A small, fast, self-hosted personal AI assistant. This crate is the core: it takes
//! typed messages off a bus, decides who may talk, runs one turn at a time per
//! conversation, calls models and tools, and stores everything in SQLite.
//!
//! ## Layout
//! - `gateway`  — builds the core from config (`pincer::start`) and runs the whole gateway (`gateway::run`)
//! - `clock`    — the wall clock, read in one place
//! - `home`     — where files live (`$PINCER_HOME`), the gateway lock
//! - `host`     — conversations other programs drive over stdio (`pincer agent`, `pincer acp`)
//! - `access`   — who may reach the model: policies, pairing, group context
//! - `dispatch` — session workers, queue modes, chat commands
//! - `steering` — one conversation's inbox and the handle on its running turn (read by the dispatcher and the turn)
//! - `agent`    — the turn loop, system prompt, budget gates
//! - `models`   — light/heavy chains from `[router]` and `[providers.*]`, pinned models
//! - `router`   — the cheap-first score that picks light or heavy per turn
//! - `provider` — OpenAI-compatible and Anthropic streaming clients, retry/fallback:
//!   the `pincer-provider` crate (`provider/`), re-exported under this name
//! - `tools`    — the tools the model may call, confined to the workspace
//! - `sandbox`  — bubblewrap or Landlock around every command run for the model, and its
//!   limits: the `pincer-sandbox` crate (`sandbox/`), re-exported under this name
//! - `mcp`      — MCP servers' tools, connected in the background
//! - `store`    — SQLite sessions, messages, parts, usage; crash repair: the `pincer-store`
//!   crate (`store/`), re-exported under this name
//! - `prices`   — what each call costs
//! - `capabilities` — what each model can do (vision, context window)
//! - `media`    — attachments for the model: images, voice transcripts, inlined documents
//! - `scrub`    — the credential scrubber for replies, logs and tool results
//! - `cron`     — scheduled jobs, the scheduler, the heartbeat, the `cron` tool
//! - `tasks`    — subagents: the `task` tool, background tasks, `/tasks`
//! - `memory`   — memory tools, the dream (recall and the daily log are the turn's)
//! - `retention` — removes old inbox/ and tool-output/ files (`[workspace] retention_days`)
//! - `web`      — the control panel in the browser, `/healthz`, `/metrics`
//! - `metrics`  — the process's Prometheus counters and histograms, counted where things
//!   happen; `metrics::Recorder` is the observer the gateway hands the chains and the store
//! - `cli`      — one module per subcommand (`src/main.rs` only parses and calls it)
//!
//! Message types and channel adapters live in `pincer-channels`, configuration in
//! `pincer-config`, memory files in `pincer-memory`; model clients in `pincer-provider`,
//! the session store in `pincer-store`, the sandbox in `pincer-sandbox`. Those three are
//! re-exported as `provider`, `store` and `sandbox` so `crate::provider::…` paths keep
//! working; none of them depends on this crate.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod access;
pub mod agent;
pub mod capabilities;
pub mod cli;
pub mod clock;
pub mod cron;
pub mod dispatch;
pub mod gateway;
pub mod home;
pub mod host;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod metrics;
pub mod models;
pub mod prices;
pub mod retention;
pub mod router;
pub mod scrub;
pub mod steering;
pub mod tasks;
pub mod tools;
pub mod web;

pub use pincer_provider as provider;
pub use pincer_sandbox as sandbox;
pub use pincer_store as store;

pub use gateway::{Running, StartError, Wiring, start, start_wired, start_with};
pub use home::Home;
