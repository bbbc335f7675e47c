//! Imitated prompt caching: how much of a request a provider would find in its cache.
//!
//! Providers cache per model and in their own order, whatever order the JSON keys arrive
//! in: the tool definitions first, then the system prompt (OpenAI: the `system` and
//! `developer` messages; Anthropic: `system`), then the other messages in order.
//! `PromptCache` keeps the previous request of each format and model cut into those
//! pieces; a new request of that model shares the bytes of its longest common prefix
//! with it, in that order: every leading piece that is the same, then the common start
//! of the first piece that differs. A request of another model neither reads nor
//! disturbs it. `cache_control` markers are left out of the comparison (they say where
//! to cache; they are not content). Turning bytes into tokens, and whether a format
//! reports a cache at all, is `tokens`' job; nothing here answers a request.

use std::collections::HashMap;

use serde_json::Value;

use crate::recorded::Format;

/// The previous request of each model, to compare the next one with.
#[derive(Debug, Default)]
pub(crate) struct PromptCache {
    /// Keyed by format and `model`, the pieces of that model's last request in the
    /// provider's order.
    last: HashMap<(Format, String), Vec<Vec<u8>>>,
}

impl PromptCache {
    /// The bytes `body` shares, in the provider's order, with the previous request of
    /// its model (0 for a model's first request); `body` becomes that previous request.
    pub(crate) fn shared(&mut self, format: Format, body: &Value) -> usize {
        let model = body["model"].as_str().unwrap_or_default().to_string();
        let pieces = pieces(format, body);
        let key = (format, model);
        let shared = self
            .last
            .get(&key)
            .map_or(0, |previous| common_prefix(previous, &pieces));
        self.last.insert(key, pieces);
        shared
    }
}

/// `body` as the provider reads it for caching: each tool, each system part, each
/// other message, serialized without their `cache_control` markers.
fn pieces(format: Format, body: &Value) -> Vec<Vec<u8>> {
    let is_system = |m: &&Value| m["role"] == "system" || m["role"] == "developer";
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let tools = body["tools"].as_array().map_or(&[][..], Vec::as_slice);
    let system: Vec<&Value> = match (format, &body["system"]) {
        (Format::OpenAi, _) => messages.iter().filter(is_system).collect(),
        (Format::Anthropic, Value::Array(blocks)) => blocks.iter().collect(),
        (Format::Anthropic, Value::Null) => Vec::new(),
        (Format::Anthropic, text) => vec![text],
    };
    let rest = messages
        .iter()
        .filter(|m| format == Format::Anthropic || !is_system(m));
    tools
        .iter()
        .chain(system)
        .chain(rest)
        .map(unmarked)
        .collect()
}

/// `piece`'s JSON with `cache_control` removed from it and from its content blocks.
fn unmarked(piece: &Value) -> Vec<u8> {
    let marked = |v: &Value| v.get("cache_control").is_some();
    let blocks = piece.get("content").and_then(Value::as_array);
    if !marked(piece) && !blocks.is_some_and(|b| b.iter().any(marked)) {
        // Nothing to take out: no copy (the throughput bench showed the copies).
        return serde_json::to_vec(piece).unwrap_or_default();
    }
    let mut piece = piece.clone();
    if let Some(object) = piece.as_object_mut() {
        object.remove("cache_control");
    }
    if let Some(blocks) = piece.get_mut("content").and_then(Value::as_array_mut) {
        for block in blocks.iter_mut().filter_map(Value::as_object_mut) {
            block.remove("cache_control");
        }
    }
    // Serializing a `Value` cannot fail (its keys are strings).
    serde_json::to_vec(&piece).unwrap_or_default()
}

/// Bytes of the common prefix of two piece lists, read piece by piece.
fn common_prefix(previous: &[Vec<u8>], next: &[Vec<u8>]) -> usize {
    let mut shared = 0;
    for (a, b) in previous.iter().zip(next) {
        if a != b {
            return shared + a.iter().zip(b).take_while(|(x, y)| x == y).count();
        }
        shared += a.len();
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_reads_tools_then_system_then_messages() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
            ],
            "tools": [{"type": "function", "function": {"name": "t"}}],
        });
        let pieces = pieces(Format::OpenAi, &body);
        let text: Vec<String> = pieces
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        assert_eq!(text.len(), 3);
        assert!(text[0].contains("function"), "{text:?}");
        assert!(text[1].contains("sys"), "{text:?}");
        assert!(text[2].contains("hi"), "{text:?}");
    }

    #[test]
    fn anthropic_system_as_text_or_blocks_and_markers_ignored() {
        let marked = json!({
            "model": "m",
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
            ]}],
            "tools": [{"name": "t", "cache_control": {"type": "ephemeral"}}],
        });
        let plain = json!({
            "model": "m",
            "system": [{"type": "text", "text": "sys"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "tools": [{"name": "t"}],
        });
        assert_eq!(
            pieces(Format::Anthropic, &marked),
            pieces(Format::Anthropic, &plain)
        );
        let text = json!({"model": "m", "system": "sys", "messages": []});
        assert_eq!(pieces(Format::Anthropic, &text), vec![b"\"sys\"".to_vec()]);
    }

    #[test]
    fn the_prefix_stops_inside_the_first_piece_that_differs() {
        let previous = [b"abc".to_vec(), b"defg".to_vec(), b"h".to_vec()];
        let next = [b"abc".to_vec(), b"deXg".to_vec(), b"h".to_vec()];
        assert_eq!(common_prefix(&previous, &next), 3 + 2);
        assert_eq!(common_prefix(&previous, &previous[..2]), 7);
        assert_eq!(common_prefix(&[], &next), 0);
    }
}
