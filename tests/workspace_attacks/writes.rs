//! What the gateway writes into the workspace goes beneath it with no link followed: a
//! script the model wrote plants a link where the gateway writes next — the inbox
//! folder a guest's document is saved to, the folder big tool results are saved to —
//! and nothing lands where the link points. The guest's document is kept in the
//! gateway's own folder instead, and the model still reads it.

use pincer_fakes::Step;
use pincer_fakes::telegram::Incoming;
use serde_json::json;

use super::rig::{Rig, exec, write_file};
use crate::common::telegram::setup;
use crate::common::wait_for;

/// The owner's turn plants `ln -s <outside> inbox/telegram`; a guest then sends a
/// document whose name and content they chose.
async fn inbox_link(sandbox: &str) {
    let s = setup(
        "dm_policy = \"open\"\nallow_from = [\"*\"]",
        &format!("owners = [\"telegram:42\"]\n[tools.exec]\nsandbox = \"{sandbox}\""),
    )
    .await;
    let outside = s.home.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let plant = format!(
        "mkdir -p inbox && ln -s {} inbox/telegram && echo planted",
        outside.display()
    );
    s.model.push_all([
        Step::tool_call("write_file", json!({"path": "plant.sh", "content": plant})),
        Step::tool_call("exec", json!({"command": "sh plant.sh"})),
        Step::text("PLANTED"),
    ]);
    let _gateway = s.start();
    s.platform.inject(Incoming::dm(42, "go"));
    s.wait_for_text(42, "PLANTED").await;
    s.platform
        .inject(Incoming::dm(7, "read this").with_document("run.sh", b"GUEST-CONTENT".to_vec()));
    s.wait_for_text(7, "read this").await;
    let kept = s.home.path().join("state/inbox/telegram");
    let files: Vec<_> = wait_for(
        || {
            std::fs::read_dir(&kept)
                .ok()
                .map(|d| d.flatten().collect::<Vec<_>>())
                .filter(|f| !f.is_empty())
        },
        || format!("[{sandbox}] nothing kept in {}", kept.display()),
    )
    .await;
    assert_eq!(files.len(), 1, "[{sandbox}] {files:?}");
    assert_eq!(std::fs::read(files[0].path()).unwrap(), b"GUEST-CONTENT");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "[{sandbox}] the guest's file went through the link"
    );
    let seen = s.model.requests().last().unwrap().last_user_text();
    assert!(
        seen.contains("GUEST-CONTENT") && seen.contains("kept by the gateway"),
        "{seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guests_file_never_follows_a_link_planted_in_the_inbox_under_bwrap() {
    inbox_link("bwrap").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guests_file_never_follows_a_link_planted_in_the_inbox_under_landlock() {
    inbox_link("landlock").await;
}

/// A script links `tool-output` to a folder outside; a big result then has nowhere safe
/// to be saved, and says so, and nothing lands outside.
#[test]
fn a_big_result_is_never_saved_through_a_planted_link() {
    for sandbox in super::rig::sandboxes() {
        let rig = Rig::new(sandbox, "");
        let outside = rig.home.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let turn = rig.turn(
            &[
                write_file(
                    "plant.sh",
                    &format!("ln -s {} tool-output && echo planted", outside.display()),
                ),
                exec("sh plant.sh"),
                exec("for i in $(seq 2000); do printf '%0100d\\n' $i; done > big.txt"),
                ("read_file", json!({"path": "big.txt"})),
            ],
            "DONE",
        );
        assert!(turn.result(1).contains("planted"), "[{sandbox}] {turn:#?}");
        let result = turn.result(3);
        assert!(
            result.contains("could not be saved"),
            "[{sandbox}] {}",
            &result[result.len().saturating_sub(300)..]
        );
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "[{sandbox}]"
        );
    }
}
