//! .security.yml: loading, permissions, format errors, redaction, file-then-env lookup.

use std::path::{Path, PathBuf};

use pincer_config::{
    Config, ConfigError, ProviderKind, Secrets, SlackMode, check_channels, load_secrets,
    parse_secrets,
};
use secrecy::ExposeSecret;

const EXAMPLE: &str = r#"
providers:
  openai:    { api_key: "sk-openai-SECRET1" }
  anthropic: { api_keys: ["sk-ant-SECRET2", "sk-ant-SECRET3"] }   # several keys rotate
channels:
  telegram: { bot_token: "123456:SECRET4" }
  discord:  { bot_token: "SECRET5" }
  slack:    { bot_token: "xoxb-SECRET6", app_token: "xapp-SECRET7", signing_secret: "SECRET8" }
tools:
  web_search: { api_key: "SECRET9" }
mcp:
  github: { env: { GITHUB_TOKEN: "ghp_SECRET10" }, headers: { Authorization: "Bearer SECRET11" } }
"#;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn parse(text: &str) -> Secrets {
    parse_secrets(text, Path::new("/h/.security.yml")).unwrap_or_else(|e| panic!("{e}"))
}

fn parse_err(text: &str) -> String {
    parse_secrets(text, Path::new("/h/.security.yml"))
        .unwrap_err()
        .to_string()
}

fn exposed(keys: &[secrecy::SecretString]) -> Vec<&str> {
    keys.iter().map(|k| k.expose_secret()).collect()
}

#[cfg(unix)]
fn write_with_mode(dir: &Path, text: &str, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(".security.yml");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn the_documented_example_parses() {
    let s = parse(EXAMPLE);
    assert_eq!(
        s.providers["openai"]
            .api_key
            .as_ref()
            .unwrap()
            .expose_secret(),
        "sk-openai-SECRET1"
    );
    assert_eq!(
        exposed(&s.providers["anthropic"].api_keys),
        ["sk-ant-SECRET2", "sk-ant-SECRET3"]
    );
    assert_eq!(
        s.channels
            .discord
            .as_ref()
            .unwrap()
            .bot_token
            .expose_secret(),
        "SECRET5"
    );
    let slack = s.channels.slack.as_ref().unwrap();
    assert_eq!(
        slack.signing_secret.as_ref().unwrap().expose_secret(),
        "SECRET8"
    );
    assert_eq!(
        s.tools.web_search.as_ref().unwrap().api_key.expose_secret(),
        "SECRET9"
    );
    assert_eq!(
        s.mcp["github"].headers["Authorization"].expose_secret(),
        "Bearer SECRET11"
    );
}

#[test]
fn debug_output_never_shows_a_secret() {
    let debug = format!("{:?} {:#?}", parse(EXAMPLE), parse(EXAMPLE));
    assert!(!debug.contains("SECRET"), "{debug}");
    assert!(
        debug.contains("GITHUB_TOKEN"),
        "names are not secret: {debug}"
    );
}

#[test]
fn empty_and_comment_only_files_are_empty_secrets() {
    for text in [
        "",
        "\n",
        "# nothing yet\n",
        "---\n",
        "providers:\nchannels:\n",
    ] {
        let s = parse(text);
        assert!(
            s.providers.is_empty() && s.channels.telegram.is_none(),
            "{text:?}"
        );
    }
}

#[test]
fn unknown_keys_are_named() {
    let m = parse_err("providers:\n  openai: { api_kye: \"sk-SECRET\" }\n");
    assert!(m.starts_with("/h/.security.yml line 2"), "{m}");
    assert!(
        m.contains("providers.openai") && m.contains("`api_kye`") && m.contains("`api_key`"),
        "{m}"
    );
    assert!(!m.contains("SECRET"), "{m}");
    let m = parse_err("channels:\n  irc: { bot_token: \"x\" }\n");
    assert!(m.contains("`irc`") && m.contains("`telegram`"), "{m}");
}

#[test]
fn syntax_errors_give_the_line() {
    let m = parse_err("providers:\n  openai:\n    api_key: \"unterminated\n");
    assert!(m.starts_with("/h/.security.yml line "), "{m}");
    let e = parse_secrets("a: [\n", Path::new("/h/.security.yml")).unwrap_err();
    assert!(
        matches!(e, ConfigError::SecretsFormat { line: Some(_), .. }),
        "{e:?}"
    );
}

#[test]
fn malformed_secret_values_are_not_echoed() {
    for text in [
        "tools:\n  web_search: { api_key: 1.2345 }\n",
        "channels:\n  discord: { bot_token: [\"SECRET\"] }\n",
        "channels:\n  discord: { bot_token: { SECRET: 1 } }\n",
    ] {
        let m = parse_err(text);
        assert!(!m.contains("SECRET") && !m.contains("2345"), "{m}");
        assert!(m.contains("line 2"), "{m}");
    }
    // A bare number is read as its digits rather than refused.
    let s = parse("channels:\n  telegram: { bot_token: 123456 }\n");
    assert_eq!(
        s.channels.telegram.unwrap().bot_token.expose_secret(),
        "123456"
    );
}

#[test]
fn a_missing_file_is_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let s = load_secrets(&dir.path().join(".security.yml")).unwrap();
    assert!(s.providers.is_empty());
}

#[cfg(unix)]
#[test]
fn a_file_others_can_read_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_with_mode(dir.path(), EXAMPLE, 0o644);
    let e = load_secrets(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} is readable by others (mode 0644); run: chmod 600 {}",
            path.display(),
            path.display()
        )
    );
    let path = write_with_mode(dir.path(), EXAMPLE, 0o640);
    assert!(matches!(
        load_secrets(&path),
        Err(ConfigError::SecretsPermissions { mode: 0o640, .. })
    ));
}

#[cfg(unix)]
#[test]
fn a_private_file_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_with_mode(dir.path(), EXAMPLE, 0o600);
    let s = load_secrets(&path).unwrap();
    assert!(s.channels.telegram.is_some());
    let path = write_with_mode(dir.path(), EXAMPLE, 0o400);
    assert!(load_secrets(&path).is_ok());
}

#[test]
fn provider_keys_come_from_the_file_first_then_the_kind_variable() {
    let s = parse(EXAMPLE);
    let e = env(&[
        ("OPENAI_API_KEY", "from-env"),
        ("ANTHROPIC_API_KEY", "ant-env"),
    ]);
    assert_eq!(
        exposed(&s.provider_keys("openai", ProviderKind::Openai, &e)),
        ["sk-openai-SECRET1"]
    );
    assert_eq!(
        exposed(&s.provider_keys("anthropic", ProviderKind::Anthropic, &e)),
        ["sk-ant-SECRET2", "sk-ant-SECRET3"]
    );
    assert_eq!(
        exposed(&s.provider_keys("groq", ProviderKind::Openai, &e)),
        ["from-env"]
    );
    assert_eq!(
        exposed(&s.provider_keys("other", ProviderKind::Anthropic, &e)),
        ["ant-env"]
    );
    assert!(
        s.provider_keys("local", ProviderKind::Openai, &[])
            .is_empty()
    );
    let both = parse("providers:\n  x: { api_key: \"one\", api_keys: [\"two\", \"\"] }\n");
    assert_eq!(
        exposed(&both.provider_keys("x", ProviderKind::Openai, &e)),
        ["one", "two"]
    );
}

#[test]
fn channel_tokens_come_from_the_file_first_then_the_variable() {
    let s = parse(EXAMPLE);
    let e = env(&[
        ("TELEGRAM_BOT_TOKEN", "tg-env"),
        ("DISCORD_BOT_TOKEN", "dc-env"),
        ("SLACK_BOT_TOKEN", "xoxb-env"),
        ("SLACK_APP_TOKEN", "xapp-env"),
    ]);
    assert_eq!(
        s.channel_token("telegram", &e).unwrap().expose_secret(),
        "123456:SECRET4"
    );
    assert_eq!(
        s.slack_app_token(&e).unwrap().expose_secret(),
        "xapp-SECRET7"
    );
    let empty = Secrets::default();
    assert_eq!(
        empty.channel_token("telegram", &e).unwrap().expose_secret(),
        "tg-env"
    );
    assert_eq!(
        empty.channel_token("discord", &e).unwrap().expose_secret(),
        "dc-env"
    );
    assert_eq!(
        empty.channel_token("slack", &e).unwrap().expose_secret(),
        "xoxb-env"
    );
    assert_eq!(
        empty.slack_app_token(&e).unwrap().expose_secret(),
        "xapp-env"
    );
    assert!(
        empty
            .channel_token("telegram", &env(&[("TELEGRAM_BOT_TOKEN", "")]))
            .is_none()
    );
    assert!(empty.channel_token("irc", &e).is_none());
}

#[test]
fn enabled_channels_without_a_token_name_both_places() {
    let sec = Path::new("/home/u/.pincer/.security.yml");
    let mut config = Config::default();
    assert!(check_channels(&config, &Secrets::default(), sec, &[]).is_ok());
    config.channels.telegram.enabled = true;
    let e = check_channels(&config, &Secrets::default(), sec, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "channels.telegram is enabled but has no bot token: add channels.telegram.bot_token to \
         /home/u/.pincer/.security.yml or set TELEGRAM_BOT_TOKEN"
    );
    let e_ok = env(&[("TELEGRAM_BOT_TOKEN", "t")]);
    assert!(check_channels(&config, &Secrets::default(), sec, &e_ok).is_ok());

    config.channels.slack.enabled = true;
    let mut vars = env(&[("TELEGRAM_BOT_TOKEN", "t"), ("SLACK_BOT_TOKEN", "b")]);
    let m = check_channels(&config, &Secrets::default(), sec, &vars)
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("channels.slack.app_token") && m.contains("SLACK_APP_TOKEN"),
        "{m}"
    );
    vars.push(("SLACK_APP_TOKEN".into(), "a".into()));
    assert!(check_channels(&config, &Secrets::default(), sec, &vars).is_ok());
    config.channels.slack.mode = SlackMode::Events;
    let m = check_channels(&config, &Secrets::default(), sec, &vars)
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("channels.slack.signing_secret") && m.contains("SLACK_SIGNING_SECRET"),
        "{m}"
    );
    assert!(check_channels(&config, &parse(EXAMPLE), sec, &[]).is_ok());
}
