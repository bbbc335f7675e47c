//! Scrubbing a text that arrives in pieces (a streamed reply): a secret split across
//! two pieces must not slip through because each piece alone looks clean. The stream
//! keeps back its end — from where it could be the beginning of a secret or of one of
//! its forms (never longer than the longest of them, line breaks aside), and the
//! token-shaped word in progress — until more text or the stream's end shows what it
//! was, and releases only scrubbed text; all released pieces together equal
//! `Scrubber::scrub` of the whole text. It never sends anything itself.

use std::sync::Arc;

use super::{Scrubber, is_token_char};

pub struct StreamScrubber {
    scrubber: Arc<Scrubber>,
    /// Text received but not yet released, raw.
    pending: String,
    /// Positions in `pending` where it may be cut (see `is_cut`), ascending.
    cuts: Vec<usize>,
}

/// May a text be scrubbed in two parts, cut between `before` and `after`? Only where no
/// token-shape match can span the cut or change with what lies across it: every match
/// is a run of token characters, so none ends at the cut when `before` is not one; and
/// none starts at it when `after` is not one either, or when `before` is ASCII (then a
/// non-word character, so a `\b` at the cut reads the same with or without `before`).
/// Literals are checked separately: they may contain anything.
fn is_cut(before: char, after: char) -> bool {
    !is_token_char(before) && (!is_token_char(after) || before.is_ascii())
}

impl StreamScrubber {
    pub fn new(scrubber: Arc<Scrubber>) -> Self {
        Self {
            scrubber,
            pending: String::new(),
            cuts: Vec::new(),
        }
    }

    /// Take the next piece of the stream; returns the scrubbed text that is now safe to
    /// show (often empty while a possible secret is still incomplete).
    pub fn push(&mut self, piece: &str) -> String {
        let old = self.pending.len();
        self.pending.push_str(piece);
        // Cut positions need the characters on both sides: look again from the last
        // character held before this piece.
        let from = self.pending[..old]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i);
        let mut before = None;
        for (i, c) in self.pending[from..].char_indices() {
            if let Some(b) = before
                && from + i >= old
                && is_cut(b, c)
            {
                self.cuts.push(from + i);
            }
            before = Some(c);
        }
        let Some((index, at)) = self.cut() else {
            return String::new();
        };
        let released = self.scrubber.scrub(&self.pending[..at]).into_owned();
        self.pending.drain(..at);
        self.cuts = self.cuts[index + 1..].iter().map(|c| c - at).collect();
        released
    }

    /// The stream ended: the rest of it, scrubbed.
    pub fn finish(&mut self) -> String {
        self.cuts.clear();
        let rest = std::mem::take(&mut self.pending);
        self.scrubber.scrub_owned(rest)
    }

    /// The stream was abandoned: forget what was held back.
    pub fn discard(&mut self) {
        self.cuts.clear();
        self.pending.clear();
    }

    /// The latest cut (its index in `cuts` and position) before any unfinished secret
    /// at the end of the text, and that no match seen so far spans. A secret starting
    /// before such a cut is either whole in the text already, or not there at all.
    fn cut(&self) -> Option<(usize, usize)> {
        let first = *self.cuts.first()?;
        let unfinished = self.scrubber.unfinished(&self.pending);
        if first > unfinished {
            return None;
        }
        let spans = self.scrubber.spans(&self.pending);
        self.cuts
            .iter()
            .enumerate()
            .rev()
            .filter(|&(_, &at)| at <= unfinished)
            .find(|&(_, &at)| !spans.iter().any(|s| s.start < at && at < s.end))
            .map(|(index, &at)| (index, at))
    }
}
