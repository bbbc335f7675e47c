//! Creating and describing jobs, shared by `pincer cron` and the `cron` tool so both
//! accept the same forms and give the same errors. A job belongs to whoever made it and
//! runs at their tier; a job made in a chat delivers only to that chat, and an owner's
//! also to an owner's direct chat (named by their canonical id, `discord:<user id>`).
//! The command line is the machine's owner and may deliver anywhere.

use crate::tz::Tz;
use chrono::{DateTime, TimeZone, Utc};
use pincer_channels::Target;
use pincer_config::Tier;

use super::schedule::{Schedule, ScheduleError, parse_tz};
use crate::store::{Job, NewJob, Store, StoreError};

/// Why a job was not made, for whoever asked (the command line, the tool, the panel).
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("`{0}` is not a delivery target: use <channel>:<chat>, e.g. telegram:123456789")]
    BadTarget(String),
    /// An owner in a chat named a target that is neither it nor an owner's own chat.
    #[error(
        "a job made in this chat delivers here or to an owner's own chat (agent.owners), not to {0}; leave deliver out to deliver here"
    )]
    OwnerElsewhere(String),
    #[error("a job made in this chat can only deliver to this chat, not to {0}; leave deliver out")]
    Elsewhere(String),
    #[error("a job needs a name without spaces that is not a number, e.g. morning-brief")]
    BadName,
    #[error("a job needs a prompt: what the assistant should do when it runs")]
    NoPrompt,
    #[error(
        "give exactly one of cron, every or at, e.g. cron \"30 8 * * 1-5\", every 30m, or at 2026-11-23T09:00"
    )]
    NotOneSchedule,
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error("that time has already passed; pick one in the future")]
    Passed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A job as someone asked for it (CLI flags or tool arguments).
#[derive(Debug, Clone, Default)]
pub struct JobRequest {
    pub name: String,
    pub cron: Option<String>,
    pub every: Option<String>,
    pub at: Option<String>,
    pub tz: Option<String>,
    pub prompt: String,
    /// `<channel>:<chat>` or `<channel>:<chat>:<thread>`.
    pub deliver: Option<String>,
    /// A shared session name; none means a fresh session per run.
    pub session: Option<String>,
}

/// Who is making a job, and so where it may deliver.
#[derive(Debug, Clone)]
pub struct Maker {
    /// Canonical id of the creator (`terminal:local` for the command line).
    pub creator: String,
    pub tier: Tier,
    /// The chat it is made in; `None` for the command line (and the terminal).
    pub chat: Option<Target>,
    /// `agent.owners`: a target naming one of them is their direct chat.
    pub owners: Vec<String>,
    /// Made in a group (see `Job::in_group`).
    pub in_group: bool,
}

impl Maker {
    /// The command line: the owner, delivering wherever they say.
    pub fn cli(owners: &[String]) -> Maker {
        Maker {
            creator: crate::access::TERMINAL_SENDER.to_string(),
            tier: Tier::Owner,
            chat: None,
            owners: owners.to_vec(),
            in_group: false,
        }
    }
}

/// `telegram:42` or `telegram:-100123:7` (a forum topic). A target that is one of
/// `owners` is that person's direct chat, opened by user id.
pub fn parse_deliver(text: &str, owners: &[String]) -> Result<Target, JobError> {
    if owners.iter().any(|o| o == text)
        && let Some(target) = Target::user(text)
    {
        return Ok(target);
    }
    let mut parts = text.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(channel), Some(chat), thread) if !channel.is_empty() && !chat.is_empty() => {
            Ok(Target::chat(channel, chat, thread))
        }
        _ => Err(JobError::BadTarget(text.to_string())),
    }
}

/// Where a job made by `maker` delivers, or why it may not deliver there.
fn delivery(requested: Option<&str>, maker: &Maker) -> Result<Option<Target>, JobError> {
    let Some(text) = requested else {
        return Ok(maker.chat.clone());
    };
    let wanted = parse_deliver(text, &maker.owners)?;
    let Some(here) = &maker.chat else {
        return Ok(Some(wanted)); // the command line
    };
    let same_chat = !wanted.user
        && wanted.channel == here.channel
        && wanted.chat_id == here.chat_id
        && (wanted.thread_id.is_none() || wanted.thread_id == here.thread_id);
    if same_chat {
        return Ok(Some(here.clone()));
    }
    if maker.tier == Tier::Owner && wanted.user {
        return Ok(Some(wanted));
    }
    Err(if maker.tier == Tier::Owner {
        JobError::OwnerElsewhere(text.to_string())
    } else {
        JobError::Elsewhere(text.to_string())
    })
}

pub async fn create(
    store: &Store,
    request: JobRequest,
    default_tz: Tz,
    maker: &Maker,
    now: DateTime<Utc>,
) -> Result<Job, JobError> {
    let name = request.name.trim();
    if name.is_empty() || name.chars().any(char::is_whitespace) || name.parse::<i64>().is_ok() {
        return Err(JobError::BadName);
    }
    if request.prompt.trim().is_empty() {
        return Err(JobError::NoPrompt);
    }
    let schedule = match (&request.cron, &request.every, &request.at) {
        (Some(expr), None, None) => Schedule::cron(expr),
        (None, Some(every), None) => Schedule::every(every),
        (None, None, Some(at)) => Schedule::at(at),
        _ => return Err(JobError::NotOneSchedule),
    }?;
    let tz = match &request.tz {
        Some(name) => parse_tz(name)?,
        None => default_tz,
    };
    let deliver = delivery(request.deliver.as_deref(), maker)?;
    let Some(next) = schedule.next_after(now, tz, now) else {
        return Err(JobError::Passed);
    };
    let job = NewJob {
        name: name.to_string(),
        kind: schedule.kind().to_string(),
        expr: schedule.expr(),
        tz: tz.name().to_string(),
        prompt: request.prompt.trim().to_string(),
        deliver,
        session: request.session,
        next_run: Some(next.timestamp_millis()),
        anchor: now.timestamp_millis(),
        creator: maker.creator.clone(),
        tier: maker.tier,
        in_group: maker.in_group,
    };
    Ok(store.add_job(job).await?)
}

/// Where a job's results go, in words.
pub fn destination(deliver: &Option<Target>) -> String {
    match deliver {
        Some(t) if t.user => format!("{}:{} (direct chat)", t.channel, t.chat_id),
        Some(Target {
            channel,
            chat_id,
            thread_id: Some(thread),
            ..
        }) => format!("{channel}:{chat_id}:{thread}"),
        Some(t) => format!("{}:{}", t.channel, t.chat_id),
        None => "kept in its session".into(),
    }
}

/// One line per job: what, when, where to, and how the last run went.
pub fn describe(job: &Job) -> String {
    let tz = parse_tz(&job.tz).unwrap_or(crate::tz::Tz::UTC);
    let when = Schedule::from_stored(&job.kind, &job.expr)
        .map(|s| s.describe(tz))
        .unwrap_or_else(|e| e.to_string());
    let to = destination(&job.deliver);
    let by = if job.tier == Tier::Owner {
        String::new()
    } else {
        format!(" (made by {}, runs as {})", job.creator, job.tier)
    };
    let next = job
        .next_run
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single())
        .map(|t| t.with_timezone(&tz).format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| "—".into());
    let state = if job.enabled { "" } else { " [disabled]" };
    let last = match (&job.last_status, &job.last_error) {
        (Some(status), Some(error)) => format!("; last {status}: {error}"),
        (Some(status), None) => format!("; last {status}"),
        _ => String::new(),
    };
    format!(
        "#{} {}{state}{by} — {when} → {to}; next {next}{last}",
        job.id, job.name
    )
}
