//! `pincer doctor`'s tool-call check: one small request offering one tool
//! (`get_weather`) to each reachable provider's first model in `[router]`, and what
//! came back — a structured tool call, a tool call written as text (JSON naming the
//! tool, `<tool_call>`, `[TOOL_CALLS]` …, what local servers without a tool-call parser
//! send), or an answer that ignores the tool — and whether the server dropped the tools
//! before the model saw them (llama.cpp says so in `/props`: its chat template's
//! `supports_tools`). A server that refuses tools for want of a start-up flag
//! (llama.cpp's `--jinja`) fails, with the flag named. It costs one short model call
//! per provider.

use std::sync::Arc;
use std::time::Duration;

use pincer_config::{Config, Secrets};
use serde_json::json;

use super::Report;
use crate::provider::{
    self, ChatMessage, ChatRequest, ChatResponse, ErrorKind, Part, ProviderSettings, ToolSpec,
    text_of,
};

/// The one tool offered.
const TOOL: &str = "get_weather";
/// How long a reply may take; slow local models need a while even for a short request.
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// What a model did with the tool it was offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// A structured tool call, as the API defines it.
    Structured,
    /// The call written out in the reply's text.
    Text,
    /// An answer that does not call the tool.
    Ignored,
}

/// Markers of a tool call written as text, besides a JSON object.
const TEXT_MARKERS: &[&str] = &[
    "{",
    "<tool_call>",
    "<tools>",
    "[TOOL_CALLS]",
    "<|python_tag|>",
    "<function=",
];

pub(super) fn form(reply: &ChatResponse) -> Form {
    if reply
        .parts
        .iter()
        .any(|p| matches!(p, Part::ToolCall { .. }))
    {
        return Form::Structured;
    }
    let text = text_of(&reply.parts);
    if text.contains(TOOL) && TEXT_MARKERS.iter().any(|m| text.contains(m)) {
        Form::Text
    } else {
        Form::Ignored
    }
}

fn probe_request(model: &str) -> ChatRequest {
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city's name"}},
        "required": ["city"],
    });
    ChatRequest {
        model: model.to_string(),
        system_stable: "You can call tools. When a tool can answer, call it.".into(),
        messages: vec![ChatMessage::user_text(
            "What is the weather in Paris right now? Use the get_weather tool.",
        )],
        tools: vec![ToolSpec {
            name: TOOL.into(),
            description: "The current weather in a city.".into(),
            input_schema: Arc::new(schema),
        }],
        max_tokens: 128,
        ..ChatRequest::default()
    }
}

/// Try a tool call on each `(provider, label)`: a provider that answered the reachability
/// check, and its first model in `[router]`.
pub(super) async fn check(
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    reachable: &[(String, String)],
    report: &mut Report,
) {
    let http = match provider::http_client() {
        Ok(http) => http,
        Err(err) => {
            report.warn("tools", format!("could not try tool calls: {err}"), "");
            return;
        }
    };
    for (name, label) in reachable {
        let Some(settings) = config.providers.get(name) else {
            continue;
        };
        let Some((_, model)) = label.split_once('/') else {
            continue;
        };
        let mut wire = ProviderSettings::new(name, settings.base_url());
        wire.api_keys = secrets.provider_keys(name, settings.kind, env);
        wire.timeout = REPLY_TIMEOUT;
        wire.read_call_timeouts(&config.models);
        let model_api = provider::build(settings.kind, wire, http.clone());
        eprintln!("doctor: asking {label} to call a tool …");
        let result = model_api.stream(&probe_request(model), &mut |_| {}).await;
        let drops = match result.as_ref().map(form) {
            Ok(Form::Ignored) => template_has_no_tools(&http, settings.base_url()).await,
            _ => false,
        };
        report_form(label, result, drops, report);
    }
}

/// Whether the server is llama.cpp and says its chat template takes no tools
/// (`/props` `chat_template_caps.supports_tools` false): it then drops them unseen.
async fn template_has_no_tools(http: &reqwest::Client, base_url: &str) -> bool {
    let root = base_url.strip_suffix("/v1").unwrap_or(base_url);
    let props = async {
        let response = http
            .get(format!("{root}/props"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?;
        response.json::<serde_json::Value>().await.ok()
    };
    props.await.is_some_and(|props| says_no_tools(&props))
}

fn says_no_tools(props: &serde_json::Value) -> bool {
    props.pointer("/chat_template_caps/supports_tools") == Some(&json!(false))
}

fn report_form(
    label: &str,
    result: Result<ChatResponse, provider::ProviderError>,
    template_has_no_tools: bool,
    report: &mut Report,
) {
    let what = format!("tools {label}");
    match result.map(|reply| form(&reply)) {
        Ok(Form::Ignored) if template_has_no_tools => report.warn(
            &what,
            "the server drops the tools: the model's chat template has none (llama.cpp /props: supports_tools is false), so the model never saw the tool",
            "serve a model whose chat template takes tools (Qwen2.5, Llama 3.1 or later, Mistral …), or start llama-server with --chat-template-file naming one that does",
        ),
        Ok(Form::Structured) => report.ok(&what, "returns structured tool calls"),
        Ok(Form::Text) => report.warn(
            &what,
            "writes its tool calls as text (JSON or <tool_call> in the reply) instead of structured calls",
            format!(
                "start llama-server with --jinja (vLLM: --enable-auto-tool-choice and a --tool-call-parser) so the server parses them; until then Pincer reads the common text forms (text_tool_calls under [models.\"{label}\"])"
            ),
        ),
        Ok(Form::Ignored) => report.warn(
            &what,
            "answered without calling the tool it was offered: the server drops tools (a chat template without them), or the model does not use them",
            "start llama-server with --jinja; with Ollama pick a model that lists `tools`; else try a bigger model",
        ),
        Err(err) if err.kind == ErrorKind::ServerConfig => {
            let flags = err.missing_flags().join(" and ");
            report.fail(
                &what,
                format!("the server refuses tools: {}", err.message),
                format!("restart the server with {flags}"),
            );
        }
        Err(err) => report.warn(&what, format!("could not try a tool call: {err}"), ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{StopReason, Usage};

    fn reply(parts: Vec<Part>) -> ChatResponse {
        ChatResponse {
            parts,
            stop: StopReason::EndTurn,
            usage: Usage::default(),
        }
    }

    fn said(text: &str) -> ChatResponse {
        reply(vec![Part::Text { text: text.into() }])
    }

    #[test]
    fn llama_cpp_props_tell_a_template_without_tools() {
        // /props of llama-server serving SmolLM2-135M (recorded), whose template has none.
        let props: serde_json::Value = serde_json::from_str(include_str!(
            "../../../provider/src/fixtures/llamacpp_props.json"
        ))
        .unwrap();
        assert!(says_no_tools(&props));
        assert!(!says_no_tools(
            &json!({"chat_template_caps": {"supports_tools": true}})
        ));
        assert!(!says_no_tools(&json!({"object": "list"})));
    }

    #[test]
    fn calls_are_told_apart_by_form() {
        let call = Part::ToolCall {
            id: "c1".into(),
            name: TOOL.into(),
            arguments: json!({"city": "Paris"}),
        };
        assert_eq!(form(&reply(vec![call])), Form::Structured);
        // Qwen2.5-Coder 1.5B under llama.cpp without a tool-call parser (issue 34).
        let fenced =
            "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```";
        assert_eq!(form(&said(fenced)), Form::Text);
        let hermes = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        assert_eq!(form(&said(hermes)), Form::Text);
        assert_eq!(form(&said("It is sunny in Paris, 21 °C.")), Form::Ignored);
        assert_eq!(
            form(&said("I would use get_weather, but I cannot.")),
            Form::Ignored
        );
    }
}
