//! An MCP server's environment: its configured variables and PATH, never Pincer's
//! own. The test runs itself again as a child process with a secret in its environment,
//! so no thread of the test binary ever sees the environment change.

use crate::common;

use common::PATIENCE;
use pincer::mcp::{McpManager, McpServerConfig};
use pincer::tools::ToolContext;
use serde_json::json;

const TEST: &str = "mcp_env::a_server_sees_its_configured_env_and_not_the_parents_secrets";

#[tokio::test]
async fn a_server_sees_its_configured_env_and_not_the_parents_secrets() {
    if std::env::var_os("PINCER_TEST_SECRET").is_none() {
        // Run again in a child process that holds a secret in its environment.
        let out = tokio::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env("PINCER_TEST_SECRET", "parent-secret")
            .output()
            .await
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && printed.contains("1 passed"),
            "{printed}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig {
        name: "fake".into(),
        command: Some(common::fake_mcp()),
        env: vec![("MCP_TOKEN".into(), "configured".into())],
        ..Default::default()
    };
    let manager = McpManager::start(vec![config], dir.path().into());
    manager.settle(PATIENCE).await;
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
        pictures: Default::default(),
        session: None,
        mode: None,
    };
    let read = |name: &str| env.call(json!({ "name": name }), &ctx);
    assert_eq!(read("MCP_TOKEN").await.unwrap(), "configured");
    assert_eq!(read("PINCER_TEST_SECRET").await.unwrap(), "<unset>");
    assert_eq!(read("PATH").await.unwrap(), std::env::var("PATH").unwrap());
}
