//! Clean output: what a model writes that is not for the person. Models served by
//! Ollama, vLLM or DeepSeek often put their reasoning in the text (`<think>…</think>`,
//! or only the closing tag when the chat template opened it), leak tool calls as markup
//! (`<tool_call>…</tool_call>`, `<tools>…</tools>`, `<function=name>…</function>`,
//! `[TOOL_CALLS] […]`, `<|python_tag|>…`), or repeat a paragraph word for word. `clean`
//! takes a finished text apart into what is shown and the reasoning it carried;
//! `StreamCleaner` does the same to a stream of deltas, holding back what may be the
//! start of a marker until it knows — and, for a request that offered tools, a JSON
//! block that will be a call written as text (`text_calls`), which is never shown.
//!
//! It decides on markup only, never on the words of the text. Calls written as text are
//! made calls before the text is cleaned (`text_calls::read`); what is left of their
//! markup here is a call nobody could run.

use super::text_calls::{self, Block as CallBlock};
use crate::provider::{Part, ToolSpec};

/// Reasoning blocks: (opening tag, closing tag). Matched without regard to case.
const REASONING: &[(&str, &str)] = &[
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
];

/// Leaked tool-call markup: (opening, closing — `None` runs to the end of the text —,
/// what must follow the opening for it to be markup).
const TOOL_MARKUP: &[(&str, Option<&str>, Follows)] = &[
    ("<tool_call>", Some("</tool_call>"), anything),
    ("<tools>", Some("</tools>"), anything),
    ("<function=", Some("</function>"), a_name),
    ("[TOOL_CALLS]", None, calls_follow),
    ("<|python_tag|>", None, anything),
];

/// Given the text after an opening, whether it is markup (`None`: cannot tell yet).
type Follows = fn(&str) -> Option<bool>;

fn anything(_: &str) -> Option<bool> {
    Some(true)
}

/// `<function=` starts a call only before a function's name.
fn a_name(after: &str) -> Option<bool> {
    let first = after.chars().next()?;
    Some(first.is_ascii_alphanumeric() || first == '_')
}

/// Mistral's marker starts calls before a JSON list or object, or right before a name
/// (`[TOOL_CALLS]get_weather[ARGS]{…}`); in prose ("answer with [TOOL_CALLS] followed by
/// …") it is a word.
fn calls_follow(after: &str) -> Option<bool> {
    let first = after.chars().next()?;
    if first.is_ascii_alphanumeric() || first == '_' {
        return Some(true);
    }
    let rest = after.trim_start();
    let first = rest.chars().next()?;
    Some(first == '[' || first == '{')
}

/// A finished text taken apart.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// What the person sees.
    pub text: String,
    /// Reasoning found in the text (kept as a reasoning part, never shown).
    pub reasoning: String,
}

/// Take reasoning blocks and leaked tool markup out of `text`, and drop a paragraph
/// that repeats the one before it.
pub fn clean(text: &str) -> Cleaned {
    let mut reasoning = String::new();
    let mut rest = text.to_string();
    // The closing tag alone: the chat template opened the block, so everything before
    // the first closing tag is reasoning.
    for (open, close) in REASONING {
        if let Some(at) = find(&rest, close)
            && find(&rest[..at], open).is_none()
        {
            push_reasoning(&mut reasoning, &rest[..at]);
            rest = rest[at + close.len()..].to_string();
        }
    }
    let mut shown = String::new();
    let mut i = 0;
    while i < rest.len() {
        let Some((at, block)) = next_block(&rest[i..]) else {
            shown.push_str(&rest[i..]);
            break;
        };
        let start = i + at;
        shown.push_str(&rest[i..start]);
        let body_start = start + block.open.len();
        let end = block
            .close
            .and_then(|close| find(&rest[body_start..], close).map(|at| (at, close.len())));
        let (body_end, next) = match end {
            Some((at, len)) => (body_start + at, body_start + at + len),
            // Unclosed: the rest of the text is the block.
            None => (rest.len(), rest.len()),
        };
        if block.reasoning {
            push_reasoning(&mut reasoning, &rest[body_start..body_end]);
        }
        i = next;
    }
    Cleaned {
        text: without_repeats(&shown).trim().to_string(),
        reasoning,
    }
}

/// A reply's parts with every text part cleaned: the reasoning it carried becomes a
/// reasoning part before it, and a text left empty is dropped.
pub fn clean_parts(parts: Vec<Part>) -> Vec<Part> {
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Text { text } => {
                let cleaned = clean(&text);
                if !cleaned.reasoning.is_empty() {
                    out.push(Part::reasoning(cleaned.reasoning));
                }
                if !cleaned.text.is_empty() {
                    out.push(Part::Text { text: cleaned.text });
                }
            }
            other => out.push(other),
        }
    }
    out
}

fn push_reasoning(into: &mut String, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    if !into.is_empty() {
        into.push('\n');
    }
    into.push_str(text);
}

/// One kind of block the text may hold.
#[derive(Clone, Copy)]
struct Block {
    open: &'static str,
    close: Option<&'static str>,
    reasoning: bool,
    follows: Follows,
}

fn blocks() -> impl Iterator<Item = Block> {
    REASONING
        .iter()
        .map(|(open, close)| Block {
            open,
            close: Some(close),
            reasoning: true,
            follows: anything,
        })
        .chain(TOOL_MARKUP.iter().map(|(open, close, follows)| Block {
            open,
            close: *close,
            reasoning: false,
            follows: *follows,
        }))
}

/// The block opening at the start of `text`, and whether it is one (`None`: cannot
/// tell yet).
fn block_at(text: &str) -> Option<(Block, Option<bool>)> {
    blocks()
        .find(|block| starts_with_ci(text, block.open))
        .map(|block| (block, (block.follows)(&text[block.open.len()..])))
}

/// The first block opening in a finished `text`: its offset and kind. An opening at
/// the very end counts.
fn next_block(text: &str) -> Option<(usize, Block)> {
    text.char_indices()
        .find_map(|(at, _)| match block_at(&text[at..]) {
            Some((block, Some(true) | None)) => Some((at, block)),
            _ => None,
        })
}

fn starts_with_ci(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// `needle` in `haystack`, ASCII case ignored; a byte offset.
fn find(haystack: &str, needle: &str) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// `text` with every paragraph that repeats the one before it word for word removed;
/// code blocks are left as they are.
fn without_repeats(text: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut in_code = false;
    for paragraph in text.split("\n\n") {
        let fences = paragraph.matches("```").count();
        let repeated = !in_code
            && fences == 0
            && !paragraph.trim().is_empty()
            && out
                .last()
                .is_some_and(|last| last.trim() == paragraph.trim());
        if !repeated {
            out.push(paragraph);
        }
        if fences % 2 == 1 {
            in_code = !in_code;
        }
    }
    out.join("\n\n")
}

/// `clean` for a stream: `push` each delta and show what it returns. Text that may
/// begin a marker is held until the next delta tells; inside a block nothing is
/// released. The finished text is cleaned whole (`clean`), so what is held at the end
/// is simply dropped.
#[derive(Debug)]
pub struct StreamCleaner {
    /// Text not yet released: a possible marker's start, or a block's inside.
    held: String,
    /// Inside this block, waiting for its closing tag (`None`: to the end).
    inside: Option<Option<&'static str>>,
    /// Something was released: an opening tag is no longer "at the start".
    released: bool,
    /// What came before `held` ended a line (or nothing came yet): a call written as a
    /// JSON block can start here.
    line_start: bool,
    /// The tools the current model call offered: a JSON block calling one of them is
    /// held until it is whole, then dropped (it becomes a call, shown as one).
    offered: Vec<ToolSpec>,
    /// What was released ends inside a fenced code block: JSON there is code.
    in_code: bool,
}

impl Default for StreamCleaner {
    fn default() -> Self {
        StreamCleaner {
            held: String::new(),
            inside: None,
            released: false,
            line_start: true,
            offered: Vec::new(),
            in_code: false,
        }
    }
}

/// What the cleaner found in the text it holds.
enum Found {
    /// A block of markup opens here.
    Block(Block),
    /// A call written as text, this long, starts here.
    Call(usize),
    /// Something that may be either starts here: hold from here.
    Unsure,
}

impl StreamCleaner {
    /// A cleaner for a reply to a request that offered `offered`.
    #[cfg(test)]
    pub fn offering(offered: &[ToolSpec]) -> Self {
        StreamCleaner {
            offered: offered.to_vec(),
            ..Self::default()
        }
    }

    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        let mut out = String::new();
        loop {
            if let Some(close) = self.inside {
                let Some(close) = close else {
                    self.held.clear(); // runs to the end of the text
                    return out;
                };
                match find(&self.held, close) {
                    Some(at) => {
                        self.held.drain(..at + close.len());
                        self.inside = None;
                        self.line_start = true;
                    }
                    None => {
                        // Keep only what may be the start of the closing tag.
                        let keep = partial_suffix(&self.held, close);
                        let cut = self.held.len() - keep;
                        self.held.drain(..cut);
                        return out;
                    }
                }
                continue;
            }
            match self.next_found() {
                Some((at, Found::Block(block))) => {
                    self.release(&mut out, at);
                    self.held.drain(..block.open.len());
                    self.inside = Some(block.close);
                }
                Some((at, Found::Call(len))) => {
                    self.release(&mut out, at);
                    self.held.drain(..len);
                    self.line_start = true;
                }
                Some((at, Found::Unsure)) => {
                    self.release(&mut out, at);
                    break;
                }
                None => {
                    let keep = blocks()
                        .map(|b| partial_suffix(&self.held, b.open))
                        .max()
                        .unwrap_or(0);
                    self.release(&mut out, self.held.len() - keep);
                    break;
                }
            }
        }
        // Blank lines before or after a reasoning block at the start show nothing.
        if !self.released {
            out = out.trim_start().to_string();
            self.released = !out.is_empty();
        }
        out
    }

    /// The next model call offers `offered` (what is held stays: a reply continued
    /// after its token limit goes on across calls).
    pub fn offer(&mut self, offered: &[ToolSpec]) {
        self.offered = offered.to_vec();
    }

    /// The tools the current model call offered.
    pub fn offered(&self) -> &[ToolSpec] {
        &self.offered
    }

    /// Start again (the reply was abandoned, or a new message begins); the offered
    /// tools stay.
    pub fn reset(&mut self) {
        *self = StreamCleaner {
            offered: std::mem::take(&mut self.offered),
            ..Self::default()
        };
    }

    /// Move `held[..upto]` to `out`.
    fn release(&mut self, out: &mut String, upto: usize) {
        let text: String = self.held.drain(..upto).collect();
        let mut line_start = self.line_start;
        for line in text.split_inclusive('\n') {
            if line_start && is_fence(line) {
                self.in_code = !self.in_code;
            }
            line_start = line.ends_with('\n');
        }
        if !text.is_empty() {
            self.line_start = line_start;
        }
        out.push_str(&text);
    }

    /// The first block, call or undecided start in what is held.
    fn next_found(&self) -> Option<(usize, Found)> {
        let held = self.held.as_str();
        let mut in_code = self.in_code;
        for (at, c) in held.char_indices() {
            match block_at(&held[at..]) {
                Some((block, Some(true))) => return Some((at, Found::Block(block))),
                Some((_, None)) => return Some((at, Found::Unsure)),
                _ => {}
            }
            if !matches!(c, '`' | '{' | '[') || !self.starts_line(at) {
                continue;
            }
            let rest = &held[at..];
            if in_code && FENCE.starts_with(rest) {
                // Perhaps the fence that ends the code: wait for it whole.
                return Some((at, Found::Unsure));
            }
            if !in_code {
                match text_calls::block_at(rest, &self.offered) {
                    CallBlock::Call(len) => return Some((at, Found::Call(len))),
                    CallBlock::Unsure => return Some((at, Found::Unsure)),
                    CallBlock::Text => {}
                }
            }
            if is_fence(rest) {
                in_code = !in_code;
            }
        }
        None
    }

    /// Whether only spaces or tabs stand between a line's start and `held[at]`.
    fn starts_line(&self, at: usize) -> bool {
        let before = self.held[..at].trim_end_matches([' ', '\t']);
        match before.chars().last() {
            Some(last) => last == '\n',
            None => self.line_start,
        }
    }
}

const FENCE: &str = "```";

/// Whether a line, from its start, opens or closes a fenced code block.
fn is_fence(line: &str) -> bool {
    line.trim_start_matches([' ', '\t']).starts_with(FENCE)
}

/// The length of the longest end of `text` that is a proper start of `marker` (ASCII
/// case ignored), on a character boundary.
fn partial_suffix(text: &str, marker: &str) -> usize {
    let max = (marker.len() - 1).min(text.len());
    (1..=max)
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && text.as_bytes()[text.len() - n..].eq_ignore_ascii_case(&marker.as_bytes()[..n])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_blocks_become_reasoning() {
        let cleaned = clean("<think>the user wants a haiku</think>\nHere it is.");
        assert_eq!(cleaned.text, "Here it is.");
        assert_eq!(cleaned.reasoning, "the user wants a haiku");
        assert_eq!(clean("<THINKING>x</THINKING>Done").text, "Done");
        assert_eq!(clean("A <reasoning>b</reasoning>C").text, "A C");
    }

    #[test]
    fn a_closing_tag_alone_means_all_before_it_was_reasoning() {
        let cleaned = clean("Okay, so the user asks...\n</think>\n\nParis.");
        assert_eq!(cleaned.text, "Paris.");
        assert!(cleaned.reasoning.contains("the user asks"));
    }

    #[test]
    fn an_unclosed_block_at_the_start_hides_everything() {
        assert_eq!(clean("<think>I will now think forever").text, "");
    }

    #[test]
    fn leaked_tool_markup_is_removed() {
        let text = "Let me check.\n<tool_call>{\"name\": \"exec\", \"arguments\": {}}</tool_call>";
        assert_eq!(clean(text).text, "Let me check.");
        assert_eq!(
            clean("Sure <function=read_file>{\"path\":\"a\"}</function> done").text,
            "Sure  done"
        );
        assert_eq!(
            clean("Working on it [TOOL_CALLS] [{\"name\":\"x\"}]").text,
            "Working on it"
        );
        assert!(clean("<tool_call>x</tool_call>").reasoning.is_empty());
    }

    #[test]
    fn a_paragraph_repeated_back_to_back_is_dropped_but_code_is_not() {
        assert_eq!(
            clean("One.\n\nTwo.\n\nTwo.\n\nThree.").text,
            "One.\n\nTwo.\n\nThree."
        );
        let code = "```\nx\n\nx\n```";
        assert_eq!(clean(code).text, code);
        assert_eq!(clean("Two.\n\nOne.\n\nTwo.").text, "Two.\n\nOne.\n\nTwo.");
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let text = "a < b and c > d; use <br> in HTML; [TOOL] is a word";
        assert_eq!(clean(text).text, text);
    }

    fn streamed(deltas: &[&str]) -> String {
        let mut cleaner = StreamCleaner::default();
        deltas.iter().map(|d| cleaner.push(d)).collect()
    }

    #[test]
    fn a_stream_never_shows_a_block_split_across_deltas() {
        let shown = streamed(&["<th", "ink>sec", "ret plan</thi", "nk>\n\nHello", " there"]);
        assert_eq!(shown, "Hello there");
        let shown = streamed(&["Let me look. <tool", "_call>{\"a\":1}</tool_", "call> ok"]);
        assert_eq!(shown, "Let me look.  ok");
        assert!(!streamed(&["x [TOOL_", "CALLS] [{}]", " more"]).contains("TOOL"));
    }

    #[test]
    fn new_markup_is_hidden_and_a_marker_in_prose_is_not() {
        assert_eq!(
            clean("Saving.\n<tools>\n{\"name\": \"x\", \"arguments\": {}}\n</tools>").text,
            "Saving."
        );
        assert_eq!(
            clean("<|python_tag|>{\"name\": \"x\", \"parameters\": {}}").text,
            ""
        );
        assert_eq!(clean("Calling.[TOOL_CALLS]x[ARGS]{}").text, "Calling.");
        let prose = "To call a tool answer with [TOOL_CALLS] followed by a JSON list.";
        assert_eq!(clean(prose).text, prose);
        assert_eq!(
            streamed(&["answer with [TOOL_", "CALLS]", " followed by it"]),
            "answer with [TOOL_CALLS] followed by it"
        );
        let tagged = "I'll write it down.\n<function=memory_write>{}</function>";
        assert_eq!(clean(tagged).text, "I'll write it down.");
        assert_eq!(clean("x <function= y").text, "x <function= y");
    }

    fn offered() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "get_weather".into(),
            description: String::new(),
            input_schema: std::sync::Arc::new(serde_json::json!({
                "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]
            })),
        }]
    }

    /// `text` streamed a few bytes at a time to a cleaner for a call offering `tools`.
    fn streamed_for(tools: &[ToolSpec], text: &str, piece: usize) -> String {
        let mut cleaner = StreamCleaner::offering(tools);
        let bytes: Vec<char> = text.chars().collect();
        bytes
            .chunks(piece)
            .map(|chunk| cleaner.push(&chunk.iter().collect::<String>()))
            .collect()
    }

    #[test]
    fn a_call_written_as_json_never_streams_by() {
        let call = "Checking.\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n```\nOne moment.";
        let bare = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}";
        for piece in [1, 2, 5, 200] {
            let shown = streamed_for(&offered(), call, piece);
            assert_eq!(shown, "Checking.\n\nOne moment.", "pieces of {piece}");
            assert_eq!(
                streamed_for(&offered(), bare, piece),
                "",
                "pieces of {piece}"
            );
            // Without the tool offered, it is JSON like any other and shows.
            assert_eq!(streamed_for(&[], call, piece), call);
        }
    }

    #[test]
    fn json_that_is_not_a_call_streams_as_it_comes() {
        for text in [
            // Not a call's first key: shown at once, not held to its end.
            "```json\n{\"city\": \"Oslo\", \"temp\": 3}\n```\n",
            // A call-like line inside code of another language.
            "```python\nx = 1\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n```\nok",
            // A call with arguments the tool refuses.
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\nok",
            "[link](http://x.y)\n[1, 2]\n",
        ] {
            for piece in [1, 3, 200] {
                let shown = streamed_for(&offered(), text, piece);
                assert!(text.starts_with(&shown), "{text:?} / {piece}: {shown:?}");
                assert!(
                    shown.len() + 3 >= text.len(),
                    "{text:?} / {piece}: {shown:?}"
                );
            }
        }
        // While its first key is still coming, a JSON line is held back.
        let mut cleaner = StreamCleaner::offering(&offered());
        assert_eq!(cleaner.push("Here:\n{\"na"), "Here:\n");
        assert_eq!(cleaner.push("rrator\": 1}\n"), "{\"narrator\": 1}\n");
    }

    #[test]
    fn a_stream_releases_a_lone_angle_bracket_once_it_is_clear() {
        assert_eq!(streamed(&["a <", " b"]), "a < b");
        assert_eq!(streamed(&["1 <", "2"]), "1 <2");
    }
}
