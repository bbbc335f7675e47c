//! Assembling the core from configuration. `start` builds it — the store, the model
//! chains, the agent, the bus and the dispatcher — which tests drive in-process and
//! `pincer chat`, the stdio hosts and the gateway (`pincer::gateway::run`) sit on.
//!
//! - `windows` — context windows learned from the model servers at start-up

mod windows;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use pincer_channels::{Inbound, OutboundMessage};
use pincer_config::{Config, Secrets};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::access::Gate;
use crate::agent::{Agent, AgentBuilder, Limits};
use crate::cron::{CronTool, SystemClock};
use crate::dispatch::Dispatcher;
use crate::home::Home;
use crate::mcp::{McpManager, McpServerConfig};
use crate::memory::tool as memory;
use crate::models::{Models, ModelsError};
use crate::prices::Prices;
use crate::provider::Provider;
use crate::scrub::Scrubber;
use crate::store::{Store, StoreError};
use crate::tools::approval::Approvers;
use crate::tools::exec::ExecTool;
use crate::tools::web::{FetchPolicy, SearchSettings, WebFetch, WebSearch};
use crate::tools::{Guard, Permissions, Registry, SendMessage};

/// Messages waiting between the adapters and the dispatcher.
pub const INBOUND_CAPACITY: usize = 256;
/// Replies and deltas waiting for their channel.
pub const OUTBOUND_CAPACITY: usize = 1024;
/// How long running turns may finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Models(#[from] ModelsError),
    #[error(transparent)]
    Http(#[from] crate::provider::ProviderError),
    #[error(
        "agent.timezone = \"{0}\" is not a time zone; use an IANA name such as \"Europe/Paris\" or \"UTC\""
    )]
    Timezone(String),
    #[error("{0}")]
    Permissions(String),
    #[error(transparent)]
    Rule(#[from] crate::tools::RuleError),
    #[error(transparent)]
    ToolPattern(#[from] crate::tools::ToolPatternError),
    #[error(
        "[mcp.servers.{server}] cwd = \"{cwd}\" is inside the workspace, where any command may plant a program for the server to run; remove the key (the server then gets $PINCER_HOME/mcp/{server}) or name a folder outside the workspace"
    )]
    McpInWorkspace { server: String, cwd: String },
    #[error("{0}")]
    WorkspaceConflict(String),
    #[error("cannot create the workspace {path}: {source}")]
    Workspace {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// What a program embedding the core hands it besides configuration.
#[derive(Default)]
pub struct Wiring {
    /// Who answers "ask" calls, by channel.
    pub approvers: Approvers,
    /// Providers that stand in for the configured `[providers.NAME]` of the same name
    /// (the throughput bench's in-process model); the config must still name them.
    pub providers: BTreeMap<String, Arc<dyn Provider>>,
    /// MCP servers the embedding program brings besides `[mcp.servers.*]`: an SDK's
    /// in-process ones, reached through its protocol.
    pub mcp: Vec<McpServerConfig>,
}

/// A running core.
pub struct Running {
    /// Where channels push what people say.
    pub inbound: mpsc::Sender<Inbound>,
    /// What the core wants said, for the channel side to deliver.
    pub outbound: mpsc::Receiver<OutboundMessage>,
    /// The sending side of `outbound`, for what else speaks (the scheduler's reports).
    pub say: mpsc::Sender<OutboundMessage>,
    pub dispatcher: Arc<Dispatcher>,
    pub agent: Arc<Agent>,
    /// Ends once `shutdown` fired and the turns in flight finished or checkpointed.
    pub task: JoinHandle<()>,
    /// Wakes the scheduler when the `cron` tool changed a job.
    pub wake: Arc<Notify>,
}

/// Build the agent from configuration, with what `wiring` adds: the approvers that
/// answer "ask" calls, providers that stand in for configured ones.
pub fn build_agent(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    outbound: mpsc::Sender<OutboundMessage>,
    wake: Arc<Notify>,
    wiring: Wiring,
) -> Result<Agent, StartError> {
    let Wiring {
        approvers,
        providers,
        mcp: brought,
    } = wiring;
    let timezone = config
        .agent
        .timezone
        .parse::<crate::tz::Tz>()
        .map_err(|_| StartError::Timezone(config.agent.timezone.clone()))?;
    if let Some(conflict) = home.workspace_conflict(config) {
        return Err(StartError::WorkspaceConflict(conflict));
    }
    let workspace = home.workspace(config);
    std::fs::create_dir_all(&workspace).map_err(|source| StartError::Workspace {
        path: workspace.clone(),
        source,
    })?;
    let store = Store::open(&home.db_file)?.with_observer(Arc::new(crate::metrics::Recorder));
    let owner_memory = pincer_memory::Memory::new(&workspace, home.state_dir());
    if let pincer_config::DenyGroups::Some(names) = &config.tools.exec.deny_groups {
        let known: Vec<&str> = crate::tools::exec::GROUPS
            .iter()
            .map(|(name, _)| *name)
            .collect();
        if let Some(unknown) = names.iter().find(|n| !known.contains(&n.as_str())) {
            return Err(StartError::Permissions(format!(
                "tools.exec.deny_groups names `{unknown}`, which is not a group; the groups are: {}",
                known.join(", ")
            )));
        }
    }
    let permissions = &config.tools.permissions;
    let permissions = Permissions::new(&permissions.allow, &permissions.ask, &permissions.deny)?;
    let tool_policy = crate::tools::ToolPolicy::new(&config.access)?;
    let jail = jail(home, config, &workspace);
    let scrubber = Arc::new(Scrubber::new(secret_values(config, secrets, env)));
    crate::scrub::install(Arc::clone(&scrubber));
    let tasks = crate::tasks::Tasks::new(config.agent.task_max_iterations);
    let modes = Arc::new(crate::tools::mode::Modes::default());
    let loaded = Arc::new(crate::tools::deferred::Loaded::default());
    let builtins = Arc::new(std::sync::OnceLock::new());
    // A server's question during a call goes to the owner the way an "ask" does.
    let mut servers = mcp_servers(config, secrets, &jail, &workspace)?;
    servers.extend(brought);
    let mcp = McpManager::start_asking(servers, mcp_folders(home), approvers.clone());
    // What tools send to chats passes the scrubber like every reply.
    let outbox = crate::outbox::Outbox::new(outbound.clone(), Arc::clone(&scrubber), store.clone());
    let browser_allow =
        crate::tools::browser::AllowList::parse(&config.tools.browser.allow_private)
            .map_err(|err| StartError::Permissions(err.to_string()))?;
    let browser = crate::tools::browser::BrowserTool::new(crate::tools::browser::Settings {
        executable: config.tools.browser.executable.clone(),
        profile: home.state_dir().join("browser"),
        idle: std::time::Duration::from_secs(config.tools.browser.idle_s),
        allow: browser_allow,
        lookup: None,
        downloads: home.state_dir().join("browser").join("downloads"),
    });
    let tools = Registry::with(vec![
        Arc::new(CronTool {
            store: store.clone(),
            wake,
            timezone,
            clock: Arc::new(SystemClock),
            owners: config.agent.owners.clone(),
        }),
        SendMessage::new(outbox.clone(), &config.agent.owners),
        crate::tools::SendFile::new(outbox.clone()),
        crate::tools::question::Question::new(outbox.clone()),
        crate::tasks::TaskTool::new(Arc::clone(&tasks)),
        Arc::new(crate::tools::mode::ExitPlanMode {
            modes: Arc::clone(&modes),
        }),
        Arc::new(crate::tools::mode::EnterPlanMode {
            modes: Arc::clone(&modes),
        }),
        Arc::new(crate::tools::deferred::ToolSearch {
            mcp: Arc::clone(&mcp),
            loaded: Arc::clone(&loaded),
            builtins: Arc::clone(&builtins),
        }),
        Arc::new(
            ExecTool::new(|group| config.tools.exec.deny_groups.denies(group))
                .in_jail(jail.clone()),
        ),
        Arc::new(WebFetch::new(FetchPolicy::default())),
        browser,
        Arc::new(WebSearch::new(SearchSettings {
            backend: config.tools.web_search.backend.clone(),
            url: config.tools.web_search.url.clone(),
            api_key: secrets.tools.web_search.as_ref().map(|s| s.api_key.clone()),
            base_url_override: None,
        })),
        crate::tools::conversations::ConversationSearch::new(
            store.clone(),
            &config.agent.owners,
            timezone,
        ),
        memory::tool(memory::Action::Write, &owner_memory, timezone),
        memory::tool(memory::Action::Search, &owner_memory, timezone),
        memory::tool(memory::Action::Read, &owner_memory, timezone),
        memory::tool(memory::Action::Forget, &owner_memory, timezone),
    ])
    .with_mcp(Arc::clone(&mcp))
    .with_always(config.agent.always_tools.clone());
    let _ = builtins.set(
        tools
            .specs()
            .iter()
            .map(|spec| (spec.clone(), tools.effects_of(&spec.name)))
            .collect(),
    );
    for (key, list) in [
        ("small_window_tools", &config.agent.small_window_tools),
        ("always_tools", &config.agent.always_tools),
    ] {
        if let Some(unknown) = list
            .iter()
            .find(|name| !tools.specs().iter().any(|spec| &spec.name == *name))
        {
            let names: Vec<&str> = tools.specs().iter().map(|s| s.name.as_str()).collect();
            return Err(StartError::Permissions(format!(
                "agent.{key} names `{unknown}`, which is not a built-in tool; the built-ins are: {}",
                names.join(", ")
            )));
        }
    }
    let guard = Guard {
        permissions,
        scrubber,
        approvers,
        grants: Some(store.clone()),
        hooks: crate::tools::hooks::Hooks::new(&config.tools.hooks).in_jail(jail),
        after_untrusted: config.tools.after_untrusted,
    };
    let media = crate::media::Media {
        workspace: workspace.clone(),
        kept: home.state_dir().join("inbox"),
        transcriber: crate::media::voice::Transcriber::from_config(
            config,
            secrets,
            env,
            crate::provider::http_client()?,
        ),
        speaker: crate::media::speech::Speaker::from_config(
            config,
            secrets,
            env,
            crate::provider::http_client()?,
        ),
    };
    let ack_reactions = config
        .channels
        .all()
        .iter()
        .filter_map(|a| Some((a.name.to_string(), a.ack_reaction?.to_string())))
        .collect();
    let models = Models::from_config(config, secrets, env, Arc::new(crate::metrics::Recorder))?
        .replacing(providers)?;
    Ok(
        AgentBuilder::new(store, models, outbound, owner_memory, timezone)
            .tools(tools)
            .guard(guard)
            .prices(Prices::new(config.prices.clone()))
            .limits(Limits::from_config(config))
            .dream_max_tokens(config.memory.dream_max_tokens)
            .access(tool_policy, config.access.clone())
            .owners(config.agent.owners.clone())
            .media(media)
            .ack_reactions(ack_reactions)
            .outbox(outbox)
            .shared(tasks, modes, loaded)
            .build(),
    )
}

/// Start the core: the dispatcher serves the bus until `shutdown` fires. Nobody
/// answers "ask" calls (`start_with` wires the approvers).
pub fn start(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    shutdown: CancellationToken,
) -> Result<Running, StartError> {
    start_with(home, config, secrets, env, Approvers::default(), shutdown)
}

/// Start the core with `approvers` answering "ask" calls in their channels.
pub fn start_with(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    approvers: Approvers,
    shutdown: CancellationToken,
) -> Result<Running, StartError> {
    let wiring = Wiring {
        approvers,
        ..Wiring::default()
    };
    start_wired(home, config, secrets, env, wiring, shutdown)
}

/// Start the core with what `wiring` adds to the configuration.
pub fn start_wired(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    wiring: Wiring,
    shutdown: CancellationToken,
) -> Result<Running, StartError> {
    crate::metrics::install();
    let (outbound_tx, outbound) = mpsc::channel(OUTBOUND_CAPACITY);
    let wake = Arc::new(Notify::new());
    let agent = Arc::new(build_agent(
        home,
        config,
        secrets,
        env,
        outbound_tx.clone(),
        Arc::clone(&wake),
        wiring,
    )?);
    // The task tool runs child turns on this agent.
    agent.tasks().attach(&agent);
    windows::learn(&agent, config, secrets, env);
    let (inbound, inbound_rx) = mpsc::channel(INBOUND_CAPACITY);
    let dispatcher = Dispatcher::new(
        Arc::clone(&agent),
        Gate::new(
            config,
            agent.store().clone(),
            home.state_dir().join("inbox"),
        ),
        outbound_tx.clone(),
        config.agent.queue_mode,
        Duration::from_secs(config.agent.idle_session_secs),
    );
    let task = tokio::spawn(Arc::clone(&dispatcher).run(inbound_rx, shutdown, SHUTDOWN_GRACE));
    Ok(Running {
        inbound,
        outbound,
        say: outbound_tx,
        dispatcher,
        agent,
        task,
        wake,
    })
}

/// Every secret value loaded at start, for the scrubber.
pub fn secret_values(config: &Config, secrets: &Secrets, env: &[(String, String)]) -> Vec<String> {
    use secrecy::ExposeSecret;
    let mut values: Vec<String> = Vec::new();
    for (name, provider) in &config.providers {
        values.extend(
            secrets
                .provider_keys(name, provider.kind, env)
                .iter()
                .map(|k| k.expose_secret().to_string()),
        );
    }
    for platform in pincer_config::Platform::ALL {
        values.extend(
            secrets
                .channel_token(platform.name(), env)
                .map(|t| t.expose_secret().to_string()),
        );
    }
    for key in ["password", "recovery_key", "store_passphrase"] {
        values.extend(
            secrets
                .matrix_secret(key, env)
                .map(|t| t.expose_secret().to_string()),
        );
    }
    values.extend(
        secrets
            .slack_app_token(env)
            .map(|t| t.expose_secret().to_string()),
    );
    values.extend(
        secrets
            .slack_signing_secret(env)
            .map(|t| t.expose_secret().to_string()),
    );
    if let Some(search) = &secrets.tools.web_search {
        values.push(search.api_key.expose_secret().to_string());
    }
    // The web panel's login and metrics tokens.
    for token in [&secrets.web.token, &secrets.web.metrics_token]
        .into_iter()
        .flatten()
    {
        values.push(token.expose_secret().to_string());
    }
    for server in secrets.mcp.values() {
        values.extend(server.env.values().map(|v| v.expose_secret().to_string()));
        // `Bearer ghp_…` also leaks as `ghp_…` alone.
        values.extend(
            server
                .headers
                .values()
                .flat_map(|v| crate::scrub::header_forms(v.expose_secret())),
        );
    }
    values
}

/// The sandbox every command, hook and stdio MCP server of this home runs in.
pub fn jail(home: &Home, config: &Config, workspace: &std::path::Path) -> crate::sandbox::Jail {
    crate::sandbox::Jail::new(
        config.tools.exec.sandbox,
        crate::sandbox::confinement(
            &home.dir,
            workspace,
            config.tools.exec.network,
            config.tools.exec.limits,
        ),
    )
}

/// Where each stdio MCP server gets a folder of its own to start in.
pub fn mcp_folders(home: &Home) -> std::path::PathBuf {
    home.dir.join("mcp")
}

/// `[mcp.servers.*]` with their secrets from `.security.yml` and their sandbox, as the
/// gateway starts them.
pub fn mcp_servers(
    config: &Config,
    secrets: &Secrets,
    jail: &crate::sandbox::Jail,
    workspace: &std::path::Path,
) -> Result<Vec<McpServerConfig>, StartError> {
    use secrecy::ExposeSecret;
    let canonical = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let workspace = canonical(workspace);
    config
        .mcp
        .servers
        .iter()
        .map(|(name, server)| {
            let cwd = server.cwd.as_deref().map(|dir| {
                pincer_config::expand_tilde(
                    std::path::Path::new(dir),
                    crate::home::user_home().as_deref(),
                )
            });
            if let Some(dir) = &cwd
                && canonical(dir).starts_with(&workspace)
            {
                return Err(StartError::McpInWorkspace {
                    server: name.clone(),
                    cwd: dir.display().to_string(),
                });
            }
            let secret = secrets.mcp.get(name);
            let pairs = |map: Option<
                &std::collections::BTreeMap<String, secrecy::SecretString>,
            >|
             -> Vec<(String, String)> {
                map.map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.expose_secret().to_string()))
                        .collect()
                })
                .unwrap_or_default()
            };
            Ok(McpServerConfig {
                name: name.clone(),
                command: server.command.clone(),
                args: server.args.clone(),
                url: server.url.clone(),
                env: pairs(secret.map(|s| &s.env)),
                headers: pairs(secret.map(|s| &s.headers)),
                // MCP servers need the network whatever [tools.exec] network says.
                jail: server.sandbox.then(|| jail.with_network(true)),
                cwd,
                trusted: server.trusted,
                host: None,
            })
        })
        .collect()
}
