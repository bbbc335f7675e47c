//! `pincer doctor`: check everything a working assistant needs — the home and its
//! permissions, config.toml, .security.yml, each provider (its key, whether it
//! answers, and what it does with a tool: `tools`), each enabled channel (its token, and whether the platform accepts it),
//! the MCP servers, the workspace, the database and the gateway — and say how to fix
//! what is wrong. One line per check on stdout (`ok`, `warn` or `FAIL`, a fix under
//! each problem); exit 1 when anything failed. Nothing it prints carries a secret.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use pincer_config::{Config, ConfigError, Platform, ProviderKind, Secrets};
use secrecy::ExposeSecret;

use super::env_vars;
use crate::home::Home;

#[cfg(feature = "matrix")]
mod matrix;
mod tools;
use crate::scrub::Scrubber;
use crate::store::Store;

/// How long one probe of a provider or platform may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(8);

#[derive(Default)]
struct Report {
    failed: usize,
    warned: usize,
    lines: Vec<String>,
}

impl Report {
    fn ok(&mut self, what: &str, detail: impl Into<String>) {
        self.lines
            .push(format!("ok    {what:<16} {}", detail.into()));
    }

    fn warn(&mut self, what: &str, detail: impl Into<String>, fix: impl Into<String>) {
        self.warned += 1;
        self.line("warn", what, detail.into(), fix.into());
    }

    fn fail(&mut self, what: &str, detail: impl Into<String>, fix: impl Into<String>) {
        self.failed += 1;
        self.line("FAIL", what, detail.into(), fix.into());
    }

    fn line(&mut self, mark: &str, what: &str, detail: String, fix: String) {
        self.lines.push(format!("{mark:<5} {what:<16} {detail}"));
        if !fix.is_empty() {
            self.lines.push(format!("      {:<16} fix: {fix}", ""));
        }
    }

    /// Print every line (scrubbed of the secrets we know) and the verdict.
    fn finish(self, scrubber: &Scrubber) -> ExitCode {
        for line in &self.lines {
            println!("{}", scrubber.scrub(line));
        }
        match (self.failed, self.warned) {
            (0, 0) => println!("\nEverything looks right."),
            (0, w) => println!("\nNo problems; {w} warning(s) above."),
            (f, w) => println!("\n{f} problem(s) and {w} warning(s); fix the lines marked FAIL."),
        }
        if self.failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

pub(super) async fn run(home: &Home) -> anyhow::Result<ExitCode> {
    let mut report = Report::default();
    let no_secrets = Scrubber::new(Vec::new());
    check_home(home, &mut report);
    let env = env_vars();
    let config = match pincer_config::load(&home.config_file, &home.security_file, &env) {
        Ok(config) => config,
        Err(ConfigError::Missing { path }) => {
            report.fail(
                "config",
                format!("no configuration at {}", path.display()),
                "run `pincer onboard` to create one",
            );
            return Ok(report.finish(&no_secrets));
        }
        Err(err) => {
            report.fail("config", err.to_string(), "");
            return Ok(report.finish(&no_secrets));
        }
    };
    report.ok("config", format!("{} is valid", home.config_file.display()));
    let secrets = match pincer_config::load_secrets(&home.security_file) {
        Ok(secrets) => secrets,
        Err(err) => {
            report.fail("secrets", err.to_string(), "");
            return Ok(report.finish(&no_secrets));
        }
    };
    if home.security_file.exists() {
        report.ok(
            "secrets",
            format!("{} is private (0600)", home.security_file.display()),
        );
    }
    let scrubber = Scrubber::new(crate::start::secret_values(&config, &secrets, &env));
    let http = pincer_net::http::client()
        .timeout(PROBE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    check_providers(&config, &secrets, &env, &http, &mut report).await;
    check_channels(home, &config, &secrets, &env, &http, &mut report).await;
    check_mcp(home, &config, &secrets, &mut report).await;
    check_tools(&config, &secrets, &mut report);
    check_media(&config, &mut report);
    check_sandbox(&config, &mut report);
    check_web(&config, &secrets, &mut report);
    match home.workspace_conflict(&config) {
        Some(conflict) => report.fail("workspace", conflict, ""),
        None => check_workspace(&home.workspace(&config), &mut report),
    }
    check_store(home, &mut report).await;
    Ok(report.finish(&scrubber))
}

fn check_home(home: &Home, report: &mut Report) {
    if !home.dir.exists() {
        return; // the config check says what to do
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for (path, want) in [(&home.dir, 0o700), (&home.db_file, 0o600)] {
            let Ok(meta) = std::fs::metadata(path) else {
                continue;
            };
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 == 0 {
                continue;
            }
            let detail = format!("{} is open to others (mode {mode:o})", path.display());
            let fix = format!("chmod {want:o} {}", path.display());
            // The database holds every conversation; the folder only lets others look in.
            if meta.is_dir() {
                report.warn("permissions", detail, fix);
            } else {
                report.fail("permissions", detail, fix);
            }
        }
    }
}

async fn check_providers(
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    http: &reqwest::Client,
    report: &mut Report,
) {
    let used: Vec<&str> = config
        .router
        .light
        .iter()
        .chain(&config.router.heavy)
        .filter_map(|entry| pincer_config::ModelRef::parse(entry).map(|m| m.provider))
        .collect();
    // Providers that answered, with their first model in [router], for the tool check.
    let mut reachable: Vec<(String, String)> = Vec::new();
    for (name, provider) in &config.providers {
        let what = format!("provider {name}");
        if !used.contains(&name.as_str()) {
            report.warn(
                &what,
                "configured but not in router.light or router.heavy",
                "add it to a chain or remove it",
            );
            continue;
        }
        let keys = secrets.provider_keys(name, provider.kind, env);
        let env_var = provider.kind.env_var();
        let key_fix = format!(
            "put the key in .security.yml under providers.{name}.api_key, or set {env_var}"
        );
        let base = provider.base_url().trim_end_matches('/');
        let url = match provider.kind {
            ProviderKind::Openai => format!("{base}/models"),
            ProviderKind::Anthropic => format!("{base}/v1/models"),
        };
        let mut request = http.get(&url);
        if let Some(key) = keys.first() {
            let key = key.expose_secret();
            request = match provider.kind {
                ProviderKind::Openai => request.bearer_auth(key),
                ProviderKind::Anthropic => request
                    .header("x-api-key", key)
                    .header("anthropic-version", "2023-06-01"),
            };
        }
        match request.send().await {
            Err(err) => report.fail(
                &what,
                format!("cannot reach {base}: {}", err.without_url()),
                format!("check providers.{name}.base_url and the network"),
            ),
            Ok(response) => match response.status().as_u16() {
                401 | 403 if keys.is_empty() => report.fail(
                    &what,
                    format!("{base} wants a key and none is set"),
                    key_fix,
                ),
                401 | 403 => report.fail(
                    &what,
                    format!("{base} rejected the key ({})", response.status()),
                    key_fix,
                ),
                code if code < 500 => {
                    report.ok(
                        &what,
                        format!(
                            "{base} answers{}",
                            if keys.is_empty() {
                                " (no key set; fine for a local server)"
                            } else {
                                ", key accepted"
                            }
                        ),
                    );
                    let prefix = format!("{name}/");
                    let mut labels = config.router.light.iter().chain(&config.router.heavy);
                    if let Some(label) = labels.find(|l| l.starts_with(&prefix)) {
                        reachable.push((name.clone(), label.clone()));
                    }
                }
                _ => report.warn(
                    &what,
                    format!("{base} answered {}", response.status()),
                    "the provider may be down; Pincer retries and falls back",
                ),
            },
        }
    }
    tools::check(config, secrets, env, &reachable, report).await;
    if config.router.light.is_empty() && config.router.heavy.is_empty() {
        report.fail(
            "router",
            "no model in router.light or router.heavy",
            "name one, e.g. light = [\"openai/gpt-4.1-mini\"]",
        );
    }
}

async fn check_channels(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    http: &reqwest::Client,
    report: &mut Report,
) {
    if let Err(err) = pincer_config::check_channels(config, secrets, &home.security_file, env) {
        report.fail("channels", err.to_string(), "");
        return;
    }
    let mut enabled = 0;
    for access in config.channels.all() {
        if !access.enabled {
            continue;
        }
        enabled += 1;
        let name = access.name;
        let prefix = format!("{name}:");
        if !config.agent.owners.iter().any(|o| o.starts_with(&prefix)) {
            report.warn(
                name,
                format!("nobody owns {name}: approvals asked there are denied, and the owner cannot use its owner tools or memory from it"),
                format!("approve yourself with `pincer pairing approve {name} <CODE> --owner` (send the bot a DM to get a code), or add \"{name}:<your user id>\" to agent.owners"),
            );
        }
        if access.platform == Platform::Matrix {
            #[cfg(feature = "matrix")]
            matrix::check(home, config, secrets, env, http, report).await;
            continue;
        }
        let Some(token) = secrets.channel_token(access.name, env) else {
            continue; // check_channels said so
        };
        let token = token.expose_secret();
        let api = access.api_url.trim_end_matches('/');
        let request = match access.platform {
            Platform::Telegram => http.get(format!("{api}/bot{token}/getMe")),
            Platform::Discord => http
                .get(format!("{api}/api/v10/users/@me"))
                .header("Authorization", format!("Bot {token}")),
            Platform::Slack => http.post(format!("{api}/auth.test")).bearer_auth(token),
            Platform::Matrix => continue, // checked above
        };
        let env_var = access.platform.token_env();
        let fix = format!(
            "put a valid token in .security.yml under channels.{name}.bot_token, or set {env_var}"
        );
        match probe(request).await {
            Probe::Unreachable(why) => report.fail(
                name,
                format!("cannot reach {api}: {why}"),
                format!("check channels.{name}.api_url and the network"),
            ),
            Probe::Rejected(why) => {
                report.fail(name, format!("the token was rejected ({why})"), fix)
            }
            Probe::Accepted(body) => {
                let bot = body["result"]["username"]
                    .as_str()
                    .or(body["username"].as_str())
                    .or(body["user"].as_str())
                    .unwrap_or("?");
                report.ok(name, format!("logged in as {bot}"));
            }
        }
    }
    if enabled == 0 {
        report.warn(
            "channels",
            "no chat channel is enabled; only `pincer chat` can reach the assistant",
            "enable one, e.g. [channels.telegram] enabled = true",
        );
    }
}

enum Probe {
    Unreachable(String),
    Rejected(String),
    Accepted(serde_json::Value),
}

/// A platform's "who am I" call: Telegram and Slack say `ok: false` in the body.
async fn probe(request: reqwest::RequestBuilder) -> Probe {
    let response = match request.send().await {
        Ok(response) => response,
        Err(err) => return Probe::Unreachable(err.without_url().to_string()),
    };
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    if status.is_success() && body["ok"] != false {
        return Probe::Accepted(body);
    }
    let why = body["description"]
        .as_str()
        .or(body["error"].as_str())
        .or(body["message"].as_str())
        .map_or_else(|| status.to_string(), str::to_string);
    if status.is_server_error() {
        Probe::Unreachable(why)
    } else {
        Probe::Rejected(why)
    }
}

/// Start every MCP server as the gateway does — its secrets, its sandbox, its own
/// folder — and say whether it answered with its tools, or why not (with the likely
/// cause when the sandbox is what stops it).
async fn check_mcp(home: &Home, config: &Config, secrets: &Secrets, report: &mut Report) {
    if config.mcp.servers.is_empty() {
        return;
    }
    let workspace = home.workspace(config);
    let jail = crate::start::jail(home, config, &workspace);
    let servers = match crate::start::mcp_servers(config, secrets, &jail, &workspace) {
        Ok(servers) => servers,
        Err(err) => {
            report.fail("mcp", err.to_string(), "");
            return;
        }
    };
    let manager = crate::mcp::McpManager::start(servers, crate::start::mcp_folders(home));
    manager.ready_for_turn(MCP_WAIT).await;
    for (name, words) in manager.status() {
        let what = format!("mcp {name}");
        if words.starts_with("ready") {
            report.ok(&what, words);
        } else if let Some(failed) = words.strip_prefix("failed: ") {
            let reason = failed
                .rsplit_once(", retrying in")
                .map_or(failed, |(r, _)| r);
            report.fail(
                &what,
                reason.to_string(),
                format!("fix [mcp.servers.{name}] in config.toml (its command, args or url), or its secrets in .security.yml"),
            );
        } else {
            report.warn(
                &what,
                format!("no answer within {}s", MCP_WAIT.as_secs()),
                "check that the server speaks MCP over stdio (or at its url)",
            );
        }
    }
}

/// How long doctor waits for each MCP server's first answer.
const MCP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The web panel: off, or where it listens and whether it has its login token.
fn check_web(config: &Config, secrets: &pincer_config::Secrets, report: &mut Report) {
    if !config.web.enabled {
        report.ok("web panel", "off ([web] enabled = true turns it on)");
        return;
    }
    let has_token = secrets.web.token.is_some();
    match crate::web::check_listen(&config.web.listen, secrets.web.token.as_ref()) {
        Err(why) => report.fail("web panel", why.to_string(), ""),
        Ok(_) if !has_token => report.warn(
            "web panel",
            format!("on {}, no web.token yet", config.web.listen),
            "`pincer run` makes one; or run `pincer web token` now",
        ),
        Ok(_) => report.ok(
            "web panel",
            format!(
                "on http://{}/ (`pincer web url` prints the login link)",
                config.web.listen
            ),
        ),
    }
}

/// Which sandbox commands run in, what it hides, and the MCP servers left out of it.
fn check_sandbox(config: &Config, report: &mut Report) {
    use crate::sandbox::Sandbox;
    let sandbox = Sandbox::detect(config.tools.exec.sandbox);
    match &sandbox {
        Sandbox::Bwrap { .. } | Sandbox::Landlock { .. } => {
            report.ok("sandbox", sandbox.describe())
        }
        Sandbox::Off => report.warn(
            "sandbox",
            sandbox.describe(),
            "set [tools.exec] sandbox = \"auto\" (bubblewrap, else Landlock)",
        ),
        Sandbox::Missing(why) => report.fail("sandbox", why.clone(), ""),
    }
    match (&sandbox, config.tools.exec.network) {
        (Sandbox::Bwrap { .. }, false) => report.ok(
            "sandbox",
            "commands have no network ([tools.exec] network = false), and /run, /var/run and $XDG_RUNTIME_DIR, where the system's UNIX sockets are, are hidden",
        ),
        (Sandbox::Landlock { .. }, false) => report.ok(
            "sandbox",
            "commands have no network ([tools.exec] network = false): TCP refused by Landlock, other internet sockets by seccomp, UNIX sockets outside the workspace by Landlock (Linux 7.1+) or else any new UNIX socket by seccomp",
        ),
        _ => {}
    }
    if sandbox.confines() {
        let limits = &config.tools.exec.limits;
        report.ok(
            "sandbox limits",
            format!(
                "{}; {}",
                crate::sandbox::limits::summary(limits),
                crate::sandbox::cgroup_line()
            ),
        );
    }
    for (name, server) in &config.mcp.servers {
        if server.command.is_some() && !server.sandbox {
            report.warn(
                &format!("mcp {name}"),
                "runs outside the sandbox ([mcp.servers.NAME] sandbox = false): it can read $PINCER_HOME, secrets included",
                format!("remove `sandbox = false` from [mcp.servers.{name}] unless it truly needs more"),
            );
        }
    }
}

fn check_tools(config: &Config, secrets: &Secrets, report: &mut Report) {
    match &config.tools.web_search.backend {
        None => report.warn(
            "web_search",
            "no search backend; the tool answers with an error",
            "set [tools.web_search] backend = \"brave\" (or searxng, tavily)",
        ),
        Some(backend) if backend != "searxng" && secrets.tools.web_search.is_none() => report.fail(
            "web_search",
            format!("{backend} needs an API key and none is set"),
            "put it in .security.yml under tools.web_search.api_key",
        ),
        Some(backend) => report.ok("web_search", format!("{backend} configured")),
    }
}

/// Whether photos reach a model that sees them, and voice notes a transcriber.
fn check_media(config: &Config, report: &mut Report) {
    let caps = crate::capabilities::Capabilities::new(config.models.clone());
    let seeing: Vec<&String> = config
        .router
        .light
        .iter()
        .chain(&config.router.heavy)
        .filter(|label| caps.vision(label))
        .collect();
    match seeing.first() {
        Some(label) => report.ok("vision", format!("photos go to {label}")),
        None => report.warn(
            "vision",
            "no model in [router] sees images; people sending photos are told so",
            "add a vision model to [router] light or heavy (e.g. \"openai/gpt-4.1-mini\"), or set vision = true under [models.\"<provider>/<model>\"] for one that can",
        ),
    }
    let t = &config.transcription;
    match &t.provider {
        Some(provider) => report.ok(
            "transcription",
            format!("voice notes go to providers.{provider} ({}, up to {} min)", t.model, t.max_minutes),
        ),
        None => report.warn(
            "transcription",
            "off: the model hears only that a voice note arrived",
            "set [transcription] provider = \"<a [providers.X] serving /audio/transcriptions>\" (OpenAI, Groq, a local whisper server) and model = \"whisper-1\"",
        ),
    }
    check_voice(&config.voice, report);
}

/// `[voice]`: whether replies are spoken, and by whom.
fn check_voice(v: &pincer_config::VoiceConfig, report: &mut Report) {
    let which = match v.reply {
        pincer_config::VoiceReply::Never => "no reply",
        pincer_config::VoiceReply::ToVoice => "answers to voice notes",
        pincer_config::VoiceReply::Always => "every chat reply",
    };
    match (&v.provider, v.command.first()) {
        _ if v.reply == pincer_config::VoiceReply::Never => report.ok("voice", "off: [voice] reply = \"never\""),
        (Some(provider), _) => report.ok(
            "voice",
            format!("{which} spoken by providers.{provider} ({}, voice {}, up to {} characters)", v.model, v.voice, v.max_chars),
        ),
        (None, Some(program)) => {
            let found = std::env::var_os("PATH").is_some_and(|path| {
                std::path::Path::new(program).is_file()
                    || std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
            });
            if found {
                report.ok("voice", format!("{which} spoken by the program {program}"))
            } else {
                report.warn(
                    "voice",
                    format!("[voice] command names {program}, which is not installed or not on PATH"),
                    format!("install {program} (e.g. apt-get install espeak-ng) or fix [voice] command"),
                )
            }
        }
        (None, None) => report.warn(
            "voice",
            "off: replies are never spoken",
            "set [voice] provider = \"<a [providers.X] serving /audio/speech>\" (OpenAI, a local TTS server), or [voice] command = [\"espeak-ng\", \"-w\", \"{out}\", \"--stdin\"]",
        ),
    }
}

fn check_workspace(workspace: &Path, report: &mut Report) {
    let probe = workspace.join(".pincer-doctor");
    let written = std::fs::create_dir_all(workspace)
        .and_then(|()| std::fs::write(&probe, b"ok"))
        .and_then(|()| std::fs::remove_file(&probe));
    match written {
        Ok(()) => report.ok("workspace", format!("{} is writable", workspace.display())),
        Err(err) => report.fail(
            "workspace",
            format!("cannot write in {}: {err}", workspace.display()),
            "fix its permissions or free some disk, or point agent.workspace elsewhere",
        ),
    }
}

async fn check_store(home: &Home, report: &mut Report) {
    if home.db_file.exists() {
        match Store::open(&home.db_file) {
            Ok(_) => report.ok("database", format!("{} opens", home.db_file.display())),
            Err(err) => report.fail(
                "database",
                format!("{}: {err}", home.db_file.display()),
                "restore it from a backup, or move it away to start afresh",
            ),
        }
    }
    let running = home.gateway_running();
    if running {
        report.ok("gateway", "running");
    } else {
        report.ok("gateway", "not running (start it with `pincer run`)");
    }
}
