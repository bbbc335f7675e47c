//! `pincer onboard` as scripts use it (`--non-interactive`): what it writes, with which
//! permissions, where the key goes, that the result works with `pincer chat`, and that
//! an existing setup is only replaced with `--force` (keeping a backup).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Run, TestHome};
use pincer_fakes::{FakeModel, Format};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `pincer onboard --non-interactive ARGS` with `env` added.
fn onboard(home: &TestHome, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = home.command(&["onboard", "--non-interactive"]);
    cmd.args(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    Run::from(cmd.output().expect("run pincer onboard"))
}

fn secrets_file(home: &TestHome) -> std::path::PathBuf {
    home.path().join(".security.yml")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_interactive_writes_private_files_that_work() {
    let fake = FakeModel::start().await;
    fake.require_key("sk-test");
    let home = TestHome::new();
    // Let onboarding create the home itself, so its mode is pincer's doing.
    std::fs::remove_dir(home.path()).expect("remove the empty temp home");
    let base = fake.openai_base();
    let run = onboard(
        &home,
        &[
            "--base-url",
            &base,
            "--light-model",
            "a",
            "--heavy-model",
            "b",
            "--api-key-env",
            "MY_KEY",
        ],
        &[("MY_KEY", "sk-test")],
    );
    assert!(run.ok(), "stderr: {}", run.stderr);

    assert_eq!(mode(home.path()), 0o700, "the home must be private");
    assert_eq!(mode(&home.config_file()), 0o600);
    assert_eq!(mode(&secrets_file(&home)), 0o600);
    let config = read(&home.config_file());
    let secrets = read(&secrets_file(&home));
    assert!(
        secrets.contains("sk-test"),
        "the key belongs in .security.yml: {secrets}"
    );
    // The web panel's login token is made too, and `pincer web url` prints its link.
    assert!(secrets.contains("web:\n  token: \""), "{secrets}");
    let url = home.run(&["web", "url"]);
    assert!(url.ok(), "{}", url.stderr);
    assert!(
        url.stdout.starts_with("http://127.0.0.1:8790/login?token="),
        "{}",
        url.stdout
    );
    assert!(
        url.stderr.contains("[web] enabled = true"),
        "{}",
        url.stderr
    );
    assert!(
        !config.contains("sk-test"),
        "the key leaked into config.toml: {config}"
    );
    assert!(config.contains(&base), "{config}");
    assert!(!run.stdout.contains("sk-test") && !run.stderr.contains("sk-test"));

    let chat = home.run(&["chat", "-m", "hi"]);
    assert!(chat.ok(), "stderr: {}", chat.stderr);
    assert_eq!(chat.stdout, "echo: hi\n");
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        sent[0].model(),
        "a",
        "a short message goes to the light model"
    );
}

#[test]
fn existing_config_is_replaced_only_with_force_and_backed_up() {
    let home = TestHome::new();
    let first = [
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--light-model",
        "a",
        "--heavy-model",
        "b",
        "--api-key-env",
        "MY_KEY",
    ];
    let run = onboard(&home, &first, &[("MY_KEY", "sk-old")]);
    assert!(run.ok(), "stderr: {}", run.stderr);
    let old_config = read(&home.config_file());
    let old_secrets = read(&secrets_file(&home));

    let second = [
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--light-model",
        "c",
        "--heavy-model",
        "d",
        "--api-key-env",
        "MY_KEY",
    ];
    let refused = onboard(&home, &second, &[("MY_KEY", "sk-new")]);
    refused.fails_with(&["--force"]);
    assert_eq!(
        read(&home.config_file()),
        old_config,
        "config.toml changed without --force"
    );
    assert_eq!(
        read(&secrets_file(&home)),
        old_secrets,
        ".security.yml changed without --force"
    );
    assert!(!home.path().join("config.toml.bak").exists());

    let mut forced_args = second.to_vec();
    forced_args.push("--force");
    let forced = onboard(&home, &forced_args, &[("MY_KEY", "sk-new")]);
    assert!(forced.ok(), "stderr: {}", forced.stderr);
    let new_config = read(&home.config_file());
    assert!(new_config.contains("/c\""), "{new_config}");
    assert!(read(&secrets_file(&home)).contains("sk-new"));

    let config_backup = home.path().join("config.toml.bak");
    let secrets_backup = home.path().join(".security.yml.bak");
    assert_eq!(read(&config_backup), old_config);
    assert_eq!(read(&secrets_backup), old_secrets);
    assert_eq!(
        mode(&secrets_backup),
        0o600,
        "a backup of secrets stays private"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_can_come_from_stdin() {
    let fake = FakeModel::start().await;
    fake.require_key("sk-from-stdin");
    let home = TestHome::new();
    let base = fake.openai_base();
    let run = home.run_with_stdin(
        &[
            "onboard",
            "--non-interactive",
            "--base-url",
            &base,
            "--api-key-stdin",
        ],
        "sk-from-stdin\n",
    );
    assert!(run.ok(), "stderr: {}", run.stderr);
    assert!(read(&secrets_file(&home)).contains("sk-from-stdin"));
    assert!(!read(&home.config_file()).contains("sk-from-stdin"));

    let chat = home.run(&["chat", "-m", "hi"]);
    assert!(chat.ok(), "stderr: {}", chat.stderr);
    assert_eq!(chat.stdout, "echo: hi\n");
    assert_eq!(
        fake.requests()[0].header("authorization"),
        Some("Bearer sk-from-stdin")
    );
}

#[test]
fn unset_key_variable_is_named_and_nothing_is_written() {
    let home = TestHome::new();
    let mut cmd = home.command(&["onboard", "--non-interactive", "--api-key-env", "UNSET_VAR"]);
    cmd.env_remove("UNSET_VAR");
    let run = Run::from(cmd.output().expect("run pincer"));
    run.fails_with(&["UNSET_VAR"]);
    assert!(!home.config_file().exists());
    assert!(!secrets_file(&home).exists());
}

#[test]
fn without_a_terminal_it_asks_for_non_interactive() {
    let home = TestHome::new();
    // `run` closes stdin, so it is not a terminal.
    let run = home.run(&["onboard"]);
    run.fails_with(&["--non-interactive"]);
    assert!(!home.config_file().exists());
    assert!(!secrets_file(&home).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_kind_writes_a_working_anthropic_provider() {
    let fake = FakeModel::start().await;
    fake.require_key("sk-ant-test");
    let home = TestHome::new();
    let base = fake.anthropic_base();
    let run = onboard(
        &home,
        &[
            "--provider-kind",
            "anthropic",
            "--base-url",
            &base,
            "--api-key-env",
            "MY_KEY",
        ],
        &[("MY_KEY", "sk-ant-test")],
    );
    assert!(run.ok(), "stderr: {}", run.stderr);
    let config = read(&home.config_file());
    assert!(config.contains("kind = \"anthropic\""), "{config}");

    let chat = home.run(&["chat", "-m", "hi"]);
    assert!(chat.ok(), "stderr: {}", chat.stderr);
    assert_eq!(chat.stdout, "echo: hi\n");
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].format, Format::Anthropic);
    assert_eq!(sent[0].header("x-api-key"), Some("sk-ant-test"));
}
