//! The cases, against SmolLM2-135M-Instruct on llama.cpp's server (see the binary's
//! doc, tests/real_model.rs): each asserts what Pincer controls, never the model's words.

use std::time::Duration;

use super::rig::{Local, RUN_DEADLINE, template_tokens_in};
use super::server::{Flavor, WINDOW, serial};
use super::tap;
use crate::common::{PATIENCE, wait_for_within};
use serde_json::{Value, json};

/// How long Pincer may take to show text it has received: printing it is immediate, so
/// this is only a bound for a machine busy with the model itself: two `PATIENCE`s.
const SHOW_DEADLINE: Duration = PATIENCE.saturating_mul(2);

/// Wait until `done` holds; after `patience`, fail with `what` and the evidence.
async fn wait_until(local: &Local, patience: Duration, what: &str, mut done: impl FnMut() -> bool) {
    wait_for_within(
        patience,
        async || done().then_some(()),
        || format!("{what} never happened; {}", local.evidence()),
    )
    .await
}

/// The person sees the first words while the model is still writing the rest, and the
/// whole reply is stored in the conversation `pincer sessions` shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_answer_streams_and_is_stored() {
    let _turn = serial().await;
    let Some(local) = Local::start(Flavor::Plain).await else {
        return;
    };
    let question = "Tell me about the sea in three sentences.";
    local.tap.hold_after(12);
    let chat = local.spawn(&["chat", "-m", question]);
    let replying = || local.tap.chats().first().cloned();
    // The model is slow on a busy machine: its first words may take minutes.
    wait_until(&local, RUN_DEADLINE, "the reply's first words", || {
        local.tap.holding() || replying().is_some_and(|c| c.finished)
    })
    .await;
    assert!(
        local.tap.holding(),
        "the reply was too short to show streaming: {:?}",
        replying().map(|c| c.content())
    );
    wait_until(
        &local,
        SHOW_DEADLINE,
        "Pincer showing the first words while the model was still answering",
        || !chat.stdout.text().trim().is_empty(),
    )
    .await;
    local.tap.release();
    let stderr = chat.stderr.clone();
    let stdout = chat.stdout.clone();
    let code = chat.wait().await;
    assert_eq!(
        code,
        Some(0),
        "stderr: {}\n{}",
        stderr.text(),
        local.evidence()
    );
    let call = replying().expect("a model call");
    assert_eq!(call.request["stream"], json!(true));
    let reply = stdout.text().trim().to_string();
    assert!(!reply.is_empty());

    let list = local.sessions(&["list"]).await;
    assert!(list.contains("terminal:dm:local"), "{list}");
    let transcript = local.sessions(&["show", "terminal:dm:local"]).await;
    assert!(transcript.contains(question), "{transcript}");
    let first_line = reply.lines().next().unwrap_or_default();
    assert!(
        transcript.contains(first_line),
        "the reply shown is stored: {first_line:?} in\n{transcript}"
    );
}

/// Three lines piped to `pincer chat` are three turns, answered in order, each sent
/// with the turns before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_piped_turns_are_answered_in_order() {
    let _turn = serial().await;
    let Some(local) = Local::start(Flavor::Plain).await else {
        return;
    };
    let lines = [
        "What is two plus two?",
        "What is three plus three?",
        "What is four plus four?",
    ];
    let run = local
        .run(&["chat"], &format!("{}\n", lines.join("\n")))
        .await;
    assert!(run.ok(), "{run:?}\n{}", local.evidence());
    assert!(!run.stdout.trim().is_empty());

    let chats = local.tap.chats();
    let mut last = None;
    for (turn, line) in lines.iter().enumerate() {
        let at = chats
            .iter()
            .position(|c| c.last_user_text().contains(line))
            .unwrap_or_else(|| panic!("no model call for {line:?}; {}", local.evidence()));
        assert!(
            last.is_none_or(|last| at > last),
            "turn {turn} was sent out of order"
        );
        last = Some(at);
        let history: Vec<String> = chats[at].messages().iter().map(tap::message_text).collect();
        for earlier in &lines[..turn] {
            assert!(
                history.iter().any(|text| text.contains(earlier)),
                "turn {turn} was sent without {earlier:?}"
            );
        }
        assert_eq!(chats[at].status, 200, "{}", local.evidence());
    }

    let transcript = local.sessions(&["show", "terminal:dm:local"]).await;
    for line in lines {
        assert!(transcript.contains(line), "{line:?} in\n{transcript}");
    }
    assert_eq!(
        transcript.matches("] assistant: ").count(),
        3,
        "three replies stored:\n{transcript}"
    );
}

/// `pincer agent`, driven as the Claude Agent SDKs drive it, answers a turn and ends
/// it with a `result` of subtype `success`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_ends_in_success() {
    let _turn = serial().await;
    let Some(local) = Local::start(Flavor::Plain).await else {
        return;
    };
    let user = json!({"type": "user", "message": {"role": "user", "content": "What is two plus two?"},
                      "parent_tool_use_id": null, "session_id": "default"});
    let run = local
        .run(
            &[
                "agent",
                "--output-format",
                "stream-json",
                "--input-format",
                "stream-json",
                "--verbose",
            ],
            &format!("{user}\n"),
        )
        .await;
    assert!(run.ok(), "{run:?}\n{}", local.evidence());
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    let init = lines
        .iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init");
    assert!(init.is_some(), "an init line: {lines:#?}");
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "result").collect();
    assert_eq!(results.len(), 1, "one result: {lines:#?}");
    let result = results[0];
    assert_eq!(
        result["subtype"],
        "success",
        "{result}\n{}",
        local.evidence()
    );
    assert_eq!(result["is_error"], false, "{result}");
    let text = result["result"].as_str().unwrap_or_default();
    assert!(!text.trim().is_empty(), "{result}");
    assert!(
        result["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0,
        "the real usage is reported: {result}"
    );
    assert_eq!(
        lines.last().map(|l| &l["type"]),
        Some(&json!("result")),
        "the result ends the output"
    );
}

/// A server that prints the end-of-turn token into the reply (`--special`, as a server
/// whose template does not fit the model does): the person never sees it, neither in
/// the terminal nor in the stored conversation, and it is not sent back to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_template_token_reaches_the_person() {
    let _turn = serial().await;
    let Some(local) = Local::start(Flavor::Special).await else {
        return;
    };
    // Three turns: the token must not reach the person, nor come back in later turns.
    let lines = [
        "What is two plus two?",
        "What is three plus three?",
        "What is four plus four?",
    ];
    let run = local
        .run(&["chat"], &format!("{}\n", lines.join("\n")))
        .await;
    let chats = local.tap.chats();
    let said: String = chats.iter().map(tap::Exchange::content).collect();
    // Pincer may also have asked the server to stop before such a token (`stop`).
    let stops: String = chats
        .iter()
        .map(|c| c.request["stop"].to_string())
        .collect();
    assert!(
        !template_tokens_in(&said).is_empty() || !template_tokens_in(&stops).is_empty(),
        "the server printed a template token, as this test needs: {said:?}"
    );
    assert!(run.ok(), "{run:?}\n{}", local.evidence());
    assert!(!run.stdout.trim().is_empty(), "{run:?}");
    assert_eq!(
        template_tokens_in(&run.stdout),
        Vec::<&str>::new(),
        "the terminal showed a template token:\n{}",
        run.stdout
    );
    let transcript = local.sessions(&["show", "terminal:dm:local"]).await;
    assert_eq!(
        template_tokens_in(&transcript),
        Vec::<&str>::new(),
        "the stored conversation holds a template token:\n{transcript}"
    );
    for call in local.tap.chats() {
        for message in call.messages().iter().filter(|m| m["role"] == "assistant") {
            let text = tap::message_text(message);
            assert_eq!(
                template_tokens_in(&text),
                Vec::<&str>::new(),
                "an earlier reply went back to the model with its template token: {text:?}"
            );
        }
    }
}

/// Notes that together are far longer than the 2,048-token window, one a turn: every
/// turn is answered, and no call Pincer makes is larger than the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_longer_than_the_window_stays_within_it() {
    // On a server of its own, without `serial()`: the other tests run beside it.
    let Some(local) = Local::start(Flavor::Long).await else {
        return;
    };
    let notes: Vec<String> = (1..=8).map(note).collect();
    let mut total = 0;
    for note in &notes {
        total += local.server.count_tokens(note).await;
    }
    assert!(
        total > WINDOW + WINDOW / 4,
        "the notes are {total} tokens: not enough to outgrow the window"
    );
    let run = local
        .run(&["chat"], &format!("{}\n", notes.join("\n")))
        .await;
    let chats = local.tap.chats();
    for call in &chats {
        assert_eq!(
            call.status,
            200,
            "a call did not fit the window: {}\n{}",
            call.answer,
            local.evidence()
        );
        if let Some(usage) = call.usage() {
            let used = usage["total_tokens"].as_u64().unwrap_or(0);
            assert!(used <= WINDOW, "a call used {used} tokens: {usage}");
        }
    }
    assert!(run.ok(), "{run:?}\n{}", local.evidence());
    for (turn, note) in notes.iter().enumerate() {
        let key = format!("Note {} of 8", turn + 1);
        assert!(
            chats.iter().any(|c| c.last_user_text().contains(&key)),
            "note {} was never sent ({} chars); {}",
            turn + 1,
            note.len(),
            local.evidence()
        );
    }
}

/// One long line of a diary, different for each `n` (so no two turns repeat).
fn note(n: usize) -> String {
    const PLACES: [&str; 8] = [
        "the harbour",
        "the old mill",
        "the library",
        "the orchard",
        "the bakery",
        "the station",
        "the river bank",
        "the hill fort",
    ];
    const PEOPLE: [&str; 8] = [
        "Ada", "Bram", "Celia", "Dov", "Elif", "Farid", "Greta", "Hugo",
    ];
    let mut text = format!("Note {n} of 8 for my diary, please keep it in mind. ");
    for i in 0..12 {
        let place = PLACES[(n + i) % 8];
        let person = PEOPLE[(n * 3 + i) % 8];
        text.push_str(&format!(
            "At {hour} o'clock {person} walked to {place}, counted {count} boats, painted {colour} shutters and wrote {pages} pages about it. ",
            hour = (n + i) % 12 + 1,
            count = n * 7 + i * 3,
            colour = ["blue", "green", "red", "yellow"][(n + i) % 4],
            pages = i + n,
        ));
    }
    // A short question to end on: the model answers it in a line instead of repeating
    // the note back, which on a slow machine would take minutes.
    text.push_str(&format!("What is {m} plus {m}?", m = n + 1));
    text
}
