//! The whole gateway: the core (`pincer_core::start`) with every enabled channel, the
//! scheduler, the web panel, the nightly dream and the shutdown around it.
//!
//! - `channels` — the enabled chat channels, built from config and secrets
//! - `run`      — the gateway: channels, core, delivery, scheduler, panel, dream, shutdown
//! - `notify`   — systemd's notify protocol (`NOTIFY_SOCKET`): ready, stopping, status
//! - `settle`   — once the channels are up, the memory only starting needed goes back
//! - `watchdog` — `WATCHDOG=1` only after a check that the dispatcher, the store and
//!   every channel are alive

pub mod channels;
mod notify;
mod run;
mod settle;
mod watchdog;

pub use run::{GatewayError, Stopped, run};
pub use settle::give_back_with;
