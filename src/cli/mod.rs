//! The command line: global options, logging, loading configuration, and one module
//! per subcommand. Errors reach the user as one line naming the fix, exit code 1.

mod backup;
mod chat;
mod cron;
mod doctor;
mod mcp;
mod memory;
mod onboard;
mod pairing;
mod run;
mod service;
mod sessions;
mod status;
mod web;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use pincer_config::{Config, ConfigError, Secrets};

use crate::home::Home;
pub use crate::home::{env_vars, keep_env};

#[derive(Debug, Parser)]
#[command(
    name = "pincer",
    version,
    about = "A small, fast, self-hosted personal AI assistant"
)]
pub struct Cli {
    /// Pincer's home folder (default: $PINCER_HOME, else ~/.pincer)
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Read config.toml from here instead of the home folder
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Log as JSON lines
    #[arg(long, global = true)]
    pub json_logs: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write config.toml and .security.yml (asks, or takes flags with --non-interactive)
    Onboard(Box<onboard::Args>),
    /// Talk to the assistant in the terminal (session terminal:dm:local)
    Chat(chat::Args),
    /// Run the gateway: every enabled channel, until SIGINT/SIGTERM
    Run,
    /// List sessions or show one transcript
    #[command(subcommand)]
    Sessions(sessions::Command),
    /// Pairing codes: list, approve, revoke
    #[command(subcommand)]
    Pairing(pairing::Command),
    /// Gateway, channel health, today's usage and cost
    Status,
    /// Check config, secrets, providers, channels and MCP servers; say how to fix each problem
    Doctor,
    /// Scheduled jobs: list, add, remove, run, enable
    #[command(subcommand)]
    Cron(cron::Command),
    /// Memory: show, search, dream, log, restore
    #[command(subcommand)]
    Memory(memory::Command),
    /// MCP servers: check one (its name, protocol and tools), call one of its tools
    #[command(subcommand)]
    Mcp(mcp::Command),
    /// Be driven by another program over stdio: --protocol stream-json (the Claude Code
    /// CLI's, the default) or runner; --session KEY resumes a conversation. Accepts the
    /// flags the Claude Agent SDKs pass (see README)
    #[command(disable_help_flag = true)]
    Agent(AgentArgs),
    /// Be an Agent Client Protocol agent over stdio, for editors such as Zed
    Acp,
    /// The web panel's login: make a token, print the login link
    #[command(subcommand)]
    Web(web::Command),
    /// The gateway as a systemd service: install, uninstall, status
    #[command(subcommand)]
    Service(service::Command),
    /// Write the home into one archive while the gateway runs (the database, the
    /// memory's history, config and workspace; the secrets only with --with-secrets)
    Backup(backup::BackupArgs),
    /// Put an archive written by `pincer backup` into an empty home
    Restore(backup::RestoreArgs),
}

/// Everything after `pincer agent`, read by `host::Args` (the SDKs' flags included).
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

pub fn main(cli: Cli) -> ExitCode {
    // Two TLS stacks end up linked (reqwest and the chat clients); pick one for all.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let default_level = match cli.command {
        Command::Run => "info",
        // It reports the server's failure itself; the retries' warnings would repeat it.
        Command::Mcp(_) => "error",
        _ => "warn",
    };
    init_logging(cli.verbose, cli.json_logs, default_level);
    let home = Home::resolve(cli.home.clone(), cli.config.clone());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Onboard(args) => onboard::run(&home, *args).await,
            Command::Chat(args) => chat::run(&home, args).await,
            Command::Run => run::run(&home).await,
            Command::Sessions(command) => sessions::run(&home, command).await,
            Command::Pairing(command) => pairing::run(&home, command).await,
            Command::Status => status::run(&home).await,
            Command::Doctor => doctor::run(&home).await,
            Command::Cron(command) => cron::run(&home, command).await,
            Command::Memory(command) => memory::run(&home, command).await,
            Command::Mcp(command) => mcp::run(&home, command).await,
            Command::Acp => crate::host::acp(&home).await,
            Command::Web(command) => web::run(&home, command).await,
            Command::Service(command) => service::run(&home, command).await,
            Command::Backup(args) => backup::backup(&home, args).await,
            Command::Restore(args) => backup::restore(&home, args).await,
            Command::Agent(args) => match crate::host::Args::parse(&args.args) {
                Ok(args) => crate::host::agent(&home, args).await,
                Err(err) => Err(anyhow::anyhow!("pincer agent: {err}")),
            },
        }
    });
    // Don't wait for blocked stdin readers or idle connections on the way out.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(verbose: u8, json: bool, default_level: &str) {
    use tracing_subscriber::EnvFilter;
    // chromiumoxide warns of every DevTools event its generated types do not know (the
    // browser tool works on regardless): only its errors are worth a line. matrix-sdk
    // logs a 404 it expects (no key backup, a room without encryption) as an error; the
    // Matrix adapter reports what matters itself.
    const QUIET: &str = "chromiumoxide=error,matrix_sdk=off,matrix_sdk_base=error,matrix_sdk_crypto=error,matrix_sdk_sqlite=error,matrix_sdk_common=error";
    let filter = match verbose {
        0 => EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(format!("{default_level},{QUIET}"))),
        1 => EnvFilter::new(format!("info,{QUIET}")),
        _ => EnvFilter::new(format!(
            "debug,hyper=info,reqwest=info,rustls=info,h2=info,{QUIET}"
        )),
    };
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| crate::scrub::ScrubbingStderr)
        .with_target(false);
    // The web panel's overview shows the last warnings and errors.
    let errors = crate::web::ErrorLog;
    // A second init (tests calling main twice) keeps the first subscriber.
    let _ = if json {
        builder.json().finish().with(errors).try_init()
    } else {
        builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .finish()
            .with(errors)
            .try_init()
    };
}

/// Whether an environment variable holds a secret: the ones Pincer reads keys and
/// tokens from, and anything named like a key, token, secret or password.
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_API_KEYS"]
        .iter()
        .any(|suffix| upper.ends_with(suffix))
        || upper.contains("API_KEY")
}

/// Load config.toml and .security.yml, or say exactly what is wrong.
pub fn load(home: &Home) -> anyhow::Result<(Config, Secrets)> {
    let env = env_vars();
    let config = match pincer_config::load(&home.config_file, &home.security_file, &env) {
        Ok(config) => config,
        Err(ConfigError::Missing { path }) => anyhow::bail!(
            "no configuration at {}; run `pincer onboard` to create one",
            path.display()
        ),
        Err(err) => return Err(err.into()),
    };
    let secrets = pincer_config::load_secrets(&home.security_file)?;
    Ok((config, secrets))
}

/// Make sure the home exists (0700) before anything writes into it.
pub fn ensure_home(home: &Home) -> anyhow::Result<()> {
    home.ensure()
        .with_context(|| format!("cannot create {}", home.dir.display()))
}

/// `path`, absolute (relative to the current folder), without `.` or `..` parts.
pub(crate) fn absolute(path: &std::path::Path) -> PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean
}
