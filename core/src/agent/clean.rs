//! Clean output: what a model writes that is not for the person. Models served by
//! Ollama, vLLM or DeepSeek often put their reasoning in the text (`<think>…</think>`,
//! or only the closing tag when the chat template opened it), leak tool calls as markup
//! (`<tool_call>…</tool_call>`, `<tools>…</tools>`, `<function=name>…</function>`,
//! `[TOOL_CALLS] […]`, `<|python_tag|>…`), or repeat a paragraph word for word. `clean`
//! takes a finished text apart into what is shown and the reasoning it carried;
//! `StreamCleaner` does the same to a stream of deltas. Both take the text apart with
//! `text_calls::Scanner`, the same way `text_calls::read` does, so what streams by is
//! exactly what the finished text shows, and never a call that runs.
//!
//! It decides on markup only, never on the words of the text. Markup counts only where a
//! call may start (on its own line, outside code and quotes): quoted in prose, in code or
//! in a quote it is shown as it is. Calls written as text are made calls before the text
//! is cleaned (`text_calls::read`); what is left of their markup here is a call nobody
//! could run.

use pincer_config::TextToolCalls;

use super::text_calls::{Piece, Scanner};
use crate::provider::{Part, ToolSpec};

/// A finished text taken apart.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Cleaned {
    /// What the person sees.
    pub text: String,
    /// Reasoning found in the text (kept as a reasoning part, never shown).
    pub reasoning: String,
}

/// Take reasoning blocks and leaked tool markup out of `text`, and drop a paragraph
/// that repeats the one before it.
pub(super) fn clean(text: &str) -> Cleaned {
    let mut scanner = Scanner::new(&[], TextToolCalls::Off);
    let mut pieces = Vec::new();
    scanner.push(text, &mut pieces);
    scanner.finish(&mut pieces);
    let mut reasoning = String::new();
    let mut shown = String::new();
    // Everything so far, as written: reasoning if a closing tag nobody opened comes.
    let mut before = String::new();
    for piece in pieces {
        match &piece {
            Piece::Shown(text) => shown.push_str(text),
            Piece::Reasoning { inside, .. } => push_reasoning(&mut reasoning, inside),
            Piece::Retract(_) => {
                push_reasoning(&mut reasoning, &before);
                shown.clear();
            }
            Piece::Markup(_) | Piece::Call(_) => {}
        }
        before.push_str(piece.raw());
    }
    Cleaned {
        text: without_repeats(&shown).trim().to_string(),
        reasoning,
    }
}

/// A reply's parts with every text part cleaned: the reasoning it carried becomes a
/// reasoning part before it, and a text left empty is dropped.
pub(super) fn clean_parts(parts: Vec<Part>) -> Vec<Part> {
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

/// What a cleaner lets through of a delta.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Released {
    /// Text to show.
    pub text: String,
    /// What was shown of this reply before was reasoning after all (a closing tag came
    /// that nobody opened): take it back before showing `text`.
    pub retract: bool,
}

/// `clean` for a stream: `push` each delta and show what it returns. Text that may
/// begin a marker or a call is held until the next delta tells; inside a block nothing
/// is released. The finished text is cleaned whole (`clean`), so what is held at the
/// end is simply dropped.
#[derive(Debug)]
pub(super) struct StreamCleaner {
    /// The reply's text taken apart as it comes, as `read` and `clean` take it apart.
    scanner: Scanner,
    /// Something was released: blank lines at the start are not.
    released: bool,
}

impl Default for StreamCleaner {
    fn default() -> Self {
        StreamCleaner {
            scanner: Scanner::new(&[], TextToolCalls::Off),
            released: false,
        }
    }
}

impl StreamCleaner {
    /// A cleaner for a reply to a request that offered `offered`, from a model that
    /// reads calls written as text as `mode` says.
    #[cfg(test)]
    pub(super) fn offering(offered: &[ToolSpec], mode: TextToolCalls) -> Self {
        StreamCleaner {
            scanner: Scanner::new(offered, mode),
            released: false,
        }
    }

    pub(super) fn push(&mut self, delta: &str) -> Released {
        let mut pieces = Vec::new();
        self.scanner.push(delta, &mut pieces);
        self.released(pieces)
    }

    /// The reply made a structured call: JSON held back as a possible call written as
    /// text may be text after all (in `auto`), and is released.
    pub(super) fn structured_call(&mut self) -> Released {
        let mut pieces = Vec::new();
        self.scanner.structured_call(&mut pieces);
        self.released(pieces)
    }

    fn released(&mut self, pieces: Vec<Piece>) -> Released {
        let mut out = Released::default();
        for piece in pieces {
            match piece {
                Piece::Shown(text) => out.text.push_str(&text),
                Piece::Retract(_) => {
                    out.text.clear();
                    out.retract = true;
                    self.released = false;
                }
                Piece::Reasoning { .. } | Piece::Markup(_) | Piece::Call(_) => {}
            }
        }
        // Blank lines before or after a reasoning block at the start show nothing.
        if !self.released {
            out.text = out.text.trim_start().to_string();
            self.released = !out.text.is_empty();
        }
        out
    }

    /// The next model call offers `offered`, and its model reads calls written as text
    /// as `mode` says (what is held stays: a reply continued after its token limit goes
    /// on across calls).
    pub(super) fn offer(&mut self, offered: &[ToolSpec], mode: TextToolCalls) {
        self.scanner.offer(offered, mode);
    }

    /// The tools the current model call offered.
    pub(super) fn offered(&self) -> &[ToolSpec] {
        self.scanner.offered()
    }

    /// Start again (the reply was abandoned, or a new message begins); the offered
    /// tools and the mode stay.
    pub(super) fn reset(&mut self) {
        *self = StreamCleaner {
            scanner: self.scanner.restarted(),
            released: false,
        };
    }
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
        assert_eq!(clean("A\n<reasoning>b</reasoning>\nC").text, "A\n\nC");
        // Mid-sentence it is a word, shown (a model names the tag as often as it uses it).
        let prose = "A <reasoning>b</reasoning>C";
        assert_eq!(clean(prose).text, prose);
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
            clean("Working on it\n[TOOL_CALLS] [{\"name\":\"x\"}]").text,
            "Working on it"
        );
        assert_eq!(clean("<tool_call>x</tool_call>\nok").text, "ok");
        assert!(clean("<tool_call>x</tool_call>").reasoning.is_empty());
    }

    #[test]
    fn markup_quoted_in_prose_code_or_a_quote_is_shown_as_it_is() {
        for text in [
            "quoted here: `<function=write_file>{\"path\": \"p.txt\", \"content\": \"y\"}</function>`. I did not follow it.",
            "Sure <function=read_file>{\"path\":\"a\"}</function> done",
            "Working on it [TOOL_CALLS] [{\"name\":\"x\"}]",
            "> [TOOL_CALLS]write_file[ARGS]{\"path\": \"p.txt\"}",
            "The form:\n```\n<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>\n```\nThat is all.",
            "~~~\n<|python_tag|>{\"name\": \"x\", \"parameters\": {}}\n~~~",
            "Indented:\n\n    <tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>",
            "A span that runs on ` over the line\n<tool_call>x</tool_call> ` ends here",
        ] {
            assert_eq!(clean(text).text, text);
            for piece in [1, 3, 7] {
                assert_eq!(
                    streamed_for(&offered(), text, piece, TextToolCalls::On),
                    text
                );
            }
        }
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
        deltas.iter().map(|d| cleaner.push(d).text).collect()
    }

    #[test]
    fn a_stream_never_shows_a_block_split_across_deltas() {
        let shown = streamed(&["<th", "ink>sec", "ret plan</thi", "nk>\n\nHello", " there"]);
        assert_eq!(shown, "Hello there");
        let shown = streamed(&["Let me look.\n<tool", "_call>{\"a\":1}</tool_", "call> ok"]);
        assert_eq!(shown, "Let me look.\n ok");
        assert!(!streamed(&["x\n[TOOL_", "CALLS] [{}]", " more"]).contains("TOOL"));
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
        assert_eq!(clean("Calling.\n[TOOL_CALLS]x[ARGS]{}").text, "Calling.");
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

    /// `text` streamed a few characters at a time to a cleaner for a call offering
    /// `tools` to a model reading calls written as text as `mode` says.
    fn streamed_for(tools: &[ToolSpec], text: &str, piece: usize, mode: TextToolCalls) -> String {
        let mut cleaner = StreamCleaner::offering(tools, mode);
        let chars: Vec<char> = text.chars().collect();
        let mut shown = String::new();
        for chunk in chars.chunks(piece) {
            let released = cleaner.push(&chunk.iter().collect::<String>());
            if released.retract {
                shown.clear();
            }
            shown.push_str(&released.text);
        }
        shown
    }

    #[test]
    fn a_call_written_as_json_never_streams_by() {
        let call = "Checking.\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n```\nOne moment.";
        let bare = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}";
        for piece in [1, 2, 5, 200] {
            let shown = streamed_for(&offered(), call, piece, TextToolCalls::On);
            assert_eq!(shown, "Checking.\n\nOne moment.", "pieces of {piece}");
            for mode in [TextToolCalls::On, TextToolCalls::Auto] {
                assert_eq!(
                    streamed_for(&offered(), bare, piece, mode),
                    "",
                    "pieces of {piece}"
                );
            }
            // In `auto` a call is the whole reply: amid prose it is an example, shown.
            assert_eq!(
                streamed_for(&offered(), call, piece, TextToolCalls::Auto),
                call
            );
            // Without the tool offered, or with `off`, it is JSON like any other and shows.
            assert_eq!(streamed_for(&[], call, piece, TextToolCalls::On), call);
            for text in [call, bare] {
                assert_eq!(
                    streamed_for(&offered(), text, piece, TextToolCalls::Off),
                    text
                );
            }
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
                let shown = streamed_for(&offered(), text, piece, TextToolCalls::On);
                assert!(text.starts_with(&shown), "{text:?} / {piece}: {shown:?}");
                assert!(
                    shown.len() + 3 >= text.len(),
                    "{text:?} / {piece}: {shown:?}"
                );
            }
        }
        // While its first key is still coming, a JSON line is held back.
        let mut cleaner = StreamCleaner::offering(&offered(), TextToolCalls::On);
        assert_eq!(cleaner.push("Here:\n{\"na").text, "Here:\n");
        assert_eq!(cleaner.push("rrator\": 1}\n").text, "{\"narrator\": 1}\n");
        // In `auto`, a whole call is held until the reply ends or goes on.
        let mut cleaner = StreamCleaner::offering(&offered(), TextToolCalls::Auto);
        let call = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}";
        assert_eq!(cleaner.push(call).text, "");
        assert_eq!(cleaner.push("\n").text, "");
        assert_eq!(
            cleaner.push("Like that.").text,
            format!("{call}\nLike that.")
        );
        // A structured call came: the JSON is text.
        let mut cleaner = StreamCleaner::offering(&offered(), TextToolCalls::Auto);
        assert_eq!(cleaner.push(call).text, "");
        assert_eq!(cleaner.structured_call().text, call);
    }

    #[test]
    fn reasoning_whose_opening_tag_the_template_wrote_is_taken_back() {
        let text = "The user wants a file.\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\nI will not.\n</think>\nAnswer";
        for piece in [1, 4, 500] {
            let mut cleaner = StreamCleaner::offering(&offered(), TextToolCalls::On);
            let chars: Vec<char> = text.chars().collect();
            let mut retracted = false;
            let mut shown = String::new();
            for chunk in chars.chunks(piece) {
                let released = cleaner.push(&chunk.iter().collect::<String>());
                if released.retract {
                    retracted = true;
                    shown.clear();
                }
                shown.push_str(&released.text);
            }
            assert!(retracted, "pieces of {piece}");
            assert_eq!(shown, "Answer", "pieces of {piece}");
        }
        let cleaned = clean(text);
        assert_eq!(cleaned.text, "Answer");
        assert!(cleaned.reasoning.contains("I will not."));
    }

    #[test]
    fn a_stream_releases_a_lone_angle_bracket_once_it_is_clear() {
        assert_eq!(streamed(&["a <", " b"]), "a < b");
        assert_eq!(streamed(&["1 <", "2"]), "1 <2");
    }
}
