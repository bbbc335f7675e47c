//! `pincer onboard`: write config.toml and .security.yml. Asks on a terminal, or
//! takes flags with `--non-interactive`. Secrets come from the environment or stdin,
//! never from argv. An existing config is only replaced with `--force`, and then a
//! backup of each file is kept.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use pincer_config::ProviderKind;

use super::ensure_home;
use crate::home::Home;

#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Take every answer from flags; never prompt
    #[arg(long)]
    pub non_interactive: bool,
    /// Replace an existing config (backups are kept as *.bak)
    #[arg(long)]
    pub force: bool,
    /// Wire format of the model provider
    #[arg(long, value_parser = ["openai", "anthropic"], default_value = "openai")]
    pub provider_kind: String,
    /// Your name for the provider in config.toml (default: the kind)
    #[arg(long)]
    pub provider_name: Option<String>,
    /// The provider's API base URL (OpenAI-compatible ones end in /v1)
    #[arg(long)]
    pub base_url: Option<String>,
    /// Model for easy turns
    #[arg(long)]
    pub light_model: Option<String>,
    /// Model for hard turns
    #[arg(long)]
    pub heavy_model: Option<String>,
    /// Read the API key from this environment variable
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Read the API key from the first line of stdin
    #[arg(long)]
    pub api_key_stdin: bool,
    /// IANA time zone for dates and schedules (default: $TZ, else UTC)
    #[arg(long)]
    pub timezone: Option<String>,
    /// Enable Telegram with the bot token in this environment variable
    #[arg(long, value_name = "VAR")]
    pub telegram_token_env: Option<String>,
    /// Enable Discord with the bot token in this environment variable
    #[arg(long, value_name = "VAR")]
    pub discord_token_env: Option<String>,
    /// Enable Slack with the bot token (xoxb-) in this environment variable
    #[arg(long, value_name = "VAR")]
    pub slack_bot_token_env: Option<String>,
    /// Slack app-level token (xapp-) for Socket Mode, from this environment variable
    #[arg(long, value_name = "VAR")]
    pub slack_app_token_env: Option<String>,
    /// Enable Matrix on this homeserver (e.g. https://matrix.example.org)
    #[arg(long, value_name = "URL")]
    pub matrix_homeserver: Option<String>,
    /// The Matrix bot's user id (e.g. @pincer:example.org), for a password login
    #[arg(long, value_name = "USER")]
    pub matrix_user: Option<String>,
    /// The Matrix bot account's password, from this environment variable
    #[arg(long, value_name = "VAR")]
    pub matrix_password_env: Option<String>,
    /// A Matrix access token of the bot account, from this environment variable
    #[arg(long, value_name = "VAR")]
    pub matrix_token_env: Option<String>,
}

/// Matrix's answers: where, who, and how the bot logs in.
struct MatrixAnswers {
    homeserver: String,
    user: Option<String>,
    password: Option<String>,
    token: Option<String>,
}

/// Everything onboarding writes.
struct Answers {
    kind: ProviderKind,
    name: String,
    base_url: String,
    light: String,
    heavy: String,
    api_key: Option<String>,
    timezone: String,
    telegram: Option<String>,
    discord: Option<String>,
    slack_bot: Option<String>,
    slack_app: Option<String>,
    matrix: Option<MatrixAnswers>,
}

pub(super) async fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let answers = if args.non_interactive {
        refuse_overwrite(home, args.force)?;
        from_flags(&args)?
    } else if std::io::stdin().is_terminal() {
        refuse_overwrite(home, args.force)?;
        ask(&args)?
    } else {
        anyhow::bail!(
            "stdin is not a terminal, so onboarding cannot ask; pass --non-interactive with flags (see `pincer onboard --help`)"
        );
    };
    write(home, &answers, args.force)?;
    Ok(ExitCode::SUCCESS)
}

/// Onboarding on first `pincer chat`: ask everything with the defaults.
pub(super) async fn interactive(home: &Home) -> anyhow::Result<()> {
    let args = Args {
        non_interactive: false,
        force: false,
        provider_kind: "openai".into(),
        provider_name: None,
        base_url: None,
        light_model: None,
        heavy_model: None,
        api_key_env: None,
        api_key_stdin: false,
        timezone: None,
        telegram_token_env: None,
        discord_token_env: None,
        slack_bot_token_env: None,
        slack_app_token_env: None,
        matrix_homeserver: None,
        matrix_user: None,
        matrix_password_env: None,
        matrix_token_env: None,
    };
    let answers = ask(&args)?;
    write(home, &answers, false)
}

fn kind_of(text: &str) -> anyhow::Result<ProviderKind> {
    match text.trim() {
        "openai" => Ok(ProviderKind::Openai),
        "anthropic" => Ok(ProviderKind::Anthropic),
        other => anyhow::bail!("provider kind `{other}` is not known; use openai or anthropic"),
    }
}

fn default_models(kind: ProviderKind) -> (&'static str, &'static str) {
    match kind {
        ProviderKind::Openai => ("gpt-4.1-mini", "gpt-4.1"),
        ProviderKind::Anthropic => ("claude-haiku-4-5", "claude-sonnet-4-5"),
    }
}

fn default_timezone() -> String {
    std::env::var("TZ")
        .ok()
        .filter(|tz| tz.parse::<pincer_core::tz::Tz>().is_ok())
        .unwrap_or_else(|| "UTC".into())
}

fn secret_from_env(flag: &str, var: &Option<String>) -> anyhow::Result<Option<String>> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => Ok(Some(value.trim().to_string())),
        _ => anyhow::bail!("{flag} {var}: the environment variable {var} is not set or empty"),
    }
}

fn from_flags(args: &Args) -> anyhow::Result<Answers> {
    let kind = kind_of(&args.provider_kind)?;
    let (light, heavy) = default_models(kind);
    let mut api_key = secret_from_env("--api-key-env", &args.api_key_env)?;
    if args.api_key_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("cannot read the API key from stdin")?;
        anyhow::ensure!(
            !line.trim().is_empty(),
            "--api-key-stdin: stdin had no key on its first line"
        );
        api_key = Some(line.trim().to_string());
    }
    Ok(Answers {
        kind,
        name: args
            .provider_name
            .clone()
            .unwrap_or_else(|| kind.as_str().to_string()),
        base_url: args
            .base_url
            .clone()
            .unwrap_or_else(|| kind.default_base_url().to_string()),
        light: args.light_model.clone().unwrap_or_else(|| light.into()),
        heavy: args.heavy_model.clone().unwrap_or_else(|| heavy.into()),
        api_key,
        timezone: args.timezone.clone().unwrap_or_else(default_timezone),
        telegram: secret_from_env("--telegram-token-env", &args.telegram_token_env)?,
        discord: secret_from_env("--discord-token-env", &args.discord_token_env)?,
        slack_bot: secret_from_env("--slack-bot-token-env", &args.slack_bot_token_env)?,
        slack_app: secret_from_env("--slack-app-token-env", &args.slack_app_token_env)?,
        matrix: matrix_from_flags(args)?,
    })
}

fn matrix_from_flags(args: &Args) -> anyhow::Result<Option<MatrixAnswers>> {
    let Some(homeserver) = args.matrix_homeserver.clone() else {
        anyhow::ensure!(
            args.matrix_user.is_none()
                && args.matrix_password_env.is_none()
                && args.matrix_token_env.is_none(),
            "--matrix-user, --matrix-password-env and --matrix-token-env need --matrix-homeserver URL"
        );
        return Ok(None);
    };
    let password = secret_from_env("--matrix-password-env", &args.matrix_password_env)?;
    let token = secret_from_env("--matrix-token-env", &args.matrix_token_env)?;
    anyhow::ensure!(
        token.is_some() || (password.is_some() && args.matrix_user.is_some()),
        "Matrix needs --matrix-token-env VAR, or --matrix-user @bot:server with --matrix-password-env VAR"
    );
    Ok(Some(MatrixAnswers {
        homeserver,
        user: args.matrix_user.clone(),
        password,
        token,
    }))
}

fn ask(args: &Args) -> anyhow::Result<Answers> {
    let mut stdin = std::io::stdin().lock();
    let mut question = |text: &str, default: &str| -> anyhow::Result<String> {
        if default.is_empty() {
            eprint!("{text}: ");
        } else {
            eprint!("{text} [{default}]: ");
        }
        std::io::stderr().flush()?;
        let mut line = String::new();
        if stdin.read_line(&mut line)? == 0 {
            anyhow::bail!("onboarding cancelled (end of input); nothing was written");
        }
        let line = line.trim();
        Ok(if line.is_empty() {
            default.to_string()
        } else {
            line.to_string()
        })
    };
    let kind = kind_of(&question(
        "Provider wire format (openai or anthropic)",
        &args.provider_kind,
    )?)?;
    let name = question("Name for this provider", kind.as_str())?;
    let base_url = question(
        "API base URL (OpenAI-compatible servers such as Ollama: http://127.0.0.1:11434/v1)",
        args.base_url.as_deref().unwrap_or(kind.default_base_url()),
    )?;
    let (light, heavy) = default_models(kind);
    let light = question(
        "Model for easy turns",
        args.light_model.as_deref().unwrap_or(light),
    )?;
    let heavy = question(
        "Model for hard turns",
        args.heavy_model.as_deref().unwrap_or(heavy),
    )?;
    let timezone = question("Your time zone", &default_timezone())?;
    let key = rpassword::prompt_password(format!(
        "API key (hidden; leave empty to use ${} or for a local server): ",
        kind.env_var()
    ))
    .context("cannot read the API key")?;
    let telegram =
        rpassword::prompt_password("Telegram bot token from @BotFather (hidden; empty to skip): ")
            .context("cannot read the token")?;
    let some = |s: String| (!s.trim().is_empty()).then(|| s.trim().to_string());
    let homeserver = question(
        "Matrix homeserver URL, e.g. https://matrix.example.org (empty to skip)",
        args.matrix_homeserver.as_deref().unwrap_or(""),
    )?;
    let matrix = match some(homeserver) {
        None => None,
        Some(homeserver) => {
            let user = question("The bot's Matrix user id, e.g. @pincer:example.org", "")?;
            let password = rpassword::prompt_password(
                "The bot account's password (hidden; empty to give an access token instead): ",
            )
            .context("cannot read the password")?;
            let token = match some(password.clone()) {
                Some(_) => String::new(),
                None => rpassword::prompt_password("The bot's access token (hidden): ")
                    .context("cannot read the token")?,
            };
            Some(MatrixAnswers {
                homeserver,
                user: some(user),
                password: some(password),
                token: some(token),
            })
        }
    };
    Ok(Answers {
        kind,
        name,
        base_url,
        light,
        heavy,
        api_key: some(key),
        timezone,
        telegram: some(telegram),
        discord: None,
        slack_bot: None,
        slack_app: None,
        matrix,
    })
}

fn refuse_overwrite(home: &Home, force: bool) -> anyhow::Result<()> {
    if home.config_file.exists() && !force {
        anyhow::bail!(
            "{} already exists; to replace it run `pincer onboard --force` (a backup of the old files is kept)",
            home.config_file.display()
        );
    }
    Ok(())
}

fn write(home: &Home, answers: &Answers, force: bool) -> anyhow::Result<()> {
    refuse_overwrite(home, force)?;
    answers
        .timezone
        .parse::<pincer_core::tz::Tz>()
        .map_err(|_| {
            anyhow::anyhow!(
                "`{}` is not a time zone; use an IANA name such as Europe/Paris or UTC",
                answers.timezone
            )
        })?;
    anyhow::ensure!(
        !answers.name.is_empty() && !answers.name.contains(['/', '.', '"']),
        "the provider name `{}` may not contain '/', '.' or quotes",
        answers.name
    );
    ensure_home(home)?;
    if let Some(dir) = home.config_file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    for file in [&home.config_file, &home.security_file] {
        if file.exists() {
            let backup = pincer_config::backup(file)
                .with_context(|| format!("cannot back up {}", file.display()))?;
            eprintln!("Kept the old {} as {}", file.display(), backup.display());
        }
    }
    pincer_config::write_private(&home.config_file, &render_config(answers))
        .with_context(|| format!("cannot write {}", home.config_file.display()))?;
    let web_token = crate::web::token::fresh()?;
    let store_passphrase = crate::web::token::fresh()?;
    let secrets = render_secrets(answers, &web_token, &store_passphrase);
    pincer_config::write_private(&home.security_file, &secrets)
        .with_context(|| format!("cannot write {}", home.security_file.display()))?;
    // What we wrote must load; if not, that is our bug, and the user should hear it now.
    pincer_config::load(&home.config_file, &home.security_file, &[])
        .context("the written config.toml does not load (please report this)")?;
    eprintln!(
        "Wrote {} and {} (mode 0600).\nTry it: pincer chat -m \"hello\"",
        home.config_file.display(),
        home.security_file.display()
    );
    Ok(())
}

/// A TOML (and YAML) double-quoted string: JSON's escaping is valid in both.
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

fn render_config(a: &Answers) -> String {
    let channel = |name: &str, token: &Option<String>| {
        format!("\n[channels.{name}]\nenabled = {}\n", token.is_some())
    };
    format!(
        "# Pincer configuration. Reference: the README's Configuration section.\n\
         version = 1\n\n\
         [agent]\n\
         timezone = {tz}\n\
         # workspace = \"~/.pincer/workspace\"\n\
         # max_iterations = 25\n\
         # max_turn_cost_usd = 0.50\n\
         # max_day_cost_usd = 5.00\n\
         # queue_mode = \"steer\"   # steer | followup | collect | interrupt\n\n\
         [router]\n\
         light = [{light}]\n\
         heavy = [{heavy}]\n\n\
         [providers.{name}]\n\
         kind = {kind}\n\
         base_url = {url}\n\
         {telegram}{discord}{slack}{matrix}",
        tz = quoted(&a.timezone),
        light = quoted(&format!("{}/{}", a.name, a.light)),
        heavy = quoted(&format!("{}/{}", a.name, a.heavy)),
        name = a.name,
        kind = quoted(a.kind.as_str()),
        url = quoted(&a.base_url),
        telegram = channel("telegram", &a.telegram),
        discord = channel("discord", &a.discord),
        slack = channel("slack", &a.slack_bot),
        matrix = match &a.matrix {
            None => channel("matrix", &None),
            Some(m) => format!(
                "\n[channels.matrix]\nenabled = true\nhomeserver = {}\n{}",
                quoted(&m.homeserver),
                m.user
                    .as_ref()
                    .map(|u| format!("user_id = {}\n", quoted(u)))
                    .unwrap_or_default()
            ),
        },
    )
}

fn render_secrets(a: &Answers, web_token: &str, store_passphrase: &str) -> String {
    let mut out = String::from("# Pincer secrets. Keep this file private: chmod 600.\n");
    match &a.api_key {
        Some(key) => out.push_str(&format!(
            "providers:\n  {}:\n    api_key: {}\n",
            a.name,
            quoted(key)
        )),
        None => out.push_str("providers: {}\n"),
    }
    let mut channels = String::new();
    for (name, token) in [("telegram", &a.telegram), ("discord", &a.discord)] {
        if let Some(token) = token {
            channels.push_str(&format!("  {name}:\n    bot_token: {}\n", quoted(token)));
        }
    }
    if a.slack_bot.is_some() || a.slack_app.is_some() {
        channels.push_str("  slack:\n");
        if let Some(token) = &a.slack_bot {
            channels.push_str(&format!("    bot_token: {}\n", quoted(token)));
        }
        if let Some(token) = &a.slack_app {
            channels.push_str(&format!("    app_token: {}\n", quoted(token)));
        }
    }
    if let Some(m) = &a.matrix {
        channels.push_str("  matrix:\n");
        if let Some(token) = &m.token {
            channels.push_str(&format!("    access_token: {}\n", quoted(token)));
        }
        if let Some(password) = &m.password {
            channels.push_str(&format!("    password: {}\n", quoted(password)));
        }
        // Encrypts the bot's keys on disk; made here, never typed.
        channels.push_str(&format!(
            "    store_passphrase: {}\n",
            quoted(store_passphrase)
        ));
    }
    if channels.is_empty() {
        out.push_str("channels: {}\n");
    } else {
        out.push_str("channels:\n");
        out.push_str(&channels);
    }
    // The web panel's login (`pincer web url` prints the link; [web] enabled turns it on).
    out.push_str(&crate::web::token::section(web_token, None));
    out
}
