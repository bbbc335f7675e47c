//! One MCP tool as a Pincer [`Tool`]: its name (`mcp__<server>__<tool>`), its spec as
//! the server described it (calls are checked against it: `schema`), and `run`, which
//! sends `tools/call` and turns the result into text for the model.
//!
//! MCP output is data, never executed: text content is returned as it is, other content
//! (images, audio, blobs) is only summarised. This file must not reconnect: an
//! unavailable server is reported, and the manager retries it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use serde_json::Value;

use super::manager::Server;
use crate::provider::ToolSpec;
use crate::tools::{ArgsError, Parsed, Tool, ToolContext, ToolError};

/// How long one `tools/call` may take (time the owner spends answering the server's
/// questions not counted).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Most characters of a server's tool description put into the prompt.
const MAX_DESCRIPTION_CHARS: usize = 2000;

/// Longest tool name model APIs accept.
const MAX_NAME_LEN: usize = 64;

/// The name Pincer gives `tool` of `server`: `mcp__<server>__<tool>`, with every
/// character outside `[a-zA-Z0-9_-]` replaced by `_`, cut to 64 characters.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut name = format!("mcp__{}__{}", clean(server), clean(tool));
    // Only ASCII is left, so any byte index is a character boundary.
    name.truncate(MAX_NAME_LEN);
    name
}

/// A tool of a connected MCP server, offered to the model.
pub(super) struct McpTool {
    /// The server that owns the tool; asked for its live session at each call.
    server: Arc<Server>,
    /// The tool's own name on the server (the exposed name is sanitised).
    remote_name: String,
    spec: ToolSpec,
    /// The server says the tool changes nothing (`readOnlyHint`); believed only of a
    /// server marked `trusted`.
    read_only: bool,
}

impl McpTool {
    pub(super) fn new(server: Arc<Server>, tool: &rmcp::model::Tool) -> Self {
        let description = tool.description.as_deref().unwrap_or("");
        let description: String = description.chars().take(MAX_DESCRIPTION_CHARS).collect();
        let spec = ToolSpec {
            name: tool_name(server.name(), &tool.name),
            description: format!("[MCP server {}] {description}", server.name()),
            input_schema: Value::Object((*tool.input_schema).clone()).into(),
        };
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        Self {
            server,
            remote_name: tool.name.to_string(),
            spec,
            read_only,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    /// What a server's tool does is the server's to say, and nobody vouches for it: it
    /// may act in every way and its answers are untrusted; its description too, unless
    /// the server is marked `trusted` — then a tool it marks `readOnlyHint` is believed
    /// to act in no way (its answers stay untrusted). It is never the owner's memory (so
    /// a tier's `mcp__server__*` pattern can offer it), and subagents have it.
    fn effects(&self) -> crate::tools::Effects {
        use crate::tools::Effects;
        if self.server.trusted() && self.read_only {
            return Effects::FETCHES | Effects::UNTRUSTED | Effects::PLAN | Effects::SUBAGENT;
        }
        let effects = Effects::STRICTEST.difference(Effects::OWNER_MEMORY | Effects::WRITES_MEMORY)
            | Effects::SUBAGENT;
        match self.server.trusted() {
            true => effects,
            false => effects | Effects::UNVOUCHED,
        }
    }

    fn parse(&self, args: &Value) -> Result<Parsed, ArgsError> {
        super::schema::validate(&self.spec.input_schema, args)
            .map_err(|e| ArgsError::Malformed(e.to_string()))?;
        Ok(Parsed::new(args.clone()))
    }

    async fn run(&self, args: Parsed, ctx: &ToolContext) -> Result<String, ToolError> {
        let Some(args) = args.take::<Value>() else {
            return Err(ToolError::new("MCP tool arguments must be a JSON object"));
        };
        let server = self.server.name();
        let peer = self.server.peer()?;
        let mut params = CallToolRequestParams::new(self.remote_name.clone());
        match args {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            _ => return Err(ToolError::new("MCP tool arguments must be a JSON object")),
        }
        // The server may ask the owner something meanwhile; that time is not counted.
        let call = self.server.enter(ctx);
        match call
            .asking
            .within(CALL_TIMEOUT, peer.call_tool_once(params))
            .await
        {
            Some(Ok(CallToolResponse::Complete(result))) => render(server, result),
            Some(Ok(_)) => Err(ToolError::new(format!(
                "MCP server {server} asked for more input or started a background task; \
                 Pincer does not support either yet"
            ))),
            Some(Err(e)) => Err(ToolError::new(format!(
                "MCP server {server} failed during the call ({e}); it is being reconnected"
            ))),
            None => Err(ToolError::new(format!(
                "MCP server {server} did not answer within {} s",
                CALL_TIMEOUT.as_secs()
            ))),
        }
    }
}

/// The result as text: text content joined by newlines, other content summarised.
/// A result flagged `isError` becomes a [`ToolError`] carrying that text.
fn render(server: &str, result: CallToolResult) -> Result<String, ToolError> {
    let content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    let mut parts: Vec<String> = content
        .as_array()
        .map(|blocks| blocks.iter().map(describe).collect())
        .unwrap_or_default();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::new(format!(
            "MCP server {server} reported an error: {text}"
        )));
    }
    Ok(text)
}

/// One content block in words: text as it is, anything else as a short summary.
fn describe(block: &Value) -> String {
    let field = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let kind = field(block, "type");
    match kind.as_str() {
        "text" => field(block, "text"),
        "image" | "audio" => format!(
            "[{kind}: {}, {}]",
            field(block, "mimeType"),
            size(&field(block, "data"))
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let uri = field(&resource, "uri");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!(
                    "[resource: {uri}, {}, {}]",
                    field(&resource, "mimeType"),
                    size(&field(&resource, "blob"))
                ),
            }
        }
        "resource_link" => format!("[resource link: {}]", field(block, "uri")),
        other => format!("[{other} content]"),
    }
}

/// The decoded size of base64 `data`, in KB (rounded up).
fn size(data: &str) -> String {
    let bytes = data.len() / 4 * 3;
    format!("{} KB", bytes.div_ceil(1024))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_sanitised_and_capped() {
        assert_eq!(tool_name("fake", "echo"), "mcp__fake__echo");
        assert_eq!(
            tool_name("my server", "get.file/v2"),
            "mcp__my_server__get_file_v2"
        );
        let long = tool_name("s", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__s__xxx"));
    }

    #[test]
    fn content_is_rendered_as_text_and_summaries() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [
                { "type": "text", "text": "hello" },
                { "type": "image", "data": "A".repeat(16384), "mimeType": "image/png" },
                { "type": "resource", "resource": { "uri": "file:///a.txt", "text": "body" } },
                { "type": "resource_link", "uri": "file:///b", "name": "b" }
            ]
        }))
        .unwrap();
        assert_eq!(
            render("s", result).unwrap(),
            "hello\n[image: image/png, 12 KB]\n[resource file:///a.txt]\nbody\n[resource link: file:///b]"
        );
    }

    #[test]
    fn error_results_become_tool_errors() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [{ "type": "text", "text": "no such file" }], "isError": true
        }))
        .unwrap();
        let err = render("files", result).unwrap_err();
        assert_eq!(err.0, "MCP server files reported an error: no such file");
    }
}
