//! Subagent tasks through the real gateway and the fake Telegram: a foreground task's
//! answer comes back to the parent, a background task reports to the chat and the
//! parent's transcript, `/tasks` lists them, `/tasks stop N` and `/stop` stop them, at
//! most 3 run at once, and a restart reports a running background task interrupted,
//! once.

use pincer_fakes::telegram::Incoming;
use pincer_fakes::{Recorded, Step};
use serde_json::json;

use crate::common::telegram::{Setup, setup};
use crate::common::wait_until;

/// Heads the system prompt of a subagent's turn (`pincer::agent::prompt::TASK_RULE`).
const CHILD: &str = "You are working on one task handed to you";
fn is_child(request: &Recorded) -> bool {
    request.body.to_string().contains(CHILD)
}

fn tool_names(request: &Recorded) -> Vec<String> {
    crate::common::trust::offered_tools(&request.body)
}

fn start_task(description: &str, background: bool) -> Step {
    Step::tool_call(
        "task",
        json!({"description": description, "prompt": format!("Please {description}."), "background": background}),
    )
}

async fn owner() -> Setup {
    setup("", "owners = [\"telegram:42\"]").await
}

/// Wait until the model has seen `n` requests of a subagent.
async fn children(s: &Setup, n: usize) {
    wait_until(&format!("{n} child requests"), async || {
        s.model.requests().iter().filter(|r| is_child(r)).count() >= n
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreground_task_answers_its_parent_in_a_session_of_its_own() {
    let s = owner().await;
    s.model
        .answer_when_system_contains(CHILD, Step::text("Basil belongs to the mint family."));
    s.model.push_all([
        start_task("find a basil fact", false),
        Step::text("Here it is: basil is a kind of mint."),
    ]);
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "tell me about basil"));
    s.wait_for_text(42, "basil is a kind of mint").await;

    let requests = s.model.requests();
    assert_eq!(requests.len(), 3, "parent, child, parent");
    assert!(is_child(&requests[1]) && !is_child(&requests[0]) && !is_child(&requests[2]));
    let child_tools = tool_names(&requests[1]);
    for withheld in ["task", "send_message", "cron"] {
        assert!(
            !child_tools.contains(&withheld.to_string()),
            "{child_tools:?}"
        );
    }
    assert!(
        child_tools.contains(&"read_file".to_string()),
        "{child_tools:?}"
    );
    assert!(tool_names(&requests[0]).contains(&"task".to_string()));
    let result = requests[2].body.to_string();
    assert!(
        result.contains("Basil belongs to the mint family."),
        "{result}"
    );
    assert!(result.contains("task:telegram:dm:42:1"), "{result}");
    // The child's own words never reached the chat.
    assert!(!s.texts_to(42).iter().any(|t| t.contains("mint family")));
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    assert!(sessions.contains("task:telegram:dm:42:1"), "{sessions}");
    let child = s
        .home
        .run(&["sessions", "show", "task:telegram:dm:42:1"])
        .stdout;
    assert!(child.contains("Please find a basil fact."), "{child}");
    assert!(
        child.contains("Basil belongs to the mint family."),
        "{child}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_reports_to_the_chat_and_the_next_turn_knows() {
    let s = owner().await;
    s.model.answer_when_system_contains(
        CHILD,
        Step::text("Cheapest flight: Tuesday, 89 EUR.").after_ms(1500),
    );
    s.model.push_all([
        start_task("research flights", true),
        Step::text("I started the research; I'll tell you."),
    ]);
    let _gateway = s.start();
    s.platform
        .inject(Incoming::dm(42, "research flights for me"));
    s.wait_for_text(42, "I started the research").await;
    // The child's request may land before the parent's second one: pick the parent's.
    let parent = s
        .model
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .filter(|body| !body.contains(CHILD))
        .nth(1)
        .expect("the parent's second request");
    assert!(
        parent.contains("started task 1: research flights"),
        "{parent}"
    );

    s.platform.inject(Incoming::dm(42, "/tasks").command());
    let listed = s.wait_for_text(42, "Tasks of this conversation").await;
    assert!(
        listed.text.contains("1. running (background"),
        "{}",
        listed.text
    );

    let report = s
        .wait_for_text(42, "Task 1 (research flights) is done")
        .await;
    assert!(
        report.text.contains("Cheapest flight: Tuesday, 89 EUR."),
        "{}",
        report.text
    );
    s.platform.inject(Incoming::dm(42, "/tasks").command());
    s.wait_for_text(42, "1. done (background").await;

    s.platform.inject(Incoming::dm(42, "so which day?"));
    s.wait_for_text(42, "echo: so which day?").await;
    let next = s
        .model
        .requests()
        .last()
        .expect("a request")
        .body
        .to_string();
    assert!(next.contains("Cheapest flight: Tuesday, 89 EUR."), "{next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_stop_and_slash_stop_end_tasks_and_a_fourth_is_refused() {
    let s = owner().await;
    // Children never answer: they run until stopped.
    s.model.answer_when_system_contains(CHILD, Step::Stall);
    s.model.push_all([
        Step::tool_calls([
            (
                "task",
                json!({"description": "one", "prompt": "a", "background": true}),
            ),
            (
                "task",
                json!({"description": "two", "prompt": "b", "background": true}),
            ),
            (
                "task",
                json!({"description": "three", "prompt": "c", "background": true}),
            ),
            (
                "task",
                json!({"description": "four", "prompt": "d", "background": true}),
            ),
        ]),
        Step::text("Three are running."),
    ]);
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "do four things"));
    s.wait_for_text(42, "Three are running.").await;
    let parent = s
        .model
        .requests()
        .iter()
        .rfind(|r| !is_child(r))
        .expect("parent")
        .body
        .to_string();
    assert!(
        parent.contains("3 tasks are already running in this conversation"),
        "{parent}"
    );
    children(&s, 3).await;

    s.platform
        .inject(Incoming::dm(42, "/tasks stop 2").command());
    s.wait_for_text(42, "Stopping task 2.").await;
    s.wait_for_text(42, "Task 2 (two) did not finish: it was stopped")
        .await;

    s.platform.inject(Incoming::dm(42, "/stop").command());
    s.wait_for_text(42, "Stopping 2 running task(s).").await;
    s.wait_for_text(42, "Task 1 (one) did not finish").await;
    s.wait_for_text(42, "Task 3 (three) did not finish").await;
    s.platform.inject(Incoming::dm(42, "/tasks").command());
    let listed = s.wait_for_text(42, "3. stopped").await;
    assert!(
        listed.text.contains("1. stopped") && listed.text.contains("2. stopped"),
        "{}",
        listed.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_task_reports_it_interrupted_once() {
    let s = owner().await;
    s.model.answer_when_system_contains(CHILD, Step::Stall);
    s.model
        .push_all([start_task("long research", true), Step::text("Started.")]);
    let gateway = s.start();
    s.platform
        .inject(Incoming::dm(42, "research for a long time"));
    s.wait_for_text(42, "Started.").await;
    children(&s, 1).await;
    drop(gateway); // killed mid-task

    let interrupted = "Task 1 (long research) was interrupted";
    let second = s.start();
    s.wait_for_text(42, interrupted).await;
    drop(second);
    let third = s.start();
    // The third start is ready once it answers; by then it would have reported.
    s.platform.inject(Incoming::dm(42, "are you there?"));
    s.wait_for_text(42, "echo: are you there?").await;
    drop(third);
    let reports = s
        .texts_to(42)
        .iter()
        .filter(|t| t.contains(interrupted))
        .count();
    assert_eq!(reports, 1, "reported once");
    // The task's prompt was never run again.
    assert_eq!(s.model.requests().iter().filter(|r| is_child(r)).count(), 1);
    // And its conversation knows.
    let transcript = s.home.run(&["sessions", "show", "telegram:dm:42"]).stdout;
    assert!(transcript.contains(interrupted), "{transcript}");
}
