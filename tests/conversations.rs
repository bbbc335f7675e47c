//! The assistant's own past, end to end: the real `pincer run` against the fake
//! Telegram and the fake model. What was said in one chat is found from another with
//! `conversation_search` (loaded through `tool_search`, as a tool left out of the first
//! request is), by `pincer sessions search`, held to a member's own direct chats, and
//! never offered in a group.

use crate::common;

use common::telegram::{Setup, setup};
use common::trust::{GROUP, MEMBER, OWNER, offered_tools, requests, tool_results};
use pincer_fakes::Step;
use pincer_fakes::telegram::Incoming;
use serde_json::json;

/// The owner, a member who may search, and a group both are in.
async fn chats() -> Setup {
    setup(
        &format!("allow_from = [\"{MEMBER}\"]\ngroups = [\"{GROUP}\"]"),
        &format!(
            "owners = [\"telegram:{OWNER}\"]\n[access]\nmember_tools = [\"conversation_search\"]"
        ),
    )
    .await
}

/// Three conversations about a plumber, each answered (the fake model echoes).
async fn talk_about_the_plumber(s: &Setup) {
    s.platform.inject(Incoming::dm(
        OWNER,
        "The plumber Jorge comes on Tuesday at 9, keep the gate open",
    ));
    s.wait_for_text(OWNER, "echo: The plumber Jorge").await;
    s.platform
        .inject(Incoming::dm(MEMBER, "my plumber charges far too much").from(MEMBER, "Ana", None));
    s.wait_for_text(MEMBER, "echo: my plumber").await;
    s.platform.inject(
        Incoming::group(GROUP, MEMBER, "@pincer_test_bot plumbers party tonight")
            .from(MEMBER, "Ana", None)
            .mentioning_bot(),
    );
    s.wait_for_text(GROUP, "echo:").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_finds_what_they_said_in_another_chat_and_the_cli_finds_it_too() {
    let s = chats().await;
    let _gateway = s.start();
    talk_about_the_plumber(&s).await;
    s.model.push_all([
        Step::tool_call("tool_search", json!({"query": "conversation_search"})),
        Step::tool_call(
            "conversation_search",
            json!({"query": "plumber", "person": "me"}),
        ),
        Step::tool_call("conversation_search", json!({"query": "plumbers"})),
        Step::text("You said Jorge comes on Tuesday at 9."),
    ]);
    s.platform.inject(Incoming::dm(
        OWNER,
        "what did I tell you about the plumber?",
    ));
    s.wait_for_text(OWNER, "You said Jorge comes").await;

    let sent = requests(&s, 7).await;
    let asked = &sent[3];
    // Left out of the first request, named in tool_search's description…
    assert!(!common::trust::tool_names(&asked.body).contains(&"conversation_search".to_string()));
    assert!(offered_tools(&asked.body).contains(&"conversation_search".to_string()));
    // …and offered whole once loaded.
    assert!(common::trust::tool_names(&sent[4].body).contains(&"conversation_search".to_string()));
    let results = tool_results(&sent[6].body);
    let mine = &results[1];
    assert!(mine.contains("- telegram:dm:42 · "), "{mine}");
    assert!(
        mine.contains("The «plumber» Jorge comes on Tuesday"),
        "{mine}"
    );
    assert!(mine.contains("telegram:42:"), "who said it: {mine}");
    assert!(!mine.contains("charges"), "person = me: {mine}");
    // Without a person, the owner finds every conversation, the member's and the group's.
    let every = &results[2];
    for key in ["telegram:dm:42", "telegram:dm:7", "telegram:group:-1001"] {
        assert!(every.contains(key), "{key}: {every}");
    }
    assert!(every.contains("my «plumber» charges"), "{every}");

    let cli = s.home.run(&["sessions", "search", "plumber", "jorge"]);
    assert!(cli.ok(), "{cli:?}");
    assert!(
        cli.stdout.contains("telegram:dm:42") && cli.stdout.contains("«Jorge»"),
        "{}",
        cli.stdout
    );
    assert!(!cli.stdout.contains("charges"), "{}", cli.stdout);
    let narrowed = s.home.run(&[
        "sessions",
        "search",
        "plumber",
        "--person",
        &format!("telegram:{MEMBER}"),
        "--chat",
        &format!("telegram:dm:{MEMBER}"),
    ]);
    assert!(
        narrowed.stdout.starts_with("1 message found")
            && narrowed.stdout.contains("charges far too much"),
        "{}",
        narrowed.stdout
    );
    let tomorrow = (chrono::Utc::now() + chrono::Days::new(1)).format("%Y-%m-%d");
    let later = s.home.run(&[
        "sessions",
        "search",
        "plumber",
        "--since",
        &tomorrow.to_string(),
    ]);
    assert!(
        later.stdout.starts_with("Nothing found"),
        "{}",
        later.stdout
    );
    let bad = s
        .home
        .run(&["sessions", "search", "plumber", "--since", "last month"]);
    assert!(
        !bad.ok() && bad.stderr.contains("write YYYY-MM-DD"),
        "{bad:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_finds_only_their_own_direct_chat_and_nobody_searches_from_a_group() {
    let s = chats().await;
    let _gateway = s.start();
    talk_about_the_plumber(&s).await;
    s.model.push_all([
        Step::tool_call("conversation_search", json!({"query": "plumber"})),
        Step::text("Found yours."),
    ]);
    s.platform
        .inject(Incoming::dm(MEMBER, "what did I say about plumbers?").from(MEMBER, "Ana", None));
    s.wait_for_text(MEMBER, "Found yours.").await;
    let sent = requests(&s, 5).await;
    let found = tool_results(&sent[4].body).join("\n");
    assert!(found.contains("telegram:dm:7"), "{found}");
    assert!(found.contains("my «plumber» charges"), "{found}");
    for elsewhere in ["telegram:dm:42", "Jorge", "telegram:group", "party"] {
        assert!(
            !found.contains(elsewhere),
            "{elsewhere} reached a member: {found}"
        );
    }

    // In the group it is not offered, to the member or the owner, and a forced call
    // finds nothing.
    s.model.push_all([
        Step::tool_call("conversation_search", json!({"query": "plumber"})),
        Step::text("Not here."),
    ]);
    s.platform.inject(
        Incoming::group(GROUP, OWNER, "@pincer_test_bot what about the plumber?").mentioning_bot(),
    );
    s.wait_for_text(GROUP, "Not here.").await;
    let sent = requests(&s, 7).await;
    assert!(!offered_tools(&sent[5].body).contains(&"conversation_search".to_string()));
    let refused = tool_results(&sent[6].body).join("\n");
    assert!(refused.contains("not available"), "{refused}");
    assert!(!refused.contains("Jorge"), "{refused}");
}

/// A secret the owner once typed is not handed back by a search for a piece of it: the
/// marks around a matched word would split it where the scrubber could not know it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_for_part_of_a_secret_does_not_bring_the_secret_back() {
    let model = pincer_fakes::FakeModel::start().await;
    let home = common::TestHome::new();
    home.write_config(&common::openai_config(&model, ""));
    home.write_secrets("providers:\n  fake:\n    api_key: sk-TOPSECRETVALUE9876543210\n");
    let said = home.run(&[
        "chat",
        "-m",
        "remember the alarm code: sk-TOPSECRETVALUE9876543210 for the garage",
    ]);
    assert!(said.ok(), "{said:?}");
    model.push_all([
        Step::tool_call("conversation_search", json!({"query": "sk"})),
        Step::tool_call(
            "conversation_search",
            json!({"query": "TOPSECRETVALUE9876543210"}),
        ),
        Step::tool_call("conversation_search", json!({"query": "alarm garage"})),
        Step::text("Searched."),
    ]);
    let run = home.run(&["chat", "-m", "what was the alarm code?"]);
    assert!(run.ok(), "{run:?}");
    let requests = model.requests();
    let results = tool_results(&requests.last().unwrap().body);
    assert_eq!(results.len(), 3, "{results:?}");
    for result in &results {
        assert!(result.contains("garage"), "the message was found: {result}");
        assert!(!result.contains("TOPSECRET"), "{result}");
    }
}

/// The owner's own words found again are the owner's; anything else found (a reply,
/// someone's message) is not, and makes the conversation untrusted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_owners_own_words_leave_the_turn_trusted() {
    let model = pincer_fakes::FakeModel::start().await;
    let home = common::TestHome::new();
    home.write_config(&common::openai_config(&model, ""));
    assert!(home.run(&["chat", "-m", "the plumber comes Tuesday"]).ok());
    let untrusted = || {
        let home = home.path().join("pincer.db");
        async move {
            let store = pincer::store::Store::open(&home).unwrap();
            let id = store.find_session("terminal:dm:local").await.unwrap();
            store.session_meta(id).await.unwrap().untrusted()
        }
    };
    model.push_all([
        Step::tool_call(
            "conversation_search",
            json!({"query": "plumber", "person": "me"}),
        ),
        Step::text("You said Tuesday."),
    ]);
    assert!(
        home.run(&["chat", "-m", "when does the plumber come?"])
            .ok()
    );
    assert!(!untrusted().await, "only the owner's words were found");
    model.push_all([
        Step::tool_call("conversation_search", json!({"query": "plumber"})),
        Step::text("Found it."),
    ]);
    assert!(home.run(&["chat", "-m", "and what did you answer?"]).ok());
    let found = tool_results(&model.requests().last().unwrap().body).join("\n");
    assert!(found.contains("assistant: echo:"), "{found}");
    assert!(
        untrusted().await,
        "a reply was found: the turn is untrusted"
    );
}
