//! The scheduler loop. It sleeps until the next job is due (at most a minute, so jobs
//! added by `pincer cron add` from another process are seen), claims each due slot in
//! the store before firing it (so a restart never fires a slot twice), runs a slot
//! missed while Pincer was down once if it is within `cron.grace_secs` (else records it
//! as skipped), and sends the job's prompt through the bus like any message. A job
//! that fails `MAX_FAILURES` times in a row is disabled and its owner told.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use pincer_channels::{
    ChatKind, Done, Inbound, InboundMessage, OutboundBody, OutboundMessage, Scheduled, Sender,
    Target,
};
use pincer_config::Tier;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::Clock;
use super::heartbeat::Heartbeat;
use super::schedule::{Schedule, parse_tz};
use crate::store::{Job, Store};

/// Consecutive failures after which a job is disabled.
pub const MAX_FAILURES: i64 = 10;
/// The longest the loop sleeps before looking at the job table again.
const MAX_SLEEP: Duration = Duration::from_secs(60);

pub struct Scheduler {
    pub store: Store,
    /// The inbound bus: runs go through the dispatcher like any message.
    pub bus: mpsc::Sender<Inbound>,
    /// For telling the owner a job was disabled.
    pub outbound: mpsc::Sender<OutboundMessage>,
    pub clock: Arc<dyn Clock>,
    /// A missed run later than this is skipped, not run.
    pub grace: Duration,
    /// Woken when a job is added or changed in this process.
    pub wake: Arc<Notify>,
    pub heartbeat: Option<Heartbeat>,
}

fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

impl Scheduler {
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        self.close_interrupted_runs().await;
        loop {
            let next = self.tick().await;
            let wait = next
                .map(|at| (at - self.clock.now()).to_std().unwrap_or(Duration::ZERO))
                .unwrap_or(MAX_SLEEP)
                .min(MAX_SLEEP);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Runs claimed by a process that died during them are failures, not mysteries.
    async fn close_interrupted_runs(&self) {
        match self.store.unfinished_runs().await {
            Ok(runs) => {
                for (job, slot) in runs {
                    let error = Some("interrupted: pincer stopped during the run".to_string());
                    if let Err(err) = self.store.finish_run(job, slot, error).await {
                        tracing::warn!("cannot close an interrupted run: {err}");
                    }
                }
            }
            Err(err) => tracing::error!("cannot read scheduled runs: {err}"),
        }
    }

    /// Fire what is due; return when the next thing is due.
    pub async fn tick(&self) -> Option<DateTime<Utc>> {
        let now = self.clock.now();
        let jobs = match self.store.jobs().await {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::error!("cannot read scheduled jobs: {err}");
                return None;
            }
        };
        let mut earliest: Option<DateTime<Utc>> = None;
        for job in jobs.into_iter().filter(|j| j.enabled) {
            if let Some(next) = self.tick_job(job, now).await {
                earliest = Some(earliest.map_or(next, |e| e.min(next)));
            }
        }
        if let Some(heartbeat) = &self.heartbeat
            && let Some(next) = heartbeat.tick(self, now).await
        {
            earliest = Some(earliest.map_or(next, |e| e.min(next)));
        }
        earliest
    }

    /// Fire one job if due; return its next run.
    async fn tick_job(&self, job: Job, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let (schedule, tz) = match (
            Schedule::from_stored(&job.kind, &job.expr),
            parse_tz(&job.tz),
        ) {
            (Ok(schedule), Ok(tz)) => (schedule, tz),
            (Err(err), _) | (_, Err(err)) => {
                tracing::error!(job = %job.name, "job cannot be scheduled: {err}");
                return None;
            }
        };
        let next = Utc.timestamp_millis_opt(job.next_run?).single()?;
        if next > now {
            return Some(next);
        }
        let slot = ms(next);
        let anchor = Utc.timestamp_millis_opt(job.anchor).single().unwrap_or(now);
        // Slots missed while down collapse into this one; the next is after now.
        let following = schedule.next_after(now, tz, anchor);
        let late = (now - next).to_std().unwrap_or(Duration::ZERO);
        let status = if late > self.grace {
            "skipped"
        } else {
            "running"
        };
        let claimed = match self.store.claim_run(job.id, slot, status).await {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::error!(job = %job.name, "cannot claim a run: {err}");
                return Some(now + chrono::Duration::seconds(60));
            }
        };
        if let Err(err) = self.store.set_next_run(job.id, following.map(ms)).await {
            tracing::error!(job = %job.name, "cannot schedule the next run: {err}");
        }
        if !claimed {
            tracing::info!(job = %job.name, slot, "slot already fired before; not firing it again");
        } else if status == "skipped" {
            tracing::warn!(job = %job.name, "missed run skipped: {}s late, beyond cron.grace_secs", late.as_secs());
        } else {
            // The returned task records the run by itself.
            let _ = self.fire(job, slot).await;
        }
        following
    }

    /// Send the job's prompt through the bus; the returned task records the run when
    /// its turn ends (`None` when the bus is closed).
    pub async fn fire(&self, job: Job, slot: i64) -> Option<tokio::task::JoinHandle<()>> {
        tracing::info!(job = %job.name, "running scheduled job");
        let chat_id = match &job.session {
            Some(name) => format!("shared:{name}"),
            None => format!("{}:{}", job.id, slot / 1000),
        };
        let target = job.deliver.clone();
        let (done, outcome) = Done::pair();
        let message = system_message(
            chat_id,
            format!("cron:{}:{slot}", job.id),
            JobRun::of(&job),
            target.clone(),
            done,
        );
        if self.bus.send(message).await.is_err() {
            return None; // shutting down; the claimed run is closed as interrupted next start
        }
        let store = self.store.clone();
        let outbound = self.outbound.clone();
        Some(tokio::spawn(async move {
            let error = match outcome.await {
                Ok(Ok(())) => None,
                Ok(Err(failed)) => Some(failed.to_string()),
                Err(_) => Some("the run was lost (pincer stopped)".to_string()),
            };
            let failed = error.is_some();
            let failures = match store.finish_run(job.id, slot, error.clone()).await {
                Ok(failures) => failures,
                Err(err) => {
                    tracing::error!(job = %job.name, "cannot record the run: {err}");
                    return;
                }
            };
            if !failed && job.kind == "at" {
                let _ = store.remove_job(job.id).await; // a one-shot job is done
            }
            if failures >= MAX_FAILURES {
                let _ = store.set_job_enabled(job.id, false).await;
                let text = format!(
                    "Scheduled task \"{}\" failed {failures} times in a row and is now disabled. Last error: {}. Fix it, then `pincer cron enable {}`.",
                    job.name,
                    error.unwrap_or_default(),
                    job.name
                );
                tracing::error!("{text}");
                if let Some(target) = target {
                    let notice = OutboundMessage {
                        target,
                        body: OutboundBody::Notice(text),
                        reply_to: None,
                        entry: None,
                    };
                    let _ = outbound.send(notice).await;
                }
            }
        }))
    }
}

/// What a run says and for whom: the job's name and prompt, its creator and tier.
pub struct JobRun<'a> {
    pub name: &'a str,
    pub prompt: &'a str,
    pub creator: &'a str,
    pub tier: Tier,
    pub in_group: bool,
}

impl<'a> JobRun<'a> {
    pub fn of(job: &'a Job) -> JobRun<'a> {
        JobRun {
            name: &job.name,
            prompt: &job.prompt,
            creator: &job.creator,
            tier: job.tier,
            in_group: job.in_group,
        }
    }
}

/// A scheduled prompt as an inbound message on channel `system`, sent by the job's
/// creator at the job's tier; `done` hears how its turn ended.
pub fn system_message(
    chat_id: String,
    message_id: String,
    job: JobRun<'_>,
    deliver_to: Option<Target>,
    done: Done,
) -> Inbound {
    let name = job.name;
    let message = InboundMessage {
        channel: pincer_channels::SYSTEM.into(),
        account: "default".into(),
        chat_id,
        chat_kind: ChatKind::Dm,
        thread_id: None,
        sender: Sender {
            raw_id: job
                .creator
                .split_once(':')
                .map_or(job.creator, |(_, raw)| raw)
                .to_string(),
            canonical: job.creator.to_string(),
            display_name: format!("scheduled task {name}"),
        },
        message_id,
        text: format!("[Scheduled task \"{name}\"] {}", job.prompt),
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: crate::clock::now(),
        deliver_to,
        scheduled: Some(Scheduled {
            job: name.to_string(),
            tier: crate::access::message_tier(job.tier),
            in_group: job.in_group,
        }),
    };
    Inbound::answered(message, done)
}
