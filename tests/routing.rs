//! The cheap-first router, pins, escalation, compaction and cost, through the real
//! binary against the fake model (which records the model name of each request).

use crate::common;

use common::TestHome;
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

fn two_tier(fake: &FakeModel, extra: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "version = 1\n{extra}\n[router]\nlight = [\"fake/small\"]\nheavy = [\"fake/big\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        fake.openai_base()
    ));
    home
}

fn models(fake: &FakeModel) -> Vec<String> {
    fake.requests()
        .iter()
        .map(|r| r.model().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hi_goes_light_and_a_long_message_with_code_goes_heavy() {
    let fake = FakeModel::start().await;
    let home = two_tier(&fake, "");
    assert!(home.run(&["chat", "-m", "hi"]).ok());
    assert!(home.run(&["chat", "-m", "/new"]).ok());
    let code = format!(
        "Why does this panic?\n```rust\n{}```\nPlease explain in detail.",
        "let v: Vec<u8> = Vec::new(); v[0];\n".repeat(30)
    );
    assert!(home.run(&["chat", "-m", &code]).ok());
    assert_eq!(models(&fake), ["small", "big"]);
    // The light model is offered the escalate tool; the heavy one is not.
    let tools = |n: usize| fake.requests()[n].body["tools"].to_string();
    assert!(tools(0).contains("escalate"));
    assert!(!tools(1).contains("escalate"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_light_model_escalates_with_a_tool_call() {
    let fake = FakeModel::start().await;
    let home = two_tier(&fake, "");
    fake.push(Step::tool_call(
        "escalate",
        json!({"reason": "needs careful proof"}),
    ));
    fake.push(Step::text("Here is the careful proof."));
    let run = home.run(&["chat", "-m", "prove it"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "Here is the careful proof.\n");
    assert_eq!(models(&fake), ["small", "big"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_empty_light_chain_hands_the_turn_to_heavy() {
    let fake = FakeModel::start().await;
    let home = two_tier(&fake, "");
    fake.push(Step::error(401));
    fake.push(Step::text("heavy answered"));
    let run = home.run(&["chat", "-m", "hello"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "heavy answered\n");
    assert_eq!(models(&fake), ["small", "big"]);

    fake.push(Step::text(""));
    fake.push(Step::text("heavy again"));
    let run = home.run(&["chat", "-m", "say something"]);
    assert_eq!(run.stdout, "heavy again\n", "{run:?}");
    assert_eq!(models(&fake)[2..], ["small", "big"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_model_is_used_and_never_falls_back() {
    let fake = FakeModel::start().await;
    let home = two_tier(&fake, "");
    let pin = home.run(&["chat", "-m", "/model heavy"]);
    assert!(pin.stdout.contains("pinned to the heavy chain"), "{pin:?}");
    assert!(home.run(&["chat", "-m", "hi"]).ok());
    assert_eq!(models(&fake), ["big"], "pinned heavy even for hi");
    let status = home.run(&["chat", "-m", "/status"]).stdout;
    assert!(status.contains("pinned to heavy"), "{status}");

    let pin = home.run(&["chat", "-m", "/model fake/missing-model"]);
    assert!(pin.stdout.contains("will not fall back"), "{pin:?}");
    let run = home.run(&["chat", "-m", "hi again"]);
    run.fails_with(&["missing-model"]);
    assert_eq!(
        models(&fake),
        ["big", "missing-model"],
        "no fallback, no escalation"
    );
    assert!(
        home.run(&["chat", "-m", "/model nope/x"])
            .stdout
            .contains("Cannot pin")
    );
    assert!(home.run(&["chat", "-m", "/model auto"]).ok());
    assert!(home.run(&["chat", "-m", "hi"]).ok());
    assert_eq!(models(&fake).last().map(String::as_str), Some("small"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn costs_add_up_per_call_and_show_in_usage() {
    let fake = FakeModel::start().await;
    // One dollar per thousand tokens in and out, so the figures are easy to check.
    let home = two_tier(
        &fake,
        "[prices.\"fake/small\"]\ninput = 1000.0\noutput = 1000.0\ncache_read = 1000.0\n",
    );
    assert!(home.run(&["chat", "-m", "hi"]).ok());
    assert!(home.run(&["chat", "-m", "hello again"]).ok());
    let store = pincer::store::Store::open(&home.path().join("pincer.db")).unwrap();
    let (usage, cost) = store.usage_since(0).await.unwrap();
    let tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens;
    assert!(tokens > 0);
    assert!(
        (cost - tokens as f64 / 1000.0).abs() < 1e-6,
        "{cost} for {tokens} tokens"
    );
    let shown = home.run(&["chat", "-m", "/usage"]).stdout;
    assert!(shown.contains(&format!("${cost:.4}")), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_turn_sends_the_first_turns_bytes_as_its_prefix() {
    let fake = FakeModel::start().await;
    let home = two_tier(&fake, "");
    assert!(home.run(&["chat", "-m", "first"]).ok());
    assert!(home.run(&["chat", "-m", "second"]).ok());
    let requests = fake.requests();
    let (one, two) = (&requests[0].body, &requests[1].body);
    assert_eq!(one["tools"], two["tools"]);
    let (a, b) = (
        one["messages"].as_array().unwrap(),
        two["messages"].as_array().unwrap(),
    );
    assert_eq!(
        a[..],
        b[..a.len()],
        "the earlier messages (system included) must be byte-identical"
    );
    assert!(b.len() > a.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_too_long_context_is_compacted_and_the_turn_retried_once() {
    let fake = FakeModel::start().await;
    let home = two_tier(&fake, "");
    for n in 0..5 {
        assert!(home.run(&["chat", "-m", &format!("fact number {n}")]).ok());
    }
    let before = fake.requests().len();
    let too_long = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    fake.push(Step::Error {
        status: 400,
        body: too_long.into(),
        retry_after: None,
    });
    fake.push(Step::text(
        "The user gave three facts, numbered zero to two, one message each, and has not asked about them yet.",
    ));
    fake.push(Step::text("Answer after compaction."));
    let run = home.run(&["chat", "-m", "what facts did I give?"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "Answer after compaction.\n");
    let requests = &fake.requests()[before..];
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1].body.to_string().contains("You keep notes"),
        "the second call summarises"
    );
    let retried = requests[2].body["messages"].to_string();
    assert!(
        retried.contains("[Summary of our earlier conversation]"),
        "{retried}"
    );
    assert!(
        !retried.contains("fact number 0"),
        "summarised messages are not sent again"
    );
    assert!(
        retried.contains("fact number 4"),
        "recent turns stay word for word"
    );
    // The whole transcript is still in the store.
    assert!(home.transcript().contains("fact number 0"));
    // And /compact works on demand.
    let compact = home.run(&["chat", "-m", "/compact"]);
    assert!(
        compact.ok()
            && (compact.stdout.contains("Compacted")
                || compact.stdout.contains("nothing to compact")),
        "{compact:?}"
    );
}
