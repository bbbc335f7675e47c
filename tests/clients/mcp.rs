//! Pincer's MCP client against the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`): the suite starts each client scenario's server
//! and runs the real `pincer` binary against it — `pincer mcp check URL`, `pincer mcp
//! call TOOL URL` — then checks what the client did. The elicitation scenario also runs
//! through `pincer agent`, driven by a host script (`mcp_host.mjs`) that answers the
//! owner's questions as a host program does; where nobody can answer (`pincer mcp call`
//! without a terminal), the server is told `decline`.
//!
//! The suite's `auth/*` scenarios fail: Pincer has no OAuth client (a server's token goes
//! in `.security.yml` as a header). One of them is run to show the error says so.

use std::path::Path;

use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

use super::rig;
use crate::common::{TestHome, openai_config};

/// The suite's command line, run with Node 22 from `tests/clients/node_modules`.
const SUITE: &str = "node_modules/@modelcontextprotocol/conformance/dist/index.js";

/// What the suite made of one scenario.
struct Scenario {
    /// Every check it recorded (`checks.json`).
    checks: Vec<Value>,
    /// What the client command printed.
    client_stdout: String,
    /// What it printed on stderr.
    client_stderr: String,
    /// The suite's own run: its exit code and report.
    suite: rig::Ran,
}

impl Scenario {
    fn check(&self, id: &str) -> &Value {
        self.checks
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no check {id}; {self}"))
    }

    fn succeeded(&self, id: &str) {
        assert_eq!(self.check(id)["status"], "SUCCESS", "{id}; {self}");
    }

    /// The suite passed the scenario: every check a success (or information), and the
    /// client exited 0.
    fn passed(&self) -> &Self {
        for check in &self.checks {
            assert!(
                check["status"] == "SUCCESS" || check["status"] == "INFO",
                "{}; {self}",
                check["id"]
            );
        }
        self.suite.succeeded();
        self
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let checks: Vec<String> = self
            .checks
            .iter()
            .map(|c| format!("{} {} {}", c["id"], c["status"], c["errorMessage"]))
            .collect();
        write!(
            f,
            "checks:\n  {}\nclient stdout:\n{}\nclient stderr:\n{}\nsuite: {}",
            checks.join("\n  "),
            self.client_stdout,
            self.client_stderr,
            self.suite
        )
    }
}

/// Run the suite's client scenario `name` with `command` (the suite appends the
/// server's URL); `None` when the clients are not installed (see `rig::node`).
async fn scenario(name: &str, command: &str, env: &[(&str, &str)]) -> Option<Scenario> {
    let node = rig::node()?;
    let out = tempfile::tempdir().expect("results dir");
    let out_dir = out.path().display().to_string();
    let args = [
        "client",
        "--scenario",
        name,
        "--command",
        command,
        "-o",
        &out_dir,
    ];
    let suite = rig::run(&node, SUITE, &args, env).await;
    // `<out>/<scenario>-<time>/`, or `<out>/auth/<name>-<time>/` for `auth/<name>`.
    let mut results = out.path().to_path_buf();
    while !results.join("checks.json").exists() {
        results = std::fs::read_dir(&results)
            .expect("read results")
            .flatten()
            .next()
            .unwrap_or_else(|| panic!("the suite saved no results; {suite}"))
            .path();
    }
    let read = |file: &str| std::fs::read_to_string(results.join(file)).unwrap_or_default();
    let checks = serde_json::from_str(&read("checks.json")).expect("checks.json");
    Some(Scenario {
        checks,
        client_stdout: read("stdout.txt"),
        client_stderr: read("stderr.txt"),
        suite,
    })
}

/// `pincer --home HOME ARGS` as one line for the suite (which splits it on spaces).
fn pincer(home: &TestHome, args: &str) -> String {
    let line = format!(
        "{} --home {} {args}",
        env!("CARGO_BIN_EXE_pincer"),
        home.path().display()
    );
    assert!(
        !Path::new(env!("CARGO_BIN_EXE_pincer"))
            .display()
            .to_string()
            .contains(' ')
            && !home.path().display().to_string().contains(' '),
        "the suite splits its command on spaces: {line}"
    );
    line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_offers_the_latest_released_protocol_version() {
    let home = TestHome::new();
    let Some(run) = scenario("initialize", &pincer(&home, "mcp check"), &[]).await else {
        return;
    };
    run.passed();
    let sent = &run.check("mcp-client-initialization")["details"];
    assert_eq!(sent["protocolVersionSent"], "2025-11-25", "{run}");
    assert_eq!(sent["clientName"], "pincer", "{run}");
    assert!(
        run.client_stdout
            .contains("test-server 1.0.0, protocol 2025-11-25"),
        "{run}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_is_called_with_its_arguments_and_its_answer_printed() {
    let home = TestHome::new();
    let command = pincer(&home, r#"mcp call add_numbers --arguments '{"a":2,"b":3}'"#);
    let Some(run) = scenario("tools_call", &command, &[]).await else {
        return;
    };
    run.passed();
    assert_eq!(
        run.check("tool-add-numbers")["details"],
        json!({"a": 2, "b": 3, "result": 5})
    );
    assert_eq!(run.client_stdout.trim(), "The sum of 2 and 3 is 5", "{run}");
}

/// The server answers `initialize` with an older version (2025-03-26), cuts the call's
/// event stream, and delivers the result on the stream the client must reopen. Whether
/// the reopening came within the suite's tolerance of `retry` is a wall-clock measure on
/// a busy machine, so only the reconnection itself is asserted here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_event_stream_is_resumed_from_the_last_event() {
    let home = TestHome::new();
    let command = pincer(&home, "mcp call test_reconnection");
    let Some(run) = scenario("sse-retry", &command, &[]).await else {
        return;
    };
    run.succeeded("client-sse-graceful-reconnect");
    run.succeeded("client-sse-last-event-id");
    assert_eq!(
        run.client_stdout.trim(),
        "Reconnection test completed successfully",
        "{run}"
    );
    assert!(
        !run.suite.stderr.contains("CLIENT EXITED WITH ERROR"),
        "{run}"
    );
}

/// The scenario's server asks for a form whose five fields all have defaults. Under
/// `pincer agent` each field is a question to the owner through the host
/// (`can_use_tool`), the default first among the choices; the host picks it, and the
/// server receives every default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_form_is_asked_of_the_owner_through_the_host() {
    let model = FakeModel::start().await;
    model.push_all([
        Step::tool_call(
            "mcp__conformance__test_client_elicitation_defaults",
            json!({}),
        ),
        Step::text("Done."),
    ]);
    let home = TestHome::new();
    home.write_config(&openai_config(&model, ""));
    let home_dir = home.path().display().to_string();
    let env = [
        ("PINCER_HOME", home_dir.as_str()),
        ("PINCER_BIN", env!("CARGO_BIN_EXE_pincer")),
    ];
    let Some(node) = rig::node() else {
        return;
    };
    let command = format!("{} mcp_host.mjs", node.display());
    let Some(run) = scenario("elicitation-sep1034-client-defaults", &command, &env).await else {
        return;
    };
    run.passed();
    for field in ["string", "integer", "number", "enum", "boolean"] {
        run.succeeded(&format!("client-elicitation-sep1034-{field}-default"));
    }
    let questions: Vec<Value> = run
        .client_stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["event"] == "question")
        .collect();
    let firsts: Vec<&Value> = questions.iter().map(|q| &q["options"][0]).collect();
    assert_eq!(
        firsts,
        [
            "John Doe (default)",
            "30 (default)",
            "95.5 (default)",
            "active (default)",
            "yes (default)"
        ],
        "{run}"
    );
    let first = questions[0]["question"].as_str().unwrap_or_default();
    assert!(
        first.starts_with(
            "MCP server conformance asks: Test client default value handling - please accept with defaults\n(1 of 5) name — User name [text]"
        ),
        "{first}"
    );
    assert!(
        run.client_stdout.contains(r#""subtype":"success""#),
        "{run}"
    );
}

/// `pincer mcp call` with no terminal to ask at: nobody can answer the server's form,
/// so the server is told `decline` (and says so in its answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_nobody_can_answer_the_server_is_told_decline() {
    let home = TestHome::new();
    let command = pincer(&home, "mcp call test_client_elicitation_defaults");
    let Some(run) = scenario("elicitation-sep1034-client-defaults", &command, &[]).await else {
        return;
    };
    assert_eq!(
        run.check("client-elicitation-sep1034-general")["errorMessage"],
        "Expected action 'accept', got 'decline'",
        "{run}"
    );
    assert_eq!(
        run.client_stdout.trim(),
        "Elicitation was not accepted",
        "{run}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_wants_oauth_is_refused_with_the_way_to_give_it_a_token() {
    let home = TestHome::new();
    let command = pincer(&home, "mcp check");
    let Some(run) = scenario("auth/metadata-default", &command, &[]).await else {
        return;
    };
    assert!(
        run.client_stderr.contains("wants authorization (OAuth)")
            && run.client_stderr.contains(".security.yml")
            && run.client_stderr.contains("headers.Authorization"),
        "{run}"
    );
}
