//! The agent loop on long days, end to end through the fake model: clean output,
//! stuck detection, compaction before the context limit, subagent tasks, MCP tools on
//! the first turn, runaway replies, tool calls written as text.

#[path = "agent/clean.rs"]
mod clean;
#[path = "agent/mcp_first_turn.rs"]
mod mcp_first_turn;
#[path = "agent/runaway.rs"]
mod runaway;
#[path = "agent/stuck.rs"]
mod stuck;
#[path = "agent/tasks.rs"]
mod tasks;
#[path = "agent/text_calls.rs"]
mod text_calls;
#[path = "agent/window.rs"]
mod window;
