//! Tool calls a model wrote as text run as calls: the person never sees the call's
//! JSON, the tool runs, and the model gets its result; `text_tool_calls = "off"`
//! leaves the text alone. A reply that ran away runs none of the calls it wrote, and a
//! reply cut short keeps only what the person saw of it.

use std::time::Duration;

use pincer_fakes::{FakeModel, Step};

use crate::common::{TestHome, openai_config};

/// The reply Qwen2.5-Coder gave in issue 34: the call in a fenced JSON block, as text.
fn fenced_call() -> Step {
    Step::text("```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```")
}

fn home(model: &FakeModel, extra: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!("{}{extra}", openai_config(model, "")));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    std::fs::write(home.workspace().join("notes.txt"), "buy oat milk").expect("notes");
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_written_as_text_runs_and_is_never_shown() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push(fenced_call());
    model.push(Step::text("Your notes say: buy oat milk."));
    let run = home.run(&["chat", "-m", "what do my notes say?"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(
        run.stdout.trim(),
        "Your notes say: buy oat milk.",
        "{run:?}"
    );
    let requests = model.wait_for_requests(2, Duration::from_secs(5)).await;
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().expect("messages");
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"].as_array())
        .expect("the call went back as a structured call");
    assert_eq!(call[0]["function"]["name"], "read_file");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("its result went back");
    assert_eq!(result["tool_call_id"], call[0]["id"]);
    assert!(
        result["content"]
            .as_str()
            .unwrap_or_default()
            .contains("buy oat milk"),
        "{result}"
    );
    let transcript = home.transcript();
    assert!(!transcript.contains("```"), "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_text_tool_calls_off_the_text_stays_text() {
    let model = FakeModel::start().await;
    let home = home(&model, "\n[models.\"fake/m\"]\ntext_tool_calls = \"off\"\n");
    model.push(fenced_call());
    let run = home.run(&["chat", "-m", "what do my notes say?"]);
    assert!(run.ok(), "{run:?}");
    assert!(run.stdout.contains("\"name\": \"read_file\""), "{run:?}");
    assert_eq!(model.requests().len(), 1, "nothing ran");
}

#[test]
fn a_wrong_text_tool_calls_value_names_the_key_and_the_choices() {
    let home = TestHome::new();
    home.write_config(
        "version = 1\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[models.\"fake/m\"]\ntext_tool_calls = \"yes\"\n",
    );
    home.run(&["chat", "-m", "hi"])
        .fails_with(&["text_tool_calls", "auto"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_written_in_a_reply_that_ran_away_never_runs() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    model.push(Step::runaway(
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>\n",
        "I keep saying the very same thing. ",
    ));
    let run = home.run(&["chat", "-m", "what do my notes say?"]);
    assert!(
        run.stderr.contains("repeating") || run.stdout.contains("repeating"),
        "{run:?}"
    );
    // The loop was cut on the stream and the turn ended: the call it wrote before the
    // loop did not run, so the model was never asked again with its result.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(model.requests().len(), 1, "{run:?}");
    assert!(!run.stdout.contains("tool_call"), "{run:?}");
}

const KEY: &str = "sk-cutshort-7Hq2xLz9Vb4Nc8Rt1Kd5";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_short_keeps_only_what_the_person_saw() {
    let model = FakeModel::start().await;
    let home = home(&model, "[agent]\nmax_turn_secs = 1\n");
    home.write_secrets(&format!("providers:\n  fake:\n    api_key: \"{KEY}\"\n"));
    // Streamed a word every 100 ms: the turn's limit falls in the middle of the call.
    let call = format!(
        "<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"a.txt\", \"content\": \"{KEY}\"}}}}\n</tool_call>"
    );
    model.push(Step::slow_text(
        format!(
            "<think>the user token is {KEY}</think> Sure, your key is {KEY} as asked.\n{call}\n{}",
            "and then some more words that never finish ".repeat(5)
        ),
        100,
    ));
    let run = home.run(&["chat", "-m", "slowly please"]);
    run.fails_with(&["agent.max_turn_secs"]);
    let transcript = home.transcript();
    assert!(transcript.contains("Sure, your key is"), "{transcript}");
    for leaked in [
        "<think>",
        "the user token",
        "<tool_call>",
        "write_file",
        KEY,
    ] {
        assert!(
            !transcript.contains(leaked),
            "{leaked:?} was stored: {transcript}"
        );
    }
}
