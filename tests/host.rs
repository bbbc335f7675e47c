//! Pincer driven by other programs over stdio: `pincer agent` (stream-json, runner) and
//! `pincer acp`, against the fake model.

#[path = "host/acp.rs"]
mod acp;
#[path = "host/locked_tools.rs"]
mod locked_tools;
#[path = "host/reference.rs"]
mod reference;
#[path = "host/rig.rs"]
mod rig;
#[path = "host/runner.rs"]
mod runner;
#[path = "host/runner_seed.rs"]
mod runner_seed;
#[path = "host/stream_json.rs"]
mod stream_json;
