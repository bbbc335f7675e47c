//! The heartbeat (off by default): every `heartbeat.every`, when the workspace's
//! HEARTBEAT.md lists active tasks, run a turn about them; a reply of `HEARTBEAT_OK`
//! ("nothing to say") is not delivered. Heartbeat turns stop for the day once they have
//! used `heartbeat.max_day_tokens`.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use crate::tz::Tz;
use chrono::{DateTime, TimeZone, Utc};
use pincer_channels::{Done, SessionKey, Target};

use super::scheduler::{JobRun, Scheduler, system_message};

pub struct Heartbeat {
    pub every: Duration,
    pub workspace: PathBuf,
    /// Where something worth saying goes (the owner's chat).
    pub target: Target,
    pub max_day_tokens: u64,
    pub timezone: Tz,
    next: Mutex<Option<DateTime<Utc>>>,
}

/// The lines of HEARTBEAT.md that are tasks: not blank, not headings, and not inside an
/// HTML comment (`<!-- … -->`, on one line or many; one left open runs to the end). A
/// template of headings and comments is no task, and costs no model call.
pub(super) fn active_tasks(text: &str) -> Vec<String> {
    let mut tasks = Vec::new();
    let mut in_comment = false;
    for line in text.lines() {
        let mut kept = String::new();
        let mut rest = line;
        loop {
            if in_comment {
                match rest.find("-->") {
                    Some(end) => {
                        rest = &rest[end + 3..];
                        in_comment = false;
                    }
                    None => break,
                }
            } else {
                match rest.find("<!--") {
                    Some(start) => {
                        kept.push_str(&rest[..start]);
                        rest = &rest[start + 4..];
                        in_comment = true;
                    }
                    None => {
                        kept.push_str(rest);
                        break;
                    }
                }
            }
        }
        let kept = kept.trim();
        if !kept.is_empty() && !kept.starts_with('#') {
            tasks.push(kept.to_string());
        }
    }
    tasks
}

impl Heartbeat {
    pub fn new(
        every: Duration,
        workspace: PathBuf,
        target: Target,
        max_day_tokens: u64,
        timezone: Tz,
    ) -> Self {
        Self {
            every,
            workspace,
            target,
            max_day_tokens,
            timezone,
            next: Mutex::new(None),
        }
    }

    /// Beat if due; return when the next beat is due.
    pub async fn tick(&self, scheduler: &Scheduler, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let every = chrono::Duration::from_std(self.every).ok()?;
        {
            let mut next = self.next.lock().ok()?;
            let due = *next.get_or_insert(now + every);
            if due > now {
                return Some(due);
            }
            *next = Some(now + every);
        }
        let following = Some(now + every);
        // Opened beneath the workspace: a link a command planted is not followed out.
        let text = crate::tools::confine::read_beneath(&self.workspace, "HEARTBEAT.md", 64 * 1024)
            .unwrap_or_default();
        let tasks = active_tasks(&text);
        if tasks.is_empty() {
            return following;
        }
        let midnight = now
            .with_timezone(&self.timezone)
            .date_naive()
            .and_hms_opt(0, 0, 0)?;
        let since = self
            .timezone
            .from_local_datetime(&midnight)
            .earliest()
            .map(|t| t.timestamp_millis())
            .unwrap_or(0);
        match scheduler
            .store
            .tokens_for_keys_since(&SessionKey::scheduled_prefix("heartbeat"), since)
            .await
        {
            Ok(used) if used >= self.max_day_tokens => {
                tracing::info!(
                    used,
                    "heartbeat skipped: heartbeat.max_day_tokens reached for today"
                );
                return following;
            }
            Ok(_) => {}
            Err(err) => {
                tracing::warn!("heartbeat skipped: {err}");
                return following;
            }
        }
        let prompt = format!(
            "Your standing tasks (HEARTBEAT.md):\n{}\n\nIf nothing needs your owner's attention right now, reply exactly HEARTBEAT_OK and nothing else.",
            tasks.join("\n")
        );
        let (done, _outcome) = Done::pair();
        let stamp = now.timestamp();
        let run = JobRun {
            name: "heartbeat",
            prompt: &prompt,
            creator: crate::access::TERMINAL_SENDER,
            tier: pincer_config::Tier::Owner,
            in_group: false,
        };
        let message = system_message(
            format!("heartbeat:{stamp}"),
            format!("heartbeat:{stamp}"),
            run,
            Some(self.target.clone()),
            done,
        );
        if scheduler.bus.send(message).await.is_err() {
            tracing::debug!("heartbeat not sent: shutting down");
        }
        following
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_lines_are_tasks() {
        let text =
            "# Heartbeat\n\n<!-- add tasks below -->\n- check the build\n  \n- water the plants\n";
        assert_eq!(
            active_tasks(text),
            ["- check the build", "- water the plants"]
        );
        assert!(active_tasks("# only a heading\n").is_empty());
    }

    #[test]
    fn comments_of_many_lines_are_not_tasks() {
        // A template as people write them: headings, and the help in one comment.
        let template = "# Heartbeat\n\n<!--\nList what to check, one per line:\n- the build\n- the inbox\n-->\n\n## Notes\n";
        assert!(
            active_tasks(template).is_empty(),
            "{:?}",
            active_tasks(template)
        );
        let text =
            "<!-- a --> - water the plants <!-- b\nstill b -->\n<!-- open to the end\n- not a task";
        assert_eq!(active_tasks(text), ["- water the plants"]);
    }
}
