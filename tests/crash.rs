//! Crash recovery with the real binary: a process killed mid-turn leaves a transcript
//! the next start repairs and continues from; nothing the user said is lost.

use crate::common;

use common::{PATIENCE, TestHome};
use pincer::provider::Part;
use pincer::store::{Role, Store};
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_turn_the_message_survives_and_the_conversation_continues() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    fake.push(Step::Stall); // the model starts answering, then hangs
    let mut child = home
        .command(&["chat", "-m", "remember the number 42"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The turn now waits on a model that never finishes: kill it there.
    fake.wait_for_requests(1, PATIENCE).await;
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();

    // The user's message was committed before the model was called.
    assert!(home.transcript().contains("remember the number 42"));

    let run = home.run(&["chat", "-m", "which number?"]);
    assert!(run.ok(), "{run:?}");
    let second = &fake.requests()[1];
    let sent = second.body["messages"].to_string();
    assert!(
        sent.contains("remember the number 42"),
        "the unanswered message is part of the conversation: {sent}"
    );
    assert!(second.last_user_text().ends_with("which number?"));
    // Both user messages are in the transcript, followed by the one reply.
    let transcript = home.transcript();
    let first = transcript.find("remember the number 42").unwrap();
    let question = transcript.find("which number?").unwrap();
    let answer = transcript.rfind("assistant: echo:").unwrap();
    assert!(first < question && question < answer, "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_a_tool_ran_the_call_and_result_stay_paired() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    fake.push(Step::tool_call(
        "write_file",
        json!({"path": "a.txt", "content": "A"}),
    ));
    fake.push(Step::Stall);
    let mut child = home.command(&["chat", "-m", "write a"]).spawn().unwrap();
    fake.wait_for_requests(2, PATIENCE).await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("a.txt")).unwrap(),
        "A"
    );

    let run = home.run(&["chat", "-m", "did it work?"]);
    assert!(run.ok(), "{run:?}");
    // The next request is valid for the provider: the call is followed by its result.
    let messages = fake.requests()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let call = messages
        .iter()
        .position(|m| m.get("tool_calls").is_some())
        .expect("tool call kept");
    assert_eq!(messages[call + 1]["role"], "tool", "{messages:?}");
    assert!(
        messages[call + 1]["content"]
            .as_str()
            .unwrap()
            .contains("wrote 1 bytes")
    );
    // The write was not run again.
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_cut_off_by_a_crash_is_closed_as_interrupted_and_never_rerun() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    // The state a crash during a tool leaves behind: the call is stored, its result is not.
    let store = Store::open(&home.path().join("pincer.db")).unwrap();
    let session = store
        .current_session(&"terminal:dm:local".parse().unwrap())
        .await
        .unwrap();
    store
        .insert_user(
            session,
            "terminal",
            "x-1",
            "terminal:local",
            "delete the temp files",
        )
        .await
        .unwrap();
    store
        .append(
            session,
            Role::Assistant,
            vec![Part::ToolCall {
                id: "call_9".into(),
                name: "write_file".into(),
                arguments: json!({"path": "never.txt", "content": "no"}),
            }],
        )
        .await
        .unwrap();
    drop(store);

    let run = home.run(&["chat", "-m", "what happened?"]);
    assert!(run.ok(), "{run:?}");
    assert!(
        !home.workspace().join("never.txt").exists(),
        "an interrupted call must never run again"
    );
    let messages = fake.requests()[0].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a synthetic result");
    assert_eq!(result["tool_call_id"], "call_9");
    assert!(
        result["content"].as_str().unwrap().contains("interrupted"),
        "{result}"
    );
    assert!(home.transcript().contains("✗ write_file: interrupted"));
}
