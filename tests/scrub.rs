//! Credentials never come back in a chat-command answer: the dispatcher's own texts pass
//! the same scrubber as the model's replies, with every secret value loaded at start
//! (an MCP header's credential also without its `Bearer` scheme). Driven in-process
//! through `pincer::start` against the fake model, which these commands never reach.

use crate::common;

use std::time::SystemTime;

use base64::Engine;
use pincer_channels::{ChatKind, InboundMessage, Sender};
use pincer_fakes::FakeModel;
use tokio_util::sync::CancellationToken;

use common::WAIT;

/// The provider key, from the environment.
const API_KEY: &str = "test-key-7Hq2xLz9Vb4Nc8Rt1Kd5";
/// An MCP server's header credential, from `.security.yml`.
const MCP_TOKEN: &str = "mcp-0123456789abcdef";

struct Core {
    _home: common::TestHome,
    running: pincer::Running,
    shutdown: CancellationToken,
}

fn start(fake: &FakeModel) -> Core {
    let home = common::TestHome::new();
    let text = common::openai_config(fake, "");
    let paths = pincer::Home::resolve(Some(home.path().to_path_buf()), None);
    let config = pincer_config::load_str(&text, &paths.config_file, &paths.security_file, &[])
        .expect("config");
    let yaml = format!("mcp:\n  search:\n    headers:\n      Authorization: Bearer {MCP_TOKEN}\n");
    let secrets = pincer_config::parse_secrets(&yaml, &paths.security_file).expect("secrets");
    let env = [("OPENAI_API_KEY".to_string(), API_KEY.to_string())];
    let shutdown = CancellationToken::new();
    let running = pincer::start(&paths, &config, &secrets, &env, shutdown.clone()).expect("start");
    Core {
        _home: home,
        running,
        shutdown,
    }
}

fn message(n: usize, text: &str) -> InboundMessage {
    InboundMessage {
        channel: "terminal".into(),
        account: "default".into(),
        chat_id: "local".into(),
        chat_kind: ChatKind::Dm,
        thread_id: None,
        sender: Sender {
            raw_id: "local".into(),
            canonical: "terminal:local".into(),
            display_name: "local".into(),
        },
        message_id: format!("local-{n}"),
        text: text.into(),
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: SystemTime::now(),
        deliver_to: None,
        scheduled: None,
    }
}

/// Send `text` and return the answer's text.
async fn answer(core: &mut Core, n: usize, text: &str) -> String {
    core.running
        .inbound
        .send(message(n, text).into())
        .await
        .unwrap();
    loop {
        let out = tokio::time::timeout(WAIT, core.running.outbound.recv())
            .await
            .expect("an answer in time")
            .expect("bus open");
        if let Some(text) = out.body.complete_text().map(str::to_string) {
            return text;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_answer_echoing_a_secret_is_scrubbed() {
    let fake = FakeModel::start().await;
    let mut core = start(&fake);
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("key={API_KEY}"));
    // `/model <label>` says which label it cannot pin, quoting it.
    for (n, (label, secret)) in [
        (API_KEY, API_KEY.to_string()),
        (encoded.as_str(), encoded[8..32].to_string()),
        (MCP_TOKEN, MCP_TOKEN.to_string()),
    ]
    .into_iter()
    .enumerate()
    {
        let said = answer(&mut core, n, &format!("/model {label}")).await;
        assert!(said.starts_with("Cannot pin"), "{said}");
        assert!(said.contains("[REDACTED]"), "{said}");
        assert!(!said.contains(&secret), "{said}");
    }
    // Ordinary labels are quoted as they are.
    let said = answer(&mut core, 9, "/model nonsense").await;
    assert!(said.contains("nonsense"), "{said}");
    assert!(fake.requests().is_empty(), "commands never reach the model");
    core.shutdown.cancel();
}
