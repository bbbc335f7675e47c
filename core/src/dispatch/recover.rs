//! What the last run left unanswered, taken up again at start. A message no turn had
//! started on is answered as usual. For one a turn was answering, the transcript
//! says how far it got, and no step that already happened is done again:
//!
//! - **answered** — the model's last reply was stored: it is not asked again. Its text
//!   was booked in the outbox before it went, and the outbox sends what is unsent
//!   (`crate::outbox`); a crash between storing and booking is caught here, and the
//!   text is booked and sent now.
//! - **interrupted** — a tool was running (its call has no result): it is not run
//!   again, since it may have acted (sent a message, written a file). The call is
//!   closed as interrupted, and the person is told what was cut short and asked
//!   whether to go on.
//! - **between steps** — every tool had finished: the turn goes on from its results,
//!   with one model call that had not happened yet.
//! - **not started** — no reply was stored: the turn runs (a model call that was cut
//!   off is made again).
//!
//! A turn that already had its second try (`Status::Retried`) is given up.

use std::sync::Arc;

use pincer_channels::{OutboundBody, OutboundMessage, SessionKey};

use super::Dispatcher;
use crate::provider::Part;
use crate::steering::Queued;
use crate::store::{Role, Status, StoredMessage, Unanswered};

/// What a turn cut off by the last run's end had done.
#[derive(Debug, PartialEq)]
enum Left {
    NotStarted,
    /// Its last reply, stored as assistant message `source`.
    Answered {
        source: i64,
        text: String,
    },
    /// These tools were running.
    Interrupted(Vec<String>),
    BetweenSteps,
}

/// How far the turn that took the user messages `taken` got, from the transcript.
fn left(messages: &[StoredMessage], taken: &[i64]) -> Left {
    let Some(start) = messages.iter().rposition(|m| taken.contains(&m.id)) else {
        return Left::NotStarted;
    };
    let after: Vec<&StoredMessage> = messages[start + 1..]
        .iter()
        .filter(|m| m.role != Role::User)
        .collect();
    let Some(call_at) = after.iter().rposition(|m| m.role == Role::Assistant) else {
        return Left::NotStarted;
    };
    let reply = after[call_at];
    let calls: Vec<(&str, &str)> = reply
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    if calls.is_empty() {
        let text: String = reply
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        return Left::Answered {
            source: reply.id,
            text,
        };
    }
    let answered: Vec<&str> = after[call_at + 1..]
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let running: Vec<String> = calls
        .iter()
        .filter(|(id, _)| !answered.contains(id))
        .map(|(_, name)| (*name).to_string())
        .collect();
    if running.is_empty() {
        Left::BetweenSteps
    } else {
        Left::Interrupted(running)
    }
}

/// What the person hears when a restart cut a tool off.
fn interrupted_notice(tools: &[String]) -> String {
    let mut names: Vec<String> = tools.iter().map(|t| format!("`{t}`")).collect();
    names.dedup();
    format!(
        "A restart interrupted me while {} was running. It may have done part of its work, and I have not run it again. Say \"go on\" if I should continue from there, or tell me what to do instead.",
        names.join(", ")
    )
}

impl Dispatcher {
    /// The messages a previous run stored but never answered. Look before this run
    /// receives anything: a message stored since would be taken for one, and answered
    /// before its files are fetched.
    pub async fn left_unanswered(&self) -> Vec<Unanswered> {
        self.store.unanswered().await.unwrap_or_else(|err| {
            tracing::error!("cannot look for unanswered messages: {err}");
            Vec::new()
        })
    }

    /// Take up the messages `left_unanswered` found, on the sessions of `channels`
    /// (see the module's doc for what is done with each).
    pub async fn recover(self: &Arc<Self>, left: Vec<Unanswered>, channels: &[&str]) {
        let mut settled: Vec<i64> = Vec::new();
        // What a turn had taken, by session: read once, from the list itself.
        let started: Vec<(i64, i64)> = left
            .iter()
            .filter(|m| matches!(m.status, Status::Active | Status::Retried))
            .map(|m| (m.session_id, m.message_id))
            .collect();
        for message in left {
            let Ok(key) = message.key.parse::<SessionKey>() else {
                continue;
            };
            let Some(target) = key.target() else {
                continue;
            };
            if !channels.contains(&target.channel.as_str()) {
                continue;
            }
            let sender = message.sender.clone().unwrap_or_default();
            let origin = match self.gate.origin_of_stored(&key, &sender).await {
                Ok(origin) => origin,
                Err(err) => {
                    tracing::error!("cannot tell who sent an unanswered message: {err}");
                    continue;
                }
            };
            if !self.gate.still_admits(&target, &origin) {
                tracing::info!(session = %message.key, sender = %sender, "not answering a message from a sender no longer admitted");
                let _ = self
                    .store
                    .set_status(vec![message.message_id], Status::Ignored)
                    .await;
                continue;
            }
            if settled.contains(&message.message_id) {
                continue;
            }
            if matches!(message.status, Status::Active | Status::Retried) {
                // Every message of its session a turn had taken: the turn answered them all.
                let taken: Vec<i64> = started
                    .iter()
                    .filter(|(session, _)| *session == message.session_id)
                    .map(|(_, id)| *id)
                    .collect();
                match self.how_far(message.session_id, &taken).await {
                    Left::Answered { source, text } => {
                        tracing::info!(session = %message.key, "the last run had answered; its reply is sent, not made again");
                        self.close(&taken).await;
                        settled.extend(&taken);
                        let booked = self.store.booked_from(source).await.unwrap_or(true);
                        if !booked && !text.trim().is_empty() {
                            self.agent
                                .outbox()
                                .send_stored_reply(target, message.session_id, source, text)
                                .await;
                        }
                        continue;
                    }
                    Left::Interrupted(tools) => {
                        tracing::warn!(session = %message.key, ?tools, "a restart interrupted a tool; asking before going on");
                        if let Err(err) = self.store.repair(message.session_id, None).await {
                            tracing::error!("cannot close the interrupted tool calls: {err}");
                        }
                        self.close(&taken).await;
                        settled.extend(&taken);
                        let notice = OutboundMessage::new(
                            target,
                            OutboundBody::Notice(interrupted_notice(&tools)),
                            None,
                        );
                        let _ = self.agent.outbox().send(notice).await;
                        continue;
                    }
                    Left::BetweenSteps | Left::NotStarted => {}
                }
            }
            if message.status == Status::Retried {
                tracing::warn!(session = %message.key, "giving up on a message that failed twice across restarts");
                self.close(&[message.message_id]).await;
                continue;
            }
            tracing::info!(session = %message.key, "answering a message left unanswered by the last run");
            let item = Queued {
                session_id: message.session_id,
                message_ids: vec![message.message_id],
                text: String::new(),
                origin,
                target,
                reply_to: None,
                retry: message.status == Status::Active,
                attachment: false,
                voice: false,
                done: Vec::new(),
                task: None,
                arrived: None,
            };
            self.enqueue(&key, item);
        }
    }

    async fn how_far(&self, session_id: i64, taken: &[i64]) -> Left {
        // Not `transcript`, which closes the open calls first.
        match self.store.history(session_id).await {
            Ok(messages) => left(&messages, taken),
            Err(err) => {
                tracing::error!("cannot read the transcript of an unanswered message: {err}");
                Left::NotStarted
            }
        }
    }

    async fn close(&self, ids: &[i64]) {
        if let Err(err) = self.store.set_status(ids.to_vec(), Status::Done).await {
            tracing::error!("cannot mark a message answered: {err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(id: i64, role: Role, parts: Vec<Part>) -> StoredMessage {
        StoredMessage {
            id,
            position: id,
            role,
            parts,
            status: Status::Done,
            sender: None,
            created_at: 0,
            tier: None,
        }
    }

    fn text(text: &str) -> Part {
        Part::Text { text: text.into() }
    }

    fn call(id: &str, name: &str) -> Part {
        Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({}),
        }
    }

    fn result(id: &str) -> Part {
        Part::ToolResult {
            call_id: id.into(),
            name: "exec".into(),
            content: "ok".into(),
            is_error: false,
        }
    }

    #[test]
    fn the_transcript_tells_how_far_a_cut_turn_got() {
        let asked = message(1, Role::User, vec![text("hi")]);
        let earlier = message(0, Role::Assistant, vec![text("before")]);
        assert_eq!(
            left(&[earlier.clone(), asked.clone()], &[1]),
            Left::NotStarted
        );
        let answer = message(2, Role::Assistant, vec![text("hello")]);
        assert_eq!(
            left(&[asked.clone(), answer], &[1]),
            Left::Answered {
                source: 2,
                text: "hello".into()
            }
        );
        let calling = message(
            2,
            Role::Assistant,
            vec![text("on it"), call("a", "exec"), call("b", "send_message")],
        );
        let one_done = message(3, Role::Tool, vec![result("a")]);
        assert_eq!(
            left(&[asked.clone(), calling.clone(), one_done], &[1]),
            Left::Interrupted(vec!["send_message".into()])
        );
        let both_done = message(3, Role::Tool, vec![result("a"), result("b")]);
        assert_eq!(
            left(&[asked.clone(), calling, both_done], &[1]),
            Left::BetweenSteps
        );
        // What came after the message the turn took is not its (a later one waits).
        let later = message(3, Role::User, vec![text("and?")]);
        let answer = message(2, Role::Assistant, vec![text("hello")]);
        assert_eq!(
            left(&[asked, answer, later], &[1]),
            Left::Answered {
                source: 2,
                text: "hello".into()
            }
        );
    }
}
