//! `pincer agent` beside the real Claude Code CLI: `reference/claude-code-2.1.328.jsonl`
//! holds one line of each kind the CLI 2.1.328 wrote in a recorded session (long lists
//! cut to three entries). For every kind, the fields the Claude Agent SDKs read must be
//! in the reference (so the list below is the CLI's real shape) and in Pincer's line of
//! the same kind, with the same JSON type.

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use super::rig::Proc;
use super::stream_json::{SDK, allow, home, initialize, user};

const REFERENCE: &str = include_str!("reference/claude-code-2.1.328.jsonl");

/// Each kind of line, and the fields (JSON pointers) the SDKs read of it.
const READ: &[(&str, &[&str])] = &[
    (
        "control_response/initialize",
        &[
            "/type",
            "/response/subtype",
            "/response/request_id",
            "/response/response/commands",
            "/response/response/agents",
            "/response/response/output_style",
            "/response/response/available_output_styles",
            "/response/response/models",
            "/response/response/models/0/value",
            "/response/response/models/0/displayName",
            "/response/response/models/0/description",
            "/response/response/account",
        ],
    ),
    (
        "system/init",
        &[
            "/type",
            "/subtype",
            "/cwd",
            "/session_id",
            "/tools",
            "/tools/0",
            "/mcp_servers",
            "/model",
            "/permissionMode",
            "/slash_commands",
            "/apiKeySource",
            "/claude_code_version",
            "/output_style",
            "/uuid",
        ],
    ),
    (
        "stream_event/message_start",
        &[
            "/type",
            "/session_id",
            "/parent_tool_use_id",
            "/uuid",
            "/event/type",
            "/event/message/id",
            "/event/message/role",
            "/event/message/model",
            "/event/message/content",
            "/event/message/usage/input_tokens",
            "/event/message/usage/output_tokens",
        ],
    ),
    (
        "stream_event/content_block_start/text",
        &[
            "/event/index",
            "/event/content_block/type",
            "/event/content_block/text",
        ],
    ),
    (
        "stream_event/content_block_delta/text_delta",
        &["/event/index", "/event/delta/type", "/event/delta/text"],
    ),
    (
        "stream_event/content_block_start/tool_use",
        &[
            "/event/index",
            "/event/content_block/type",
            "/event/content_block/id",
            "/event/content_block/name",
            "/event/content_block/input",
        ],
    ),
    (
        "stream_event/content_block_delta/input_json_delta",
        &[
            "/event/index",
            "/event/delta/type",
            "/event/delta/partial_json",
        ],
    ),
    ("stream_event/content_block_stop", &["/event/index"]),
    (
        "stream_event/message_delta",
        &["/event/delta/stop_reason", "/event/usage/output_tokens"],
    ),
    ("stream_event/message_stop", &["/event/type", "/uuid"]),
    (
        "assistant/text",
        &[
            "/type",
            "/session_id",
            "/parent_tool_use_id",
            "/uuid",
            "/message/id",
            "/message/type",
            "/message/role",
            "/message/model",
            "/message/stop_reason",
            "/message/usage/input_tokens",
            "/message/usage/output_tokens",
            "/message/content/0/type",
            "/message/content/0/text",
        ],
    ),
    (
        "assistant/tool_use",
        &[
            "/message/content/0/type",
            "/message/content/0/id",
            "/message/content/0/name",
            "/message/content/0/input",
        ],
    ),
    (
        "user/tool_result",
        &[
            "/type",
            "/session_id",
            "/parent_tool_use_id",
            "/uuid",
            "/message/role",
            "/message/content/0/type",
            "/message/content/0/tool_use_id",
            "/message/content/0/content",
            "/message/content/0/is_error",
        ],
    ),
    (
        "control_request/can_use_tool",
        &[
            "/type",
            "/request_id",
            "/request/subtype",
            "/request/tool_name",
            "/request/input",
            "/request/tool_use_id",
        ],
    ),
    (
        "result/success",
        &[
            "/type",
            "/subtype",
            "/is_error",
            "/duration_ms",
            "/duration_api_ms",
            "/num_turns",
            "/result",
            "/stop_reason",
            "/session_id",
            "/total_cost_usd",
            "/usage/input_tokens",
            "/usage/output_tokens",
            "/usage/cache_read_input_tokens",
            "/usage/cache_creation_input_tokens",
            "/modelUsage",
            "/permission_denials",
            "/uuid",
        ],
    ),
];

/// The kind of a stream-json line, as `READ` names them.
fn kind(line: &Value) -> String {
    let kind = line["type"].as_str().unwrap_or_default();
    let detail = match kind {
        "system" | "result" => line["subtype"].as_str().map(str::to_string),
        "control_request" => line["request"]["subtype"].as_str().map(str::to_string),
        // The answer to initialize is the one with a model list.
        "control_response" if line["response"]["response"]["models"].is_array() => {
            Some("initialize".into())
        }
        "assistant" | "user" => line["message"]["content"][0]["type"]
            .as_str()
            .map(str::to_string),
        "stream_event" => {
            let event = &line["event"];
            let what = event["type"].as_str().unwrap_or_default().to_string();
            match event["content_block"]["type"]
                .as_str()
                .or(event["delta"]["type"].as_str())
            {
                Some(block)
                    if what.starts_with("content_block_") && what != "content_block_stop" =>
                {
                    Some(format!("{what}/{block}"))
                }
                _ => Some(what),
            }
        }
        _ => None,
    };
    match detail {
        Some(detail) => format!("{kind}/{detail}"),
        None => kind.to_string(),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_field_the_sdks_read_is_there_as_the_cli_writes_it() {
    let reference: Vec<Value> = REFERENCE
        .lines()
        .map(|line| serde_json::from_str(line).expect("reference line"))
        .collect();

    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push_all([
        Step::tool_call(
            "write_file",
            json!({"path": "notes.txt", "content": "draft"}),
        ),
        Step::text("Wrote it."),
    ]);
    let mut args = SDK.to_vec();
    args.push("--include-partial-messages");
    let mut agent = Proc::spawn(&home, &args);
    initialize(&mut agent).await;
    agent.send(user("write my notes")).await;
    let ask = agent
        .until_type("control_request", Some("can_use_tool"))
        .await;
    let id = ask["request_id"].as_str().expect("request id").to_string();
    agent
        .send(allow(&id, ask["request"]["input"].clone()))
        .await;
    agent.until_type("result", None).await;
    let (_, ours) = agent.finish().await;

    let mut missing = Vec::new();
    for (wanted, pointers) in READ {
        let theirs = reference
            .iter()
            .find(|line| kind(line) == *wanted)
            .unwrap_or_else(|| panic!("the reference has no {wanted} line"));
        let Some(mine) = ours.iter().find(|line| kind(line) == *wanted) else {
            missing.push(format!("{wanted}: Pincer wrote no such line"));
            continue;
        };
        for pointer in *pointers {
            let cli = theirs
                .pointer(pointer)
                .unwrap_or_else(|| panic!("the CLI's {wanted} has no {pointer}: {theirs}"));
            match mine.pointer(pointer) {
                None => missing.push(format!("{wanted}: no {pointer} in {mine}")),
                Some(value) if json_type(value) != json_type(cli) => missing.push(format!(
                    "{wanted}: {pointer} is a {} where the CLI writes a {}",
                    json_type(value),
                    json_type(cli)
                )),
                Some(_) => {}
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
