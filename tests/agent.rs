//! The agent loop on long days, end to end through the fake model: clean output,
//! stuck detection, compaction before the context limit, subagent tasks, MCP tools on
//! the first turn, runaway replies, tool calls written as text; and the agent against a
//! real model (`real_model`).

#[path = "agent/clean.rs"]
mod clean;
#[path = "agent/mcp_first_turn.rs"]
mod mcp_first_turn;
// Declared here, early in the suite's (alphabetical) order, so its one long conversation
// starts first and runs beside the rest of the suite rather than after it.
#[path = "real_model.rs"]
mod real_model;
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
