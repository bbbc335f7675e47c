//! Compaction before the wall: a conversation against a model with a small context
//! window keeps working for 50 turns: old tool results become stubs naming their saved
//! file, the older part is summarised (with what turn 1 said reaching the summariser),
//! and no request is ever over the window.

use pincer_fakes::{FakeModel, Step};
use serde_json::json;

use crate::common::{TestHome, openai_config};

const SUMMARISER: &str = "You keep notes on a conversation";
const SUMMARY: &str = "Goals: keep the basil alive. Facts: the basil is on the north window.";
const WINDOW: u64 = 4_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_turns_fit_a_4000_token_window() {
    let model = FakeModel::start().await;
    // The provider refuses anything over its window, as real ones do.
    model.limit_context(Some(WINDOW));
    model.answer_when_system_contains(SUMMARISER, Step::text(SUMMARY));
    let home = TestHome::new();
    home.write_config(&openai_config(
        &model,
        &format!("[models.\"fake/m\"]\ncontext_tokens = {WINDOW}\n"),
    ));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    let log = "a line of the garden log, with the date and what was watered\n".repeat(12);
    std::fs::write(home.workspace().join("garden.log"), &log).expect("log");

    // Each turn reads the 0.7 KB log, then answers.
    let mut lines = vec!["remember: the basil is on the north window".to_string()];
    for n in 2..=50 {
        lines.push(format!("turn {n}: how is the garden?"));
    }
    for n in 1..=50 {
        model.push(Step::tool_call("read_file", json!({"path": "garden.log"})));
        model.push(Step::text(format!("reply {n}: all is well")));
    }
    let run = home.run_with_stdin(&["chat"], &(lines.join("\n") + "\n"));
    assert!(run.ok(), "{}", run.stderr);
    for n in [1, 25, 50] {
        assert!(
            run.stdout.contains(&format!("reply {n}: all is well")),
            "{}",
            run.stdout
        );
    }

    let requests = model.requests();
    let turns: Vec<_> = requests
        .iter()
        .filter(|r| !r.body.to_string().contains(SUMMARISER))
        .collect();
    assert_eq!(turns.len(), 100, "two model calls a turn, none refused");
    for request in &requests {
        let tokens = request.body.to_string().len() as u64 / 4;
        assert!(tokens <= WINDOW, "a request of {tokens} tokens was sent");
    }

    // The summariser was given the conversation, turn 1 included, and the last turns
    // carry its summary instead of the old messages.
    let summarised: Vec<_> = requests
        .iter()
        .filter(|r| r.body.to_string().contains(SUMMARISER))
        .collect();
    assert!(
        !summarised.is_empty(),
        "the conversation was never summarised"
    );
    assert!(
        summarised[0]
            .body
            .to_string()
            .contains("the basil is on the north window"),
        "turn 1 reached the summariser"
    );
    let last = turns.last().expect("a last turn").body.to_string();
    assert!(last.contains(SUMMARY), "{last}");
    assert!(
        !last.contains("remember: the basil"),
        "turn 1 itself is summarised away"
    );

    // Old tool results are stubs naming the file that keeps them whole.
    let stubbed = turns
        .iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("[pruned to save room: an earlier result of read_file"))
        .expect("a request with a pruned result");
    let file = stubbed
        .split("the whole result is in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("the stub names a file");
    let saved = std::fs::read_to_string(home.workspace().join(file)).expect("the saved result");
    assert!(saved.contains("a line of the garden log"), "{saved}");

    // The whole conversation is still in the store.
    let transcript = home.transcript();
    assert!(transcript.contains("remember: the basil is on the north window"));
    assert_eq!(transcript.matches("all is well").count(), 50);
}
