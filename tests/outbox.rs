//! Replies across a crash, with the real `pincer run` killed (SIGKILL) at the worst
//! moments and started again, against the fake Telegram and the fake model: each reply
//! arrives exactly once, the model is not asked again for what it already answered, and
//! no tool runs twice. The fake Bot API holds a `sendMessage` unanswered (`Fault::Hang`)
//! so the kill lands while the reply is on its way.

use crate::common;

use common::PATIENCE;
use common::telegram::setup;
use common::wait_until;
use pincer_fakes::Step;
use pincer_fakes::telegram::{Fault, Incoming};
use serde_json::json;

const OWNER: i64 = 42;
const RESENT: &str = "(sent after a restart)";

fn owner() -> String {
    format!("owners = [\"telegram:{OWNER}\"]")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_the_answer_and_its_send_the_reply_arrives_once_without_a_new_call() {
    let s = setup("", &owner()).await;
    s.model.push(Step::text("The plumber comes on Tuesday."));
    s.platform.fail_next("sendMessage", Fault::Hang);
    let gateway = s.start();
    s.platform
        .inject(Incoming::dm(OWNER, "when does the plumber come?"));
    // The reply is on its way to Telegram, which does not answer: kill the gateway there.
    s.platform
        .wait_for_call("sendMessage", PATIENCE)
        .await
        .expect("the reply was sent");
    drop(gateway);
    assert!(
        s.texts_to(OWNER).is_empty(),
        "nothing arrived before the kill"
    );

    let _gateway = s.start();
    let reply = s
        .wait_for_text(OWNER, "The plumber comes on Tuesday.")
        .await;
    assert!(reply.text.contains(RESENT), "{}", reply.text);
    // The barrier: a later message's answer comes after anything else this chat gets.
    s.platform.inject(Incoming::dm(OWNER, "thanks"));
    s.wait_for_text(OWNER, "echo: thanks").await;
    let texts = s.texts_to(OWNER);
    assert_eq!(
        texts.iter().filter(|t| t.contains("Tuesday")).count(),
        1,
        "{texts:#?}"
    );
    assert_eq!(
        s.model.requests().len(),
        2,
        "the model was asked once for each message, not again for the first"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_two_parts_of_a_long_reply_each_part_arrives_once() {
    let s = setup("", &owner()).await;
    let long: String = (0..12)
        .map(|n| {
            let words: String = (0..120)
                .map(|i| format!("w{}-{i} ", n * 7 + i % 5))
                .collect();
            format!("Section {n}: {words}\n\n")
        })
        .collect();
    assert!(long.len() > 9_000, "three Telegram messages at least");
    s.model.push(Step::text(long));
    // The first part goes; the second is held.
    s.platform.fail_next("sendMessage", Fault::Pass);
    s.platform.fail_next("sendMessage", Fault::Hang);
    let gateway = s.start();
    s.platform.inject(Incoming::dm(OWNER, "write a lot"));
    let calls = s.platform.wait_for_calls("sendMessage", 2, PATIENCE).await;
    assert_eq!(calls.len(), 2, "{:?}", s.log());
    drop(gateway);
    assert_eq!(
        s.texts_to(OWNER).len(),
        1,
        "one part arrived before the kill"
    );

    let _gateway = s.start();
    s.wait_for_text(OWNER, "Section 11:").await;
    s.platform.inject(Incoming::dm(OWNER, "thanks"));
    s.wait_for_text(OWNER, "echo: thanks").await;
    let all = s.texts_to(OWNER).concat();
    for n in 0..12 {
        assert_eq!(
            all.matches(&format!("Section {n}:")).count(),
            1,
            "section {n}: {:#?}",
            s.texts_to(OWNER)
        );
    }
    assert_eq!(all.matches(RESENT).count(), 1, "{all}");
    assert_eq!(s.model.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_a_tool_with_an_effect_it_is_not_run_again_and_the_owner_is_asked() {
    let s = setup("", &owner()).await;
    s.model.push(Step::tool_call(
        "exec",
        json!({ "command": "echo ran >> effect.txt; sleep 60" }),
    ));
    let gateway = s.start();
    s.platform.inject(Incoming::dm(OWNER, "note it down"));
    let effect = s.home.workspace().join("effect.txt");
    wait_until("the tool's effect", async || effect.exists()).await;
    drop(gateway);

    let _gateway = s.start();
    let notice = s.wait_for_text(OWNER, "interrupted me").await;
    assert!(notice.text.contains("exec"), "{}", notice.text);
    assert_eq!(s.model.requests().len(), 1, "the model was not asked again");
    // Going on: the model hears that the call was cut short, and the tool is not rerun.
    s.platform.inject(Incoming::dm(OWNER, "go on"));
    s.wait_for_text(OWNER, "echo: go on").await;
    let requests = s.model.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body["messages"].to_string();
    assert!(sent.contains("interrupted"), "{sent}");
    assert_eq!(std::fs::read_to_string(&effect).unwrap(), "ran\n");
}
