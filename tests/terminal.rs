//! The REPL on a real terminal (a pty made by util-linux `script`): replies stream, and
//! a line typed while a reply is running steers that turn.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{TestHome, WAIT};
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

/// Everything the pty shows, read as it comes.
fn screen_of(child: &mut std::process::Child) -> std::sync::Arc<std::sync::Mutex<String>> {
    use std::io::Read;
    let screen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut stdout = child.stdout.take().unwrap();
    let sink = std::sync::Arc::clone(&screen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    screen
}

async fn wait_for_screen(screen: &std::sync::Mutex<String>, needle: &str, count: usize) {
    let deadline = std::time::Instant::now() + WAIT;
    while screen.lock().unwrap().matches(needle).count() < count {
        assert!(
            std::time::Instant::now() < deadline,
            "the screen never showed {needle:?} {count} times:\n{}",
            screen.lock().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
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
    let screen = screen_of(&mut child);
    let mut stdin = child.stdin.take().unwrap();
    let mut say = |text: &str| {
        stdin.write_all(format!("{text}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    say("write a");
    wait_for_screen(&screen, "Allow write_file `a.txt`?", 1).await;
    say("y");
    wait_for_screen(&screen, "wrote a", 1).await;
    say("write b");
    wait_for_screen(&screen, "Allow write_file `b.txt`?", 1).await;
    say("n");
    wait_for_screen(&screen, "ok", 1).await;
    say("write c");
    wait_for_screen(&screen, "Allow write_file `c.txt`?", 1).await;
    say("a");
    wait_for_screen(&screen, "wrote c", 1).await;
    say("write c again");
    wait_for_screen(&screen, "again", 1).await;
    assert_eq!(
        screen.lock().unwrap().matches("Allow write_file").count(),
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
