//! The host's lines, routed by `type` as seed 001 routes them: `message` (queued while
//! a turn runs), `stop`, `interrupt`, `set_model`, `set_permission_mode`, the answers
//! (`plan_approval_response`, `user_question_response`, and Pincer's
//! `permission_response`), and the queries — `get_supported_models`,
//! `get_supported_commands`, `get_mcp_status`, `get_account_info` — answered with the
//! seed's response events. `rewind_files` is answered `files_rewound {success: false}`
//! (Pincer keeps no file checkpoints); any other type gets a `command_error`.

use serde_json::{Value, json};

use super::super::Handles;
use super::Runner;
use pincer_core::tools::approval::Approval;
use pincer_core::tools::mode::PermissionMode;

impl Runner {
    /// One line from the host; true when it asked to stop.
    pub(super) async fn input(&mut self, line: &str, running: &Handles) -> anyhow::Result<bool> {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            if !line.trim().is_empty() {
                self.warn("a line that is not JSON was ignored").await?;
            }
            return Ok(false);
        };
        match message["type"].as_str().unwrap_or_default() {
            "message" => {
                if message["attachments"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
                {
                    self.warn("attachments are not read by pincer agent: put files in the workspace and name them in the message").await?;
                }
                let text = message["content"].as_str().unwrap_or_default().to_string();
                if self.turn.is_some() {
                    self.queue.push_back(text);
                } else {
                    self.begin(text, running).await?;
                }
            }
            "stop" => return Ok(true),
            "interrupt" => {
                running.dispatcher.stop(&self.chat.key);
                self.asks.deny_all();
                self.line(json!({"type": "interrupted"})).await?;
            }
            "set_model" => {
                let model = message["model"].as_str().unwrap_or("auto").to_string();
                match running.dispatcher.pin_model(&self.chat.key, &model).await {
                    Ok(_) => {
                        self.model = Some(model.clone());
                        self.line(json!({"type": "model_changed", "model": model}))
                            .await?;
                    }
                    Err(error) => self.command_error("set_model", error.to_string()).await?,
                }
            }
            "set_permission_mode" => {
                let name = message["permissionMode"].as_str().unwrap_or_default();
                match PermissionMode::parse(name) {
                    Some(mode) => {
                        self.mode = mode;
                        running.agent.modes().set(self.chat.session, mode);
                        self.line(
                            json!({"type": "permission_mode_changed", "mode": mode.as_str()}),
                        )
                        .await?;
                    }
                    None => {
                        let error = format!(
                            "{name} is not a permission mode; use default, acceptEdits, plan or bypassPermissions"
                        );
                        self.command_error("set_permission_mode", error).await?;
                    }
                }
            }
            "plan_approval_response" => {
                let id = request_id(&message, "planApprovalRequestId");
                let approval = match (
                    message["planApproved"] == true,
                    &message["planApprovalReason"],
                ) {
                    (true, _) => Approval::Once,
                    (false, Value::String(why)) if !why.is_empty() => {
                        Approval::Refused(why.clone())
                    }
                    (false, _) => Approval::Deny,
                };
                self.asks.answer(id, approval);
            }
            "user_question_response" => {
                let id = request_id(&message, "questionRequestId").to_string();
                let question = self.asks.question(&id).unwrap_or_default().to_string();
                let answers = &message["answers"];
                let approval = match answers[question.as_str()].as_str() {
                    _ if answers["__cancelled"] == "true" => {
                        Approval::Refused("the question was cancelled".into())
                    }
                    Some(text) => Approval::Answered(text.to_string()),
                    // One answer, whatever it is keyed by.
                    None => match answers.as_object().and_then(|m| m.values().next()) {
                        Some(Value::String(text)) => Approval::Answered(text.clone()),
                        _ => Approval::Refused("no answer was given".into()),
                    },
                };
                self.asks.answer(&id, approval);
            }
            "permission_response" => {
                let id = message["requestId"].as_str().unwrap_or_default();
                let approval = if message["allow"] == true {
                    Approval::Once
                } else {
                    Approval::Refused(
                        message["message"]
                            .as_str()
                            .unwrap_or("the host said no")
                            .to_string(),
                    )
                };
                if !self.asks.answer(id, approval) {
                    self.warn(&format!("permission_response: no request {id} waits (answered already, or refused after host.approval_timeout_secs)")).await?;
                }
            }
            "get_supported_models" => {
                let models = self.supported_models();
                self.line(json!({"type": "supported_models", "models": models}))
                    .await?;
            }
            "get_supported_commands" => {
                let commands = supported_commands();
                self.line(json!({"type": "supported_commands", "commands": commands}))
                    .await?;
            }
            "get_mcp_status" => {
                let servers = self.mcp_servers();
                self.line(json!({"type": "mcp_status", "servers": servers}))
                    .await?;
            }
            "get_account_info" => {
                // Pincer has no account: the keys are the home's (.security.yml).
                self.line(json!({"type": "account_info", "info": {"apiKeySource": "none"}}))
                    .await?;
            }
            "rewind_files" => {
                self.line(json!({"type": "files_rewound", "checkpointUuid": message["checkpointUuid"],
                                 "success": false,
                                 "error": "Pincer keeps no file checkpoints (--enable-checkpointing is not supported)"}))
                    .await?;
            }
            other => {
                self.command_error(
                    other,
                    "not supported by pincer agent (see docs/protocols.md)".into(),
                )
                .await?;
            }
        }
        Ok(false)
    }

    async fn warn(&mut self, message: &str) -> anyhow::Result<()> {
        self.line(json!({"type": "warning", "message": message}))
            .await
    }

    async fn command_error(&mut self, command: &str, error: String) -> anyhow::Result<()> {
        self.line(json!({"type": "command_error", "command": command, "error": error}))
            .await
    }

    /// What `set_model` takes: the router's tiers and every model of their chains.
    fn supported_models(&self) -> Vec<Value> {
        use pincer_core::router::Tier;
        let models = self.agent.models();
        let mut out = vec![json!({"value": "auto", "displayName": "auto",
            "description": "the router picks light or heavy for each turn"})];
        for (tier, name) in [(Tier::Light, "light"), (Tier::Heavy, "heavy")] {
            let Some((found, chain)) = models.tier(tier) else {
                continue;
            };
            if found != tier {
                continue;
            }
            let labels: Vec<&str> = chain.labels().collect();
            out.push(json!({"value": name, "displayName": name,
                "description": format!("the {name} chain: {}", labels.join(", "))}));
            for label in labels {
                out.push(json!({"value": label, "displayName": label,
                    "description": format!("{name} chain; context window {} tokens",
                                           models.caps.context_tokens(label))}));
            }
        }
        out
    }

    /// The MCP servers and their state, as the CLI names states.
    pub(super) fn mcp_servers(&self) -> Vec<Value> {
        self.agent
            .mcp_status()
            .into_iter()
            .map(|(name, state)| {
                let status = super::super::mcp_state(&state);
                json!({"name": name, "status": status, "detail": state})
            })
            .collect()
    }
}

/// The chat commands a `message` may be (`/compact`, `/status`, …), from their help.
fn supported_commands() -> Vec<Value> {
    pincer_core::dispatch::HELP
        .lines()
        .filter_map(|line| line.strip_prefix('/'))
        .filter_map(|line| line.split_once(" — "))
        .map(|(usage, description)| {
            let (name, hint) = usage.split_once(' ').unwrap_or((usage, ""));
            json!({"name": name, "description": description, "argumentHint": hint})
        })
        .collect()
}

/// The request an answer names: by its own field (`planApprovalRequestId`,
/// `questionRequestId`) or, as the request itself carried it, `requestId`.
fn request_id<'a>(message: &'a Value, field: &str) -> &'a str {
    message[field]
        .as_str()
        .or(message["requestId"].as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chat_command_is_listed_with_its_hint() {
        let commands = supported_commands();
        let named = |n: &str| commands.iter().find(|c| c["name"] == n).cloned();
        assert_eq!(named("compact").expect("compact")["argumentHint"], "");
        let model = named("model").expect("model");
        assert_eq!(model["argumentHint"], "[light|heavy|auto|provider/model]");
        assert!(named("help").is_some() && named("new").is_some());
        assert!(
            commands
                .iter()
                .all(|c| !c["description"].as_str().unwrap_or_default().is_empty())
        );
    }
}
