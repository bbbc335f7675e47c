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

#[path = "clients/cli_reference.rs"]
mod cli_reference;
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

/// Every test docs/protocols.md's conformance table names exists, so the table cannot
/// cite a test that was renamed or deleted.
#[test]
fn the_conformance_table_names_only_tests_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/protocols.md")).expect("protocols.md");
    let table = doc
        .split("## Conformance")
        .nth(1)
        .expect("a Conformance section");
    let mut sources = String::new();
    for dir in [
        "tests",
        "tests/clients",
        "tests/host",
        "host/src",
        "host/src/stream_json",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).expect("dir").flatten() {
            if entry.path().extension().is_some_and(|e| e == "rs") {
                sources.push_str(&std::fs::read_to_string(entry.path()).expect("source"));
            }
        }
    }
    let mut named = 0;
    for row in table.lines().filter(|l| l.starts_with('|')) {
        let Some(cell) = row.trim_end_matches('|').rsplit('|').next() else {
            continue;
        };
        let name = cell.trim().trim_matches('`');
        if name.is_empty() || name.starts_with(['-', '—']) || name.contains(' ') {
            continue;
        }
        named += 1;
        assert!(
            sources.contains(&format!("fn {name}(")),
            "docs/protocols.md names the test {name}, which does not exist"
        );
    }
    assert!(named >= 20, "the table names {named} tests");
}
