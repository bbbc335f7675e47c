//! `pincer doctor` against the fakes: a healthy setup passes, and each broken piece —
//! no config, a rejected provider key, a rejected bot token, a missing MCP program, a
//! readable secrets file, a model server refusing tools for want of `--jinja` — is one
//! FAIL line with its fix, and no secret is printed. What a model does with an offered
//! tool (a structured call, a call written as text, nothing) is one line too.

use crate::common;

use common::TestHome;
use pincer_fakes::telegram::FakeTelegram;
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

const KEY: &str = "sk-doctor-good-key-1234567890";

/// A home using the fakes; `token: None` uses the fake Telegram's real token.
async fn setup(key: &str, token: Option<&str>, extra: &str) -> (TestHome, FakeModel, FakeTelegram) {
    let model = FakeModel::start().await;
    model.require_key(KEY);
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new();
    common::set_mode(home.path(), 0o700);
    home.write_config(&format!(
        "version = 1\n[agent]\nowners = [\"telegram:1\"]\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n\n[channels.telegram]\nenabled = true\napi_url = \"{}\"\n{extra}",
        model.openai_base(),
        telegram.api_url()
    ));
    let token = token.unwrap_or(telegram.token());
    home.write_secrets(&format!(
        "providers:\n  fake:\n    api_key: \"{key}\"\nchannels:\n  telegram:\n    bot_token: \"{token}\"\n"
    ));
    (home, model, telegram)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_setup_passes_every_check() {
    let (home, model, telegram) = setup(KEY, None, "").await;
    model.push(Step::tool_call("get_weather", json!({"city": "Paris"})));
    let run = home.run(&["doctor"]);
    assert!(run.ok(), "{run:?}");
    for line in [
        "ok    config",
        "ok    provider fake",
        "key accepted",
        "ok    tools fake/m     returns structured tool calls",
        "ok    telegram         logged in as pincer_test_bot",
        "ok    workspace",
        "warn  web_search",
        "warn  vision",
        "warn  transcription",
        "warn  voice",
        "No problems; 4 warning(s) above.",
    ] {
        assert!(
            run.stdout.contains(line),
            "missing {line:?} in:\n{}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains(KEY) && !run.stdout.contains(telegram.token()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_broken_piece_is_a_fail_line_with_its_fix_and_no_secret() {
    let wrong_token = "999:wrong-token-that-must-not-print";
    let (home, _model, _telegram) = setup(
        "sk-wrong-key-that-must-not-print",
        Some(wrong_token),
        "\n[mcp.servers.gh]\ncommand = \"/nonexistent/github-mcp-server\"\n",
    )
    .await;
    let run = home.run(&["doctor"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    for line in [
        "FAIL  provider fake",
        "rejected the key (401 Unauthorized)",
        "fix: put the key in .security.yml under providers.fake.api_key, or set OPENAI_API_KEY",
        "FAIL  telegram         the token was rejected",
        "fix: put a valid token in .security.yml under channels.telegram.bot_token, or set TELEGRAM_BOT_TOKEN",
        "FAIL  mcp gh",
        "3 problem(s)",
    ] {
        assert!(
            run.stdout.contains(line),
            "missing {line:?} in:\n{}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains("must-not-print"), "{}", run.stdout);
    assert!(!run.stderr.contains("must-not-print"), "{}", run.stderr);
}

#[test]
fn no_config_and_a_readable_secrets_file_name_their_fixes() {
    let home = TestHome::new();
    let run = home.run(&["doctor"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.contains("FAIL  config"), "{}", run.stdout);
    assert!(run.stdout.contains("pincer onboard"), "{}", run.stdout);

    home.write_config("version = 1\n");
    home.write_secrets("providers: {}\n");
    common::set_mode(&home.path().join(".security.yml"), 0o644);
    let run = home.run(&["doctor"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.contains("FAIL  secrets"), "{}", run.stdout);
    assert!(run.stdout.contains("chmod 600"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discord_and_slack_tokens_are_checked_too() {
    use pincer_fakes::discord::FakeDiscord;
    use pincer_fakes::platform::FakePlatform;
    use pincer_fakes::slack::FakeSlack;
    let (home, _model, telegram) = setup(KEY, None, "").await;
    let discord = FakeDiscord::start().await;
    let slack = FakeSlack::start().await;
    let platforms: [&dyn FakePlatform; 3] = [&telegram, &discord, &slack];
    let mut config = std::fs::read_to_string(home.config_file()).unwrap();
    let mut secrets = format!("providers:\n  fake:\n    api_key: \"{KEY}\"\nchannels:\n");
    for platform in platforms {
        if platform.name() != "telegram" {
            config.push_str(&format!(
                "\n[channels.{}]\nenabled = true\n{}",
                platform.name(),
                platform.config()
            ));
        }
        secrets.push_str(&platform.secrets());
    }
    home.write_config(&config);
    home.write_secrets(&secrets);
    let run = home.run(&["doctor"]);
    assert!(run.ok(), "{run:?}");
    for line in ["ok    telegram", "ok    discord", "ok    slack"] {
        assert!(
            run.stdout.contains(line),
            "missing {line:?} in:\n{}",
            run.stdout
        );
    }
    // A wrong Slack token is named as such.
    home.write_secrets(&secrets.replace(&slack_token(&slack), "xoxb-wrong"));
    let run = home.run(&["doctor"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stdout.contains("FAIL  slack"), "{}", run.stdout);
    assert!(run.stdout.contains("SLACK_BOT_TOKEN"), "{}", run.stdout);
}

/// The bot token in the fake Slack's secrets lines.
fn slack_token(slack: &pincer_fakes::slack::FakeSlack) -> String {
    use pincer_fakes::platform::FakePlatform;
    let secrets = slack.secrets();
    let line = secrets
        .lines()
        .find(|l| l.contains("bot_token"))
        .expect("a bot token line");
    line.split('"').nth(1).expect("quoted token").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_check_tells_structured_text_and_missing_calls_apart() {
    let (home, model, _telegram) = setup(KEY, None, "").await;
    // Qwen2.5-Coder under llama.cpp without a tool-call parser writes the call as text.
    model.push(Step::text(
        "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```",
    ));
    let run = home.run(&["doctor"]);
    assert!(run.ok(), "{run:?}");
    assert!(
        run.stdout
            .contains("warn  tools fake/m     writes its tool calls as text"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("--jinja"), "{}", run.stdout);
    let sent = model.requests().pop().unwrap();
    assert_eq!(sent.body["tools"][0]["function"]["name"], "get_weather");

    model.push(Step::text("It is sunny in Paris."));
    let run = home.run(&["doctor"]);
    assert!(
        run.stdout
            .contains("warn  tools fake/m     answered without calling the tool"),
        "{}",
        run.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_refusing_tools_without_jinja_fails_naming_the_flag() {
    let (home, model, _telegram) = setup(KEY, None, "").await;
    // llama-server's own answer, recorded from a real server started without --jinja.
    model.push(Step::Error {
        status: 500,
        body: r#"{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}"#.into(),
        retry_after: None,
    });
    let run = home.run(&["doctor"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    for line in [
        "FAIL  tools fake/m     the server refuses tools: tools param requires --jinja flag",
        "fix: restart the server with --jinja",
        "1 problem(s)",
    ] {
        assert!(
            run.stdout.contains(line),
            "missing {line:?} in:\n{}",
            run.stdout
        );
    }
    assert_eq!(model.requests().len(), 1, "asked once, not retried");
}
