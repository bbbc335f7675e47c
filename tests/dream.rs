//! The dream through the real binary (and, for its schedule, the core in-process)
//! with a scripted fake model: files and exactly one commit whose message matches the
//! diff, no commit for a no-op, restore, a crash mid-dream, refused operations, a
//! hand edit that survives, `/dream`, and `memory.dream_schedule` in agent.timezone.

use crate::common;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::{TestHome, WAIT};
use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn ops(operations: Value) -> Step {
    Step::tool_call(
        "apply_memory_operations",
        json!({ "operations": operations }),
    )
}

fn move_to_porto() -> Step {
    ops(json!([
        {"op": "create", "path": "memory/home.md", "type": "user",
         "description": "lives in Porto", "content": "Moved from Lisbon to Porto in November 2026."},
        {"op": "update", "path": "USER.md", "content": "Ana. Lives in Porto."}
    ]))
}

/// A home with USER.md, its memory repository started, and one conversation turn.
fn home_with_a_conversation(fake: &FakeModel) -> TestHome {
    let home = TestHome::openai(fake);
    std::fs::create_dir_all(home.workspace()).unwrap();
    std::fs::write(home.workspace().join("USER.md"), "Ana.\n").unwrap();
    assert!(
        home.run(&["memory", "log"]).ok(),
        "the log starts the repository"
    );
    fake.push(Step::text("Congratulations on the move!"));
    assert!(home.run(&["chat", "-m", "I moved to Porto last week"]).ok());
    home
}

/// The memory files that differ from the last commit (none when the tree matches it),
/// as `git status` would name them.
fn dirty(home: &TestHome) -> Vec<String> {
    let repo = repo(home);
    let tree = repo.head().unwrap().peel_to_tree().unwrap();
    let ws = home.workspace();
    let mut paths: BTreeSet<String> = ["MEMORY.md", "SOUL.md", "USER.md"]
        .into_iter()
        .map(str::to_string)
        .collect();
    for entry in std::fs::read_dir(ws.join("memory")).into_iter().flatten() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            paths.insert(format!("memory/{name}"));
        }
    }
    paths
        .into_iter()
        .filter(|path| {
            let at_head = tree
                .get_path(std::path::Path::new(path))
                .ok()
                .map(|e| e.id());
            let now = std::fs::read(ws.join(path))
                .ok()
                .map(|bytes| git2::Oid::hash_object(git2::ObjectType::Blob, &bytes).unwrap());
            at_head != now
        })
        .collect()
}

/// The memory's history, in the gateway's state folder.
fn repo(home: &TestHome) -> git2::Repository {
    git2::Repository::open_bare(home.path().join("state/memory.git")).unwrap()
}

fn commits(home: &TestHome) -> Vec<(String, String)> {
    let repo = repo(home);
    let mut walk = repo.revwalk().unwrap();
    walk.push_head().unwrap();
    walk.map(|id| {
        let commit = repo.find_commit(id.unwrap()).unwrap();
        (
            commit.id().to_string(),
            commit.message().unwrap().to_string(),
        )
    })
    .collect()
}

/// (verb, path) of every file HEAD changed, from git's own diff.
fn head_diff(home: &TestHome) -> BTreeSet<(String, String)> {
    let repo = repo(home);
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    let parent = head.parent(0).unwrap().tree().unwrap();
    let diff = repo
        .diff_tree_to_tree(Some(&parent), Some(&head.tree().unwrap()), None)
        .unwrap();
    diff.deltas()
        .map(|d| {
            let verb = match d.status() {
                git2::Delta::Added => "created",
                git2::Delta::Deleted => "deleted",
                _ => "updated",
            };
            let path = d.new_file().path().or(d.old_file().path()).unwrap();
            (verb.to_string(), path.to_string_lossy().into_owned())
        })
        .collect()
}

fn read(home: &TestHome, path: &str) -> String {
    std::fs::read_to_string(home.workspace().join(path)).unwrap_or_default()
}

fn dream_request(fake: &FakeModel) -> String {
    fake.requests().last().unwrap().body.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dream_writes_the_files_and_one_commit_whose_message_matches_the_diff() {
    let fake = FakeModel::start().await;
    let home = home_with_a_conversation(&fake);
    let before = commits(&home);
    fake.push(move_to_porto());
    let run = home.run(&["memory", "dream"]);
    assert!(run.ok(), "{run:?}");
    let request = dream_request(&fake);
    assert!(request.contains("apply_memory_operations"));
    assert!(
        request.contains("I moved to Porto last week"),
        "the log and transcript are read"
    );
    assert!(request.contains("## USER.md"), "the memory files are read");

    let after = commits(&home);
    assert_eq!(after.len(), before.len() + 1, "exactly one commit");
    let message = &after[0].1;
    assert!(
        message.starts_with("Dream: 2 created, 1 updated\n"),
        "{message}"
    );
    let described: BTreeSet<(String, String)> = message
        .lines()
        .skip(2)
        .map(|line| {
            let mut words = line.split_whitespace();
            (
                words.next().unwrap().to_string(),
                words.next().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(described, head_diff(&home), "the message is the real diff");
    assert!(message.contains("created memory/home.md (+") && message.contains("): lives in Porto"));

    let file = read(&home, "memory/home.md");
    assert!(
        file.starts_with("---\nname: home\ndescription: lives in Porto\ntype: user\n"),
        "{file}"
    );
    assert!(read(&home, "MEMORY.md").contains("- [home](memory/home.md) — lives in Porto"));
    assert_eq!(read(&home, "USER.md"), "Ana. Lives in Porto.\n");
    assert!(
        run.stdout.contains("Dream: 2 created, 1 updated"),
        "{}",
        run.stdout
    );

    let log = home.run(&["memory", "log"]);
    let short = &before[0].0[..7];
    assert!(
        log.stdout
            .contains(&format!("Dream: 2 created, 1 updated  (before: {short})")),
        "{}",
        log.stdout
    );
    assert!(
        log.stdout.contains("    created memory/home.md"),
        "{}",
        log.stdout
    );
    // Only curated memory is tracked: daily logs and scratch files are not.
    std::fs::write(home.workspace().join("scratch.txt"), "tmp").unwrap();
    assert_eq!(dirty(&home), Vec::<String>::new());
    assert!(home.workspace().join("memory/logs").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_op_dream_commits_nothing_and_with_nothing_new_the_model_is_not_asked() {
    let fake = FakeModel::start().await;
    let home = home_with_a_conversation(&fake);
    let before = commits(&home);
    fake.push(ops(json!([])));
    let run = home.run(&["memory", "dream"]);
    assert!(run.ok(), "{run:?}");
    assert!(
        run.stdout.contains("The dream changed nothing."),
        "{}",
        run.stdout
    );
    assert_eq!(commits(&home), before);
    let asked = fake.requests().len();
    let again = home.run(&["memory", "dream"]);
    assert!(
        again.ok() && again.stdout.contains("Nothing new since the last dream"),
        "{again:?}"
    );
    assert_eq!(
        fake.requests().len(),
        asked,
        "no model call without anything new"
    );
    assert_eq!(commits(&home), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_puts_the_files_back_as_a_new_commit() {
    let fake = FakeModel::start().await;
    let home = home_with_a_conversation(&fake);
    let start = commits(&home)[0].0.clone();
    fake.push(move_to_porto());
    assert!(home.run(&["memory", "dream"]).ok());
    let run = home.run(&["memory", "restore", &start[..7]]);
    assert!(run.ok(), "{run:?}");
    assert!(
        run.stdout.contains("Restored the memory files as of"),
        "{}",
        run.stdout
    );
    assert_eq!(read(&home, "USER.md"), "Ana.\n");
    assert!(!home.workspace().join("memory/home.md").exists());
    assert!(!home.workspace().join("MEMORY.md").exists());
    let history = commits(&home);
    assert_eq!(history.len(), 3, "start, dream, restore");
    assert!(
        history[0].1.starts_with("Restore memory as of"),
        "{}",
        history[0].1
    );
    let same = home.run(&["memory", "restore", "HEAD"]);
    assert!(same.stdout.contains("already as they were"), "{same:?}");
    let bad = home.run(&["memory", "restore", "nope"]);
    bad.fails_with(&["no revision `nope`", "pincer memory log"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_dream_leaves_everything_consistent_and_the_next_dream_completes() {
    let fake = FakeModel::start().await;
    let home = home_with_a_conversation(&fake);
    let before = commits(&home);
    let asked = fake.requests().len();
    fake.push(move_to_porto().after_ms(5_000));
    let mut child = home
        .command(&["memory", "dream"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    fake.wait_for_requests(asked + 1, WAIT).await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(commits(&home), before, "no commit");
    assert_eq!(read(&home, "USER.md"), "Ana.\n", "files untouched");
    assert_eq!(
        dirty(&home),
        Vec::<String>::new(),
        "the repository is clean"
    );
    fake.reset();
    // Twice: once, in a loaded full run, this dream got the fake's echo instead of
    // the scripted answer (another call took it); a spare keeps the test about the
    // cursor, not about timing.
    fake.push_all([move_to_porto(), move_to_porto()]);
    let run = home.run(&["memory", "dream"]);
    assert!(run.ok(), "{run:?}");
    assert!(
        dream_request(&fake).contains("I moved to Porto last week"),
        "the cursor did not move: the next dream reads the same material"
    );
    assert_eq!(commits(&home).len(), before.len() + 1);
    assert_eq!(dirty(&home), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malicious_operations_are_refused_and_the_rest_applied() {
    let fake = FakeModel::start().await;
    let home = home_with_a_conversation(&fake);
    std::fs::write(home.workspace().join("SOUL.md"), "Dry wit.\n").unwrap();
    let huge = "x".repeat(10 * 1024 * 1024);
    fake.push(ops(json!([
        {"op": "create", "path": "../../escaped.md", "type": "user", "description": "x", "content": "pwned"},
        {"op": "delete", "path": "SOUL.md"},
        {"op": "create", "path": "memory/huge.md", "type": "reference", "description": "big", "content": huge},
        {"op": "create", "path": "memory/cat.md", "type": "user", "description": "has a cat, Miso", "content": "Miso, a tabby."}
    ])));
    let run = home.run(&["memory", "dream"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout.matches("Refused:").count(), 3, "{}", run.stdout);
    assert!(
        run.stdout.contains("outside memory/") && run.stdout.contains("SOUL.md is never deleted")
    );
    assert!(run.stdout.contains("at most 16 KB"), "{}", run.stdout);
    assert_eq!(read(&home, "SOUL.md"), "Dry wit.\n");
    assert!(
        !home.path().join("escaped.md").exists() && !home.workspace().join("escaped.md").exists()
    );
    assert!(!home.workspace().join("memory/huge.md").exists());
    assert!(read(&home, "memory/cat.md").contains("Miso, a tabby."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owners_hand_edits_are_read_by_the_dream_and_win_over_it() {
    let fake = FakeModel::start().await;
    let home = home_with_a_conversation(&fake);
    fake.push(move_to_porto());
    assert!(home.run(&["memory", "dream"]).ok());
    // By hand, after that dream.
    std::fs::write(
        home.workspace().join("USER.md"),
        "Ana. Lives in Porto. Vegetarian.\n",
    )
    .unwrap();
    fake.push(Step::text("Miso is a lovely name."));
    assert!(home.run(&["chat", "-m", "I adopted a cat named Miso"]).ok());
    let asked = fake.requests().len();
    fake.push(
        ops(json!([
            {"op": "update", "path": "USER.md", "content": "Ana. Lives in Porto. Vegetarian. Has a cat, Miso."},
            {"op": "update", "path": "memory/home.md", "content": "Porto (rewritten by the dream)."}
        ]))
        .after_ms(1_500),
    );
    let child = home
        .command(&["memory", "dream"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    fake.wait_for_requests(asked + 1, WAIT).await;
    // While the model thinks, the owner edits a file the dream is about to change.
    let by_hand = "---\nname: home\ndescription: lives in Porto, Foz\ntype: user\n---\nFoz do Douro, by hand.\n";
    std::fs::write(home.workspace().join("memory/home.md"), by_hand).unwrap();
    let run = common::Run::from(child.wait_with_output().unwrap());
    assert!(run.ok(), "{run:?}");
    let request = dream_request(&fake);
    assert!(
        request
            .contains("## USER.md (edited by the owner since the last dream: keep their changes)"),
        "{request}"
    );
    assert!(request.contains("Vegetarian"));
    assert!(
        run.stdout.contains("Left alone: memory/home.md"),
        "{}",
        run.stdout
    );
    assert_eq!(
        read(&home, "memory/home.md"),
        by_hand,
        "the hand edit survives"
    );
    assert!(read(&home, "USER.md").contains("Vegetarian. Has a cat, Miso."));
    let index = read(&home, "MEMORY.md");
    assert!(index.contains("memory/home.md"), "{index}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_dream_replies_with_what_changed() {
    let fake = FakeModel::start().await;
    let home = home_with_a_conversation(&fake);
    fake.push(move_to_porto());
    let run = home.run(&["chat", "-m", "/dream"]);
    assert!(run.ok(), "{run:?}");
    assert!(
        run.stdout.contains("Dream: 2 created, 1 updated (commit "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("- created memory/home.md"),
        "{}",
        run.stdout
    );
    assert!(home.workspace().join("memory/home.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduled_dream_runs_at_its_hour_in_agent_timezone() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    let text = common::openai_config(&fake, "[agent]\ntimezone = \"Europe/Paris\"\n");
    home.write_config(&text);
    std::fs::create_dir_all(home.workspace().join("memory/logs")).unwrap();
    std::fs::write(
        home.workspace().join("memory/logs/2026-11-21.md"),
        "- 2026-11-21 20:00 Ana: my sister Rita visits in December\n",
    )
    .unwrap();
    let paths = pincer::Home::resolve(Some(home.path().to_path_buf()), None);
    let config =
        pincer_config::load_str(&text, &paths.config_file, &paths.security_file, &[]).unwrap();
    let shutdown = CancellationToken::new();
    let running = pincer::start(
        &paths,
        &config,
        &pincer_config::Secrets::default(),
        &[],
        shutdown.clone(),
    )
    .unwrap();
    // 03:00 in Paris is 02:00 UTC in November: a UTC schedule would wait an hour more.
    let start = chrono::DateTime::parse_from_rfc3339("2026-11-22T01:59:59.5Z")
        .unwrap()
        .to_utc();
    let dream = pincer::memory::DreamSchedule::new(
        &config.memory.dream_schedule,
        running.agent.timezone(),
        config.memory.dream_max_tokens,
        Arc::new(pincer::cron::TokioClock::starting_at(start)),
    )
    .unwrap();
    fake.push(ops(json!([
        {"op": "create", "path": "memory/rita.md", "type": "user", "description": "sister Rita visits in December 2026", "content": "Rita, sister."}
    ])));
    let task = tokio::spawn(dream.run(Arc::clone(&running.agent), shutdown.clone()));
    let requests = fake.wait_for_requests(1, WAIT).await;
    assert!(
        requests[0]
            .body
            .to_string()
            .contains("my sister Rita visits")
    );
    let file = home.workspace().join("memory/rita.md");
    for _ in 0..50 {
        if file.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(file.exists(), "the scheduled dream applied its operations");
    shutdown.cancel();
    task.await.unwrap();
}

#[test]
fn a_bad_dream_schedule_stops_the_gateway_with_the_key_named() {
    let home = TestHome::new();
    home.write_config("[memory]\ndream_schedule = \"every night\"\n");
    home.run(&["run"])
        .fails_with(&["memory.dream_schedule", "every night"]);
}
