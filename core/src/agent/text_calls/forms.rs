//! The text forms of a tool call, found by their markup and JSON alone — which tool
//! they name and whether its schema takes the arguments is `text_calls`' business:
//!
//! - `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (Hermes, Qwen), one call or a
//!   list, the closing tag optional at the end of the text;
//! - `<tools>…</tools>`, the same inside the tag Qwen's template lists the tools in;
//! - `[TOOL_CALLS] [{"name": …, "arguments": …}]` (Mistral), or the newer
//!   `[TOOL_CALLS]name[ARGS]{…}` (with `[CALL_ID]id` before `[ARGS]` or not);
//! - `<|python_tag|>{"name": …, "parameters": {…}}` (Llama 3), calls apart by `;`;
//! - `<function=name>{…}</function>` (Llama 3.1's custom tool format);
//! - a fenced code block (no language, `json` or `tool_call`) holding only call objects;
//! - a bare JSON object or list of them.
//!
//! Where in a text these may stand is `scan`'s business; here each is given the text of
//! one (`markup_calls`, `json_block_calls`) and says whether all of it is calls.
//!
//! A call object is `{"name", "arguments"}`, `{"name", "parameters"}`, or OpenAI's own
//! `{"type": "function", "function": {"name", "arguments"}}`; `arguments` may be a JSON
//! string of the object. Inside markup that says "tool call", an object without
//! arguments is a call without any; a fenced or bare one must have them and no key a
//! call does not have (`CALL_KEYS`), since it is otherwise just JSON.

use serde_json::{Map, Value};

/// One call as written.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Call {
    pub name: String,
    pub arguments: Value,
}

/// Tags that wrap calls in a JSON body: (opening, closing).
const TAGS: &[(&str, &str)] = &[("<tool_call>", "</tool_call>"), ("<tools>", "</tools>")];
const MISTRAL: &str = "[TOOL_CALLS]";
const LLAMA: &str = "<|python_tag|>";
/// What may end a Llama 3 call: the end of its message, or of its turn.
const LLAMA_ENDS: &[&str] = &["<|eom_id|>", "<|eot_id|>"];
const FUNCTION: &str = "<function=";
const FENCE: &str = "```";
/// The languages a fenced call may be marked with.
const FENCE_LANGUAGES: &[&str] = &["", "json", "tool_call", "tool_code"];

/// The calls a piece of markup (`scan::Piece::Markup`, from its opening through its
/// closing tag or the end of the text) is, when it is nothing but calls.
pub(super) fn markup_calls(raw: &str) -> Option<Vec<Call>> {
    let (len, calls) = match raw.as_bytes().first()? {
        b'<' => tagged(raw)?,
        b'[' if starts_with_ci(raw, MISTRAL) => {
            let (len, calls) = mistral(&raw[MISTRAL.len()..])?;
            (MISTRAL.len() + len, calls)
        }
        _ => return None,
    };
    raw[len..].trim().is_empty().then_some(calls)
}

/// The calls a JSON block (`scan::Piece::Call`: a fenced block or a bare object or list)
/// is, when it is nothing but calls.
pub(super) fn json_block_calls(raw: &str) -> Option<Vec<Call>> {
    let (len, calls) = match raw.starts_with('`') {
        true => fenced(raw)?,
        false => json_calls(raw, true)?,
    };
    raw[len..].trim().is_empty().then_some(calls)
}

/// `<tool_call>…`, `<tools>…`, `<|python_tag|>…` or `<function=…>…`: its length and calls.
fn tagged(rest: &str) -> Option<(usize, Vec<Call>)> {
    for (open, close) in TAGS {
        if starts_with_ci(rest, open) {
            let body_start = open.len();
            let (body_end, end) = match find_ci(&rest[body_start..], close) {
                Some(at) => (body_start + at, body_start + at + close.len()),
                None => (rest.len(), rest.len()),
            };
            let body = unfenced(rest[body_start..body_end].trim());
            return Some((end, all_calls(body, false)?));
        }
    }
    if starts_with_ci(rest, LLAMA) {
        return llama(&rest[LLAMA.len()..]).map(|(len, calls)| (LLAMA.len() + len, calls));
    }
    if starts_with_ci(rest, FUNCTION) {
        return function(rest);
    }
    None
}

/// After `[TOOL_CALLS]`: a JSON list or object of calls, or `name[CALL_ID]id[ARGS]{…}`.
fn mistral(rest: &str) -> Option<(usize, Vec<Call>)> {
    let trimmed = rest.trim_start();
    let skipped = rest.len() - trimmed.len();
    if trimmed.starts_with(['[', '{']) {
        let (len, value) = json_value(trimmed)?;
        return Some((skipped + len, calls_in(&value, false)?));
    }
    // The newer form has no space after the marker.
    let name_len = rest.find(|c: char| !is_name_char(c))?;
    if name_len == 0 {
        return None;
    }
    let mut at = name_len;
    if rest[at..].starts_with("[CALL_ID]") {
        at += "[CALL_ID]".len();
        at += rest[at..].find(|c: char| !c.is_ascii_alphanumeric())?;
    }
    if rest[at..].starts_with("[ARGS]") {
        at += "[ARGS]".len();
    }
    let (len, arguments) = json_value(&rest[at..])?;
    let call = Call {
        name: rest[..name_len].to_string(),
        arguments: arguments_of(Some(&arguments), false)?,
    };
    Some((at + len, vec![call]))
}

/// After `<|python_tag|>`: call objects apart by `;`, and the end-of-message token.
fn llama(rest: &str) -> Option<(usize, Vec<Call>)> {
    let mut calls = Vec::new();
    let mut at = 0;
    loop {
        let trimmed = rest[at..].trim_start();
        at = rest.len() - trimmed.len();
        let (len, value) = json_value(trimmed)?;
        calls.extend(calls_in(&value, false)?);
        at += len;
        let after = rest[at..].trim_start();
        match after.strip_prefix(';') {
            Some(more) if more.trim_start().starts_with('{') => at = rest.len() - more.len(),
            _ => break,
        }
    }
    let after = rest[at..].trim_start();
    if let Some(end) = LLAMA_ENDS.iter().find(|end| after.starts_with(**end)) {
        at = rest.len() - after.len() + end.len();
    }
    Some((at, calls))
}

/// `<function=name>{…}</function>`, the closing tag optional.
fn function(rest: &str) -> Option<(usize, Vec<Call>)> {
    let name_start = FUNCTION.len();
    // A name is on the opening's own line: looking further would read the whole text
    // again for every opening that has no `>`.
    let line = rest[name_start..].split('\n').next().unwrap_or_default();
    let name_len = line.find('>')?;
    let name = &rest[name_start..name_start + name_len];
    if name.is_empty() || !name.chars().all(is_name_char) {
        return None;
    }
    let body = &rest[name_start + name_len + 1..];
    let trimmed = body.trim_start();
    let (len, arguments) = if trimmed.starts_with("</function>") || trimmed.is_empty() {
        (0, Value::Object(Map::new()))
    } else {
        json_value(trimmed)?
    };
    let mut end = rest.len() - trimmed.len() + len;
    let after = rest[end..].trim_start();
    if starts_with_ci(after, "</function>") {
        end = rest.len() - after.len() + "</function>".len();
    }
    let call = Call {
        name: name.to_string(),
        arguments: arguments_of(Some(&arguments), false)?,
    };
    Some((end, vec![call]))
}

/// A fenced code block whose whole body is calls: through its closing fence. The body
/// may start on the fence's own line (```` ```json {"name": …} ``` ````).
pub(super) fn fenced(rest: &str) -> Option<(usize, Vec<Call>)> {
    let (body_start, language) = fence_language(rest)?;
    if !is_call_language(language) {
        return None;
    }
    let close = body_start + rest[body_start..].find(FENCE)?;
    Some((
        close + FENCE.len(),
        all_calls(rest[body_start..close].trim(), true)?,
    ))
}

/// A fence's language, and where the text after it starts (`None`: not a fence).
pub(super) fn fence_language(rest: &str) -> Option<(usize, &str)> {
    let after = rest.strip_prefix(FENCE)?;
    let len = after
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(after.len());
    Some((FENCE.len() + len, &after[..len]))
}

/// Whether a fenced block marked `language` may hold calls.
pub(super) fn is_call_language(language: &str) -> bool {
    FENCE_LANGUAGES
        .iter()
        .any(|l| l.eq_ignore_ascii_case(language))
}

/// Whether a language still being written may become one that holds calls.
pub(super) fn may_be_call_language(start: &str) -> bool {
    FENCE_LANGUAGES.iter().any(|l| starts_with_ci(l, start))
}

/// A body that is one fenced block (a tag's body written as code): its inside.
fn unfenced(body: &str) -> &str {
    let Some(inner) = body.strip_prefix(FENCE) else {
        return body;
    };
    let Some(line_end) = inner.find('\n') else {
        return body;
    };
    match inner[line_end..].trim_end().strip_suffix(FENCE) {
        Some(inside) => inside.trim(),
        None => body,
    }
}

/// JSON calls at the start of `rest` (one object or list): its length and calls.
pub(super) fn json_calls(rest: &str, strict: bool) -> Option<(usize, Vec<Call>)> {
    let (len, value) = json_value(rest)?;
    Some((len, calls_in(&value, strict)?))
}

/// `body` holding nothing but call objects and lists of them, apart by white space,
/// commas or semicolons.
fn all_calls(body: &str, strict: bool) -> Option<Vec<Call>> {
    let mut calls = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (len, value) = json_value(rest)?;
        calls.extend(calls_in(&value, strict)?);
        rest = rest[len..].trim_start_matches(|c: char| c.is_whitespace() || c == ',' || c == ';');
    }
    (!calls.is_empty()).then_some(calls)
}

/// The calls `value` is: one object, or a non-empty list of them.
fn calls_in(value: &Value, strict: bool) -> Option<Vec<Call>> {
    match value {
        Value::Array(items) if !items.is_empty() => {
            items.iter().map(|item| call_of(item, strict)).collect()
        }
        Value::Object(_) => Some(vec![call_of(value, strict)?]),
        _ => None,
    }
}

/// One call object, in any of the shapes above.
fn call_of(value: &Value, strict: bool) -> Option<Call> {
    let object = value.as_object()?;
    if strict
        && object
            .keys()
            .any(|key| !super::CALL_KEYS.contains(&key.as_str()))
    {
        return None;
    }
    if let Some(function) = object.get("function").filter(|f| f.is_object()) {
        return call_of(function, strict);
    }
    let name = object.get("name")?.as_str()?;
    let arguments = object.get("arguments").or_else(|| object.get("parameters"));
    Some(Call {
        name: name.to_string(),
        arguments: arguments_of(arguments, strict)?,
    })
}

/// Arguments as an object: given as one, as a JSON string of one, or (not `strict`)
/// left out or null.
fn arguments_of(arguments: Option<&Value>, strict: bool) -> Option<Value> {
    match arguments {
        Some(Value::Object(_)) => arguments.cloned(),
        Some(Value::String(json)) => serde_json::from_str::<Value>(json)
            .ok()
            .filter(Value::is_object),
        Some(Value::Null) | None if !strict => Some(Value::Object(Map::new())),
        _ => None,
    }
}

/// One JSON value at the start of `text`: how many bytes it takes, and the value.
pub(super) fn json_value(text: &str) -> Option<(usize, Value)> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = values.next()?.ok()?;
    Some((values.byte_offset(), value))
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

pub(super) fn starts_with_ci(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix.as_bytes()))
}

fn find_ci(haystack: &str, needle: &str) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    if h.len() < n.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The calls a piece of markup or a JSON block is.
    fn calls(raw: &str) -> Option<Vec<(String, Value)>> {
        let found = match raw.starts_with(['{', '`']) || raw.starts_with("[{") {
            true => json_block_calls(raw),
            false => markup_calls(raw),
        };
        found.map(|calls| calls.into_iter().map(|c| (c.name, c.arguments)).collect())
    }

    #[test]
    fn every_form_is_read() {
        let paris = vec![("get_weather".to_string(), json!({"city": "Paris"}))];
        for text in [
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
            "<tools>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tools>",
            "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
            "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Paris\"}",
            "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eom_id|>",
            "<function=get_weather>{\"city\": \"Paris\"}</function>",
            "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```",
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
            "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}]",
        ] {
            assert_eq!(calls(text).as_ref(), Some(&paris), "{text}");
        }
    }

    #[test]
    fn json_that_is_not_a_call_is_not_calls() {
        for text in [
            // No arguments outside call markup: just JSON.
            "{\"name\": \"Miso\"}",
            "```json\n{\"name\": \"Miso\", \"age\": 3}\n```",
            // A key no call has: data that happens to name a tool.
            "{\"thought\": \"x\", \"name\": \"a\", \"arguments\": {}}",
            "{\"name\": \"a\", \"arguments\": {}, \"thought\": \"x\"}",
            // A code block with more than calls in it.
            "```json\n{\"name\": \"a\", \"arguments\": {}}\nmore\n```",
            "```python\n{\"name\": \"a\", \"arguments\": {}}\n```",
            "<tool_call>not json</tool_call>",
            // Markup with more than the call in it.
            "<function=a>{}</function> and then some",
            "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {}}]\n</think>\nAnswer",
        ] {
            assert_eq!(calls(text), None, "{text}");
        }
        // Inside markup that says "tool call", other keys do no harm.
        assert!(
            calls("<tool_call>{\"name\": \"a\", \"arguments\": {}, \"id\": \"1\"}</tool_call>")
                .is_some()
        );
    }

    #[test]
    fn several_calls_in_one_piece() {
        let text = "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {}}";
        assert_eq!(calls(text).map(|c| c.len()), Some(2));
        // An unclosed tag at the end of the text still counts.
        assert_eq!(
            calls("<tool_call>{\"name\": \"a\", \"arguments\": {\"k\": \"v\"}}"),
            Some(vec![("a".to_string(), json!({"k": "v"}))])
        );
    }
}
