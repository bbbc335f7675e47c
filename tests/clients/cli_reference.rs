//! `pincer agent` beside the real Claude Code CLI, line by line in order: the CLI
//! bundled with `claude-agent-sdk` (2.1.327) was driven by `wire.py` through one turn —
//! initialize, a message, one command approved through `can_use_tool`, a reply — against
//! the fake model, and its lines kept in `reference/` (`record-cli.sh` records them
//! again). Pincer, driven by the same script through the same turn, must print the same
//! kinds of lines in the same order.

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use super::rig;
use crate::common::{TestHome, openai_config};

const REFERENCE: &str = include_str!("reference/claude-code-2.1.327-tool-turn.jsonl");

/// What a line is, for comparing orders: its type and subtype, the stream event's
/// type with what it carries, a message's first block type.
fn kind(line: &Value) -> String {
    let event = &line["event"];
    let sub = [
        &line["subtype"],
        &event["type"],
        &line["request"]["subtype"],
        &line["response"]["subtype"],
    ]
    .into_iter()
    .find_map(Value::as_str)
    .unwrap_or_default();
    let detail = match event["type"].as_str() {
        Some("message_delta") => event["delta"]["stop_reason"].as_str(),
        Some("content_block_delta") => event["delta"]["type"].as_str(),
        Some("content_block_start") => event["content_block"]["type"].as_str(),
        _ => line["message"]["content"][0]["type"].as_str(),
    };
    format!(
        "{} {sub} {}",
        line["type"].as_str().unwrap_or_default(),
        detail.unwrap_or_default()
    )
    .trim()
    .to_string()
}

/// The kinds of `lines` in order, a run of one kind once. `system/status` (the CLI's
/// "requesting" notes) is left out: Pincer has no such line.
fn kinds<'a>(lines: impl Iterator<Item = &'a Value>) -> Vec<String> {
    let mut kinds: Vec<String> = lines.map(kind).filter(|k| k != "system status").collect();
    kinds.dedup();
    kinds
}

#[tokio::test]
async fn a_turn_with_an_approved_command_prints_the_clis_lines_in_the_clis_order() {
    let Some(python) = rig::python() else {
        return;
    };
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call("exec", json!({"command": "touch x"})),
        Step::text("Done."),
    ]);
    let home = TestHome::new();
    home.write_config(&openai_config(&model, ""));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    let out = home.path().join("pincer.jsonl");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_pincer"))
        .parent()
        .expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let ran = rig::run(
        &python,
        "wire.py",
        &[
            out.to_str().expect("utf-8"),
            root.join("examples/sdk/pincer-cli")
                .to_str()
                .expect("utf-8"),
        ],
        &[
            ("PINCER_HOME", home.path().to_str().expect("utf-8")),
            ("PATH", &path),
        ],
    )
    .await;
    ran.succeeded();
    assert!(
        home.workspace().join("x").exists(),
        "the approved command ran"
    );
    let ours: Vec<Value> = std::fs::read_to_string(&out)
        .expect("pincer's lines")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let theirs: Vec<Value> = REFERENCE
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let (ours, theirs) = (kinds(ours.iter()), kinds(theirs.iter()));
    // The CLI asks while the model's message is still closing (`message_stop` comes
    // after `can_use_tool`); Pincer closes the message first. Past that, the same order.
    let asked = "control_request can_use_tool";
    let without =
        |k: &[String]| -> Vec<String> { k.iter().filter(|k| *k != asked).cloned().collect() };
    assert_eq!(
        without(&ours),
        without(&theirs),
        "ours: {ours:#?}\ntheirs: {theirs:#?}"
    );
    for kinds in [&ours, &theirs] {
        let at = |k: &str| {
            kinds
                .iter()
                .position(|x| x == k)
                .unwrap_or_else(|| panic!("no {k}: {kinds:#?}"))
        };
        assert!(
            at("stream_event message_delta tool_use") < at(asked),
            "{kinds:#?}"
        );
        assert!(at(asked) < at("user  tool_result"), "{kinds:#?}");
    }
}
