//! The locked tool set of seed 004: the 13 ids all work (`read`, `write`, `edit`, `bash`
//! by their aliases), `question` is answered by the host or refused where nobody can
//! answer, and `tool_search` finds MCP tools beyond the first 20.

use pincer_fakes::{FakeModel, Step};
use serde_json::json;

use super::rig::Proc;
use crate::common::{TestHome, fake_mcp, openai_config};

fn home(model: &FakeModel, extra: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&openai_config(
        model,
        &format!("[tools.exec]\nsandbox = \"off\"\n{extra}"),
    ));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    home
}

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    crate::common::trust::tool_names(body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_thirteen_locked_ids_all_answer() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    std::fs::create_dir_all(home.workspace().join("skills/hello")).expect("skills");
    std::fs::write(
        home.workspace().join("skills/hello/SKILL.md"),
        "---\nname: hello\ndescription: say hello\n---\nSay hello warmly.\n",
    )
    .expect("skill");
    model.push_all([
        Step::tool_calls([("write", json!({"path": "n.txt", "content": "one two"}))]),
        Step::tool_calls([(
            "edit",
            json!({"path": "n.txt", "old_text": "two", "new_text": "three"}),
        )]),
        Step::tool_calls([
            ("read", json!({"path": "n.txt"})),
            ("glob", json!({"pattern": "*.txt"})),
            ("grep", json!({"pattern": "three"})),
            ("skill", json!({"name": "hello"})),
            ("web_fetch", json!({"url": "http://127.0.0.1:1/"})),
            ("web_search", json!({"query": "x"})),
        ]),
        Step::tool_calls([
            ("bash", json!({"command": "cat n.txt"})),
            ("todo", json!({"items": [{"text": "check", "done": true}]})),
            ("task", json!({"description": "look", "prompt": "say done"})),
            ("question", json!({"question": "ok?"})),
        ]),
        Step::text("All tried."),
    ]);
    let run = home.run(&["chat", "-m", "try every tool"]);
    assert!(run.ok(), "{run:?}");
    let requests = model.requests();
    let results = |i: usize| requests[i].body.to_string();
    assert!(std::fs::read_to_string(home.workspace().join("n.txt")).unwrap() == "one three");
    let third = results(3);
    assert!(third.contains("one three"), "read: {third}");
    assert!(third.contains("n.txt"), "glob/grep: {third}");
    assert!(third.contains("Say hello warmly."), "skill: {third}");
    // Every id is a known tool: none came back unknown.
    for i in 1..requests.len() {
        assert!(
            !results(i).contains("unknown tool"),
            "request {i}: {}",
            results(i)
        );
    }
    let last = requests
        .iter()
        .rev()
        .find(|r| !r.body.to_string().contains("working on one task"))
        .expect("last");
    let last = last.body.to_string();
    assert!(last.contains("one three"), "bash: {last}");
    assert!(
        last.contains("nobody can answer a question here"),
        "question, headless: {last}"
    );
    // The 13 ids' tools are all offered to the owner (whole, or named to load).
    let offered = crate::common::trust::offered_tools(&requests[0].body);
    for name in [
        "read_file",
        "write_file",
        "edit_file",
        "exec",
        "glob",
        "grep",
        "todo",
        "task",
        "skill",
        "web_search",
        "web_fetch",
        "question",
    ] {
        assert!(offered.contains(&name.to_string()), "{name}: {offered:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_search_finds_and_loads_an_mcp_tool_beyond_the_first_twenty() {
    let model = FakeModel::start().await;
    let home = home(
        &model,
        &format!(
            "[mcp.servers.fake]\ncommand = \"{}\"\nargs = [\"--extra-tools\", \"53\"]\nsandbox = false\ntrusted = true\n",
            fake_mcp()
        ),
    );
    model.push_all([
        Step::tool_call("tool_search", json!({"query": "weather city 45"})),
        Step::tool_call("mcp__fake__city_weather_45", json!({})),
        Step::text("Sunny in city 45."),
    ]);
    let run = home.run(&["chat", "-m", "what is the weather in city 45?"]);
    assert!(run.ok(), "{run:?}");
    let requests = model.requests();
    let first = tool_names(&requests[0].body);
    let mcp: Vec<&String> = first.iter().filter(|n| n.starts_with("mcp__")).collect();
    assert!(
        mcp.len() <= 20,
        "{} MCP schemas in the first request",
        mcp.len()
    );
    assert!(first.contains(&"tool_search".to_string()));
    assert!(!first.contains(&"mcp__fake__city_weather_45".to_string()));
    let second = tool_names(&requests[1].body);
    assert!(
        second.contains(&"mcp__fake__city_weather_45".to_string()),
        "{second:?}"
    );
    let third = requests[2].body.to_string();
    assert!(third.contains("weather in city 45: sunny"), "{third}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_by_the_host_through_can_use_tool() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push_all([
        Step::tool_call(
            "question",
            json!({"question": "Which colour?", "options": ["red", "blue"]}),
        ),
        Step::text("Blue it is."),
    ]);
    let mut agent = Proc::spawn(
        &home,
        &[
            "agent",
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
        ],
    );
    agent
        .send(json!({"type": "user", "message": {"role": "user", "content": "pick a colour"}}))
        .await;
    let ask = agent
        .until_type("control_request", Some("can_use_tool"))
        .await;
    assert_eq!(ask["request"]["tool_name"], "question");
    assert_eq!(ask["request"]["input"]["options"], json!(["red", "blue"]));
    let id = ask["request_id"].as_str().expect("id").to_string();
    agent
        .send(
            json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
            "response": {"behavior": "allow", "updatedInput": {"answer": "blue"}}}}),
        )
        .await;
    let result = agent.until_type("result", None).await;
    assert_eq!(result["result"], "Blue it is.");
    agent.finish().await;
    let second = model.requests()[1].body.to_string();
    assert!(second.contains("The user answered: blue"), "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_by_a_runner_host() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push_all([
        Step::tool_call(
            "question",
            json!({"question": "Which colour?", "options": ["red", "blue"]}),
        ),
        Step::text("Red it is."),
    ]);
    let mut runner = Proc::spawn(&home, &["agent", "--protocol", "runner"]);
    runner.until_type("ready", None).await;
    runner
        .send(json!({"type": "message", "content": "pick a colour"}))
        .await;
    let init = runner.until_type("init", None).await;
    assert!(
        init["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t == "question")),
        "{init}"
    );
    let ask = runner.until_type("user_question_request", None).await;
    assert_eq!(ask["questions"][0]["question"], "Which colour?");
    assert_eq!(ask["questions"][0]["options"][1]["label"], "blue");
    let id = ask["requestId"].as_str().expect("id").to_string();
    // Answered under the id the request carried, keyed by the question's text.
    runner
        .send(json!({"type": "user_question_response", "requestId": id,
                     "answers": {"Which colour?": "red"}}))
        .await;
    let result = runner.until_type("result", None).await;
    assert_eq!(result["summary"], "Red it is.");
    runner.send(json!({"type": "stop"})).await;
    runner.finish().await;
    let second = model.requests()[1].body.to_string();
    assert!(second.contains("The user answered: red"), "{second}");
}
