//! `read` and the stream cleaner on the fixtures in `tests/fixtures/model_output/`: real
//! outputs recorded from a local llama-server here (`recorded_*`), and, for forms no
//! model on this machine writes, the outputs issue 34 quotes (`issue34_*`) and the
//! formats' published examples (`published_*`); each fixture says where it came from.
//! Every fixture goes the way a reply does: streamed through the runaway guard and the
//! cleaner, then read for calls and cleaned.

use pincer_config::TextToolCalls;
use serde_json::{Value, json};

use super::read;
use crate::agent::clean::{StreamCleaner, clean_parts};
use crate::agent::runaway::Guard;
use crate::provider::{ChatResponse, Part, StopReason, ToolSpec};

macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../../tests/fixtures/model_output/", $name)),
        )
    };
}

const FIXTURES: &[(&str, &str)] = &[
    fixture!("recorded_smollm2_plain_answer.json"),
    fixture!("recorded_smollm2_mistral_prompt_echo.json"),
    fixture!("recorded_smollm2_paragraph_loop.json"),
    fixture!("issue34_qwen25coder_fenced_json.json"),
    fixture!("issue34_qwen25coder_tools_tag.json"),
    fixture!("published_qwen25_hermes_tool_call.json"),
    fixture!("published_mistral_tool_calls.json"),
    fixture!("published_mistral_v11_tool_calls.json"),
    fixture!("published_llama31_function_tag.json"),
    fixture!("published_llama3_json.json"),
    fixture!("published_llama32_python_tag.json"),
];

fn tools(fixture: &Value) -> Vec<ToolSpec> {
    fixture["tools"]
        .as_array()
        .expect("the fixture lists its tools")
        .iter()
        .map(|tool| ToolSpec {
            name: tool["name"].as_str().expect("a name").to_string(),
            description: String::new(),
            input_schema: std::sync::Arc::new(tool["parameters"].clone()),
        })
        .collect()
}

fn text_response(text: &str) -> ChatResponse {
    ChatResponse {
        parts: vec![Part::Text { text: text.into() }],
        stop: StopReason::EndTurn,
        usage: Default::default(),
    }
}

fn calls_of(response: &ChatResponse) -> Vec<(String, Value)> {
    response
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::ToolCall {
                name, arguments, ..
            } => Some((name.clone(), arguments.clone())),
            _ => None,
        })
        .collect()
}

fn shown(parts: Vec<Part>) -> String {
    crate::provider::text_of(&clean_parts(parts))
}

/// What one fixture's reply becomes: streamed in pieces of `piece` bytes (on character
/// boundaries) through the guard and the cleaner; then read and cleaned. Returns what
/// streamed, and the response.
fn replay(output: &str, offered: &[ToolSpec], piece: usize) -> (String, ChatResponse) {
    let mut guard = Guard::default();
    let mut cleaner = StreamCleaner::offering(offered);
    let mut streamed = String::new();
    let mut rest = output;
    while !rest.is_empty() && guard.cut().is_none() {
        let mut at = piece.min(rest.len());
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        streamed.push_str(&cleaner.push(&guard.push(&rest[..at])));
        rest = &rest[at..];
    }
    let kept = match guard.take_cut() {
        Some(cut) => cut.kept,
        None => output.to_string(),
    };
    let response = read(text_response(&kept), offered, TextToolCalls::Auto);
    (streamed, response)
}

#[test]
fn every_fixture_gives_its_calls_and_shows_only_its_text() {
    for (name, text) in FIXTURES {
        let fixture: Value = serde_json::from_str(text).expect(name);
        let offered = tools(&fixture);
        let output = fixture["output"].as_str().expect("output");
        let expected: Vec<(String, Value)> = fixture["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .map(|c| (c[0].as_str().expect("name").to_string(), c[1].clone()))
            .collect();
        for piece in [1, 3, 7, 64, usize::MAX] {
            let (streamed, response) = replay(output, &offered, piece);
            assert_eq!(calls_of(&response), expected, "{name}, pieces of {piece}");
            let stop = if expected.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            };
            assert_eq!(response.stop, stop, "{name}");
            let shown = shown(response.parts);
            assert_eq!(shown, fixture["shown"], "{name}, pieces of {piece}");
            // The stream showed nothing the finished text does not: never a call's
            // markup or JSON going by.
            assert!(
                shown.starts_with(streamed.trim()),
                "{name}, pieces of {piece}: streamed {streamed:?}, shown {shown:?}"
            );
        }
    }
}

fn weather() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "get_weather".into(),
        description: String::new(),
        input_schema: std::sync::Arc::new(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        })),
    }]
}

#[test]
fn a_call_to_a_tool_not_offered_or_with_bad_arguments_stays_text() {
    let offered = weather();
    for text in [
        // Not offered: the markup is hidden, nothing runs.
        "<tool_call>{\"name\": \"send_email\", \"arguments\": {\"to\": \"a@b.c\"}}</tool_call>",
        // Arguments the schema refuses.
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}</tool_call>",
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}</tool_call>",
    ] {
        let response = read(text_response(text), &offered, TextToolCalls::Auto);
        assert_eq!(calls_of(&response), [], "{text}");
        assert_eq!(response.stop, StopReason::EndTurn);
        assert_eq!(shown(response.parts), "", "{text}");
    }
    // A fenced block that is not a call is ordinary text, shown as it is.
    let text =
        "Like this:\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n```";
    let response = read(text_response(text), &offered, TextToolCalls::Auto);
    assert_eq!(calls_of(&response), []);
    assert_eq!(shown(response.parts), text);
}

#[test]
fn the_mode_decides_when_text_is_read() {
    let offered = weather();
    let text =
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>";
    let structured = Part::ToolCall {
        id: "call_1".into(),
        name: "get_weather".into(),
        arguments: json!({"city": "Rome"}),
    };
    let with_structured = || ChatResponse {
        parts: vec![Part::Text { text: text.into() }, structured.clone()],
        stop: StopReason::ToolUse,
        usage: Default::default(),
    };
    let oslo = ("get_weather".to_string(), json!({"city": "Oslo"}));
    let rome = ("get_weather".to_string(), json!({"city": "Rome"}));
    // auto: only a reply without structured calls.
    let auto = read(text_response(text), &offered, TextToolCalls::Auto);
    assert_eq!(calls_of(&auto), std::slice::from_ref(&oslo));
    let auto = read(with_structured(), &offered, TextToolCalls::Auto);
    assert_eq!(calls_of(&auto), std::slice::from_ref(&rome));
    // on: beside structured calls too, after them; one the server also parsed is not
    // run twice.
    let on = read(with_structured(), &offered, TextToolCalls::On);
    assert_eq!(calls_of(&on), [rome.clone(), oslo.clone()]);
    let same = format!(
        "<tool_call>{}</tool_call>",
        json!({"name": "get_weather", "arguments": {"city": "Rome"}})
    );
    let mut echoed = with_structured();
    echoed.parts[0] = Part::Text { text: same };
    assert_eq!(calls_of(&read(echoed, &offered, TextToolCalls::On)), [rome]);
    // off: never; and nothing is read where no tools were offered.
    let off = read(text_response(text), &offered, TextToolCalls::Off);
    assert_eq!(calls_of(&off), []);
    let none = read(text_response(text), &[], TextToolCalls::On);
    assert_eq!(calls_of(&none), []);
}

#[test]
fn calls_get_ids_of_their_own_and_the_text_around_them_stays() {
    let offered = weather();
    let text = "Let me check both.\n```json\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]\n```\nOne moment.";
    let response = read(text_response(text), &offered, TextToolCalls::Auto);
    let ids: Vec<&str> = response
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert!(ids.iter().all(|id| id.starts_with("text_")));
    assert_eq!(shown(response.parts), "Let me check both.\n\nOne moment.");
}
