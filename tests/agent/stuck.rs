//! Stuck detection through the real binary: each pattern is noticed within its count
//! (the model is told once), stopped if it goes on, and a poll whose results change is
//! left alone.

use pincer_fakes::{FakeModel, Recorded, Step};
use serde_json::{Value, json};

use crate::common::{TestHome, openai_config};

fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new();
    home.write_config(&openai_config(
        model,
        "[agent]\nmax_iterations = 25\n[tools.exec]\nsandbox = \"off\"\n",
    ));
    home
}

fn note_in(request: &Recorded) -> bool {
    request.body.to_string().contains("[Pincer: you have been")
}

/// Script `n` replies each calling `tool` with `args(i)`, then a final text.
fn script(model: &FakeModel, n: usize, call: impl Fn(usize) -> (&'static str, Value)) {
    for i in 0..n {
        let (tool, args) = call(i);
        model.push(Step::tool_call(tool, args));
    }
    model.push(Step::text("giving up"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_call_three_times_is_noted_and_a_fourth_stops_the_turn() {
    let model = FakeModel::start().await;
    let home = home(&model);
    script(&model, 10, |_| ("list_dir", json!({"path": "."})));
    let run = home.run(&["chat", "-m", "tidy up"]);
    run.fails_with(&["I stopped because I was stuck calling list_dir with the same arguments"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "three calls, the note, one more call");
    assert!(!requests[..3].iter().any(note_in));
    assert!(
        note_in(&requests[3]),
        "the model was told before it was stopped"
    );
    let status = home.run(&["sessions", "show", "terminal:dm:local"]).stdout;
    assert_eq!(status.matches("→ list_dir").count(), 4, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alternation_repeated_three_times_is_noted() {
    let model = FakeModel::start().await;
    let home = home(&model);
    script(&model, 12, |i| {
        if i % 2 == 0 {
            ("list_dir", json!({"path": "."}))
        } else {
            ("glob", json!({"pattern": "*.md"}))
        }
    });
    let run = home.run(&["chat", "-m", "find my notes"]);
    run.fails_with(&["alternating between list_dir and glob"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 7);
    assert!(!requests[..6].iter().any(note_in));
    assert!(note_in(&requests[6]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_error_three_times_is_noted_whatever_the_arguments() {
    let model = FakeModel::start().await;
    let home = home(&model);
    // No search backend is configured: every query fails the same way.
    model.push_all([
        Step::tool_call("web_search", json!({"query": "basil"})),
        Step::tool_call("web_search", json!({"query": "basil care"})),
        Step::tool_call("web_search", json!({"query": "how to keep basil"})),
        Step::text("I cannot search the web; here is what I know about basil."),
    ]);
    let run = home.run(&["chat", "-m", "look up basil"]);
    assert!(run.ok(), "{run:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert!(!requests[..3].iter().any(note_in));
    let last = requests[3].body.to_string();
    assert!(
        last.contains("calling web_search and getting the same error"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_text_three_times_is_noted() {
    let model = FakeModel::start().await;
    let home = home(&model);
    for dir in ["a", "b", "c"] {
        model.push(Step::ToolCalls {
            text: Some("Let me try once more.".into()),
            calls: vec![("list_dir".into(), json!({"path": dir}))],
        });
    }
    model.push(Step::text("Those folders do not exist."));
    let run = home.run(&["chat", "-m", "list my folders"]);
    assert!(run.ok(), "{run:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests[3]
            .body
            .to_string()
            .contains("writing the same reply")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_whose_result_changes_runs_all_ten_calls() {
    let model = FakeModel::start().await;
    let home = home(&model);
    // The same command ten times; its output grows a line each time, like a build log.
    script(&model, 10, |_| {
        (
            "exec",
            json!({"command": "echo step >> build.log; wc -l < build.log"}),
        )
    });
    let run = home.run(&["chat", "-m", "wait for the build"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout.trim(), "giving up");
    let requests = model.requests();
    assert_eq!(requests.len(), 11);
    assert!(
        !requests.iter().any(note_in),
        "a changing poll is not stuck"
    );
}
