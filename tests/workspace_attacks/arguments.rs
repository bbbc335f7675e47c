//! Secrets never leave in tool arguments: the model, holding the web panel's token (as
//! if a document had shown it), puts it into an `exec` that would drive the panel with
//! `curl`, plainly and base64-encoded. Each call is refused before it runs, the
//! transcript and the conversation keep only `[REDACTED]`, and the owner is told.

use base64::Engine;
use serde_json::json;

use super::rig::{Rig, exec};

/// The panel's login token, in .security.yml.
const TOKEN: &str = "web-token-Zq81kLmN0pQr5tUv9wXy2";

#[test]
fn a_secret_in_a_calls_arguments_is_refused_scrubbed_and_reported() {
    for sandbox in super::rig::sandboxes() {
        carried(sandbox);
    }
}

fn carried(sandbox: &'static str) {
    let rig = Rig::new(sandbox, "");
    rig.home
        .write_secrets(&format!("web:\n  token: \"{TOKEN}\"\n"));
    let encoded = base64::engine::general_purpose::STANDARD.encode(TOKEN);
    let ran = rig.home.workspace().join("RAN");
    let turn = rig.turn(
        &[
            exec(&format!(
                "curl -s -H 'Authorization: Bearer {TOKEN}' http://127.0.0.1:9/access/approve; touch {}",
                ran.display()
            )),
            exec(&format!("echo {encoded} | base64 -d; touch {}", ran.display())),
            ("write_file", json!({"path": "note.txt", "content": format!("token {TOKEN}")})),
        ],
        "DONE",
    );
    for n in 0..3 {
        assert!(
            turn.result(n).contains("refused") && turn.result(n).contains("secret"),
            "[{sandbox}] call {n} was not refused: {turn:#?}"
        );
    }
    assert!(!ran.exists(), "a command carrying the token ran");
    assert!(!rig.home.workspace().join("note.txt").exists());
    // The owner is told, at the terminal where the turn is theirs.
    assert!(
        format!("{}{}", turn.stdout, turn.stderr).contains("secrets"),
        "the owner was not told: {turn:#?}"
    );
    // Neither the conversation the model sees nor the stored transcript keeps it.
    for request in rig.model.requests() {
        let body = request.body.to_string();
        assert!(
            !body.contains(TOKEN) && !body.contains(&encoded),
            "the model was sent it back"
        );
    }
    let shown = rig.home.run(&["sessions", "show", "terminal:dm:local"]);
    assert!(shown.ok(), "{shown:?}");
    assert!(
        !shown.stdout.contains(TOKEN) && !shown.stdout.contains(&encoded),
        "the transcript keeps the token: {}",
        shown.stdout
    );
    assert!(shown.stdout.contains("[REDACTED]"), "{}", shown.stdout);
}
