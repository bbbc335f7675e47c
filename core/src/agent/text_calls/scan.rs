//! A reply's text taken apart into what is shown, the reasoning it carries, tool-call
//! markup, and calls written as JSON — the one way both the stream (`StreamCleaner`) and
//! the finished text (`clean`, `read`) are taken apart, so the person never sees what
//! runs as a call and never loses what does not.
//!
//! - Reasoning: a `<think>…</think>` block (or `<thinking>`, `<reasoning>`) at the
//!   reply's start or where a call may start; and, where the chat template opened the
//!   block, a closing tag nobody opened, once, where a call may start (never in code or
//!   a quote): everything before it was reasoning (`Piece::Retract`). Nothing in
//!   reasoning is ever a call.
//! - Markup: `<tool_call>…`, `<tools>…`, `<function=name>…`, `[TOOL_CALLS]…`,
//!   `<|python_tag|>…` — only where a call may start (`lines`: a line's start, outside
//!   code and quotes), through its closing tag or to the end. Never shown; `read` runs it
//!   when it is calls to offered tools.
//! - JSON: a fenced or bare call object where a call may start, only for a request that
//!   offered tools, as `text_tool_calls` allows: `auto` takes it only as the whole reply
//!   and only without a structured call, `on` wherever a call may start, `off` never;
//!   never once the text has passed `MAX_SCAN_BYTES` (`read` does not read it).
//!
//! It decides on markup and JSON only, never on the words of the text. A stream is held
//! back only while what is held may still be a marker or a call.

use pincer_config::TextToolCalls;

use super::lines::Lines;
use super::{Block as JsonBlock, MAX_SCAN_BYTES, block_at};
use crate::provider::ToolSpec;

/// Reasoning blocks: (opening tag, closing tag). Matched without regard to case.
const REASONING: &[(&str, &str)] = &[
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
];

/// Tool-call markup: (opening, closing — `None` runs to the end of the text —, what
/// must follow the opening for it to be markup).
const MARKUP: &[(&str, Option<&str>, Follows)] = &[
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
/// (`[TOOL_CALLS]get_weather[ARGS]{…}`); before prose it is a word.
fn calls_follow(after: &str) -> Option<bool> {
    let first = after.chars().next()?;
    if first.is_ascii_alphanumeric() || first == '_' {
        return Some(true);
    }
    let first = after.trim_start().chars().next()?;
    Some(first == '[' || first == '{')
}

/// One piece of a reply's text, in order. Each holds its text exactly as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Shown to the person.
    Shown(String),
    /// A reasoning block: its inside, and its text with the tags.
    Reasoning { inside: String, raw: String },
    /// Tool-call markup, from its opening through its closing (or the end).
    Markup(String),
    /// A call written as JSON, bare or fenced, to an offered tool.
    Call(String),
    /// A closing reasoning tag nobody opened: every piece before was reasoning.
    Retract(String),
}

impl Piece {
    /// The piece's text as the model wrote it.
    pub(crate) fn raw(&self) -> &str {
        match self {
            Piece::Shown(raw) | Piece::Markup(raw) | Piece::Call(raw) | Piece::Retract(raw) => raw,
            Piece::Reasoning { raw, .. } => raw,
        }
    }
}

/// Where JSON may be a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Json {
    Never,
    /// Only as the whole reply.
    Whole,
    /// Wherever a call may start.
    Anywhere,
}

/// What comes next in the held text.
enum Next {
    /// A block opens at `at`, its opening `len` bytes long.
    Open {
        at: usize,
        len: usize,
        close: Option<&'static str>,
        reasoning: bool,
    },
    /// A closing reasoning tag nobody opened, `len` bytes, at `at`.
    LoneClose { at: usize, len: usize },
    /// A JSON call, `len` bytes, at `at`.
    Call { at: usize, len: usize },
    /// What starts at `at` cannot be told yet: hold it.
    Hold(usize),
}

/// The block the text is inside.
#[derive(Debug)]
struct Inside {
    /// Its closing tag (`None`: to the end).
    close: Option<&'static str>,
    reasoning: bool,
    /// Its text so far, with the opening tag.
    raw: String,
    /// Where its inside starts in `raw`.
    body: usize,
}

/// Takes a reply's text apart as it comes (`push`, then `finish`).
#[derive(Debug)]
pub(crate) struct Scanner {
    /// The tools the request offered: JSON calling one of them is a call.
    offered: Vec<ToolSpec>,
    mode: TextToolCalls,
    /// The reply also made a structured call (in `auto`, its JSON is then text).
    structured: bool,
    /// Text not yet taken apart: what may still be a marker or a call.
    held: String,
    inside: Option<Inside>,
    /// Where the text taken apart so far stands (blocks and calls left out).
    lines: Lines,
    /// Something other than white space and reasoning came: JSON is not the whole reply.
    consumed: bool,
    /// A reasoning block was opened (or a lone closing tag taken): later closing tags
    /// are text.
    reasoning_seen: bool,
    /// Bytes of this model call's text pushed so far: past `MAX_SCAN_BYTES`, `read`
    /// will not read the text, so no JSON in it is a call.
    pushed: usize,
}

impl Scanner {
    /// A scanner for a reply to a request that offered `offered`, reading JSON calls as
    /// `mode` says.
    pub(crate) fn new(offered: &[ToolSpec], mode: TextToolCalls) -> Self {
        Scanner {
            offered: offered.to_vec(),
            mode,
            structured: false,
            held: String::new(),
            inside: None,
            lines: Lines::default(),
            consumed: false,
            reasoning_seen: false,
            pushed: 0,
        }
    }

    /// The next model call offered `offered`, and its model reads JSON calls as `mode`
    /// says; what is held stays (a reply continued after its token limit goes on
    /// across calls).
    pub(crate) fn offer(&mut self, offered: &[ToolSpec], mode: TextToolCalls) {
        self.offered = offered.to_vec();
        self.mode = mode;
        self.structured = false;
        self.pushed = 0;
    }

    /// The same scanner at the start of a reply.
    pub(crate) fn restarted(&self) -> Self {
        Scanner::new(&self.offered, self.mode)
    }

    /// The tools the request offered.
    pub(crate) fn offered(&self) -> &[ToolSpec] {
        &self.offered
    }

    /// The reply made a structured call: in `auto`, JSON in its text is text.
    pub(crate) fn structured_call(&mut self, out: &mut Vec<Piece>) {
        self.structured = true;
        self.run(false, out);
    }

    /// Take `text` apart as far as it can be told.
    pub(crate) fn push(&mut self, text: &str, out: &mut Vec<Piece>) {
        self.held.push_str(text);
        self.pushed += text.len();
        self.run(false, out);
    }

    /// The text ended: take apart what is held.
    pub(crate) fn finish(&mut self, out: &mut Vec<Piece>) {
        self.run(true, out);
    }

    fn json(&self) -> Json {
        match self.mode {
            _ if self.offered.is_empty() => Json::Never,
            // `read` does not read a text this long: JSON in it is text.
            _ if self.pushed > MAX_SCAN_BYTES => Json::Never,
            TextToolCalls::Off => Json::Never,
            TextToolCalls::Auto if self.structured => Json::Never,
            TextToolCalls::Auto => Json::Whole,
            TextToolCalls::On => Json::Anywhere,
        }
    }

    fn run(&mut self, end: bool, out: &mut Vec<Piece>) {
        loop {
            if self.inside.is_some() {
                if self.run_inside(end, out) {
                    continue;
                }
                return;
            }
            match self.next(end) {
                Some(Next::Open {
                    at,
                    len,
                    close,
                    reasoning,
                }) => {
                    self.release(at, out);
                    if reasoning {
                        self.reasoning_seen = true;
                    } else {
                        self.consumed = true;
                    }
                    self.inside = Some(Inside {
                        close,
                        reasoning,
                        raw: self.held.drain(..len).collect(),
                        body: len,
                    });
                }
                Some(Next::LoneClose { at, len }) => {
                    let mut raw: String = self.held.drain(..at + len).collect();
                    // The closing tag is not part of what was reasoning.
                    let tag = raw.split_off(at);
                    if !raw.is_empty() {
                        out.push(Piece::Shown(raw));
                    }
                    out.push(Piece::Retract(tag));
                    // Nothing before the tag stays shown, so the text after it starts
                    // afresh; the tag stood where a call may start, so no fence, span
                    // or quote was open to forget.
                    self.lines = Lines::default();
                    self.consumed = false;
                    self.reasoning_seen = true;
                }
                Some(Next::Call { at, len }) => {
                    self.release(at, out);
                    self.consumed = true;
                    out.push(Piece::Call(self.held.drain(..len).collect()));
                }
                Some(Next::Hold(at)) => {
                    self.release(at, out);
                    return;
                }
                None => {
                    self.release(self.held.len(), out);
                    return;
                }
            }
        }
    }

    /// Inside a block: through its closing tag (true: go on), or as far as there is.
    fn run_inside(&mut self, end: bool, out: &mut Vec<Piece>) -> bool {
        let Some(inside) = self.inside.as_mut() else {
            return true;
        };
        let closed = match inside.close {
            Some(close) => match find(&self.held, close) {
                Some(at) => {
                    inside.raw.extend(self.held.drain(..at + close.len()));
                    true
                }
                None => {
                    // Keep only what may be the start of the closing tag.
                    let keep = if end {
                        0
                    } else {
                        partial_suffix(&self.held, close)
                    };
                    let cut = self.held.len() - keep;
                    inside.raw.extend(self.held.drain(..cut));
                    false
                }
            },
            None => {
                inside.raw.push_str(&self.held);
                self.held.clear();
                false
            }
        };
        if !closed && !end {
            return false;
        }
        if let Some(inside) = self.inside.take() {
            out.push(match inside.reasoning {
                true => {
                    let inner_end = match (closed, inside.close) {
                        (true, Some(close)) => inside.raw.len() - close.len(),
                        _ => inside.raw.len(),
                    };
                    Piece::Reasoning {
                        inside: inside.raw[inside.body..inner_end].to_string(),
                        raw: inside.raw,
                    }
                }
                false => Piece::Markup(inside.raw),
            });
        }
        closed
    }

    /// The first block, lone closing tag, call or undecided start in what is held.
    fn next(&self, end: bool) -> Option<Next> {
        let held = self.held.as_str();
        let mut lines = self.lines;
        let mut consumed = self.consumed;
        let json = self.json();
        for (at, c) in held.char_indices() {
            let rest = &held[at..];
            // Reasoning opens at the reply's start or where a call may start, never in
            // code or a quote (`<think>` in a sentence is a word); a lone closing tag
            // only where a call may start, and only once.
            let reasoning_may_open = !consumed || lines.call_may_start();
            if c == '<' && reasoning_may_open {
                for (open, close) in REASONING {
                    match prefix(rest, open) {
                        Prefix::Whole => {
                            return Some(Next::Open {
                                at,
                                len: open.len(),
                                close: Some(close),
                                reasoning: true,
                            });
                        }
                        Prefix::Part if !end => return Some(Next::Hold(at)),
                        _ => {}
                    }
                }
                if !self.reasoning_seen && lines.call_may_start() {
                    for (_, close) in REASONING {
                        match prefix(rest, close) {
                            Prefix::Whole => {
                                return Some(Next::LoneClose {
                                    at,
                                    len: close.len(),
                                });
                            }
                            Prefix::Part if !end => return Some(Next::Hold(at)),
                            _ => {}
                        }
                    }
                }
            }
            if lines.call_may_start() {
                for (open, close, follows) in MARKUP {
                    match prefix(rest, open) {
                        Prefix::Whole => match follows(&rest[open.len()..]) {
                            Some(true) => {
                                return Some(Next::Open {
                                    at,
                                    len: open.len(),
                                    close: *close,
                                    reasoning: false,
                                });
                            }
                            None if !end => return Some(Next::Hold(at)),
                            _ => {}
                        },
                        Prefix::Part if !end => return Some(Next::Hold(at)),
                        _ => {}
                    }
                }
                let may_be_json = match json {
                    Json::Never => false,
                    Json::Whole => !consumed,
                    Json::Anywhere => true,
                };
                if may_be_json && matches!(c, '`' | '{' | '[') {
                    match block_at(rest, &self.offered) {
                        JsonBlock::Call(len) if json == Json::Anywhere => {
                            return Some(Next::Call { at, len });
                        }
                        // The whole reply only: nothing but white space may follow.
                        JsonBlock::Call(len) if rest[len..].trim().is_empty() => {
                            return Some(match end {
                                true => Next::Call { at, len },
                                false => Next::Hold(at),
                            });
                        }
                        JsonBlock::Unsure if !end => return Some(Next::Hold(at)),
                        _ => {}
                    }
                }
            }
            lines.step(c);
            consumed |= !c.is_whitespace();
        }
        None
    }

    /// `held[..upto]` is shown.
    fn release(&mut self, upto: usize, out: &mut Vec<Piece>) {
        if upto == 0 {
            return;
        }
        let text: String = self.held.drain(..upto).collect();
        for c in text.chars() {
            self.lines.step(c);
        }
        self.consumed |= text.chars().any(|c| !c.is_whitespace());
        match out.last_mut() {
            Some(Piece::Shown(shown)) => shown.push_str(&text),
            _ => out.push(Piece::Shown(text)),
        }
    }
}

/// The pieces of a finished text.
pub(crate) fn pieces(
    text: &str,
    offered: &[ToolSpec],
    mode: TextToolCalls,
    structured: bool,
) -> Vec<Piece> {
    let mut scanner = Scanner::new(offered, mode);
    scanner.structured = structured;
    let mut out = Vec::new();
    scanner.push(text, &mut out);
    scanner.finish(&mut out);
    out
}

/// How far `text` starts with `marker`, ASCII case ignored.
enum Prefix {
    Whole,
    /// `text` is a proper start of the marker: more may make it whole.
    Part,
    No,
}

fn prefix(text: &str, marker: &str) -> Prefix {
    let (t, m) = (text.as_bytes(), marker.as_bytes());
    if t.len() >= m.len() {
        match t[..m.len()].eq_ignore_ascii_case(m) {
            true => Prefix::Whole,
            false => Prefix::No,
        }
    } else {
        match m[..t.len()].eq_ignore_ascii_case(t) {
            true => Prefix::Part,
            false => Prefix::No,
        }
    }
}

/// `needle` in `haystack`, ASCII case ignored; a byte offset.
pub(super) fn find(haystack: &str, needle: &str) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    let first = n[0].to_ascii_lowercase();
    (0..=h.len() - n.len())
        .find(|&i| h[i].to_ascii_lowercase() == first && h[i..i + n.len()].eq_ignore_ascii_case(n))
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
