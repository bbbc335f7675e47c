//! An MCP server's environment: its configured variables and PATH, never Pincer's
//! own. Alone in its test binary because it sets a variable of this process.

mod common;

use std::time::Duration;

use pincer::mcp::{McpManager, McpServerConfig};
use pincer::tools::ToolContext;
use serde_json::json;

#[tokio::test]
async fn a_server_sees_its_configured_env_and_not_the_parents_secrets() {
    // SAFETY: the only test in this binary, run before any thread reads the environment.
    unsafe { std::env::set_var("PINCER_TEST_SECRET", "parent-secret") };
    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig {
        name: "fake".into(),
        command: Some(common::fake_mcp()),
        env: vec![("MCP_TOKEN".into(), "configured".into())],
        ..Default::default()
    };
    let manager = McpManager::start(vec![config], dir.path().into());
    manager.settle(Duration::from_secs(10)).await;
    let env = manager
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "mcp__fake__env")
        .unwrap();
    let ctx = ToolContext {
        workspace: dir.path().into(),
        origin: None,
        caller: pincer::tools::Caller::owner(),
        taint: Default::default(),
        session: None,
        mode: None,
    };
    let read = |name: &str| env.call(json!({ "name": name }), &ctx);
    assert_eq!(read("MCP_TOKEN").await.unwrap(), "configured");
    assert_eq!(read("PINCER_TEST_SECRET").await.unwrap(), "<unset>");
    assert_eq!(read("PATH").await.unwrap(), std::env::var("PATH").unwrap());
}
