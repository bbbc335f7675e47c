//! Containment through the real `pincer run` and the fake Telegram: a long command is
//! shown whole before it is approved, untrusted content in a turn makes acting tools
//! ask, an MCP server runs inside the sandbox, and doctor names the sandbox. (The
//! attacks themselves are replayed in `tests/security.rs`.)

use crate::common;

use std::time::Duration;

use common::telegram::setup;
use pincer_fakes::Step;
use pincer_fakes::telegram::Incoming;
use serde_json::json;

const OWNER: i64 = 42;
const WAIT: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_command_is_shown_whole_before_it_is_approved() {
    let s = setup(
        "[tools.permissions]\nask = [\"exec\"]\napproval_timeout_secs = 10",
        &format!("owners = [\"telegram:{OWNER}\"]"),
    )
    .await;
    // The dangerous part hides past the first few hundred characters.
    let command = format!("echo {} && touch TAIL-WAS-RUN", "padding ".repeat(400));
    s.model.push_all([
        Step::tool_call("exec", json!({ "command": command })),
        Step::text("Not run."),
    ]);
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(OWNER, "run the long one"));
    let question = s.wait_for_text(OWNER, "Allow exec").await;
    assert!(
        question
            .text
            .contains("the whole of it is in the file above"),
        "{}",
        question.text
    );
    let document = s
        .platform
        .wait_for_call("sendDocument", WAIT)
        .await
        .expect("the whole command went out as a file");
    assert!(
        document.params.to_string().contains("pincer-approval-"),
        "{:?}",
        document.params
    );
    // The file came from memory: nothing was written to the workspace.
    assert!(!s.home.workspace().join("tool-output").exists());
    s.platform.press(OWNER, OWNER, ":deny").expect("buttons");
    s.wait_for_text(OWNER, "Not run.").await;
    assert!(!s.home.workspace().join("TAIL-WAS-RUN").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_untrusted_content_acting_tools_need_the_owners_yes() {
    let s = setup(
        "[tools.permissions]\napproval_timeout_secs = 10",
        &format!("owners = [\"telegram:{OWNER}\"]"),
    )
    .await;
    s.model.push_all([
        Step::tool_call("exec", json!({ "command": "touch BEFORE" })),
        // Refused (loopback), but what it would have brought is untrusted all the same.
        Step::tool_call("web_fetch", json!({ "url": "http://127.0.0.1:9/page" })),
        Step::tool_call("exec", json!({ "command": "touch AFTER" })),
        Step::text("Done asking."),
    ]);
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(OWNER, "fetch and run"));
    let question = s.wait_for_text(OWNER, "Allow exec").await;
    assert!(
        question.text.contains("content nobody vouches for"),
        "{}",
        question.text
    );
    assert!(
        s.home.workspace().join("BEFORE").exists(),
        "before the fetch nothing asked"
    );
    s.platform.press(OWNER, OWNER, ":deny").expect("buttons");
    s.wait_for_text(OWNER, "Done asking.").await;
    assert!(!s.home.workspace().join("AFTER").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_untrusted_allow_turns_the_question_off() {
    let s = setup(
        "",
        &format!("owners = [\"telegram:{OWNER}\"]\n[tools]\nafter_untrusted = \"allow\""),
    )
    .await;
    s.model.push_all([
        Step::tool_call("web_fetch", json!({ "url": "http://127.0.0.1:9/page" })),
        Step::tool_call("exec", json!({ "command": "touch AFTER" })),
        Step::text("Ran it."),
    ]);
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(OWNER, "fetch and run"));
    s.wait_for_text(OWNER, "Ran it.").await;
    assert!(s.home.workspace().join("AFTER").exists());
    assert!(!s.texts_to(OWNER).iter().any(|t| t.contains("Allow exec")));
}

/// An MCP server started by the gateway runs in the sandbox: it answers, and it cannot
/// read the secrets beside the workspace.
async fn an_mcp_server_runs_in(sandbox: &str) {
    let s = setup(
        "",
        &format!(
            "owners = [\"telegram:{OWNER}\"]\n[tools]\nafter_untrusted = \"allow\"\n[tools.exec]\nsandbox = \"{sandbox}\"\n[mcp.servers.fake]\ncommand = \"{}\"\ntrusted = true",
            common::fake_mcp()
        ),
    )
    .await;
    s.model.push_all([
        Step::tool_call("mcp__fake__add", json!({ "a": 2, "b": 3 })),
        Step::tool_call("mcp__fake__read", json!({ "path": "../.security.yml" })),
        Step::text("MCP DONE"),
    ]);
    // Connected first: `status` peeks at the gateway lock, and polling it while the
    // gateway is still taking that lock would race its start.
    let _gateway = s.start_connected().await;
    let last = std::cell::RefCell::new(String::new());
    common::wait_for(
        || {
            let status = s.home.run(&["status"]).stdout;
            let ready = status.contains("ready, 7 tools");
            *last.borrow_mut() = status;
            ready.then_some(())
        },
        || {
            format!(
                "the MCP server never became ready; status said:\n{}",
                last.borrow()
            )
        },
    )
    .await;
    s.platform.inject(Incoming::dm(OWNER, "use the server"));
    s.wait_for_text(OWNER, "MCP DONE").await;
    let results = s.model.requests()[2].body["messages"].to_string();
    assert!(
        results.contains("\"5\""),
        "the sandboxed server answered: {results}"
    );
    assert!(results.contains("cannot read"), "{results}");
    assert!(
        !results.contains(s.platform.token()),
        "the secrets were read: {results}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_runs_under_landlock() {
    an_mcp_server_runs_in("landlock").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_runs_under_bwrap() {
    if std::path::Path::new("/usr/bin/bwrap").exists() || std::env::var_os("CI").is_some() {
        an_mcp_server_runs_in("bwrap").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_and_status_name_the_sandbox() {
    let s = setup(
        "",
        "owners = [\"telegram:42\"]\n[tools.exec]\nsandbox = \"landlock\"",
    )
    .await;
    let doctor = s.home.run(&["doctor"]);
    assert!(
        doctor.stdout.contains("sandbox") && doctor.stdout.contains("landlock:"),
        "{}",
        doctor.stdout
    );
    assert!(s.home.run(&["status"]).stdout.contains("Sandbox: landlock"));
    s.home.write_config(
        &std::fs::read_to_string(s.home.config_file())
            .unwrap()
            .replace("sandbox = \"landlock\"", "sandbox = \"off\""),
    );
    let doctor = s.home.run(&["doctor"]);
    assert!(
        doctor.stdout.contains("off: commands run unconfined"),
        "{}",
        doctor.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_question_lists_every_program_the_command_runs() {
    let s = setup(
        "[tools.permissions]\nask = [\"exec(git push*)\"]\napproval_timeout_secs = 10",
        &format!("owners = [\"telegram:{OWNER}\"]"),
    )
    .await;
    s.model.push_all([
        Step::tool_call("exec", json!({ "command": "true && git push origin main" })),
        Step::text("Not pushed."),
    ]);
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(OWNER, "push it"));
    let question = s.wait_for_text(OWNER, "Allow exec").await;
    assert!(
        question.text.contains("It runs:") && question.text.contains("git push origin main"),
        "the rule caught the second program, and the question names it: {}",
        question.text
    );
    s.platform.press(OWNER, OWNER, ":deny").expect("buttons");
    s.wait_for_text(OWNER, "Not pushed.").await;
}
