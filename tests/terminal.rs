//! The REPL on a real terminal (a pty made by util-linux `script`): replies stream, and
//! a line typed while a reply is running steers that turn.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{Captured, TestHome, WAIT};
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

/// `pincer chat` on a pty made by util-linux `script`, so it sees a real terminal.
fn repl(home: &TestHome) -> std::process::Child {
    let pincer = home
        .command(&["chat"])
        .get_program()
        .to_string_lossy()
        .into_owned();
    let line = format!("{pincer} --home {} chat", home.path().display());
    Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("this test needs `script` from util-linux (apt-get install util-linux)")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_typed_mid_reply_steers_the_turn_in_the_real_binary() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    fake.push(Step::tool_calls([("list_dir", json!({"path": "."}))]).after_ms(500));
    fake.push(Step::text("Steered answer."));
    let mut child = repl(&home);
    let screen = Captured::of(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"list my files\n").unwrap();
    stdin.flush().unwrap();
    fake.wait_for_requests(1, WAIT).await;
    stdin.write_all(b"no wait, just greet me\n").unwrap();
    stdin.flush().unwrap();
    let requests = fake.wait_for_requests(2, WAIT).await;
    assert_eq!(requests.len(), 2);
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("Skipped due to queued user message."),
        "{second}"
    );
    assert_eq!(requests[1].last_user_text(), "no wait, just greet me");
    screen.shows("Steered answer.", 1).await;
    stdin.write_all(&[4]).unwrap(); // Ctrl-D: leave
    drop(stdin);
    child.wait().unwrap();
    // The REPL has ended: nothing more can reach the model.
    assert_eq!(
        fake.requests().len(),
        2,
        "the steered line did not start a turn of its own"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_asks_before_a_call_the_owner_wants_to_approve() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &fake,
        "[tools.permissions]\nask = [\"write_file\"]\n",
    ));
    let write = |name: &str| Step::tool_call("write_file", json!({"path": name, "content": "x"}));
    fake.push_all([
        write("a.txt"),
        Step::text("wrote a"),
        write("b.txt"),
        Step::text("ok"),
        write("c.txt"),
        Step::text("wrote c"),
        write("c.txt"),
        Step::text("again"),
    ]);
    let mut child = repl(&home);
    let screen = Captured::of(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut say = |text: &str| {
        stdin.write_all(format!("{text}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    say("write a");
    screen.shows("Allow write_file `a.txt`?", 1).await;
    say("y");
    screen.shows("wrote a", 1).await;
    say("write b");
    screen.shows("Allow write_file `b.txt`?", 1).await;
    say("n");
    screen.shows("ok", 1).await;
    say("write c");
    screen.shows("Allow write_file `c.txt`?", 1).await;
    say("a");
    screen.shows("wrote c", 1).await;
    say("write c again");
    screen.shows("again", 1).await;
    assert_eq!(
        screen.text().matches("Allow write_file").count(),
        3,
        "\"always\" is remembered"
    );
    let refused = fake.requests()[3].body["messages"].to_string();
    assert!(refused.contains("did not approve"), "{refused}");
    assert!(home.workspace().join("a.txt").exists() && home.workspace().join("c.txt").exists());
    assert!(!home.workspace().join("b.txt").exists());
    stdin.write_all(&[4]).unwrap();
    drop(stdin);
    let _ = child.wait();
}
