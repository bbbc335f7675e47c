//! The control exchange, both ways. The host asks (`control_request`: `initialize` with
//! its hooks, `interrupt`, `set_permission_mode`, `set_model`, `mcp_status`,
//! `get_context_usage`; anything else is `Request::Unsupported`) and Pincer replies
//! (`control_response` `success` or `error`). Pincer asks (`can_use_tool`,
//! `hook_callback`, `mcp_message`) and the host answers, in the SDK form or in seed 002
//! §6's adapter form, which `HostAnswer::answered` turns into the SDK form.

use crate::{Command, ModelChoice};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::messages::McpServer;
use super::permission::PermissionUpdate;
use crate::lenient::{lenient, lenient_items};

/// A `control_request` from the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct HostRequest {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) request_id: String,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) request: Request,
}

/// What the host asks of Pincer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Request {
    Known(Known),
    /// A request Pincer does not honour (`rewind_files`, `mcp_reconnect`,
    /// `mcp_toggle`, `stop_task`, what comes after): answered with an error naming it.
    Unsupported(Unsupported),
}

impl Default for Request {
    fn default() -> Request {
        Request::Unsupported(Unsupported::default())
    }
}

/// The requests Pincer honours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub(crate) enum Known {
    Initialize(Initialize),
    Interrupt,
    SetPermissionMode {
        #[serde(default, deserialize_with = "lenient")]
        mode: String,
    },
    SetModel {
        /// None (the SDKs send `null`): `auto`.
        #[serde(default, deserialize_with = "lenient")]
        model: Option<String>,
    },
    McpStatus,
    GetContextUsage,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Unsupported {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) subtype: String,
    /// Its fields, unread.
    #[serde(flatten)]
    pub(crate) fields: Map<String, Value>,
}

/// `initialize`: the SDK's hooks (its `agents`, `skills` and prompt options are not
/// read: Pincer's config decides those).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Initialize {
    /// `null` (no hooks) as the SDKs send it when none are registered.
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) hooks: Option<Hooks>,
}

/// `initialize.hooks`: each event's matchers, in the order the SDK wrote them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Hooks(pub Vec<(String, Vec<HookMatcher>)>);

impl<'de> Deserialize<'de> for Hooks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Hooks, D::Error> {
        let events = Map::<String, Value>::deserialize(deserializer)?;
        Ok(Hooks(
            events
                .into_iter()
                .map(|(event, matchers)| (event, crate::lenient::items(matchers)))
                .collect(),
        ))
    }
}

impl Serialize for Hooks {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(event, matchers)| (event, matchers)))
    }
}

/// One matcher of an event: which tools, and the callbacks to call for them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct HookMatcher {
    /// A tool name, names joined by `|`, or a pattern; none (`null`), `""` or `*`: every
    /// tool.
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) matcher: Option<String>,
    #[serde(
        rename = "hookCallbackIds",
        default,
        deserialize_with = "lenient_items"
    )]
    pub(crate) hook_callback_ids: Vec<String>,
    /// `continue`, or `block` (or anything else): a failed callback denies.
    #[serde(
        rename = "onFailure",
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) on_failure: Option<String>,
}

/// Pincer's `control_response` to a host's request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct PincerReply {
    pub(crate) response: Reply,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub(crate) enum Reply {
    Success {
        request_id: String,
        response: ReplyBody,
    },
    Error {
        request_id: String,
        error: String,
    },
}

impl PincerReply {
    /// The answer to request `request_id`: `success` with its body, or `error` with why.
    pub(crate) fn to(request_id: String, answer: Result<ReplyBody, String>) -> PincerReply {
        let response = match answer {
            Ok(response) => Reply::Success {
                request_id,
                response,
            },
            Err(error) => Reply::Error { request_id, error },
        };
        PincerReply { response }
    }
}

/// What a `success` carries, by request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(untagged)]
pub(crate) enum ReplyBody {
    // Read back (in tests) most fields first: an untagged body is the first that fits.
    Initialized(Box<Initialized>),
    ContextUsage(Box<ContextUsage>),
    McpStatus {
        #[serde(rename = "mcpServers")]
        mcp_servers: Vec<McpServer>,
    },
    /// `interrupt`: the messages still waiting (Pincer keeps none for the SDK).
    Interrupted {
        still_queued: Vec<String>,
    },
    Mode {
        mode: String,
    },
    Model {
        model: String,
    },
}

/// The answer to `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct Initialized {
    /// The CLI's slash commands and agents: Pincer offers none through the SDK.
    pub(crate) commands: Vec<Command>,
    pub(crate) agents: Vec<AgentInfo>,
    pub(crate) output_style: String,
    pub(crate) available_output_styles: Vec<String>,
    pub(crate) models: Vec<ModelChoice>,
    pub(crate) account: Account,
    /// A callback whose matcher says `onFailure: "block"` blocks when it fails.
    pub(crate) hook_on_failure_supported: bool,
    /// The hooks `initialize` named are registered (the CLI leaves this out).
    #[cfg_attr(test, serde(default))]
    pub(crate) hooks_applied: bool,
}

impl Initialized {
    pub(crate) fn pincer() -> Initialized {
        let mut models = vec![ModelChoice {
            value: "auto".into(),
            display_name: "Auto".into(),
            description: "the router picks light or heavy".into(),
        }];
        for tier in ["light", "heavy"] {
            models.push(ModelChoice {
                value: tier.into(),
                display_name: tier.into(),
                description: format!("the {tier} chain"),
            });
        }
        Initialized {
            commands: Vec::new(),
            agents: Vec::new(),
            output_style: "default".into(),
            available_output_styles: vec!["default".into()],
            models,
            account: Account {
                api_key_source: "none".into(),
                token_source: "none".into(),
            },
            hook_on_failure_supported: true,
            hooks_applied: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct AgentInfo {
    pub(crate) name: String,
    pub(crate) description: String,
}

/// Where the keys come from: Pincer's are the home's, so "none".
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct Account {
    pub(crate) api_key_source: String,
    pub(crate) token_source: String,
}

/// The answer to `get_context_usage`: how much of the model's window the last call's
/// prompt took, as one category (Pincer does not split the prompt up). The lists the
/// SDK types as objects Pincer has nothing for are empty.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContextUsage {
    pub(crate) categories: Vec<Category>,
    pub(crate) total_tokens: u64,
    pub(crate) max_tokens: u64,
    pub(crate) raw_max_tokens: u64,
    pub(crate) percentage: f64,
    pub(crate) model: String,
    pub(crate) is_auto_compact_enabled: bool,
    pub(crate) memory_files: Vec<Map<String, Value>>,
    pub(crate) mcp_tools: Vec<Map<String, Value>>,
    pub(crate) agents: Vec<Map<String, Value>>,
    pub(crate) grid_rows: Vec<Vec<Map<String, Value>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct Category {
    pub(crate) name: String,
    pub(crate) tokens: u64,
    pub(crate) color: String,
}

impl ContextUsage {
    /// `used` tokens of `model`'s window of `window`.
    pub(crate) fn new(model: &str, window: u64, used: u64) -> ContextUsage {
        let percentage = if window == 0 {
            0.0
        } else {
            used as f64 * 100.0 / window as f64
        };
        ContextUsage {
            categories: vec![Category {
                name: "Conversation".into(),
                tokens: used,
                color: "blue".into(),
            }],
            total_tokens: used,
            max_tokens: window,
            raw_max_tokens: window,
            percentage,
            model: model.to_string(),
            is_auto_compact_enabled: true,
            memory_files: Vec::new(),
            mcp_tools: Vec::new(),
            agents: Vec::new(),
            grid_rows: Vec::new(),
        }
    }
}

/// Pincer's `control_request` to the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct PincerRequest {
    /// `pincer-req-N`, `pincer-hook-N`, `pincer-mcp-N`.
    pub(crate) request_id: String,
    pub(crate) request: Question,
}

/// What Pincer asks the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub(crate) enum Question {
    CanUseTool(Box<CanUseTool>),
    /// Call one of the SDK's hook callbacks.
    HookCallback {
        callback_id: String,
        /// The event's input, as the CLI gives its hooks.
        input: Value,
        tool_use_id: Option<String>,
    },
    /// A JSON-RPC message for one of the SDK's in-process MCP servers.
    McpMessage {
        server_name: String,
        message: Value,
    },
}

/// May this call run?
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct CanUseTool {
    pub(crate) tool_name: String,
    // The CLI leaves out what it has not got (read back in tests: its lines too).
    #[cfg_attr(test, serde(default))]
    pub(crate) display_name: String,
    pub(crate) input: Value,
    pub(crate) tool_use_id: String,
    /// The tool and what it would do.
    #[cfg_attr(test, serde(default))]
    pub(crate) description: String,
    #[cfg_attr(test, serde(default))]
    pub(crate) permission_suggestions: Vec<PermissionUpdate>,
    /// The file a file tool would touch.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) blocked_path: Option<String>,
    /// Why the call is asked about ("asked because …").
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) decision_reason: Option<String>,
    /// `exit_plan_mode`: a person must answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) requires_user_interaction: Option<bool>,
}

/// A `control_response` from the host: its answer to one of Pincer's requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct HostAnswer {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) response: Answer,
    /// Seed 002 §6's adapters put the request's id here, beside `response`.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) request_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Answer {
    /// `success` or `error`; seed 002's adapters put the decision here (`allow`, `deny`).
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) subtype: String,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) request_id: Option<String>,
    /// A `success`'s body: a `can_use_tool` decision, a hook's output or an MCP reply —
    /// which one, only the request it answers says, so it is read when that is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response: Option<Value>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) error: Option<String>,
    /// Seed 002's adapter form: the decision's fields (`message`, `updatedInput`, …)
    /// beside `subtype`.
    #[serde(flatten)]
    pub(crate) adapter: Map<String, Value>,
}

/// A host's answer in the SDK form, whichever form it came in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answered {
    pub(crate) request_id: Option<String>,
    /// A `success`'s body, or an `error`'s reason.
    pub(crate) outcome: Result<Value, Option<String>>,
}

impl HostAnswer {
    /// The adapter form — `request_id` beside `response`, `response: {"subtype":
    /// "allow", …}` — read as the SDK form: `success` with `{"behavior": "allow", …}`.
    pub(crate) fn answered(self) -> Answered {
        let Answer {
            subtype,
            request_id,
            response,
            error,
            mut adapter,
        } = self.response;
        let outcome = match subtype.as_str() {
            "allow" | "deny" => {
                adapter.insert("behavior".into(), Value::String(subtype));
                Ok(Value::Object(adapter))
            }
            "error" => Err(error),
            _ => Ok(response.unwrap_or_default()),
        };
        Answered {
            request_id: request_id.or(self.request_id),
            outcome,
        }
    }
}

/// An `mcp_message`'s answer: the server's JSON-RPC reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct McpAnswer {
    #[serde(default)]
    pub(crate) mcp_response: Value,
}
