//! `pincer cron list | add | remove | run | enable`: scheduled jobs from the command
//! line. Works while the gateway runs (it re-reads the job table at least once a
//! minute). `run` runs a job now in this process and delivers its result like the
//! gateway would (and prints it).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use pincer_channels::OutboundBody;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ensure_home, env_vars, load};
use crate::cron::{JobRequest, Maker, Scheduler, SystemClock, create, describe};
use crate::home::Home;
use crate::store::{Store, now_ms};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Every job: schedule, where results go, next run, last result
    List,
    /// Schedule a prompt (exactly one of --cron, --every, --at)
    Add(AddArgs),
    /// Delete a job
    Remove {
        #[arg(value_name = "ID|NAME")]
        job: String,
    },
    /// Run a job now, here, and deliver its result
    Run {
        #[arg(value_name = "ID|NAME")]
        job: String,
    },
    /// Re-enable a job disabled after repeated failures
    Enable {
        #[arg(value_name = "ID|NAME")]
        job: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    #[arg(long)]
    pub name: String,
    /// Standard 5-field cron expression, e.g. "30 8 * * 1-5"
    #[arg(long, value_name = "EXPR")]
    pub cron: Option<String>,
    /// Interval, e.g. 30m, 2h, 1d
    #[arg(long)]
    pub every: Option<String>,
    /// One-shot local time, e.g. 2026-11-23T09:00
    #[arg(long)]
    pub at: Option<String>,
    /// IANA time zone (default: agent.timezone)
    #[arg(long)]
    pub tz: Option<String>,
    /// What the assistant should do when the job runs
    #[arg(long)]
    pub prompt: String,
    /// Where results go, <channel>:<chat> (default: the first of agent.owners)
    #[arg(long, value_name = "CHANNEL:CHAT")]
    pub deliver: Option<String>,
    /// Run every time in this named shared session instead of a fresh one
    #[arg(long)]
    pub session: Option<String>,
}

pub(super) async fn run(home: &Home, command: Command) -> anyhow::Result<ExitCode> {
    let (config, secrets) = load(home)?;
    ensure_home(home)?;
    let store = Store::open(&home.db_file)?;
    let timezone: pincer_core::tz::Tz = config.agent.timezone.parse().map_err(|_| {
        anyhow::anyhow!(
            "agent.timezone = \"{}\" is not a time zone; use an IANA name such as Europe/Paris",
            config.agent.timezone
        )
    })?;
    let find = |name: String| {
        let store = store.clone();
        async move {
            store
                .job(&name)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no job `{name}`; `pincer cron list` shows them"))
        }
    };
    match command {
        Command::List => {
            let jobs = store.jobs().await?;
            if jobs.is_empty() {
                println!(
                    "No scheduled jobs. Add one with `pincer cron add --name NAME --cron \"30 8 * * 1-5\" --prompt TEXT`."
                );
            }
            for job in jobs {
                println!("{}", describe(&job));
            }
        }
        Command::Add(args) => {
            let owners = &config.agent.owners;
            let request = JobRequest {
                name: args.name,
                cron: args.cron,
                every: args.every,
                at: args.at,
                tz: args.tz,
                prompt: args.prompt,
                // Without --deliver, results go to the first owner's direct chat.
                deliver: args.deliver.or_else(|| owners.first().cloned()),
                session: args.session,
            };
            let maker = Maker::cli(owners);
            let job = create(&store, request, timezone, &maker, crate::clock::utc())
                .await
                .map_err(anyhow::Error::msg)?;
            println!("Added {}", describe(&job));
            if job.deliver.is_none() {
                eprintln!(
                    "note: no --deliver and no agent.owners, so results stay in the job's session (`pincer sessions list`)"
                );
            }
        }
        Command::Remove { job } => {
            let job = find(job).await?;
            store.remove_job(job.id).await?;
            println!("Removed job #{} {}.", job.id, job.name);
        }
        Command::Enable { job } => {
            let job = find(job).await?;
            store.set_job_enabled(job.id, true).await?;
            println!("Enabled job #{} {}.", job.id, job.name);
        }
        Command::Run { job } => {
            let job = find(job).await?;
            return run_now(home, &config, &secrets, store, job).await;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Run a job here: through the normal core, delivering where the gateway would.
async fn run_now(
    home: &Home,
    config: &pincer_config::Config,
    secrets: &pincer_config::Secrets,
    store: Store,
    job: crate::store::Job,
) -> anyhow::Result<ExitCode> {
    let env = env_vars();
    let registry = Arc::new(crate::gateway::channels::build(
        home,
        config,
        secrets,
        &env,
        &Default::default(),
    )?);
    let shutdown = CancellationToken::new();
    let mut running = crate::start(home, config, secrets, &env, shutdown.clone())?;
    // Print what the run says, and hand it on to the channels for delivery.
    let (tee, delivered) = mpsc::channel(64);
    let delivery = tokio::spawn(pincer_channels::manager::run(
        Arc::clone(&registry),
        delivered,
        None,
    ));
    let scheduler = Scheduler {
        store: store.clone(),
        bus: running.inbound.clone(),
        outbound: running.say.clone(),
        clock: Arc::new(SystemClock),
        grace: Duration::ZERO,
        wake: Arc::clone(&running.wake),
        heartbeat: None,
    };
    let slot = now_ms();
    if !store.claim_run(job.id, slot, "running").await? {
        anyhow::bail!("job {} is already running", job.name);
    }
    let recorder = scheduler
        .fire(job.clone(), slot)
        .await
        .ok_or_else(|| anyhow::anyhow!("the core stopped"))?;
    while let Some(message) = running.outbound.recv().await {
        match &message.body {
            OutboundBody::Text(text)
            | OutboundBody::Chunk(pincer_channels::Chunk::TextEnd { text, .. }) => {
                println!("{text}")
            }
            OutboundBody::Chunk(pincer_channels::Chunk::Error { error_text }) => {
                eprintln!("error: {error_text}");
            }
            OutboundBody::Notice(text) => eprintln!("{text}"),
            OutboundBody::Error(text) => eprintln!("error: {text}"),
            _ => {}
        }
        let ended = matches!(
            message.body,
            OutboundBody::Done | OutboundBody::Chunk(pincer_channels::Chunk::Finish { .. })
        );
        if registry.get(&message.target.channel).is_some() {
            let _ = tee.send(message).await;
        }
        if ended {
            break;
        }
    }
    let _ = recorder.await;
    drop(scheduler);
    drop(tee);
    shutdown.cancel();
    let _ = running.task.await;
    let _ = delivery.await;
    let job = store.job(&job.id.to_string()).await?;
    let failed = job
        .as_ref()
        .is_some_and(|j| j.last_status.as_deref() == Some("failed"));
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
