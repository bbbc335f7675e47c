//! The MCP manager against the `fake-mcp` server: tools listed and called, a broken
//! server failing alone, and a crashed server reconnected.

use crate::common;

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{PATIENCE, wait_for};
use pincer::mcp::{Backoff, McpManager, McpServerConfig};
use pincer::tools::{Tool, ToolContext};
use serde_json::{Value, json};

fn fake(name: &str) -> McpServerConfig {
    McpServerConfig {
        name: name.into(),
        command: Some(common::fake_mcp()),
        ..Default::default()
    }
}

fn quick() -> Backoff {
    Backoff::new(Duration::from_millis(100), Duration::from_secs(1))
}

fn ctx(dir: &Path) -> ToolContext {
    ToolContext {
        workspace: dir.to_path_buf(),
        origin: None,
        caller: pincer::tools::Caller::owner(),
        taint: Default::default(),
        pictures: Default::default(),
        session: None,
        mode: None,
    }
}

fn find(manager: &McpManager, name: &str) -> Arc<dyn Tool> {
    let tools = manager.tools();
    let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
    tools
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("{name} not among {names:?}"))
}

async fn call(tool: &Arc<dyn Tool>, args: Value, dir: &Path) -> Result<String, String> {
    tool.call(args, &ctx(dir)).await.map_err(|e| e.0)
}

#[tokio::test]
async fn lists_and_calls_the_tools_of_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let manager = McpManager::start_with(vec![fake("fake")], dir.path().into(), quick());
    assert_eq!(
        manager.status()[0].1,
        "connecting",
        "start must not wait for the server"
    );
    manager.settle(PATIENCE).await;
    assert_eq!(
        manager.status(),
        vec![("fake".to_string(), "ready, 7 tools".to_string())]
    );

    let names: Vec<String> = manager.tools().iter().map(|t| t.spec().name).collect();
    assert_eq!(
        names,
        [
            "mcp__fake__add",
            "mcp__fake__crash",
            "mcp__fake__cwd",
            "mcp__fake__echo",
            "mcp__fake__env",
            "mcp__fake__fail",
            "mcp__fake__read"
        ]
    );
    let echo = find(&manager, "mcp__fake__echo");
    let spec = echo.spec();
    assert_eq!(spec.description, "[MCP server fake] Echo the text back");
    assert_eq!(spec.input_schema["required"], json!(["text"]));

    let d = dir.path();
    assert_eq!(
        call(&echo, json!({"text": "hello $(rm -rf /)"}), d)
            .await
            .unwrap(),
        "hello $(rm -rf /)"
    );
    let add = find(&manager, "mcp__fake__add");
    assert_eq!(call(&add, json!({"a": 2, "b": 3}), d).await.unwrap(), "5");
    let fail = find(&manager, "mcp__fake__fail");
    let err = call(&fail, json!({}), d).await.unwrap_err();
    assert_eq!(
        err,
        "MCP server fake reported an error: it failed on purpose"
    );
    // The server starts in a folder of its own under the folder given for them (the
    // gateway's is $PINCER_HOME/mcp), never in the workspace.
    let cwd = find(&manager, "mcp__fake__cwd");
    let got = call(&cwd, json!({}), d).await.unwrap();
    assert_eq!(
        Path::new(&got).canonicalize().unwrap(),
        d.join("fake").canonicalize().unwrap()
    );
}

#[tokio::test]
async fn a_server_answering_a_protocol_version_pincer_does_not_speak_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let draft = McpServerConfig {
        env: vec![("FAKE_MCP_PROTOCOL".into(), "2026-07-28".into())],
        ..fake("draft")
    };
    let manager = McpManager::start_with(vec![draft], dir.path().into(), quick());
    manager.settle(PATIENCE).await;
    let status = &manager.status()[0].1;
    assert!(
        status.starts_with(
            "failed: the server answered with MCP protocol version 2026-07-28, which Pincer does not speak (it speaks 2024-11-05 to 2025-11-25)"
        ),
        "{status}"
    );
    assert!(manager.tools().is_empty());
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let broken = McpServerConfig {
        name: "broken".into(),
        command: Some("/nonexistent/mcp-server".into()),
        ..Default::default()
    };
    let manager = McpManager::start_with(vec![broken, fake("good")], dir.path().into(), quick());
    manager.settle(PATIENCE).await;

    let status = manager.status();
    assert_eq!(status[0].0, "broken");
    assert!(
        status[0]
            .1
            .starts_with("failed: cannot start `/nonexistent/mcp-server`: No such file"),
        "{status:?}"
    );
    assert!(status[0].1.contains("retrying in"), "{status:?}");
    assert_eq!(
        status[1],
        ("good".to_string(), "ready, 7 tools".to_string())
    );

    let tools = manager.tools();
    assert_eq!(tools.len(), 7);
    assert!(
        tools
            .iter()
            .all(|t| t.spec().name.starts_with("mcp__good__"))
    );
    let echo = find(&manager, "mcp__good__echo");
    assert_eq!(
        call(&echo, json!({"text": "hi"}), dir.path())
            .await
            .unwrap(),
        "hi"
    );
}

#[tokio::test]
async fn a_crashed_server_is_reported_then_reconnected() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let manager = McpManager::start_with(vec![fake("fake")], d.into(), quick());
    manager.settle(PATIENCE).await;
    let echo = find(&manager, "mcp__fake__echo");
    let crash = find(&manager, "mcp__fake__crash");

    let err = call(&crash, json!({}), d).await.unwrap_err();
    assert!(err.starts_with("MCP server fake "), "{err}");

    // Until it is back, calls fail clearly rather than hang.
    let err = call(&echo, json!({"text": "x"}), d).await.unwrap_err();
    assert!(err.starts_with("MCP server fake "), "{err}");
    assert!(
        err.contains("retried") || err.contains("reconnected"),
        "{err}"
    );

    let last_error = RefCell::new(String::new());
    let text = wait_for(
        async || match call(&echo, json!({"text": "back"}), d).await {
            Ok(text) => Some(text),
            Err(e) => {
                assert!(e.starts_with("MCP server fake "), "{e}");
                *last_error.borrow_mut() = e;
                None
            }
        },
        || {
            format!(
                "never reconnected: {}; status {:?}",
                last_error.borrow(),
                manager.status()
            )
        },
    )
    .await;
    assert_eq!(text, "back");
    assert_eq!(manager.status()[0].1, "ready, 7 tools");
}

#[tokio::test]
async fn a_dropped_manager_stops_offering_tools() {
    let dir = tempfile::tempdir().unwrap();
    let manager = McpManager::start_with(vec![fake("fake")], dir.path().into(), quick());
    manager.settle(PATIENCE).await;
    let echo = find(&manager, "mcp__fake__echo");
    drop(manager);
    // Its connection closes in the background: calls fail from then on.
    let err = wait_for(
        async || call(&echo, json!({"text": "x"}), dir.path()).await.err(),
        || "the tool still works after its manager was dropped".into(),
    )
    .await;
    assert!(err.starts_with("MCP server fake "), "{err}");
}

/// Kills the HTTP fake when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_streamable_http_server_works_too() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(common::fake_mcp())
        .args(["--http", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _server = Killed(child);
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();

    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig {
        name: "web".into(),
        url: Some(format!("http://{addr}/mcp")),
        headers: vec![("Authorization".into(), "Bearer t0ken".into())],
        ..Default::default()
    };
    let manager = McpManager::start_with(vec![config], dir.path().into(), quick());
    manager.settle(PATIENCE).await;
    assert_eq!(manager.status()[0].1, "ready, 7 tools");
    let add = find(&manager, "mcp__web__add");
    assert_eq!(
        call(&add, json!({"a": 1.5, "b": 2}), dir.path())
            .await
            .unwrap(),
        "3.5"
    );
}

#[tokio::test]
async fn an_unreachable_https_server_fails_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig {
        name: "tls".into(),
        url: Some("https://127.0.0.1:1/mcp".into()),
        ..Default::default()
    };
    let manager = McpManager::start_with(vec![config], dir.path().into(), quick());
    manager.settle(PATIENCE).await;
    let status = &manager.status()[0].1;
    assert!(
        status.starts_with("failed: MCP handshake failed"),
        "{status}"
    );
    assert!(manager.tools().is_empty());
}
