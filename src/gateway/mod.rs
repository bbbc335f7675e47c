//! The whole gateway: the core (`pincer_core::start`) with every enabled channel, the
//! scheduler, the web panel, the nightly dream and the shutdown around it.
//!
//! - `channels` — the enabled chat channels, built from config and secrets
//! - `run`      — the gateway: channels, core, delivery, scheduler, panel, dream, shutdown

pub mod channels;
mod run;

pub use run::{GatewayError, Stopped, run};
