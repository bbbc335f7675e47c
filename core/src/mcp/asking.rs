//! Who answers an MCP server's questions (`elicitation/create`) during a tool call: the
//! owner whose turn made the call, through the approver of the turn's channel — the way
//! the `question` tool asks (buttons in a chat, the host's round trip under `pincer
//! agent` and `pincer acp`, the prompt of a real terminal). Where nobody can answer —
//! a scheduled run, a channel with no approver, a turn that is not the owner's, no call
//! in flight, or two calls in flight that the question could belong to — there is no
//! asker, and the server is told `decline`.
//!
//! While the owner is being asked, the call's own time limit does not run. An answer
//! that carries one of the owner's secrets — even loosely: another case, hidden
//! characters or spaces between, without its public prefix — or a token-shaped string
//! is not sent: the server is told `decline`.
//!
//! This file must not word the questions (`elicit` does) or talk MCP (`client` does).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::elicit::Ask;
use crate::tools::ToolContext;
use crate::tools::approval::{Approval, Approver, Approvers, Request};

/// The owner of one call, and how to reach them.
pub(super) struct Asker {
    approver: Arc<dyn Approver>,
    /// The chat the turn answers: where a chat channel asks.
    origin: pincer_channels::Target,
    /// The owner's canonical id: the one person who may answer there.
    owner: String,
    /// An id for the question (hosts show it as the call it belongs to).
    call_id: String,
}

impl Asker {
    /// Who answers for a call made in `ctx`: the owner of an owner's turn, on a channel
    /// that can ask. `None` elsewhere (scheduled runs, members' turns, no approver).
    pub(super) fn for_call(
        approvers: &Approvers,
        ctx: &ToolContext,
        call_id: String,
    ) -> Option<Asker> {
        let origin = ctx.origin.as_ref()?;
        let who = &ctx.caller.origin;
        let scheduled = matches!(who.place, crate::access::Place::Scheduled { .. });
        if !who.is_owner() || scheduled {
            return None;
        }
        Some(Asker {
            approver: approvers.get(&origin.channel)?,
            origin: origin.clone(),
            owner: who.sender.clone(),
            call_id,
        })
    }
}

#[async_trait]
impl Ask for Asker {
    async fn ask(&self, question: String, options: Vec<String>) -> Approval {
        let request = Request {
            tool: crate::tools::question::QUESTION.to_string(),
            subject: question.clone(),
            origin: self.origin.clone(),
            why: None,
            runs: Vec::new(),
            input: serde_json::json!({ "question": question, "options": options }),
            call_id: self.call_id.clone(),
            asker: self.owner.clone(),
        };
        match self.approver.approve(&request).await {
            // An answer goes to the server: never one of the owner's secrets (or
            // anything shaped like a key), however the question put it.
            Approval::Answered(typed) if crate::scrub::carries_secret(&typed) => {
                tracing::warn!("an answer to an MCP server's question carried a secret; declined");
                Approval::Refused("the answer carried a secret".into())
            }
            answer => answer,
        }
    }
}

/// The tool calls in flight on one server, each with who answers for it.
#[derive(Default)]
pub(super) struct Calls {
    next: AtomicU64,
    live: Mutex<Vec<Live>>,
}

struct Live {
    id: u64,
    asker: Option<Arc<Asker>>,
    asking: Arc<Asking>,
}

impl Calls {
    /// A call starts, answered for by `asker` (given an id for the call's questions);
    /// it ends when the returned guard is dropped.
    pub(super) fn enter(&self, asker: impl FnOnce(String) -> Option<Asker>) -> InFlight<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let asking = Arc::new(Asking::default());
        let asker = asker(format!("mcp-elicitation-{id}"));
        self.lock().push(Live {
            id,
            asker: asker.map(Arc::new),
            asking: Arc::clone(&asking),
        });
        InFlight {
            calls: self,
            id,
            asking,
        }
    }

    /// Who answers a question the server asks now: the owner of its one call in flight.
    /// The protocol does not say which call a question belongs to, so with two calls
    /// in flight nobody is asked rather than perhaps the wrong person.
    pub(super) fn asker(&self) -> Result<(Arc<Asker>, Arc<Asking>), &'static str> {
        match self.lock().as_slice() {
            [] => Err("no call of this server is in flight"),
            [one] => match &one.asker {
                Some(asker) => Ok((Arc::clone(asker), Arc::clone(&one.asking))),
                None => Err(
                    "nobody can be asked for this call (a scheduled run, a member's turn, or a channel that cannot ask)",
                ),
            },
            _ => Err(
                "several calls of this server are in flight, and the question could belong to any",
            ),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Live>> {
        // Every write is one push or retain: a poisoned lock still holds a whole list.
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One call in flight; leaves the list when dropped.
pub(super) struct InFlight<'a> {
    calls: &'a Calls,
    id: u64,
    pub asking: Arc<Asking>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.calls.lock().retain(|live| live.id != self.id);
    }
}

/// Whether the owner is being asked for a call, and when they last answered.
#[derive(Default)]
pub(super) struct Asking {
    open: AtomicUsize,
    answered: Mutex<Option<Instant>>,
}

/// A question being asked; counted as answered when dropped.
pub(super) struct Asked<'a>(&'a Asking);

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        *self.0.answered.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Asking {
    pub(super) fn begin(&self) -> Asked<'_> {
        self.open.fetch_add(1, Ordering::Relaxed);
        Asked(self)
    }

    /// Run `call` for at most `limit` of its own time: time spent asking the owner
    /// does not count, and the limit starts again from their last answer. `None` when
    /// the time ran out.
    pub(super) async fn within<F: Future>(&self, limit: Duration, call: F) -> Option<F::Output> {
        tokio::pin!(call);
        let mut deadline = Instant::now() + limit;
        loop {
            tokio::select! {
                out = &mut call => return Some(out),
                () = tokio::time::sleep_until(deadline) => {
                    let now = Instant::now();
                    let answered = *self.answered.lock().unwrap_or_else(|e| e.into_inner());
                    deadline = match answered {
                        _ if self.open.load(Ordering::Relaxed) > 0 => now + limit,
                        Some(at) if at + limit > now => at + limit,
                        _ => return None,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_time_limit_pauses_while_the_owner_is_asked() {
        let asking = Arc::new(Asking::default());
        let limit = Duration::from_secs(60);
        let owner = Arc::clone(&asking);
        let call = async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let asked = owner.begin();
            // The owner takes five minutes to answer.
            tokio::time::sleep(Duration::from_secs(300)).await;
            drop(asked);
            tokio::time::sleep(Duration::from_secs(50)).await;
            "done"
        };
        assert_eq!(asking.within(limit, call).await, Some("done"));

        let stuck = async {
            tokio::time::sleep(Duration::from_secs(61)).await;
        };
        assert_eq!(asking.within(limit, stuck).await, None);
    }

    struct Answers(&'static str);

    #[async_trait]
    impl Approver for Answers {
        async fn approve(&self, _request: &Request) -> Approval {
            Approval::Answered(self.0.to_string())
        }
    }

    fn asker(answer: &'static str) -> Asker {
        Asker {
            approver: Arc::new(Answers(answer)),
            origin: pincer_channels::Target::chat("terminal", "local", None),
            owner: "terminal:local".into(),
            call_id: "c1".into(),
        }
    }

    #[tokio::test]
    async fn an_answer_that_carries_a_key_never_reaches_the_server() {
        let key = asker("sk-proj-Abcdefghijklmnopqrstuvwxyz012345");
        assert!(matches!(
            key.ask("your OpenAI key?".into(), Vec::new()).await,
            Approval::Refused(_)
        ));
        let plain = asker("blue");
        assert_eq!(
            plain.ask("a colour?".into(), Vec::new()).await,
            Approval::Answered("blue".into())
        );
    }

    #[test]
    fn only_the_one_call_in_flight_is_asked_for() {
        let calls = Calls::default();
        assert!(calls.asker().is_err(), "no call in flight");
        let first = calls.enter(|_| None);
        assert!(calls.asker().is_err(), "nobody to ask for this call");
        drop(first);
        let _a = calls.enter(|_| None);
        let _b = calls.enter(|_| None);
        assert_eq!(
            calls.asker().err(),
            Some(
                "several calls of this server are in flight, and the question could belong to any"
            )
        );
    }
}
