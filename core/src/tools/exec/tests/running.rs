//! The tool runs commands as promised: output and exit code, timeout, output cap,
//! working directory, environment.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::run::{Capture, budgets, build_env};
use super::super::{ExecTool, MAX_OUTPUT};
use crate::tools::{Tool, ToolContext, ToolError};

/// A fresh empty workspace, removed when dropped.
struct Workspace(PathBuf);

impl Workspace {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "pincer-exec-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir.canonicalize().unwrap())
    }

    fn ctx(&self) -> ToolContext {
        ToolContext {
            workspace: self.0.clone(),
            origin: None,
            caller: crate::tools::Caller::owner(),
            taint: Default::default(),
            pictures: Default::default(),
            session: None,
            mode: None,
        }
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn exec(args: Value) -> (Result<String, ToolError>, Workspace) {
    let workspace = Workspace::new();
    // As the pipeline does: parsed and checked, then run.
    let tool = ExecTool::new(|_| true);
    let result = tool.call(args, &workspace.ctx()).await;
    (result, workspace)
}

#[tokio::test]
async fn returns_exit_code_and_output() {
    let (result, _ws) = exec(json!({"command": "echo hello"})).await;
    assert_eq!(result.unwrap(), "exit code 0\n--- stdout ---\nhello");
}

#[tokio::test]
async fn a_failing_command_is_a_result_not_an_error() {
    let (result, _ws) = exec(json!({"command": "echo out; echo oops >&2; exit 3"})).await;
    assert_eq!(
        result.unwrap(),
        "exit code 3\n--- stdout ---\nout\n--- stderr ---\noops"
    );
    let (result, _ws) = exec(json!({"command": "true"})).await;
    assert_eq!(result.unwrap(), "exit code 0\n(no output)");
}

#[tokio::test]
async fn a_refused_command_is_an_error_and_does_not_run() {
    let workspace = Workspace::new();
    let tool = ExecTool::new(|_| true);
    let command = "touch ran && rm -rf /";
    let err = tool
        .call(json!({"command": command}), &workspace.ctx())
        .await;
    assert!(
        err.unwrap_err()
            .0
            .starts_with("refused by the `destructive` deny group")
    );
    assert!(!workspace.0.join("ran").exists());
}

#[tokio::test]
async fn bad_arguments_are_errors() {
    let (result, _ws) = exec(json!({})).await;
    assert!(result.unwrap_err().0.contains("`command`"));
    let (result, _ws) = exec(json!({"command": "  "})).await;
    assert!(result.unwrap_err().0.contains("empty"));
    let (result, _ws) = exec(json!({"command": "ls", "timeout_secs": "soon"})).await;
    assert!(result.unwrap_err().0.contains("timeout_secs"));
}

#[tokio::test]
async fn a_missing_workspace_is_an_error() {
    let ctx = ToolContext {
        workspace: PathBuf::from("/nonexistent/pincer-workspace"),
        origin: None,
        caller: crate::tools::Caller::owner(),
        taint: Default::default(),
        pictures: Default::default(),
        session: None,
        mode: None,
    };
    let err = ExecTool::new(|_| true)
        .call(json!({"command": "ls"}), &ctx)
        .await;
    assert!(err.unwrap_err().0.contains("does not exist"));
}

#[tokio::test]
async fn runs_in_the_workspace_with_no_stdin() {
    let (result, ws) = exec(json!({"command": "pwd; echo $HOME; cat"})).await;
    let dir = ws.0.display();
    assert_eq!(
        result.unwrap(),
        format!("exit code 0\n--- stdout ---\n{dir}\n{dir}")
    );
}

#[tokio::test]
async fn a_timeout_kills_the_command_and_its_children() {
    let started = Instant::now();
    let command = "echo started; sleep 30 & echo $! > child.pid; wait";
    let (result, ws) = exec(json!({"command": command, "timeout_secs": 1})).await;
    let out = result.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        out,
        "timed out after 1s; partial output:\n--- stdout ---\nstarted"
    );
    let pid = std::fs::read_to_string(ws.0.join("child.pid")).unwrap();
    assert_gone(pid.trim()).await;
}

#[tokio::test]
async fn background_jobs_do_not_outlive_the_command() {
    let started = Instant::now();
    let command = "sleep 30 & echo $! > child.pid; echo done";
    let (result, ws) = exec(json!({"command": command})).await;
    assert_eq!(result.unwrap(), "exit code 0\n--- stdout ---\ndone");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let pid = std::fs::read_to_string(ws.0.join("child.pid")).unwrap();
    assert_gone(pid.trim()).await;
}

#[tokio::test]
async fn a_silent_timeout_says_so() {
    let (result, _ws) = exec(json!({"command": "sleep 30", "timeout_secs": 1})).await;
    assert_eq!(result.unwrap(), "timed out after 1s with no output");
}

#[tokio::test]
async fn dropping_the_call_kills_the_command() {
    let workspace = Workspace::new();
    let tool = ExecTool::new(|_| true);
    let args = json!({"command": "sleep 30 & echo $! > child.pid; wait"});
    let ctx = workspace.ctx();
    let call = tool.call(args, &ctx);
    let dropped = tokio::time::timeout(Duration::from_millis(500), call).await;
    assert!(dropped.is_err(), "the call should still be running");
    let pid = std::fs::read_to_string(workspace.0.join("child.pid")).unwrap();
    assert_gone(pid.trim()).await;
}

/// The process is gone (or a zombie waiting for its new parent to reap it).
async fn assert_gone(pid: &str) {
    if !cfg!(target_os = "linux") {
        return;
    }
    for _ in 0..50 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("process {pid} is still running");
}

#[tokio::test]
async fn long_output_is_cut_in_the_middle() {
    let command = "i=0; while [ $i -lt 5000 ]; do echo line $i; i=$((i+1)); done; echo err >&2";
    let (result, _ws) = exec(json!({"command": command})).await;
    let out = result.unwrap();
    assert!(out.len() < MAX_OUTPUT + 200, "{}", out.len());
    assert!(out.starts_with("exit code 0\n--- stdout ---\nline 0\nline 1\n"));
    assert!(out.contains("bytes cut …]"));
    assert!(
        out.ends_with("line 4999\n--- stderr ---\nerr"),
        "{}",
        &out[out.len() - 100..]
    );
}

#[test]
fn capture_keeps_head_and_tail_on_character_boundaries() {
    let mut capture = Capture::new(8);
    capture.push("ééééé".as_bytes()); // 10 bytes
    assert_eq!(capture.render(8), "éé\n[… 2 bytes cut …]\néé");
    assert_eq!(capture.render(6), "é\n[… 4 bytes cut …]\néé");
    let mut small = Capture::new(8);
    small.push(b"abc");
    assert_eq!(small.render(8), "abc");
}

#[test]
fn the_smaller_stream_keeps_its_output() {
    assert_eq!(budgets(10, 20, 100), (10, 20));
    assert_eq!(budgets(10, 500, 100), (10, 90));
    assert_eq!(budgets(500, 10, 100), (90, 10));
    assert_eq!(budgets(500, 500, 100), (50, 50));
}

#[test]
fn the_environment_holds_only_the_allowlist() {
    let parent = |key: &str| -> Option<OsString> {
        match key {
            "PATH" => Some("/usr/bin:/bin".into()),
            "TZ" => Some("Europe/Berlin".into()),
            "OPENAI_API_KEY" => Some("sk-secret".into()),
            "GITHUB_TOKEN" => Some("ghp_secret".into()),
            _ => None,
        }
    };
    let env = build_env(parent, std::path::Path::new("/work/space"));
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.to_str().unwrap())).collect();
    assert_eq!(
        pairs,
        [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/work/space"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TERM", "dumb"),
            ("TZ", "Europe/Berlin"),
        ]
    );
    let bare = build_env(|_| None, std::path::Path::new("/w"));
    assert!(bare.iter().any(|(k, v)| *k == "PATH" && !v.is_empty()));
    assert!(!bare.iter().any(|(k, _)| *k == "TZ"));
}

#[tokio::test]
async fn the_command_sees_none_of_pincers_environment() {
    // Cargo gives this test process CARGO_* variables; none may reach the command.
    let workspace = Workspace::new();
    let tool = ExecTool::new(|_| false);
    let out = tool
        .call(json!({"command": "env"}), &workspace.ctx())
        .await
        .unwrap();
    let allowed = [
        "PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "PWD", "SHLVL", "_", "OLDPWD",
    ];
    for line in out.lines().skip(2) {
        let name = line.split('=').next().unwrap_or_default();
        assert!(allowed.contains(&name), "{line}");
    }
}

#[test]
fn the_spec_names_the_contract() {
    let tool = ExecTool::new(|_| true);
    let spec = tool.spec();
    assert_eq!(spec.name, "exec");
    assert_eq!(spec.input_schema["required"], json!(["command"]));
    assert!(spec.input_schema["properties"]["timeout_secs"].is_object());
    assert!(spec.description.contains("workspace") && spec.description.contains("refused"));
    assert!(!crate::tools::Tool::call_effects(&tool, &json!({"command": "ls"})).read_only());
}
