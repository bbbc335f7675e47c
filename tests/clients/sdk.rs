//! `pincer agent` driven by the real `claude-agent-sdk` (Python), through
//! `examples/sdk/pincer-cli` as the docs tell its users to.

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use super::rig::{self, Ran};
use crate::common::{TestHome, openai_config};

fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new();
    home.write_config(&openai_config(model, ""));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    home
}

/// Run `sdk.py scenario` against `home`; `None` when the clients are not installed.
async fn sdk(home: &TestHome, scenario: &str, env: &[(&str, &str)]) -> Option<Ran> {
    let python = rig::python()?;
    let pincer = std::path::Path::new(env!("CARGO_BIN_EXE_pincer"));
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sdk/pincer-cli");
    let path = format!(
        "{}:{}",
        pincer.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut all = vec![
        ("PINCER_HOME", home.path().to_str().expect("utf-8 home")),
        ("PINCER_CLI", cli.to_str().expect("utf-8 path")),
        ("PATH", path.as_str()),
    ];
    all.extend_from_slice(env);
    Some(rig::run(&python, "sdk.py", &[scenario], &all).await)
}

/// The SDK's messages of `kind` (`AssistantMessage`, `ResultMessage`, `StreamEvent`…).
fn messages<'a>(ran: &'a Ran, kind: &str) -> Vec<&'a Value> {
    ran.events("message")
        .into_iter()
        .filter(|m| m["kind"] == kind)
        .collect()
}

fn texts(ran: &Ran) -> Vec<String> {
    messages(ran, "AssistantMessage")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|block| block["text"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_one_word_reply_reaches_the_sdk_as_text_and_as_a_streamed_delta() {
    let model = FakeModel::start().await;
    model.push(Step::text("Yes."));
    let home = home(&model);
    let Some(ran) = sdk(&home, "one_chunk", &[]).await else {
        return;
    };
    ran.succeeded();
    assert_eq!(texts(&ran), ["Yes."], "{ran}");
    let deltas: String = messages(&ran, "StreamEvent")
        .iter()
        .filter(|m| m["stream_event"]["type"] == "content_block_delta")
        .filter_map(|m| m["stream_event"]["delta"]["text"].as_str())
        .collect();
    assert_eq!(deltas, "Yes.", "{ran}");
    let result = messages(&ran, "ResultMessage")[0];
    assert_eq!(result["result"], "Yes.");
    assert_eq!(result["is_error"], false);
}
