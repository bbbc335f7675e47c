//! `/memory`: what the assistant remembers — MEMORY.md, the typed files — and the
//! history of the memory repository (dreams, restores, saved hand edits), each
//! revision with its diff against the one before, and Restore to a revision.
//!
//! Restore asks first: a POST without `confirm=yes` only renders a confirmation page;
//! with it, `Memory::restore` (the same call as `pincer memory restore`, which waits
//! for no dream and saves uncommitted edits first) runs on a blocking thread. The page
//! never creates the repository: before the first dream there is simply no history.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{Markup, html};
use pincer_memory::repo::short;
use pincer_memory::{Entry, Memory, MemoryError, Revision};
use serde::Deserialize;

use super::WebState;
use super::auth::Login;
use super::layout;

/// Revisions the history shows.
const REVISIONS: usize = 20;
/// The most of one revision's diff the page shows.
const MAX_DIFF_BYTES: usize = 64 * 1024;

/// What an action did: the status to answer with and the flash line.
type Outcome = (StatusCode, Result<String, String>);

/// `POST /memory/restore`.
#[derive(Deserialize)]
pub(crate) struct RestoreForm {
    #[serde(default)]
    rev: String,
    /// `yes` once the owner confirmed.
    #[serde(default)]
    confirm: String,
}

/// `GET /memory`.
pub(crate) async fn page(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
) -> Response {
    render(&state, &login, None).await
}

/// `POST /memory/restore`: ask, then restore.
pub(crate) async fn restore(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<RestoreForm>,
) -> Response {
    let rev = form.rev.trim().to_string();
    if rev.is_empty() || rev.len() > 64 || !rev.chars().all(|c| c.is_ascii_hexdigit()) {
        let why =
            format!("`{rev}` is not a revision id; use a Restore button in the history below");
        return render(&state, &login, Some((StatusCode::BAD_REQUEST, Err(why)))).await;
    }
    let memory = state.agent.memory().clone();
    if form.confirm != "yes" {
        // Only ask about a revision that exists.
        let wanted = rev.clone();
        let outcome = blocking(move || {
            if !has_repo(&memory) {
                return Err(MemoryError::Invalid(format!(
                    "no revision `{wanted}`: the memory has no history yet"
                )));
            }
            memory.repo()?.diff(&wanted).map(|_| ())
        })
        .await;
        return match outcome {
            Ok(()) => confirm(&login, &rev),
            Err(err) => render(&state, &login, Some(failed(err))).await,
        };
    }
    let wanted = rev.clone();
    let outcome = match blocking(move || memory.restore(&wanted)).await {
        Ok(Some(commit)) => {
            let changes = if commit.changes.is_empty() {
                String::new()
            } else {
                format!(": {}", commit.changes.join("; "))
            };
            (
                StatusCode::OK,
                Ok(format!(
                    "Restored the memory files as of {} in a new commit {}{changes}.",
                    short(&rev),
                    short(&commit.id)
                )),
            )
        }
        Ok(None) => (
            StatusCode::OK,
            Ok(format!(
                "The memory files are already as they were at {}.",
                short(&rev)
            )),
        ),
        Err(err) => failed(err),
    };
    render(&state, &login, Some(outcome)).await
}

/// The status and words for a memory error.
fn failed(err: MemoryError) -> Outcome {
    let status = match &err {
        MemoryError::Invalid(_) | MemoryError::NotFound { .. } => StatusCode::NOT_FOUND,
        MemoryError::Busy => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, Err(err.to_string()))
}

/// Run git or file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, MemoryError> + Send + 'static,
) -> Result<T, MemoryError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|err| Err(MemoryError::Git(format!("the memory task failed: {err}"))))
}

/// Whether the memory's history exists yet (opening it would create it).
fn has_repo(memory: &Memory) -> bool {
    memory.has_history()
}

/// The confirmation page for restoring `rev`.
fn confirm(login: &Login, rev: &str) -> Response {
    let body = html! {
        p {
            "Put the memory files back as they were at " code { (short(rev)) } "? "
            "Edits made since the last commit are saved in a commit first, and the restore is a new commit, so it can be undone from this page too."
        }
        form.stack method="post" action="/memory/restore" {
            input type="hidden" name="csrf" value=(login.csrf);
            input type="hidden" name="rev" value=(rev);
            input type="hidden" name="confirm" value="yes";
            div {
                button.danger type="submit" { "Restore " (short(rev)) }
                " "
                a href="/memory" { "Cancel" }
            }
        }
    };
    layout::page("Restore memory", "/memory", &login.csrf, body)
}

/// Everything the page shows, read on a blocking thread.
struct Shown {
    index: Option<String>,
    truncated: bool,
    entries: Vec<Entry>,
    /// Each revision with its diff (cut to `MAX_DIFF_BYTES`).
    history: Vec<(Revision, String)>,
}

fn read(memory: &Memory) -> Result<Shown, MemoryError> {
    let index = memory.index_text()?;
    let truncated = memory.index()?.is_some_and(|i| i.truncated);
    let entries = memory.entries()?;
    let mut history = Vec::new();
    if has_repo(memory) {
        let repo = memory.repo()?;
        for revision in repo.log(REVISIONS)? {
            let mut diff = repo.diff(&revision.id)?;
            if diff.len() > MAX_DIFF_BYTES {
                let mut cut = MAX_DIFF_BYTES;
                while !diff.is_char_boundary(cut) {
                    cut -= 1;
                }
                diff.truncate(cut);
                diff.push_str(&format!(
                    "\n… (cut at {} KB; `git --git-dir {} show {}` shows it all)\n",
                    MAX_DIFF_BYTES / 1024,
                    memory.state().join(pincer_memory::repo::GIT_DIR).display(),
                    short(&revision.id)
                ));
            }
            history.push((revision, diff));
        }
    }
    Ok(Shown {
        index,
        truncated,
        entries,
        history,
    })
}

/// The page, with an action's outcome above it.
async fn render(state: &WebState, login: &Login, outcome: Option<Outcome>) -> Response {
    let (status, flash) = match outcome {
        Some((status, text)) => (status, Some(text)),
        None => (StatusCode::OK, None),
    };
    let memory = state.agent.memory().clone();
    let root = memory.root().to_path_buf();
    let shown = blocking(move || read(&memory)).await;
    let body = html! {
        (layout::flash(&flash))
        @match &shown {
            Err(err) => p.flash.err { "cannot read the memory in " (root.display()) ": " (err) },
            Ok(shown) => (contents(state, login, &root, shown)),
        }
    };
    (status, layout::page("Memory", "/memory", &login.csrf, body)).into_response()
}

fn contents(state: &WebState, login: &Login, root: &std::path::Path, shown: &Shown) -> Markup {
    let tz = state.agent.timezone();
    html! {
        h2 { "MEMORY.md" }
        @match &shown.index {
            Some(text) if !text.trim().is_empty() => {
                pre #memory-index { (text) }
                @if shown.truncated {
                    p.flash.err {
                        "MEMORY.md is over " (pincer_memory::index::MAX_LINES) " lines / "
                        (pincer_memory::index::MAX_BYTES / 1024) " KB; the assistant sees only its head."
                    }
                }
            }
            _ => p.muted { "No memories yet (" (root.join("MEMORY.md").display()) " is empty or missing)." },
        }
        h2 { "Memory files" }
        @if shown.entries.is_empty() {
            p.muted { "None yet: the assistant writes them in memory/ as it learns." }
        } @else {
            @for entry in &shown.entries {
                details.tool {
                    summary {
                        strong { (entry.name) } " · " (entry.kind.as_str())
                        @if !entry.description.is_empty() { " — " (entry.description) }
                    }
                    p.muted {
                        (entry.path())
                        @if let Some(updated) = entry.updated { " · updated " (updated) }
                    }
                    pre { (entry.body) }
                }
            }
        }
        h2 { "History" }
        @if shown.history.is_empty() {
            p.muted { "No revisions yet: the first dream starts the memory repository." }
        } @else {
            p.muted { "Newest first: each dream, restore and saved hand edit, with what it changed." }
            @for (revision, diff) in &shown.history {
                (revision_markup(login, revision, diff, tz))
            }
        }
    }
}

fn revision_markup(
    login: &Login,
    revision: &Revision,
    diff: &str,
    tz: pincer_core::tz::Tz,
) -> Markup {
    let mut lines = revision.message.lines();
    let title = lines.next().unwrap_or_default();
    let rest: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    let id = short(&revision.id);
    html! {
        section.revision id=(format!("rev-{id}")) {
            h3 { code { (id) } " " (title) }
            p.muted {
                (layout::when(revision.time.saturating_mul(1000), tz))
                @if let Some(parent) = &revision.parent { " · before: " code { (short(parent)) } }
            }
            @if !rest.is_empty() {
                ul { @for line in &rest { li { (line) } } }
            }
            details.tool open[diff.len() < 4096] {
                summary { "Diff" }
                (colored(diff))
            }
            form.inline method="post" action="/memory/restore" {
                input type="hidden" name="csrf" value=(login.csrf);
                input type="hidden" name="rev" value=(revision.id);
                button type="submit" { "Restore to " (id) }
            }
        }
    }
}

/// A unified diff with its added, removed and hunk lines marked for the stylesheet.
/// A file's header lines (before its first `@@`) are marked like hunk lines, so a
/// removed line that starts with `--` is never taken for a header.
fn colored(diff: &str) -> Markup {
    let mut in_header = false;
    let marked: Vec<(Option<&str>, &str)> = diff
        .lines()
        .map(|line| {
            if line.starts_with("diff --git ") {
                in_header = true;
            } else if line.starts_with("@@") {
                in_header = false;
                return (Some("hunk"), line);
            }
            let class = if in_header {
                Some("hunk")
            } else if line.starts_with('+') {
                Some("add")
            } else if line.starts_with('-') {
                Some("del")
            } else {
                None
            };
            (class, line)
        })
        .collect();
    html! {
        pre.diff {
            @for (class, line) in marked {
                @match class {
                    Some(class) => { span class=(class) { (line) } "\n" }
                    None => { (line) "\n" }
                }
            }
        }
    }
}
