//! `pincer agent [--protocol stream-json|runner] [--session KEY] [SDK flags…]`. The
//! Claude Agent SDKs start their CLI with many flags, as `--flag value` (Python) or
//! `--flag=value` (TypeScript); so that an SDK's `cli_path` can be a script running
//! `pincer agent "$@"`, both forms are read, the flags Pincer can honour are honoured
//! (README lists them) and every other flag is accepted and ignored with a note on
//! stderr. Seed 001's runner flags (`RunnerFlags`) are read the same way; its default
//! permission mode is `bypassPermissions`, so that is what `--protocol runner` starts in.

use pincer_core::tools::mode::PermissionMode;
use pincer_core::tools::preset::ToolPreset;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// The Claude Code CLI's stream-json protocol (seed 002).
    #[default]
    StreamJson,
    /// Seed 001's JSON lines.
    Runner,
}

/// What `pincer agent` was asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args {
    pub(crate) protocol: Protocol,
    /// The conversation to resume (`--session`, `--resume`, `--session-id`).
    pub(crate) session: Option<String>,
    /// `--model`: pin this conversation to a model (`light`, `heavy`, `provider/model`).
    pub(crate) model: Option<String>,
    /// `--permission-mode`.
    pub(crate) mode: PermissionMode,
    /// `--include-partial-messages`: stream events as they come.
    pub(crate) partial: bool,
    /// `--permission-prompt-tool stdio`: approvals are asked of the host.
    pub(crate) ask_host: bool,
    /// `--max-turns N`: the most model calls one turn may make (stream-json).
    pub(crate) max_turns: Option<u32>,
    /// `--fork-session`: continue a copy of the `--resume`d conversation (stream-json).
    pub(crate) fork_session: bool,
    /// `--mcp-config`'s servers of `type: "sdk"`: the host's in-process MCP servers,
    /// reached through `mcp_message` (stream-json).
    pub(crate) sdk_servers: Vec<String>,
    /// Flags accepted and not acted on, for the note on stderr.
    pub(crate) ignored: Vec<String>,
    /// Seed 001's runner flags (`--protocol runner` only).
    pub(crate) runner: RunnerFlags,
}

/// What seed 001's runner is started with besides `--model`, `--permission-mode` and
/// `--resume` (read into `Args`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunnerFlags {
    /// `--conversation-id ID`: the local conversation `terminal:dm:<ID>`.
    pub(crate) conversation_id: Option<String>,
    /// `--fork`: a new conversation starting with a copy of the named one's history.
    pub(crate) fork: bool,
    /// `--tool-preset`: the tools the conversation keeps.
    pub(crate) preset: ToolPreset,
    /// `--cwd`: the backend's working folder (Pincer's tools work in its workspace).
    pub(crate) cwd: Option<String>,
}

/// Seed 001's runner flags that take a value; those not in `RunnerFlags` are ignored
/// with a note.
const RUNNER_TAKES_VALUE: &[&str] = &[
    "--cwd",
    "--conversation-id",
    "--tool-preset",
    "--linear-issue",
    "--target-branch",
    "--structured-output",
    "--instructions-file",
    "--mcp-servers-file",
    "--sdk-debug-file",
];

/// Flags that take a value (`--flag value`), besides the honoured ones.
const TAKES_VALUE: &[&str] = &[
    "--system-prompt",
    "--system-prompt-file",
    "--append-system-prompt",
    "--tools",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--max-budget-usd",
    "--task-budget",
    "--fallback-model",
    "--betas",
    "--settings",
    "--add-dir",
    "--setting-sources",
    "--plugin-dir",
    "--thinking",
    "--max-thinking-tokens",
    "--thinking-display",
    "--effort",
    "--json-schema",
    "--agent",
    "--debug-file",
    "--resume-session-at",
    "--resume-drops-turn",
    "--permission-prompts",
    "--channels",
    "--project-config-root",
    "--initialize-fields",
    "--agents",
];

/// Why `pincer agent`'s command line cannot be used; each names the fix.
#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error("{0} needs a value")]
    NeedsValue(String),
    #[error("--protocol {0} is not one Pincer speaks; use stream-json or runner")]
    Protocol(String),
    #[error(
        "--permission-mode {0} is not a mode; use default, acceptEdits, plan, bypassPermissions or dontAsk"
    )]
    PermissionMode(String),
    #[error("--max-turns {0}: give a number of model calls, 1 or more")]
    MaxTurns(String),
    #[error("{flag} {value}: pincer agent speaks stream-json only")]
    Format { flag: String, value: String },
    #[error("--tool-preset {0} is not a preset; use full, read-only, no-bash or safe-edit")]
    ToolPreset(String),
    #[error("--mcp-config {path}: cannot read it: {source}")]
    McpConfigUnreadable {
        path: String,
        source: std::io::Error,
    },
    #[error("--mcp-config is not JSON ({0}); give {{\"mcpServers\": {{…}}}}")]
    McpConfigNotJson(serde_json::Error),
    #[error("--mcp-config has no \"mcpServers\" object")]
    McpConfigWithoutServers,
}

impl Args {
    pub fn parse(args: &[String]) -> Result<Args, ArgsError> {
        let mut out = Args::default();
        let (mut mode_given, mut runner_flags) = (false, Vec::new());
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            i += 1;
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
                _ => (arg.as_str(), None),
            };
            let needs_value = matches!(
                flag,
                "--protocol"
                    | "--session"
                    | "--resume"
                    | "-r"
                    | "--session-id"
                    | "--model"
                    | "--permission-mode"
                    | "--permission-prompt-tool"
                    | "--max-turns"
                    | "--output-format"
                    | "--input-format"
                    | "--mcp-config"
            ) || TAKES_VALUE.contains(&flag)
                || RUNNER_TAKES_VALUE.contains(&flag);
            let value = if needs_value {
                match inline {
                    Some(value) => Some(value),
                    None if i < args.len() => {
                        i += 1;
                        Some(args[i - 1].clone())
                    }
                    None => return Err(ArgsError::NeedsValue(flag.to_string())),
                }
            } else {
                inline
            };
            let value = value.unwrap_or_default();
            match flag {
                "--protocol" => {
                    out.protocol = match value.as_str() {
                        "stream-json" => Protocol::StreamJson,
                        "runner" => Protocol::Runner,
                        other => return Err(ArgsError::Protocol(other.to_string())),
                    }
                }
                "--session" | "--resume" | "-r" | "--session-id" if !value.is_empty() => {
                    out.session = Some(value);
                }
                "--session" | "--resume" | "-r" | "--session-id" => {}
                "--continue" | "-c" => {
                    out.session = Some(
                        pincer_channels::SessionKey::direct(
                            pincer_channels::terminal::CHANNEL,
                            "local",
                        )
                        .to_string(),
                    )
                }
                "--model" if !value.is_empty() => out.model = Some(value),
                "--model" => {}
                "--permission-mode" => {
                    mode_given = true;
                    out.mode = PermissionMode::parse(&value)
                        .ok_or_else(|| ArgsError::PermissionMode(value.clone()))?;
                }
                "--permission-prompt-tool" => out.ask_host = value == "stdio",
                "--include-partial-messages" => out.partial = true,
                "--max-turns" => {
                    let turns = value.parse::<u32>().ok().filter(|n| *n > 0);
                    out.max_turns = Some(turns.ok_or_else(|| ArgsError::MaxTurns(value.clone()))?);
                }
                "--output-format" | "--input-format" if value == "stream-json" => {}
                "--output-format" | "--input-format" => {
                    return Err(ArgsError::Format {
                        flag: flag.to_string(),
                        value,
                    });
                }
                "--verbose" | "-p" | "--print" => {}
                "--fork-session" => out.fork_session = true,
                "--mcp-config" => mcp_config(&value, &mut out)?,
                "--conversation-id" | "--cwd" | "--fork" | "--tool-preset" => {
                    runner_flags.push(flag.to_string());
                    match flag {
                        "--conversation-id" if !value.is_empty() => {
                            out.runner.conversation_id = Some(value)
                        }
                        "--cwd" if !value.is_empty() => out.runner.cwd = Some(value),
                        "--fork" => out.runner.fork = true,
                        "--tool-preset" => {
                            out.runner.preset = ToolPreset::parse(&value)
                                .ok_or_else(|| ArgsError::ToolPreset(value.clone()))?
                        }
                        _ => {}
                    }
                }
                // An empty value asks for nothing (the SDKs pass `--system-prompt ""`).
                other if other.starts_with('-') && needs_value && value.is_empty() => {}
                other if other.starts_with('-') => out.ignored.push(other.to_string()),
                // A bare word (a prompt given on the command line) is not read: the
                // conversation comes on stdin.
                other => out.ignored.push(other.to_string()),
            }
        }
        if out.protocol == Protocol::Runner {
            if !mode_given {
                out.mode = PermissionMode::BypassPermissions;
            }
        } else {
            out.ignored.append(&mut runner_flags);
        }
        Ok(out)
    }
}

/// One `--mcp-config` (JSON, or a file of it: `{"mcpServers": {NAME: {...}}}`): its
/// `type: "sdk"` servers are the host's own; the others are noted as ignored — Pincer's
/// MCP servers are configured in config.toml, where they get their sandbox and secrets.
fn mcp_config(value: &str, out: &mut Args) -> Result<(), ArgsError> {
    let text = if value.trim_start().starts_with('{') {
        value.to_string()
    } else {
        std::fs::read_to_string(value).map_err(|source| ArgsError::McpConfigUnreadable {
            path: value.to_string(),
            source,
        })?
    };
    let config: serde_json::Value =
        serde_json::from_str(&text).map_err(ArgsError::McpConfigNotJson)?;
    let Some(servers) = config["mcpServers"].as_object() else {
        return Err(ArgsError::McpConfigWithoutServers);
    };
    for (name, server) in servers {
        if server["type"] == "sdk" {
            out.sdk_servers.push(name.clone());
        } else {
            out.ignored.push(format!(
                "--mcp-config server {name} (configure it as [mcp.servers.{name}] in config.toml)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, ArgsError> {
        let args: Vec<String> = line.split(' ').map(str::to_string).collect();
        Args::parse(&args)
    }

    #[test]
    fn the_python_sdks_flags_are_read() {
        let args = parse(
            "--output-format stream-json --verbose --system-prompt  --input-format stream-json --permission-prompt-tool stdio --permission-mode plan --model heavy --include-partial-messages --setting-sources  --resume terminal:dm:agent-1",
        )
        .unwrap();
        assert_eq!(args.protocol, Protocol::StreamJson);
        assert_eq!(args.mode, PermissionMode::Plan);
        assert_eq!(args.model.as_deref(), Some("heavy"));
        assert!(args.partial && args.ask_host);
        assert_eq!(args.session.as_deref(), Some("terminal:dm:agent-1"));
        assert!(
            args.ignored.is_empty(),
            "an empty --system-prompt asks for nothing: {:?}",
            args.ignored
        );
        let args = parse("--system-prompt be-brief").unwrap();
        assert!(args.ignored.contains(&"--system-prompt".to_string()));
    }

    #[test]
    fn the_typescript_sdks_equals_form_is_read() {
        let args = parse(
            "--output-format stream-json --verbose --input-format stream-json --model=light --permission-mode=acceptEdits --permission-prompt-tool=stdio --setting-sources= --max-turns=7 --await-initialize",
        )
        .unwrap();
        assert_eq!(args.mode, PermissionMode::AcceptEdits);
        assert_eq!(args.model.as_deref(), Some("light"));
        assert_eq!(args.max_turns, Some(7));
        assert!(args.ask_host);
        assert!(args.ignored.contains(&"--await-initialize".to_string()));
    }

    #[test]
    fn seed_001s_runner_flags_are_read_and_the_rest_noted() {
        let args = parse(
            "--protocol runner --cwd /src/wt --conversation-id conv-7 --resume terminal:dm:conv-6 --fork --tool-preset read-only --linear-issue LIN-1 --enable-checkpointing",
        )
        .unwrap();
        assert_eq!(
            args.mode,
            PermissionMode::BypassPermissions,
            "seed 001's default"
        );
        assert_eq!(args.session.as_deref(), Some("terminal:dm:conv-6"));
        let runner = &args.runner;
        assert_eq!(runner.conversation_id.as_deref(), Some("conv-7"));
        assert_eq!(runner.cwd.as_deref(), Some("/src/wt"));
        assert!(runner.fork);
        assert_eq!(runner.preset, ToolPreset::ReadOnly);
        assert_eq!(args.ignored, ["--linear-issue", "--enable-checkpointing"]);
        let asked = parse("--protocol runner --permission-mode default").unwrap();
        assert_eq!(asked.mode, PermissionMode::Default);
        assert!(
            parse("--protocol runner --tool-preset everything")
                .unwrap_err()
                .to_string()
                .contains("read-only")
        );
        // Elsewhere they mean nothing, and say so.
        let stream = parse("--fork --tool-preset read-only").unwrap();
        assert_eq!(stream.mode, PermissionMode::Default);
        assert_eq!(stream.ignored, ["--fork", "--tool-preset"]);
    }

    #[test]
    fn wrong_values_say_what_works() {
        assert!(
            parse("--protocol acp")
                .unwrap_err()
                .to_string()
                .contains("stream-json or runner")
        );
        assert!(
            parse("--permission-mode yolo")
                .unwrap_err()
                .to_string()
                .contains("acceptEdits")
        );
        assert!(
            parse("--output-format text")
                .unwrap_err()
                .to_string()
                .contains("stream-json only")
        );
        assert!(
            parse("--resume terminal:dm:agent-1 --fork-session")
                .unwrap()
                .fork_session
        );
        assert_eq!(
            parse("--protocol runner").unwrap().protocol,
            Protocol::Runner
        );
    }

    #[test]
    fn an_mcp_config_names_the_hosts_own_servers_and_notes_the_others() {
        let config =
            r#"{"mcpServers":{"calc":{"type":"sdk","name":"calc"},"files":{"command":"x"}}}"#;
        let args = Args::parse(&["--mcp-config".into(), config.into()]).unwrap();
        assert_eq!(args.sdk_servers, ["calc"]);
        assert!(
            args.ignored[0].contains("[mcp.servers.files]"),
            "{:?}",
            args.ignored
        );
        assert!(
            parse("--mcp-config {nope")
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
        assert!(
            parse("--mcp-config /no/such/file")
                .unwrap_err()
                .to_string()
                .contains("cannot read")
        );
    }
}
