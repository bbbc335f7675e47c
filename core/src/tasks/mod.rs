//! Subagents: the `task` tool hands a piece of work to a child turn in a session of its
//! own (`task:<parent key>:<n>`), at the parent's tier with its tools but for `task`,
//! `send_message` and `cron` (one level deep), routed like any turn, within
//! `agent.task_max_iterations` and the turn and day budgets. At most `MAX_RUNNING` run at
//! once per conversation.
//!
//! - Foreground: the parent's tool call waits and gets the child's final answer (cut to
//!   `ANSWER_CAP`, with the session key to read the rest). Stopping the parent stops it.
//! - Background: the call returns at once; when the child ends, its answer goes to the
//!   chat the parent talks in and into the parent's transcript, so its next turn knows.
//!
//! Tasks survive nothing: a restart marks the ones still running `interrupted`, and the
//! background ones are reported so, once (`report_interrupted`). `/tasks` lists a
//! conversation's tasks, `/tasks stop N` and `/stop` stop them. Each task records who
//! started it (the sender of the turn that called `task`): the owner sees and stops
//! every task of a conversation, anyone else only their own (`Whose`).
//!
//! - `tool` — the `task` tool the model calls

mod tool;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use pincer_channels::{OutboundBody, OutboundMessage, SessionKey, Target};
use pincer_config::QueueMode;

use crate::access::Origin;
use crate::agent::{Agent, Ended};
use crate::provider::Part;
use crate::steering::{Queued, SessionQueue, StopReason, TaskRun, TurnControl};
use crate::store::{self, TaskRow};
pub use tool::TaskTool;

/// Children running at once per conversation.
pub const MAX_RUNNING: usize = 3;
/// The most of a child's answer a foreground call returns.
const ANSWER_CAP: usize = 4_000;

/// The tasks running now, by their conversation, with the handle that stops each; and
/// the agent that runs them (set once it exists: it holds this service in its tools).
#[derive(Default)]
pub struct Tasks {
    running: Mutex<HashMap<SessionKey, Vec<Running>>>,
    agent: OnceLock<Weak<Agent>>,
    /// `agent.task_max_iterations`.
    max_iterations: u32,
}

struct Running {
    number: i64,
    /// The canonical id of the sender whose turn started it.
    started_by: String,
    control: Arc<TurnControl>,
}

/// Whose tasks a command sees: the owner every task of the conversation, anyone else
/// only the ones their own turns started (a guest in the owner's group must not see
/// what the owner's tasks are about, nor stop them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose<'a> {
    All,
    StartedBy(&'a str),
}

impl<'a> Whose<'a> {
    /// What `origin` may see: all for the owner, else their own.
    pub fn of(origin: &'a Origin) -> Self {
        if origin.is_owner() {
            Whose::All
        } else {
            Whose::StartedBy(&origin.sender)
        }
    }

    fn covers(self, started_by: &str) -> bool {
        match self {
            Whose::All => true,
            Whose::StartedBy(sender) => sender == started_by,
        }
    }

    fn sender(self) -> Option<&'a str> {
        match self {
            Whose::All => None,
            Whose::StartedBy(sender) => Some(sender),
        }
    }
}

/// What the parent's tool call asks for.
pub struct Start {
    pub parent_session: i64,
    pub description: String,
    pub prompt: String,
    pub background: bool,
    pub origin: Origin,
    pub target: Target,
    pub tainted: bool,
}

/// Stops the child when the parent stops waiting for it (the parent's turn ended).
struct StopOnDrop(Option<Arc<TurnControl>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(control) = self.0.take() {
            control.stop(StopReason::User);
        }
    }
}

/// Why a task was not started, or (in the foreground) did not finish: for the model.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("tasks are not available here (the assistant is shutting down)")]
    Unavailable,
    #[error("cannot find this conversation: {0}")]
    NoConversation(store::StoreError),
    /// The parent's key, as stored, is not one this build reads.
    #[error("cannot find this conversation: {0}")]
    BadKey(#[from] pincer_channels::key::BadKey),
    #[error("a task cannot start tasks of its own")]
    Nested,
    #[error(
        "{MAX_RUNNING} tasks are already running in this conversation; wait for one to finish (they are listed by /tasks) or stop one with /tasks stop N"
    )]
    TooMany,
    #[error("the task could not be recorded: {0}")]
    NotRecorded(store::StoreError),
    #[error("the task got no session")]
    NoSession,
    #[error("the task's prompt was already stored")]
    PromptStored,
    /// `key` is the task's own conversation, to read the rest.
    #[error("task {number} did not finish: {why} ({key})")]
    DidNotFinish {
        number: i64,
        why: Unfinished,
        key: String,
    },
}

/// Why a task's turn gave no answer (recorded with it, and told to its parent).
#[derive(Debug, thiserror::Error)]
pub enum Unfinished {
    #[error("the assistant is shutting down")]
    ShuttingDown,
    #[error("it was stopped")]
    Stopped,
    /// The turn failed: the notice its conversation was shown.
    #[error("{0}")]
    Failed(String),
    #[error("the task failed: {0}")]
    Panicked(tokio::task::JoinError),
}

impl Tasks {
    pub fn new(max_iterations: u32) -> Arc<Tasks> {
        Arc::new(Tasks {
            max_iterations,
            ..Tasks::default()
        })
    }

    /// Give the service the agent its children run on (once, after it is built).
    pub fn attach(&self, agent: &Arc<Agent>) {
        // A second attach keeps the first agent; there is only ever one.
        let _ = self.agent.set(Arc::downgrade(agent));
    }

    fn agent(&self) -> Result<Arc<Agent>, TaskError> {
        self.agent
            .get()
            .and_then(Weak::upgrade)
            .ok_or(TaskError::Unavailable)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, Vec<Running>>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many tasks of `parent_key` run now.
    pub fn running(&self, parent_key: &SessionKey) -> usize {
        self.lock().get(parent_key).map_or(0, Vec::len)
    }

    /// Stop task `number` of `parent_key` if it is `whose`; false if no such task runs.
    pub fn stop(&self, parent_key: &SessionKey, number: i64, whose: Whose) -> bool {
        let running = self.lock();
        let Some(task) = running.get(parent_key).and_then(|tasks| {
            tasks
                .iter()
                .find(|t| t.number == number && whose.covers(&t.started_by))
        }) else {
            return false;
        };
        task.control.stop(StopReason::User);
        true
    }

    /// Stop every running task of `parent_key` that is `whose` (`/stop`); how many.
    pub fn stop_all(&self, parent_key: &SessionKey, whose: Whose) -> usize {
        let running = self.lock();
        let tasks = running
            .get(parent_key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut stopped = 0;
        for task in tasks.iter().filter(|t| whose.covers(&t.started_by)) {
            task.control.stop(StopReason::User);
            stopped += 1;
        }
        stopped
    }

    fn forget(&self, parent_key: &SessionKey, number: i64) {
        let mut running = self.lock();
        if let Some(tasks) = running.get_mut(parent_key) {
            tasks.retain(|t| t.number != number);
            if tasks.is_empty() {
                running.remove(parent_key);
            }
        }
    }

    /// Start a child; foreground: wait for its answer.
    /// Start a task. A foreground one's answer comes back with whether it is untrusted
    /// content (the child's turn took some in: its answer may carry it into the parent);
    /// a background one marks the parent conversation untrusted when its report lands.
    pub async fn start(self: &Arc<Self>, start: Start) -> Result<(String, bool), TaskError> {
        let agent = self.agent()?;
        let store = &agent.store();
        // The store keeps keys as text; every one it holds was written from a key.
        let parent_key = store
            .session_key(start.parent_session)
            .await
            .map_err(TaskError::NoConversation)?
            .parse::<SessionKey>()?;
        if parent_key.is_task() {
            return Err(TaskError::Nested);
        }
        if self.running(&parent_key) >= MAX_RUNNING {
            return Err(TaskError::TooMany);
        }
        let row = store
            .new_task(
                &parent_key,
                start.parent_session,
                &start.origin.sender,
                &start.description,
                start.background,
                &start.target,
            )
            .await
            .map_err(TaskError::NotRecorded)?;
        let Some(session_id) = row.session_id else {
            return Err(TaskError::NoSession);
        };
        agent.modes().inherit(start.parent_session, session_id);
        let message_id = store
            .insert_user(
                session_id,
                "task",
                &format!("task-{}", row.id),
                &start.origin.sender,
                &start.prompt,
            )
            .await
            .map_err(TaskError::NotRecorded)?
            .ok_or(TaskError::PromptStored)?;
        let control = Arc::new(TurnControl::default());
        self.lock()
            .entry(parent_key.clone())
            .or_default()
            .push(Running {
                number: row.number,
                started_by: start.origin.sender.clone(),
                control: Arc::clone(&control),
            });
        tracing::info!(task = %row.key(), background = start.background, "task started");
        let queued = Queued {
            session_id,
            message_ids: vec![message_id],
            text: start.prompt,
            origin: start.origin,
            target: start.target,
            reply_to: None,
            retry: false,
            attachment: false,
            voice: false,
            done: Vec::new(),
            task: Some(TaskRun {
                max_iterations: self.max_iterations,
                tainted: start.tainted,
            }),
            arrived: None,
        };
        let this = Arc::clone(self);
        let run = {
            let control = Arc::clone(&control);
            let row = row.clone();
            let parent_key = parent_key.clone();
            async move {
                let outcome = this.run(&agent, &row, queued, &control).await;
                this.forget(&parent_key, row.number);
                let untrusted = agent
                    .store()
                    .session_meta(session_id)
                    .await
                    .map_or(true, |meta| meta.untrusted());
                if row.background {
                    if untrusted
                        && let Err(err) = agent
                            .store()
                            .set_untrusted(row.parent_session_id, true)
                            .await
                    {
                        tracing::warn!("a task's distrust was not passed on: {err}");
                    }
                    this.report(&agent, &row, &outcome).await;
                }
                outcome.map(|answer| (answer, untrusted))
            }
        };
        if start.background {
            tokio::spawn(run);
            return Ok((
                format!(
                    "started task {}: {}. It runs in the background; its answer will be sent to this chat and noted here when it is done (/tasks lists it).",
                    row.number, row.description
                ),
                false,
            ));
        }
        let mut guard = StopOnDrop(Some(control));
        let outcome = tokio::spawn(run)
            .await
            .unwrap_or_else(|e| Err(Unfinished::Panicked(e)));
        guard.0 = None;
        let key = row.key();
        match outcome {
            Ok((answer, untrusted)) => Ok((
                format!(
                    "{}\n[task {} finished; its whole conversation: {key}]",
                    cap(&answer),
                    row.number
                ),
                untrusted,
            )),
            Err(why) => Err(TaskError::DidNotFinish {
                number: row.number,
                why,
                key,
            }),
        }
    }

    /// Run the child's turn and record how it ended: its answer, or why not.
    async fn run(
        &self,
        agent: &Agent,
        row: &TaskRow,
        queued: Queued,
        control: &TurnControl,
    ) -> Result<String, Unfinished> {
        let store = &agent.store();
        let (session_id, ids) = (queued.session_id, queued.message_ids.clone());
        if let Err(err) = store.take(session_id, ids, store::Status::Active).await {
            tracing::warn!("cannot start a task's turn: {err}");
        }
        let queue = SessionQueue::new(QueueMode::Followup);
        let report = agent.run_turn(session_id, queued, &queue, control).await;
        if report.ended != Ended::Stopped(StopReason::Shutdown)
            && let Err(err) = store.set_status(report.answered, store::Status::Done).await
        {
            tracing::warn!("cannot close a task's prompt: {err}");
        }
        let (status, outcome) = match report.ended {
            Ended::Finished if report.last_text.trim().is_empty() => (
                "done",
                Ok("(the task finished without an answer)".to_string()),
            ),
            Ended::Finished => ("done", Ok(report.last_text)),
            Ended::Stopped(StopReason::Shutdown) => {
                // Left `running`: the next start reports it interrupted.
                return Err(Unfinished::ShuttingDown);
            }
            Ended::Stopped(_) => ("stopped", Err(Unfinished::Stopped)),
            other => (
                "failed",
                Err(Unfinished::Failed(
                    other.notice().unwrap_or_else(|| "it failed".into()),
                )),
            ),
        };
        let text = match &outcome {
            Ok(answer) => answer.clone(),
            Err(why) => why.to_string(),
        };
        if let Err(err) = store.finish_task(row.id, status, &text).await {
            tracing::warn!("cannot record how a task ended: {err}");
        }
        tracing::info!(task = %row.key(), status, "task ended");
        outcome
    }

    /// A background task ended: tell the chat, and note it in the parent's transcript.
    async fn report(&self, agent: &Agent, row: &TaskRow, outcome: &Result<String, Unfinished>) {
        let text = match outcome {
            Ok(answer) => format!(
                "Task {} ({}) is done:\n\n{answer}",
                row.number, row.description
            ),
            Err(why) => format!(
                "Task {} ({}) did not finish: {why}",
                row.number, row.description
            ),
        };
        self.tell(agent, row, text).await;
    }

    async fn tell(&self, agent: &Agent, row: &TaskRow, text: String) {
        let note = Part::Text { text: text.clone() };
        if let Err(err) = agent
            .store()
            .append_as(
                row.parent_session_id,
                store::Role::Assistant,
                vec![note],
                None,
            )
            .await
        {
            tracing::warn!("a task's end was not noted in its conversation: {err}");
        }
        let Some(target) = row.target.clone() else {
            return;
        };
        let scrubber = &agent.scrubber();
        for body in [OutboundBody::Text(text), OutboundBody::Done] {
            let message = OutboundMessage {
                target: target.clone(),
                body: scrubber.scrub_body(body),
                reply_to: None,
                entry: None,
            };
            // A closed bus means shutdown; the note is in the transcript.
            let _ = agent.outbound().send(message).await;
        }
    }

    /// After a restart: the tasks the last run left running are interrupted; each
    /// background one is reported to its chat and its conversation, once.
    pub async fn report_interrupted(&self) {
        let Ok(agent) = self.agent() else { return };
        match agent.store().interrupt_tasks().await {
            Ok(rows) => {
                for row in rows {
                    let text = format!(
                        "Task {} ({}) was interrupted: Pincer restarted while it ran, and tasks do not survive a restart. Ask again if it is still needed.",
                        row.number, row.description
                    );
                    self.tell(&agent, &row, text).await;
                }
            }
            Err(err) => tracing::error!("cannot look for interrupted tasks: {err}"),
        }
    }

    /// `/tasks`: the conversation's running and recent tasks that are `whose`.
    pub async fn list(&self, parent_key: &SessionKey, whose: Whose<'_>) -> String {
        let Ok(agent) = self.agent() else {
            return "Tasks are not available here.".into();
        };
        let rows = match agent.store().tasks_of(parent_key, whose.sender(), 10).await {
            Ok(rows) => rows,
            Err(err) => return format!("Could not read the tasks: {err}"),
        };
        let (none, heading) = match whose {
            Whose::All => (
                "No tasks in this conversation yet.",
                "Tasks of this conversation (newest first):",
            ),
            Whose::StartedBy(_) => (
                "You have started no tasks in this conversation yet.",
                "Your tasks in this conversation (newest first):",
            ),
        };
        if rows.is_empty() {
            return none.into();
        }
        let now = store::now_ms();
        let mut lines = vec![heading.to_string()];
        for row in rows {
            let how = if row.background {
                "background"
            } else {
                "foreground"
            };
            let secs = (row.ended_at.unwrap_or(now) - row.created_at).max(0) / 1000;
            lines.push(format!(
                "{}. {} ({how}, {}:{:02}) — {}",
                row.number,
                row.status,
                secs / 60,
                secs % 60,
                row.description
            ));
        }
        lines.push("Stop one with /tasks stop N.".into());
        lines.join("\n")
    }
}

/// An answer cut to `ANSWER_CAP` bytes on a character boundary, saying so.
fn cap(answer: &str) -> String {
    if answer.len() <= ANSWER_CAP {
        return answer.to_string();
    }
    let mut end = ANSWER_CAP;
    while !answer.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… the answer goes on; read it in the task's conversation]",
        &answer[..end]
    )
}
