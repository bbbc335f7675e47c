//! Memory around a turn: before it, the memory files relevant to the user's message
//! are recalled (they ride on the newest user message, so the cached system prompt
//! stays byte-identical); after it, who said what goes into today's daily log.
//!
//! Both go through the scribe, one batch at a time (`pincer_store::batch`): the
//! recalls of turns that start together share one look at the memory files, and the
//! log lines of turns that end together are one write, on one blocking thread however
//! many turns run at once.

use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};
use pincer_memory::{Memory, MemoryError, Said};
use tokio::sync::oneshot;

use crate::agent::Agent;
use crate::agent::HEARTBEAT_OK;
use crate::store::batch::Batcher;

/// Work for the scribe; each job answers its turn.
pub(crate) enum Job {
    Recall {
        text: String,
        today: NaiveDate,
        tell: oneshot::Sender<Result<Option<String>, MemoryError>>,
    },
    Log {
        at: NaiveDateTime,
        said: Vec<Said>,
        /// One write serves the batch: each of its turns hears the same outcome.
        tell: oneshot::Sender<Result<(), Arc<MemoryError>>>,
    },
}

/// Jobs served together at most.
const BATCH: usize = 256;

/// The memory files' worker for turns.
pub(crate) fn scribe(memory: Memory) -> Batcher<Job> {
    Batcher::new(BATCH, move |jobs: &mut Vec<Job>| serve(&memory, jobs))
}

fn serve(memory: &Memory, jobs: &mut Vec<Job>) {
    let mut recalls = Vec::new();
    let mut logs = Vec::new();
    for job in jobs.drain(..) {
        match job {
            Job::Recall { text, today, tell } => recalls.push((text, today, tell)),
            Job::Log { at, said, tell } => logs.push((at, said, tell)),
        }
    }
    if !recalls.is_empty() {
        let asked: Vec<(&str, NaiveDate)> = recalls
            .iter()
            .map(|(text, today, _)| (text.as_str(), *today))
            .collect();
        let answers = memory.recall_all(&asked);
        for ((_, _, tell), answer) in recalls.into_iter().zip(answers) {
            let _ = tell.send(answer);
        }
    }
    if !logs.is_empty() {
        let turns: Vec<(NaiveDateTime, &[Said])> = logs
            .iter()
            .map(|(at, said, _)| (*at, said.as_slice()))
            .collect();
        let written = memory.log_turns(&turns).map_err(Arc::new);
        for (_, _, tell) in logs {
            let _ = tell.send(written.clone());
        }
    }
}

/// How the assistant appears in the daily log.
const ASSISTANT: &str = "Pincer";

impl Agent {
    /// "Today" and "now" in `agent.timezone`.
    pub fn local_now(&self) -> chrono::NaiveDateTime {
        crate::clock::utc()
            .with_timezone(&self.timezone)
            .naive_local()
    }

    /// The memory files that look relevant to `text`, ready to add to the turn.
    pub async fn recall(&self, text: &str) -> Option<String> {
        let (tell, answer) = oneshot::channel();
        self.scribe.push(Job::Recall {
            text: text.to_string(),
            today: self.local_now().date(),
            tell,
        });
        match answer.await {
            Ok(Ok(recalled)) => recalled,
            Ok(Err(err)) => {
                // Recall is a help, never a reason to fail the turn.
                tracing::warn!("memory recall failed: {err}");
                None
            }
            Err(err) => {
                tracing::warn!("memory recall failed: {err}");
                None
            }
        }
    }

    /// Append a finished turn to today's log: each user message, then the reply.
    pub async fn log_turn(&self, sender: &str, heard: &[String], reply: &str) {
        if reply.trim() == HEARTBEAT_OK {
            return; // a heartbeat with nothing to say is not worth remembering
        }
        let who = if sender.is_empty() { "owner" } else { sender };
        let mut said: Vec<Said> = heard
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|text| Said {
                who: who.to_string(),
                text: self.guard.scrubber.scrub(text).into_owned(),
            })
            .collect();
        if !reply.trim().is_empty() {
            said.push(Said {
                who: ASSISTANT.into(),
                text: self.guard.scrubber.scrub(reply).into_owned(),
            });
        }
        if said.is_empty() {
            return;
        }
        let (tell, answer) = oneshot::channel();
        self.scribe.push(Job::Log {
            at: self.local_now(),
            said,
            tell,
        });
        match answer.await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!("the daily log was not written: {err}"),
            Err(err) => tracing::warn!("the daily log was not written: {err}"),
        }
    }
}
