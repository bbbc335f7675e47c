//! `pincer agent --protocol runner`: seed 001's lines — ready, a two-turn conversation
//! with tool calls the host allows and denies, an interrupt, plan mode with its
//! approval request, set_model, and resuming.

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use super::rig::{Proc, of_type};
use crate::common::{TestHome, openai_config};

fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new();
    home.write_config(&openai_config(model, ""));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    home
}

fn message(text: &str) -> Value {
    json!({"type": "message", "content": text})
}

/// Each tool_end follows its tool_start.
fn check_order(lines: &[Value]) {
    let mut started = std::collections::HashSet::new();
    for line in lines {
        match line["type"].as_str() {
            Some("tool_start") => {
                started.insert(line["id"].as_str().unwrap_or_default().to_string());
            }
            Some("tool_end") => assert!(
                started.contains(line["id"].as_str().unwrap_or_default()),
                "tool_end before its tool_start: {line}"
            ),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_with_allowed_and_denied_calls_then_stop() {
    let model = FakeModel::start().await;
    let home = home(&model);
    model.push_all([
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "one"})),
        Step::text("Done one.\n\nAnd a second paragraph."),
        Step::tool_call("write_file", json!({"path": "b.txt", "content": "two"})),
        Step::text("Skipped two."),
    ]);
    let mut runner = Proc::spawn(
        &home,
        &[
            "agent",
            "--protocol",
            "runner",
            "--permission-mode",
            "default",
        ],
    );
    let ready = runner.until_type("ready", None).await;
    assert_eq!(ready["resuming"], false);
    runner.send(message("write a")).await;
    runner.until_type("init", None).await;
    let ask = runner.until_type("permission_request", None).await;
    assert_eq!(ask["tool"], "write_file");
    let id = ask["requestId"].as_str().expect("id").to_string();
    runner
        .send(json!({"type": "permission_response", "requestId": id, "allow": true}))
        .await;
    let result = runner.until_type("result", None).await;
    assert_eq!(result["success"], true);
    assert_eq!(result["summary"], "Done one.\n\nAnd a second paragraph.");
    runner.until_type("turn_complete", None).await;
    runner.send(message("write b")).await;
    let ask = runner.until_type("permission_request", None).await;
    let id = ask["requestId"].as_str().expect("id").to_string();
    runner
        .send(json!({"type": "permission_response", "requestId": id, "allow": false, "message": "no b"}))
        .await;
    runner.until_type("turn_complete", None).await;
    runner.send(json!({"type": "stop"})).await;
    let (code, lines) = runner.finish().await;
    assert_eq!(code, Some(0));
    assert!(home.workspace().join("a.txt").exists() && !home.workspace().join("b.txt").exists());
    let ends = of_type(&lines, "tool_end");
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0]["success"], true);
    assert_eq!(ends[1]["success"], false);
    assert!(
        ends[1]["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("no b")
    );
    // Text comes by paragraph.
    let texts: Vec<&str> = of_type(&lines, "assistant_text")
        .iter()
        .filter_map(|l| l["content"].as_str())
        .collect();
    assert!(texts.contains(&"Done one.\n\n"), "{texts:?}");
    assert!(texts.contains(&"And a second paragraph."), "{texts:?}");
    let last: Vec<&str> = lines
        .iter()
        .rev()
        .take(2)
        .filter_map(|l| l["type"].as_str())
        .collect();
    assert_eq!(last, ["shutdown", "complete"]);
    check_order(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_plan_mode_set_model_and_resume() {
    let model = FakeModel::start().await;
    let home = home(&model);
    home.write_config(&openai_config(&model, "").replace(
        "light = [\"fake/m\"]",
        "light = [\"fake/small\"]\nheavy = [\"fake/large\"]",
    ));
    model.push_all([
        Step::slow_text("one two three four five six seven eight nine ten", 300),
        Step::tool_call("exit_plan_mode", json!({"plan": "just read"})),
        Step::text("Not approved, staying in plan mode."),
    ]);
    let mut runner = Proc::spawn(&home, &["agent", "--protocol", "runner"]);
    let ready = runner.until_type("ready", None).await;
    let key = ready["conversationId"].as_str().expect("key").to_string();
    runner.send(message("count slowly")).await;
    runner.until_type("init", None).await;
    // Interrupt once the model is answering.
    model.wait_for_requests(1, crate::common::PATIENCE).await;
    runner.send(json!({"type": "interrupt"})).await;
    runner.until_type("interrupted", None).await;
    let stopped = runner.until_type("result", None).await;
    assert_eq!(stopped["success"], false);
    runner
        .send(json!({"type": "set_permission_mode", "permissionMode": "plan"}))
        .await;
    let changed = runner.until_type("permission_mode_changed", None).await;
    assert_eq!(changed["mode"], "plan");
    runner.send(message("make a plan")).await;
    let ask = runner.until_type("plan_approval_request", None).await;
    assert_eq!(ask["plan"], "just read");
    let id = ask["requestId"].as_str().expect("id").to_string();
    runner
        .send(json!({"type": "plan_approval_response", "planApprovalRequestId": id, "planApproved": false}))
        .await;
    let result = runner.until_type("result", None).await;
    assert_eq!(result["summary"], "Not approved, staying in plan mode.");
    runner
        .send(json!({"type": "set_model", "model": "fake/large"}))
        .await;
    let model_changed = runner.until_type("model_changed", None).await;
    assert_eq!(model_changed["model"], "fake/large");
    runner.send(message("and now?")).await;
    runner.until_type("turn_complete", None).await;
    runner.send(json!({"type": "stop"})).await;
    runner.finish().await;
    assert_eq!(model.requests().last().expect("a request").model(), "large");

    let mut again = Proc::spawn(&home, &["agent", "--protocol", "runner", "--session", &key]);
    let ready = again.until_type("ready", None).await;
    assert_eq!(ready["resuming"], true);
    again.send(message("what did I ask first?")).await;
    again.until_type("turn_complete", None).await;
    let request = model.requests().last().expect("a request").body.to_string();
    assert!(request.contains("count slowly"), "{request}");
    again.send(json!({"type": "stop"})).await;
    again.finish().await;
}
