//! Where in a reply's text a call's markup may start: at a line's start (after at most
//! three spaces), outside fenced code (```` ``` ```` or `~~~`), outside indented code, a
//! blockquote's `>` line and an inline code span left open from an earlier line. A call
//! a model makes stands on its own line; one quoted in prose, in code or in a quote is
//! an example, and is shown as it is.
//!
//! `Lines` follows the text a character at a time and knows nothing of what comes
//! later, so a stream and the finished text are judged alike (`scan` uses it for both).
//! It is Markdown as far as telling code and quotes apart needs, no further.

/// The state of the text at the current position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Lines {
    /// The fenced code block the text is in: its fence character and length.
    fence: Option<(char, usize)>,
    /// An inline code span opened on an earlier line of the paragraph is still open.
    inline: bool,
    /// The current line so far.
    line: Line,
}

/// How the current line begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lead {
    /// Nothing but this many spaces yet.
    Spaces(usize),
    /// A run of this fence character (after at most three spaces), still going.
    Run(char, usize),
    /// Such a run, ended.
    AfterRun(char, usize),
    /// Anything else: prose, a quote's `>`, a tab, four spaces.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    lead: Lead,
    /// Only white space followed the fence run (a closing fence's line).
    fence_only: bool,
    /// Backticks after the lead, for an inline code span's parity.
    ticks: usize,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            lead: Lead::Spaces(0),
            fence_only: true,
            ticks: 0,
        }
    }
}

impl Lines {
    /// Whether a call's markup may start here.
    pub(super) fn call_may_start(&self) -> bool {
        self.fence.is_none() && !self.inline && matches!(self.line.lead, Lead::Spaces(n) if n <= 3)
    }

    /// The text goes on by `c`.
    pub(super) fn step(&mut self, c: char) {
        if c == '\n' {
            self.end_line();
            return;
        }
        let line = &mut self.line;
        line.lead = match line.lead {
            Lead::Spaces(n) if c == ' ' => Lead::Spaces(n + 1),
            Lead::Spaces(n) if n <= 3 && matches!(c, '`' | '~') => Lead::Run(c, 1),
            Lead::Spaces(_) => {
                line.ticks += usize::from(c == '`');
                Lead::Other
            }
            Lead::Run(f, k) if c == f => Lead::Run(f, k + 1),
            Lead::Run(f, k) | Lead::AfterRun(f, k) => {
                line.fence_only &= c.is_whitespace();
                line.ticks += usize::from(c == '`');
                Lead::AfterRun(f, k)
            }
            Lead::Other => {
                line.ticks += usize::from(c == '`');
                Lead::Other
            }
        };
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        let run = match line.lead {
            Lead::Run(f, k) | Lead::AfterRun(f, k) => Some((f, k)),
            _ => None,
        };
        if let Some((f, k)) = self.fence {
            if run.is_some_and(|(g, n)| g == f && n >= k) && line.fence_only {
                self.fence = None;
            }
            return;
        }
        // A backtick fence's info string has no backticks of its own.
        if let Some((f, k)) = run
            && k >= 3
            && !self.inline
            && (f == '~' || line.ticks == 0)
        {
            self.fence = Some((f, k));
            return;
        }
        if matches!(line.lead, Lead::Spaces(_)) {
            // A blank line ends the paragraph, and any code span in it.
            self.inline = false;
            return;
        }
        let run_ticks = match run {
            Some(('`', k)) => k,
            _ => 0,
        };
        if (line.ticks + run_ticks) % 2 == 1 {
            self.inline = !self.inline;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a call may start at the end of `text`.
    fn after(text: &str) -> bool {
        let mut lines = Lines::default();
        text.chars().for_each(|c| lines.step(c));
        lines.call_may_start()
    }

    #[test]
    fn only_at_a_line_start_outside_code_and_quotes() {
        for yes in [
            "",
            "Sure.\n",
            "   ",
            "```json\nx\n```\n",
            "~~~\ncode\n~~~\n",
            "A `span` here.\n",
            "Open ` here\n\n",
            "```\n``` \n",
        ] {
            assert!(after(yes), "{yes:?}");
        }
        for no in [
            "Sure. ",
            "    ",
            "\t",
            "> ",
            "```\n",
            "```python\nx = 1\n",
            "~~~~\n```\n",
            "An open ` span\n",
        ] {
            assert!(!after(no), "{no:?}");
        }
    }
}
