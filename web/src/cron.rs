//! `/cron`: scheduled jobs — what each runs, when, where its result goes, its next run
//! and its last runs — with Run now, Enable/Disable and Remove, and a form to add one.
//!
//! Adding goes through `cron::create` with the command line's maker (the owner, who
//! may deliver anywhere; the first owner's chat by default), so the panel accepts the
//! same forms and gives the same errors as `pincer cron add`. Run now claims a slot and
//! fires the job through the gateway's scheduler and returns at once; the run records
//! itself when its turn ends. Every change wakes the scheduler to re-read the jobs.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{Markup, html};
use pincer_channels::SessionKey;
use serde::Deserialize;

use super::WebState;
use super::auth::Login;
use super::layout;
use pincer_core::cron::schedule::parse_tz;
use pincer_core::cron::{JobRequest, Maker, Schedule, create, describe, destination};
use pincer_core::store::{Job, now_ms};

/// What an action did: the status to answer with and the flash line.
type Outcome = (StatusCode, Result<String, String>);

/// How many of a job's runs the page lists.
const RUNS_SHOWN: usize = 5;

/// `POST /cron/add`: the fields of `pincer cron add`; an empty field is a flag not given.
#[derive(Deserialize, Default, Clone)]
pub(crate) struct AddForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    cron: String,
    #[serde(default)]
    every: String,
    #[serde(default)]
    at: String,
    #[serde(default)]
    tz: String,
    #[serde(default)]
    prompt: String,
    #[serde(default)]
    deliver: String,
    #[serde(default)]
    session: String,
}

/// `POST /cron/run | enable | disable | remove`: a job's id (or name).
#[derive(Deserialize)]
pub(crate) struct JobForm {
    #[serde(default)]
    job: String,
}

/// `GET /cron`.
pub(crate) async fn page(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
) -> Response {
    render(&state, &login, None, AddForm::default()).await
}

fn given(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// `POST /cron/add`.
pub(crate) async fn add(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<AddForm>,
) -> Response {
    let owners = &state.config.agent.owners;
    let request = JobRequest {
        name: form.name.clone(),
        cron: given(&form.cron),
        every: given(&form.every),
        at: given(&form.at),
        tz: given(&form.tz),
        prompt: form.prompt.clone(),
        // Like the CLI: without a target, results go to the first owner's direct chat.
        deliver: given(&form.deliver).or_else(|| owners.first().cloned()),
        session: given(&form.session),
    };
    let maker = Maker::cli(owners);
    let made = create(
        state.agent.store(),
        request,
        state.agent.timezone(),
        &maker,
        pincer_core::clock::utc(),
    )
    .await;
    match made {
        Ok(job) => {
            state.wake.notify_one();
            let note = if job.deliver.is_none() {
                " There is no delivery target and no agent.owners, so results stay in the job's session (Conversations)."
            } else {
                ""
            };
            let outcome = (
                StatusCode::OK,
                Ok(format!("Added {}.{note}", describe(&job))),
            );
            render(&state, &login, Some(outcome), AddForm::default()).await
        }
        Err(why) => {
            render(
                &state,
                &login,
                Some((StatusCode::BAD_REQUEST, Err(why.to_string()))),
                form,
            )
            .await
        }
    }
}

/// The job a form names, or the outcome saying it is not there.
async fn find(state: &WebState, form: &JobForm) -> Result<Job, Outcome> {
    let wanted = form.job.trim();
    if wanted.is_empty() {
        return Err((
            StatusCode::BAD_REQUEST,
            Err("the form had no job; use the buttons on this page".into()),
        ));
    }
    match state.agent.store().job(wanted).await {
        Ok(Some(job)) => Ok(job),
        Ok(None) => Err((
            StatusCode::NOT_FOUND,
            Err(format!(
                "no job `{wanted}` (removed already?); the jobs are listed below"
            )),
        )),
        Err(err) => Err(store_failed(&err)),
    }
}

fn store_failed(err: &pincer_core::store::StoreError) -> Outcome {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Err(format!("the database failed: {err}; see the gateway's log")),
    )
}

/// `POST /cron/run`: start a run now; the page does not wait for it.
pub(crate) async fn run(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<JobForm>,
) -> Response {
    let outcome = match find(&state, &form).await {
        Ok(job) => run_now(&state, job).await,
        Err(outcome) => outcome,
    };
    render(&state, &login, Some(outcome), AddForm::default()).await
}

async fn run_now(state: &WebState, job: Job) -> Outcome {
    let Some(scheduler) = &state.scheduler else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Err(format!(
                "this gateway runs no scheduler; run the job with `pincer cron run {}` on the machine Pincer runs on",
                job.name
            )),
        );
    };
    // A second click while a run is under way would start a second run.
    match state.agent.store().unfinished_runs().await {
        Ok(runs) if runs.iter().any(|(id, _)| *id == job.id) => {
            return (
                StatusCode::CONFLICT,
                Err(format!(
                    "job {} is already running; reload this page to see when it is done",
                    job.name
                )),
            );
        }
        Ok(_) => {}
        Err(err) => return store_failed(&err),
    }
    let slot = now_ms();
    match state.agent.store().claim_run(job.id, slot, "running").await {
        Ok(true) => {}
        Ok(false) => {
            return (
                StatusCode::CONFLICT,
                Err(format!("job {} is already running", job.name)),
            );
        }
        Err(err) => return store_failed(&err),
    }
    let (id, name, to) = (job.id, job.name.clone(), destination(&job.deliver));
    // The returned task records the run when its turn ends; the page does not wait.
    match scheduler.fire(job, slot).await {
        Some(_) => (
            StatusCode::OK,
            Ok(format!(
                "Started job #{id} {name}; its result goes to {to}. Reload this page to see how it went."
            )),
        ),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            Err("Pincer is shutting down; the run did not start".into()),
        ),
    }
}

/// `POST /cron/enable`.
pub(crate) async fn enable(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<JobForm>,
) -> Response {
    set_enabled(state, login, form, true).await
}

/// `POST /cron/disable`.
pub(crate) async fn disable(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<JobForm>,
) -> Response {
    set_enabled(state, login, form, false).await
}

async fn set_enabled(state: Arc<WebState>, login: Login, form: JobForm, on: bool) -> Response {
    let outcome = match find(&state, &form).await {
        Ok(job) => match state.agent.store().set_job_enabled(job.id, on).await {
            Ok(()) => {
                state.wake.notify_one();
                let done = if on { "Enabled" } else { "Disabled" };
                (
                    StatusCode::OK,
                    Ok(format!("{done} job #{} {}.", job.id, job.name)),
                )
            }
            Err(err) => store_failed(&err),
        },
        Err(outcome) => outcome,
    };
    render(&state, &login, Some(outcome), AddForm::default()).await
}

/// `POST /cron/remove`.
pub(crate) async fn remove(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<JobForm>,
) -> Response {
    let outcome = match find(&state, &form).await {
        Ok(job) => match state.agent.store().remove_job(job.id).await {
            Ok(()) => {
                state.wake.notify_one();
                (
                    StatusCode::OK,
                    Ok(format!("Removed job #{} {}.", job.id, job.name)),
                )
            }
            Err(err) => store_failed(&err),
        },
        Err(outcome) => outcome,
    };
    render(&state, &login, Some(outcome), AddForm::default()).await
}

/// A job's schedule in words, in its own zone.
fn schedule(job: &Job) -> String {
    let tz = parse_tz(&job.tz).unwrap_or(pincer_core::tz::Tz::UTC);
    Schedule::from_stored(&job.kind, &job.expr)
        .map(|s| s.describe(tz))
        .unwrap_or_else(|e| e.to_string())
}

/// What the page shows of one job besides the job itself.
struct Shown {
    job: Job,
    /// (slot, status, error), newest first.
    runs: Vec<(i64, String, Option<String>)>,
    /// The last run's conversation, when it is still stored.
    transcript: Option<i64>,
}

async fn shown(state: &WebState, job: Job) -> Shown {
    let store = &state.agent.store();
    let runs = store.job_runs(job.id, RUNS_SHOWN).await.unwrap_or_default();
    let key = match (&job.session, runs.first()) {
        (Some(name), _) => Some(SessionKey::scheduled(format!("shared:{name}")).to_string()),
        (None, Some((slot, _, _))) => {
            Some(SessionKey::scheduled(format!("{}:{}", job.id, slot / 1000)).to_string())
        }
        (None, None) => None,
    };
    let transcript = match key {
        Some(key) => store.find_session(&key).await.ok(),
        None => None,
    };
    Shown {
        job,
        runs,
        transcript,
    }
}

/// The page, with an action's outcome above it and the add form filled with `form`.
async fn render(
    state: &WebState,
    login: &Login,
    outcome: Option<Outcome>,
    form: AddForm,
) -> Response {
    let (status, flash) = match outcome {
        Some((status, text)) => (status, Some(text)),
        None => (StatusCode::OK, None),
    };
    let jobs = match state.agent.store().jobs().await {
        Ok(jobs) => {
            let mut all = Vec::new();
            for job in jobs {
                all.push(shown(state, job).await);
            }
            Ok(all)
        }
        Err(err) => Err(err),
    };
    let body = html! {
        (layout::flash(&flash))
        @match &jobs {
            Err(err) => p.flash.err { "cannot read the scheduled jobs: " (err) },
            Ok(jobs) if jobs.is_empty() => p.muted { "No scheduled jobs yet. Add one below." },
            Ok(jobs) => (table(state, login, jobs)),
        }
        h2 { "Add a job" }
        (add_form(state, login, &form))
    };
    (
        status,
        layout::page("Scheduled tasks", "/cron", &login.csrf, body),
    )
        .into_response()
}

fn table(state: &WebState, login: &Login, jobs: &[Shown]) -> Markup {
    let tz = state.agent.timezone();
    html! {
        div.table-wrap { table {
            tr { th { "Job" } th { "When" } th { "Results to" } th { "Next run" } th { "Last run" } th { "" } }
            @for shown in jobs {
                @let job = &shown.job;
                tr id=(format!("job-{}", job.id)) {
                    td {
                        strong { (job.name) } " " span.muted { "#" (job.id) }
                        @if !job.enabled { br; span.state-down { "disabled" } }
                        @if job.tier != pincer_config::Tier::Owner {
                            br; span.muted { "made by " (job.creator) ", runs as " (job.tier.name()) }
                        }
                        details.tool { summary { "Prompt" } pre { (job.prompt) } }
                    }
                    td { (schedule(job)) }
                    td {
                        (destination(&job.deliver))
                        @if let Some(session) = &job.session { br; span.muted { "session " (session) } }
                    }
                    td {
                        @match (job.enabled, job.next_run) {
                            (true, Some(next)) => (layout::when(next, tz)),
                            (false, _) => span.muted { "—" },
                            (true, None) => span.muted { "none" },
                        }
                    }
                    td { (last_run(shown, tz)) }
                    td { (actions(login, job)) }
                }
            }
        } }
        p.muted { "Times are in " (tz.name()) " (agent.timezone)." }
    }
}

fn last_run(shown: &Shown, tz: pincer_core::tz::Tz) -> Markup {
    let job = &shown.job;
    html! {
        @match (&job.last_status, job.last_run) {
            (Some(status), Some(at)) => {
                span class=(status_class(status)) { (status) } " " (layout::when(at, tz))
            }
            (Some(status), None) => span class=(status_class(status)) { (status) },
            _ => {
                @if shown.runs.is_empty() { span.muted { "never run" } }
            }
        }
        @if let Some(error) = &job.last_error { br; span.flash.err { (error) } }
        @if job.failures > 0 { br; span.muted { (job.failures) " failures in a row" } }
        @if let Some(id) = shown.transcript {
            br; a href=(format!("/conversations/{id}")) { "Last run's conversation" }
        }
        @if !shown.runs.is_empty() {
            details.tool {
                summary { "Last " (shown.runs.len()) " runs" }
                ul {
                    @for (slot, status, error) in &shown.runs {
                        li {
                            (layout::when(*slot, tz)) " "
                            span class=(status_class(status)) { (status) }
                            @if let Some(error) = error { ": " (error) }
                        }
                    }
                }
            }
        }
    }
}

fn status_class(status: &str) -> &'static str {
    match status {
        "ok" => "state-up",
        "failed" => "state-down",
        _ => "state-starting",
    }
}

fn actions(login: &Login, job: &Job) -> Markup {
    let id = job.id.to_string();
    html! {
        form.inline method="post" action="/cron/run" {
            input type="hidden" name="csrf" value=(login.csrf);
            input type="hidden" name="job" value=(id);
            button.primary type="submit" { "Run now" }
        }
        " "
        @if job.enabled {
            form.inline method="post" action="/cron/disable" {
                input type="hidden" name="csrf" value=(login.csrf);
                input type="hidden" name="job" value=(id);
                button type="submit" { "Disable" }
            }
        } @else {
            form.inline method="post" action="/cron/enable" {
                input type="hidden" name="csrf" value=(login.csrf);
                input type="hidden" name="job" value=(id);
                button type="submit" { "Enable" }
            }
        }
        " "
        form.inline method="post" action="/cron/remove"
            data-confirm=(format!("Remove the job {}?", job.name)) {
            input type="hidden" name="csrf" value=(login.csrf);
            input type="hidden" name="job" value=(id);
            button.danger type="submit" { "Remove" }
        }
    }
}

fn add_form(state: &WebState, login: &Login, form: &AddForm) -> Markup {
    let owners = &state.config.agent.owners;
    let deliver_hint = owners
        .first()
        .cloned()
        .unwrap_or_else(|| "telegram:123456789".into());
    html! {
        form.stack method="post" action="/cron/add" {
            input type="hidden" name="csrf" value=(login.csrf);
            label { "Name (no spaces, not a number)"
                input type="text" name="name" value=(form.name) placeholder="morning-brief" required; }
            p.muted { "When: fill exactly one of the next three." }
            label { "Cron expression (minute hour day month weekday)"
                input type="text" name="cron" value=(form.cron) placeholder="30 8 * * 1-5"; }
            label { "Or every (interval)"
                input type="text" name="every" value=(form.every) placeholder="30m, 2h, 1d"; }
            label { "Or once at (local time)"
                input type="text" name="at" value=(form.at) placeholder="2026-11-23T09:00"; }
            label { "Time zone (empty: " (state.agent.timezone().name()) ")"
                input type="text" name="tz" value=(form.tz) placeholder=(state.agent.timezone().name()); }
            label { "Prompt: what the assistant should do when it runs"
                textarea name="prompt" rows="4" required { (form.prompt) } }
            label { "Results to, channel:chat (empty: " (owners.first().map_or("kept in the job's session", String::as_str)) ")"
                input type="text" name="deliver" value=(form.deliver) placeholder=(deliver_hint); }
            label { "Shared session name (empty: a fresh session each run)"
                input type="text" name="session" value=(form.session); }
            div { button.primary type="submit" { "Add job" } }
        }
    }
}
