//! The host's lines, routed by `type` as seed 001 routes them: `message` (queued while
//! a turn runs), `stop`, `interrupt`, `set_model`, `set_permission_mode`, the answers
//! (`plan_approval_response`, `user_question_response`, and Pincer's
//! `permission_response`), and the queries — `get_supported_models`,
//! `get_supported_commands`, `get_mcp_status`, `get_account_info` — answered with the
//! seed's response events. `rewind_files` is answered `files_rewound {success: false}`
//! (Pincer keeps no file checkpoints); any other type gets a `command_error`.

use serde_json::{Map, Value};

use super::super::Handles;
use super::Runner;
use super::wire::{AccountInfo, Event, Input, Line, McpServer};
use crate::{Command, ModelChoice};
use pincer_core::tools::approval::Approval;
use pincer_core::tools::mode::PermissionMode;

impl Runner {
    /// One line from the host; true when it asked to stop.
    pub(super) async fn input(&mut self, line: &str, running: &Handles) -> anyhow::Result<bool> {
        let input = match Line::read(line) {
            Ok(Line::Input(input)) => input,
            Ok(Line::Unknown(other)) => {
                self.command_error(
                    &other,
                    "not supported by pincer agent (see docs/protocols.md)".into(),
                )
                .await?;
                return Ok(false);
            }
            Err(_) => {
                if !line.trim().is_empty() {
                    self.warn("a line that is not JSON was ignored").await?;
                }
                return Ok(false);
            }
        };
        match input {
            Input::Message {
                content,
                attachments,
            } => {
                if !attachments.is_empty() {
                    self.warn("attachments are not read by pincer agent: put files in the workspace and name them in the message").await?;
                }
                if self.turn.is_some() {
                    self.queue.push_back(content);
                } else {
                    self.begin(content, running).await?;
                }
            }
            Input::Stop => return Ok(true),
            Input::Interrupt => {
                running.dispatcher.stop(&self.chat.key);
                self.asks.deny_all();
                self.line(Event::Interrupted).await?;
            }
            Input::SetModel { model } => {
                let model = model.unwrap_or_else(|| "auto".into());
                match running.dispatcher.pin_model(&self.chat.key, &model).await {
                    Ok(_) => {
                        self.model = Some(model.clone());
                        self.line(Event::ModelChanged { model }).await?;
                    }
                    Err(error) => self.command_error("set_model", error.to_string()).await?,
                }
            }
            Input::SetPermissionMode {
                permission_mode: name,
            } => match PermissionMode::parse(&name) {
                Some(mode) => {
                    self.mode = mode;
                    running.agent.modes().set(self.chat.session, mode);
                    self.line(Event::PermissionModeChanged {
                        mode: mode.as_str().into(),
                    })
                    .await?;
                }
                None => {
                    let error = format!(
                        "{name} is not a permission mode; use default, acceptEdits, plan or bypassPermissions"
                    );
                    self.command_error("set_permission_mode", error).await?;
                }
            },
            Input::PlanApprovalResponse {
                plan_approval_request_id,
                request_id,
                plan_approved,
                plan_approval_reason,
            } => {
                // By its own field or, as the request itself carried it, `requestId`.
                let id = plan_approval_request_id.or(request_id).unwrap_or_default();
                let approval = match (plan_approved == Some(true), plan_approval_reason) {
                    (true, _) => Approval::Once,
                    (false, Some(why)) if !why.is_empty() => Approval::Refused(why),
                    (false, _) => Approval::Deny,
                };
                self.asks.answer(&id, approval);
            }
            Input::UserQuestionResponse {
                question_request_id,
                request_id,
                answers,
            } => {
                let id = question_request_id.or(request_id).unwrap_or_default();
                let question = self.asks.question(&id).unwrap_or_default().to_string();
                let approval = answered(&question, &answers);
                self.asks.answer(&id, approval);
            }
            Input::PermissionResponse {
                request_id: id,
                allow,
                message,
            } => {
                let approval = if allow == Some(true) {
                    Approval::Once
                } else {
                    Approval::Refused(message.unwrap_or_else(|| "the host said no".into()))
                };
                if !self.asks.answer(&id, approval) {
                    self.warn(&format!("permission_response: no request {id} waits (answered already, or refused after host.approval_timeout_secs)")).await?;
                }
            }
            Input::GetSupportedModels => {
                let models = self.supported_models();
                self.line(Event::SupportedModels { models }).await?;
            }
            Input::GetSupportedCommands => {
                let commands = supported_commands();
                self.line(Event::SupportedCommands { commands }).await?;
            }
            Input::GetMcpStatus => {
                let servers = self.mcp_servers();
                self.line(Event::McpStatus { servers }).await?;
            }
            Input::GetAccountInfo => {
                // Pincer has no account: the keys are the home's (.security.yml).
                let info = AccountInfo {
                    api_key_source: "none".into(),
                };
                self.line(Event::AccountInfo { info }).await?;
            }
            Input::RewindFiles { checkpoint_uuid } => {
                self.line(Event::FilesRewound {
                    checkpoint_uuid,
                    success: false,
                    error:
                        "Pincer keeps no file checkpoints (--enable-checkpointing is not supported)"
                            .into(),
                })
                .await?;
            }
        }
        Ok(false)
    }

    async fn warn(&mut self, message: &str) -> anyhow::Result<()> {
        self.line(Event::Warning {
            request_id: None,
            tool: None,
            message: message.into(),
        })
        .await
    }

    pub(super) async fn command_error(
        &mut self,
        command: &str,
        error: String,
    ) -> anyhow::Result<()> {
        self.line(Event::CommandError {
            command: command.into(),
            error,
        })
        .await
    }

    /// What `set_model` takes: the router's tiers and every model of their chains.
    fn supported_models(&self) -> Vec<ModelChoice> {
        use pincer_core::router::Tier;
        let models = self.agent.models();
        let choice = |value: &str, description: String| ModelChoice {
            value: value.into(),
            display_name: value.into(),
            description,
        };
        let mut out = vec![choice(
            "auto",
            "the router picks light or heavy for each turn".into(),
        )];
        for (tier, name) in [(Tier::Light, "light"), (Tier::Heavy, "heavy")] {
            let Some((found, chain)) = models.tier(tier) else {
                continue;
            };
            if found != tier {
                continue;
            }
            let labels: Vec<&str> = chain.labels().collect();
            out.push(choice(
                name,
                format!("the {name} chain: {}", labels.join(", ")),
            ));
            for label in labels {
                out.push(choice(
                    label,
                    format!(
                        "{name} chain; context window {} tokens",
                        models.caps.context_tokens(label)
                    ),
                ));
            }
        }
        out
    }

    /// The MCP servers and their state, as the CLI names states.
    pub(super) fn mcp_servers(&self) -> Vec<McpServer> {
        self.agent
            .mcp_status()
            .into_iter()
            .map(|(name, state)| McpServer {
                name,
                status: super::super::mcp_state(&state).into(),
                detail: state,
            })
            .collect()
    }
}

/// What a `user_question_response` answered to `question`: the answer keyed by its
/// text, else the only answer whatever its key; nothing when it was cancelled.
fn answered(question: &str, answers: &Map<String, Value>) -> Approval {
    if answers.get("__cancelled").and_then(Value::as_str) == Some("true") {
        return Approval::Refused("the question was cancelled".into());
    }
    match answers.get(question) {
        Some(Value::String(text)) => Approval::Answered(text.clone()),
        // One answer, whatever it is keyed by.
        _ => match answers.values().next() {
            Some(Value::String(text)) => Approval::Answered(text.clone()),
            _ => Approval::Refused("no answer was given".into()),
        },
    }
}

/// The chat commands a `message` may be (`/compact`, `/status`, …), from their help.
fn supported_commands() -> Vec<Command> {
    pincer_core::dispatch::HELP
        .lines()
        .filter_map(|line| line.strip_prefix('/'))
        .filter_map(|line| line.split_once(" — "))
        .map(|(usage, description)| {
            let (name, hint) = usage.split_once(' ').unwrap_or((usage, ""));
            Command {
                name: name.into(),
                description: description.into(),
                argument_hint: hint.into(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chat_command_is_listed_with_its_hint() {
        let commands = supported_commands();
        let named = |n: &str| commands.iter().find(|c| c.name == n).cloned();
        assert_eq!(named("compact").expect("compact").argument_hint, "");
        let model = named("model").expect("model");
        assert_eq!(model.argument_hint, "[light|heavy|auto|provider/model]");
        assert!(named("help").is_some() && named("new").is_some());
        assert!(commands.iter().all(|c| !c.description.is_empty()));
    }
}
