//! Approvals: a call the permission rules mark "ask" waits for the owner's answer —
//! allow once, always (stored, so the same call never asks again), or no. Who asks
//! depends on where the turn came from: each channel that can ask registers an
//! approver — the terminal asks y/n when it is a real terminal; a chat channel with
//! buttons (`ChatApprover`) posts the question in the turn's chat, and only the
//! channel's owner may press. No answer in time is a no. Where nobody can be asked
//! (piped input, `chat -m`, scheduled runs), "ask" is a no with the reason.
//!
//! What the call would do is shown with its control, bidi and zero-width characters
//! escaped (`\u{202e}`), so the owner approves what runs, not what it was made to look
//! like.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use pincer_channels::approval::{Choice, PendingApprovals, Reply};
use pincer_channels::escape::escape_hidden;
use pincer_channels::{ApprovalPrompter, Target};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    Once,
    /// Once, with these arguments instead (a host changed the call).
    Edited(serde_json::Value),
    Always,
    Deny,
    /// No, with the answerer's reason (a host's).
    Refused(String),
    /// The answer to a `question`.
    Answered(String),
    /// Nobody could be asked; the text says why and what the owner can do.
    Unavailable(String),
}

/// One question to the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub tool: String,
    /// What the call would do, in a line ("git push origin", "notes/plan.md").
    pub subject: String,
    /// The chat the turn answers: where a chat channel asks.
    pub origin: Target,
    /// Why it is asked when no rule says so (the turn took in untrusted content).
    pub why: Option<String>,
    /// For a command: every program it runs, as parsed (what the owner really approves).
    pub runs: Vec<String>,
    /// The call's arguments whole (a host shows them, and may change them).
    pub input: serde_json::Value,
    /// The model's id of the call.
    pub call_id: String,
    /// Who the turn is for (canonical id): the one a `question` asks.
    pub asker: String,
}

impl Request {
    /// The subject as shown to the owner: hidden characters escaped.
    fn shown_subject(&self) -> String {
        escape_hidden(&self.subject).into_owned()
    }

    /// "\nIt runs:\n• git push origin main\n• true", when the command is more than one
    /// program (or one that reads differently from the command as written).
    fn runs_list(&self) -> String {
        match self.runs.as_slice() {
            [] => String::new(),
            [only] if only == self.subject.trim() => String::new(),
            runs => {
                let lines: Vec<String> = runs
                    .iter()
                    .map(|r| format!("• {}", escape_hidden(r)))
                    .collect();
                format!("\nIt runs:\n{}", lines.join("\n"))
            }
        }
    }
}

#[async_trait]
pub trait Approver: Send + Sync {
    /// Ask and wait; no answer in time is a no.
    async fn approve(&self, request: &Request) -> Approval;

    /// The answers of the host's own hooks for `event` (`super::host_hooks`): one per
    /// callback that matched, none when the host registered none (every channel but a
    /// program's).
    async fn hook(
        &self,
        _event: super::host_hooks::HostHook,
        _input: &serde_json::Value,
    ) -> Vec<serde_json::Value> {
        Vec::new()
    }
}

/// The approver of each channel that has one, registered at start-up.
#[derive(Default, Clone)]
pub struct Approvers {
    by_channel: HashMap<String, Arc<dyn Approver>>,
}

impl Approvers {
    /// `channel`'s approver; wired before the agent is built, fixed afterwards.
    pub fn register(&mut self, channel: &str, approver: Arc<dyn Approver>) {
        self.by_channel.insert(channel.to_string(), approver);
    }

    pub fn get(&self, channel: &str) -> Option<Arc<dyn Approver>> {
        self.by_channel.get(channel).cloned()
    }
}

/// The terminal asks on its own line and takes the next line typed as the answer.
pub struct TerminalApprover(pub Arc<pincer_channels::Terminal>);

/// How long the terminal waits for an answer.
const TERMINAL_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &Request) -> Approval {
        if request.tool == super::question::QUESTION {
            let shown = super::question::shown(&request.input);
            let line = self
                .0
                .ask(&format!("\n{shown}\n> "), TERMINAL_WAIT)
                .await
                .unwrap_or_default();
            return answer_of(&request.input, line.trim());
        }
        let why = request
            .why
            .as_ref()
            .map(|why| format!(" (asked {why})"))
            .unwrap_or_default();
        let question = format!(
            "\nAllow {} `{}`{why}?{} [y] once, [a] always, [N] no: ",
            request.tool,
            request.shown_subject(),
            request.runs_list()
        );
        match self
            .0
            .ask(&question, TERMINAL_WAIT)
            .await
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("y" | "yes") => Approval::Once,
            Some("a" | "always") => Approval::Always,
            _ => Approval::Deny,
        }
    }
}

/// An answer to a question as typed: a choice's number picks that choice.
pub fn answer_of(input: &serde_json::Value, typed: &str) -> Approval {
    if typed.is_empty() {
        return Approval::Refused("no answer was given".into());
    }
    let options: Vec<&str> = input["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .collect();
    match typed.parse::<usize>() {
        Ok(n) if n >= 1 && n <= options.len() => Approval::Answered(options[n - 1].to_string()),
        _ => Approval::Answered(typed.to_string()),
    }
}

/// A chat channel with buttons: the question goes to the turn's chat with Allow once /
/// Always / Deny, the channel's owners may answer, and the question is replaced by
/// its outcome when answered or when it times out. A `question` with choices goes
/// there too, with a button per choice, for the person the turn is for.
pub struct ChatApprover {
    pub channel: String,
    pub prompter: Arc<dyn ApprovalPrompter>,
    /// The channel itself, for a subject too long for the question (sent whole first:
    /// as a file where it takes files, else as messages).
    pub handle: pincer_channels::ChannelHandle,
    pub pending: Arc<PendingApprovals>,
    /// Who owns the channel: its entries in agent.owners (the only ones who may answer).
    pub owners: Vec<String>,
    pub wait: std::time::Duration,
}

/// A subject longer than this is sent whole before the question, which then shows its
/// start and says where the rest is. Nothing is ever cut silently.
const INLINE_CHARS: usize = 1500;

impl ChatApprover {
    /// The subject as the question shows it: whole, or — when long — its start and
    /// where the whole of it was just sent.
    async fn shown(&self, request: &Request) -> String {
        let subject = &request.shown_subject();
        let chars = subject.chars().count();
        if chars <= INLINE_CHARS {
            return format!("`{subject}`");
        }
        let start: String = subject.chars().take(300).collect();
        let whole = format!(
            "The whole {} call awaiting approval ({chars} characters):\n\n{subject}",
            request.tool
        );
        if let Some(media) = &self.handle.media {
            let attached = pincer_channels::OutboundMedia {
                file_name: format!("pincer-approval-{}.txt", request.tool),
                bytes: whole.clone().into_bytes(),
                source: None,
                caption: Some(format!("The whole {} call awaiting approval", request.tool)),
                as_photo: false,
                as_voice: false,
            };
            let sent = media.send_media(&request.origin, &attached).await;
            if sent.is_ok() {
                return format!(
                    "`{start}` … ({chars} characters: the whole of it is in the file above)"
                );
            }
        }
        for chunk in (self.handle.info.split)(&whole) {
            if let Err(err) = self.handle.channel.send(&request.origin, &chunk).await {
                tracing::warn!(channel = %self.channel, "could not show a long approval subject: {err}");
                return format!(
                    "`{start}` … ({chars} characters; the rest could not be shown, so say no)"
                );
            }
        }
        format!("`{start}` … ({chars} characters: the whole of it is in the messages above)")
    }
}

#[async_trait]
impl Approver for ChatApprover {
    async fn approve(&self, request: &Request) -> Approval {
        if request.tool == super::question::QUESTION {
            return self.question(request).await;
        }
        let owners = self.owners.clone();
        if owners.is_empty() {
            tracing::warn!(channel = %self.channel, "an approval was needed but the channel has no owner; denied (set agent.owners)");
            return Approval::Unavailable(format!(
                "{} needs the owner's approval, and {} has no owner to ask: the owner must be named in agent.owners (`pincer pairing approve {} <CODE> --owner`)",
                request.tool, self.channel, self.channel
            ));
        }
        let (id, answer) = self.pending.open(owners);
        let why = request
            .why
            .as_ref()
            .map(|why| format!("\nAsked {why}."))
            .unwrap_or_default();
        let question = format!(
            "🔐 Allow {} {}?{}{why}\n(Only my owner can answer; no answer in {} is a no.)",
            request.tool,
            self.shown(request).await,
            request.runs_list(),
            minutes(self.wait)
        );
        let message = match self.prompter.ask(&request.origin, &question, &id).await {
            Ok(message) => message,
            Err(err) => {
                self.pending.close(&id);
                tracing::warn!(channel = %self.channel, "could not ask for approval: {err}; denied");
                return Approval::Deny;
            }
        };
        let choice = match tokio::time::timeout(self.wait, answer).await {
            Ok(Ok(choice)) => Some(choice),
            _ => None,
        };
        self.pending.close(&id);
        let subject = request.shown_subject();
        let outcome = match choice {
            Some(choice) => format!(
                "{} — {} `{}`",
                choice.outcome(),
                request.tool,
                brief(&subject)
            ),
            None => format!(
                "⌛ No answer — {} `{}` was not run",
                request.tool,
                brief(&subject)
            ),
        };
        if let Err(err) = self
            .prompter
            .settle(&request.origin, &message, &outcome)
            .await
        {
            tracing::warn!(channel = %self.channel, "could not update the approval question: {err}");
        }
        match choice {
            Some(Choice::Once) => Approval::Once,
            Some(Choice::Always) => Approval::Always,
            Some(Choice::Deny | Choice::Pick(_)) | None => Approval::Deny,
        }
    }
}

impl ChatApprover {
    /// The `question` tool in a chat: its choices as buttons; the person the turn is for
    /// presses one or types an answer in the chat (the dispatcher hands it over).
    async fn question(&self, request: &Request) -> Approval {
        let options = super::question::options(&request.input);
        let (id, answer) = self
            .pending
            .open_question(vec![request.asker.clone()], request.origin.key());
        let text = format!(
            "❓ {}\n(Tap an answer or type one.)",
            request.input["question"]
                .as_str()
                .unwrap_or_default()
                .trim()
        );
        let buttons = pincer_channels::approval::option_buttons(&options);
        let message = match self
            .prompter
            .ask_with(&request.origin, &text, &id, &buttons)
            .await
        {
            Ok(message) => message,
            Err(err) => {
                self.pending.close(&id);
                return Approval::Unavailable(format!(
                    "the question could not be asked in the chat ({err}); say it in your reply instead"
                ));
            }
        };
        let reply = tokio::time::timeout(self.wait, answer).await;
        self.pending.close(&id);
        let answered = match reply {
            Ok(Ok(Reply::Picked(n))) => options.get(usize::from(n)).cloned(),
            Ok(Ok(Reply::Typed(typed))) => Some(typed),
            _ => None,
        };
        let question = request.input["question"]
            .as_str()
            .unwrap_or_default()
            .trim();
        let outcome = match &answered {
            Some(answer) => format!("❓ {question}\n→ {answer}"),
            None => format!("❓ {question}\n⌛ No answer"),
        };
        if let Err(err) = self
            .prompter
            .settle(&request.origin, &message, &outcome)
            .await
        {
            tracing::warn!(channel = %self.channel, "could not update the question: {err}");
        }
        match answered {
            Some(answer) => Approval::Answered(answer),
            None => Approval::Unavailable(format!(
                "nobody answered the question within {}; go on without the answer, or ask again later",
                minutes(self.wait)
            )),
        }
    }
}

/// A subject in a settled question: short ones whole, long ones by their start.
fn brief(subject: &str) -> String {
    if subject.chars().count() <= INLINE_CHARS {
        return subject.to_string();
    }
    let start: String = subject.chars().take(300).collect();
    format!("{start} …")
}

fn minutes(wait: std::time::Duration) -> String {
    match wait.as_secs() {
        s if s < 120 => format!("{s} seconds"),
        s => format!("{} minutes", s / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec_request(command: &str, runs: &[&str]) -> Request {
        Request {
            tool: "exec".into(),
            subject: command.into(),
            origin: Target::chat("telegram", "42", None),
            why: None,
            runs: runs.iter().map(|r| r.to_string()).collect(),
            input: serde_json::json!({ "command": command }),
            call_id: "c1".into(),
            asker: "telegram:42".into(),
        }
    }

    #[test]
    fn the_command_and_what_it_runs_are_shown_with_hidden_characters_escaped() {
        let command = "echo ok #\u{202E}hs.txt && rm\u{200B} -rf x";
        let request = exec_request(command, &["echo ok #\u{202E}hs.txt", "rm\u{200B} -rf x"]);
        assert_eq!(
            request.shown_subject(),
            "echo ok #\\u{202e}hs.txt && rm\\u{200b} -rf x"
        );
        let runs = request.runs_list();
        assert!(
            runs.contains("• echo ok #\\u{202e}hs.txt") && runs.contains("• rm\\u{200b} -rf x"),
            "{runs}"
        );
        assert!(
            !runs.contains('\u{202E}') && !runs.contains('\u{200B}'),
            "{runs}"
        );
        let plain = exec_request("git push", &["git push"]);
        assert_eq!(plain.shown_subject(), "git push");
        assert_eq!(plain.runs_list(), "");
    }
}
