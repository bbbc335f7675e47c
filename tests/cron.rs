//! Scheduled jobs: the scheduler on tokio's paused clock with an injected wall clock
//! (fire times across a DST change, no double fire after a restart, missed runs, failing
//! and one-shot jobs), and end to end through the binary: a job made from a Telegram
//! chat is delivered to that chat, and `pincer cron` handles bad input.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use common::wait_until;
use pincer::cron::{JobRequest, Maker, Scheduler, TokioClock, create};
use pincer::store::Store;
use pincer_channels::{Inbound, OutboundBody, OutboundMessage, Target};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

struct Rig {
    _dir: tempfile::TempDir,
    store: Store,
    fired: mpsc::Receiver<Inbound>,
    outbound: mpsc::Receiver<OutboundMessage>,
    scheduler: Arc<Scheduler>,
}

fn new_rig(start: DateTime<Utc>, grace: Duration) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("pincer.db")).unwrap();
    let (bus, fired) = mpsc::channel(64);
    let (outbound_tx, outbound) = mpsc::channel(64);
    let scheduler = Arc::new(Scheduler {
        store: store.clone(),
        bus,
        outbound: outbound_tx,
        clock: Arc::new(TokioClock::starting_at(start)),
        grace,
        wake: Arc::new(Notify::new()),
        heartbeat: None,
    });
    Rig {
        _dir: dir,
        store,
        fired,
        outbound,
        scheduler,
    }
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

async fn add(
    store: &Store,
    name: &str,
    cron: Option<&str>,
    every: Option<&str>,
    at: Option<&str>,
    tz: &str,
    now: DateTime<Utc>,
) -> i64 {
    let request = JobRequest {
        name: name.into(),
        cron: cron.map(Into::into),
        every: every.map(Into::into),
        at: at.map(Into::into),
        tz: Some(tz.into()),
        prompt: "do the thing".into(),
        deliver: Some("telegram:42".into()),
        session: None,
    };
    create(
        store,
        request,
        pincer_core::tz::Tz::UTC,
        &Maker::cli(&[]),
        now,
    )
    .await
    .unwrap()
    .id
}

/// The slot (unix ms) a fired message is for: its id is `cron:<job>:<slot>`.
fn slot(fired: &Inbound) -> DateTime<Utc> {
    let ms: i64 = fired
        .message
        .message_id
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    Utc.timestamp_millis_opt(ms).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_daily_job_keeps_its_local_hour_across_a_dst_change() {
    let start = utc(2026, 10, 24, 5, 0); // 07:00 in Paris, summer time
    let mut rig = new_rig(start, Duration::from_secs(3600));
    add(
        &rig.store,
        "morning",
        Some("0 8 * * *"),
        None,
        None,
        "Europe/Paris",
        start,
    )
    .await;
    let shutdown = CancellationToken::new();
    tokio::spawn(Arc::clone(&rig.scheduler).run(shutdown.clone()));
    let mut slots = Vec::new();
    for _ in 0..3 {
        let message = tokio::time::timeout(Duration::from_secs(4 * 86_400), rig.fired.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            message.message.target(),
            Target {
                channel: "telegram".into(),
                chat_id: "42".into(),
                thread_id: None,
                user: false,
            }
        );
        slots.push(slot(&message));
        message.done.unwrap().fire(Ok(()));
    }
    // 08:00 Paris is 06:00 UTC in summer time and 07:00 UTC after the change on the 25th.
    assert_eq!(
        slots,
        [
            utc(2026, 10, 24, 6, 0),
            utc(2026, 10, 25, 7, 0),
            utc(2026, 10, 26, 7, 0)
        ]
    );
    shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_restart_never_fires_a_slot_twice() {
    let start = utc(2026, 11, 23, 8, 59);
    let mut rig = new_rig(start, Duration::from_secs(3600));
    let id = add(
        &rig.store,
        "nine",
        Some("0 9 * * *"),
        None,
        None,
        "UTC",
        start,
    )
    .await;
    tokio::time::advance(Duration::from_secs(61)).await; // the paused clock: to 09:00
    rig.scheduler.tick().await;
    let first = rig.fired.try_recv().expect("fired at 09:00");
    assert_eq!(slot(&first), utc(2026, 11, 23, 9, 0));
    // A crash lost the move to the next slot: the job still says 09:00 today.
    rig.store
        .set_next_run(id, Some(utc(2026, 11, 23, 9, 0).timestamp_millis()))
        .await
        .unwrap();
    let restarted = new_rig(start, Duration::from_secs(3600));
    let again = Scheduler {
        store: rig.store.clone(),
        bus: restarted.scheduler.bus.clone(),
        outbound: restarted.scheduler.outbound.clone(),
        clock: Arc::clone(&rig.scheduler.clock),
        grace: Duration::from_secs(3600),
        wake: Arc::new(Notify::new()),
        heartbeat: None,
    };
    again.tick().await;
    let mut restarted = restarted;
    assert!(
        restarted.fired.try_recv().is_err(),
        "the 09:00 slot must not fire again"
    );
    let job = rig.store.job("nine").await.unwrap().unwrap();
    assert_eq!(
        job.next_run,
        Some(utc(2026, 11, 24, 9, 0).timestamp_millis()),
        "but the schedule moves on"
    );
}

#[tokio::test(start_paused = true)]
async fn a_missed_run_within_grace_runs_once_and_an_older_one_is_skipped() {
    let created = utc(2026, 11, 23, 6, 0);
    let mut rig = new_rig(utc(2026, 11, 23, 9, 30), Duration::from_secs(3600));
    add(
        &rig.store,
        "recent",
        Some("0 9 * * *"),
        None,
        None,
        "UTC",
        created,
    )
    .await; // missed by 30 min
    add(
        &rig.store,
        "old",
        Some("0 7 * * *"),
        None,
        None,
        "UTC",
        created,
    )
    .await; // missed by 2.5 h
    rig.scheduler.tick().await;
    let fired = rig.fired.try_recv().expect("the recent miss runs");
    assert!(fired.message.text.contains("do the thing"));
    assert!(
        rig.fired.try_recv().is_err(),
        "only once, and not the old one"
    );
    rig.scheduler.tick().await;
    assert!(rig.fired.try_recv().is_err(), "a second look fires nothing");
    let old = rig.store.job("old").await.unwrap().unwrap();
    let runs = rig.store.job_runs(old.id, 5).await.unwrap();
    assert_eq!(runs[0].1, "skipped");
    assert_eq!(
        old.next_run,
        Some(utc(2026, 11, 24, 7, 0).timestamp_millis())
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_job_is_disabled_after_ten_failures_and_the_owner_told() {
    let start = utc(2026, 11, 23, 9, 0);
    let mut rig = new_rig(start, Duration::from_secs(3600));
    add(&rig.store, "flaky", None, Some("1m"), None, "UTC", start).await;
    let shutdown = CancellationToken::new();
    tokio::spawn(Arc::clone(&rig.scheduler).run(shutdown.clone()));
    for _ in 0..10 {
        let message = tokio::time::timeout(Duration::from_secs(600), rig.fired.recv())
            .await
            .unwrap()
            .unwrap();
        message
            .done
            .unwrap()
            .fire(Err(pincer_channels::TurnFailed("the model is down".into())));
    }
    let notice = tokio::time::timeout(Duration::from_secs(60), rig.outbound.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notice.target.chat_id, "42");
    assert!(
        matches!(&notice.body, OutboundBody::Notice(text) if text.contains("disabled") && text.contains("the model is down")),
        "{notice:?}"
    );
    assert!(!rig.store.job("flaky").await.unwrap().unwrap().enabled);
    assert!(
        tokio::time::timeout(Duration::from_secs(600), rig.fired.recv())
            .await
            .is_err(),
        "a disabled job does not run"
    );
    shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_one_shot_job_runs_once_and_is_gone() {
    let start = utc(2026, 11, 23, 8, 0);
    let mut rig = new_rig(start, Duration::from_secs(3600));
    add(
        &rig.store,
        "reminder",
        None,
        None,
        Some("2026-11-23T09:15"),
        "UTC",
        start,
    )
    .await;
    let shutdown = CancellationToken::new();
    tokio::spawn(Arc::clone(&rig.scheduler).run(shutdown.clone()));
    let message = tokio::time::timeout(Duration::from_secs(7200), rig.fired.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(slot(&message), utc(2026, 11, 23, 9, 15));
    message.done.unwrap().fire(Ok(()));
    // The paused clock moves on only while every task waits, so this polls until the
    // scheduler has dealt with the finished run.
    wait_until("the finished one-shot job removing itself", async || {
        rig.store.job("reminder").await.unwrap().is_none()
    })
    .await;
    assert!(
        tokio::time::timeout(Duration::from_secs(86_400), rig.fired.recv())
            .await
            .is_err()
    );
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pincer_cron_rejects_bad_schedules_with_an_example_and_lists_jobs() {
    let fake = pincer_fakes::FakeModel::start().await;
    let home = common::TestHome::openai(&fake);
    home.run(&[
        "cron",
        "add",
        "--name",
        "x",
        "--cron",
        "0 25 * * *",
        "--prompt",
        "p",
    ])
    .fails_with(&["30 8 * * 1-5"]);
    home.run(&[
        "cron",
        "add",
        "--name",
        "x",
        "--every",
        "30m",
        "--tz",
        "Mars/Olympus",
        "--prompt",
        "p",
    ])
    .fails_with(&["Europe/Paris"]);
    home.run(&["cron", "add", "--name", "x", "--prompt", "p"])
        .fails_with(&["exactly one of"]);
    let added = home.run(&[
        "cron",
        "add",
        "--name",
        "brief",
        "--cron",
        "30 8 * * 1-5",
        "--tz",
        "Europe/Paris",
        "--prompt",
        "summarise my day",
        "--deliver",
        "telegram:42",
    ]);
    assert!(added.ok(), "{added:?}");
    home.run(&[
        "cron", "add", "--name", "brief", "--every", "1h", "--prompt", "p",
    ])
    .fails_with(&["exists already"]);
    let list = home.run(&["cron", "list"]).stdout;
    assert!(
        list.contains("brief") && list.contains("telegram:42") && list.contains("Europe/Paris"),
        "{list}"
    );
    // Run it now, here: the result is printed (telegram is not enabled in this config).
    let run = home.run(&["cron", "run", "brief"]);
    assert!(run.ok(), "{run:?}");
    assert!(run.stdout.contains("summarise my day"), "{}", run.stdout);
    assert!(home.run(&["cron", "list"]).stdout.contains("last ok"));
    assert!(home.run(&["cron", "remove", "brief"]).ok());
    home.run(&["cron", "remove", "brief"])
        .fails_with(&["no job"]);
}

fn heartbeat_rig(start: DateTime<Utc>, workspace: &std::path::Path, max_day_tokens: u64) -> Rig {
    let mut rig = new_rig(start, Duration::from_secs(3600));
    let heartbeat = pincer::cron::Heartbeat::new(
        Duration::from_secs(1800),
        workspace.to_path_buf(),
        Target {
            channel: "telegram".into(),
            chat_id: "42".into(),
            thread_id: None,
            user: false,
        },
        max_day_tokens,
        pincer_core::tz::Tz::UTC,
    );
    let scheduler = Scheduler {
        store: rig.store.clone(),
        bus: rig.scheduler.bus.clone(),
        outbound: rig.scheduler.outbound.clone(),
        clock: Arc::clone(&rig.scheduler.clock),
        grace: Duration::from_secs(3600),
        wake: Arc::new(Notify::new()),
        heartbeat: Some(heartbeat),
    };
    rig.scheduler = Arc::new(scheduler);
    rig
}

#[tokio::test(start_paused = true)]
async fn the_heartbeat_beats_only_with_tasks_and_within_its_budget() {
    let workspace = tempfile::tempdir().unwrap();
    let start = utc(2026, 11, 23, 9, 0);
    let mut rig = heartbeat_rig(start, workspace.path(), 50_000);
    let shutdown = CancellationToken::new();
    tokio::spawn(Arc::clone(&rig.scheduler).run(shutdown.clone()));
    // No HEARTBEAT.md (or one with only headings): no beat.
    std::fs::write(workspace.path().join("HEARTBEAT.md"), "# Heartbeat\n").unwrap();
    assert!(
        tokio::time::timeout(Duration::from_secs(3700), rig.fired.recv())
            .await
            .is_err()
    );
    std::fs::write(
        workspace.path().join("HEARTBEAT.md"),
        "# Heartbeat\n- check the build status\n",
    )
    .unwrap();
    let beat = tokio::time::timeout(Duration::from_secs(1900), rig.fired.recv())
        .await
        .unwrap()
        .unwrap()
        .message;
    assert!(
        beat.text.contains("check the build status") && beat.text.contains("HEARTBEAT_OK"),
        "{}",
        beat.text
    );
    assert_eq!(beat.target().chat_id, "42");
    assert!(
        beat.session_key()
            .to_string()
            .starts_with("cron:heartbeat:")
    );
    shutdown.cancel();

    // A spent budget stops the beats for the day.
    let mut spent = heartbeat_rig(start, workspace.path(), 0);
    let shutdown = CancellationToken::new();
    tokio::spawn(Arc::clone(&spent.scheduler).run(shutdown.clone()));
    assert!(
        tokio::time::timeout(Duration::from_secs(3700), spent.fired.recv())
            .await
            .is_err()
    );
    shutdown.cancel();
}

/// No idle spending: a HEARTBEAT.md that is only a template — headings and help in a
/// comment of many lines — makes no beat, so no model call, through a whole day of
/// beats every half hour.
#[tokio::test(start_paused = true)]
async fn a_heartbeat_template_of_headings_and_comments_costs_nothing_all_day() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("HEARTBEAT.md"),
        "# Heartbeat\n\n<!--\nWhat to check on every beat, one per line, e.g.\n- is the build green?\n- anything urgent in the inbox?\n-->\n\n## Done\n",
    )
    .unwrap();
    let mut rig = heartbeat_rig(utc(2026, 11, 23, 0, 0), workspace.path(), 50_000);
    let shutdown = CancellationToken::new();
    tokio::spawn(Arc::clone(&rig.scheduler).run(shutdown.clone()));
    let day = Duration::from_secs(24 * 3600 + 60);
    assert!(
        tokio::time::timeout(day, rig.fired.recv()).await.is_err(),
        "a template started a turn"
    );
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_with_nothing_to_say_delivers_nothing() {
    let fake = pincer_fakes::FakeModel::start().await;
    let home = common::TestHome::openai(&fake);
    let paths = pincer::Home::resolve(Some(home.path().to_path_buf()), None);
    let config = pincer_config::load(&paths.config_file, &paths.security_file, &[]).unwrap();
    let shutdown = CancellationToken::new();
    let mut running = pincer::start(
        &paths,
        &config,
        &pincer_config::Secrets::default(),
        &[],
        shutdown.clone(),
    )
    .unwrap();
    let to = Target {
        channel: "telegram".into(),
        chat_id: "42".into(),
        thread_id: None,
        user: false,
    };
    for (n, answer) in [(1, "HEARTBEAT_OK"), (2, "Your build is red.")] {
        fake.push(pincer_fakes::Step::text(answer));
        let (done, outcome) = pincer_channels::Done::pair();
        let run = pincer::cron::JobRun {
            name: "heartbeat",
            prompt: "check",
            creator: "terminal:local",
            tier: pincer_config::Tier::Owner,
            in_group: false,
        };
        let beat = pincer::cron::system_message(
            format!("heartbeat:{n}"),
            format!("hb-{n}"),
            run,
            Some(to.clone()),
            done,
        );
        running.inbound.send(beat).await.unwrap();
        assert_eq!(outcome.await.unwrap(), Ok(()));
    }
    let mut bodies = Vec::new();
    while let Ok(message) = running.outbound.try_recv() {
        bodies.push(message.body);
    }
    assert!(
        !bodies.iter().any(|b| b
            .complete_text()
            .is_some_and(|text| text.contains("HEARTBEAT_OK"))),
        "{bodies:?}"
    );
    assert!(
        bodies
            .iter()
            .any(|b| b.complete_text() == Some("Your build is red.")),
        "{bodies:?}"
    );
    assert!(
        !bodies.iter().any(|b| matches!(
            b,
            OutboundBody::Chunk(
                pincer_channels::Chunk::TextDelta { .. } | pincer_channels::Chunk::Start { .. }
            )
        )),
        "scheduled runs do not stream"
    );
    shutdown.cancel();
}
