//! Opening one MCP connection: spawn the server's process (or reach its HTTP URL), run
//! the MCP handshake with the rmcp client (Pincer's side of it: `client`), refuse a
//! protocol version Pincer does not speak, and list the server's tools.
//!
//! A child process gets a clean environment — PATH, HOME and LANG from Pincer's, plus
//! the server's configured `env` — so Pincer's own secrets never reach it; it starts in
//! a folder of its own (never the workspace, where any command may have planted a
//! `node_modules/.bin/<pkg>` for `npx` to prefer, or a `pyproject.toml` for `uvx`), and
//! is killed when its connection is dropped. A server that fails inside the sandbox is
//! told the likely cause (a program under the sandbox's private `/tmp`, or inside the
//! hidden `$PINCER_HOME`). This file must not retry: the manager decides when to try
//! again.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::Tool as McpTool;
use rmcp::service::{ClientInitializeError, RoleClient, RunningService, serve_client};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::McpServerConfig;
use super::asking::Calls;
use super::client::PincerClient;

/// A live MCP client session.
pub(super) type Client = RunningService<RoleClient, PincerClient>;

/// How long the handshake plus the tool listing may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The variables of Pincer's environment a server inherits.
const INHERITED_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// A connected server and the tools it offered.
pub(super) struct Connection {
    pub client: Client,
    pub tools: Vec<McpTool>,
    /// The server as it introduced itself: "name version, protocol 2025-11-25".
    pub about: String,
}

/// The last line a child server wrote to stderr, to explain why it failed.
#[derive(Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<String>>);

impl StderrTail {
    fn set(&self, line: &str) {
        if let Ok(mut last) = self.0.lock() {
            *last = line.chars().take(300).collect();
        }
    }

    /// `reason`, followed by the server's last stderr line if it wrote one.
    pub(super) fn explain(&self, reason: String) -> String {
        let last = self.0.lock().map(|l| l.clone()).unwrap_or_default();
        if last.is_empty() {
            reason
        } else {
            format!("{reason} (its stderr said: {last})")
        }
    }
}

/// Why a server could not be connected, worded for the user.
#[derive(Debug, thiserror::Error)]
pub(super) enum ConnectError {
    #[error("set exactly one of `command` and `url` for MCP server {0} in config.toml")]
    Shape(String),
    #[error("MCP server {server} cannot start: {reason}")]
    Sandbox { server: String, reason: String },
    #[error(
        "cannot start `{command}`: {source}; check the command of MCP server {server} in config.toml"
    )]
    Spawn {
        command: String,
        server: String,
        source: std::io::Error,
    },
    #[error("header `{header}` of MCP server {server} is not valid")]
    Header { header: String, server: String },
    #[error("cannot make {path} for MCP server {server} to start in: {source}")]
    Folder {
        server: String,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
    #[error(
        "the server wants authorization (OAuth), which Pincer's MCP client does not do; get a token for it and put it in .security.yml as mcp.{0}.headers.Authorization: \"Bearer <token>\""
    )]
    Authorization(String),
    #[error("{error}; likely cause: {hint}")]
    Hinted {
        error: Box<ConnectError>,
        hint: String,
    },
    #[error("{0} gave no answer in {CONNECT_TIMEOUT:?}")]
    NoAnswer(&'static str),
    #[error("tools/list failed: {0}")]
    ListTools(String),
    #[error(
        "the server answered with MCP protocol version {0}, which Pincer does not speak (it speaks {first} to {last}); update the server, or use a release of it that speaks one of those",
        first = super::ACCEPTED[0],
        last = super::OFFERED
    )]
    Version(String),
}

/// Connect to `config` and list its tools; a stdio server starts in its `cwd`, else
/// in `<folders>/<name>`. The server's questions go to the owners of `calls`.
pub(super) async fn connect(
    config: &McpServerConfig,
    folders: &Path,
    stderr: &StderrTail,
    calls: Arc<Calls>,
) -> Result<Connection, ConnectError> {
    let pincer = PincerClient::new(&config.name, calls);
    let client = match (&config.command, &config.url, &config.host) {
        (Some(command), None, None) => {
            let cwd = config
                .cwd
                .clone()
                .unwrap_or_else(|| folders.join(&config.name));
            own_folder(&cwd).map_err(|source| ConnectError::Folder {
                server: config.name.clone(),
                path: cwd.clone(),
                source,
            })?;
            let started = async {
                let transport = spawn(config, command, &cwd, stderr)?;
                handshake(&config.name, serve_client(pincer, transport)).await
            };
            match started.await {
                Ok(client) => client,
                Err(err) => return Err(with_hint(config, command, err)),
            }
        }
        (None, Some(url), None) => {
            // rmcp builds its HTTP client with rustls and no crypto provider of its
            // own, and panics if none is installed: install ring (the one `main`
            // installs) unless one already is — then this returns Err, which is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let transport = StreamableHttpClientTransport::from_config(http_config(config, url)?);
            handshake(&config.name, serve_client(pincer, transport)).await?
        }
        (None, None, Some(link)) => {
            let transport = super::bridge::Bridge::new(&config.name, link.clone());
            handshake(&config.name, serve_client(pincer, transport)).await?
        }
        _ => return Err(ConnectError::Shape(config.name.clone())),
    };
    let about = match client.peer_info() {
        Some(info) if super::client::accepts(&info.protocol_version) => {
            let name = info.server_info.as_ref().map_or_else(
                || "a server without a name".to_string(),
                |i| format!("{} {}", i.name, i.version),
            );
            format!("{name}, protocol {}", info.protocol_version)
        }
        Some(info) => return Err(ConnectError::Version(info.protocol_version.to_string())),
        None => return Err(ConnectError::Version("(none)".into())),
    };
    let tools = match tokio::time::timeout(CONNECT_TIMEOUT, client.list_all_tools()).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => return Err(ConnectError::ListTools(e.to_string())),
        Err(_) => return Err(ConnectError::NoAnswer("tools/list")),
    };
    Ok(Connection {
        client,
        tools,
        about,
    })
}

async fn handshake(
    server: &str,
    serving: impl Future<Output = Result<Client, ClientInitializeError>>,
) -> Result<Client, ConnectError> {
    match tokio::time::timeout(CONNECT_TIMEOUT, serving).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) if e.is_authorization_required() => {
            Err(ConnectError::Authorization(server.to_string()))
        }
        Ok(Err(e)) => Err(ConnectError::Handshake(e.to_string())),
        Err(_) => Err(ConnectError::NoAnswer("MCP handshake")),
    }
}

/// Make the server's own folder (private to the user) if it is missing.
fn own_folder(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// `err`, for a server that failed inside the sandbox, with what most likely made it
/// fail and the fix: its program (or a path it was given) where the sandbox does not
/// show it.
fn with_hint(config: &McpServerConfig, command: &str, err: ConnectError) -> ConnectError {
    let Some(jail) = &config.jail else {
        return err;
    };
    let program = crate::sandbox::find_program(command);
    let paths = program.iter().cloned().chain(
        config
            .args
            .iter()
            .filter(|a| a.starts_with('/'))
            .map(Into::into),
    );
    for path in paths {
        if let Some(why) = jail.unseen(&path) {
            let name = &config.name;
            return ConnectError::Hinted {
                error: Box::new(err),
                hint: format!(
                    "{} {why}; install the server elsewhere (e.g. under ~/.local or /opt), or set [mcp.servers.{name}] sandbox = false knowingly",
                    path.display()
                ),
            };
        }
    }
    err
}

/// Start the server's process with a clean environment, in `cwd`.
fn spawn(
    config: &McpServerConfig,
    command: &str,
    cwd: &Path,
    stderr: &StderrTail,
) -> Result<TokioChildProcess, ConnectError> {
    let args: Vec<std::ffi::OsString> = config.args.iter().map(Into::into).collect();
    let mut cmd = match &config.jail {
        Some(jail) => jail
            .with_own_folder(cwd)
            .command(command, &args)
            .map_err(|e| ConnectError::Sandbox {
                server: config.name.clone(),
                reason: e.to_string(),
            })?,
        None => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&args);
            cmd
        }
    };
    cmd.current_dir(cwd).env_clear().kill_on_drop(true);
    for key in INHERITED_ENV {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.envs(config.env.iter().map(|(k, v)| (k, v)));
    let (transport, child_stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ConnectError::Spawn {
            command: command.to_string(),
            server: config.name.clone(),
            source,
        })?;
    if let Some(child_stderr) = child_stderr {
        tokio::spawn(drain_stderr(
            config.name.clone(),
            child_stderr,
            stderr.clone(),
        ));
    }
    Ok(transport)
}

/// Read the child's stderr to the end (so it never blocks on a full pipe), logging
/// each line and keeping the last one.
async fn drain_stderr(server: String, child_stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut lines = BufReader::new(child_stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(mcp_server = %server, "stderr: {line}");
        if !line.trim().is_empty() {
            tail.set(line.trim());
        }
    }
}

/// The HTTP transport's settings: the URL and the configured headers.
fn http_config(
    config: &McpServerConfig,
    url: &str,
) -> Result<StreamableHttpClientTransportConfig, ConnectError> {
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let bad = || ConnectError::Header {
            header: name.clone(),
            server: config.name.clone(),
        };
        let name = http::HeaderName::try_from(name.as_str()).map_err(|_| bad())?;
        let value = http::HeaderValue::try_from(value.as_str()).map_err(|_| bad())?;
        headers.insert(name, value);
    }
    Ok(StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers))
}
