//! The whole gateway, in order: every enabled channel listening, the core, replies
//! delivered through the channel manager (the web panel's chat taken off first), the
//! approvers, channel health for `pincer status`, the scheduler and heartbeat, the web
//! panel, the nightly dream, retention, and what the last run left unanswered; systemd
//! told it is ready (and its watchdog fed) when it asks; then, when `stop` resolves,
//! the shutdown in the order that lets running turns finish and
//! every reply go out. `pincer run` is this behind the lock and the signals; tests run
//! it in-process against the fakes.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use pincer_channels::approval::PendingApprovals;
use pincer_channels::{Registry, Target};
use pincer_config::{Config, Secrets};
use tokio_util::sync::CancellationToken;

use super::notify::{self, Notifier};
use super::watchdog::{self, Listening};
use crate::cron::{Heartbeat, Schedule, Scheduler, SystemClock};
use crate::home::Home;
use crate::memory::DreamSchedule;
use crate::tools::approval::Approvers;

/// How often channel health is written for `pincer status`.
const HEALTH_EVERY: Duration = Duration::from_secs(5);

/// Why the gateway could not start; each says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(transparent)]
    Config(Box<pincer_config::ConfigError>),
    #[error(transparent)]
    Start(#[from] crate::start::StartError),
    #[error(transparent)]
    Web(#[from] crate::web::token::ListenError),
    #[error(transparent)]
    Dream(#[from] crate::memory::schedule::BadDreamSchedule),
    #[error("{0}")]
    Setup(String),
}

impl From<pincer_config::ConfigError> for GatewayError {
    fn from(err: pincer_config::ConfigError) -> Self {
        GatewayError::Config(Box::new(err))
    }
}

/// How a gateway run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The chat channels that ran.
    pub channels: Vec<String>,
}

/// Put back what a dream that died part-way left in the memory files, before any turn
/// reads them (the next dream would too, but turns until then would see half a dream).
async fn recover_memory(agent: &Arc<crate::agent::Agent>) {
    let memory = agent.memory().clone();
    match tokio::task::spawn_blocking(move || memory.recover()).await {
        Ok(Ok(undone)) if undone.is_empty() => {}
        Ok(Ok(undone)) => tracing::warn!(
            files = ?undone,
            "an unfinished dream was rolled back"
        ),
        Ok(Err(err)) => {
            tracing::warn!("the memory could not be checked for an unfinished dream: {err}")
        }
        Err(err) => tracing::warn!("the memory check stopped: {err}"),
    }
}

/// Run the gateway for `home` until `stop` resolves, then shut it down cleanly. The
/// caller holds the home's lock (`Home::lock_gateway`).
pub async fn run(
    home: &Home,
    config: &Config,
    mut secrets: Secrets,
    env: &[(String, String)],
    stop: impl Future<Output = ()>,
) -> Result<Stopped, GatewayError> {
    let web = bind_web(home, config, &mut secrets).await?;
    let secrets = &secrets;
    pincer_config::check_channels(config, secrets, &home.security_file, env)?;
    let approvals = Arc::new(PendingApprovals::default());
    let registry = Arc::new(
        super::channels::build(home, config, secrets, env, &approvals)
            .map_err(|e| GatewayError::Setup(format!("{e:#}")))?,
    );
    if registry.is_empty() {
        tracing::warn!(
            "no chat channel is enabled, so nobody can reach the assistant through the gateway yet; enable one in {} (e.g. [channels.telegram] enabled = true, token in {}), or talk to it now with `pincer chat`",
            home.config_file.display(),
            home.security_file.display()
        );
    }
    for name in registry.names() {
        let prefix = format!("{name}:");
        if !config.agent.owners.iter().any(|o| o.starts_with(&prefix)) {
            tracing::warn!(
                channel = name,
                "nobody owns {name}: everyone there is a member or guest, and approvals asked there are denied; DM the bot for a pairing code and run `pincer pairing approve {name} <CODE> --owner`"
            );
        }
    }
    // The nightly dream, in agent.timezone (a bad zone is reported by `start`).
    let dream = DreamSchedule::new(
        &config.memory.dream_schedule,
        config
            .agent
            .timezone
            .parse()
            .unwrap_or(pincer_core::tz::Tz::UTC),
        config.memory.dream_max_tokens,
        Arc::new(SystemClock),
    )?;
    let heartbeat = heartbeat(home, config)?;
    let shutdown = CancellationToken::new();
    let approvers = approvers(config, &registry, &approvals);
    let running =
        crate::start::start_with(home, config, secrets, env, approvers, shutdown.clone())?;
    running.dispatcher.answer_questions(Arc::clone(&approvals));
    recover_memory(&running.agent).await;
    let left = running.dispatcher.left_unanswered().await;
    let mut listeners = Vec::new();
    let mut listening = Vec::new();
    for handle in registry.handles() {
        let (channel, inbound, shutdown) = (
            Arc::clone(&handle.channel),
            running.inbound.clone(),
            shutdown.clone(),
        );
        let watched = Listening::new(handle.name());
        let ended = watched.guard();
        listening.push(watched);
        listeners.push(tokio::spawn(async move {
            let _ended = ended;
            if let Err(err) = channel.listen(inbound, shutdown).await {
                tracing::error!(channel = channel.name(), "stopped listening: {err}");
            }
        }));
    }
    // With the panel on, its chat's replies are taken off the outbound bus first.
    let web_chat = Arc::new(crate::web::WebChat::default());
    let outbound = match &web {
        Some(_) => {
            let (to_channels, outbound) =
                tokio::sync::mpsc::channel(crate::start::OUTBOUND_CAPACITY);
            tokio::spawn(crate::web::tee(
                running.outbound,
                Arc::clone(&web_chat),
                to_channels,
            ));
            outbound
        }
        None => running.outbound,
    };
    // What a person on a chat platform is to see is booked in the outbox before it
    // goes; the store hears when the platform has it. What the last run left unsent
    // goes first, before anything new.
    running.agent.outbox().keep_for(registry.names());
    let ledger: Arc<dyn pincer_channels::Ledger> = Arc::new(running.agent.store().clone());
    let delivery = tokio::spawn(pincer_channels::manager::run(
        Arc::clone(&registry),
        outbound,
        Some(ledger),
    ));
    let resent = running.agent.outbox().send_left_unsent().await;
    if resent > 0 {
        tracing::info!(resent, "sent what the last run left unsent");
    }
    if let Err(err) = running.agent.store().prune_outbox().await {
        tracing::warn!("old outbox entries not pruned: {err}");
    }
    tokio::spawn(super::settle::after_start(
        Arc::clone(&registry),
        shutdown.clone(),
    ));
    let health = tokio::spawn(record_health(
        Arc::clone(&registry),
        Arc::clone(&running.agent),
        shutdown.clone(),
    ));
    let scheduler = Arc::new(Scheduler {
        store: running.agent.store().clone(),
        bus: running.inbound.clone(),
        outbound: running.say.clone(),
        clock: Arc::new(SystemClock),
        grace: Duration::from_secs(config.cron.grace_secs),
        wake: Arc::clone(&running.wake),
        heartbeat,
    });
    let scheduling = tokio::spawn(Arc::clone(&scheduler).run(shutdown.clone()));
    let panel = web.map(|(listener, token)| {
        let state = Arc::new(crate::web::WebState {
            home: home.clone(),
            config: Arc::new(config.clone()),
            agent: Arc::clone(&running.agent),
            registry: Arc::clone(&registry),
            inbound: running.inbound.clone(),
            scheduler: Some(Arc::clone(&scheduler)),
            wake: Arc::clone(&running.wake),
            chat: Arc::clone(&web_chat),
            token,
            metrics_token: secrets.web.metrics_token.clone(),
            sessions: Default::default(),
            started: std::time::Instant::now(),
        });
        tokio::spawn(crate::web::serve(listener, state, shutdown.clone()))
    });
    let dreaming = tokio::spawn(dream.run(Arc::clone(&running.agent), shutdown.clone()));
    let retention = tokio::spawn(crate::retention::run(
        home.workspace(config),
        config.workspace.retention_days,
        shutdown.clone(),
    ));
    // What the panel's chat left unanswered is answered too (the reply is stored, and
    // the chat page shows it), when the panel runs.
    let mut recovered = registry.names();
    if panel.is_some() {
        recovered.push(crate::web::CHANNEL);
    }
    running.dispatcher.recover(left, &recovered).await;
    // Tasks do not survive a restart: the background ones the last run left are
    // reported interrupted, once.
    running.agent.tasks().report_interrupted().await;
    tracing::info!(home = %home.dir.display(), channels = ?registry.names(), "pincer gateway running; stop it with Ctrl-C or SIGTERM");
    let notifier = Notifier::from_env(env).map(Arc::new);
    let watchdog = notifier.as_ref().and_then(|notifier| {
        notifier.send(&format!(
            "READY=1\n{}",
            notify::status(&watchdog::summary(&registry))
        ));
        let every = notify::watchdog_every(env)?;
        let parts = watchdog::Parts {
            dispatcher: Arc::clone(&running.dispatcher),
            store: running.agent.store().clone(),
            registry: Arc::clone(&registry),
            listeners: listening,
        };
        Some(tokio::spawn(watchdog::run(
            Arc::clone(notifier),
            every,
            parts,
        )))
    });

    stop.await;
    tracing::info!("shutting down: letting replies in progress finish");
    if let Some(watchdog) = watchdog {
        watchdog.abort();
        let _ = watchdog.await; // cancelled: no WATCHDOG=1 follows STOPPING=1
    }
    if let Some(notifier) = &notifier {
        notifier.send("STOPPING=1\nSTATUS=stopping: letting replies in progress finish");
    }
    shutdown.cancel();
    for listener in listeners {
        let _ = listener.await;
    }
    let _ = scheduling.await;
    // The scheduler and the panel hold the outbound bus; it closes only once both are gone.
    drop(scheduler);
    if let Some(panel) = panel {
        // It ends its open connections itself, a couple of seconds after the signal.
        let _ = panel.await;
    }
    let _ = dreaming.await;
    let _ = retention.await;
    let _ = running.task.await;
    // The agent, the dispatcher and `say` hold the outbound bus; once they are gone the
    // manager drains and ends.
    let store = running.agent.store().clone();
    let servers: Vec<String> = running
        .agent
        .tools()
        .mcp_status()
        .into_iter()
        .map(|(name, _)| format!("mcp:{name}"))
        .collect();
    drop(running.agent);
    drop(running.dispatcher);
    drop(running.say);
    let _ = delivery.await;
    let _ = health.await;
    for name in registry
        .names()
        .into_iter()
        .map(str::to_string)
        .chain(servers)
    {
        let _ = store.set_health(&name, "stopped", None).await;
    }
    tracing::info!("stopped");
    Ok(Stopped {
        channels: registry.names().into_iter().map(str::to_string).collect(),
    })
}

/// The panel's listener and login token when `[web] enabled`. A loopback panel without
/// a token gets one (written to .security.yml); any other address without one refuses
/// to start.
async fn bind_web(
    home: &Home,
    config: &Config,
    secrets: &mut Secrets,
) -> Result<Option<(tokio::net::TcpListener, secrecy::SecretString)>, GatewayError> {
    if !config.web.enabled {
        return Ok(None);
    }
    let addr = crate::web::check_listen(&config.web.listen, secrets.web.token.as_ref())?;
    let token = match secrets.web.token.clone() {
        Some(token) => token,
        None => {
            let token = crate::web::token::rotate(&home.security_file)
                .map_err(|e| GatewayError::Setup(format!("{e:#}")))?;
            tracing::info!(
                "made a web.token for the panel in {}; `pincer web url` prints the login link",
                home.security_file.display()
            );
            secrets.web.token = Some(token.clone());
            token
        }
    };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        GatewayError::Setup(format!(
            "the web panel cannot listen on {addr}: {e}; set another address in [web] listen in {}, or stop what uses it",
            home.config_file.display()
        ))
    })?;
    tracing::info!(listen = %addr, "web panel on http://{addr}/ (log in with the link from `pincer web url`)");
    Ok(Some((listener, token)))
}

/// Every channel that can show buttons asks its owner to approve "ask" calls.
fn approvers(config: &Config, registry: &Registry, approvals: &Arc<PendingApprovals>) -> Approvers {
    let wait = Duration::from_secs(config.tools.permissions.approval_timeout_secs);
    let mut approvers = Approvers::default();
    for handle in registry.handles() {
        if let Some(prompter) = &handle.approvals {
            let approver = crate::tools::approval::ChatApprover {
                channel: handle.name().to_string(),
                prompter: Arc::clone(prompter),
                handle: handle.clone(),
                pending: Arc::clone(approvals),
                owners: crate::access::owners_of(&config.agent.owners, handle.name()),
                wait,
            };
            approvers.register(handle.name(), Arc::new(approver));
        }
    }
    approvers
}

/// The heartbeat, when `heartbeat.enabled`: it reports to the first owner's chat.
fn heartbeat(home: &Home, config: &Config) -> Result<Option<Heartbeat>, GatewayError> {
    if !config.heartbeat.enabled {
        return Ok(None);
    }
    let Schedule::Every { secs } = Schedule::every(&config.heartbeat.every)
        .map_err(|e| GatewayError::Setup(format!("heartbeat.every: {e}")))?
    else {
        return Ok(None);
    };
    let Some(target) = config.agent.owners.iter().find_map(|o| Target::user(o)) else {
        return Err(GatewayError::Setup(
            "heartbeat.enabled needs somewhere to report: name your chat in agent.owners, e.g. owners = [\"telegram:123456789\"]".into(),
        ));
    };
    let timezone = config
        .agent
        .timezone
        .parse()
        .unwrap_or(pincer_core::tz::Tz::UTC);
    Ok(Some(Heartbeat::new(
        Duration::from_secs(secs),
        home.workspace(config),
        target,
        config.heartbeat.max_day_tokens,
        timezone,
    )))
}

/// Write each channel's health, and when it last heard from its platform, to the store
/// every few seconds (its time says the gateway is alive).
async fn record_health(
    registry: Arc<Registry>,
    agent: Arc<crate::agent::Agent>,
    shutdown: CancellationToken,
) {
    let store = agent.store().clone();
    loop {
        let channels = registry.handles().map(|h| {
            let heard = h.liveness().and_then(|l| l.last_event_ms);
            (h.name().to_string(), h.health().to_string(), heard)
        });
        let servers = agent
            .mcp_status()
            .into_iter()
            .map(|(name, state)| (format!("mcp:{name}"), state, None));
        for (name, state, heard) in channels.chain(servers).collect::<Vec<_>>() {
            if let Err(err) = store.set_health(&name, &state, heard).await {
                tracing::warn!("cannot record health: {err}");
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(HEALTH_EVERY) => {}
        }
    }
}
