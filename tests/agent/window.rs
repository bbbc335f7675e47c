//! Compaction before the wall: a conversation against a model with a small context
//! window keeps working for 50 turns: old tool results become stubs naming their saved
//! file, the older part is summarised (with what turn 1 said reaching the summariser),
//! and no request is ever over the window. On an 8K window compaction converges (it
//! does not run again every turn); a summary too poor to stand in for the messages is
//! refused; a server's overflow error teaches Pincer its real window, and a message that
//! cannot fit is set aside rather than left to make every later turn fail.

use pincer_fakes::{FakeModel, Step};
use serde_json::json;

use crate::common::{TestHome, openai_config};

const SUMMARISER: &str = "You keep notes on a conversation";
const SUMMARY: &str = "Goals: keep the basil alive and the garden watered, checking on it every day. Facts: the basil is on the north window; the garden log is in garden.log, one line a day with the date and what was watered; each check read it and all was well. Open tasks: none; the user asks again how the garden is.";
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

/// `n` turns of about 400 tokens each (a question, an answer) times `scale`, piped into
/// `pincer chat`.
fn converse(home: &TestHome, model: &FakeModel, n: usize, scale: usize) -> crate::common::Run {
    let mut lines = Vec::new();
    for turn in 1..=n {
        let question = "how do the tomatoes do today? ".repeat(18 * scale);
        lines.push(format!("question {turn}: {question}"));
        // Different words each time: the same sentence over and over is a model looping,
        // which the reply's guard cuts.
        let answer: String = (0..36 * scale)
            .map(|i| format!("plant {i} is fine. "))
            .collect();
        model.push(Step::text(format!("answer {turn}: {answer}")));
    }
    home.run_with_stdin(&["chat"], &(lines.join("\n") + "\n"))
}

fn summaries(model: &FakeModel) -> usize {
    model
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains(SUMMARISER))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_an_8k_window_twenty_turns_compact_at_most_twice() {
    let model = FakeModel::start().await;
    model.limit_context(Some(8_192));
    // As llama.cpp with a chat template that has no place for tools: they are neither
    // counted nor called, and a Pincer that counts them compacts far too often.
    model.drop_tools(true);
    model.answer_when_system_contains(SUMMARISER, Step::text(SUMMARY));
    let home = TestHome::new();
    home.write_config(&openai_config(
        &model,
        "[models.\"fake/m\"]\ncontext_tokens = 8192\n",
    ));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    let run = converse(&home, &model, 20, 1);
    assert!(run.ok(), "{}", run.stderr);
    assert!(run.stdout.contains("answer 20:"), "{}", run.stdout);
    let compactions = summaries(&model);
    assert!(
        (1..=2).contains(&compactions),
        "{compactions} compactions in 20 turns"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_long_turns_and_a_long_summary_compaction_does_not_run_every_turn() {
    let model = FakeModel::start().await;
    model.limit_context(Some(8_192));
    model.drop_tools(true);
    // A summary of about 1,000 tokens, as a small model writes at its limit.
    let long = format!(
        "{SUMMARY} {}",
        "The tomatoes were asked about and are fine. ".repeat(90)
    );
    model.answer_when_system_contains(SUMMARISER, Step::text(long));
    let home = TestHome::new();
    home.write_config(&openai_config(
        &model,
        "[models.\"fake/m\"]\ncontext_tokens = 8192\n",
    ));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    let run = converse(&home, &model, 20, 2);
    assert!(run.ok(), "{}", run.stderr);
    assert!(run.stdout.contains("answer 20:"), "{}", run.stdout);
    let compactions = summaries(&model);
    // Keeping six messages and counting the dropped tools, it compacted on 14 of the 20
    // turns (measured with answers of one sentence repeated, of about this size);
    // compacting to 40% of the window, about one turn in four at most.
    assert!(
        compactions <= 5,
        "{compactions} compactions in 20 turns of 800 tokens"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_too_poor_to_stand_in_is_refused_and_the_latest_turns_stay() {
    let model = FakeModel::start().await;
    model.limit_context(Some(8_192));
    model.drop_tools(true);
    // What a small model really wrote for 23 messages.
    model.answer_when_system_contains(SUMMARISER, Step::text("Marijuana & Health Care Team"));
    let home = TestHome::new();
    home.write_config(&openai_config(
        &model,
        "[models.\"fake/m\"]\ncontext_tokens = 8192\n",
    ));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    let run = converse(&home, &model, 12, 2);
    assert!(run.ok(), "{}", run.stderr);
    assert!(run.stdout.contains("answer 12:"), "{}", run.stdout);
    assert!(
        summaries(&model) >= 1,
        "the conversation was never compacted"
    );
    let turns: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .filter(|b| !b.contains(SUMMARISER))
        .collect();
    let last = turns.last().expect("a last turn");
    assert!(
        !last.contains("Marijuana"),
        "the poor summary stood in: {last}"
    );
    assert!(last.contains("earlier messages were left out"), "{last}");
    assert!(
        last.contains("answer 11:"),
        "the latest turns stay word for word"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_cannot_fit_is_set_aside_and_the_next_turn_works() {
    let model = FakeModel::start().await;
    model.limit_context(Some(WINDOW));
    model.answer_when_system_contains(SUMMARISER, Step::text(SUMMARY));
    let home = TestHome::new();
    // Pincer assumes a large window; the server's is 4,000 tokens.
    home.write_config(&openai_config(&model, ""));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    model.push(Step::text("Short answer."));
    let huge = "a very long paste of a log line that goes on. ".repeat(500);
    let run = home.run_with_stdin(&["chat"], &format!("{huge}\nand now a short one\n"));
    let shown = format!("{}{}", run.stdout, run.stderr);
    assert!(shown.contains("set aside"), "{shown}");
    assert!(run.stdout.contains("Short answer."), "{shown}");
    // The second turn went out without the paste, which stays in the store.
    let answered = model
        .requests()
        .into_iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("and now a short one"))
        .expect("the second turn reached the model");
    assert!(
        !answered.contains("a very long paste"),
        "the failed message came back"
    );
    assert!(home.transcript().contains("a very long paste"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_window_gets_a_small_prompt_and_finds_the_other_tools_by_search() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call("tool_search", json!({"query": "fetch a web page"})),
        Step::text("Found it."),
    ]);
    let home = TestHome::new();
    home.write_config(&openai_config(
        &model,
        "[models.\"fake/m\"]\ncontext_tokens = 8192\n",
    ));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    let run = home.run(&["chat", "-m", "read the news page for me"]);
    assert!(run.ok(), "{}", run.stderr);
    let requests = model.requests();
    let offered = crate::common::trust::tool_names(&requests[0].body);
    let expected = [
        "edit_file",
        "exec",
        "memory_search",
        "memory_write",
        "read_file",
        "tool_search",
        "write_file",
    ];
    let mut sorted = offered.clone();
    sorted.sort();
    assert_eq!(sorted, expected, "{offered:?}");
    // The first request stays under a quarter of the window.
    let tokens = requests[0].body.to_string().len() / 4;
    assert!(tokens <= 8192 / 4, "the first request is {tokens} tokens");
    // What the search found is offered from the next step on.
    let next = crate::common::trust::tool_names(&requests[1].body);
    assert!(next.contains(&"web_fetch".to_string()), "{next:?}");

    // A large window gets every tool.
    let big = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&openai_config(&big, ""));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    let run = home.run(&["chat", "-m", "hi"]);
    assert!(run.ok(), "{}", run.stderr);
    let all = crate::common::trust::tool_names(&big.requests()[0].body);
    assert!(all.len() > expected.len() + 5, "{all:?}");
    assert!(all.contains(&"web_fetch".to_string()));
}
