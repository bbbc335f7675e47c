//! The Scheduled tasks page: adding a job with the CLI's validation and messages, Run
//! now through the gateway's scheduler, Enable/Disable and Remove.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use pincer::store::Job;
use pincer_fakes::Step;

use super::harness::Panel;

const OWNERS: &str = "[agent]\nowners = [\"telegram:1\"]\ntimezone = \"Europe/Paris\"\n";

/// `text` as maud writes it into a page.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

async fn only_job(panel: &Panel) -> Job {
    let jobs = panel.state.agent.store().jobs().await.unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    jobs.into_iter().next().unwrap()
}

async fn add_morning(panel: &Panel) -> Job {
    let page = panel
        .post(
            "/cron/add",
            &[
                ("name", "morning"),
                ("cron", "30 8 * * 1-5"),
                ("every", ""),
                ("at", ""),
                ("tz", ""),
                ("prompt", "Say good morning"),
                ("deliver", ""),
                ("session", ""),
            ],
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("Added #"), "{}", page.text);
    only_job(panel).await
}

#[tokio::test]
async fn adding_a_job_validates_like_the_cli() {
    let panel = Panel::start(OWNERS).await;
    let page = panel.get("/cron").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("No scheduled jobs yet"), "{}", page.text);

    // A bad cron expression: the CLI's words, the form kept as typed, nothing stored.
    let page = panel
        .post(
            "/cron/add",
            &[
                ("name", "morning"),
                ("cron", "61 8 * * *"),
                ("every", ""),
                ("prompt", "Say good morning"),
            ],
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.text);
    let cli = pincer::cron::Schedule::cron("61 8 * * *")
        .unwrap_err()
        .to_string();
    assert!(cli.contains("minute 61 is out of range"), "{cli}");
    assert!(page.text.contains(&escaped(&cli)), "{cli}\n{}", page.text);
    assert!(page.text.contains("value=\"61 8 * * *\""), "{}", page.text);
    // Two schedules at once, and no schedule at all.
    for fields in [
        [("cron", "30 8 * * *"), ("every", "30m")],
        [("cron", ""), ("every", "")],
    ] {
        let mut all = vec![("name", "morning"), ("prompt", "Say good morning")];
        all.extend(fields);
        let page = panel.post("/cron/add", &all).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.text);
        assert!(
            page.text.contains("give exactly one of cron, every or at"),
            "{}",
            page.text
        );
    }
    let page = panel
        .post(
            "/cron/add",
            &[("name", "morning"), ("every", "30m"), ("tz", "Mars/Base")],
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.text.contains("a job needs a prompt"), "{}", page.text);
    assert!(panel.state.agent.store().jobs().await.unwrap().is_empty());

    // A good one: results go to the first owner by default, in the agent's zone.
    let job = add_morning(&panel).await;
    assert_eq!(job.name, "morning");
    assert_eq!(job.tz, "Europe/Paris");
    assert!(job.enabled);
    assert!(job.next_run.is_some());
    let to = job.deliver.as_ref().unwrap();
    assert_eq!(
        (to.channel.as_str(), to.chat_id.as_str()),
        ("telegram", "1")
    );
    let page = panel.get("/cron").await;
    assert!(page.text.contains("morning"), "{}", page.text);
    assert!(
        page.text.contains("(cron 30 8 * * 1-5, Europe/Paris)"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("telegram:1 (direct chat)"),
        "{}",
        page.text
    );
    assert!(page.text.contains("never run"), "{}", page.text);

    // The same name again: the store's message, as the CLI shows it.
    let page = panel
        .post(
            "/cron/add",
            &[("name", "morning"), ("every", "2h"), ("prompt", "again")],
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.text);
    assert!(
        page.text.contains("a job named `morning` exists already"),
        "{}",
        page.text
    );
    assert_eq!(panel.state.agent.store().jobs().await.unwrap().len(), 1);
}

#[tokio::test]
async fn disable_enable_and_remove_a_job() {
    let panel = Panel::start(OWNERS).await;
    let store = &panel.state.agent.store();
    let job = add_morning(&panel).await;
    let id = job.id.to_string();

    let page = panel.post("/cron/disable", &[("job", &id)]).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text.contains(&format!("Disabled job #{id} morning.")),
        "{}",
        page.text
    );
    assert!(!only_job(&panel).await.enabled);
    assert!(
        page.text.contains("action=\"/cron/enable\""),
        "{}",
        page.text
    );

    let page = panel.post("/cron/enable", &[("job", &id)]).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(only_job(&panel).await.enabled);
    assert!(
        page.text.contains("action=\"/cron/disable\""),
        "{}",
        page.text
    );

    let page = panel.post("/cron/remove", &[("job", &id)]).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text.contains(&format!("Removed job #{id} morning.")),
        "{}",
        page.text
    );
    assert!(store.jobs().await.unwrap().is_empty());
    let page = panel.post("/cron/remove", &[("job", &id)]).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND, "{}", page.text);
    assert!(
        page.text.contains(&format!("no job `{id}`")),
        "{}",
        page.text
    );
    let page = panel.post("/cron/run", &[]).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.text);
}

#[tokio::test]
async fn run_now_starts_the_job_and_its_result_is_recorded() {
    let panel = Panel::start(OWNERS).await;
    let job = add_morning(&panel).await;
    panel.fake.push(Step::text("Good morning, Ana."));
    let page = panel
        .post("/cron/run", &[("job", &job.id.to_string())])
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text
            .contains(&format!("Started job #{} morning", job.id)),
        "{}",
        page.text
    );
    // The run finishes in the background; wait for it to be recorded.
    let deadline = Instant::now() + Duration::from_secs(20);
    let job = loop {
        let job = only_job(&panel).await;
        if job.last_status.is_some() {
            break job;
        }
        assert!(Instant::now() < deadline, "the run was never recorded");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(job.last_status.as_deref(), Some("ok"), "{job:?}");
    assert!(job.enabled, "a cron job stays after running");
    let seen = panel.fake.requests();
    assert!(
        seen.iter()
            .any(|r| r.body.to_string().contains("Say good morning")),
        "the model got the job's prompt"
    );
    let page = panel.get("/cron").await;
    assert!(
        page.text.contains("<span class=\"state-up\">ok</span>"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("Last run's conversation"),
        "{}",
        page.text
    );
    // While a run is under way, Run now does not start a second one.
    let store = &panel.state.agent.store();
    assert!(store.claim_run(job.id, 1_000, "running").await.unwrap());
    let before = panel.fake.requests().len();
    let page = panel
        .post("/cron/run", &[("job", &job.id.to_string())])
        .await;
    assert_eq!(page.status, StatusCode::CONFLICT, "{}", page.text);
    assert!(
        page.text.contains("job morning is already running"),
        "{}",
        page.text
    );
    assert_eq!(store.job_runs(job.id, 10).await.unwrap().len(), 2);
    assert_eq!(panel.fake.requests().len(), before);
}
