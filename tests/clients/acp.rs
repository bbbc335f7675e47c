//! `pincer acp` driven by the real Agent Client Protocol SDKs — `@agentclientprotocol/sdk`
//! (npm, `acp.mjs`) and `agent-client-protocol` (PyPI, `acp_python.py`; not `acp.py`, which would shadow the SDK's own `acp` package) — as editors built on
//! them drive it: a one-word reply streams, a mode change is reported, an image prompt
//! reaches the model, and stored sessions are listed and closed. Every case runs both
//! SDKs; the scripts print the same lines.

use std::path::PathBuf;

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use super::rig::{self, Ran};
use crate::common::{TestHome, openai_config};

#[derive(Debug, Clone, Copy)]
enum Sdk {
    Js,
    Python,
}

const SDKS: [Sdk; 2] = [Sdk::Js, Sdk::Python];

/// A home whose model is `model`, with `extra` config.
fn home(model: &FakeModel, extra: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&openai_config(model, extra));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    home
}

/// Run `scenario` of `sdk`'s script against `pincer --home H acp`; `None` when the
/// clients are not installed.
async fn drive(sdk: Sdk, home: &TestHome, scenario: &str, extra: &[&str]) -> Option<Ran> {
    let (interpreter, script): (Option<PathBuf>, _) = match sdk {
        Sdk::Js => (rig::node(), "acp.mjs"),
        Sdk::Python => (rig::python(), "acp_python.py"),
    };
    let interpreter = interpreter?;
    let home = home.path().to_str().expect("utf-8 home");
    let mut args = vec![scenario, env!("CARGO_BIN_EXE_pincer"), home];
    args.extend_from_slice(extra);
    let ran = rig::run(&interpreter, script, &args, &[]).await;
    ran.succeeded();
    Some(ran)
}

/// The session updates the client saw, of `kind` (`agent_message_chunk`, …).
fn updates<'a>(ran: &'a Ran, kind: &str) -> Vec<&'a Value> {
    ran.events("update")
        .into_iter()
        .map(|line| &line["update"])
        .filter(|update| update["sessionUpdate"] == kind)
        .collect()
}

/// The id `session/new` gave.
fn session_id(ran: &Ran) -> String {
    ran.event("new_session")["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session id; {ran}"))
        .to_string()
}

/// The text of every `agent_message_chunk` the client saw, joined.
fn reply(ran: &Ran) -> String {
    updates(ran, "agent_message_chunk")
        .iter()
        .filter(|u| u["content"]["type"] == "text")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// The error a step of the script (`prompt_after_close`, …) got.
fn error_of<'a>(ran: &'a Ran, step: &str) -> &'a Value {
    ran.events("error")
        .into_iter()
        .find(|e| e["method"] == step)
        .unwrap_or_else(|| panic!("{step} did not fail; {ran}"))
}

#[tokio::test]
async fn a_one_word_reply_reaches_the_client_as_a_message_chunk() {
    let model = FakeModel::start().await;
    for sdk in SDKS {
        model.push(Step::text("Yes."));
        let home = home(&model, "");
        let Some(ran) = drive(sdk, &home, "one_word", &[]).await else {
            return;
        };
        assert_eq!(reply(&ran), "Yes.", "{sdk:?}: {ran}");
        let capabilities = &ran.event("initialize")["result"]["agentCapabilities"];
        assert_eq!(
            capabilities["promptCapabilities"]["image"], false,
            "{sdk:?}: no configured model sees, so pictures are not offered; {ran}"
        );
        assert_eq!(
            ran.event("prompt")["result"]["stopReason"],
            "end_turn",
            "{sdk:?}: {ran}"
        );
    }
}

#[tokio::test]
async fn a_mode_change_is_reported_as_a_current_mode_update() {
    let model = FakeModel::start().await;
    for sdk in SDKS {
        let home = home(&model, "");
        let Some(ran) = drive(sdk, &home, "mode", &[]).await else {
            return;
        };
        assert!(
            ran.event("set_mode")["result"].is_object(),
            "{sdk:?}: {ran}"
        );
        let reported = updates(&ran, "current_mode_update");
        assert_eq!(reported.len(), 1, "{sdk:?}: {ran}");
        assert_eq!(reported[0]["currentModeId"], "plan", "{sdk:?}: {ran}");
        assert_eq!(
            ran.event("mode_update_seen")["seen"],
            true,
            "{sdk:?}: {ran}"
        );
    }
}

#[tokio::test]
async fn an_image_in_a_prompt_reaches_the_model_and_audio_is_refused_saying_why() {
    let model = FakeModel::start().await;
    let picture = png(48, 32);
    for sdk in SDKS {
        model.push(Step::text("A gradient."));
        let home = home(&model, "[models.\"fake/m\"]\nvision = true\n");
        let file = home.path().join("picture.png");
        std::fs::write(&file, &picture).expect("write the picture");
        let before = model.requests().len();
        let Some(ran) = drive(sdk, &home, "image", &[file.to_str().expect("utf-8")]).await else {
            return;
        };
        assert_eq!(
            ran.event("prompt")["result"]["stopReason"],
            "end_turn",
            "{sdk:?}: {ran}"
        );
        assert_eq!(reply(&ran), "A gradient.", "{sdk:?}: {ran}");
        let requests = model.requests();
        assert_eq!(requests.len(), before + 1, "{sdk:?}: one model call");
        let request = requests.last().expect("the prompt's model call");
        assert!(
            request
                .last_user_text()
                .contains("what is in this picture?"),
            "{sdk:?}: {}",
            request.body
        );
        let images = request.last_user_images();
        assert_eq!(images.len(), 1, "{sdk:?}: one picture went to the model");
        assert_eq!(images[0].0, "image/png", "{sdk:?}");
        assert!(
            images[0].1 == picture,
            "{sdk:?}: the picture went as it was sent"
        );
        let capabilities = &ran.event("initialize")["result"]["agentCapabilities"];
        assert_eq!(
            capabilities["promptCapabilities"]["image"], true,
            "{sdk:?}: the image capability is advertised; {ran}"
        );

        // Audio is not taken: the client hears why, and the model is not called.
        let refused = error_of(&ran, "prompt_audio");
        assert_eq!(refused["code"], -32602, "{sdk:?}: {refused}");
        assert!(
            refused["message"]
                .as_str()
                .is_some_and(|m| m.contains("audio") && m.contains("promptCapabilities.audio")),
            "{sdk:?}: {refused}"
        );
        assert_eq!(model.requests().len(), before + 1, "{sdk:?}");
    }
}

#[tokio::test]
async fn a_stored_session_is_listed_and_closing_it_stops_its_turn_and_ends_it() {
    let model = FakeModel::start().await;
    for sdk in SDKS {
        model.push_all([
            Step::text("Noted."),
            Step::slow_text("a long answer that closing the session cuts short", 300),
        ]);
        let home = home(&model, "");
        let Some(ran) = drive(sdk, &home, "sessions", &[]).await else {
            return;
        };
        let id = session_id(&ran);
        let capabilities = &ran.event("initialize")["result"]["agentCapabilities"];
        let announced = &capabilities["sessionCapabilities"];
        assert!(
            announced["list"].is_object() && announced["close"].is_object(),
            "{sdk:?}: list and close are advertised; {ran}"
        );

        let listed = ran.event("list")["result"]["sessions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ours = listed
            .iter()
            .find(|s| s["sessionId"] == id.as_str())
            .unwrap_or_else(|| panic!("{sdk:?}: {id} is not listed; {ran}"));
        let cwd = ours["cwd"].as_str().unwrap_or_default();
        assert!(std::path::Path::new(cwd).is_absolute(), "{sdk:?}: {ours}");
        assert!(
            ours["title"]
                .as_str()
                .is_some_and(|t| t.contains("remember the plants")),
            "{sdk:?}: the title is the first thing said; {ours}"
        );
        assert!(ours["updatedAt"].is_string(), "{sdk:?}: {ours}");

        assert_eq!(ran.event("streaming")["seen"], true, "{sdk:?}: {ran}");
        assert!(ran.event("close")["result"].is_object(), "{sdk:?}: {ran}");
        assert_eq!(
            ran.event("prompt_running")["result"]["stopReason"],
            "cancelled",
            "{sdk:?}: closing stops the running turn; {ran}"
        );
        let refused = error_of(&ran, "prompt_after_close");
        assert_eq!(refused["code"], -32002, "{sdk:?}: {refused}");
        assert!(
            refused["message"]
                .as_str()
                .is_some_and(|m| m.contains("closed") && m.contains("session/load")),
            "{sdk:?}: the error says why and what to do; {refused}"
        );
    }
}

/// A small PNG, sent as it is (no scaling).
fn png(width: u32, height: u32) -> Vec<u8> {
    let picture = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 5) as u8, (y * 7) as u8, ((x + y) * 3) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    picture
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("encode png");
    out.into_inner()
}

#[tokio::test]
async fn the_model_entering_plan_mode_is_reported_as_a_current_mode_update() {
    let model = FakeModel::start().await;
    for sdk in SDKS {
        model.push_all([
            Step::tool_call("enter_plan_mode", json!({})),
            Step::text("Planning."),
        ]);
        let home = home(&model, "");
        let Some(ran) = drive(sdk, &home, "one_word", &[]).await else {
            return;
        };
        assert_eq!(reply(&ran), "Planning.", "{sdk:?}: {ran}");
        let reported = updates(&ran, "current_mode_update");
        assert_eq!(reported.len(), 1, "{sdk:?}: {ran}");
        assert_eq!(reported[0]["currentModeId"], "plan", "{sdk:?}: {ran}");
    }
}
