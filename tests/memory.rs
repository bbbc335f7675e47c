//! Memory through the real binary and the core, with a scripted fake model: the
//! memory tools, recall in a new session and on another channel, the daily log, the
//! index cap's warning, and the chat commands.

use crate::common;

use std::time::SystemTime;

use common::{TestHome, WAIT};
use pincer_channels::{ChatKind, InboundMessage, Sender};
use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The system prompt and the last user message of one request (OpenAI format).
fn prompt_and_last_user(fake: &FakeModel, request: usize) -> (String, String) {
    let body = &fake.requests()[request].body;
    let messages = body["messages"].as_array().unwrap();
    let system = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    (system, user)
}

fn tool_results(fake: &FakeModel, request: usize) -> Vec<String> {
    fake.requests()[request].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn remember_peanuts() -> Step {
    Step::tool_call(
        "memory_write",
        json!({"name": "peanut allergy", "type": "user",
               "description": "allergic to peanuts",
               "content": "Severe peanut allergy; carries an EpiPen. Allergist appointment tomorrow."}),
    )
}

fn owner_on_telegram(text: &str) -> InboundMessage {
    InboundMessage {
        channel: "telegram".into(),
        account: "default".into(),
        chat_id: "42".into(),
        chat_kind: ChatKind::Dm,
        thread_id: None,
        sender: Sender {
            raw_id: "42".into(),
            canonical: "telegram:42".into(),
            display_name: "Ana".into(),
        },
        message_id: "42-1".into(),
        text: text.into(),
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: SystemTime::now(),
        deliver_to: None,
        scheduled: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_written_in_one_session_is_recalled_in_a_new_one_and_on_another_channel() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    let config = common::openai_config(&fake, "[agent]\nowners = [\"telegram:42\"]\n");
    home.write_config(&config);
    fake.push(remember_peanuts());
    fake.push(Step::text("Noted, I'll remember."));
    let run = home.run(&["chat", "-m", "I'm allergic to peanuts, remember that"]);
    assert!(run.ok(), "{run:?}");
    let saved = &tool_results(&fake, 1)[0];
    assert!(
        saved.starts_with("Saved memory/peanut-allergy.md."),
        "{saved}"
    );
    assert!(saved.contains("Stored \"tomorrow\" as"), "{saved}");
    let file = std::fs::read_to_string(home.workspace().join("memory/peanut-allergy.md")).unwrap();
    assert!(
        file.contains("type: user") && file.contains("EpiPen"),
        "{file}"
    );
    assert!(
        !file.contains("tomorrow"),
        "relative dates are stored as absolute ones: {file}"
    );
    let index = std::fs::read_to_string(home.workspace().join("MEMORY.md")).unwrap();
    assert!(index.contains("- [peanut allergy](memory/peanut-allergy.md) — allergic to peanuts"));

    // A new session: the index is in the system prompt, the file is recalled.
    assert!(home.run(&["chat", "-m", "/new"]).ok());
    fake.push(Step::text("Try apple slices."));
    assert!(
        home.run(&[
            "chat",
            "-m",
            "Suggest a snack, keeping my allergies in mind"
        ])
        .ok()
    );
    let (system, user) = prompt_and_last_user(&fake, 2);
    assert!(system.contains("memory/peanut-allergy.md"), "{system}");
    assert!(
        user.contains("[Recalled from memory") && user.contains("EpiPen"),
        "{user}"
    );
    assert!(
        !system.contains("EpiPen"),
        "recall stays out of the cached system prompt"
    );

    // Another channel, in-process: the owner on Telegram gets the same memory.
    let paths = pincer::Home::resolve(Some(home.path().to_path_buf()), None);
    let config =
        pincer_config::load_str(&config, &paths.config_file, &paths.security_file, &[]).unwrap();
    let shutdown = CancellationToken::new();
    let mut running = pincer::start(
        &paths,
        &config,
        &pincer_config::Secrets::default(),
        &[],
        shutdown.clone(),
    )
    .unwrap();
    fake.push(Step::text("No peanuts, then."));
    running
        .inbound
        .send(owner_on_telegram("Any snack ideas? Mind the allergy.").into())
        .await
        .unwrap();
    loop {
        let message = tokio::time::timeout(WAIT, running.outbound.recv())
            .await
            .unwrap()
            .unwrap();
        if message.body.is_end() {
            break;
        }
    }
    shutdown.cancel();
    let (system, user) = prompt_and_last_user(&fake, 3);
    assert!(system.contains("Channel: telegram") && system.contains("memory/peanut-allergy.md"));
    assert!(user.contains("EpiPen"), "{user}");

    // Every turn went into today's daily log, with who said it.
    let logs: Vec<_> = std::fs::read_dir(home.workspace().join("memory/logs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let log = logs.join("\n");
    assert!(
        log.contains("I'm allergic to peanuts") && log.contains("Pincer: Noted"),
        "{log}"
    );
    assert!(log.contains("Ana (telegram:42): Any snack ideas?"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_read_forget_and_bad_calls_come_back_with_the_fix() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    fake.push(remember_peanuts());
    fake.push(Step::tool_calls([
        ("memory_search", json!({"query": "EpiPen"})),
        ("memory_read", json!({"name": "peanut allergy"})),
        ("memory_read", json!({"name": "bicycles"})),
        (
            "memory_write",
            json!({"name": "../../etc/passwd", "type": "user", "description": "x", "content": "x"}),
        ),
        (
            "memory_write",
            json!({"name": "x", "type": "diary", "description": "x", "content": "x"}),
        ),
    ]));
    fake.push(Step::tool_call(
        "memory_forget",
        json!({"name": "memory/peanut-allergy.md"}),
    ));
    fake.push(Step::text("done"));
    assert!(home.run(&["chat", "-m", "go"]).ok());
    // The first result is the write; the batch's five follow.
    let results = tool_results(&fake, 2)[1..].to_vec();
    assert!(
        results[0].contains("memory/peanut-allergy.md: allergic to peanuts"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("(user, updated ") && results[1].contains("EpiPen"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("no memory named `bicycles`; the memories are: peanut-allergy"),
        "{}",
        results[2]
    );
    assert!(results[3].contains("looks like a path"), "{}", results[3]);
    assert!(results[4].contains("must be one of"), "{}", results[4]);
    let forgot = tool_results(&fake, 3);
    assert!(
        forgot
            .last()
            .unwrap()
            .contains("Forgot memory/peanut-allergy.md")
    );
    assert!(!home.workspace().join("memory/peanut-allergy.md").exists());
    let index = std::fs::read_to_string(home.workspace().join("MEMORY.md")).unwrap();
    assert!(!index.contains("peanut"), "{index}");
    assert!(!home.path().join("etc/passwd").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_over_the_cap_is_truncated_with_a_warning_the_model_sees() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    std::fs::create_dir_all(home.workspace()).unwrap();
    let index: String = (1..=300).map(|n| format!("- note number {n}\n")).collect();
    std::fs::write(home.workspace().join("MEMORY.md"), index).unwrap();
    assert!(home.run(&["chat", "-m", "hi"]).ok());
    let (system, _) = prompt_and_last_user(&fake, 0);
    assert!(system.contains("- note number 200\n"));
    assert!(!system.contains("- note number 201\n"));
    assert!(
        system.contains("MEMORY.md is over its cap of 200 lines / 25 KB; only the first 200 of 300 lines are shown"),
        "{system}"
    );
    let show = home.run(&["memory", "show"]);
    assert!(show.ok() && show.stdout.contains("note number 300"));
    assert!(
        show.stderr.contains("sees only its head"),
        "{}",
        show.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_memory_shows_the_index_and_the_cli_searches() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    let run = home.run(&["chat", "-m", "/memory"]);
    assert!(run.stdout.contains("I have no memories yet"), "{run:?}");
    fake.push(remember_peanuts());
    fake.push(Step::text("ok"));
    assert!(home.run(&["chat", "-m", "remember"]).ok());
    let run = home.run(&["chat", "-m", "/memory"]);
    assert!(
        run.stdout
            .contains("[peanut allergy](memory/peanut-allergy.md)"),
        "{run:?}"
    );
    assert_eq!(fake.requests().len(), 2, "/memory never reaches the model");
    let search = home.run(&["memory", "search", "epipen"]);
    assert!(search.ok(), "{search:?}");
    assert!(
        search
            .stdout
            .contains("memory/peanut-allergy.md: allergic to peanuts"),
        "{}",
        search.stdout
    );
    let _: Value = json!(null);
}

/// Where a request carries Anthropic's cache marks: (message, block) of each.
fn cache_marks(body: &Value) -> Vec<(usize, usize)> {
    let mut marks = Vec::new();
    for (m, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (b, block) in message["content"].as_array().unwrap().iter().enumerate() {
            if block.get("cache_control").is_some() {
                marks.push((m, b));
            }
        }
    }
    marks
}

/// The messages through block `upto` of message `m`, without the marks.
fn prefix(body: &Value, (m, upto): (usize, usize)) -> Vec<Value> {
    let mut messages: Vec<Value> = body["messages"].as_array().unwrap()[..=m].to_vec();
    let last = messages.last_mut().unwrap();
    let content = last["content"].as_array_mut().unwrap();
    content.truncate(upto + 1);
    for message in &mut messages {
        for block in message["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
    }
    messages
}

/// Recalled memory rides on the newest message and is not stored, so the next turn
/// cannot repeat it: with Anthropic the request is marked for the prompt cache just
/// before it, and the next turn repeats everything up to that mark byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_requests_are_cached_up_to_the_recalled_memory() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&format!(
        "version = 1\n[router]\nlight = [\"claude/m\"]\n[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\n",
        fake.anthropic_base()
    ));
    home.write_secrets("providers:\n  claude:\n    api_keys: [\"sk-ant-test\"]\n");
    std::fs::create_dir_all(home.workspace().join("memory")).unwrap();
    std::fs::write(
        home.workspace().join("memory/peanuts.md"),
        "---\nname: peanuts\ndescription: allergic to peanuts\ntype: user\n---\nCarries an EpiPen.\n",
    )
    .unwrap();
    fake.push(Step::text("Apple slices."));
    assert!(
        home.run(&["chat", "-m", "a snack idea? mind the peanuts"])
            .ok()
    );
    fake.push(Step::text("Carrots."));
    assert!(
        home.run(&["chat", "-m", "another snack, still no peanuts"])
            .ok()
    );
    let requests = fake.requests();
    let (first, second) = (&requests[0].body, &requests[1].body);

    // The first turn: one user message, the person's words then the recalled file;
    // marked after the words and at the end.
    let content = first["messages"][0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{content:?}");
    assert!(content[1]["text"].as_str().unwrap().contains("EpiPen"));
    assert_eq!(cache_marks(first), vec![(0, 0), (0, 1)]);

    // The next turn repeats the first up to its first mark, without the recall.
    let last = second["messages"].as_array().unwrap().len() - 1;
    assert_eq!(cache_marks(second), vec![(last, 0), (last, 1)]);
    assert_eq!(prefix(second, (0, 0)), prefix(first, (0, 0)));
    assert!(!second["messages"][0].to_string().contains("EpiPen"));
}
