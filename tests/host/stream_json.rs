//! `pincer agent --protocol stream-json` as the Claude Agent SDKs drive it: a two-turn
//! conversation with tool calls approved (with changed input) and denied by the host,
//! an interrupt mid-stream, plan mode and exit_plan_mode, set_model, and resuming a
//! stored conversation.

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use super::rig::{Proc, check_stream_json, of_type};
use crate::common::{TestHome, openai_config};

/// The flags the Python SDK passes when it has a `can_use_tool` callback.
pub(super) const SDK: &[&str] = &[
    "agent",
    "--output-format",
    "stream-json",
    "--verbose",
    "--system-prompt",
    "",
    "--input-format",
    "stream-json",
    "--permission-prompt-tool",
    "stdio",
    "--setting-sources=",
];

pub(super) fn home(model: &FakeModel, extra: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&openai_config(model, extra));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    home
}

pub(super) fn user(text: &str) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": text},
           "parent_tool_use_id": null, "session_id": "default"})
}

pub(super) fn control(id: &str, request: Value) -> Value {
    json!({"type": "control_request", "request_id": id, "request": request})
}

pub(super) fn allow(id: &str, input: Value) -> Value {
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
           "response": {"behavior": "allow", "updatedInput": input}}})
}

fn deny(id: &str, message: &str) -> Value {
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
           "response": {"behavior": "deny", "message": message, "interrupt": false}}})
}

pub(super) async fn initialize(agent: &mut Proc) {
    agent
        .send(control(
            "req_1",
            json!({"subtype": "initialize", "hooks": null}),
        ))
        .await;
    let answer = agent.until_type("control_response", None).await;
    assert_eq!(answer["response"]["subtype"], "success", "{answer}");
    assert_eq!(answer["response"]["request_id"], "req_1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_with_a_call_the_host_changes_and_one_it_denies() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push_all([
        Step::tool_call(
            "write_file",
            json!({"path": "notes.txt", "content": "draft"}),
        ),
        Step::text("Wrote it."),
        Step::tool_call("write_file", json!({"path": "secret.txt", "content": "x"})),
        Step::text("Could not."),
    ]);
    let mut agent = Proc::spawn(&home, SDK);
    initialize(&mut agent).await;

    agent.send(user("write my notes")).await;
    let init = agent.until_type("system", Some("init")).await;
    assert_eq!(init["permissionMode"], "default");
    let key = init["session_id"].as_str().expect("session id").to_string();
    assert!(key.starts_with("terminal:dm:agent-"), "{key}");
    let tools = init["tools"].as_array().expect("tools");
    for name in ["read_file", "write_file", "exec", "question"] {
        assert!(tools.iter().any(|tool| tool == name), "{name} in {tools:?}");
    }
    let ask = agent
        .until_type("control_request", Some("can_use_tool"))
        .await;
    assert_eq!(ask["request"]["tool_name"], "write_file");
    assert_eq!(ask["request"]["input"]["content"], "draft");
    assert!(
        ask["request"]["tool_use_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    let id = ask["request_id"].as_str().expect("request id").to_string();
    agent
        .send(allow(
            &id,
            json!({"path": "notes.txt", "content": "approved text"}),
        ))
        .await;
    let first = agent.until_type("result", None).await;
    assert_eq!(first["subtype"], "success", "{first}");
    assert_eq!(first["result"], "Wrote it.");
    assert_eq!(first["session_id"], key);
    assert_eq!(first["num_turns"], 2);
    assert!(first["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0);
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("notes.txt")).expect("written"),
        "approved text",
        "the host's changed input is what ran"
    );

    agent.send(user("and the secret")).await;
    let ask = agent
        .until_type("control_request", Some("can_use_tool"))
        .await;
    let id = ask["request_id"].as_str().expect("request id").to_string();
    agent.send(deny(&id, "not that file")).await;
    let second = agent.until_type("result", None).await;
    assert_eq!(second["result"], "Could not.");
    assert_eq!(second["permission_denials"][0]["tool_name"], "write_file");
    assert!(!home.workspace().join("secret.txt").exists());

    let (code, lines) = agent.finish().await;
    assert_eq!(code, Some(0));
    let results: Vec<_> = of_type(&lines, "user")
        .iter()
        .flat_map(|l| {
            l["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[1]["is_error"], true);
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("not that file")
    );
    let tool_uses = of_type(&lines, "assistant")
        .iter()
        .filter(|l| l["message"]["content"][0]["type"] == "tool_use")
        .count();
    assert_eq!(tool_uses, 2);
    check_stream_json(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_mid_stream_ends_the_turn_and_the_next_one_runs() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push(Step::slow_text(
        "a very long answer that takes its time to arrive word by word",
        300,
    ));
    let mut args = SDK.to_vec();
    args.push("--include-partial-messages");
    let mut agent = Proc::spawn(&home, &args);
    initialize(&mut agent).await;
    agent.send(user("tell me a long story")).await;
    agent
        .until("a text delta", |v| {
            v["type"] == "stream_event" && v["event"]["delta"]["type"] == "text_delta"
        })
        .await;
    agent
        .send(control("req_2", json!({"subtype": "interrupt"})))
        .await;
    let answer = agent
        .until("the interrupt's answer", |v| {
            v["type"] == "control_response" && v["response"]["request_id"] == "req_2"
        })
        .await;
    assert_eq!(answer["response"]["subtype"], "success");
    let stopped = agent.until_type("result", None).await;
    assert_eq!(stopped["subtype"], "error_during_execution", "{stopped}");
    assert_eq!(stopped["is_error"], true);
    agent.send(user("ok, short then")).await;
    let next = agent.until_type("result", None).await;
    assert_eq!(next["result"], "echo: ok, short then");
    let (code, lines) = agent.finish().await;
    assert_eq!(code, Some(0), "the last turn succeeded");
    check_stream_json(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_refuses_writes_and_exit_plan_mode_goes_to_the_host() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push_all([
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "x"})),
        Step::tool_call("exit_plan_mode", json!({"plan": "1. write a.txt"})),
        Step::text("Plan approved; writing now."),
    ]);
    let mut agent = Proc::spawn(&home, SDK);
    initialize(&mut agent).await;
    agent
        .send(control(
            "req_2",
            json!({"subtype": "set_permission_mode", "mode": "plan"}),
        ))
        .await;
    let answer = agent.until_type("control_response", None).await;
    assert_eq!(answer["response"]["response"]["mode"], "plan");
    agent.send(user("plan the file")).await;
    let ask = agent
        .until_type("control_request", Some("can_use_tool"))
        .await;
    assert_eq!(ask["request"]["tool_name"], "exit_plan_mode");
    assert_eq!(ask["request"]["input"]["plan"], "1. write a.txt");
    let id = ask["request_id"].as_str().expect("id").to_string();
    agent
        .send(allow(&id, json!({"plan": "1. write a.txt"})))
        .await;
    let done = agent.until_type("result", None).await;
    assert_eq!(done["result"], "Plan approved; writing now.");
    let (_, lines) = agent.finish().await;
    let results: Vec<String> = of_type(&lines, "user")
        .iter()
        .flat_map(|l| {
            l["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|b| b["content"].as_str().map(str::to_string))
        .collect();
    assert!(
        results[0].contains("does not run in plan mode"),
        "{results:?}"
    );
    assert!(results[1].contains("approved the plan"), "{results:?}");
    assert!(!home.workspace().join("a.txt").exists());
    // Plan mode offered reading tools and the way out, nothing that writes.
    let offered: Vec<String> = model.requests()[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        offered.contains(&"exit_plan_mode".to_string()),
        "{offered:?}"
    );
    assert!(offered.contains(&"read_file".to_string()));
    assert!(!offered.contains(&"write_file".to_string()) && !offered.contains(&"exec".to_string()));
    check_stream_json(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_model_pins_the_conversation_and_a_stored_one_is_resumed() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    home.write_config(&openai_config(&model, "").replace(
        "light = [\"fake/m\"]",
        "light = [\"fake/small\"]\nheavy = [\"fake/large\"]",
    ));
    let mut agent = Proc::spawn(&home, SDK);
    initialize(&mut agent).await;
    agent
        .send(control(
            "req_2",
            json!({"subtype": "set_model", "model": "fake/large"}),
        ))
        .await;
    let answer = agent.until_type("control_response", None).await;
    assert_eq!(
        answer["response"]["response"]["model"], "fake/large",
        "{answer}"
    );
    agent.send(user("remember the word heron")).await;
    let first = agent.until_type("result", None).await;
    let key = first["session_id"].as_str().expect("key").to_string();
    let (code, _) = agent.finish().await;
    assert_eq!(code, Some(0));
    assert_eq!(model.requests()[0].model(), "large");

    // A new process resumes the conversation by its key, as an SDK's `resume` does.
    let mut args = SDK.to_vec();
    args.extend(["--resume", key.as_str()]);
    let mut again = Proc::spawn(&home, &args);
    again.send(user("which word?")).await;
    let second = again.until_type("result", None).await;
    assert_eq!(second["session_id"], key);
    let request = model.requests().last().expect("a request").body.to_string();
    assert!(request.contains("remember the word heron"), "{request}");
    again.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_stdio_prompt_tool_a_call_that_asks_is_refused_with_the_reason() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push_all([
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "x"})),
        Step::text("Blocked."),
    ]);
    let mut agent = Proc::spawn(&home, &["agent"]);
    agent.send(user("write it")).await;
    let done = agent.until_type("result", None).await;
    assert_eq!(done["result"], "Blocked.");
    let (_, lines) = agent.finish().await;
    let refused = of_type(&lines, "user")
        .iter()
        .any(|l| l.to_string().contains("--permission-prompt-tool stdio"));
    assert!(refused, "{lines:#?}");
}

/// Seed 002 §6: an adapter answers with `request_id` beside `response` and
/// `{"subtype": "allow"}` / `{"subtype": "deny"}` in place of `behavior`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_adapter_answer_form_of_seed_002_is_understood() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push_all([
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "yes"})),
        Step::tool_call("write_file", json!({"path": "b.txt", "content": "no"})),
        Step::text("Done."),
    ]);
    let mut agent = Proc::spawn(&home, SDK);
    initialize(&mut agent).await;
    agent.send(user("write two files")).await;
    for (subtype, path) in [("allow", "a.txt"), ("deny", "b.txt")] {
        let ask = agent
            .until_type("control_request", Some("can_use_tool"))
            .await;
        assert_eq!(ask["request"]["input"]["path"], path);
        let id = ask["request_id"].as_str().expect("request id");
        agent
            .send(json!({"request_id": id, "type": "control_response",
                         "response": {"subtype": subtype, "message": "not this one"}}))
            .await;
    }
    let result = agent.until_type("result", None).await;
    assert_eq!(result["result"], "Done.", "{result}");
    assert!(home.workspace().join("a.txt").exists());
    assert!(!home.workspace().join("b.txt").exists());
    assert_eq!(result["permission_denials"][0]["tool_name"], "write_file");
}

/// A subagent works in its parent's mode: in `default`, its command is asked of the
/// host like the parent's would be (it ran unasked before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_calls_are_asked_of_the_host_as_its_parents_are() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push_all([
        Step::tool_call(
            "task",
            json!({"description": "touch", "prompt": "make a file"}),
        ),
        Step::tool_call("exec", json!({"command": "touch from-the-child"})),
        Step::text("could not"),
        Step::text("The task could not."),
    ]);
    let mut agent = Proc::spawn(&home, SDK);
    initialize(&mut agent).await;
    agent.send(user("delegate it")).await;
    let mut asked = Vec::new();
    loop {
        let line = agent
            .until("a question or the result", |v| {
                v["type"] == "result" || v["request"]["subtype"] == "can_use_tool"
            })
            .await;
        if line["type"] == "result" {
            break;
        }
        let tool = line["request"]["tool_name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let id = line["request_id"].as_str().expect("request id").to_string();
        if tool == "exec" {
            agent.send(deny(&id, "not from a subagent")).await;
        } else {
            agent
                .send(allow(&id, line["request"]["input"].clone()))
                .await;
        }
        asked.push(tool);
    }
    assert!(asked.contains(&"exec".to_string()), "asked about {asked:?}");
    assert!(!home.workspace().join("from-the-child").exists());
}
