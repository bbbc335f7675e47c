//! # Pincer
//!
//! A small, fast, self-hosted personal AI assistant. This crate is the program: the
//! gateway that runs the core with its channels, the panel and the scheduler, and the
//! command line. The assistant itself is `pincer-core`; its surfaces besides the chat
//! platforms are `pincer-web` (the panel, `/healthz`, `/metrics`) and `pincer-host`
//! (conversations other programs drive over stdio).
//!
//! # Layout
//! - `gateway` — the whole gateway (`gateway::run`): channels, core, panel, scheduler,
//!   dream, shutdown
//! - `cli`     — one module per subcommand (`src/main.rs` only parses and calls it)
//!
//! The core's modules, the panel and the hosts are re-exported under their names
//! (`pincer::agent`, `pincer::web`, `pincer::host`, …), so a program embedding Pincer
//! and the tests name them as one crate.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod cli;
pub mod gateway;

pub use pincer_core::{
    Home, Running, StartError, Wiring, access, agent, capabilities, clock, cron, dispatch, home,
    mcp, media, memory, metrics, models, prices, provider, retention, router, sandbox, scrub,
    start, start_wired, start_with, steering, store, tasks, tools,
};
pub use pincer_host as host;
pub use pincer_web as web;
