//! The runner's questions to its host, waiting for their answers: a call to approve
//! (`permission_request`, Pincer's own event), a plan (`plan_approval_request`) or a
//! question (`user_question_request`). Seed 001 has no per-call approval, so a backend
//! written to it alone never answers a `permission_request`: after
//! `host.approval_timeout_secs` such a request is refused with a reason the model and
//! the host read, and the turn goes on. Plans and questions are seed 001's own events
//! and wait for their answer (the seed gives them a day), or for an interrupt.
//!
//! It only keeps the requests and their deadlines; the runner's loop sleeps until the
//! next deadline (tokio's clock, so tests pause it) and calls `expire`.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use pincer_core::tools::approval::Approval;

/// The requests waiting for the host, by request id.
pub(super) struct Asks {
    pending: HashMap<String, Pending>,
    /// For fresh ids (`pincer-req-N`).
    asked: u64,
    /// `host.approval_timeout_secs`: how long a `permission_request` waits.
    timeout: Duration,
}

struct Pending {
    answer: oneshot::Sender<Approval>,
    tool: String,
    /// A question's text: its answer is keyed by it.
    question: Option<String>,
    /// When an unanswered permission request is refused; none for plans and questions.
    deadline: Option<Instant>,
}

/// What kind of request an ask is sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Permission,
    Plan,
    Question,
}

impl Asks {
    pub(super) fn new(timeout: Duration) -> Asks {
        Asks {
            pending: HashMap::new(),
            asked: 0,
            timeout,
        }
    }

    /// How long a permission request waits, for the request itself.
    pub(super) fn timeout_secs(&self) -> u64 {
        self.timeout.as_secs()
    }

    /// Keep a request until its answer; its id.
    pub(super) fn add(
        &mut self,
        kind: Kind,
        tool: &str,
        question: Option<String>,
        answer: oneshot::Sender<Approval>,
    ) -> String {
        self.asked += 1;
        let id = format!("pincer-req-{}", self.asked);
        let deadline = (kind == Kind::Permission).then(|| Instant::now() + self.timeout);
        self.pending.insert(
            id.clone(),
            Pending {
                answer,
                tool: tool.to_string(),
                question,
                deadline,
            },
        );
        id
    }

    /// The text of question `id`, if it is one still waiting.
    pub(super) fn question(&self, id: &str) -> Option<&str> {
        self.pending.get(id).and_then(|p| p.question.as_deref())
    }

    /// Answer request `id`; false when no such request waits (answered, expired, or
    /// never asked).
    pub(super) fn answer(&mut self, id: &str, approval: Approval) -> bool {
        match self.pending.remove(id) {
            Some(pending) => {
                // The call may have been stopped meanwhile; nobody waits then.
                let _ = pending.answer.send(approval);
                true
            }
            None => false,
        }
    }

    /// Refuse everything waiting (an interrupt).
    pub(super) fn deny_all(&mut self) {
        for (_, pending) in self.pending.drain() {
            // As in `answer`: a call already gone needs no answer.
            let _ = pending.answer.send(Approval::Deny);
        }
    }

    /// The soonest moment a permission request runs out, if one waits.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.pending.values().filter_map(|p| p.deadline).min()
    }

    /// Refuse the permission requests whose time ran out by `now`; each one's id, tool
    /// and the reason given.
    pub(super) fn expire(&mut self, now: Instant) -> Vec<(String, String, String)> {
        let due: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        let mut expired = Vec::new();
        for id in due {
            let Some(pending) = self.pending.remove(&id) else {
                continue;
            };
            let why = format!(
                "the host did not answer the permission request in {} s (host.approval_timeout_secs), so this {} call was refused; do not retry it — go on without it, or say what you wanted to do",
                self.timeout.as_secs(),
                pending.tool
            );
            // A call stopped meanwhile needs no answer.
            let _ = pending.answer.send(Approval::Unavailable(why.clone()));
            expired.push((id, pending.tool, why));
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_permission_request_is_refused_at_its_deadline() {
        let mut asks = Asks::new(Duration::from_secs(120));
        let (answer, mut refused) = oneshot::channel();
        let id = asks.add(Kind::Permission, "write_file", None, answer);
        let (plan_answer, mut plan) = oneshot::channel();
        asks.add(Kind::Plan, "exit_plan_mode", None, plan_answer);

        let deadline = asks
            .next_deadline()
            .expect("the permission request has one");
        tokio::time::sleep(Duration::from_secs(119)).await;
        assert!(asks.expire(Instant::now()).is_empty(), "not yet");
        tokio::time::sleep_until(deadline).await;
        let expired = asks.expire(Instant::now());
        assert_eq!(expired.len(), 1);
        assert_eq!(
            (expired[0].0.as_str(), expired[0].1.as_str()),
            (id.as_str(), "write_file")
        );
        match refused.try_recv() {
            Ok(Approval::Unavailable(why)) => {
                assert!(
                    why.contains("did not answer the permission request in 120 s"),
                    "{why}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        // A plan waits for its answer: no deadline, still pending.
        assert_eq!(asks.next_deadline(), None);
        assert!(plan.try_recv().is_err());
        assert!(
            !asks.answer(&id, Approval::Once),
            "an expired request takes no answer"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_in_time_goes_to_the_call_and_questions_keep_their_text() {
        let mut asks = Asks::new(Duration::from_secs(5));
        let (answer, mut allowed) = oneshot::channel();
        let id = asks.add(Kind::Permission, "exec", None, answer);
        assert!(asks.answer(&id, Approval::Once));
        assert!(matches!(allowed.try_recv(), Ok(Approval::Once)));
        assert_eq!(asks.next_deadline(), None);

        let (answer, _asked) = oneshot::channel();
        let id = asks.add(Kind::Question, "question", Some("Tea?".into()), answer);
        assert_eq!(asks.question(&id), Some("Tea?"));
        asks.deny_all();
        assert_eq!(asks.question(&id), None);
    }
}
