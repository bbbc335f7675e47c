//! A set of literal strings (secret values and their forms) found in a text in one
//! Aho-Corasick pass however many there are, and the question a stream asks: does the
//! text so far end in the beginning of one? It knows nothing of secrets or streams.

use std::ops::Range;

use aho_corasick::automaton::Automaton;
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{AhoCorasick, Anchored, MatchKind};

pub(super) struct Literals {
    /// Finds every occurrence, overlapping ones included.
    matcher: AhoCorasick,
    /// The same literals as a trie walked from a chosen start (anchored): a text is
    /// the beginning of a literal while the walk is not dead.
    prefixes: NFA,
    /// No literal is longer: a longer text is no literal's beginning.
    longest: usize,
    /// Line breaks are skipped, in the text and between a literal's characters:
    /// `base64` wraps at 76 columns and `xxd -p` at 60.
    skip_breaks: bool,
}

fn is_break(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

impl Literals {
    /// `None` when there is nothing to look for.
    pub(super) fn new(mut literals: Vec<String>, skip_breaks: bool) -> Option<Self> {
        literals.sort();
        literals.dedup();
        let longest = literals.iter().map(String::len).max()?;
        // Standard matching is what makes overlapping search possible.
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&literals);
        match (matcher, NFA::new(&literals)) {
            (Ok(matcher), Ok(prefixes)) => Some(Self {
                matcher,
                prefixes,
                longest,
                skip_breaks,
            }),
            (Err(err), _) | (_, Err(err)) => {
                // Only a limit on the automaton's size can fail; the token shapes
                // still apply.
                tracing::error!(
                    "secret values will not be scrubbed ({err}); remove unused secrets from .security.yml and the environment"
                );
                None
            }
        }
    }

    /// Add where each literal occurs in `text` to `found`. A match across line breaks
    /// (when they are skipped) covers them.
    pub(super) fn find(&self, text: &[u8], found: &mut Vec<Range<usize>>) {
        if !self.skip_breaks || !text.iter().any(|&b| is_break(b)) {
            found.extend(self.matcher.find_overlapping_iter(text).map(|m| m.range()));
            return;
        }
        let mut kept = Vec::with_capacity(text.len());
        // For each break taken out: how many kept bytes came before it.
        let mut breaks = Vec::new();
        for &b in text {
            if is_break(b) {
                breaks.push(kept.len());
            } else {
                kept.push(b);
            }
        }
        let original = |i: usize| i + breaks.partition_point(|&before| before <= i);
        for m in self.matcher.find_overlapping_iter(&kept) {
            found.push(original(m.start())..original(m.end() - 1) + 1);
        }
    }

    /// The earliest position from which the rest of `text` is the beginning of a
    /// literal: what follows may complete it, so a stream must not release text from
    /// there on. `None` when `text` ends in no literal's beginning.
    pub(super) fn unfinished(&self, text: &[u8]) -> Option<usize> {
        let Ok(start) = self.prefixes.start_state(Anchored::Yes) else {
            // Cannot tell: the whole text may be a secret's start.
            return Some(0);
        };
        let mut earliest = None;
        let mut length = 0;
        for from in (0..text.len()).rev() {
            if self.skip_breaks && is_break(text[from]) {
                continue;
            }
            length += 1;
            if length > self.longest {
                break;
            }
            let mut state = start;
            let alive = text[from..]
                .iter()
                .filter(|&&b| !(self.skip_breaks && is_break(b)))
                .all(|&b| {
                    state = self.prefixes.next_state(Anchored::Yes, state, b);
                    !self.prefixes.is_dead(state)
                });
            if alive {
                earliest = Some(from);
            }
        }
        earliest
    }
}
