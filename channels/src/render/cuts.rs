//! Where a markdown text may be cut: its fenced code blocks and its ranked cut points.
//!
//! Pure scanning over byte offsets of the source. It decides nothing about sizes or which
//! cut to take (that is `split`), and it never parses markdown beyond lines and fences.

use std::ops::Range;

/// How good a place to cut is; a higher level is preferred. Below `Word` come hard cuts,
/// at any allowed character boundary (`Scan::hard_cut_allowed`), which are not listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Level {
    /// A run of spaces or tabs.
    Word,
    /// After `.`, `!` or `?` followed by a space, or after `。！？`.
    Sentence,
    /// A single newline, also between the lines of a code block.
    Line,
    /// A blank line, or the edge of a fenced code block.
    Paragraph,
}

/// A place where one chunk may end and the next begin.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cut {
    /// Where the chunk before the cut ends (exclusive byte offset).
    pub end: usize,
    /// Where the chunk after the cut starts; the bytes between are whitespace the split drops.
    pub next: usize,
    pub level: Level,
}

/// A fenced code block (```` ``` ```` or `~~~`, with an optional info string).
#[derive(Debug)]
pub(super) struct Fence {
    /// The opening fence line, without its newline; reopened verbatim (minus indentation)
    /// at the start of a chunk that begins inside the block.
    pub open: Range<usize>,
    /// The closing fence line; `None` when the block runs to the end of the text.
    pub close: Option<Range<usize>>,
    /// The opener's run of fence characters (e.g. "````"), which also closes the block at
    /// the end of a chunk cut inside it.
    pub marker: Range<usize>,
}

impl Fence {
    /// Whether a chunk starting at `pos` starts inside this block's body.
    pub(super) fn holds_start(&self, pos: usize) -> bool {
        pos > self.open.end && self.close.as_ref().is_none_or(|c| pos < c.start)
    }

    /// Whether `line` would close this block (a piece of a code line cut short can).
    pub(super) fn closed_by(&self, text: &str, line: &str) -> bool {
        let marker = &text[self.marker.clone()];
        marker
            .chars()
            .next()
            .is_some_and(|c| closes(line, c, marker.chars().count()))
    }

    /// Whether a chunk ending at `pos` leaves this block open.
    pub(super) fn holds_end(&self, pos: usize) -> bool {
        pos > self.open.start && self.close.as_ref().is_none_or(|c| pos < c.start)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Prose,
    Blank,
    Open,
    Body,
    Close,
}

#[derive(Debug)]
struct Line {
    /// The line without its newline; `range.end` is the newline's offset when there is one.
    range: Range<usize>,
    kind: Kind,
}

/// The scanned structure of one markdown text.
#[derive(Debug)]
pub(super) struct Scan {
    lines: Vec<Line>,
    pub fences: Vec<Fence>,
    /// Every cut point except hard cuts, sorted by `end`.
    pub cuts: Vec<Cut>,
}

impl Scan {
    pub(super) fn new(text: &str) -> Scan {
        let (lines, fences) = classify(text);
        let mut cuts = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            match line.kind {
                Kind::Prose => inline_cuts(text, &line.range, true, &mut cuts),
                Kind::Body => inline_cuts(text, &line.range, false, &mut cuts),
                Kind::Blank | Kind::Open | Kind::Close => {}
            }
            let Some(after) = lines.get(i + 1) else { break };
            if let Some(level) = newline_level(line.kind, after.kind) {
                let nl = line.range.end;
                cuts.push(Cut {
                    end: nl,
                    next: nl + 1,
                    level,
                });
            }
        }
        cuts.sort_by_key(|c| c.end);
        Scan {
            lines,
            fences,
            cuts,
        }
    }

    /// The code block a chunk starting at `pos` would start inside, if any.
    pub(super) fn fence_at_start(&self, pos: usize) -> Option<&Fence> {
        self.last_fence_before(pos).filter(|f| f.holds_start(pos))
    }

    /// The code block a chunk ending at `pos` would leave open, if any.
    pub(super) fn fence_at_end(&self, pos: usize) -> Option<&Fence> {
        self.last_fence_before(pos).filter(|f| f.holds_end(pos))
    }

    /// The last code block opening before `pos` (blocks never overlap).
    fn last_fence_before(&self, pos: usize) -> Option<&Fence> {
        let idx = self.fences.partition_point(|f| f.open.start < pos);
        self.fences.get(idx.checked_sub(1)?)
    }

    /// Whether a chunk may be hard-cut at byte `pos`: a character boundary inside a prose
    /// or code line (never in a fence line), and not inside an emoji sequence or before a
    /// combining mark.
    pub(super) fn hard_cut_allowed(&self, text: &str, pos: usize) -> bool {
        if !text.is_char_boundary(pos) {
            return false;
        }
        let idx = self.lines.partition_point(|l| l.range.start < pos);
        let Some(line) = idx.checked_sub(1).and_then(|i| self.lines.get(i)) else {
            return false;
        };
        if pos > line.range.end || !matches!(line.kind, Kind::Prose | Kind::Body) {
            return false;
        }
        let next_extends = text[pos..].chars().next().is_some_and(extends_previous);
        let after_joiner = text[..pos].ends_with('\u{200D}');
        !next_extends && !after_joiner
    }
}

/// Characters that belong to the character before them (so a cut before them would split
/// what a reader sees as one symbol).
fn extends_previous(c: char) -> bool {
    matches!(c,
        '\u{0300}'..='\u{036F}'   // combining diacritics
        | '\u{200D}'              // zero-width joiner
        | '\u{20E3}'              // keycap
        | '\u{FE00}'..='\u{FE0F}' // variation selectors
        | '\u{1F3FB}'..='\u{1F3FF}' // skin tones
        | '\u{E0020}'..='\u{E007F}' // emoji tag sequences
    )
}

/// Splits the text into lines and finds the fenced code blocks.
fn classify(text: &str) -> (Vec<Line>, Vec<Fence>) {
    let mut ranges = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            ranges.push(start..i);
            start = i + 1;
        }
    }
    if start < text.len() {
        ranges.push(start..text.len());
    }

    let mut lines = Vec::with_capacity(ranges.len());
    let mut fences: Vec<Fence> = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for range in ranges {
        let line = &text[range.clone()];
        let kind = match open {
            Some((c, n)) if closes(line, c, n) => {
                if let Some(fence) = fences.last_mut() {
                    fence.close = Some(range.clone());
                }
                open = None;
                Kind::Close
            }
            Some(_) => Kind::Body,
            None => match opener(line) {
                Some((c, n)) => {
                    open = Some((c, n));
                    let indent = line.len() - line.trim_start().len();
                    let from = range.start + indent;
                    let marker = from..from + c.len_utf8() * n;
                    fences.push(Fence {
                        open: range.clone(),
                        close: None,
                        marker,
                    });
                    Kind::Open
                }
                None if line.trim().is_empty() => Kind::Blank,
                None => Kind::Prose,
            },
        };
        lines.push(Line { range, kind });
    }
    (lines, fences)
}

/// Whether `line` would open a fenced code block.
pub(super) fn opens_fence(line: &str) -> bool {
    opener(line).is_some()
}

/// The fence character and length if `line` opens a fenced code block.
fn opener(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start();
    let c = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let n = t.chars().take_while(|&x| x == c).count();
    // A backtick fence's info string may not contain backticks (that is inline code).
    let info_ok = c == '~' || !t[n..].contains('`');
    (n >= 3 && info_ok).then_some((c, n))
}

/// Whether `line` closes a block opened with `n` times `c`.
fn closes(line: &str, c: char, n: usize) -> bool {
    let t = line.trim();
    t.chars().count() >= n && t.chars().all(|x| x == c)
}

/// The level of the newline between a line of `before` kind and one of `after` kind.
fn newline_level(before: Kind, after: Kind) -> Option<Level> {
    match (before, after) {
        // Cutting here would leave an empty code block in one of the chunks.
        (Kind::Open, _) | (_, Kind::Close) => None,
        (Kind::Close | Kind::Blank, _) | (_, Kind::Open | Kind::Blank) => Some(Level::Paragraph),
        _ => Some(Level::Line),
    }
}

/// Word and sentence cuts inside one line, skipping its indentation and trailing spaces.
fn inline_cuts(text: &str, range: &Range<usize>, sentences: bool, cuts: &mut Vec<Cut>) {
    let line = &text[range.clone()];
    let content_start = line.len() - line.trim_start().len();
    let content_end = line.trim_end().len();
    let mut prev: Option<char> = None;
    let mut run_start: Option<usize> = None;
    for (i, c) in line.char_indices() {
        if i < content_start || i >= content_end {
            continue;
        }
        if c == ' ' || c == '\t' {
            run_start = run_start.or(Some(i));
        } else if let Some(rs) = run_start.take() {
            let (end, next) = (range.start + rs, range.start + i);
            cuts.push(Cut {
                end,
                next,
                level: Level::Word,
            });
            if sentences && matches!(prev, Some('.' | '!' | '?')) {
                cuts.push(Cut {
                    end,
                    next,
                    level: Level::Sentence,
                });
            }
        }
        if sentences && matches!(c, '。' | '！' | '？') && i + c.len_utf8() < content_end {
            let at = range.start + i + c.len_utf8();
            cuts.push(Cut {
                end: at,
                next: at,
                level: Level::Sentence,
            });
        }
        if c != ' ' && c != '\t' {
            prev = Some(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels_at(text: &str, level: Level) -> Vec<&str> {
        let scan = Scan::new(text);
        let cuts = scan.cuts.iter().filter(|c| c.level == level);
        cuts.map(|c| &text[..c.end]).collect()
    }

    #[test]
    fn fences_are_found_with_their_markers() {
        let text = "a\n~~~~py\nx\n~~~\n~~~~\nb\n```\nopen";
        let scan = Scan::new(text);
        assert_eq!(scan.fences.len(), 2);
        assert_eq!(&text[scan.fences[0].open.clone()], "~~~~py");
        assert_eq!(&text[scan.fences[0].marker.clone()], "~~~~");
        assert!(scan.fences[0].close.is_some());
        assert!(scan.fences[1].close.is_none());
    }

    #[test]
    fn no_cut_right_inside_fences_and_paragraph_at_their_edges() {
        let text = "intro\n```\nl1\nl2\n```\nafter";
        assert_eq!(
            levels_at(text, Level::Paragraph),
            ["intro", "intro\n```\nl1\nl2\n```"]
        );
        assert_eq!(levels_at(text, Level::Line), ["intro\n```\nl1"]);
    }

    #[test]
    fn sentences_and_words() {
        let text = "One. Two! x.y three";
        assert_eq!(levels_at(text, Level::Sentence), ["One.", "One. Two!"]);
        assert_eq!(levels_at(text, Level::Word).len(), 3);
        assert_eq!(levels_at("你好。世界", Level::Sentence), ["你好。"]);
    }

    #[test]
    fn hard_cuts_avoid_fence_lines_and_emoji_sequences() {
        let text = "```rust\nab\n```\n👍🏽x";
        let scan = Scan::new(text);
        assert!(
            !scan.hard_cut_allowed(text, 3),
            "inside the opening fence line"
        );
        assert!(scan.hard_cut_allowed(text, 9), "inside a code line");
        let thumb = text.find('👍').unwrap_or_default();
        assert!(
            !scan.hard_cut_allowed(text, thumb + 4),
            "before the skin tone"
        );
        assert!(
            scan.hard_cut_allowed(text, thumb + 8),
            "after the whole emoji"
        );
    }
}
