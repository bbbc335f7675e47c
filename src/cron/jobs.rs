//! Creating and describing jobs, shared by `pincer cron` and the `cron` tool so both
//! accept the same forms and give the same errors.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use pincer_channels::Target;

use super::schedule::{Schedule, parse_tz};
use crate::store::{Job, NewJob, Store};

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

/// `telegram:42` or `telegram:-100123:7` (a forum topic).
pub fn parse_deliver(text: &str) -> Result<Target, String> {
    let mut parts = text.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(channel), Some(chat), thread) if !channel.is_empty() && !chat.is_empty() => {
            Ok(Target {
                channel: channel.to_string(),
                chat_id: chat.to_string(),
                thread_id: thread.map(str::to_string),
                user: false,
            })
        }
        _ => Err(format!(
            "`{text}` is not a delivery target: use <channel>:<chat>, e.g. telegram:123456789"
        )),
    }
}

pub async fn create(
    store: &Store,
    request: JobRequest,
    default_tz: Tz,
    origin: Option<Target>,
    now: DateTime<Utc>,
) -> Result<Job, String> {
    let name = request.name.trim();
    if name.is_empty() || name.chars().any(char::is_whitespace) || name.parse::<i64>().is_ok() {
        return Err(
            "a job needs a name without spaces that is not a number, e.g. morning-brief".into(),
        );
    }
    if request.prompt.trim().is_empty() {
        return Err("a job needs a prompt: what the assistant should do when it runs".into());
    }
    let schedule = match (&request.cron, &request.every, &request.at) {
        (Some(expr), None, None) => Schedule::cron(expr),
        (None, Some(every), None) => Schedule::every(every),
        (None, None, Some(at)) => Schedule::at(at),
        _ => return Err("give exactly one of cron, every or at, e.g. cron \"30 8 * * 1-5\", every 30m, or at 2026-11-23T09:00".into()),
    }
    .map_err(|e| e.to_string())?;
    let tz = match &request.tz {
        Some(name) => parse_tz(name).map_err(|e| e.to_string())?,
        None => default_tz,
    };
    let deliver = match &request.deliver {
        Some(text) => Some(parse_deliver(text)?),
        None => origin,
    };
    let Some(next) = schedule.next_after(now, tz, now) else {
        return Err("that time has already passed; pick one in the future".into());
    };
    let job = NewJob {
        name: name.to_string(),
        kind: schedule.kind().to_string(),
        expr: schedule.expr(),
        tz: tz.name().to_string(),
        prompt: request.prompt.trim().to_string(),
        deliver: deliver.map(|t| (t.channel, t.chat_id, t.thread_id)),
        session: request.session,
        next_run: Some(next.timestamp_millis()),
        anchor: now.timestamp_millis(),
    };
    store.add_job(job).await.map_err(|e| e.to_string())
}

/// One line per job: what, when, where to, and how the last run went.
pub fn describe(job: &Job) -> String {
    let tz = parse_tz(&job.tz).unwrap_or(chrono_tz::UTC);
    let when = Schedule::from_stored(&job.kind, &job.expr)
        .map(|s| s.describe(tz))
        .unwrap_or_else(|e| e.to_string());
    let to = match &job.deliver {
        Some((channel, chat, Some(thread))) => format!("{channel}:{chat}:{thread}"),
        Some((channel, chat, None)) => format!("{channel}:{chat}"),
        None => "kept in its session".into(),
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
        "#{} {}{state} — {when} → {to}; next {next}{last}",
        job.id, job.name
    )
}
