//! Where in a reply's text a call's markup may start: at a line's start (after at most
//! three spaces), outside fenced code (```` ``` ```` or `~~~`, also one opened on a list
//! item's line), outside indented code, a blockquote (its `>` line and the lines that
//! lazily continue it up to a blank line) and an inline code span left open from an
//! earlier line. A call a model makes stands on its own line; one quoted in prose, in
//! code or in a quote is an example, and is shown as it is.
//!
//! `Lines` follows the text a character at a time and knows nothing of what comes
//! later, so a stream and the finished text are judged alike (`scan` uses it for both).
//! It is Markdown as far as telling code and quotes apart needs, no further; where it
//! cannot tell, it takes the text for code (shown, never run).

/// The state of the text at the current position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Lines {
    /// The fenced code block the text is in.
    fence: Option<Fence>,
    /// The inline code span opened on an earlier line of the paragraph and still open:
    /// the length of its backtick run (only a run as long closes it).
    span: Option<usize>,
    /// A quote's `>` line came and no blank line since: a line without `>` still
    /// continues the quote (Markdown's lazy continuation).
    quote: bool,
    /// The current line so far.
    line: Line,
}

/// A fenced code block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fence {
    /// Its fence character and the length of its opening run.
    mark: char,
    len: usize,
    /// The column a list item's content starts at, when the fence opened on the item's
    /// line (0 otherwise): its closing fence may be indented that far and three more.
    base: usize,
}

/// How the current line begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lead {
    /// Nothing but this many spaces yet.
    Spaces(usize),
    /// A bullet list marker (`-`, `*`, `+`), ending at this column.
    Bullet(usize),
    /// An ordered list marker's digits so far (the column after them, how many).
    Digits(usize, usize),
    /// An ordered list marker's `.` or `)`, ending at this column.
    Delimiter(usize),
    /// A list marker and the spaces after it: the item's content starts at this column.
    Item(usize),
    /// A run of this fence character (after at most three spaces, or a list marker),
    /// still going.
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
    /// The fence run follows a list marker.
    item: bool,
    /// The column the fence run starts at.
    run_at: usize,
    /// The line starts with a quote's `>`.
    quoted: bool,
    /// The backtick run going on after the lead: its length so far.
    ticks: usize,
    /// The lead's backtick run, when it may open a fence (three or more, outside a
    /// span): it counts for code spans only if a backtick follows on the line.
    lead_ticks: Option<usize>,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            lead: Lead::Spaces(0),
            fence_only: true,
            item: false,
            run_at: 0,
            quoted: false,
            ticks: 0,
            lead_ticks: None,
        }
    }
}

impl Lines {
    /// Whether a call's markup may start here.
    pub(super) fn call_may_start(&self) -> bool {
        self.fence.is_none()
            && self.span.is_none()
            && !self.quote
            && matches!(self.line.lead, Lead::Spaces(n) if n <= 3)
    }

    /// The text goes on by `c`.
    pub(super) fn step(&mut self, c: char) {
        if c == '\n' {
            self.end_line();
            return;
        }
        // A fence run may start this far in: three spaces, or three past a list item's
        // content inside the item's fence.
        let run_indent = 3 + self.fence.map_or(0, |fence| fence.base);
        let line = &mut self.line;
        let mut prose = true;
        line.lead = match line.lead {
            Lead::Spaces(n) if c == ' ' => {
                prose = false;
                Lead::Spaces(n + 1)
            }
            Lead::Spaces(n) if n <= run_indent && matches!(c, '`' | '~') => {
                line.run_at = n;
                prose = false;
                Lead::Run(c, 1)
            }
            Lead::Spaces(n) if n <= 3 && c == '>' => {
                line.quoted = true;
                Lead::Other
            }
            Lead::Item(_) if c == '>' => {
                line.quoted = true;
                Lead::Other
            }
            Lead::Spaces(n) if n <= 3 && matches!(c, '-' | '*' | '+') => Lead::Bullet(n + 1),
            Lead::Spaces(n) if n <= 3 && c.is_ascii_digit() => Lead::Digits(n + 1, 1),
            Lead::Digits(col, k) if k < 9 && c.is_ascii_digit() => Lead::Digits(col + 1, k + 1),
            Lead::Digits(col, _) if matches!(c, '.' | ')') => Lead::Delimiter(col + 1),
            Lead::Bullet(col) | Lead::Delimiter(col) | Lead::Item(col) if c == ' ' => {
                Lead::Item(col + 1)
            }
            Lead::Item(col) if matches!(c, '`' | '~') => {
                line.item = true;
                line.run_at = col;
                prose = false;
                Lead::Run(c, 1)
            }
            Lead::Run(f, k) if c == f => {
                prose = false;
                Lead::Run(f, k + 1)
            }
            Lead::Run(f, k) => {
                line.fence_only &= c.is_whitespace();
                self.end_lead_run();
                self.line.lead = Lead::AfterRun(f, k);
                self.prose(c);
                return;
            }
            Lead::AfterRun(f, k) => {
                line.fence_only &= c.is_whitespace();
                Lead::AfterRun(f, k)
            }
            _ => Lead::Other,
        };
        if prose {
            self.prose(c);
        }
    }

    /// The lead's run of fence characters ended. A backtick run too short for a fence,
    /// or after an open span, is a code span's; a fence's waits: a backtick after it on
    /// the line makes it a span's.
    fn end_lead_run(&mut self) {
        let Lead::Run('`', k) = self.line.lead else {
            return;
        };
        if self.fence.is_some() {
            return;
        }
        match k >= 3 && self.span.is_none() {
            true => self.line.lead_ticks = Some(k),
            false => self.line.ticks = k,
        }
    }

    /// `c` goes on the line after its lead: outside fenced code, code spans open and
    /// close by backtick runs of equal length.
    fn prose(&mut self, c: char) {
        if self.fence.is_some() {
            return;
        }
        if c == '`' {
            if let Some(lead) = self.line.lead_ticks.take() {
                // The line is no fence: its lead's run was a span's.
                self.line.ticks = lead;
                self.end_run();
            }
            self.line.ticks += 1;
            return;
        }
        self.end_run();
    }

    /// A backtick run ended: it opens a span, closes the open one, or is inside it.
    fn end_run(&mut self) {
        let run = std::mem::take(&mut self.line.ticks);
        if run == 0 {
            return;
        }
        self.span = match self.span {
            None => Some(run),
            Some(open) if open == run => None,
            open => open,
        };
    }

    fn end_line(&mut self) {
        self.end_lead_run();
        if self.fence.is_none() {
            self.end_run();
        }
        let line = std::mem::take(&mut self.line);
        let run = match line.lead {
            Lead::Run(f, k) | Lead::AfterRun(f, k) => Some((f, k)),
            _ => None,
        };
        if let Some(fence) = self.fence {
            // Only a closing fence closes it, however little a line is indented: where
            // Markdown would end the list item, the text stays code here.
            if run.is_some_and(|(f, k)| f == fence.mark && k >= fence.len)
                && line.fence_only
                && !line.item
            {
                self.fence = None;
            }
            return;
        }
        // A backtick fence's info string has no backticks of its own (one made the
        // lead's run a span's, above).
        let opens = match run {
            Some(('`', _)) => line.lead_ticks.is_some(),
            Some((_, len)) => len >= 3 && self.span.is_none(),
            None => false,
        };
        if let Some((mark, len)) = run
            && opens
        {
            self.fence = Some(Fence {
                mark,
                len,
                base: if line.item { line.run_at } else { 0 },
            });
            // A fence ends the quote it interrupts.
            self.quote = false;
            return;
        }
        if matches!(line.lead, Lead::Spaces(_)) {
            // A blank line ends the paragraph, any code span in it, and a quote.
            self.span = None;
            self.quote = false;
            return;
        }
        self.quote |= line.quoted;
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
            "- ```\n  x\n  ```\n",
            "- ~~~\n  x\n  ~~~\n- done\n",
            "  10) ```\n        x\n        ```\n",
            "> a\n\n",
            "> a\n```\nx\n```\n",
            "``a ` b``\n",
            "- item\n",
            "-x\n",
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
            // A fence on a list item's line (N3).
            "- ```xml\n",
            "- ````xml\n  x\n  ```\n",
            "1. ~~~\n   x\n",
            "  10) ```\n        x\n",
            "- ```\nx\n",
            // A quote goes on lazily to a blank line (N4).
            "> The docs show:\n",
            "> a\nb\n",
            // A span closes only by a run as long as its opening (N4).
            "Write `a` ``like\n",
            "``a ` b\n",
            // Not a fence (a backtick in its info string) and no span closed.
            "```foo`bar\n",
        ] {
            assert!(!after(no), "{no:?}");
        }
    }
}
