//! The workspace is hostile input: whatever lands in it (a cloned repository, a
//! downloaded archive, a file a prompt injection wrote) may be run, so each attack here
//! is a script the fake model writes with `write_file` and then runs with `exec` — the
//! indirect route no exec deny group reads — through the real binary, under both
//! sandboxes, with the deny groups on as they are by default. What must hold is what a
//! user would notice: the attack ends, or reaches nothing, and the same Pincer process
//! goes on answering.
//!
//! - `arguments` — a secret in a call's arguments: refused, scrubbed, reported
//! - `rig`     — a home with the fake model and a chosen sandbox; a scripted turn; the
//!   gateway
//! - `limits`  — memory, disk, CPU, open files, processes: `[tools.exec.limits]`
//! - `sockets` — the system's UNIX sockets with the network off; the web panel, which
//!   refuses the sandbox's connections and is not locked by a flood of idle ones
//! - `state`   — a dream journal, a lock link, a recall index row and a git worktree
//!   planted where the gateway's state used to live
//! - `writes`  — links planted where the gateway writes: the inbox, tool-output/
//! - `standing` — a planted HEARTBEAT.md and skill; the owner's skill changed
//! - `mcp`     — `node_modules/.bin` planted for `npx`; a server the sandbox cannot see
//! - `taint`   — untrusted content however it is read; the conversation keeps it

// A crate root's modules are found beside it, so each names its file under
// `workspace_attacks/`; a new attack module is one more pair of lines here.
#[path = "workspace_attacks/arguments.rs"]
mod arguments;
#[path = "workspace_attacks/limits.rs"]
mod limits;
#[path = "workspace_attacks/mcp.rs"]
mod mcp;
#[path = "workspace_attacks/rig.rs"]
mod rig;
#[path = "workspace_attacks/sockets.rs"]
mod sockets;
#[path = "workspace_attacks/standing.rs"]
mod standing;
#[path = "workspace_attacks/state.rs"]
mod state;
#[path = "workspace_attacks/taint.rs"]
mod taint;
#[path = "workspace_attacks/writes.rs"]
mod writes;
