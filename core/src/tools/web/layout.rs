//! The text web_fetch writes from a page: whitespace collapsed outside `<pre>`, line
//! breaks owed by block elements paid once (at most one blank line), list bullets and
//! link markers placed. It knows nothing of HTML tags; `html` decides what to call.

/// Characters dropped from page text.
const INVISIBLE: [char; 4] = ['\u{200b}', '\u{200c}', '\u{feff}', '\u{ad}'];

/// The text being written, with whitespace collapsed and blank lines capped at one.
#[derive(Default)]
pub(super) struct Out {
    text: String,
    /// Line breaks owed before the next text (at most 2: one blank line).
    breaks: usize,
    /// A space owed before the next text on the same line.
    space: bool,
    /// A list bullet owed before the next text (an empty item shows none).
    bullet: bool,
    /// A cell separator owed before the next text on the same row.
    cell: bool,
}

impl Out {
    /// Bytes written so far (to tell whether an element added any text).
    pub(super) fn written(&self) -> usize {
        self.text.len()
    }

    pub(super) fn line_break(&mut self, count: usize) {
        self.breaks = self.breaks.max(count);
        self.space = false;
    }

    pub(super) fn bullet(&mut self) {
        self.line_break(1);
        self.bullet = true;
    }

    /// A list item ends; one that wrote nothing leaves no bullet behind.
    pub(super) fn end_item(&mut self) {
        self.bullet = false;
        self.line_break(1);
    }

    /// Put a link marker right after the text so far, before any owed line break.
    pub(super) fn attach(&mut self, marker: &str) {
        while self.text.ends_with(' ') {
            self.text.pop();
        }
        self.text.push(' ');
        self.text.push_str(marker);
    }

    /// A table cell starts. Once its row has text, the next text follows a ` | ` on
    /// the same line, whatever blocks inside the last cell owed.
    pub(super) fn cell(&mut self, row_is_empty: bool) {
        if !row_is_empty {
            self.breaks = 0;
            self.cell = true;
        }
    }

    /// Write markup of our own (markers, bullets) without collapsing it.
    pub(super) fn push_raw(&mut self, s: &str) {
        self.settle();
        self.text.push_str(s);
    }

    pub(super) fn push_text(&mut self, s: &str, keep_whitespace: bool) {
        // Zero-width spaces, BOMs and soft hyphens only break words apart on screen.
        let cleaned: String;
        let s = if s.contains(INVISIBLE) {
            cleaned = s.replace(INVISIBLE, "");
            cleaned.as_str()
        } else {
            s
        };
        if keep_whitespace {
            self.settle();
            self.text.push_str(s);
            return;
        }
        let starts_with_space = s.starts_with(char::is_whitespace);
        let ends_with_space = s.ends_with(char::is_whitespace);
        let mut words = s.split_whitespace().peekable();
        if words.peek().is_none() {
            self.space |= starts_with_space;
            return;
        }
        if starts_with_space {
            self.space = true;
        }
        for (i, word) in words.enumerate() {
            if i > 0 {
                self.space = true;
            }
            self.settle();
            self.text.push_str(word);
        }
        self.space = ends_with_space;
    }

    /// Pay owed line breaks or a space before more text.
    pub(super) fn settle(&mut self) {
        if self.text.is_empty() {
            self.breaks = 0;
            self.space = false;
            self.cell = false;
        }
        if self.breaks > 0 {
            while self.text.ends_with(' ') {
                self.text.pop();
            }
            let have = self.text.len() - self.text.trim_end_matches('\n').len();
            for _ in have..self.breaks {
                self.text.push('\n');
            }
            self.breaks = 0;
            self.space = false;
            self.cell = false;
        } else if std::mem::take(&mut self.cell) {
            if !self.text.ends_with('\n') {
                self.text.push_str(" | ");
            }
            self.space = false;
        } else if self.space {
            if !self.text.ends_with([' ', '\n']) {
                self.text.push(' ');
            }
            self.space = false;
        }
        if std::mem::take(&mut self.bullet) {
            self.text.push_str("- ");
        }
    }

    pub(super) fn finish(self) -> String {
        let lines: Vec<&str> = self.text.lines().map(str::trim_end).collect();
        lines.join("\n").trim().to_owned()
    }
}
