//! Telegram end to end: the real `pincer run` binary against the fake Bot API server
//! and the fake model. Each test owns its fakes and its Pincer home.

use crate::common;

use std::time::{Duration, Instant};

use common::telegram::setup;
use common::{pairing_code, wait_until};
use pincer_fakes::Step;
use pincer_fakes::telegram::{Fault, Incoming};

const WAIT: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_talks_in_a_direct_message_with_typing_shown_then_stopped() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    s.model
        .push(Step::slow_text("Hello from Pincer over Telegram", 150));
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "hi there"));
    let reply = s.wait_for_text(42, "Hello from Pincer over Telegram").await;
    assert_eq!(reply.parse_mode.as_deref(), Some("HTML"));
    assert_eq!(s.model.requests()[0].last_user_text(), "hi there");
    assert!(
        !s.platform.calls_of("sendChatAction").is_empty(),
        "typing was shown during the turn"
    );
    assert!(
        s.platform.commands().iter().any(|(name, _)| name == "new"),
        "commands published"
    );
    // That typing stops when the turn ends (it is refreshed every 4 s while one runs)
    // is proven on tokio's paused clock in channels/src/manager/tests.rs.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_with_code_arrives_as_ordered_chunks_within_the_limit() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    let mut long = String::new();
    for n in 0..12 {
        long.push_str(&format!("Section {n}: {}\n\n", filler(12)));
        long.push_str(&format!(
            "```rust\n{}```\n\n",
            format!("let x{n} = {n}; // a line of code\n").repeat(20)
        ));
    }
    assert!(long.chars().count() > 10_000);
    s.model.push(Step::text(long.clone()));
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "write a lot"));
    // Done when the last section's code block has all its 20 lines.
    wait_until("the end of the reply", || {
        s.texts_to(42).concat().matches("let x11 = 11;").count() >= 20
    })
    .await;
    let texts = s.texts_to(42);
    assert!(texts.len() >= 3, "{} chunks", texts.len());
    for text in &texts {
        assert!(
            text.encode_utf16().count() <= 4096,
            "chunk of {} units",
            text.encode_utf16().count()
        );
        assert_eq!(
            text.matches("<pre>").count(),
            text.matches("</pre>").count(),
            "unbalanced code block: {text}"
        );
    }
    let positions: Vec<usize> = (0..12)
        .map(|n| {
            texts
                .iter()
                .position(|t| t.contains(&format!("Section {n}:")))
                .unwrap()
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] <= w[1]),
        "chunks out of order: {positions:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_lets_a_stranger_in_only_after_the_owner_approves() {
    let s = setup("dm_policy = \"pairing\"", "owners = [\"telegram:42\"]").await;
    let _gateway = s.start();
    s.platform
        .inject(Incoming::dm(7, "hello, who are you?").from(7, "Ana", None));
    let reply = s.wait_for_text(7, "pairing code").await;
    let code = pairing_code(&reply.text);
    // The owner hears of it in their own chat, in one line.
    let note = s.wait_for_text(42, "asks to pair").await;
    assert_eq!(
        note.text,
        format!("Ana (telegram:7) asks to pair — reply /approve {code}")
    );
    assert!(!code.contains(['0', 'O', '1', 'I']));
    assert!(
        s.model.requests().is_empty(),
        "a stranger's message must never reach the model"
    );
    let list = s.home.run(&["pairing", "list"]);
    assert!(list.stdout.contains(&code), "{}", list.stdout);
    // A wrong code is refused.
    s.home
        .run(&["pairing", "approve", "telegram", "ABCDEFGH"])
        .fails_with(&["no pending code"]);
    // The right one, in any case, lets them in.
    let approve = s
        .home
        .run(&["pairing", "approve", "telegram", &code.to_lowercase()]);
    assert!(approve.ok(), "{approve:?}");
    s.platform.inject(Incoming::dm(7, "now can we talk?"));
    s.wait_for_text(7, "echo: now can we talk?").await;
    // One turn at a time in this chat: the message before approval was dealt with
    // before this one, and never reached the model.
    assert_eq!(
        s.model.requests().len(),
        1,
        "the message before approval stays unanswered"
    );

    // Being approved first makes nobody an owner: user 7 cannot approve the next
    // stranger; the owner (agent.owners) can, from their own chat.
    s.platform.inject(Incoming::dm(8, "me too"));
    let reply = s.wait_for_text(8, "pairing code").await;
    let code8 = pairing_code(&reply.text);
    s.platform
        .inject(Incoming::dm(8, "let me in").from(8, "Eve", None));
    s.platform
        .inject(Incoming::dm(7, &format!("/approve {code8}")).command());
    s.wait_for_text(7, "Only the owner").await;
    s.platform
        .inject(Incoming::dm(42, &format!("/approve {code8}")).command());
    s.wait_for_text(42, "Approved").await;
    s.wait_for_text(8, "You're approved").await;
    assert_eq!(
        s.texts_to(42)
            .iter()
            .filter(|t| t.contains("asks to pair"))
            .count(),
        1,
        "at most one pairing note a minute"
    );
    s.platform.inject(Incoming::dm(8, "thanks"));
    s.wait_for_text(8, "echo: thanks").await;
    // A non-owner cannot approve.
    s.platform.inject(Incoming::dm(9, "knock knock"));
    s.wait_for_text(9, "pairing code").await;
    s.platform
        .inject(Incoming::dm(8, "/approve AAAAAAAA").command());
    s.wait_for_text(8, "Only the owner").await;
    // Revoking shuts the door again.
    assert!(s.home.run(&["pairing", "revoke", "telegram", "8"]).ok());
    let before = s.model.requests().len();
    s.platform.inject(Incoming::dm(8, "still here?"));
    s.settled().await;
    let session = s.home.run(&["sessions", "show", "telegram:dm:8"]).stdout;
    assert!(!session.contains("still here?"), "let in: {session}");
    assert_eq!(s.model.requests().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowlist_with_nobody_on_it_admits_nobody() {
    let s = setup("dm_policy = \"allowlist\"", "").await;
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(5, "hello?"));
    s.settled().await;
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    assert!(!sessions.contains("telegram:dm:5"), "let in: {sessions}");
    assert!(s.model.requests().is_empty());
    assert!(
        s.texts_to(5).is_empty(),
        "allowlist never issues codes: {:?}",
        s.texts_to(5)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_group_the_bot_answers_only_when_addressed_and_topics_are_sessions() {
    let s = setup("groups = [\"-100123\"]", "").await;
    let _gateway = s.start();
    s.platform
        .inject(Incoming::group(-100123, 11, "we should pick a date").from(11, "Ann", None));
    s.platform.inject(
        Incoming::group(-100999, 11, "@pincer_test_bot hi from a group not allowed")
            .mentioning_bot(),
    );
    s.platform.inject(
        Incoming::group(-100123, 12, "what do you think?")
            .from(12, "Bob", None)
            .mentioning_bot(),
    );
    s.wait_for_text(-100123, "echo:").await;
    let requests = s.model.requests();
    assert_eq!(
        requests.len(),
        1,
        "only the addressed message in the allowed group reaches the model"
    );
    let seen = requests[0].last_user_text();
    assert!(
        seen.contains("Ann (telegram:11): we should pick a date"),
        "unaddressed messages are context: {seen}"
    );
    assert!(
        seen.contains("Bob (telegram:12): ") && seen.contains("what do you think?"),
        "{seen}"
    );
    assert!(s.texts_to(-100999).is_empty());
    // A reply to the bot addresses it too; two forum topics are two sessions.
    s.platform.inject(
        Incoming::group(-100123, 12, "in topic one")
            .in_topic(5)
            .mentioning_bot(),
    );
    s.platform.inject(
        Incoming::group(-100123, 12, "in topic two")
            .in_topic(6)
            .mentioning_bot(),
    );
    s.wait_for_text(-100123, "in topic two").await;
    s.wait_for_text(-100123, "in topic one").await;
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    assert!(
        sessions.contains("telegram:group:-100123:thread:5"),
        "{sessions}"
    );
    assert!(
        sessions.contains("telegram:group:-100123:thread:6"),
        "{sessions}"
    );
    let topic_reply = s
        .shown()
        .into_iter()
        .find(|m| m.text.contains("in topic two"))
        .unwrap();
    assert_eq!(
        topic_reply.message_thread_id,
        Some(6),
        "replies go to their topic"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_html_is_sent_again_as_plain_text() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    s.platform.reject_html(true);
    s.model.push(Step::text("Some **bold** words"));
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "format something"));
    let reply = s.wait_for_text(42, "bold").await;
    assert_eq!(reply.parse_mode, None, "the retry goes without markup");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_waited_out() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    s.model.push(Step::text("after the wait"));
    let _gateway = s.start();
    s.platform.wait_for_call("getUpdates", WAIT).await;
    for method in ["sendMessage", "editMessageText"] {
        s.platform
            .fail_next(method, Fault::TooManyRequests { retry_after: 1 });
    }
    let sent_at = Instant::now();
    s.platform.inject(Incoming::dm(42, "go"));
    s.wait_for_text(42, "after the wait").await;
    assert!(
        sent_at.elapsed() >= Duration::from_secs(1),
        "retry_after was not honoured"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_loses_nothing_and_duplicates_nothing() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "before"));
    s.wait_for_text(42, "echo: before").await;
    s.platform.outage(Duration::from_secs(5)).await;
    s.platform.inject(Incoming::dm(42, "during"));
    s.platform.wait_until_up().await;
    s.wait_for_text(42, "echo: during").await;
    // A message sent again after the outage would be answered before this one.
    s.round_trip(42, "after").await;
    let texts = s.texts_to(42);
    assert_eq!(
        texts.iter().filter(|t| t.contains("echo: before")).count(),
        1,
        "{texts:?}"
    );
    assert_eq!(
        texts.iter().filter(|t| t.contains("echo: during")).count(),
        1,
        "{texts:?}"
    );
    let status = s.home.run(&["status"]).stdout;
    assert!(status.contains("telegram"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_receiving_and_replying_answers_once_after_restart() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    s.model.push(Step::Stall);
    let gateway = s.start();
    s.platform.inject(Incoming::dm(42, "are you alive?"));
    s.model.wait_for_requests(1, WAIT).await;
    drop(gateway); // SIGKILL mid-turn
    let _gateway = s.start();
    s.wait_for_text(42, "echo: are you alive?").await;
    // A second answer would come before this one's.
    s.round_trip(42, "and now?").await;
    let answers = s
        .texts_to(42)
        .iter()
        .filter(|t| t.contains("echo: are you alive?"))
        .count();
    assert_eq!(answers, 1, "answered exactly once: {:?}", s.texts_to(42));
    s.settled().await; // the update was confirmed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_is_downloaded_to_the_inbox_and_mentioned_to_the_model() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    let _gateway = s.start();
    s.platform
        .inject(Incoming::dm(42, "look at this").with_photo(vec![0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3]));
    s.wait_for_text(42, "look at this").await;
    let seen = s.model.requests()[0].last_user_text();
    assert!(
        seen.contains("[attached:") && seen.contains("inbox"),
        "{seen}"
    );
    let inbox = s.home.workspace().join("inbox/telegram");
    let files: Vec<_> = std::fs::read_dir(&inbox).unwrap().collect();
    assert_eq!(files.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_sent_while_the_bot_was_down_are_fetched_and_each_answered_once() {
    let users = [7, 8, 9, 10];
    let s = setup(
        &format!("allow_from = {users:?}"),
        "owners = [\"telegram:42\"]",
    )
    .await;
    for user in users {
        let text = format!("file from {user}");
        s.platform
            .inject(Incoming::dm(user, &text).with_document("a.txt", b"hi".to_vec()));
    }
    // Waiting at Telegram, the messages reach the gateway as it starts, while it looks
    // for what its last run left unanswered: none of them is one of those.
    let _gateway = s.start();
    for user in users {
        s.wait_for_text(user, &format!("file from {user}")).await;
    }
    s.round_trip(42, "settled?").await;
    for request in s.model.requests() {
        let seen = request.last_user_text();
        assert!(seen.contains("[attached:") || seen == "settled?", "{seen}");
    }
    for user in users {
        assert_eq!(s.texts_to(user).len(), 1, "{:?}", s.texts_to(user));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_shows_as_down_in_status_and_the_gateway_keeps_running() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    s.platform.fail_next("getMe", Fault::Unauthorized);
    let mut gateway = s.start();
    let status = s
        .status_shows("down: Telegram rejected the bot token")
        .await;
    assert!(status.contains("Gateway: running"), "{status}");
    assert!(
        gateway.child.try_wait().unwrap().is_none(),
        "a bad token must not crash the gateway"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_made_in_a_chat_is_delivered_to_that_chat() {
    let s = setup("", "owners = [\"telegram:42\"]").await;
    let at = (chrono::Utc::now() + chrono::Duration::seconds(3))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    s.model.push(Step::tool_call("cron", serde_json::json!({"action": "add", "name": "tea", "at": at, "prompt": "remind me to drink tea"})));
    s.model.push(Step::text("Done, I'll remind you."));
    let _gateway = s.start();
    s.platform
        .inject(Incoming::dm(42, "remind me to drink tea in a few seconds"));
    s.wait_for_text(42, "I'll remind you").await;
    // The run's prompt reaches the model and its answer comes back to this chat.
    let reminder = s.wait_for_text(42, "remind me to drink tea").await;
    assert!(
        reminder.text.contains("Scheduled task"),
        "{}",
        reminder.text
    );
    wait_until("the one-shot job's removal after it ran", || {
        let list = s.home.run(&["cron", "list"]).stdout;
        list.contains("No scheduled jobs")
    })
    .await;
}

/// Config that makes `write_file` need the owner's yes, with a short wait.
const ASK_WRITES: &str =
    "\n[tools.permissions]\nask = [\"write_file\"]\napproval_timeout_secs = 3\n";

fn write_step(name: &str) -> Step {
    Step::tool_call(
        "write_file",
        serde_json::json!({"path": name, "content": "x"}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_risky_call_waits_for_the_owners_button_and_strangers_cannot_press_it() {
    let group = format!("groups = [\"-1001\"]\n{ASK_WRITES}");
    let s = setup(&group, "owners = [\"telegram:42\"]").await;
    s.model
        .push_all([write_step("plan.md"), Step::text("Plan saved.")]);
    let _gateway = s.start();
    s.platform
        .inject(Incoming::group(-1001, 42, "save the plan").mentioning_bot());
    let question = s.wait_for_text(-1001, "Allow write_file `plan.md`?").await;
    let buttons: Vec<String> = s
        .platform
        .buttons(-1001, question.message_id)
        .into_iter()
        .map(|(label, _)| label)
        .collect();
    assert_eq!(buttons, ["Allow once", "Always", "Deny"]);

    // Another member of the group presses: told no, and nothing runs.
    s.platform
        .press(-1001, 7, ":once")
        .expect("buttons on screen");
    let toast = s
        .platform
        .wait_for_call("answerCallbackQuery", WAIT)
        .await
        .expect("the press is answered");
    assert!(
        toast
            .param("text")
            .as_str()
            .unwrap()
            .contains("Only the owner"),
        "{:?}",
        toast.params
    );
    // The press was refused before it was answered.
    assert!(!s.home.workspace().join("plan.md").exists());

    s.platform
        .press(-1001, 42, ":once")
        .expect("still on screen");
    s.wait_for_text(-1001, "Plan saved.").await;
    assert!(s.home.workspace().join("plan.md").exists());
    // The question now says what happened, and its buttons are gone.
    let settled = s.wait_for_text(-1001, "Allowed once").await;
    assert_eq!(settled.message_id, question.message_id);
    assert!(s.platform.buttons(-1001, question.message_id).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_always_and_silence_each_reach_the_waiting_call() {
    let s = setup(ASK_WRITES, "owners = [\"telegram:42\"]").await;
    s.model.push_all([
        write_step("denied.md"),
        Step::text("Understood, not written."),
        write_step("kept.md"),
        Step::text("Written, and I won't ask again."),
        write_step("kept.md"),
        Step::text("Written again without asking."),
        write_step("late.md"),
        Step::text("No answer, so I left it."),
    ]);
    let _gateway = s.start();

    s.platform.inject(Incoming::dm(42, "write denied.md"));
    s.wait_for_text(42, "Allow write_file `denied.md`?").await;
    s.platform.press(42, 42, ":deny").expect("buttons");
    s.wait_for_text(42, "Understood, not written.").await;
    assert!(!s.home.workspace().join("denied.md").exists());
    let refused = s.model.requests()[1].body["messages"].to_string();
    assert!(refused.contains("did not approve"), "{refused}");

    s.platform.inject(Incoming::dm(42, "write kept.md"));
    s.wait_for_text(42, "Allow write_file `kept.md`?").await;
    s.platform.press(42, 42, ":always").expect("buttons");
    s.wait_for_text(42, "Written, and I won't ask again.").await;
    s.platform.inject(Incoming::dm(42, "write kept.md again"));
    s.wait_for_text(42, "Written again without asking.").await;
    let asked = s
        .shown()
        .iter()
        .filter(|m| m.text.contains("Allow write_file `kept.md`?") || m.text.contains("kept.md`"))
        .count();
    assert_eq!(asked, 1, "\"always\" is remembered: {:#?}", s.shown());

    // Nobody answers: after approval_timeout_secs the call is refused and the
    // question says so.
    s.platform.inject(Incoming::dm(42, "write late.md"));
    s.wait_for_text(42, "Allow write_file `late.md`?").await;
    s.wait_for_text(42, "No answer, so I left it.").await;
    s.wait_for_text(42, "No answer — write_file `late.md` was not run")
        .await;
    assert!(!s.home.workspace().join("late.md").exists());
    // A press after the timeout is told the question is closed.
    assert!(
        s.platform.press(42, 42, ":once").is_none(),
        "buttons removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_offers_its_choices_as_buttons_to_the_person_asked_who_may_also_type() {
    let s = setup("groups = [\"-1001\"]\n", "owners = [\"telegram:42\"]").await;
    let ask = |question: &str, options: &[&str]| {
        let mut args = serde_json::json!({"question": question});
        if !options.is_empty() {
            args["options"] = serde_json::json!(options);
        }
        Step::tool_call("question", args)
    };
    s.model.push_all([
        ask("Which day suits you?", &["Tuesday", "Thursday"]),
        Step::text("Thursday it is."),
        ask("What time?", &["9:00", "14:00"]),
        Step::text("Noted."),
        ask("Anything else?", &[]),
        Step::text("Tell me when you know."),
    ]);
    let _gateway = s.start();

    // In a group: the choices are buttons, and only the person asked can press them.
    s.platform
        .inject(Incoming::group(-1001, 42, "book the dentist").mentioning_bot());
    let question = s.wait_for_text(-1001, "Which day suits you?").await;
    let labels: Vec<String> = s
        .platform
        .buttons(-1001, question.message_id)
        .into_iter()
        .map(|(label, _)| label)
        .collect();
    assert_eq!(labels, ["Tuesday", "Thursday"]);
    s.platform
        .press(-1001, 7, ":p0")
        .expect("buttons on screen");
    let toast = s
        .platform
        .wait_for_call("answerCallbackQuery", WAIT)
        .await
        .expect("the press is answered");
    let toast = toast.param("text").as_str().unwrap_or_default().to_string();
    assert!(toast.contains("Only the person asked"), "{toast}");
    s.platform.press(-1001, 42, ":p1").expect("still on screen");
    s.wait_for_text(-1001, "Thursday it is.").await;
    let answered = s.model.requests()[1].body["messages"].to_string();
    assert!(
        answered.contains("The user answered: Thursday"),
        "{answered}"
    );
    let settled = s.wait_for_text(-1001, "→ Thursday").await;
    assert_eq!(settled.message_id, question.message_id);
    assert!(s.platform.buttons(-1001, question.message_id).is_empty());

    // Typing answers too, and what was typed is the answer, not a message of its own.
    s.platform.inject(Incoming::dm(42, "and the time?"));
    s.wait_for_text(42, "What time?").await;
    s.platform.inject(Incoming::dm(42, "half past ten"));
    s.wait_for_text(42, "Noted.").await;
    let answered = s.model.requests()[3].body["messages"].to_string();
    assert!(
        answered.contains("The user answered: half past ten"),
        "{answered}"
    );
    s.wait_for_text(42, "→ half past ten").await;

    // Without choices: asked as a plain message, and the turn ends to hear the answer.
    s.platform.inject(Incoming::dm(42, "anything?"));
    let asked = s.wait_for_text(42, "Anything else?").await;
    assert!(s.platform.buttons(42, asked.message_id).is_empty());
    s.wait_for_text(42, "Tell me when you know.").await;
    let requests = s.model.requests();
    assert_eq!(
        requests[4].last_user_text(),
        "anything?",
        "\"half past ten\" was not a turn of its own"
    );
}

/// `n` different runs of filler words: the same words over and over would be a model
/// looping, which the agent stops.
fn filler(n: usize) -> String {
    (0..n)
        .map(|i| format!("words that fill the paragraph, run {i} "))
        .collect()
}
