//! Clean output: what a model writes that is not for the person. Models served by
//! Ollama, vLLM or DeepSeek often put their reasoning in the text (`<think>…</think>`,
//! or only the closing tag when the chat template opened it), leak tool calls as markup
//! (`<tool_call>…</tool_call>`, `<function=name>…</function>`, `[TOOL_CALLS] […]`), or
//! repeat a paragraph word for word. `clean` takes a finished text apart into what is
//! shown and the reasoning it carried; `StreamCleaner` does the same to a stream of
//! deltas, holding back what may be the start of a marker until it knows.
//!
//! It decides on markup only, never on the words of the text.

use crate::provider::Part;

/// Reasoning blocks: (opening tag, closing tag). Matched without regard to case.
const REASONING: &[(&str, &str)] = &[
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
];

/// Leaked tool-call markup: (opening, closing; `None` runs to the end of the text).
const TOOL_MARKUP: &[(&str, Option<&str>)] = &[
    ("<tool_call>", Some("</tool_call>")),
    ("<function=", Some("</function>")),
    ("[TOOL_CALLS]", None),
];

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
}

fn blocks() -> impl Iterator<Item = Block> {
    REASONING
        .iter()
        .map(|(open, close)| Block {
            open,
            close: Some(close),
            reasoning: true,
        })
        .chain(TOOL_MARKUP.iter().map(|(open, close)| Block {
            open,
            close: *close,
            reasoning: false,
        }))
}

/// The first block opening in `text`: its offset and kind.
fn next_block(text: &str) -> Option<(usize, Block)> {
    blocks()
        .filter_map(|block| find(text, block.open).map(|at| (at, block)))
        .min_by_key(|(at, _)| *at)
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
#[derive(Debug, Default)]
pub struct StreamCleaner {
    /// Text not yet released: a possible marker's start, or a block's inside.
    held: String,
    /// Inside this block, waiting for its closing tag (`None`: to the end).
    inside: Option<Option<&'static str>>,
    /// Something was released: an opening tag is no longer "at the start".
    released: bool,
}

impl StreamCleaner {
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
            match next_block(&self.held) {
                Some((at, block)) => {
                    out.push_str(&self.held[..at]);
                    self.held.drain(..at + block.open.len());
                    self.inside = Some(block.close);
                }
                None => {
                    let keep = blocks()
                        .map(|b| partial_suffix(&self.held, b.open))
                        .max()
                        .unwrap_or(0);
                    let cut = self.held.len() - keep;
                    out.push_str(&self.held[..cut]);
                    self.held.drain(..cut);
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

    /// Start again (the reply was abandoned, or a new message begins).
    pub fn reset(&mut self) {
        *self = Self::default();
    }
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
    fn a_stream_releases_a_lone_angle_bracket_once_it_is_clear() {
        assert_eq!(streamed(&["a <", " b"]), "a < b");
        assert_eq!(streamed(&["1 <", "2"]), "1 <2");
    }
}
