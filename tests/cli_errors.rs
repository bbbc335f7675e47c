//! Bad input to the real `pincer` binary: each mistake gets a message that names the fix
//! on stderr, exit code 1, and loses nothing (config files untouched, the user's message
//! kept). Also the `chat -m` contract: stdout carries the reply only, stdin is never read.

use crate::common;

use std::time::Duration;

use common::{TestHome, WAIT, openai_config, set_mode};
use pincer_fakes::{FakeModel, Step};

/// Run `pincer chat -m hi` against a home holding only `config` and check it failed
/// with every needle on stderr, leaving config.toml byte for byte as it was.
fn config_refused(config: &str, needles: &[&str]) -> common::Run {
    let home = TestHome::new();
    home.write_config(config);
    let run = home.run(&["chat", "-m", "hi"]);
    run.fails_with(needles);
    let after = std::fs::read_to_string(home.config_file()).expect("config still there");
    assert_eq!(after, config, "a refused config must not be rewritten");
    assert!(
        !home.path().join("pincer.db").exists(),
        "nothing should start on a bad config"
    );
    run
}

#[test]
fn chat_without_config_names_onboard_and_creates_nothing() {
    let home = TestHome::new();
    let run = home.run(&["chat", "-m", "hi"]);
    run.fails_with(&["pincer onboard", "config.toml"]);
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout);
    let created: Vec<_> = std::fs::read_dir(home.path())
        .expect("home")
        .map(|e| e.expect("dir entry").file_name())
        .collect();
    assert!(
        created.is_empty(),
        "files created without a config: {created:?}"
    );
}

#[test]
fn unknown_key_names_its_line_and_the_right_key() {
    let run = config_refused(
        "[agent]\nmax_iteration = 3\n",
        &["max_iteration", "max_iterations", "line 2"],
    );
    assert!(run.stderr.contains("config.toml"), "{}", run.stderr);
}

#[test]
fn wrong_type_names_the_key_and_line() {
    config_refused(
        "version = 1\n[agent]\nmax_iterations = \"ten\"\n",
        &["agent.max_iterations", "line 3", "integer"],
    );
}

#[test]
fn secret_in_config_says_move_it_and_never_prints_it() {
    let run = config_refused(
        "version = 1\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"sk-live-123\"\n",
        &["providers.fake.api_key", ".security.yml", "line 8"],
    );
    assert!(
        !run.stderr.contains("sk-live-123"),
        "the secret leaked: {}",
        run.stderr
    );
    assert!(
        !run.stdout.contains("sk-live-123"),
        "the secret leaked: {}",
        run.stdout
    );
}

#[test]
fn readable_secrets_file_says_chmod_600_and_its_path() {
    let home = TestHome::new();
    home.write_config(
        "version = 1\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    home.write_secrets("providers:\n  fake:\n    api_key: \"sk-secret-456\"\n");
    let secrets = home.path().join(".security.yml");
    set_mode(&secrets, 0o644);
    let run = home.run(&["chat", "-m", "hi"]);
    run.fails_with(&["chmod 600", &secrets.display().to_string()]);
    assert!(!run.stderr.contains("sk-secret-456"), "{}", run.stderr);
    // Pincer reports; it does not silently change the user's file.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&secrets)
        .expect("secrets")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o644);
}

#[test]
fn bad_env_override_names_the_variable() {
    let home = TestHome::new();
    home.write_config(
        "version = 1\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let output = home
        .command(&["chat", "-m", "hi"])
        .env("PINCER_AGENT__MAX_ITERATIONS", "abc")
        .output()
        .expect("run pincer");
    let run = common::Run::from(output);
    run.fails_with(&["PINCER_AGENT__MAX_ITERATIONS", "agent.max_iterations"]);
}

#[test]
fn no_models_configured_points_at_router_or_onboard() {
    let run = config_refused("version = 1\n", &[]);
    assert!(
        run.stderr.contains("[router]") || run.stderr.contains("pincer onboard"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_timezone_names_agent_timezone() {
    let home = TestHome::new();
    home.write_config(
        "version = 1\n[agent]\ntimezone = \"Mars/Olympus\"\n\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    home.run(&["chat", "-m", "hi"])
        .fails_with(&["agent.timezone", "Mars/Olympus"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_api_key_fails_keeps_the_message_and_works_once_fixed() {
    let fake = FakeModel::start().await;
    fake.require_key("right-key");
    let home = TestHome::openai(&fake);
    home.write_secrets("providers:\n  fake:\n    api_key: \"wrong-key\"\n");

    let run = home.run(&["chat", "-m", "first message"]);
    run.fails_with(&["authentication", ".security.yml", "providers.fake"]);
    assert!(
        !run.stderr.contains("wrong-key"),
        "the key leaked: {}",
        run.stderr
    );
    assert!(
        !run.stdout.contains("wrong-key"),
        "the key leaked: {}",
        run.stdout
    );
    let sent = fake.requests();
    assert!(!sent.is_empty(), "no request reached the fake");
    assert_eq!(sent[0].header("authorization"), Some("Bearer wrong-key"));
    assert!(
        home.transcript().contains("first message"),
        "the user's message was lost: {}",
        home.transcript()
    );

    home.write_secrets("providers:\n  fake:\n    api_key: \"right-key\"\n");
    fake.push(Step::text("hello again"));
    let run = home.run(&["chat", "-m", "second message"]);
    assert!(run.ok(), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "hello again\n");
    let transcript = home.transcript();
    assert!(transcript.contains("first message"), "{transcript}");
    assert!(transcript.contains("second message"), "{transcript}");
    assert!(transcript.contains("hello again"), "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_is_waited_out() {
    let fake = FakeModel::start().await;
    fake.push(Step::rate_limited(1));
    fake.push(Step::text("after wait"));
    let home = TestHome::openai(&fake);
    let run = home.run(&["chat", "-m", "hi"]);
    assert!(run.ok(), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "after wait\n");
    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    let waited = sent[1].at.duration_since(sent[0].at);
    assert!(
        waited >= Duration::from_millis(900),
        "Retry-After ignored: retried after {waited:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_model_falls_back_to_the_next() {
    let fake = FakeModel::start().await;
    fake.push(Step::text("from the second"));
    let home = TestHome::new();
    home.write_config(&format!(
        "version = 1\n[router]\nlight = [\"fake/missing-model\", \"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\ntimeout_secs = 20\nidle_timeout_secs = 5\n",
        fake.openai_base()
    ));
    let run = home.run(&["chat", "-m", "hi"]);
    assert!(run.ok(), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "from the second\n");
    let models: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| r.model().to_string())
        .collect();
    assert_eq!(models, ["missing-model", "m"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_stream_hits_the_idle_timeout() {
    let fake = FakeModel::start().await;
    for _ in 0..3 {
        fake.push(Step::Stall);
    }
    let home = TestHome::new();
    let config = openai_config(&fake, "").replace("idle_timeout_secs = 5", "idle_timeout_secs = 1");
    assert!(config.contains("idle_timeout_secs = 1"));
    home.write_config(&config);
    let run = home.run(&["chat", "-m", "hi"]);
    run.fails_with(&["idle_timeout_secs"]);
    assert!(
        home.transcript().contains("hi"),
        "the user's message was lost"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_stream_is_reported_as_unreadable() {
    let fake = FakeModel::start().await;
    for _ in 0..3 {
        fake.push(Step::Malformed);
    }
    let home = TestHome::openai(&fake);
    let run = home.run(&["chat", "-m", "hi"]);
    run.fails_with(&["could not read", "fake"]);
    assert_eq!(
        fake.requests().len(),
        3,
        "a malformed reply is retried twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_m_never_reads_stdin() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    let run = home.run_with_stdin(&["chat", "-m", "real"], "ignored\nignored too\n");
    assert!(run.ok(), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "echo: real\n");
    let sent = fake.wait_for_requests(1, WAIT).await;
    assert_eq!(sent.len(), 1, "one message, one model call");
    assert_eq!(sent[0].last_user_text(), "real");
    assert!(!sent[0].body.to_string().contains("ignored"));
    assert!(!home.transcript().contains("ignored"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_logs_go_to_stderr_not_stdout() {
    let fake = FakeModel::start().await;
    // A tool call in the turn makes `-v` log something ("tool call" at info).
    fake.push(Step::tool_call(
        "list_dir",
        serde_json::json!({"path": "."}),
    ));
    fake.push(Step::text("just the reply"));
    let home = TestHome::openai(&fake);
    let run = home.run(&["-v", "chat", "-m", "hi"]);
    assert!(run.ok(), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "just the reply\n");
    assert!(
        run.stderr.contains("INFO") && run.stderr.contains("list_dir"),
        "-v should log the tool call on stderr: {}",
        run.stderr
    );
    assert_eq!(fake.requests().len(), 2);
}

/// `pincer status | head -0`: stdout closed before anything is written. The command
/// ends the Unix way (SIGPIPE) instead of panicking with "failed printing to stdout".
#[test]
fn a_closed_stdout_ends_a_report_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let home = TestHome::new();
    home.write_config(
        "version = 1\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = home
        .command(&["status"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run pincer status");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "status: {:?}, stderr: {stderr}",
        out.status
    );
}

#[test]
fn a_database_from_a_newer_pincer_is_refused_in_one_clean_sentence() {
    let home = TestHome::new();
    home.write_config("version = 1\n");
    let db = home.path().join("pincer.db");
    {
        let conn = rusqlite::Connection::open(&db).expect("db");
        conn.pragma_update(None, "user_version", 999)
            .expect("version");
    }
    let run = home.run(&["sessions", "list"]);
    run.fails_with(&[
        "written by a newer Pincer",
        "999",
        "upgrade pincer",
        "--home",
    ]);
    assert!(!run.stderr.contains("Invalid parameter"), "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("newer Pincer").count(),
        1,
        "{}",
        run.stderr
    );
    // The database is left as it was.
    let conn = rusqlite::Connection::open(&db).expect("db");
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 999);
}
