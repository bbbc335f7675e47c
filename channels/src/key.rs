//! `SessionKey`: which conversation a message belongs to, built and parsed here and
//! nowhere else. Its text form is what DESIGN.md fixes and the store keeps:
//! `telegram:dm:42`, `telegram:group:-100123`, `telegram:group:-100123:thread:7`,
//! `terminal:dm:local`, `web:dm:owner`, `cron:<job>:<run>` (or `cron:shared:<name>`,
//! `cron:heartbeat:<run>`), `task:<parent key>:<n>` for a subagent's conversation, and
//! `system:<name>` for Pincer's own bookkeeping (`system:dream`, where the dream's model
//! calls are counted).

use std::fmt;
use std::str::FromStr;

use crate::message::Target;

/// The prefix of a scheduled run's key.
const SCHEDULED: &str = "cron";
/// The prefix of a subagent's key.
const TASK: &str = "task";
/// The prefix of Pincer's own sessions.
const SYSTEM: &str = "system";

/// One conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SessionKey {
    /// A chat on a channel (a platform, the terminal, the web panel).
    Chat {
        channel: String,
        /// A group, channel or thread rather than a direct chat.
        group: bool,
        chat_id: String,
        thread: Option<String>,
    },
    /// A scheduled job's run: `cron:<run>`, where `run` is `<job id>:<slot>`,
    /// `shared:<name>` or `heartbeat:<stamp>`.
    Scheduled { run: String },
    /// A subagent's conversation, the `number`th its parent started.
    Task {
        parent: Box<SessionKey>,
        number: u64,
    },
    /// Pincer's own session `system:<name>` (no colon in `name`): no chat, nobody
    /// writes in it; what it does is counted there.
    System { name: String },
}

/// Text that is not a session key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a session key; keys look like telegram:dm:42, telegram:group:-100123:thread:7 or terminal:dm:local"
)]
pub struct BadKey(pub String);

impl SessionKey {
    /// A direct chat: `channel:dm:chat_id`.
    pub fn direct(channel: &str, chat_id: &str) -> SessionKey {
        SessionKey::Chat {
            channel: channel.to_string(),
            group: false,
            chat_id: chat_id.to_string(),
            thread: None,
        }
    }

    /// The run of a scheduled job, a shared job session or the heartbeat
    /// (`run` is what follows `cron:`).
    pub fn scheduled(run: impl Into<String>) -> SessionKey {
        SessionKey::Scheduled { run: run.into() }
    }

    /// The `number`th subagent of `parent`.
    pub fn task(parent: SessionKey, number: u64) -> SessionKey {
        SessionKey::Task {
            parent: Box::new(parent),
            number,
        }
    }

    /// Pincer's own session `name` (`system:dream`).
    pub fn system(name: impl Into<String>) -> SessionKey {
        SessionKey::System { name: name.into() }
    }

    /// The key of the `number`th subagent of the conversation keyed `parent` (the
    /// text form of `task(parent, number)`, for a parent known only by its text).
    pub fn task_key(parent: &str, number: u64) -> String {
        format!("{TASK}:{parent}:{number}")
    }

    /// The channel of a chat (`None` for scheduled runs and subagents, whose replies
    /// go where their job or parent says).
    pub fn channel(&self) -> Option<&str> {
        match self {
            SessionKey::Chat { channel, .. } => Some(channel),
            _ => None,
        }
    }

    /// Whether this is a direct chat (not a group, a run or a subagent).
    pub fn is_direct(&self) -> bool {
        matches!(self, SessionKey::Chat { group: false, .. })
    }

    pub fn is_task(&self) -> bool {
        matches!(self, SessionKey::Task { .. })
    }

    /// The chat this conversation answers in, for a chat.
    pub fn target(&self) -> Option<Target> {
        match self {
            SessionKey::Chat {
                channel,
                chat_id,
                thread,
                ..
            } => Some(Target::chat(channel, chat_id, thread.as_deref())),
            _ => None,
        }
    }

    /// The first part of the text form: the channel, `cron`, `task` or `system` (how
    /// the panel groups conversations).
    pub fn prefix(&self) -> &str {
        match self {
            SessionKey::Chat { channel, .. } => channel,
            SessionKey::Scheduled { .. } => SCHEDULED,
            SessionKey::Task { .. } => TASK,
            SessionKey::System { .. } => SYSTEM,
        }
    }

    /// The key prefix every run of the scheduled `run` family shares (`cron:heartbeat`).
    pub fn scheduled_prefix(run: &str) -> String {
        format!("{SCHEDULED}:{run}")
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionKey::Chat {
                channel,
                group,
                chat_id,
                thread,
            } => {
                let kind = if *group { "group" } else { "dm" };
                write!(f, "{channel}:{kind}:{chat_id}")?;
                match thread {
                    Some(thread) => write!(f, ":thread:{thread}"),
                    None => Ok(()),
                }
            }
            SessionKey::Scheduled { run } => write!(f, "{SCHEDULED}:{run}"),
            SessionKey::Task { parent, number } => write!(f, "{TASK}:{parent}:{number}"),
            SessionKey::System { name } => write!(f, "{SYSTEM}:{name}"),
        }
    }
}

impl FromStr for SessionKey {
    type Err = BadKey;

    fn from_str(text: &str) -> Result<SessionKey, BadKey> {
        let bad = || BadKey(text.to_string());
        let (head, rest) = text.split_once(':').ok_or_else(bad)?;
        if head == SCHEDULED {
            return match rest {
                "" => Err(bad()),
                run => Ok(SessionKey::scheduled(run)),
            };
        }
        if head == TASK {
            let (parent, number) = rest.rsplit_once(':').ok_or_else(bad)?;
            let number = number.parse().map_err(|_| bad())?;
            return Ok(SessionKey::task(parent.parse()?, number));
        }
        // `system:dm:42` stays a chat on a channel named `system`, as it always read.
        if head == SYSTEM && !rest.is_empty() && !rest.contains(':') {
            return Ok(SessionKey::system(rest));
        }
        let (kind, rest) = rest.split_once(':').ok_or_else(bad)?;
        let group = match kind {
            "dm" => false,
            "group" => true,
            _ => return Err(bad()),
        };
        let (chat_id, thread) = match rest.split_once(":thread:") {
            Some((chat, thread)) => (chat, Some(thread.to_string())),
            None => (rest, None),
        };
        if head.is_empty() || chat_id.is_empty() {
            return Err(bad());
        }
        Ok(SessionKey::Chat {
            channel: head.to_string(),
            group,
            chat_id: chat_id.to_string(),
            thread,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_reads_back_as_written() {
        for text in [
            "telegram:dm:42",
            "telegram:group:-100123",
            "telegram:group:-100123:thread:7",
            "slack:group:C1:thread:1.2",
            "terminal:dm:local",
            "web:dm:owner",
            "cron:17:1700000000",
            "cron:shared:digest",
            "cron:heartbeat:2026-11-26T09:00",
            "task:telegram:dm:42:3",
            "task:cron:shared:digest:1",
            "system:dream",
        ] {
            let key: SessionKey = text.parse().unwrap();
            assert_eq!(key.to_string(), text);
        }
    }

    #[test]
    fn keys_say_where_they_answer() {
        let key: SessionKey = "telegram:group:-100123:thread:7".parse().unwrap();
        let target = key.target().unwrap();
        assert_eq!(
            (
                target.channel.as_str(),
                target.chat_id.as_str(),
                target.thread_id.as_deref()
            ),
            ("telegram", "-100123", Some("7"))
        );
        assert!(!key.is_direct());
        let run: SessionKey = "cron:17:1700000000".parse().unwrap();
        assert_eq!(
            (run.target(), run.channel(), run.prefix()),
            (None, None, "cron")
        );
        let task: SessionKey = "task:terminal:dm:local:2".parse().unwrap();
        assert!(task.is_task());
        assert_eq!(
            SessionKey::task_key("terminal:dm:local", 2),
            task.to_string()
        );
        assert_eq!(
            task,
            SessionKey::task(SessionKey::direct("terminal", "local"), 2)
        );
        let own: SessionKey = "system:dream".parse().unwrap();
        assert_eq!(own, SessionKey::system("dream"));
        assert_eq!((own.target(), own.prefix()), (None, "system"));
        // A chat on a channel named `system` reads as it always did.
        assert!(matches!(
            "system:dm:42".parse::<SessionKey>(),
            Ok(SessionKey::Chat { .. })
        ));
    }

    #[test]
    fn what_is_not_a_key_is_an_error() {
        for text in [
            "nonsense",
            "telegram:chat:42",
            "telegram:dm:",
            ":dm:42",
            "cron:",
            "system:",
            "task:telegram:dm:42",
            "task:telegram:dm:42:x",
        ] {
            assert!(text.parse::<SessionKey>().is_err(), "{text}");
        }
    }
}
