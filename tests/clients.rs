//! Pincer driven by the real third-party client libraries, as their users drive it:
//! `claude-agent-sdk` (PyPI) against `pincer agent`, `@agentclientprotocol/sdk` (npm) and
//! `agent-client-protocol` (PyPI) against `pincer acp`, the AI SDK's `ai` (npm) against
//! the web panel's `/api/chat`, and the official MCP conformance suite against Pincer's
//! MCP client. The libraries are pinned in `tests/clients/package.json` (its lock) and
//! `tests/clients/requirements.txt`, installed by `scripts/install-clients.sh`.
//!
//! Each case runs a small script (`tests/clients/*.mjs`, `*.py`) that drives the real
//! binary with the library and prints what the library handed it, one JSON line per
//! observation; the Rust side checks those lines.

mod common;

#[path = "clients/rig.rs"]
mod rig;
#[path = "clients/sdk.rs"]
mod sdk;

#[path = "clients/acp.rs"]
mod acp;

#[path = "clients/ai.rs"]
mod ai;

#[path = "clients/mcp.rs"]
mod mcp;
