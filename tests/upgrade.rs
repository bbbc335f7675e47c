//! An upgrade: a home written by the release build of an older Pincer (commit 001aadc,
//! database schema 7, the memory's git repository still in the workspace; the fixture
//! and how it was made are in tests/fixtures/upgrade/) opens with today's build, is
//! migrated, still holds its conversation, job, pairing and memory history, and answers.

use crate::common;

use std::path::Path;

use common::TestHome;
use pincer_fakes::{FakeModel, Step};

/// The home the older release left, as a gzipped tar.
const FIXTURE: &str = "tests/fixtures/upgrade/001aadc/home.tar.gz";
/// Its database schema: migrations 1 to 7.
const OLD_SCHEMA: i64 = 7;

/// Unpack the fixture into `home` and point its model provider at `fake`.
fn unpack(home: &TestHome, fake: &FakeModel) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    let file = std::fs::File::open(&fixture).expect("the upgrade fixture");
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(home.path())
        .expect("unpack the fixture");
    common::set_mode(home.path(), 0o700);
    common::set_mode(&home.path().join(".security.yml"), 0o600);
    let config = std::fs::read_to_string(home.config_file()).unwrap();
    let base = regex::Regex::new(r#"(?m)^base_url = ".*"$"#).unwrap();
    assert!(base.is_match(&config), "{config}");
    let config = base.replace(&config, format!("base_url = \"{}\"", fake.openai_base()));
    home.write_config(&config);
}

fn schema(home: &TestHome) -> i64 {
    let db = rusqlite::Connection::open(home.path().join("pincer.db")).unwrap();
    db.query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_made_by_an_older_release_opens_migrates_and_answers() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    unpack(&home, &fake);
    assert_eq!(schema(&home), OLD_SCHEMA, "the fixture is the old schema");
    assert!(
        home.workspace().join(".git").is_dir(),
        "the old memory layout"
    );

    let list = home.run(&["sessions", "list"]);
    assert!(list.ok(), "{list:?}");
    assert!(
        list.stdout.contains("terminal:dm:local") && list.stdout.contains("4 messages"),
        "{}",
        list.stdout
    );
    assert_eq!(
        schema(&home),
        pincer::store::schema_version() as i64,
        "opening migrated the database"
    );
    let transcript = home.transcript();
    for said in [
        "I moved to Porto last week",
        "Porto is lovely in the autumn.",
        "Remind me to water the tomatoes",
    ] {
        assert!(transcript.contains(said), "no {said:?} in:\n{transcript}");
    }
    let jobs = home.run(&["cron", "list"]);
    assert!(jobs.stdout.contains("water"), "{jobs:?}");
    let pairing = home.run(&["pairing", "list"]);
    assert!(pairing.stdout.contains("telegram:4242"), "{pairing:?}");
    let status = home.run(&["status"]);
    assert!(status.ok(), "{status:?}");
    assert!(status.stdout.contains("Sessions: 2"), "{}", status.stdout);

    fake.push(Step::text("Welcome back, Ana."));
    let chat = home.run(&["chat", "-m", "I'm back"]);
    assert!(chat.ok(), "{chat:?}");
    assert_eq!(chat.stdout, "Welcome back, Ana.\n");
    // The model saw the old conversation before the new message.
    let request = fake.requests().last().unwrap().body.to_string();
    assert!(request.contains("I moved to Porto last week"), "{request}");

    // The memory's history moved out of the workspace with its commits.
    let log = home.run(&["memory", "log"]);
    assert!(log.ok(), "{log:?}");
    for commit in ["Dream: 1 updated", "Start the memory repository"] {
        assert!(
            log.stdout.contains(commit),
            "no {commit:?} in:\n{}",
            log.stdout
        );
    }
    assert!(home.path().join("state/memory.git").is_dir());
    assert!(!home.workspace().join(".git").exists());
}
