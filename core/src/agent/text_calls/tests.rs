//! `read` and the stream cleaner on the fixtures in `tests/fixtures/model_output/`: real
//! outputs recorded from a local llama-server here (`recorded_*`), and, for forms no
//! model on this machine writes, the outputs issue 34 quotes (`issue34_*`) and the
//! formats' published examples (`published_*`); each fixture says where it came from.
//! Every fixture goes the way a reply does: streamed through the runaway guard and the
//! cleaner, then read for calls and cleaned.

use pincer_config::TextToolCalls;
use serde_json::{Value, json};

use super::{MAX_CALL_BYTES, MAX_SCAN_BYTES, read, scan};
use crate::agent::clean::{StreamCleaner, clean, clean_parts};
use crate::agent::runaway::Guard;
use crate::provider::{ChatResponse, Part, StopReason, ToolSpec};

macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../../../tests/fixtures/model_output/", $name)),
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

/// `read` with a fresh turn's numbering.
fn read_text(text: &str, offered: &[ToolSpec], mode: TextToolCalls) -> ChatResponse {
    read(text_response(text), offered, mode, &mut 0)
}

/// What one reply becomes: streamed in pieces of `piece` bytes (on character
/// boundaries) through the guard and the cleaner; then read and cleaned. Returns what
/// streamed (after any retraction), and the response.
fn replay(
    output: &str,
    offered: &[ToolSpec],
    piece: usize,
    mode: TextToolCalls,
) -> (String, ChatResponse) {
    let mut guard = Guard::default();
    let mut cleaner = StreamCleaner::offering(offered, mode);
    let mut streamed = String::new();
    let mut rest = output;
    while !rest.is_empty() && guard.cut().is_none() {
        let mut at = piece.min(rest.len());
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let released = cleaner.push(&guard.push(&rest[..at]));
        if released.retract {
            streamed.clear();
        }
        streamed.push_str(&released.text);
        rest = &rest[at..];
    }
    // The stream ended whole: what the guard still held goes on (`Reply::call_ended`).
    if guard.cut().is_none() {
        let released = cleaner.push(&guard.finish());
        if released.retract {
            streamed.clear();
        }
        streamed.push_str(&released.text);
    }
    let kept = match guard.take_cut() {
        Some(cut) => cut.kept,
        None => output.to_string(),
    };
    (streamed, read_text(&kept, offered, mode))
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
            let (streamed, response) = replay(output, &offered, piece, TextToolCalls::Auto);
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
        let response = read_text(text, &offered, TextToolCalls::Auto);
        assert_eq!(calls_of(&response), [], "{text}");
        assert_eq!(response.stop, StopReason::EndTurn);
        assert_eq!(shown(response.parts), "", "{text}");
    }
    // A fenced block that is not a call is ordinary text, shown as it is.
    let text =
        "Like this:\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n```";
    let response = read_text(text, &offered, TextToolCalls::Auto);
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
    let auto = read_text(text, &offered, TextToolCalls::Auto);
    assert_eq!(calls_of(&auto), std::slice::from_ref(&oslo));
    let auto = read(with_structured(), &offered, TextToolCalls::Auto, &mut 0);
    assert_eq!(calls_of(&auto), std::slice::from_ref(&rome));
    // on: beside structured calls too, after them; one the server also parsed is not
    // run twice.
    let on = read(with_structured(), &offered, TextToolCalls::On, &mut 0);
    assert_eq!(calls_of(&on), [rome.clone(), oslo.clone()]);
    let same = format!(
        "<tool_call>{}</tool_call>",
        json!({"name": "get_weather", "arguments": {"city": "Rome"}})
    );
    let mut echoed = with_structured();
    echoed.parts[0] = Part::Text { text: same };
    assert_eq!(
        calls_of(&read(echoed, &offered, TextToolCalls::On, &mut 0)),
        [rome]
    );
    // off: never; and nothing is read where no tools were offered.
    let off = read_text(text, &offered, TextToolCalls::Off);
    assert_eq!(calls_of(&off), []);
    let none = read_text(text, &[], TextToolCalls::On);
    assert_eq!(calls_of(&none), []);
}

#[test]
fn calls_get_ids_of_their_own_and_the_text_around_them_stays() {
    let offered = weather();
    let text = "Let me check both.\n```json\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]\n```\nOne moment.";
    // One turn's numbering across two model calls answered in the same millisecond.
    let mut next_id = 0;
    let ids_of = |response: &ChatResponse| -> Vec<String> {
        response
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect()
    };
    let first = read(
        text_response(text),
        &offered,
        TextToolCalls::On,
        &mut next_id,
    );
    let second = read(
        text_response(text),
        &offered,
        TextToolCalls::On,
        &mut next_id,
    );
    let mut ids = ids_of(&first);
    ids.extend(ids_of(&second));
    assert_eq!(ids.len(), 4);
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), 4, "{ids:?}");
    assert!(ids.iter().all(|id| id.starts_with("text_")));
    assert_eq!(shown(first.parts), "Let me check both.\n\nOne moment.");
}

fn write_file() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "write_file".into(),
        description: String::new(),
        input_schema: std::sync::Arc::new(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"]
        })),
    }]
}

const WRITE: &str =
    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"p.txt\", \"content\": \"y\"}}";

/// `text` streamed and read in every piece size and mode: what it becomes.
fn each_way(text: &str, offered: &[ToolSpec]) -> Vec<(String, ChatResponse)> {
    let mut out = Vec::new();
    for mode in [TextToolCalls::Auto, TextToolCalls::On] {
        for piece in [1, 7, 64, usize::MAX] {
            out.push(replay(text, offered, piece, mode));
        }
    }
    out
}

#[test]
fn a_call_inside_the_models_reasoning_never_runs_and_is_never_shown() {
    for text in [
        format!(
            "<think>I could write it: <tool_call>{WRITE}</tool_call> I will not do it.</think>\nAnswer"
        ),
        format!(
            "<think>I could write it:\n<tool_call>{WRITE}</tool_call>\nI will not.</think>\nAnswer"
        ),
        format!("<think>\n{WRITE}\n</think>\nAnswer"),
        // The chat template opened the block (Qwen3, R1 through Ollama): only the
        // closing tag is in the text.
        format!(
            "The user wants a file. I could answer\n{WRITE}\nbut I will not.\n</think>\nAnswer"
        ),
        format!("Maybe\n<tool_call>{WRITE}</tool_call>\nno.\n</think>\n\nAnswer"),
        format!("{WRITE}\n</think>\nAnswer"),
    ] {
        for (streamed, response) in each_way(&text, &write_file()) {
            assert_eq!(calls_of(&response), [], "{text}");
            assert_eq!(streamed.trim(), "Answer", "{text}");
            assert_eq!(shown(response.parts), "Answer", "{text}");
        }
    }
}

#[test]
fn markup_quoted_in_prose_code_or_a_quote_never_runs_and_shows_as_it_is() {
    for text in [
        "quoted here: `<function=write_file>{\"path\": \"p.txt\", \"content\": \"y\"}</function>`. I did not follow it.".to_string(),
        "> [TOOL_CALLS]write_file[ARGS]{\"path\": \"p.txt\", \"content\": \"y\"}".to_string(),
        format!("Sure. <tool_call>{WRITE}</tool_call>"),
        format!("The form is:\n```\n<tool_call>{WRITE}</tool_call>\n```\nThat is all."),
        format!("The form is:\n~~~xml\n<tool_call>\n{WRITE}\n</tool_call>\n~~~"),
        format!("Indented:\n\n    <tool_call>{WRITE}</tool_call>"),
        format!("A span ` begun here\n<tool_call>{WRITE}</tool_call> ` ends."),
        format!("> quoted:\n> {WRITE}"),
    ] {
        for (streamed, response) in each_way(&text, &write_file()) {
            assert_eq!(calls_of(&response), [], "{text}");
            assert_eq!(shown(response.parts), text, "{text}");
            assert_eq!(streamed, text, "{text}");
        }
    }
}

#[test]
fn in_auto_json_is_a_call_only_as_the_whole_reply() {
    let example = format!("To save it I would send:\n```json\n{WRITE}\n```\nShall I?");
    let (streamed, response) = replay(&example, &write_file(), 5, TextToolCalls::Auto);
    assert_eq!(calls_of(&response), []);
    assert_eq!(shown(response.parts), example);
    assert_eq!(streamed, example);
    // Alone, it is the call; with `on`, amid prose too.
    for text in [format!("```json\n{WRITE}\n```\n"), format!("\n{WRITE}")] {
        let (streamed, response) = replay(&text, &write_file(), 5, TextToolCalls::Auto);
        assert_eq!(calls_of(&response).len(), 1, "{text}");
        assert_eq!(streamed, "", "{text}");
    }
    let (streamed, response) = replay(&example, &write_file(), 5, TextToolCalls::On);
    assert_eq!(calls_of(&response).len(), 1);
    assert_eq!(
        shown(response.parts),
        "To save it I would send:\n\nShall I?"
    );
    assert!("To save it I would send:\n\nShall I?".starts_with(streamed.trim()));
}

/// The red team's finding: the cleaner and the reader once disagreed, so a text was
/// shown and run, or neither. For every fixture and piece size: what streamed is the
/// start of what the finished reply shows (never a call going by), and the finished
/// reply shows everything that is not a call.
#[test]
fn every_text_is_streamed_or_a_call_never_both_never_neither() {
    // (numbers, not one letter over and over: the runaway guard would stop that)
    let content: Vec<String> = (0..MAX_CALL_BYTES / 4).map(|n| n.to_string()).collect();
    let big = format!(
        "{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"p.txt\", \"content\": \"{}\"}}}}",
        content.join(" ")
    );
    assert!(big.len() > MAX_CALL_BYTES);
    let mut texts: Vec<(String, Vec<ToolSpec>, Option<String>)> = vec![
        // A key no call has: shown, and not run.
        (
            "{\"thought\": \"save it\", \"name\": \"write_file\", \"arguments\": {\"path\": \"p.txt\", \"content\": \"y\"}}".into(),
            write_file(),
            None,
        ),
        // Longer than a call may be: shown, and not run.
        (big, write_file(), None),
        (format!("{WRITE}\nDone."), write_file(), None),
        (format!("<tool_call>{WRITE}</tool_call>\nDone."), write_file(), Some("Done.".into())),
    ];
    for (name, text) in FIXTURES {
        let fixture: Value = serde_json::from_str(text).expect(name);
        let output = fixture["output"].as_str().expect("output").to_string();
        let shown = fixture["shown"].as_str().map(str::to_string);
        texts.push((output, tools(&fixture), shown));
    }
    for (text, offered, expected) in texts {
        for piece in [1, 7, 64] {
            let (streamed, response) = replay(&text, &offered, piece, TextToolCalls::Auto);
            let calls = calls_of(&response);
            let shown = shown(response.parts);
            assert!(
                shown.starts_with(streamed.trim()),
                "{text:.80}, pieces of {piece}: streamed {streamed:.80?}, shown {shown:.80?}"
            );
            match &expected {
                Some(expected) => assert_eq!(&shown, expected, "{text:.80}"),
                // Not a call: all of it shown.
                None => {
                    assert_eq!(calls, [], "{text:.80}");
                    assert_eq!(shown, text.trim(), "{text:.80}");
                }
            }
        }
    }
}

#[test]
fn with_off_or_beside_a_structured_call_a_json_example_streams_and_stays() {
    let text = format!("{WRITE}\n");
    let (streamed, response) = replay(&text, &write_file(), 3, TextToolCalls::Off);
    assert_eq!(calls_of(&response), []);
    assert_eq!(streamed, text);
    assert_eq!(shown(response.parts), text.trim());
}

#[test]
fn unclosed_openings_are_read_in_one_pass() {
    // Before, every unclosed opening searched the rest of the text for its closing tag:
    // 159 KB took 30 s. These are 2 MB each, hopeless for that and instant now.
    for unit in [
        "<tool_call>N.\n",
        "<tool_call>N.",
        "<function=N.\n",
        "<function=N.",
        "[TOOL_CALLS]N.\n",
        "<think>N.\n",
        "</think>N.\n",
        "```json\n{\"name\": \"write_file\",\n",
    ] {
        let text = unit.repeat(2 * 1024 * 1024 / unit.len());
        for mode in [TextToolCalls::Auto, TextToolCalls::On] {
            let pieces = scan::pieces(&text, &write_file(), mode, false);
            assert!(!pieces.is_empty(), "{unit:?}");
        }
        let _ = clean(&text);
        // `read` takes up to MAX_SCAN_BYTES.
        let near = unit.repeat((MAX_SCAN_BYTES - 1) / unit.len());
        assert_eq!(
            calls_of(&read_text(&near, &write_file(), TextToolCalls::On)),
            []
        );
        let mut cleaner = StreamCleaner::offering(&write_file(), TextToolCalls::On);
        for chunk in text.as_bytes().chunks(4096) {
            let _ = cleaner.push(std::str::from_utf8(chunk).expect("ASCII"));
        }
    }
    // Past MAX_SCAN_BYTES a reply is not read at all.
    let long = format!(
        "{}\n<tool_call>{WRITE}</tool_call>",
        "x".repeat(MAX_SCAN_BYTES)
    );
    assert_eq!(
        calls_of(&read_text(&long, &write_file(), TextToolCalls::On)),
        []
    );
}

fn tagged(path: &str) -> String {
    format!(
        "<tool_call>{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"{path}\", \"content\": \"x\"}}}}</tool_call>"
    )
}

/// `text` runs nothing, and shows (streamed and finished) exactly as written.
fn shown_as_written(text: &str) {
    for (streamed, response) in each_way(text, &write_file()) {
        assert_eq!(calls_of(&response), [], "{text}");
        assert_eq!(shown(response.parts), text.trim(), "{text}");
        assert_eq!(streamed.trim(), text.trim(), "{text}");
    }
}

/// Red team, round 3 (N1): a `</think>` quoted in code once took the answer before it
/// for reasoning and forgot the open fence, so the example in the fence ran.
#[test]
fn a_closing_think_tag_in_code_is_text_and_never_lets_an_example_run() {
    let call = tagged("b21.txt");
    for text in [
        format!(
            "The answer is 42, because of reasons.\n\nReasoning models end with `</think>`, then e.g.:\n```\n{call}\n```"
        ),
        format!("The answer is 42.\n\nA transcript:\n```\nLet me think...</think>\n{call}\n```"),
        format!("The answer is 42.\n```\n</think>\n{call}\n```"),
        format!("The answer is 42.\n> </think>\n{call}"),
        "The answer is 42. Tip: models close reasoning with </think> and then answer.".into(),
    ] {
        shown_as_written(&text);
    }
    // On its own line, outside code, it still ends reasoning the template opened.
    for (streamed, response) in each_way(&format!("Let me see.\n</think>\n{call}"), &write_file()) {
        assert_eq!(calls_of(&response).len(), 1);
        assert_eq!(streamed.trim(), "");
    }
}

/// N2: a `<think>` quoted in code or mid-sentence once swallowed the rest of the answer.
#[test]
fn an_opening_think_tag_in_code_or_prose_is_text() {
    for text in [
        "Wrap it in `<think>` tags. The real answer is 42.",
        "Use this tag:\n```\n<think>\n```\nThe real answer is 42.",
        "Models write <think> first. The real answer is 42.",
        "> <think>\nThe real answer is 42.",
    ] {
        shown_as_written(text);
    }
    // At the start, or on its own line, it is reasoning.
    for text in ["  <think>hm</think>\nAnswer", "Answer\n<think>hm</think>"] {
        for (_, response) in each_way(text, &write_file()) {
            assert_eq!(shown(response.parts), "Answer", "{text}");
        }
    }
}

/// N3: a fence opened on a list item's line once went unseen, so its example ran.
#[test]
fn a_fence_on_a_list_items_line_keeps_its_example_from_running() {
    let call = tagged("b2.txt");
    for text in [
        format!("Steps:\n- ````xml\n  {call}\n  ````\n- done"),
        format!("- ~~~\n  {call}\n  ~~~"),
        format!("1. ```\n   {call}\n   ```"),
        format!("* ```\n{call}\n```"),
        format!("Steps:\n- ```xml\n  {call}\n  ```\n- done"),
    ] {
        shown_as_written(&text);
    }
    // After the item's fence closes, a call on its own line is a call again.
    let text = format!("- ```\n  x\n  ```\n\n{}", tagged("after.txt"));
    for (_, response) in each_way(&text, &write_file()) {
        assert_eq!(calls_of(&response).len(), 1, "{text}");
    }
}

/// N4: a line lazily continuing a quote, and a span opened by a longer backtick run,
/// once let a call on the next line run.
#[test]
fn a_quote_goes_on_to_a_blank_line_and_a_span_closes_only_by_its_own_run() {
    let call = tagged("b4.txt");
    for text in [
        format!("> The docs show:\n{call}\n\nEnd."),
        format!("Write `a` ``like\n{call}`` to call."),
    ] {
        shown_as_written(&text);
    }
    let text = format!("> A quote.\n\n{}", tagged("after.txt"));
    for (_, response) in each_way(&text, &write_file()) {
        assert_eq!(calls_of(&response).len(), 1, "{text}");
    }
}

/// N5: past `MAX_SCAN_BYTES` the stream once hid a JSON call line that `read`, which does
/// not read so long a text, left in the stored text.
#[test]
fn past_the_scan_limit_a_json_call_streams_as_text() {
    let mut filler = String::new();
    let mut n = 0;
    while filler.len() <= MAX_SCAN_BYTES {
        filler.push_str(&format!("{n} {} {}\n", n * 7, n * 13));
        n += 1;
    }
    let text = format!("{filler}{WRITE}\nBye.");
    for piece in [4096, usize::MAX] {
        let (streamed, response) = replay(&text, &write_file(), piece, TextToolCalls::On);
        assert_eq!(calls_of(&response), []);
        let shown = shown(response.parts);
        assert!(
            shown.ends_with(&format!("{WRITE}\nBye.")),
            "pieces of {piece}"
        );
        assert_eq!(streamed.trim(), shown, "pieces of {piece}");
    }
}
