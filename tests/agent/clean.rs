//! Clean output: reasoning blocks and leaked tool-call markup never reach the chat or
//! the visible text of the transcript; Anthropic thinking blocks go back signed.

use std::time::Duration;

use pincer_fakes::telegram::Incoming;
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

use crate::common::TestHome;
use crate::common::telegram::setup;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn think_blocks_and_tool_markup_never_reach_the_chat_or_the_transcript() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    // Streamed a word at a time, slowly enough to be shown while it streams.
    s.model.push(Step::slow_text(
        "<think>secret plan: flatter them first</think> Basil likes sun.\n\nBasil likes sun.\n\nWater it twice a week.",
        120,
    ));
    s.model.push(Step::text(
        "Let me check that.\n<tool_call>{\"name\": \"exec\", \"arguments\": {\"command\": \"ls\"}}</tool_call>",
    ));
    s.model.push(Step::text(
        "Okay, so they want a reminder...\n</think>\nDone, I will remind you.",
    ));
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "how do I keep basil?"));
    s.wait_for_text(42, "Water it twice a week.").await;
    s.platform.inject(Incoming::dm(42, "check my files"));
    s.wait_for_text(42, "Let me check that.").await;
    s.platform.inject(Incoming::dm(42, "remind me"));
    s.wait_for_text(42, "Done, I will remind you.").await;

    let calls = s.platform.calls();
    assert!(
        calls.iter().any(|c| c.method == "editMessageText"),
        "the first reply streamed (edited in place)"
    );
    for call in &calls {
        let text = call.params.to_string();
        for leaked in [
            "secret plan",
            "<think",
            "</think",
            "tool_call",
            "they want a reminder",
        ] {
            assert!(
                !text.contains(leaked),
                "{leaked:?} reached Telegram: {text}"
            );
        }
    }
    let texts = s.texts_to(42);
    assert_eq!(
        texts[0], "Basil likes sun.\n\nWater it twice a week.",
        "the repeated paragraph is dropped"
    );
    let transcript = s.home.run(&["sessions", "show", "telegram:dm:42"]).stdout;
    for leaked in ["<think", "</think", "<tool_call", "\"command\": \"ls\""] {
        assert!(
            !transcript.contains(leaked),
            "{leaked:?} in the transcript: {transcript}"
        );
    }
    // The reasoning is kept as reasoning, apart from what was said.
    assert!(
        transcript.contains("(thinking) secret plan"),
        "{transcript}"
    );
    assert!(
        transcript.contains("assistant: Basil likes sun."),
        "{transcript}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_thinking_blocks_go_back_signed_around_a_tool_call() {
    let model = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&format!(
        "version = 1\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"anthropic\"\nbase_url = \"{}\"\n[models.\"fake/m\"]\nthinking_budget = 2048\n",
        model.anthropic_base()
    ));
    model.push(Step::tool_call("list_dir", json!({"path": "."})));
    model.push(Step::text("The workspace is empty."));
    let run = home.run(&["chat", "-m", "what is in my workspace?"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout.trim(), "The workspace is empty.");
    let requests = model.wait_for_requests(2, Duration::from_secs(5)).await;
    assert_eq!(
        requests[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    let assistant = &requests[1].body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"][0]["type"], "thinking", "{assistant}");
    assert!(
        assistant["content"][0]["signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("fakesig")),
        "{assistant}"
    );
    // The thinking is nowhere in what the person sees.
    assert!(!run.stdout.contains("The user asked something"));
}

#[test]
fn thinking_budget_on_an_openai_provider_is_a_config_error() {
    let home = TestHome::new();
    home.write_config(
        "version = 1\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[models.\"fake/m\"]\nthinking_budget = 2048\n",
    );
    home.run(&["chat", "-m", "hi"])
        .fails_with(&["thinking_budget", "Anthropic"]);
}
