//! Compaction: the older part of a long conversation is summarised by the light
//! model into the session's summary, which stands in for those messages from then
//! on; the recent turns stay word for word, and the full transcript stays in the
//! store. Runs on `/compact`, before a model call that would fill too much of the
//! context window (`window`), and once when a provider says the context is too long.
//!
//! Made to fit a window, it keeps only as many recent messages as fit a budget (a
//! share of the window well below the trigger, so the next turns do not compact
//! again). A summary is checked before it replaces anything: one shorter than a floor,
//! or one that drops the people named or the open request, is refused, and the older
//! messages are then left out as they are (the earlier summary kept, a line saying how
//! many were left out) — the latest turns stay word for word either way.

use super::Agent;
use crate::provider::{ChatMessage, ChatRequest, Part, ProviderError};
use crate::router::Tier;
use crate::store::{self, StoredMessage};

/// Messages kept word for word at the end of the conversation by `/compact`.
const KEEP: usize = 6;
/// The most a summary may be, in tokens (less on a small window: an eighth of it).
const SUMMARY_TOKENS: u64 = 1024;
/// How much of a tool result goes into the text to summarise.
const TOOL_PREVIEW: usize = 300;

const INSTRUCTIONS: &str = "You keep notes on a conversation between a user and their assistant. Merge the earlier summary (if any) and the new part of the conversation into one concise summary, written for the assistant, under these headings: the user's goals and constraints; facts about the user; decisions made; what was done (files changed, commands run, results); open tasks and questions. Keep exact file paths, ids, names, numbers, URLs and dates. No preamble.";

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// Messages newly covered by the summary.
    pub messages: usize,
    pub summary_chars: usize,
    /// Why the model's summary was refused, when it was: the messages were left out
    /// instead (the earlier summary kept).
    pub refused: Option<PoorSummary>,
}

/// Why a compaction did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("no model is configured")]
    NoModel,
    #[error("compaction failed: {0}")]
    Model(ProviderError),
}

/// Why the model's summary may not stand in for the messages (see `check`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoorSummary {
    #[error("{length} characters for {messages} messages (at least {floor} expected)")]
    TooShort {
        length: usize,
        messages: usize,
        floor: usize,
    },
    /// A name the conversation used.
    #[error("it leaves out {0}, named in the conversation")]
    LeavesOut(String),
    #[error("it leaves out the request still open at its end")]
    OpenRequest,
}

/// How much to keep word for word.
#[derive(Debug, Clone, Copy)]
pub enum Keep {
    /// The last `KEEP` messages (`/compact`).
    Messages,
    /// As many recent messages as fit in this many tokens, on a window of `window`
    /// tokens (the open request is never summarised, whatever its size).
    Tokens { budget: u64, window: u64 },
}

impl Agent {
    /// Summarise all but the recent part of the session. `Ok(None)` when there is too
    /// little to compact.
    pub async fn compact(
        &self,
        session_id: i64,
        spender: &crate::store::Spender,
    ) -> Result<Option<Compacted>, CompactError> {
        self.compact_keeping(session_id, spender, Keep::Messages)
            .await
    }

    /// `compact`, keeping `keep` word for word.
    pub async fn compact_keeping(
        &self,
        session_id: i64,
        spender: &crate::store::Spender,
        keep: Keep,
    ) -> Result<Option<Compacted>, CompactError> {
        let meta = self.store.session_meta(session_id).await?;
        let stored = self.store.history(session_id).await?;
        let done: Vec<&StoredMessage> = stored
            .iter()
            .filter(|m| m.status != store::Status::Ignored)
            .filter(|m| m.role != store::Role::User || m.status == store::Status::Done)
            .collect();
        // What stays starts at a user message, so tool calls stay with their results.
        let mut cut = match keep {
            Keep::Messages => done.len().saturating_sub(KEEP),
            Keep::Tokens { budget, .. } => {
                let mut kept = 0;
                let mut cut = done.len();
                while cut > 0 && kept + super::window::message_tokens(done[cut - 1]) <= budget {
                    cut -= 1;
                    kept += super::window::message_tokens(done[cut]);
                }
                cut
            }
        };
        while cut > 0 && cut < done.len() && done[cut].role != store::Role::User {
            cut -= 1;
        }
        let upto = meta.summary_upto.unwrap_or(i64::MIN);
        let old: Vec<&StoredMessage> = done[..cut]
            .iter()
            .copied()
            .filter(|m| m.position > upto)
            .collect();
        let Some(last) = old.last() else {
            return Ok(None);
        };
        let transcript = render(&old);
        let previous = meta.summary.unwrap_or_default();
        let request = ChatRequest {
            model: String::new(),
            system_stable: INSTRUCTIONS.into(),
            system_volatile: String::new(),
            messages: vec![ChatMessage::user_text(format!(
                "Earlier summary:\n{}\n\nConversation to add:\n{transcript}",
                if previous.is_empty() {
                    "(none)"
                } else {
                    &previous
                }
            ))],
            tools: Vec::new(),
            max_tokens: summary_tokens(keep) as u32,
            thinking_budget: 0,
            recalled_at: None,
        };
        let (_, chain) = self.models.tier(Tier::Light).ok_or(CompactError::NoModel)?;
        let mut ignore = |_: crate::provider::StreamEvent<'_>| {};
        let (response, label) = chain
            .stream(request, &mut ignore)
            .await
            .map_err(CompactError::Model)?;
        let cost = self.prices.cost(&label, response.usage);
        if let Err(err) = self
            .store
            .record_usage(session_id, &label, response.usage, cost, spender)
            .await
        {
            tracing::warn!("usage not recorded: {err}");
        }
        let written = crate::provider::text_of(&response.parts);
        let (summary, refused) = match check(written.trim(), &old, &transcript) {
            Ok(()) => (written.trim().to_string(), None),
            Err(why) => {
                tracing::warn!(session_id, "a summary was refused: {why}");
                (left_out(&previous, old.len()), Some(why))
            }
        };
        self.store
            .set_summary(session_id, summary.clone(), last.position)
            .await?;
        tracing::info!(session_id, messages = old.len(), "conversation compacted");
        Ok(Some(Compacted {
            messages: old.len(),
            summary_chars: summary.chars().count(),
            refused,
        }))
    }
}

/// The most a summary may take: `SUMMARY_TOKENS`, or an eighth of a small window.
fn summary_tokens(keep: Keep) -> u64 {
    match keep {
        Keep::Messages => SUMMARY_TOKENS,
        Keep::Tokens { window, .. } => SUMMARY_TOKENS.min(window / 8).max(128),
    }
}

/// Whether `summary` may stand in for `old` (rendered as `transcript`): long enough
/// for what it replaces, naming the people the conversation named, and keeping the
/// request still open at its end. Else why not.
fn check(summary: &str, old: &[&StoredMessage], transcript: &str) -> Result<(), PoorSummary> {
    let floor = (transcript.chars().count() / 40).clamp(60, 240);
    let length = summary.chars().count();
    if length < floor {
        return Err(PoorSummary::TooShort {
            length,
            messages: old.len(),
            floor,
        });
    }
    let lower = summary.to_lowercase();
    if let Some(missing) = names(old)
        .into_iter()
        .find(|name| !lower.contains(&name.to_lowercase()))
    {
        return Err(PoorSummary::LeavesOut(missing));
    }
    if let Some(open) = open_request(old)
        && !open.iter().any(|word| lower.contains(word.as_str()))
    {
        return Err(PoorSummary::OpenRequest);
    }
    Ok(())
}

/// The text of user messages in `old`.
fn user_texts<'a>(old: &'a [&StoredMessage]) -> impl Iterator<Item = &'a str> {
    old.iter()
        .filter(|m| m.role == store::Role::User)
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
}

/// The people the user named: capitalised words not at a sentence's start, in two
/// or more of their messages.
fn names(old: &[&StoredMessage]) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for text in user_texts(old) {
        let mut in_this = std::collections::BTreeSet::new();
        let mut after_stop = true;
        for word in text.split_whitespace() {
            let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
            let mut chars = bare.chars();
            let capital = chars.next().is_some_and(char::is_uppercase)
                && bare.chars().count() >= 3
                && chars.all(char::is_lowercase);
            if capital && !after_stop {
                in_this.insert(bare.to_string());
            }
            after_stop = word.ends_with(['.', '!', '?', ':']);
        }
        for name in in_this {
            *seen.entry(name).or_default() += 1;
        }
    }
    seen.into_iter()
        .filter(|(_, count)| *count >= 2)
        .map(|(name, _)| name)
        .collect()
}

/// The words (five letters or more, lower case) of the user's last message in `old`
/// when nothing answered it in words: a request still open. `None` when answered.
fn open_request(old: &[&StoredMessage]) -> Option<Vec<String>> {
    let last_user = old.iter().rposition(|m| m.role == store::Role::User)?;
    let answered = old[last_user + 1..].iter().any(|m| {
        m.role == store::Role::Assistant
            && m.parts
                .iter()
                .any(|p| matches!(p, Part::Text { text } if !text.trim().is_empty()))
    });
    if answered {
        return None;
    }
    let words: Vec<String> = user_texts(&old[last_user..last_user + 1])
        .flat_map(str::split_whitespace)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| w.chars().count() >= 5)
        .collect();
    (!words.is_empty()).then_some(words)
}

/// What stands in for `count` messages left out without a summary: the earlier
/// summary, and a line saying so.
fn left_out(previous: &str, count: usize) -> String {
    const SAID: &str = " earlier messages were left out here";
    // A line from an earlier time counts these too, rather than a line per time.
    let (before, earlier) = match previous.trim_end().rsplit_once('\n') {
        Some((before, last)) => (before, last),
        None => ("", previous.trim_end()),
    };
    let (kept, count) = match earlier
        .strip_prefix('[')
        .and_then(|rest| rest.split_once(SAID))
        .and_then(|(n, _)| n.parse::<usize>().ok())
    {
        Some(n) => (before, count + n),
        None => (previous.trim_end(), count),
    };
    let line =
        format!("[{count}{SAID} to fit the context window; `pincer sessions show` has them]");
    if kept.trim().is_empty() {
        line
    } else {
        format!("{kept}\n{line}")
    }
}

/// The messages as plain text for the summariser.
fn render(messages: &[&StoredMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        for part in &message.parts {
            let line = match (message.role, part) {
                (store::Role::User, Part::Text { text }) => format!("User: {text}"),
                (_, Part::Text { text }) => format!("Assistant: {text}"),
                (
                    _,
                    Part::ToolCall {
                        name, arguments, ..
                    },
                ) => format!("Assistant called {name} {arguments}"),
                (_, Part::ToolResult { name, content, .. }) => {
                    let preview: String = content.chars().take(TOOL_PREVIEW).collect();
                    format!("{name} returned: {preview}")
                }
                (_, Part::Image { path, .. }) => format!("User sent an image: {path}"),
                (_, Part::Reasoning { .. }) => continue,
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: store::Role, text: &str) -> StoredMessage {
        StoredMessage {
            id: 0,
            position: 0,
            role,
            parts: vec![Part::Text { text: text.into() }],
            status: store::Status::Done,
            sender: None,
            created_at: 0,
            tier: None,
        }
    }

    #[test]
    fn a_summary_is_refused_when_short_or_missing_a_person_or_the_open_request() {
        let messages = [
            message(store::Role::User, "ask Miriam about the garden plan"),
            message(store::Role::Assistant, "I will."),
            message(store::Role::User, "and tell Miriam the seeds arrived"),
            message(store::Role::Assistant, "Done."),
            message(
                store::Role::User,
                "please reorganise the greenhouse schedule",
            ),
        ];
        let old: Vec<&StoredMessage> = messages.iter().collect();
        let transcript = render(&old);
        let good = "The user works with Miriam on the garden plan; the seeds arrived and Miriam was told. Open: reorganise the greenhouse schedule.";
        assert_eq!(check(good, &old, &transcript), Ok(()));
        let short = check("Marijuana & Health Care Team", &old, &transcript)
            .unwrap_err()
            .to_string();
        assert!(short.contains("characters"), "{short}");
        let nameless = "The user has a garden plan; the seeds arrived. Open: reorganise the greenhouse schedule, as soon as possible please.";
        let why = check(nameless, &old, &transcript).unwrap_err().to_string();
        assert!(why.contains("Miriam"), "{why}");
        let closed = "The user works with Miriam on the garden plan; the seeds arrived and Miriam was told about them, all of it done now.";
        let why = check(closed, &old, &transcript).unwrap_err().to_string();
        assert!(why.contains("open"), "{why}");
    }

    #[test]
    fn what_is_left_out_keeps_the_earlier_summary_and_says_how_many() {
        assert!(left_out("", 23).starts_with("[23 earlier messages were left out"));
        let both = left_out("Goals: the garden.", 4);
        assert!(both.starts_with("Goals: the garden.\n[4 earlier"), "{both}");
        let again = left_out(&both, 6);
        assert!(
            again.starts_with("Goals: the garden.\n[10 earlier"),
            "{again}"
        );
        assert_eq!(again.lines().count(), 2, "{again}");
    }
}
