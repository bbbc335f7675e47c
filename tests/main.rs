//! Pincer's integration tests, in one binary (as ripgrep keeps its own): each module is
//! one area, driven through the real `pincer` binary or the core's public API against
//! the fakes in `tests/fakes` and the real clients in `tests/clients`. One binary links
//! the core once instead of once per area.
//!
//! Run one area with `cargo test --test integration telegram::`, one test with its
//! whole path (`cargo test --test integration -- --exact trust::a_guest_…`).
// matrix-sdk's sync future is deep: proving it `Send` (tests/matrix.rs spawns one)
// needs more than the default 128 levels.
#![recursion_limit = "256"]

mod common;
mod conformance;

mod agent;
mod architecture;
mod backup;
mod browser_tool;
mod chat;
mod cli_errors;
mod clients;
mod conformance_discord;
mod conformance_matrix;
mod conformance_slack;
mod conformance_telegram;
mod containment_attacks;
mod conversations;
mod crash;
mod cron;
mod discord;
mod discord_adapter;
mod dispatch;
mod doctor;
mod dream;
mod examples;
mod gateway;
mod host;
mod matrix;
mod mcp;
mod mcp_env;
mod media;
mod memory;
mod onboard;
mod outbox;
mod routing;
mod sandboxed;
mod scrub;
mod security;
mod service;
mod slack;
mod slack_adapter;
mod telegram;
mod telegram_adapter;
mod terminal;
mod tools;
mod trust;
mod trust_attacks;
mod trust_attacks_more;
mod upgrade;
mod watchdog;
mod web;
mod workspace_attacks;
