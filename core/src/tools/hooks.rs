//! The owner's hooks: shell commands (`[tools.hooks.<name>]`) run for matching tool
//! calls. The call arrives as one JSON object on stdin; the command runs in the
//! workspace, in the same sandbox and with the same clean environment as `exec` (no
//! secrets).
//!
//! - A **pre** hook runs after the arguments are checked and before the permission
//!   decision. Exit 0 lets the call go on; any other exit, a timeout or a hook that
//!   cannot start refuses the call (fail closed), and what the hook printed is the
//!   reason the model sees.
//! - A **post** hook runs after the call with the result. Exit 0 with output replaces
//!   the result (to redact or annotate); exit 0 with none leaves it; a failure is
//!   logged and leaves it.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use pincer_config::{HookConfig, HookEvent};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::exec::run::build_env;
use crate::sandbox::Jail;

/// The most of a hook's output that is kept.
const MAX_OUTPUT: usize = 64 * 1024;

#[derive(Debug, Clone)]
struct Hook {
    name: String,
    event: HookEvent,
    tools: Vec<String>,
    command: String,
    timeout: Duration,
}

impl Hook {
    fn matches(&self, tool: &str) -> bool {
        self.tools.is_empty()
            || self
                .tools
                .iter()
                .any(|pattern| match pattern.strip_suffix('*') {
                    Some(prefix) => tool.starts_with(prefix),
                    None => pattern == tool,
                })
    }
}

/// Every configured hook, in name order.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
    /// The sandbox hooks run in (`None` only in library use without one).
    jail: Option<Jail>,
}

/// Why a pre hook stopped a call, for the model. A hook that fails closes the door
/// like one that refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookRefusal {
    /// It exited non-zero; `why` is what it printed.
    #[error("the owner's hook `{hook}` refused this {tool} call: {why}")]
    Refused {
        hook: String,
        tool: String,
        why: String,
    },
    /// It could not run, or gave no answer in time.
    #[error(
        "the owner's hook `{hook}` could not check this {tool} call ({err}), so it was not run"
    )]
    Failed {
        hook: String,
        tool: String,
        err: String,
    },
}

/// What a hook run came to.
enum Ran {
    Exited { ok: bool, output: String },
    Failed(String),
}

impl Hooks {
    pub fn new<'a>(config: impl IntoIterator<Item = (&'a String, &'a HookConfig)>) -> Self {
        let hooks = config
            .into_iter()
            .map(|(name, hook)| Hook {
                name: name.clone(),
                event: hook.event,
                tools: hook.tools.clone(),
                command: hook.command.clone(),
                timeout: Duration::from_secs(hook.timeout_secs),
            })
            .collect();
        Self { hooks, jail: None }
    }

    /// Run every hook in `jail`.
    pub fn in_jail(mut self, jail: Jail) -> Self {
        self.jail = Some(jail);
        self
    }

    /// Run the pre hooks for this call in order; `Err` is the first refusal's reason.
    pub async fn pre(&self, tool: &str, args: &Value, workspace: &Path) -> Result<(), HookRefusal> {
        let input = json!({"event": "pre", "tool": tool, "args": args});
        for hook in self.matching(HookEvent::Pre, tool) {
            match run(hook, &input, workspace, self.jail.as_ref()).await {
                Ran::Exited { ok: true, .. } => {}
                Ran::Exited { ok: false, output } => {
                    let why = output.trim();
                    let why = if why.is_empty() {
                        "no reason given"
                    } else {
                        why
                    };
                    tracing::info!(hook = %hook.name, %tool, "pre hook refused a call");
                    return Err(HookRefusal::Refused {
                        hook: hook.name.clone(),
                        tool: tool.to_string(),
                        why: why.to_string(),
                    });
                }
                Ran::Failed(err) => {
                    tracing::warn!(hook = %hook.name, %tool, "pre hook failed: {err}");
                    return Err(HookRefusal::Failed {
                        hook: hook.name.clone(),
                        tool: tool.to_string(),
                        err,
                    });
                }
            }
        }
        Ok(())
    }

    /// Run the post hooks in order, each seeing the result the previous one left.
    pub async fn post(
        &self,
        tool: &str,
        args: &Value,
        mut content: String,
        is_error: bool,
        workspace: &Path,
    ) -> String {
        for hook in self.matching(HookEvent::Post, tool) {
            let input = json!({
                "event": "post", "tool": tool, "args": args,
                "result": content, "is_error": is_error,
            });
            match run(hook, &input, workspace, self.jail.as_ref()).await {
                Ran::Exited { ok: true, output } if !output.trim().is_empty() => content = output,
                Ran::Exited { ok: true, .. } => {}
                Ran::Exited { ok: false, output } => {
                    tracing::warn!(hook = %hook.name, %tool, "post hook exited with an error: {}", output.trim());
                }
                Ran::Failed(err) => {
                    tracing::warn!(hook = %hook.name, %tool, "post hook failed: {err}")
                }
            }
        }
        content
    }

    fn matching(&self, event: HookEvent, tool: &str) -> impl Iterator<Item = &Hook> {
        self.hooks
            .iter()
            .filter(move |h| h.event == event && h.matches(tool))
    }
}

/// Run `hook` with `input`; in the jail, protected files it changed are put back.
async fn run(hook: &Hook, input: &Value, workspace: &Path, jail: Option<&Jail>) -> Ran {
    match jail {
        Some(jail) => {
            crate::sandbox::bracket(
                &jail.command_lock(),
                workspace,
                run_once(hook, input, workspace, Some(jail)),
            )
            .await
            .0
        }
        None => run_once(hook, input, workspace, jail).await,
    }
}

async fn run_once(hook: &Hook, input: &Value, workspace: &Path, jail: Option<&Jail>) -> Ran {
    let args = [OsString::from("-c"), OsString::from(&hook.command)];
    let mut cmd = match jail {
        Some(jail) => match jail.command("/bin/sh", &args) {
            Ok(cmd) => cmd,
            Err(err) => return Ran::Failed(err.to_string()),
        },
        None => {
            let mut cmd = Command::new("/bin/sh");
            cmd.args(&args);
            cmd
        }
    };
    cmd.current_dir(workspace)
        .env_clear()
        .envs(build_env(|key| std::env::var_os(key), workspace))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => return Ran::Failed(format!("cannot start /bin/sh: {err}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its input is fine: ignore a closed pipe.
        let _ = stdin.write_all(input.to_string().as_bytes()).await;
    }
    match tokio::time::timeout(hook.timeout, child.wait_with_output()).await {
        Err(_) => Ran::Failed(format!("no answer within {}s", hook.timeout.as_secs())),
        Ok(Err(err)) => Ran::Failed(err.to_string()),
        Ok(Ok(out)) => {
            let shown = if out.stdout.is_empty() || !out.status.success() && !out.stderr.is_empty()
            {
                &out.stderr
            } else {
                &out.stdout
            };
            let mut output = String::from_utf8_lossy(shown).into_owned();
            if output.len() > MAX_OUTPUT {
                let cut = output.floor_char_boundary(MAX_OUTPUT);
                output.truncate(cut);
            }
            Ran::Exited {
                ok: out.status.success(),
                output,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(list: &[(&str, HookEvent, &[&str], &str)]) -> Hooks {
        let config: Vec<(String, HookConfig)> = list
            .iter()
            .map(|(name, event, tools, command)| {
                (
                    name.to_string(),
                    HookConfig {
                        event: *event,
                        tools: tools.iter().map(|t| t.to_string()).collect(),
                        command: command.to_string(),
                        timeout_secs: 2,
                    },
                )
            })
            .collect();
        Hooks::new(config.iter().map(|(n, h)| (n, h)))
    }

    #[tokio::test]
    async fn a_pre_hook_refuses_with_its_reason_and_sees_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = hooks(&[(
            "guard",
            HookEvent::Pre,
            &["exec"],
            r#"grep -q '"command":"git push' && { echo "no pushing on Sundays" >&2; exit 2; }; exit 0"#,
        )]);
        let push = json!({"command": "git push origin"});
        let err = hooks
            .pre("exec", &push, dir.path())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("`guard` refused"), "{err}");
        assert!(err.contains("no pushing on Sundays"), "{err}");
        assert!(
            hooks
                .pre("exec", &json!({"command": "ls"}), dir.path())
                .await
                .is_ok()
        );
        // Other tools are not this hook's business.
        assert!(hooks.pre("read_file", &push, dir.path()).await.is_ok());
    }

    #[tokio::test]
    async fn a_pre_hook_that_hangs_or_cannot_run_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let slow = hooks(&[("slow", HookEvent::Pre, &[], "sleep 5")]);
        let err = slow
            .pre("exec", &json!({}), dir.path())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("no answer within 2s"), "{err}");
        let missing = hooks(&[("gone", HookEvent::Pre, &[], "/nonexistent/hook")]);
        assert!(missing.pre("exec", &json!({}), dir.path()).await.is_err());
    }

    #[tokio::test]
    async fn post_hooks_replace_the_result_in_order_and_prefix_patterns_match() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = hooks(&[
            (
                "a-redact",
                HookEvent::Post,
                &["mcp__*"],
                "sed 's/.*\"result\":\"\\([^\"]*\\)\".*/\\1/; s/secret/[hidden]/'",
            ),
            ("b-quiet", HookEvent::Post, &["mcp__*"], "true"),
            ("c-broken", HookEvent::Post, &[], "exit 3"),
        ]);
        let out = hooks
            .post(
                "mcp__x__get",
                &json!({}),
                "the secret plan".into(),
                false,
                dir.path(),
            )
            .await;
        assert_eq!(out.trim(), "the [hidden] plan");
        let untouched = hooks
            .post(
                "read_file",
                &json!({}),
                "the secret plan".into(),
                false,
                dir.path(),
            )
            .await;
        assert_eq!(untouched, "the secret plan");
    }

    #[tokio::test]
    async fn hooks_get_no_secrets_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY of intent: set_var is unsafe in edition 2024; use a variable the test
        // process already has instead of adding one.
        let hooks = hooks(&[("env", HookEvent::Post, &[], "env | sort")]);
        let out = hooks
            .post("exec", &json!({}), String::new(), false, dir.path())
            .await;
        assert!(out.contains("PATH="), "{out}");
        assert!(!out.contains("CARGO_PKG_NAME"), "{out}");
    }
}
