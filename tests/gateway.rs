//! `pincer run`, the gateway, as a process: it keeps running with nothing to serve and
//! says how to enable a channel, holds one lock per home, refuses an enabled channel
//! without its token, and stops cleanly (exit 0) on SIGTERM and on SIGINT; and the same
//! gateway in-process through `pincer::gateway::run`.

use crate::common;

use std::cell::RefCell;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{PATIENCE, TestHome, wait_for};

/// A config with a model (never called) and no channel enabled.
const NO_CHANNELS: &str = "version = 1\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";

/// A running `pincer run`, killed on drop if the test did not stop it.
struct Gateway {
    child: Child,
    /// stderr lines, read by a thread so the pipe never fills up.
    lines: mpsc::Receiver<String>,
    /// Every stderr line seen so far, for assertions and failure messages.
    seen: String,
}

impl Gateway {
    fn start(home: &TestHome) -> Gateway {
        Gateway::start_logging(home, None)
    }

    /// With `RUST_LOG` set to `log`, when given.
    fn start_logging(home: &TestHome, log: Option<&str>) -> Gateway {
        let mut command = home.command(&["run"]);
        if let Some(log) = log {
            command.env("RUST_LOG", log);
        }
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pincer run");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Gateway {
            child,
            lines,
            seen: String::new(),
        }
    }

    /// Wait until a stderr line contains `needle`; panic after `PATIENCE`.
    async fn wait_for_line(&mut self, needle: &str) {
        let Gateway { lines, seen, .. } = self;
        let seen = RefCell::new(seen);
        wait_for(
            async || {
                let mut seen = seen.borrow_mut();
                seen.extend(lines.try_iter().map(|line| line + "\n"));
                seen.contains(needle).then_some(())
            },
            || {
                format!(
                    "no stderr line with {needle:?}; stderr so far:\n{}",
                    seen.borrow()
                )
            },
        )
        .await
    }

    /// Wait until the gateway is serving (its signal handlers are installed before it
    /// starts: src/cli/run.rs).
    async fn wait_until_running(&mut self) {
        self.wait_for_line("gateway running").await;
    }

    fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Wait for the process to exit; its exit code, or a panic after `PATIENCE`.
    async fn wait_for_exit(&mut self) -> Option<i32> {
        let Gateway { child, seen, .. } = self;
        wait_for(
            async || child.try_wait().expect("try_wait").map(|s| s.code()),
            || format!("pincer run did not stop; stderr:\n{seen}"),
        )
        .await
    }

    /// SIGTERM, and an exit 0 (the stderr otherwise).
    async fn stop(&mut self) {
        self.signal("TERM");
        let code = self.wait_for_exit().await;
        assert_eq!(code, Some(0), "{}", self.drain());
    }

    /// Whatever stderr remains after the process ended, appended to `seen`.
    fn drain(&mut self) -> &str {
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
        &self.seen
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // A failed test must not leave the gateway behind.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

async fn stops_cleanly_on(signal: &str) {
    let home = TestHome::new();
    home.write_config(NO_CHANNELS);
    let mut gateway = Gateway::start(&home);
    gateway.wait_until_running().await;
    assert!(
        gateway.child.try_wait().expect("try_wait").is_none(),
        "the gateway must keep running with no channel enabled"
    );
    assert!(
        gateway.seen.contains("channels.telegram"),
        "no hint how to enable a channel:\n{}",
        gateway.seen
    );
    gateway.signal(signal);
    let code = gateway.wait_for_exit().await;
    let stderr = gateway.drain().to_string();
    assert_eq!(
        code,
        Some(0),
        "SIG{signal} should stop it cleanly; stderr:\n{stderr}"
    );
    assert!(stderr.contains("stopped"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_channel_it_waits_and_stops_on_sigterm() {
    stops_cleanly_on("TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_stops_it_cleanly_too() {
    stops_cleanly_on("INT").await;
}

/// Once its channels are up (here: none), the gateway drops the pages only starting
/// needed (src/gateway/settle.rs), and goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_started_it_gives_back_the_pages_only_starting_needed() {
    let home = TestHome::new();
    home.write_config(NO_CHANNELS);
    let mut gateway = Gateway::start_logging(&home, Some("info,pincer::gateway::settle=debug"));
    gateway.wait_for_line("gave back the start's pages").await;
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_gateway_on_the_same_home_is_refused() {
    let home = TestHome::new();
    home.write_config(NO_CHANNELS);
    let mut first = Gateway::start(&home);
    first.wait_until_running().await;

    let second = home.run(&["run"]);
    second.fails_with(&["another", "already running"]);
    assert!(
        second.stderr.contains(&home.path().display().to_string()),
        "{}",
        second.stderr
    );
    assert!(
        first.child.try_wait().expect("try_wait").is_none(),
        "the first gateway must keep running"
    );

    first.signal("TERM");
    assert_eq!(first.wait_for_exit().await, Some(0));
}

#[test]
fn telegram_enabled_without_a_token_names_both_places() {
    let home = TestHome::new();
    home.write_config(&format!(
        "{NO_CHANNELS}\n[channels.telegram]\nenabled = true\n"
    ));
    let run = home.run(&["run"]);
    run.fails_with(&[".security.yml", "TELEGRAM_BOT_TOKEN", "channels.telegram"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_each_mcp_servers_state_while_the_gateway_runs() {
    let fake = pincer_fakes::FakeModel::start().await;
    let home = common::TestHome::new();
    let server = common::fake_mcp();
    home.write_config(&common::openai_config(
        &fake,
        &format!("[mcp.servers.calc]\ncommand = \"{server}\"\n[mcp.servers.broken]\ncommand = \"/nonexistent/mcp\"\n"),
    ));
    let mut child = home
        .command(&["run"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_for(
        async || {
            let status = home.run(&["status"]).stdout;
            // The broken server is retried with a backoff, so between its failures it
            // shows "connecting" for a moment: wait for a look that catches it failed.
            let line = |name: &str| status.lines().find(|l| l.contains(name)).unwrap_or("");
            let both = line("mcp:calc").contains("ready") && line("mcp:broken").contains("failed");
            both.then_some(status)
        },
        || {
            let status = home.run(&["status"]).stdout;
            format!("status never showed calc ready and broken failed: {status}")
        },
    )
    .await;
    assert!(status.contains("mcp:broken"), "{status}");
    let _ = child.kill();
    let _ = child.wait();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_panel_gets_a_token_and_a_half_sent_request_does_not_hold_the_shutdown() {
    use std::io::{Read, Write};
    let home = TestHome::new();
    let port = free_port();
    home.write_config(&format!(
        "{NO_CHANNELS}\n[web]\nenabled = true\nlisten = \"127.0.0.1:{port}\"\n"
    ));
    let mut gateway = Gateway::start(&home);
    gateway.wait_until_running().await;
    assert!(gateway.seen.contains("pincer web url"), "{}", gateway.seen);
    // A loopback panel without a token made one, privately, and the login link holds it.
    let secrets = std::fs::read_to_string(home.path().join(".security.yml")).expect("secrets");
    assert!(secrets.contains("web:\n  token: \""), "{secrets}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(home.path().join(".security.yml"))
            .expect("stat")
            .permissions(),
    ) & 0o777;
    assert_eq!(mode, 0o600);
    let url = home.run(&["web", "url"]);
    assert!(url.ok(), "{}", url.stderr);
    let token = url
        .stdout
        .trim()
        .rsplit('=')
        .next()
        .expect("token")
        .to_string();
    assert!(secrets.contains(&token));
    // /healthz answers (no channel, so nothing is failing).
    let mut health = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        health,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    health.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.contains(r#"{"status":"ok"}"#),
        "{answer}"
    );
    // A chat request whose body never finishes is in flight when the signal comes.
    let mut stuck = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stuck,
        "POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Length: 1000\r\n\r\n{{"
    )
    .unwrap();
    gateway.stop().await;
}

#[test]
fn a_panel_on_the_network_without_a_token_refuses_to_start() {
    let home = TestHome::new();
    home.write_config(&format!(
        "{NO_CHANNELS}\n[web]\nenabled = true\nlisten = \"0.0.0.0:{}\"\n",
        free_port()
    ));
    let run = home.run(&["run"]);
    run.fails_with(&["web.listen", "web.token", "pincer web token", "127.0.0.1"]);
}

/// The whole gateway in-process (`pincer::gateway::run`, as `pincer run` calls it):
/// Telegram listening, a message answered through the core and the channel manager,
/// and a clean stop when asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_runs_in_process_and_stops_when_asked() {
    use pincer_fakes::telegram::Incoming;
    let s = common::telegram::setup("", "owners = [\"telegram:42\"]").await;
    let home = pincer::Home::resolve(Some(s.home.path().to_path_buf()), None);
    let config = pincer_config::load(&home.config_file, &home.security_file, &[]).expect("config");
    let secrets = pincer_config::load_secrets(&home.security_file).expect("secrets");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let gateway = tokio::spawn(async move {
        pincer::gateway::run(&home, &config, secrets, &[], async {
            let _ = stopped.await;
        })
        .await
    });
    s.platform.inject(Incoming::dm(42, "hello in-process"));
    s.wait_for_text(42, "echo: hello in-process").await;
    stop.send(()).expect("the gateway is running");
    let ended = tokio::time::timeout(PATIENCE, gateway)
        .await
        .expect("stopped in time")
        .expect("no panic")
        .expect("a clean run");
    assert_eq!(ended.channels, ["telegram"]);
}
