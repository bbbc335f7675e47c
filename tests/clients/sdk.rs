//! `pincer agent` driven by the real `claude-agent-sdk` (Python), through
//! `examples/sdk/pincer-cli` as the docs tell its users to.

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use super::rig::{self, Ran};
use crate::common::{TestHome, openai_config};

fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new();
    home.write_config(&openai_config(model, ""));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    home
}

/// Run `sdk.py scenario` against `home`; `None` when the clients are not installed.
async fn sdk(home: &TestHome, scenario: &str, env: &[(&str, &str)]) -> Option<Ran> {
    let python = rig::python()?;
    let pincer = std::path::Path::new(env!("CARGO_BIN_EXE_pincer"));
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sdk/pincer-cli");
    let path = format!(
        "{}:{}",
        pincer.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut all = vec![
        ("PINCER_HOME", home.path().to_str().expect("utf-8 home")),
        ("PINCER_CLI", cli.to_str().expect("utf-8 path")),
        ("PATH", path.as_str()),
    ];
    all.extend_from_slice(env);
    Some(rig::run(&python, "sdk.py", &[scenario], &all).await)
}

/// The SDK's messages of `kind` (`AssistantMessage`, `ResultMessage`, `StreamEvent`…).
fn messages<'a>(ran: &'a Ran, kind: &str) -> Vec<&'a Value> {
    ran.events("message")
        .into_iter()
        .filter(|m| m["kind"] == kind)
        .collect()
}

fn texts(ran: &Ran) -> Vec<String> {
    messages(ran, "AssistantMessage")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|block| block["text"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_one_word_reply_reaches_the_sdk_as_text_and_as_a_streamed_delta() {
    let model = FakeModel::start().await;
    model.push(Step::text("Yes."));
    let home = home(&model);
    let Some(ran) = sdk(&home, "one_chunk", &[]).await else {
        return;
    };
    ran.succeeded();
    assert_eq!(texts(&ran), ["Yes."], "{ran}");
    let deltas: String = messages(&ran, "StreamEvent")
        .iter()
        .filter(|m| m["stream_event"]["type"] == "content_block_delta")
        .filter_map(|m| m["stream_event"]["delta"]["text"].as_str())
        .collect();
    assert_eq!(deltas, "Yes.", "{ran}");
    let result = messages(&ran, "ResultMessage")[0];
    assert_eq!(result["result"], "Yes.");
    assert_eq!(result["is_error"], false);
}

/// Everything the model was sent in request `n`, as one text.
fn sent(model: &FakeModel, n: usize) -> String {
    model.requests()[n].body.to_string()
}

#[tokio::test]
async fn the_sdks_hooks_are_called_and_their_decisions_honoured() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call("read_file", json!({"path": "notes.txt"})),
        Step::tool_call("exec", json!({"command": "touch pwned"})),
        Step::text("done"),
    ]);
    let home = home(&model);
    std::fs::write(home.workspace().join("notes.txt"), "the notes").expect("notes");
    let Some(ran) = sdk(&home, "hooks", &[]).await else {
        return;
    };
    ran.succeeded();
    let called: Vec<(String, String)> = ran
        .events("hook")
        .iter()
        .map(|h| {
            let tool = h["input"]["tool_name"].as_str().unwrap_or_default();
            (
                h["name"].as_str().unwrap_or_default().to_string(),
                tool.to_string(),
            )
        })
        .collect();
    let expected = [
        ("UserPromptSubmit", ""),
        ("PostToolUse", "read_file"),
        ("PreToolUse", "exec"),
        ("Stop", ""),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(called, expected, "{ran}");
    let pre = ran.events("hook")[2];
    assert_eq!(pre["input"]["hook_event_name"], "PreToolUse");
    assert_eq!(pre["input"]["tool_input"]["command"], "touch pwned");
    assert!(pre["input"]["session_id"].as_str().is_some(), "{pre}");
    // The denied command never ran, and was never put to can_use_tool.
    assert!(!home.workspace().join("pwned").exists());
    assert!(ran.events("can_use_tool").is_empty(), "{ran}");
    // What the hooks added reached the model: the prompt's context, the note on the
    // read, the reason for the refusal.
    assert!(sent(&model, 0).contains("the-prompt-hook-context"));
    assert!(sent(&model, 1).contains("the-post-hook-note"));
    assert!(sent(&model, 2).contains("no commands today"));
    let result = messages(&ran, "ResultMessage")[0];
    assert_eq!(result["result"], "done", "{ran}");
}

#[tokio::test]
async fn a_stop_hook_that_blocks_sends_the_model_back_with_its_reason() {
    let model = FakeModel::start().await;
    model.push_all([Step::text("hello"), Step::text("goodbye")]);
    let home = home(&model);
    let Some(ran) = sdk(&home, "stop_block", &[]).await else {
        return;
    };
    ran.succeeded();
    let stops = ran.events("hook");
    assert_eq!(stops.len(), 2, "{ran}");
    assert_eq!(stops[0]["input"]["stop_hook_active"], false);
    assert_eq!(stops[1]["input"]["stop_hook_active"], true);
    assert_eq!(model.requests().len(), 2);
    assert!(sent(&model, 1).contains("also say goodbye"));
    assert_eq!(texts(&ran), ["hello", "goodbye"], "{ran}");
    assert_eq!(messages(&ran, "ResultMessage")[0]["result"], "goodbye");
}

#[tokio::test]
async fn an_sdk_session_id_names_a_new_conversation_and_resumes_it() {
    let model = FakeModel::start().await;
    model.push(Step::text("first answer"));
    let home = home(&model);
    let uuid = "0b9c5a4e-3f1d-4c7a-9e2b-5d6f7a8b9c0d";
    let Some(ran) = sdk(&home, "session_id", &[("SESSION_UUID", uuid)]).await else {
        return;
    };
    ran.succeeded();
    let result = messages(&ran, "ResultMessage")[0];
    assert_eq!(result["session_id"], format!("terminal:dm:{uuid}"), "{ran}");
    assert_eq!(result["result"], "first answer");
}

#[tokio::test]
async fn max_turns_ends_the_turn_after_that_many_model_calls() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call("list_dir", json!({"path": "."})),
        Step::tool_call("list_dir", json!({"path": "."})),
        Step::text("never reached"),
    ]);
    let home = home(&model);
    let Some(ran) = sdk(&home, "max_turns", &[]).await else {
        return;
    };
    let result = messages(&ran, "ResultMessage")[0];
    assert_eq!(result["subtype"], "error_max_turns", "{ran}");
    assert_eq!(result["is_error"], true);
    assert_eq!(model.requests().len(), 1, "{ran}");
}

#[tokio::test]
async fn permission_requests_carry_what_the_cli_sends_and_session_rules_are_kept() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "one"})),
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "two"})),
        Step::tool_call("exec", json!({"command": "touch b"})),
        Step::text("ok"),
    ]);
    let home = home(&model);
    let Some(ran) = sdk(&home, "permissions", &[]).await else {
        return;
    };
    ran.succeeded();
    // Asked once for the write (the rule the host added covers the second), once for
    // the command.
    let asked = ran.events("can_use_tool");
    let tools: Vec<&str> = asked.iter().filter_map(|a| a["tool"].as_str()).collect();
    assert_eq!(tools, ["write_file", "exec"], "{ran}");
    let write = asked[0];
    assert_eq!(write["blocked_path"], "a.txt", "{write}");
    assert!(
        write["description"]
            .as_str()
            .is_some_and(|d| d.contains("a.txt"))
    );
    assert_eq!(write["suggestions"][0]["type"], "addRules", "{write}");
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("a.txt")).expect("written"),
        "two"
    );
    assert!(!home.workspace().join("b").exists());
    // The refusal is listed with its call's id.
    let result = messages(&ran, "ResultMessage")[0];
    let denials = result["permission_denials"].as_array().expect("denials");
    assert_eq!(denials.len(), 1, "{result}");
    assert_eq!(denials[0]["tool_name"], "exec");
    assert!(
        denials[0]["tool_use_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    // Each model call ends as the CLI's do: tool_use while it made calls, then end_turn.
    let stops: Vec<&str> = messages(&ran, "StreamEvent")
        .iter()
        .filter(|m| m["stream_event"]["type"] == "message_delta")
        .filter_map(|m| m["stream_event"]["delta"]["stop_reason"].as_str())
        .collect();
    assert_eq!(
        stops,
        ["tool_use", "tool_use", "tool_use", "end_turn"],
        "{ran}"
    );
}

#[tokio::test]
async fn dont_ask_refuses_what_would_be_asked_without_asking() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call("exec", json!({"command": "touch ran"})),
        Step::text("refused"),
    ]);
    let home = home(&model);
    let Some(ran) = sdk(&home, "dont_ask", &[]).await else {
        return;
    };
    ran.succeeded();
    assert!(ran.events("can_use_tool").is_empty(), "{ran}");
    assert!(!home.workspace().join("ran").exists());
    assert!(sent(&model, 1).contains("dontAsk"));
}

#[tokio::test]
async fn fork_session_goes_on_in_a_copy_and_leaves_the_original_alone() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::text("noted"),
        Step::text("forked"),
        Step::text("original"),
    ]);
    let home = home(&model);
    let Some(ran) = sdk(&home, "fork", &[]).await else {
        return;
    };
    ran.succeeded();
    let results = messages(&ran, "ResultMessage");
    assert_eq!(results.len(), 3, "{ran}");
    let (original, fork) = (&results[0]["session_id"], &results[1]["session_id"]);
    assert_ne!(original, fork, "{ran}");
    assert_eq!(&results[2]["session_id"], original);
    // The fork saw the original's history; the original never saw the fork's message.
    assert!(sent(&model, 1).contains("remember the original"));
    let back = sent(&model, 2);
    assert!(back.contains("remember the original") && !back.contains("only in the fork"));
}

#[tokio::test]
async fn context_usage_and_mcp_status_answer_the_sdks_calls() {
    let model = FakeModel::start().await;
    model.push(Step::text("hello"));
    let home = TestHome::new();
    home.write_config(&openai_config(
        &model,
        &format!(
            "[mcp.servers.files]\ncommand = \"{}\"\n",
            crate::common::fake_mcp()
        ),
    ));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    let Some(ran) = sdk(&home, "status", &[]).await else {
        return;
    };
    ran.succeeded();
    let usage = &ran.event("context_usage")["value"];
    assert!(
        usage["totalTokens"].as_u64().is_some_and(|t| t > 0),
        "{ran}"
    );
    assert!(
        usage["maxTokens"].as_u64().is_some_and(|t| t > 0),
        "{usage}"
    );
    assert_eq!(usage["model"], "fake/m");
    let servers = &ran.event("mcp_status")["value"]["mcpServers"];
    assert_eq!(servers[0]["name"], "files", "{ran}");
    assert!(servers[0]["status"].as_str().is_some(), "{servers}");
}

#[tokio::test]
async fn an_interrupt_from_the_sdk_ends_the_turn_and_the_next_one_answers() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::slow_text("one two three four five six seven eight nine ten", 300),
        Step::text("Here."),
    ]);
    let home = home(&model);
    let Some(ran) = sdk(&home, "interrupt", &[]).await else {
        return;
    };
    ran.succeeded();
    let results = messages(&ran, "ResultMessage");
    assert_eq!(results.len(), 2, "{ran}");
    assert_eq!(results[0]["is_error"], true, "{ran}");
    assert!(results[0]["num_turns"].as_u64().is_some_and(|n| n >= 1));
    assert_eq!(results[1]["result"], "Here.");
    assert_eq!(results[1]["is_error"], false);
}

#[tokio::test]
async fn an_sdks_in_process_mcp_server_is_listed_asked_about_and_called_through_mcp_message() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call("mcp__calc__add", json!({"a": 2, "b": 3})),
        Step::text("5"),
    ]);
    let home = home(&model);
    let Some(ran) = sdk(&home, "sdk_mcp", &[]).await else {
        return;
    };
    ran.succeeded();
    // The model was offered the SDK's tool, under the CLI's name, with its description.
    let offered = sent(&model, 0);
    assert!(offered.contains("mcp__calc__add"), "{offered}");
    assert!(offered.contains("Add two whole numbers"), "{offered}");
    // The owner's program was asked, then its function ran with the model's arguments.
    assert_eq!(ran.event("can_use_tool")["tool"], "mcp__calc__add", "{ran}");
    assert_eq!(
        ran.event("tool_called")["args"],
        json!({"a": 2, "b": 3}),
        "{ran}"
    );
    // Its answer went back to the model.
    assert!(
        sent(&model, 1).contains("the sum is 5"),
        "{}",
        sent(&model, 1)
    );
    assert_eq!(messages(&ran, "ResultMessage")[0]["result"], "5", "{ran}");
    let servers = &ran.event("mcp_status")["value"]["mcpServers"];
    assert_eq!(servers[0]["name"], "calc", "{ran}");
    assert_eq!(servers[0]["status"], "connected", "{servers}");
}

#[tokio::test]
async fn the_model_can_enter_plan_mode_and_then_only_reads_until_it_presents_a_plan() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call("enter_plan_mode", json!({})),
        Step::tool_call("write_file", json!({"path": "early.txt", "content": "x"})),
        Step::text("Here is the plan."),
    ]);
    let home = home(&model);
    let Some(ran) = sdk(&home, "enter_plan", &[]).await else {
        return;
    };
    ran.succeeded();
    let offered = |n: usize| crate::common::trust::tool_names(&model.requests()[n].body);
    assert!(
        offered(0).contains(&"enter_plan_mode".to_string()),
        "{:?}",
        offered(0)
    );
    assert!(!offered(0).contains(&"exit_plan_mode".to_string()));
    // In plan mode: the way out is offered, writing is not, and a write is refused.
    assert!(
        offered(1).contains(&"exit_plan_mode".to_string()),
        "{:?}",
        offered(1)
    );
    assert!(!offered(1).contains(&"write_file".to_string()));
    assert!(!offered(1).contains(&"enter_plan_mode".to_string()));
    assert!(sent(&model, 2).contains("does not run in plan mode"));
    assert!(!home.workspace().join("early.txt").exists());
    // A hook matching the CLI's name saw the call; nobody was asked about it.
    assert_eq!(
        ran.event("hook")["input"]["tool_name"],
        "enter_plan_mode",
        "{ran}"
    );
    assert!(ran.events("can_use_tool").is_empty(), "{ran}");
}
