//! MCP tools on the first turn: `pincer chat -m` waits (up to `mcp.connect_wait_secs`)
//! for a stdio server that is still starting, so its tools are offered at once; a server
//! that takes longer than that is left out and the turn goes on without it.

use pincer_fakes::{FakeModel, Step};
use serde_json::json;

use crate::common::{TestHome, fake_mcp, openai_config};

fn home(model: &FakeModel, extra: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&openai_config(
        model,
        &format!(
            "{extra}\n[mcp.servers.weather]\ncommand = \"{}\"\nargs = [\"--slow-start\", \"1500\"]\n",
            fake_mcp()
        ),
    ));
    home
}

fn offered(model: &FakeModel) -> Vec<String> {
    model.requests()[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_m_calls_a_slow_starting_servers_tool_on_the_first_turn() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push(Step::tool_call(
        "mcp__weather__echo",
        json!({"text": "sunny, 21 degrees"}),
    ));
    model.push(Step::text("It is sunny."));
    let run = home.run(&["chat", "-m", "use the weather server: what is it like?"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout.trim(), "It is sunny.");
    assert!(offered(&model).contains(&"mcp__weather__echo".to_string()));
    let second = model.requests()[1].body.to_string();
    assert!(
        second.contains("sunny, 21 degrees"),
        "the tool ran: {second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_than_connect_wait_is_left_out_of_the_turn() {
    let model = FakeModel::start().await;
    let home = home(&model, "[mcp]\nconnect_wait_secs = 0\n");
    let run = home.run(&["chat", "-m", "hello"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout.trim(), "echo: hello");
    assert!(
        !offered(&model).iter().any(|t| t.starts_with("mcp__")),
        "{:?}",
        offered(&model)
    );
}
