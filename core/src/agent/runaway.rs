//! Runaway replies, caught on the stream. A model whose server's chat template does not
//! fit it writes the template's control tokens as text (`…hello<|im_end|>\n<|im_start|>user…`)
//! and goes on playing both sides of the conversation; a small model falls into a loop
//! and writes the same sentence or paragraph until its token limit. `Guard` sits first on
//! a reply's stream: it holds back what may be the start of either, and once it is sure
//! it stops for good — nothing more is released, and `Cut` says what was kept and why,
//! so the turn hangs up on the model at once and keeps what came before.
//!
//! It decides on markers and exact repeats only, never on the words of the text. A
//! fenced code block is left alone (code repeats lines, and may quote a template), and
//! so is a token in backticks.

/// Chat-template control tokens, which no reply contains as text.
const CONTROL_TOKENS: &[&str] = &[
    // ChatML (Qwen, SmolLM, Hermes, Yi …)
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    // Llama 3
    "<|eot_id|>",
    "<|eom_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|begin_of_text|>",
    "<|end_of_text|>",
    // Gemma
    "<end_of_turn>",
    "<start_of_turn>",
    // Phi-3, Zephyr
    "<|end|>",
    "<|user|>",
    "<|assistant|>",
    // Llama 2, Mistral
    "</s>",
    "[INST]",
    "[/INST]",
    // DeepSeek (full-width bars)
    "<｜end▁of▁sentence｜>",
    "<｜User｜>",
    "<｜Assistant｜>",
];

/// The shortest stretch of text whose back-to-back repeats count as a loop: shorter
/// units ("ha ", "| 0 ") repeat in ordinary text.
const MIN_UNIT: usize = 16;
/// The longest: a repeated paragraph longer than this runs into the output limit.
const MAX_UNIT: usize = 1024;
/// How many copies in a row make a loop at least (the first, and three repeats): a
/// refrain sung three times is not one.
const COPIES: usize = 4;
/// How many bytes the repeats after the first copy must come to (about 60 tokens): a
/// short sentence written out a few times on purpose is not a loop either, and a real
/// one runs on for thousands of tokens.
const REPEAT_BYTES: usize = 256;
/// A shorter unit that spans lines (`#\n\n`, a template's empty turn) is a loop after
/// this many copies.
const SHORT_COPIES: usize = 8;

/// Why the stream was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Why {
    /// The model wrote this control token of a chat template.
    Template(&'static str),
    /// The model wrote the same text over and over (`copies_for`).
    Repeat,
}

impl Why {
    /// The one sentence the person gets after what came before.
    pub(super) fn sentence(&self) -> String {
        match self {
            Why::Template(token) => format!(
                "(Reply stopped: the model wrote the chat-template marker {token} as text, so its server's chat template does not fit it — for llama-server, start it with --jinja or the model's own --chat-template.)"
            ),
            Why::Repeat => {
                "(Reply stopped: the model began repeating the same text over and over.)".into()
            }
        }
    }
}

/// Where a reply was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cut {
    /// The reply's text up to the stop, exactly as the model wrote it.
    pub kept: String,
    pub why: Why,
    /// Something other than white space came after the marker (or the repeats): the
    /// model was running on, not ending its reply with a stray token.
    pub ran_on: bool,
}

/// One model call's text, watched as it streams. `push` each delta and pass on what it
/// returns.
#[derive(Debug)]
pub(super) struct Guard {
    /// Everything pushed so far (up to the cut, once there is one).
    text: String,
    /// How much of `text` was passed on.
    released: usize,
    /// `runs[l]`: how many bytes at the end of `text` equal the bytes `l` before them.
    runs: Vec<u32>,
    /// Inside a fenced code block.
    in_code: bool,
    /// Where the line being written starts.
    line_start: usize,
    cut: Option<Cut>,
}

impl Default for Guard {
    fn default() -> Self {
        Guard {
            text: String::new(),
            released: 0,
            runs: vec![0; MAX_UNIT + 1],
            in_code: false,
            line_start: 0,
            cut: None,
        }
    }
}

impl Guard {
    /// Take in one delta; what may now be shown.
    pub(super) fn push(&mut self, delta: &str) -> String {
        if let Some(cut) = &mut self.cut {
            cut.ran_on |= !delta.trim().is_empty();
            return String::new();
        }
        let from = self.text.len();
        self.text.push_str(delta);
        let mut hold = 0;
        for at in from..self.text.len() {
            match self.step(at) {
                Step::Go(longest) => hold = longest,
                Step::Stop { keep, why } => return self.stop(keep, why),
            }
        }
        let hold = hold.max(self.partial_token());
        let mut end = self.text.len() - hold.min(self.text.len() - self.released);
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let out = self.text[self.released..end].to_string();
        self.released = end;
        out
    }

    /// The stream ended: what was held back, unless the reply was stopped.
    pub(super) fn finish(&mut self) -> String {
        if self.cut.is_some() {
            return String::new();
        }
        let out = self.text[self.released..].to_string();
        self.released = self.text.len();
        out
    }

    /// The reply was stopped here, if it was.
    pub(super) fn cut(&self) -> Option<&Cut> {
        self.cut.as_ref()
    }

    pub(super) fn take_cut(&mut self) -> Option<Cut> {
        self.cut.take()
    }

    /// Start again (a new model call, or another model's reply).
    pub(super) fn reset(&mut self) {
        *self = Guard::default();
    }

    /// Look at the byte at `at`, the newest one: the longest repeat now running, or a
    /// reason to stop.
    fn step(&mut self, at: usize) -> Step {
        let bytes = self.text.as_bytes();
        let byte = bytes[at];
        if byte == b'\n' {
            let line = self.text[self.line_start..at].trim_start_matches([' ', '\t']);
            if line.starts_with("```") {
                self.in_code = !self.in_code;
                self.runs.fill(0);
            }
            self.line_start = at + 1;
        }
        if self.in_code {
            return Step::Go(0);
        }
        if let Some(token) = token_ending_at(&self.text, at + 1) {
            return Step::Stop {
                keep: at + 1 - token.len(),
                why: Why::Template(token),
            };
        }
        let mut longest = 0;
        let mut looped = None;
        for unit in 1..=MAX_UNIT.min(at) {
            let run = &mut self.runs[unit];
            if bytes[at - unit] == byte {
                *run += 1;
                longest = longest.max(*run as usize);
                let copies = copies_for(unit);
                if *run as usize == (copies - 1) * unit
                    && looped.is_none()
                    && is_loop_unit(&bytes[at + 1 - unit..=at])
                {
                    looped = Some((unit, copies));
                }
            } else {
                *run = 0;
            }
        }
        match looped {
            Some((unit, copies)) => Step::Stop {
                keep: sentence_end(bytes, at + 1 - (copies - 1) * unit, unit),
                why: Why::Repeat,
            },
            None => Step::Go(longest),
        }
    }

    /// Stop at `keep`: what is left of the kept text goes out now, nothing after it ever.
    fn stop(&mut self, keep: usize, why: Why) -> String {
        let mut keep = keep.max(self.released);
        while !self.text.is_char_boundary(keep) {
            keep += 1;
        }
        let ran_on = match &why {
            Why::Template(token) => self
                .text
                .get(keep + token.len()..)
                .is_some_and(|after| !after.trim().is_empty()),
            Why::Repeat => true,
        };
        self.text.truncate(keep);
        let out = self.text[self.released..].to_string();
        self.released = keep;
        self.cut = Some(Cut {
            kept: self.text.clone(),
            why,
            ran_on,
        });
        out
    }

    /// How many bytes at the end of the text may begin a control token.
    fn partial_token(&self) -> usize {
        if self.in_code {
            return 0;
        }
        let text = self.text.as_bytes();
        CONTROL_TOKENS
            .iter()
            .filter_map(|token| {
                let token = token.as_bytes();
                (1..token.len().min(text.len() + 1))
                    .rev()
                    .find(|&n| text[text.len() - n..] == token[..n])
            })
            .max()
            .unwrap_or(0)
    }
}

enum Step {
    /// Go on; the longest repeat now running is this long.
    Go(usize),
    Stop {
        keep: usize,
        why: Why,
    },
}

/// The control token `text[..end]` ends with, unless it is quoted in backticks, or is
/// a `</s>` closing an HTML `<s>` (strikethrough).
fn token_ending_at(text: &str, end: usize) -> Option<&'static str> {
    let before = &text.as_bytes()[..end];
    let token = CONTROL_TOKENS
        .iter()
        .find(|token| before.ends_with(token.as_bytes()))?;
    let start = end - token.len();
    if start > 0 && before[start - 1] == b'`' {
        return None;
    }
    if *token == "</s>" && text[..start].contains("<s>") {
        return None;
    }
    Some(token)
}

/// How many copies in a row of a unit this long make a loop.
fn copies_for(unit: usize) -> usize {
    if unit < MIN_UNIT {
        SHORT_COPIES
    } else {
        COPIES.max(1 + REPEAT_BYTES.div_ceil(unit))
    }
}

/// Where to end the kept text of a loop whose first copy ends at `end`: the copies may
/// be counted from the middle of a sentence (`… say. I'm not sure what to do. I'm …`
/// repeats from the `.` of "say."), so the kept text runs on into the next copy, which
/// is the same text, up to the end of its first sentence or line.
fn sentence_end(bytes: &[u8], end: usize, unit: usize) -> usize {
    const ENDS: &[u8] = b".!?\n";
    if ENDS.contains(&bytes[end - 1]) {
        return end;
    }
    bytes[end..end + unit]
        .iter()
        .position(|b| ENDS.contains(b))
        .map_or(end, |at| end + at + 1)
}

/// A unit worth calling a loop. A long one has letters or digits (any non-ASCII
/// character may be one) and more than a few kinds of character: `=====`, `-=-=-=` and
/// `| 0 ` are what rules and tables are made of. A short one spans lines and has more
/// than white space in it.
fn is_loop_unit(unit: &[u8]) -> bool {
    if unit.len() < MIN_UNIT {
        return unit.contains(&b'\n') && unit.iter().any(|b| !b.is_ascii_whitespace());
    }
    let mut seen = [false; 256];
    let mut distinct = 0;
    for &b in unit {
        if !seen[b as usize] {
            seen[b as usize] = true;
            distinct += 1;
        }
    }
    distinct >= 4 && unit.iter().any(|b| b.is_ascii_alphanumeric() || *b >= 0x80)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Push `deltas`; what was shown, and the cut if any.
    fn run(deltas: &[&str]) -> (String, Option<Cut>) {
        let mut guard = Guard::default();
        let mut shown: String = deltas.iter().map(|d| guard.push(d)).collect();
        shown.push_str(&guard.finish());
        (shown, guard.take_cut())
    }

    /// `text` in pieces of about `n` bytes, on character boundaries.
    fn pieces(text: &str, n: usize) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut at = n.min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            out.push(&rest[..at]);
            rest = &rest[at..];
        }
        out
    }

    #[test]
    fn a_template_token_stops_the_stream_and_is_never_shown() {
        let (shown, cut) = run(&["hello", "<|im_", "end|>\n<|im_start|>", "user\nhi again"]);
        assert_eq!(shown, "hello");
        let cut = cut.expect("cut");
        assert_eq!(cut.kept, "hello");
        assert_eq!(cut.why, Why::Template("<|im_end|>"));
        assert!(cut.ran_on);
        // Split anywhere, the token never shows.
        let text = "Sure thing.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nthanks";
        for at in 1..text.len() {
            let (shown, cut) = run(&[&text[..at], &text[at..]]);
            assert_eq!(shown, "Sure thing.", "split at {at}");
            assert_eq!(cut.map(|c| c.why), Some(Why::Template("<|eot_id|>")));
        }
    }

    #[test]
    fn a_stray_token_at_the_very_end_did_not_run_on() {
        let (shown, cut) = run(&["All done.", "<|im_end|>", "\n"]);
        assert_eq!(shown, "All done.");
        assert!(!cut.expect("cut").ran_on);
    }

    #[test]
    fn tokens_in_code_or_backticks_and_html_strikethrough_are_text() {
        let text = "ChatML ends a turn with `<|im_end|>`:\n```\n<|im_start|>user\nhi<|im_end|>\n```\nPrice: <s>$20</s> $15. Done.";
        let (shown, cut) = run(&pieces(text, 5));
        assert_eq!(cut, None);
        assert_eq!(shown, text);
    }

    #[test]
    fn a_sentence_repeated_back_to_back_is_cut_after_its_first_copy() {
        let text = format!(
            "Miso, the cat. I'm not sure what to say.{}",
            " I'm not sure what to do.".repeat(40)
        );
        let (shown, cut) = run(&pieces(&text, 4));
        let cut = cut.expect("cut");
        assert_eq!(cut.why, Why::Repeat);
        assert_eq!(
            cut.kept,
            "Miso, the cat. I'm not sure what to say. I'm not sure what to do."
        );
        assert_eq!(shown, cut.kept, "the repeats were never shown");
    }

    #[test]
    fn a_paragraph_repeated_back_to_back_is_cut_too() {
        let text = format!(
            "I'm sorry for any confusion.\n\nYou're welcome.\n\n{}",
            "I'm sorry for any confusion.\n\n".repeat(20)
        );
        let (shown, cut) = run(&pieces(&text, 3));
        let cut = cut.expect("cut");
        assert_eq!(
            cut.kept,
            "I'm sorry for any confusion.\n\nYou're welcome.\n\nI'm sorry for any confusion."
        );
        assert_eq!(shown, cut.kept);
    }

    #[test]
    fn ordinary_repetition_is_not_a_loop() {
        for text in [
            // A rule, a table of zeros, short words repeated, a list.
            &format!("Title\n{}\n\nbody", "=".repeat(200)),
            "| 0 | 0 |\n| 0 | 0 |\n| 0 | 0 |\n| 0 | 0 |\nok",
            "ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha!",
            "- buy milk today\n- buy eggs today\n- buy rice today\n- buy milk later\n",
            // Repeated lines of code.
            &format!(
                "```\n{}```\nThat is the loop.",
                "    print(\"hello world\")\n".repeat(5)
            ),
            // Said twice, or a refrain three times: not yet a loop.
            "It works now. It works now. Try it.",
            "We will rock you!\nWe will rock you!\nWe will rock you!\nBuddy, you're a boy.",
            // A sentence written out a few times on purpose, filler in a test.
            &format!("{}Done.", "I will not talk in class. ".repeat(6)),
            &format!(
                "Part 1: {}\n\nPart 2",
                "words to fill a paragraph ".repeat(8)
            ),
        ] {
            let (shown, cut) = run(&pieces(text, 3));
            assert_eq!(cut, None, "{text}");
            assert_eq!(shown, text);
        }
    }

    #[test]
    fn what_is_held_is_released_once_it_differs() {
        let mut guard = Guard::default();
        let first = guard.push("Let me see. I'm not sure what to do. I'm not sure what");
        // The second "I'm not sure what" waits: it may be a loop beginning.
        assert!(
            first.starts_with("Let me see. I'm not sure what to do"),
            "{first}"
        );
        assert!(!first.ends_with("I'm not sure what"), "{first}");
        let rest = guard.push(" day it is.") + guard.finish().as_str();
        assert_eq!(
            first + rest.as_str(),
            "Let me see. I'm not sure what to do. I'm not sure what day it is."
        );
    }

    #[test]
    fn multibyte_text_is_cut_on_a_character_boundary() {
        let text = format!("Ünïcödé ✓ {}", "日本語のテキストです。".repeat(12));
        let (shown, cut) = run(&pieces(&text, 2));
        let cut = cut.expect("cut");
        assert_eq!(cut.kept, "Ünïcödé ✓ 日本語のテキストです。");
        assert_eq!(shown, cut.kept);
    }

    /// The text deltas of a recorded OpenAI stream, in order.
    fn deltas(sse: &str) -> Vec<String> {
        sse.lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
            .filter_map(|event| {
                event["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(String::from)
            })
            .collect()
    }

    /// Feed a recorded stream until the guard stops it: what was shown, the cut, and
    /// how many deltas it took.
    fn replay(sse: &str) -> (String, Cut, usize) {
        let deltas = deltas(sse);
        let mut guard = Guard::default();
        let mut shown = String::new();
        for (n, delta) in deltas.iter().enumerate() {
            shown.push_str(&guard.push(delta));
            if let Some(cut) = guard.take_cut() {
                return (shown, cut, n + 1);
            }
        }
        panic!("never stopped: {shown:?}");
    }

    #[test]
    fn recorded_runaways_stop_early() {
        // Gemma's markers written as text from the first token on.
        let (shown, cut, used) = replay(include_str!(
            "../../../tests/fixtures/model_output/recorded_smollm2_gemma_template.sse"
        ));
        assert_eq!((shown.as_str(), cut.kept.as_str()), ("", ""));
        assert_eq!(cut.why, Why::Template("<end_of_turn>"));
        assert!(used <= 8, "{used} deltas");
        // One sentence over and over (a real request with four tools offered).
        let (shown, cut, used) = replay(include_str!(
            "../../../tests/fixtures/model_output/recorded_smollm2_sentence_loop.sse"
        ));
        assert_eq!(cut.why, Why::Repeat);
        assert_eq!(
            cut.kept,
            "Miso, the cat. I'm not sure what to say. I'm not sure what to do."
        );
        assert_eq!(shown, cut.kept);
        assert!(used < 110, "{used} of 120 deltas");
        // "#" and blank lines over and over under a Llama 3 template.
        let (shown, cut, used) = replay(include_str!(
            "../../../tests/fixtures/model_output/recorded_smollm2_llama3_template.sse"
        ));
        assert_eq!(cut.why, Why::Repeat);
        assert_eq!(cut.kept.trim(), "#");
        assert_eq!(shown, cut.kept);
        assert!(used < 30, "{used} of 100 deltas");
    }
}
