//! `pincer chat` end to end: the real binary against the fake model, through both
//! wire formats, with a scripted tool conversation and piped input.

use crate::common;

use common::{TestHome, WAIT};
use pincer_fakes::{FakeModel, Format, Step};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_m_streams_a_reply_through_the_openai_format() {
    let fake = FakeModel::start().await;
    fake.require_key("sk-openai-test");
    let home = TestHome::openai(&fake);
    home.write_secrets("providers:\n  fake:\n    api_key: \"sk-openai-test\"\n");
    fake.push(Step::text("Hello from the model, in several words."));
    let run = home.run(&["chat", "-m", "hi there"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "Hello from the model, in several words.\n");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].format, Format::OpenAi);
    assert_eq!(requests[0].body["stream"], json!(true));
    assert_eq!(requests[0].last_user_text(), "hi there");
    assert!(!run.stderr.contains("sk-openai-test"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_m_streams_a_reply_through_the_anthropic_format() {
    let fake = FakeModel::start().await;
    fake.require_key("sk-ant-test");
    let home = TestHome::new();
    home.write_config(&format!(
        "version = 1\n[router]\nlight = [\"claude/m\"]\n[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\n",
        fake.anthropic_base()
    ));
    home.write_secrets("providers:\n  claude:\n    api_keys: [\"sk-ant-test\"]\n");
    fake.push(Step::text("Bonjour from Claude."));
    let run = home.run(&["chat", "-m", "salut"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "Bonjour from Claude.\n");
    let request = &fake.requests()[0];
    assert_eq!(request.format, Format::Anthropic);
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    // The system prompt is marked cacheable and holds no clock; the time rides on the message.
    let system = request.body["system"].as_array().expect("system blocks");
    assert_eq!(system[0]["cache_control"]["type"], "ephemeral");
    assert!(
        !system[0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("2026-")
    );
    let stamp = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(
        request.last_user_text_raw().contains(&stamp),
        "{}",
        request.last_user_text_raw()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_tool_conversation_runs_the_tool_and_answers_with_its_result() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    std::fs::create_dir_all(home.workspace()).unwrap();
    std::fs::write(home.workspace().join("plan.md"), "ship on friday\n").unwrap();
    fake.push(Step::tool_call("read_file", json!({"path": "plan.md"})));
    fake.push(Step::text("The plan says: ship on friday."));
    let run = home.run(&["chat", "-m", "what does my plan say?"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "The plan says: ship on friday.\n");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    // The second call carries the tool's real output back to the model.
    let messages = requests[1].body["messages"].as_array().unwrap();
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    assert!(
        tool["content"].as_str().unwrap().contains("ship on friday"),
        "{tool}"
    );
    // And the tools were offered, sorted by name.
    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.contains(&"read_file"));
    let transcript = home.transcript();
    assert!(transcript.contains("→ read_file"), "{transcript}");
    assert!(transcript.contains("ship on friday"), "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_writes_inside_the_workspace_and_cannot_escape_it() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    fake.push(Step::tool_calls([
        (
            "write_file",
            json!({"path": "notes/todo.md", "content": "milk\n"}),
        ),
        (
            "write_file",
            json!({"path": "../escaped.md", "content": "nope"}),
        ),
    ]));
    fake.push(Step::text("Saved."));
    let run = home.run(&["chat", "-m", "note milk"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("notes/todo.md")).unwrap(),
        "milk\n"
    );
    assert!(!home.path().join("escaped.md").exists());
    let messages = fake.requests()[1].body["messages"].clone();
    assert!(
        messages.to_string().contains("outside the workspace"),
        "{messages}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_lines_are_answered_in_order_one_per_line() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    let run = home.run_with_stdin(&["chat"], "first\nsecond\n\nthird\n");
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "echo: first\necho: second\necho: third\n");
    let seen: Vec<String> = fake
        .wait_for_requests(3, WAIT)
        .await
        .iter()
        .map(|r| r.last_user_text())
        .collect();
    assert_eq!(seen, ["first", "second", "third"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_is_not_utf8_is_read_lossily_and_the_chat_goes_on() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    let run = home.run_with_bytes(&["chat"], b"first\ncaf\xe9 au lait\nthird\n");
    assert!(run.ok(), "{run:?}");
    assert_eq!(
        run.stdout,
        "echo: first\necho: caf\u{fffd} au lait\necho: third\n"
    );
    assert!(run.stderr.contains("not UTF-8"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_survives_restarts_and_new_starts_a_fresh_one() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    assert!(home.run(&["chat", "-m", "my name is Ada"]).ok());
    assert!(home.run(&["chat", "-m", "what is my name?"]).ok());
    let second = &fake.requests()[1];
    assert!(
        second.body["messages"]
            .to_string()
            .contains("my name is Ada"),
        "history must be sent"
    );
    let run = home.run(&["chat", "-m", "/new"]);
    assert!(
        run.ok() && run.stdout.contains("new conversation"),
        "{run:?}"
    );
    assert!(home.run(&["chat", "-m", "fresh start"]).ok());
    let third = &fake.requests()[2];
    assert!(
        !third.body["messages"]
            .to_string()
            .contains("my name is Ada")
    );
    let list = home.run(&["sessions", "list"]);
    assert_eq!(
        list.stdout.matches("terminal:dm:local").count(),
        2,
        "{}",
        list.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_commands_are_answered_without_the_model() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    let run = home.run_with_stdin(&["chat"], "/help\n/status\n/stop\n");
    assert!(run.ok(), "{run:?}");
    assert!(run.stdout.contains("/new"), "{}", run.stdout);
    assert!(
        run.stdout.contains("Session terminal:dm:local"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("fake/m"), "{}", run.stdout);
    assert!(run.stdout.contains("Nothing is running"), "{}", run.stdout);
    assert!(
        fake.requests().is_empty(),
        "commands must not reach the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_by_the_output_limit_is_continued() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    fake.push(Step::Truncated("The first half".into()));
    fake.push(Step::text(" and the second half."));
    let run = home.run(&["chat", "-m", "tell me"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "The first half and the second half.\n");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_gates_end_the_turn_with_a_reason() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &fake,
        "[agent]\nmax_iterations = 2\n",
    ));
    for _ in 0..5 {
        fake.push(Step::tool_call("list_dir", json!({"path": "."})));
    }
    let run = home.run(&["chat", "-m", "loop forever"]);
    assert_eq!(
        fake.requests().len(),
        2,
        "the gate must stop the third model call"
    );
    run.fails_with(&["agent.max_iterations"]);
    // The last tool call still got its result in the transcript.
    assert!(home.transcript().matches("← list_dir").count() == 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cost_budgets_stop_a_turn_and_a_day() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    // A price high enough that one call spends the turn's budget.
    let extra = "[agent]\nmax_turn_cost_usd = 0.01\nmax_day_cost_usd = 0.05\n[prices.\"fake/m\"]\ninput = 100.0\noutput = 100.0\n";
    home.write_config(&common::openai_config(&fake, extra));
    fake.push(Step::tool_call("list_dir", json!({"path": "."})));
    let run = home.run(&["chat", "-m", "look around"]);
    run.fails_with(&["agent.max_turn_cost_usd"]);
    assert_eq!(
        fake.requests().len(),
        1,
        "no second call after the turn budget is spent"
    );
    // Keep spending until the day's budget is gone; then nothing reaches the model.
    let mut refused = false;
    for n in 0..20 {
        let run = home.run(&["chat", "-m", &format!("again {n}")]);
        if run.stderr.contains("agent.max_day_cost_usd") {
            refused = true;
            break;
        }
    }
    assert!(refused, "the day budget never closed");
    let before = fake.requests().len();
    let run = home.run(&["chat", "-m", "one more"]);
    run.fails_with(&["agent.max_day_cost_usd"]);
    assert_eq!(
        fake.requests().len(),
        before,
        "a closed day budget sends nothing to the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_past_its_wall_clock_limit_is_stopped() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &fake,
        "[agent]\nmax_turn_secs = 1\n",
    ));
    fake.push(Step::slow_text(
        "one two three four five six seven eight",
        400,
    ));
    let run = home.run(&["chat", "-m", "slowly please"]);
    run.fails_with(&["agent.max_turn_secs"]);
    // What was shown before the stop is kept.
    assert!(
        home.transcript().contains("assistant: one"),
        "{}",
        home.transcript()
    );
}
