//! The REPL on a real terminal (a pty made by util-linux `script`): replies stream, and
//! a line typed while a reply is running steers that turn.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{TestHome, WAIT};
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_typed_mid_reply_steers_the_turn_in_the_real_binary() {
    if Command::new("script").arg("--version").output().is_err() {
        panic!("this test needs `script` from util-linux (apt-get install util-linux)");
    }
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    fake.push(Step::tool_calls([("list_dir", json!({"path": "."}))]).after_ms(500));
    fake.push(Step::text("Steered answer."));
    let pincer = home
        .command(&["chat"])
        .get_program()
        .to_string_lossy()
        .into_owned();
    let line = format!("{pincer} --home {} chat", home.path().display());
    let mut child = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stdin.write_all(&[4]).unwrap(); // Ctrl-D: leave
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let screen = String::from_utf8_lossy(&output.stdout);
    assert!(screen.contains("Steered answer."), "{screen}");
    assert_eq!(
        fake.requests().len(),
        2,
        "the steered line did not start a turn of its own"
    );
}
