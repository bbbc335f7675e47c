//! The stream-json types held to recorded lines (`host/tests/fixtures/stream_json/`):
//! what the Python SDK and seed 002 send reads and writes back; what Pincer wrote before
//! the types (its json! trees) reads back to the same text, and the constructors write
//! it again; and the Claude Code CLI's own lines fit the types Pincer writes, less the
//! fields Pincer leaves out, each listed here with why.

use std::collections::BTreeSet;

use pincer_channels::{FinishReason, TurnUsage};
use serde_json::{Value, json};

use super::*;
use crate::round_trip::{assert_round_trip, assert_same_line, fixture};
use pincer_core::tools::mode::PermissionMode;

const SDK_INPUT: &str = include_str!("../../../tests/fixtures/stream_json/sdk_input.jsonl");
const PINCER_OUTPUT: &str = include_str!("../../../tests/fixtures/stream_json/pincer_output.jsonl");
const CLI_OUTPUT: &str = include_str!("../../../tests/fixtures/stream_json/cli_output.jsonl");

/// What the SDK sends that Pincer does not read, by line.
const SDK_NOT_READ: &[(&str, &[&str])] = &[
    // The conversation is the one `pincer agent` was started for; a subagent's
    // messages never come from a host.
    (
        "sdk user: ClaudeSDKClient.query(\"…\")",
        &["/parent_tool_use_id", "/session_id"],
    ),
    (
        "sdk user: query(prompt=\"…\"), the one-shot form",
        &["/parent_tool_use_id", "/session_id"],
    ),
    // Pincer delivers every message as written (it expands no `@path`).
    (
        "sdk user: verbatim_prompts (stamp_user_message)",
        &["/parent_tool_use_id", "/session_id", "/client_composed"],
    ),
    // Images are not taken by the stream-json host: only text blocks are read.
    (
        "sdk user: an AsyncIterable prompt with content blocks",
        &[
            "/parent_tool_use_id",
            "/session_id",
            "/message/content/1/source",
        ],
    ),
    // Callbacks are not timed out by Pincer; agents, skills and the prompt's sections
    // are Pincer's config.
    (
        "sdk initialize: hooks, agents, skills",
        &[
            "/request/hooks/PreToolUse/0/timeout",
            "/request/agents",
            "/request/excludeDynamicSections",
            "/request/skills",
            "/request/forwardSubagentText",
        ],
    ),
];

fn input(name: &str) -> Input {
    let (_, line) = fixture(SDK_INPUT)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no line {name}"));
    Input::read(&line).expect("JSON")
}

fn answer(name: &str) -> Answered {
    match input(name) {
        Input::ControlResponse(answer) => answer.answered(),
        other => panic!("{name} is no answer: {other:?}"),
    }
}

fn decision(name: &str) -> Decision {
    crate::lenient::read(answer(name).outcome.expect("a success"))
}

fn request(name: &str) -> Request {
    match input(name) {
        Input::ControlRequest(request) => request.request,
        other => panic!("{name} is no request: {other:?}"),
    }
}

#[test]
fn every_line_the_sdk_and_seed_002_send_reads_and_writes_back() {
    let mut used = BTreeSet::new();
    let lines = fixture(SDK_INPUT);
    assert!(lines.len() >= 30, "{} lines", lines.len());
    for (name, line) in &lines {
        let unread = SDK_NOT_READ
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[][..], |(n, paths)| {
                used.insert(*n);
                paths
            });
        let typed: Input = assert_round_trip(name, line, unread, &[]);
        assert_ne!(
            typed,
            Input::Other,
            "{name} reads as a line of no known type"
        );
    }
    assert_eq!(used.len(), SDK_NOT_READ.len(), "a listed line is gone");
}

/// A `control_response`'s body is read once its request is known: a decision for
/// `can_use_tool`, a reply for `mcp_message` (a hook's output stays free-form).
#[test]
fn every_answer_body_reads_and_writes_back_as_its_type() {
    let mut bodies = 0;
    for (name, _) in fixture(SDK_INPUT) {
        if !name.contains("can_use_tool") && !name.contains("mcp_message") {
            continue;
        }
        let Ok(body) = answer(&name).outcome else {
            panic!("{name}: a success");
        };
        let body = body.to_string();
        if name.contains("mcp_message") {
            assert_round_trip::<McpAnswer>(&name, &body, &[], &[]);
        } else {
            assert_round_trip::<Decision>(&name, &body, &[], &[]);
        }
        bodies += 1;
    }
    assert_eq!(bodies, 11);
}

#[test]
fn the_sdks_lines_mean_what_the_sdk_meant() {
    let Input::User(user) = input("sdk user: an AsyncIterable prompt with content blocks") else {
        panic!("a user line");
    };
    assert_eq!(
        user.message.content.text(),
        "What is in this picture?\nBe brief."
    );

    let Request::Known(Known::Initialize(initialize)) =
        request("sdk initialize: hooks, agents, skills")
    else {
        panic!("initialize");
    };
    let hooks = initialize.hooks.expect("hooks").0;
    let events: Vec<&str> = hooks.iter().map(|(event, _)| event.as_str()).collect();
    assert_eq!(events, ["PreToolUse", "Stop"], "in the SDK's order");
    let pre = &hooks[0].1;
    assert_eq!(pre[0].matcher.as_deref(), Some("Bash"));
    assert_eq!(pre[1].matcher, None);
    assert_eq!(pre[1].hook_callback_ids, ["hook_1", "hook_2"]);
    assert_eq!(pre[1].on_failure.as_deref(), Some("block"));
    let Request::Known(Known::Initialize(none)) = request("sdk initialize: no hooks") else {
        panic!("initialize");
    };
    assert_eq!(none.hooks, None);

    assert_eq!(
        request("sdk set_model: none (the default)"),
        Request::Known(Known::SetModel { model: None })
    );
    let Request::Unsupported(rewind) = request("sdk rewind_files") else {
        panic!("rewind_files is not honoured");
    };
    assert_eq!(rewind.subtype, "rewind_files");

    let updates = decision("sdk can_use_tool: allow with permission updates");
    assert!(updates.allows());
    assert_eq!(updates.set_mode(), Some(PermissionMode::AcceptEdits));
    assert_eq!(
        updates.allow_rule("write_file", "notes.txt"),
        Some(Kept::Session)
    );
    assert_eq!(updates.allow_rule("write_file", "other.txt"), None);
    assert_eq!(updates.added_rules().len(), 1, "the deny rule adds nothing");

    let question = decision("sdk can_use_tool: a question answered");
    assert_eq!(question.updated_input.expect("input")["answer"], "tea");
    let deny = decision("sdk can_use_tool: deny, and stop");
    assert!(!deny.allows() && deny.interrupts());
    assert_eq!(deny.message.as_deref(), Some("not that file"));

    let mcp = answer("sdk mcp_message: a reply");
    assert_eq!(mcp.request_id.as_deref(), Some("pincer-mcp-1"));
    let reply: McpAnswer = crate::lenient::read(mcp.outcome.expect("a success"));
    assert_eq!(reply.mcp_response["id"], 0);
    assert_eq!(
        answer("sdk error: the callback failed").outcome,
        Err(Some("canUseTool callback is not provided".into()))
    );

    // Seed 002's ExitPlanMode answer: a mode, and a rule by the CLI's name for `exec`.
    let plan =
        decision("seed-002 can_use_tool: ExitPlanMode's keep-context option (setMode, addRules)");
    assert_eq!(plan.set_mode(), Some(PermissionMode::AcceptEdits));
    assert_eq!(plan.allow_rule("exec", "run tests"), Some(Kept::Session));
    // Seed 002 §6's adapter form reads as the SDK form.
    let adapted = answer("seed-002 can_use_tool: the adapter form's allow (section 6)");
    assert_eq!(adapted.request_id.as_deref(), Some("9472f688-..."));
    assert_eq!(
        adapted.outcome,
        Ok(json!({"updatedInput": {"plan": "1. Run the tests"}, "behavior": "allow"}))
    );
    let refused = decision("seed-002 can_use_tool: the adapter form's deny (section 6)");
    assert!(!refused.allows());
    assert_eq!(
        refused.message.as_deref(),
        Some("User requested changes to the plan")
    );
}

/// Lines no SDK sends are answered as before the types: a field of another type is
/// absent, a line of no type is ignored, and none of them panics.
#[test]
fn odd_lines_read_as_the_hosts_always_took_them() {
    let read = |line: &str| Input::read(line).expect("JSON");
    assert!(Input::read("not json").is_err());
    for ignored in ["[1]", "5", "{}", r#"{"type":5}"#, r#"{"type":"status"}"#] {
        assert_eq!(read(ignored), Input::Other, "{ignored}");
    }
    for empty in [
        r#"{"type":"user"}"#,
        r#"{"type":"user","message":5}"#,
        r#"{"type":"user","message":{"content":[5,{"type":"text","text":7}]}}"#,
    ] {
        let Input::User(user) = read(empty) else {
            panic!("{empty}");
        };
        assert_eq!(user.message.content.text(), "", "{empty}");
    }
    let Input::ControlRequest(odd) = read(
        r#"{"type":"control_request","request_id":7,"request":{"subtype":"set_model","model":5}}"#,
    ) else {
        panic!("a request");
    };
    assert_eq!(odd.request_id, "");
    assert_eq!(odd.request, Request::Known(Known::SetModel { model: None }));
    let Input::ControlRequest(bare) = read(r#"{"type":"control_request"}"#) else {
        panic!("a request");
    };
    let Request::Unsupported(unsupported) = bare.request else {
        panic!("answered as unsupported");
    };
    assert_eq!(unsupported.subtype, "");
    let Input::ControlRequest(hooks) = read(
        r#"{"type":"control_request","request_id":"h","request":{"subtype":"initialize","hooks":{"Stop":"x","PreToolUse":[5,{"matcher":3,"hookCallbackIds":[1,"h9"]}]}}}"#,
    ) else {
        panic!("a request");
    };
    let Request::Known(Known::Initialize(initialize)) = hooks.request else {
        panic!("initialize");
    };
    let hooks = initialize.hooks.expect("hooks").0;
    assert_eq!(hooks[0], ("Stop".to_string(), vec![]));
    assert_eq!(
        hooks[1].1.len(),
        1,
        "the matcher that is no object is left out"
    );
    assert_eq!(hooks[1].1[0].matcher, None);
    assert_eq!(hooks[1].1[0].hook_callback_ids, ["h9"]);
    // The build before the types panicked on this one.
    for no_id in [
        r#"{"type":"control_response","response":"x"}"#,
        r#"{"type":"control_response"}"#,
        r#"{"type":"control_response","response":{"request_id":5}}"#,
    ] {
        let Input::ControlResponse(answer) = read(no_id) else {
            panic!("{no_id}");
        };
        assert_eq!(answer.answered().request_id, None, "{no_id}");
    }
    let odd_decision: Decision = crate::lenient::read(json!({
        "behavior": 1, "subtype": "allow", "interrupt": "true",
        "updatedPermissions": [5, {"type": "setMode", "mode": 3}, {"type": "setMode", "mode": "plan"},
                               {"type": "addRules", "rules": [7, {"toolName": "exec"}], "behavior": "allow",
                                "destination": 9}]
    }));
    assert!(
        odd_decision.allows(),
        "`subtype` stands in for an odd `behavior`"
    );
    assert!(!odd_decision.interrupts());
    assert_eq!(
        odd_decision.set_mode(),
        None,
        "the first setMode names no mode"
    );
    assert_eq!(odd_decision.allow_rule("exec", "ls"), Some(Kept::Session));
}

#[test]
fn every_line_pincer_wrote_reads_back_to_the_same_text() {
    let lines = fixture(PINCER_OUTPUT);
    assert!(lines.len() >= 35, "{} lines", lines.len());
    for (name, line) in &lines {
        assert_same_line::<Output>(name, line);
    }
}

/// What the CLI writes that Pincer does not, and what Pincer writes that the CLI's
/// line lacks, by line.
const CLI_ONLY: &[(&str, &[&str], &[&str])] = &[
    (
        "2.1.328 control_response/initialize",
        &[
            // Pincer's commands are no skills; its models are tiers, without efforts.
            "/response/response/commands/*/builtin",
            "/response/response/models/*/resolvedModel",
            "/response/response/models/*/supportsEffort",
            "/response/response/models/*/supportedEffortLevels",
            "/response/response/models/*/supportsAdaptiveThinking",
            "/response/response/models/*/supportsFastMode",
            "/response/response/models/*/supportsAutoMode",
            "/response/response/models/*/supportsThinkingOff",
            "/response/response/account/apiProvider",
            "/response/response/agents/*/model",
            // The CLI's own state, none of which Pincer has.
            "/response/response/user_output_styles_dir",
            "/response/response/pid",
            "/response/response/claude_code_version",
            "/response/response/current_permission_mode",
            "/response/response/hooks_when_unanswered_kept",
            "/response/response/other_hook_ask_outranks_host",
            "/response/response/feedback_mode",
            "/response/response/analytics_disabled",
            "/response/response/remote_control_auto_enable",
            "/response/response/remote_control_auto_connect_default",
            "/response/response/remote_control_available",
            "/response/response/remote_control_auto_on_by_default",
            "/response/response/ide_rc_auto_enable_gate",
            "/response/response/fast_mode_state",
            "/response/response/fast_mode_disabled_reason",
            "/response/response/session_state",
            "/response/response/capabilities",
            "/response/pending_permission_requests",
            "/response/pending_user_dialog_requests",
        ],
        // Pincer says it registered the hooks (the SDK checks it when one blocks on failure).
        &["/response/response/hooks_applied"],
    ),
    (
        "2.1.328 system/init",
        &[
            "/terminal_slash_commands",
            "/capabilities",
            "/analytics_disabled",
            "/product_feedback_disabled",
            "/memory_paths",
            "/original_cwd",
            "/additional_directories",
            "/messaging_socket_path",
            "/fast_mode_state",
            "/fast_mode_disabled_reason",
            "/per_turn_effort_active",
            "/ultrathink_available",
            "/ultrathink_typed_raises",
            "/view_mode",
        ],
        &[],
    ),
    // Timings and the API's message id: Pincer's models are not the Messages API.
    (
        "2.1.328 stream_event/message_start",
        &["/ttft_ms", "/thinking_display", "/api_message_id"],
        &[],
    ),
    (
        "2.1.328 stream_event/content_block_start/text",
        &["/api_message_id"],
        &[],
    ),
    (
        "2.1.328 stream_event/content_block_delta/text_delta",
        &["/api_message_id"],
        &[],
    ),
    (
        "2.1.328 assistant/text",
        &["/message/context_management", "/timestamp"],
        &[],
    ),
    (
        "2.1.328 stream_event/content_block_stop",
        &["/api_message_id"],
        &[],
    ),
    (
        "2.1.328 stream_event/message_delta",
        &["/api_message_id"],
        &[],
    ),
    (
        "2.1.328 stream_event/message_stop",
        &["/api_message_id"],
        &[],
    ),
    (
        "2.1.328 result/success",
        &[
            "/usage/output_tokens_details",
            "/usage/server_tool_use",
            "/usage/service_tier",
            "/usage/cache_creation",
            "/usage/inference_geo",
            "/usage/iterations",
            "/usage/speed",
            "/usage/fallback_credit",
            "/modelUsage/*/webSearchRequests",
            "/modelUsage/*/contextWindow",
            "/modelUsage/*/maxOutputTokens",
            "/modelUsage/*/thinkingTokens",
            "/modelUsage/*/cacheCreationEphemeral5mInputTokens",
            "/modelUsage/*/cacheCreationEphemeral1hInputTokens",
            "/modelUsage/*/canonicalModel",
            "/modelUsage/*/provider",
            "/modelUsage/*/costBasis",
            "/fast_mode_state",
            "/fast_mode_disabled_reason",
            "/subagent_stats",
            "/safety_stops",
            "/api_error_status",
            "/ttft_ms",
            "/ttft_stream_ms",
            "/time_to_request_ms",
            "/first_content_frame_ms",
            "/queued_turn_count",
            "/result_index",
            "/model_usage_since_last_result",
        ],
        &[],
    ),
    (
        "2.1.328 stream_event/content_block_start/tool_use",
        &["/api_message_id"],
        &[],
    ),
    (
        "2.1.328 stream_event/content_block_delta/input_json_delta",
        &["/api_message_id"],
        &[],
    ),
    (
        "2.1.328 assistant/tool_use",
        &["/message/context_management", "/timestamp"],
        &[],
    ),
    // The tool's structured result and the CLI's permission bookkeeping.
    (
        "2.1.328 user/tool_result",
        &["/timestamp", "/tool_use_result", "/tool_result_meta"],
        &[],
    ),
    // Pincer always suggests a rule.
    (
        "2.1.328 control_request/can_use_tool",
        &["/request/decision_reason_type"],
        &["/request/permission_suggestions"],
    ),
    (
        "seed-002 control_request/can_use_tool",
        &[],
        &[
            "/request/display_name",
            "/request/description",
            "/request/permission_suggestions",
        ],
    ),
];

#[test]
fn the_clis_lines_fit_the_types_pincer_writes() {
    let mut used = BTreeSet::new();
    let lines = fixture(CLI_OUTPUT);
    assert!(lines.len() >= 17, "{} lines", lines.len());
    for (name, line) in &lines {
        let (unmodelled, added) = CLI_ONLY.iter().find(|(n, _, _)| n == name).map_or(
            (&[][..], &[][..]),
            |(n, unmodelled, added)| {
                used.insert(*n);
                (*unmodelled, *added)
            },
        );
        assert_round_trip::<Output>(name, line, unmodelled, added);
    }
    assert_eq!(used.len(), CLI_ONLY.len(), "a listed line is gone");
}

fn pincer_line(name: &str) -> String {
    fixture(PINCER_OUTPUT)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no line {name}"))
        .1
}

fn written(line: Output) -> String {
    serde_json::to_string(&line).expect("serializes")
}

const UUID: &str = "0b9c6a52-3f1e-4d7a-8c2b-5e4f3a2d1c0b";
const SESSION: &str = "terminal:dm:rec-1";

fn usage(model: Option<&str>, input: u64, cache_read: u64, output: u64, calls: u32) -> TurnUsage {
    TurnUsage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        model: model.map(String::from),
        model_calls: calls,
        duration_ms: 1840,
        model_ms: 1210,
        ..TurnUsage::default()
    }
}

fn result(reason: FinishReason, usage: &TurnUsage, end: TurnEnd) -> String {
    written(Output::Result(Box::new(TurnResult::new(
        SESSION.into(),
        reason,
        usage,
        end,
        UUID.into(),
    ))))
}

#[test]
fn the_constructors_write_what_pincer_wrote_before_the_types() {
    let reply = |body: Result<ReplyBody, String>, id: &str| {
        written(Output::ControlResponse(PincerReply::to(id.into(), body)))
    };
    assert_eq!(
        reply(
            Ok(ReplyBody::Initialized(Box::new(Initialized::pincer()))),
            "req_1"
        ),
        pincer_line("control_response/initialize")
    );
    assert_eq!(
        reply(
            Ok(ReplyBody::ContextUsage(Box::new(ContextUsage::new(
                "fake/m", 128000, 2313
            )))),
            "req_20"
        ),
        pincer_line("control_response/get_context_usage")
    );
    let failed = "failed: cannot start `/nonexistent/server`: No such file or directory (os error 2); check the command of MCP server broken in config.toml, retrying in 2s";
    let servers = McpServer::all(vec![
        ("broken".into(), failed.into()),
        ("calc".into(), "ready, 1 tool".into()),
    ]);
    assert_eq!(
        reply(
            Ok(ReplyBody::McpStatus {
                mcp_servers: servers
            }),
            "req_2"
        ),
        pincer_line("control_response/mcp_status/failed")
    );

    let denial = Denial {
        tool_name: "write_file".into(),
        tool_use_id: "call_2".into(),
        tool_input: json!({"content": "y", "path": "b.txt"}),
    };
    let end = TurnEnd {
        steps: 2,
        last_text: "Could not.".into(),
        denials: vec![denial],
    };
    assert_eq!(
        result(
            FinishReason::Stop,
            &usage(Some("fake/m"), 163, 4201, 9, 2),
            end
        ),
        pincer_line("result/success/denied")
    );
    let end = TurnEnd {
        steps: 1,
        last_text: "Stopped: this turn used its 1 model calls (--max-turns).".into(),
        denials: Vec::new(),
    };
    assert_eq!(
        result(
            FinishReason::Length,
            &usage(Some("fake/m"), 2364, 7, 5, 1),
            end
        ),
        pincer_line("result/error_max_turns")
    );
    let end = TurnEnd {
        steps: 1,
        last_text: "one ".into(),
        denials: Vec::new(),
    };
    assert_eq!(
        result(FinishReason::Aborted, &usage(None, 0, 0, 0, 0), end),
        pincer_line("result/error_during_execution/interrupted")
    );

    let recorded: Value =
        serde_json::from_str(&pincer_line("control_request/can_use_tool")).expect("JSON");
    assert_eq!(
        serde_json::to_value(suggestions("write_file", "a.txt")).expect("JSON"),
        recorded["request"]["permission_suggestions"]
    );
}
