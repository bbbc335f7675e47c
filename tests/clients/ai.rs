//! The web panel's `POST /api/chat` read by the real AI SDK (`ai` from npm, pinned in
//! `tests/clients/package.json`) against the real `pincer run` and the fake model:
//! `readUIMessageStream` over `fetch`, and `AbstractChat` with `DefaultChatTransport` as
//! `useChat` runs them (`tests/clients/ai.mjs`). A stream the library rejects, or one that
//! leaves a text part streaming, fails here.

use pincer_fakes::{FakeModel, Step};
use serde_json::Value;

use super::rig::{self, Ran};
use crate::common::{Gateway, TestHome, openai_config, wait_for};

const TOKEN: &str = "ai-sdk-test-token-3c9e1f7a-64b2-4d08-a5e1";

/// `pincer run` with the panel on a free port (and `extra` config), up and answering.
struct Panel {
    url: String,
    _gateway: Gateway,
    home: TestHome,
}

impl Panel {
    async fn start(model: &FakeModel, extra: &str) -> Panel {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let home = TestHome::new();
        home.write_config(&openai_config(
            model,
            &format!("{extra}\n[web]\nenabled = true\nlisten = \"127.0.0.1:{port}\""),
        ));
        home.write_secrets(&format!("web:\n  token: \"{TOKEN}\"\n"));
        let gateway = home.start_gateway();
        let url = format!("http://127.0.0.1:{port}");
        wait_for(
            async || {
                reqwest::get(format!("{url}/healthz"))
                    .await
                    .is_ok_and(|r| r.status().is_success())
                    .then_some(())
            },
            || format!("the panel did not come up:\n{}", home.gateway_log()),
        )
        .await;
        Panel {
            url,
            _gateway: gateway,
            home,
        }
    }

    /// Run `ai.mjs scenario` against the panel; `None` when the clients are not installed.
    async fn run(&self, scenario: &str) -> Option<Ran> {
        let node = rig::node()?;
        let env = [("PINCER_URL", self.url.as_str()), ("PINCER_TOKEN", TOKEN)];
        let ran = rig::run(&node, "ai.mjs", &[scenario], &env).await;
        assert_eq!(
            ran.code,
            Some(0),
            "the client script failed; {ran}\ngateway log:\n{}",
            self.home.gateway_log()
        );
        Some(ran)
    }
}

/// One reading of a reply (`stream` from `readUIMessageStream`, `chat` from
/// `AbstractChat`), by who sent it.
fn reading<'a>(ran: &'a Ran, event: &str, who: &str) -> &'a Value {
    ran.events(event)
        .into_iter()
        .find(|l| l["who"] == who)
        .unwrap_or_else(|| panic!("no {event} line for {who}; {ran}"))
}

/// The text parts of a reading, joined.
fn text(reading: &Value) -> String {
    parts(reading, "text")
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn parts<'a>(reading: &'a Value, kind: &str) -> Vec<&'a Value> {
    reading["parts"]
        .as_array()
        .map(|parts| parts.iter().filter(|p| p["type"] == kind).collect())
        .unwrap_or_default()
}

/// The errors the library reported while reading: its own (a chunk out of order, a chunk
/// it does not know) and the stream's `error` chunks.
fn errors(reading: &Value) -> Vec<String> {
    reading["errors"]
        .as_array()
        .map(|errors| errors.iter().map(Value::to_string).collect())
        .unwrap_or_default()
}

/// Read without the library objecting, every text and reasoning part closed, and the
/// stream ended with `finish`.
fn well_formed(reading: &Value, ran: &Ran) {
    assert_eq!(errors(reading), Vec::<String>::new(), "{ran}");
    for kind in ["text", "reasoning"] {
        for part in parts(reading, kind) {
            assert_eq!(part["state"], "done", "a part left open: {part}; {ran}");
        }
    }
    let types = reading["types"].as_array().cloned().unwrap_or_default();
    assert_eq!(types.first(), Some(&Value::from("start")), "{ran}");
    assert_eq!(types.last(), Some(&Value::from("finish")), "{ran}");
}

#[tokio::test]
async fn a_one_word_reply_reaches_the_ai_sdk_as_text() {
    let model = FakeModel::start().await;
    model.push_all([Step::text("Yes."), Step::text("Yes.")]);
    let panel = Panel::start(&model, "").await;
    let Some(ran) = panel.run("one_word").await else {
        return;
    };
    let raw = reading(&ran, "stream", "raw");
    well_formed(raw, &ran);
    assert_eq!(text(raw), "Yes.", "{ran}");
    let chat = reading(&ran, "chat", "chat");
    assert_eq!(chat["error"], Value::Null, "{ran}");
    assert_eq!(chat["status"], "ready", "{ran}");
    assert_eq!(text(chat), "Yes.", "{ran}");
}

/// A long reply streamed a word at a time, so a second request lands while it streams.
fn slow(text: &str) -> Step {
    Step::slow_text(text, 250)
}

const ALPHA: &str =
    "Alpha is the first letter and this answer takes its time to arrive here word by word";

#[tokio::test]
async fn a_message_sent_while_a_reply_streams_is_taken_into_it_and_its_stream_says_so() {
    let model = FakeModel::start().await;
    // Steer mode (the default): B reaches A's running turn, whose second call answers it.
    model.push_all([slow(ALPHA), Step::text("Beta comes second.")]);
    let panel = Panel::start(&model, "").await;
    let Some(ran) = panel.run("overlap").await else {
        return;
    };
    let a = reading(&ran, "stream", "A");
    let b = reading(&ran, "stream", "B");
    well_formed(a, &ran);
    well_formed(b, &ran);
    assert!(text(a).starts_with("Alpha is the first letter"), "{ran}");
    assert!(text(a).contains("Beta comes second."), "{ran}");
    // B's own stream: no chunk of A's, a notice of where its answer went.
    assert!(
        !text(b).contains("Alpha") && !text(b).contains("Beta"),
        "{ran}"
    );
    assert!(text(b).contains("other message"), "{ran}");
}

#[tokio::test]
async fn two_overlapping_requests_each_stream_only_their_own_turn() {
    let model = FakeModel::start().await;
    model.push_all([slow(ALPHA), Step::text("Beta comes second.")]);
    let panel = Panel::start(&model, "[agent]\nqueue_mode = \"followup\"").await;
    let Some(ran) = panel.run("overlap").await else {
        return;
    };
    let a = reading(&ran, "stream", "A");
    let b = reading(&ran, "stream", "B");
    well_formed(a, &ran);
    well_formed(b, &ran);
    assert_eq!(text(a), ALPHA, "{ran}");
    assert_eq!(text(b), "Beta comes second.", "{ran}");
}

#[tokio::test]
async fn a_reply_stopped_mid_text_still_ends_as_a_well_formed_stream() {
    let model = FakeModel::start().await;
    model.push(Step::slow_text(ALPHA, 400));
    let panel = Panel::start(&model, "").await;
    let Some(ran) = panel.run("stop").await else {
        return;
    };
    let a = reading(&ran, "stream", "A");
    well_formed(a, &ran);
    let said = text(a);
    assert!(said.starts_with("Alpha"), "{ran}");
    assert!(said.contains("Stopped."), "{ran}");
    assert!(
        !said.contains("word by word"),
        "the reply was not cut: {ran}"
    );
    // Each response has its own answer: the command's is not in the reply's.
    assert!(!said.contains("Stopping the current reply."), "{ran}");
    let stop = reading(&ran, "stream", "stop");
    well_formed(stop, &ran);
    assert_eq!(text(stop), "Stopping the current reply.", "{ran}");
}

#[tokio::test]
async fn a_model_stream_that_breaks_mid_text_ends_with_the_text_closed_and_an_error() {
    let model = FakeModel::start().await;
    // Once the text has shown, the chain does not try again; the spare steps keep a
    // retry from reaching an unscripted answer if it did.
    let broken = Step::Cut(ALPHA.to_string());
    model.push_all([broken.clone(), broken.clone(), broken]);
    let panel = Panel::start(&model, "").await;
    let Some(ran) = panel.run("model_breaks").await else {
        return;
    };
    let a = reading(&ran, "stream", "A");
    // The only error is the stream's own `error` chunk, which says what failed.
    let errors = errors(a);
    assert_eq!(errors.len(), 1, "{ran}");
    assert!(errors[0].contains("\"name\":\"Error\""), "{ran}");
    for part in parts(a, "text") {
        assert_eq!(part["state"], "done", "a part left open: {part}; {ran}");
    }
    assert!(text(a).starts_with("Alpha"), "{ran}");
    let types = a["types"].as_array().cloned().unwrap_or_default();
    assert_eq!(types.last(), Some(&Value::from("finish")), "{ran}");
}
