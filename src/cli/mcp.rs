//! `pincer mcp check | call`: connect to one MCP server the way the gateway does — a
//! server configured as `[mcp.servers.NAME]` (its secrets, its sandbox, its folder), or
//! a URL or a command given on the line (run like a configured one) — and show what it
//! offers, or call one of its tools and print the result. For trying a server before
//! configuring it, and for finding out why one fails.
//!
//! A question the server asks during a call (an elicitation) goes to the person at the
//! terminal when there is one (stdin and stderr are a terminal); otherwise nobody can
//! answer and the server is told `decline`. What the server sends is printed with its
//! control characters escaped.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use async_trait::async_trait;
use pincer_channels::escape::escape_hidden;
use pincer_config::{Config, ConfigError, McpServer, Secrets};

use crate::home::Home;
use crate::mcp::McpManager;
use crate::tools::ToolContext;
use crate::tools::approval::{Approval, Approver, Approvers, Request, answer_of};

/// How long the server has to answer the handshake and list its tools.
const WAIT: Duration = Duration::from_secs(30);

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Connect to an MCP server as the gateway does: its name, protocol version and tools
    Check(Target),
    /// Call one tool of an MCP server and print its result
    Call {
        /// The tool, as the server names it
        tool: String,
        /// The call's arguments: a JSON object
        #[arg(long, value_name = "JSON", default_value = "{}")]
        arguments: String,
        #[command(flatten)]
        target: Target,
    },
}

/// Which server: a configured name, a URL, or a command and its arguments.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// A server in config.toml ([mcp.servers.NAME]), a streamable HTTP URL, or a
    /// command that speaks MCP on stdio
    server: String,
    /// The command's arguments
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

pub(super) async fn run(home: &Home, command: Command) -> anyhow::Result<ExitCode> {
    let (target, call) = match command {
        Command::Check(target) => (target, None),
        Command::Call {
            tool,
            arguments,
            target,
        } => {
            let arguments: serde_json::Value = serde_json::from_str(&arguments)
                .context("--arguments must be a JSON object, such as '{\"a\": 1}'")?;
            (target, Some((tool, arguments)))
        }
    };
    let (config, secrets) = config_or_none(home)?;
    let (config, name) = with_target(config, &target)?;
    let workspace = home.workspace(&config);
    if config.mcp.servers.values().any(|s| s.command.is_some()) {
        // A stdio server's sandbox shows it the workspace, as the gateway makes it.
        std::fs::create_dir_all(&workspace)
            .with_context(|| format!("cannot create the workspace {}", workspace.display()))?;
    }
    let jail = crate::start::jail(home, &config, &workspace);
    let servers = crate::start::mcp_servers(&config, &secrets, &jail, &workspace)?;
    let mut approvers = Approvers::default();
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        approvers.register(pincer_channels::terminal::CHANNEL, Arc::new(Prompt));
    }
    let manager = McpManager::start_asking(servers, crate::start::mcp_folders(home), approvers);
    manager.settle(WAIT).await;
    let code = report(&manager, &name, &workspace, call).await;
    manager.close(CLOSE_WAIT).await;
    code
}

/// How long the connection may take to close cleanly before the command exits.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Print what the server offers, or call the tool and print its result.
async fn report(
    manager: &McpManager,
    name: &str,
    workspace: &std::path::Path,
    call: Option<(String, serde_json::Value)>,
) -> anyhow::Result<ExitCode> {
    let about = match manager.report(name) {
        Some(Ok(about)) => about,
        Some(Err(why)) => anyhow::bail!("MCP server {name}: {why}"),
        None => anyhow::bail!("MCP server {name} is not configured"),
    };
    let prefix = crate::mcp::tool_name(name, "");
    let tools = manager.tools();
    let Some((tool, arguments)) = call else {
        println!("MCP server {name}: {}", shown(&about));
        println!("{} tool(s)", tools.len());
        for tool in &tools {
            let spec = tool.spec();
            let description = spec
                .description
                .trim_start_matches(&format!("[MCP server {name}] "));
            let first_line = description.lines().next().unwrap_or_default();
            println!("  {} — {}", &spec.name[prefix.len()..], shown(first_line));
        }
        return Ok(ExitCode::SUCCESS);
    };
    let wanted = crate::mcp::tool_name(name, &tool);
    let Some(found) = tools.iter().find(|t| t.spec().name == wanted) else {
        let names: Vec<String> = tools
            .iter()
            .map(|t| t.spec().name[prefix.len()..].to_string())
            .collect();
        anyhow::bail!(
            "MCP server {name} has no tool {tool}; it has: {} (`pincer mcp check` lists them)",
            names.join(", ")
        );
    };
    let ctx = ToolContext {
        workspace: workspace.to_path_buf(),
        origin: Some(pincer_channels::Terminal::target()),
        caller: crate::tools::Caller::owner(),
        taint: Default::default(),
        pictures: Default::default(),
        session: None,
        mode: None,
    };
    match found.call(arguments, &ctx).await {
        Ok(text) => {
            println!("{}", shown(&text));
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("error: {}", shown(&err.0));
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The server's text with hidden characters escaped, so it cannot rewrite the terminal.
fn shown(text: &str) -> String {
    escape_hidden(text).into_owned()
}

/// config.toml and .security.yml, or the defaults when there is no config yet (a URL
/// or a command can be checked before anything is set up).
fn config_or_none(home: &Home) -> anyhow::Result<(Config, Secrets)> {
    let env = super::env_vars();
    match pincer_config::load(&home.config_file, &home.security_file, &env) {
        Ok(config) => Ok((config, pincer_config::load_secrets(&home.security_file)?)),
        Err(ConfigError::Missing { .. }) => Ok((Config::default(), Secrets::default())),
        Err(err) => Err(err.into()),
    }
}

/// The configuration with only the target server in it, and the server's name: a
/// configured one as it is, a URL or a command as a server of its own (named after the
/// URL's host or the program).
fn with_target(mut config: Config, target: &Target) -> anyhow::Result<(Config, String)> {
    let given = &target.server;
    let name = if config.mcp.servers.contains_key(given) {
        if !target.args.is_empty() {
            anyhow::bail!(
                "{given} is a configured MCP server: its arguments are in config.toml, not on the command line"
            );
        }
        given.clone()
    } else {
        let mut server = McpServer::default();
        let label = if given.starts_with("http://") || given.starts_with("https://") {
            server.url = Some(given.clone());
            reqwest::Url::parse(given)
                .with_context(|| format!("{given} is not a URL"))?
                .host_str()
                .unwrap_or("server")
                .to_string()
        } else {
            server.command = Some(given.clone());
            server.args = target.args.clone();
            std::path::Path::new(given)
                .file_stem()
                .map_or_else(|| "server".into(), |s| s.to_string_lossy().into_owned())
        };
        let name: String = label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        config.mcp.servers.insert(name.clone(), server);
        name
    };
    config.mcp.servers.retain(|key, _| *key == name);
    Ok((config, name))
}

/// The person at the terminal answers: the question on stderr, the next line typed.
struct Prompt;

#[async_trait]
impl Approver for Prompt {
    async fn approve(&self, request: &Request) -> Approval {
        eprint!("\n{}\n> ", crate::tools::question::shown(&request.input));
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await;
        match line {
            Ok(Ok(line)) => answer_of(&request.input, line.trim()),
            _ => Approval::Unavailable("the terminal could not be read".into()),
        }
    }
}
