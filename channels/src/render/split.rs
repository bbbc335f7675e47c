//! Splitting a markdown reply into chunks that each fit a platform's message limit.
//!
//! Owns the packing policy only: where a chunk may end comes from `cuts`, how long a chunk
//! is comes from the caller's `measure`. It does not render markup (a rendered chunk that
//! grows past the limit is split again by the caller, see `telegram::telegram_chunks`).
//!
//! Policy: each chunk takes as much text as fits, and ends at the best kind of boundary
//! that lies within that much (paragraph, then line, then sentence, then word, then any
//! character), at the last boundary of that kind that fits. Code fences are never split
//! mid-line when a line boundary fits; a chunk cut inside a code block gets a closing fence
//! line, and the next chunk reopens it with the same info string, so every chunk's fences
//! balance. Chunks lose their leading blank lines and trailing whitespace, and the
//! whitespace at a sentence or word cut; nothing else changes. A piece of a line is never
//! left looking like a fence line (a chunk starting "```rust" mid-line would open a block).

use std::ops::Range;

use super::cuts::{Level, Scan, opens_fence};

/// Length in UTF-16 code units, the unit Telegram counts message length in.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// Length in Unicode scalar values (`char`s).
pub fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Splits `markdown` into chunks with `measure(chunk) <= limit` each, in order; see the
/// module doc for where it cuts. `measure` must be monotone (a longer text never measures
/// less), as [`utf16_len`] and [`char_len`] are.
///
/// Only when `limit` cannot hold even one character plus the fence lines a chunk needs
/// does a chunk exceed it (the split then still makes progress one piece at a time).
pub fn split(markdown: &str, limit: usize, measure: &dyn Fn(&str) -> usize) -> Vec<String> {
    let splitter = Splitter {
        text: markdown,
        scan: Scan::new(markdown),
        limit,
        measure,
    };
    let pieces = splitter.pieces();
    pieces.iter().map(|p| p.render(markdown)).collect()
}

/// One chunk as positions in the source, before it is turned into text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece<'a> {
    /// The fence line to reopen a code block the chunk starts inside.
    reopen: Option<&'a str>,
    /// The source text of the chunk, trimmed.
    body: Range<usize>,
    /// The fence marker closing a code block the chunk ends inside.
    close: Option<&'a str>,
}

impl Piece<'_> {
    fn render(&self, text: &str) -> String {
        let mut out = String::new();
        if let Some(open) = self.reopen {
            out.push_str(open);
            out.push('\n');
        }
        out.push_str(&text[self.body.clone()]);
        if let Some(marker) = self.close {
            out.push('\n');
            out.push_str(marker);
        }
        out
    }
}

struct Splitter<'a> {
    text: &'a str,
    scan: Scan,
    limit: usize,
    measure: &'a dyn Fn(&str) -> usize,
}

impl<'a> Splitter<'a> {
    fn pieces(&self) -> Vec<Piece<'a>> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < self.text.len() {
            start = self.skip_code_tail(start);
            if self.text[start..].trim().is_empty() {
                break;
            }
            let window = self.window_end(start);
            let whole = (window == self.text.len())
                .then(|| self.piece(start, window))
                .flatten()
                .filter(|p| self.fits(p));
            let (piece, next) = match whole {
                Some(p) => (Some(p), window),
                None => self.best_cut(start, window),
            };
            out.extend(piece);
            start = next;
        }
        out
    }

    /// A chunk starting inside a code block with only blank code lines left before its
    /// closing fence would be an empty block: start after the closing fence instead.
    fn skip_code_tail(&self, start: usize) -> usize {
        let Some(fence) = self.scan.fence_at_start(start) else {
            return start;
        };
        match &fence.close {
            Some(close) if self.text[start..close.start].trim().is_empty() => close.end,
            _ => start,
        }
    }

    /// The chunk `start..end` trimmed, with the fence lines it needs; `None` when empty
    /// or when it ends with an empty code block.
    fn piece(&self, start: usize, end: usize) -> Option<Piece<'a>> {
        self.piece_in(start, end, false)
    }

    /// `piece`, admitting a chunk that ends with an empty code block when `hollow_ok`.
    fn piece_in(&self, start: usize, end: usize, hollow_ok: bool) -> Option<Piece<'a>> {
        let text: &'a str = self.text;
        let raw = &text[start..end];
        let first_content = raw.len() - raw.trim_start().len();
        let lead = raw[..first_content].rfind('\n').map_or(0, |i| i + 1);
        let body = start + lead..start + raw.trim_end().len();
        if body.is_empty() {
            return None;
        }
        let content = &text[body.clone()];
        let first_line = content.lines().next().unwrap_or_default();
        let last_line = content.lines().next_back().unwrap_or_default();
        let reopen = self.scan.fence_at_start(start);
        let close = self.scan.fence_at_end(body.end);
        let mid_line = body.start > 0 && !text[..body.start].ends_with('\n');
        // A line cut short may look like a fence: "a ```rust" cut to "```rust" would open
        // one, a code line "```rust" cut to "```" would close one.
        if (mid_line && reopen.is_none() && opens_fence(first_line))
            || reopen.is_some_and(|f| f.closed_by(text, first_line))
            || close.is_some_and(|f| body.end > f.open.end && f.closed_by(text, last_line))
        {
            return None;
        }
        if !hollow_ok
            && close.is_some_and(|f| {
                text.get(f.open.end..body.end)
                    .is_none_or(|c| c.trim().is_empty())
            })
        {
            return None;
        }
        Some(Piece {
            reopen: reopen.map(|f| text[f.open.clone()].trim()),
            body,
            close: close.map(|f| &text[f.marker.clone()]),
        })
    }

    fn fits(&self, piece: &Piece) -> bool {
        (self.measure)(&piece.render(self.text)) <= self.limit
    }

    /// The furthest character boundary `p` such that the untrimmed `start..p`, with a
    /// reopened fence if needed, fits: galloping, then binary search.
    fn window_end(&self, start: usize) -> usize {
        let text = self.text;
        let reopen = self
            .scan
            .fence_at_start(start)
            .map(|f| text[f.open.clone()].trim());
        let prefix = reopen.map(|r| format!("{r}\n")).unwrap_or_default();
        let fits = |p: usize| (self.measure)(&format!("{prefix}{}", &text[start..p])) <= self.limit;
        // Invariant: `lo` fits (or is `start`); `hi` does not fit (or is past the end).
        let (mut lo, mut hi) = (start, text.len() + 1);
        let mut step = self.limit.max(1);
        loop {
            let cand = text.floor_char_boundary(start.saturating_add(step).min(text.len()));
            if cand <= lo {
                break;
            }
            if !fits(cand) {
                hi = cand;
                break;
            }
            lo = cand;
            if cand == text.len() {
                return cand;
            }
            step = step.saturating_mul(2);
        }
        while hi - lo > 1 {
            let half = lo + (hi - lo) / 2;
            let mut mid = text.ceil_char_boundary(half);
            if mid >= hi {
                mid = text.floor_char_boundary(half);
            }
            if mid <= lo {
                break;
            }
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The best cut for a chunk starting at `start` that fits, looking no further than
    /// `window`. Returns the chunk's end and the next chunk's start.
    fn best_cut(&self, start: usize, window: usize) -> (Option<Piece<'a>>, usize) {
        let found = self.fitting_cut(start, window, false);
        let found = found.or_else(|| self.fitting_cut(start, window, true));
        match found {
            Some((piece, next)) => (Some(piece), next),
            None => self.smallest_step(start),
        }
    }

    /// The best fitting cut, by level then position; `hollow_ok` admits chunks that end
    /// with an empty code block (better than exceeding the limit).
    fn fitting_cut(
        &self,
        start: usize,
        window: usize,
        hollow_ok: bool,
    ) -> Option<(Piece<'a>, usize)> {
        let fitting = |end: usize| {
            let piece = self.piece_in(start, end, hollow_ok);
            piece.filter(|p| self.fits(p))
        };
        let cuts = &self.scan.cuts;
        let from = cuts.partition_point(|c| c.end <= start);
        let to = cuts.partition_point(|c| c.end <= window);
        let in_window = cuts.get(from..to).unwrap_or_default();
        for level in [Level::Paragraph, Level::Line, Level::Sentence, Level::Word] {
            let mut of_level = in_window.iter().rev().filter(|c| c.level == level);
            if let Some(found) = of_level.find_map(|c| Some((fitting(c.end)?, c.next))) {
                return Some(found);
            }
        }
        let mut pos = window;
        while pos > start {
            if self.scan.hard_cut_allowed(self.text, pos)
                && let Some(piece) = fitting(pos)
            {
                return Some((piece, pos));
            }
            pos = self.text.floor_char_boundary(pos - 1);
        }
        None
    }

    /// When nothing fits the limit: the nearest cut of any kind that yields content.
    fn smallest_step(&self, start: usize) -> (Option<Piece<'a>>, usize) {
        let text = self.text;
        let valid = |end: usize| self.piece_in(start, end, true).is_some();
        let soft = self
            .scan
            .cuts
            .iter()
            .find(|c| c.end > start && valid(c.end));
        let hard = text[start..]
            .char_indices()
            .map(|(i, c)| start + i + c.len_utf8())
            .find(|&p| self.scan.hard_cut_allowed(text, p) && valid(p));
        let (end, next) = match (soft, hard) {
            (Some(c), Some(h)) if h < c.end => (h, h),
            (Some(c), _) => (c.end, c.next),
            (None, Some(h)) => (h, h),
            (None, None) => (text.len(), text.len()),
        };
        (self.piece_in(start, end, true), next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces<'a>(
        text: &'a str,
        limit: usize,
        measure: &'a dyn Fn(&str) -> usize,
    ) -> Vec<Piece<'a>> {
        Splitter {
            text,
            scan: Scan::new(text),
            limit,
            measure,
        }
        .pieces()
    }

    /// Every chunk fits, balances its fences, and the chunks are the source in order with
    /// only whitespace between them.
    fn check(text: &str, limit: usize, measure: &dyn Fn(&str) -> usize) -> Vec<String> {
        let (mut prev_end, mut prev_closed) = (0, false);
        for piece in pieces(text, limit, measure) {
            // Only whitespace is dropped, and a closing fence the chunk before already added.
            let gap = &text[prev_end..piece.body.start];
            let fence = |l: &str| prev_closed && l.trim().chars().all(|c| c == '`' || c == '~');
            assert!(
                gap.lines().all(|l| l.trim().is_empty() || fence(l)),
                "lost {gap:?}"
            );
            (prev_end, prev_closed) = (piece.body.end, piece.close.is_some());
            let chunk = piece.render(text);
            assert!(
                measure(&chunk) <= limit,
                "{} > {limit}: {chunk:?}",
                measure(&chunk)
            );
            let fences = Scan::new(&chunk).fences;
            assert!(
                fences.iter().all(|f| f.close.is_some()),
                "unclosed fence in {chunk:?} of {text:?}"
            );
        }
        // A dangling fence with nothing after it may be dropped.
        let tail = text[prev_end..].lines().map(str::trim);
        let dangling = |l: &str| l.chars().all(|c| c == '`' || c == '~');
        assert!(
            tail.clone().all(dangling),
            "lost the tail of {text:?} at {limit}"
        );
        split(text, limit, measure)
    }

    #[test]
    fn long_reply_with_code_blocks_splits_in_order_with_balanced_fences() {
        let mut text = String::new();
        for i in 0..12 {
            text.push_str(&format!(
                "Paragraph {i} explains a step. It has two sentences.\n\n"
            ));
        }
        text.push_str("```python\nprint('short')\n```\n\nNow the long one:\n```rust\n");
        for i in 0..130 {
            text.push_str(&format!(
                "    let value_{i:03} = compute({i}); // step {i}\n"
            ));
        }
        text.push_str("```\n\n~~~\nplain tilde block\n~~~\n\n");
        while text.len() < 10_000 {
            text.push_str("A closing remark with ünïcödé and 🦀 crabs. ");
        }
        let chunks = check(&text, 4096, &utf16_len);
        assert!(chunks.len() >= 3, "{} chunks", chunks.len());
        for chunk in &chunks {
            let fences = chunk
                .lines()
                .filter(|l| l.starts_with("```") || l.starts_with("~~~"));
            assert!(fences.count() % 2 == 0, "unbalanced fences in {chunk:?}");
        }
        let reopened: Vec<_> = chunks
            .iter()
            .filter(|c| c.starts_with("```rust\n    let"))
            .collect();
        assert!(
            !reopened.is_empty(),
            "the long block is reopened with its language"
        );
        assert!(chunks[0].starts_with("Paragraph 0"));
        assert!(chunks.last().is_some_and(|c| c.ends_with("crabs.")));
    }

    #[test]
    fn paragraphs_beat_lines_beat_sentences_beat_words() {
        let by = |text, limit| check(text, limit, &char_len);
        assert_eq!(
            by("aaa bbb\nccc ddd\n\neee fff", 16),
            ["aaa bbb\nccc ddd", "eee fff"]
        );
        assert_eq!(by("One. Two.\nThree four", 12), ["One. Two.", "Three four"]);
        assert_eq!(
            by("One two. Three four five", 16),
            ["One two.", "Three four five"]
        );
        assert_eq!(
            by("alpha beta gamma delta", 12),
            ["alpha beta", "gamma delta"]
        );
    }

    #[test]
    fn packs_greedily() {
        let text = "a b c d e f g h i j";
        assert_eq!(check(text, 9, &char_len), ["a b c d e", "f g h i j"]);
        assert_eq!(
            check("p1\n\np2\n\np3\n\np4", 10, &char_len),
            ["p1\n\np2\n\np3", "p4"]
        );
    }

    #[test]
    fn emoji_and_cjk_are_measured_in_utf16_and_never_split() {
        let emoji = "😀".repeat(10);
        let chunks = check(&emoji, 5, &utf16_len);
        assert_eq!(chunks, vec!["😀😀"; 5]);
        assert_eq!(check("你好世界你好", 4, &utf16_len), ["你好世界", "你好"]);
        let family = "👨\u{200D}👩\u{200D}👧";
        assert_eq!(utf16_len(family), 8);
        assert_eq!(check(&family.repeat(3), 10, &utf16_len), vec![family; 3]);
        assert_eq!(
            check("你好。世界。再见", 6, &char_len),
            ["你好。世界。", "再见"]
        );
    }

    #[test]
    fn text_without_spaces_is_hard_cut() {
        let text = "x".repeat(10_000);
        let lens: Vec<usize> = check(&text, 4096, &utf16_len)
            .iter()
            .map(|c| c.len())
            .collect();
        assert_eq!(lens, [4096, 4096, 1808]);
    }

    #[test]
    fn oversized_code_block_is_closed_and_reopened() {
        let text = "~~~~ sh\nl1\nl2\nl3\nl4\n~~~~\nafter";
        let chunks = check(text, 18, &char_len);
        assert_eq!(
            chunks,
            ["~~~~ sh\nl1\nl2\n~~~~", "~~~~ sh\nl3\nl4\n~~~~", "after"]
        );
        let unclosed = check("```\nline one\nline two", 20, &char_len);
        assert_eq!(unclosed, ["```\nline one\n```", "```\nline two\n```"]);
    }

    #[test]
    fn trims_blank_lines_and_keeps_small_text_whole() {
        assert!(check("", 10, &char_len).is_empty());
        assert!(check(" \n\n ", 10, &char_len).is_empty());
        assert_eq!(check("\n\n  - item\n\n", 100, &char_len), ["  - item"]);
    }

    #[test]
    fn mixed_texts_keep_every_invariant() {
        let parts = [
            "word",
            " ",
            "\n",
            "\n\n",
            ". ",
            "🦀",
            "é",
            "```rust\n",
            "\n```\n",
            "<&>",
        ];
        let mut seed: u64 = 7;
        for round in 0..200 {
            let mut text = String::new();
            for _ in 0..(20 + round) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(parts[(seed >> 33) as usize % parts.len()]);
            }
            for limit in [16, 25, 60] {
                check(&text, limit, &utf16_len);
            }
        }
    }
}
