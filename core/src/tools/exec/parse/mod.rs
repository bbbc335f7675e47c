//! Splits a POSIX-ish shell command into pipelines of segments, so the deny groups can
//! look at every command that would run: the parts joined by `&&`, `||`, `;`, `|`, `&`
//! and newlines, subshells `( … )`, and the bodies of `$( … )` and backticks. Each
//! segment keeps its words with the quotes removed and its file redirections.
//!
//! This is a checker's parser, not a shell: it never expands anything. What it cannot
//! follow with confidence (heredocs, `$'…'`, process substitution, function
//! definitions, unbalanced quotes or parentheses) is `Unparsable`, which the caller
//! refuses. It must not be loosened to "parse what we can".

mod word;

/// Deepest nesting of subshells, substitutions and `sh -c` strings that is followed.
pub(super) const MAX_DEPTH: usize = 16;

/// Why a command cannot be checked, worded to follow "cannot be checked (…)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unparsable(pub String);

impl Unparsable {
    fn new(reason: &str) -> Self {
        Self(reason.to_string())
    }
}

/// One shell word as the command will see it, before expansion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Word {
    /// The text with quotes and escapes removed; `$X`, `${X}` and `$( … )` stay as written.
    pub text: String,
    /// Holds an expansion (`$X`, `$( … )`, backticks), so its value is only known at run time.
    pub dynamic: bool,
    /// Holds a command substitution.
    pub substituted: bool,
    /// Holds an unquoted glob or brace pattern (`*`, `?`, `[`, `{`).
    pub pattern: bool,
    /// Names of the variables it expands.
    pub vars: Vec<String>,
}

/// Whether a redirection reads a file or writes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RedirectKind {
    Read,
    Write,
}

/// A redirection to or from a file (`> out`, `>> log`, `< in`, `&> all`); descriptor
/// copies such as `2>&1` are not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// One simple command: its words and redirections, and its text for messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Segment {
    pub text: String,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

/// Segments joined by `|`, in order; a subshell stage is an empty placeholder segment
/// and its own commands are separate pipelines.
pub(super) type Pipeline = Vec<Segment>;

/// Parse `command`, found `depth` levels inside another (0 for the top), into every
/// pipeline it contains, nested ones included.
pub(super) fn parse(command: &str, depth: usize) -> Result<Vec<Pipeline>, Unparsable> {
    if depth > MAX_DEPTH {
        return Err(Unparsable::new("it is nested too deeply"));
    }
    let mut parser = Parser {
        chars: command.chars().collect(),
        pos: 0,
        depth,
        out: Vec::new(),
    };
    parser.list(false)?;
    Ok(parser.out)
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    /// How deep in subshells and substitutions the parser is.
    depth: usize,
    /// Finished pipelines, nested ones pushed as they close.
    out: Vec<Pipeline>,
}

/// The segment being read.
#[derive(Default)]
struct Open {
    start: Option<usize>,
    end: usize,
    words: Vec<Word>,
    redirects: Vec<Redirect>,
    /// A `( … )` group was read; only redirections and operators may follow.
    grouped: bool,
}

impl Open {
    fn touch(&mut self, start: usize, end: usize) {
        self.start.get_or_insert(start);
        self.end = end;
    }
}

fn is_operator(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>' | '\n')
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn raw(&self, start: usize, end: usize) -> String {
        self.chars[start..end].iter().collect()
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    /// Read commands until the end, or (`closing`) through the `)` that ends a group.
    fn list(&mut self, closing: bool) -> Result<(), Unparsable> {
        let mut pipeline = Pipeline::new();
        let mut open = Open::default();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if closing {
                    return Err(Unparsable::new("a `(` is never closed"));
                }
                self.end_segment(&mut open, &mut pipeline);
                self.end_pipeline(&mut pipeline);
                return Ok(());
            };
            match (c, self.peek_at(1)) {
                ('#', _) => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                (';', Some(';')) => return Err(Unparsable::new("`case` is not supported")),
                ('&', Some('>')) => self.redirect(&mut open)?,
                ('&', Some('&')) | ('|', Some('|')) => {
                    self.pos += 2;
                    self.end_segment(&mut open, &mut pipeline);
                    self.end_pipeline(&mut pipeline);
                }
                ('\n' | ';' | '&', _) => {
                    self.pos += 1;
                    self.end_segment(&mut open, &mut pipeline);
                    self.end_pipeline(&mut pipeline);
                }
                ('|', next) => {
                    self.pos += if next == Some('&') { 2 } else { 1 };
                    self.end_segment(&mut open, &mut pipeline);
                }
                (')', _) => {
                    if !closing {
                        return Err(Unparsable::new("a `)` has no matching `(`"));
                    }
                    self.pos += 1;
                    self.end_segment(&mut open, &mut pipeline);
                    self.end_pipeline(&mut pipeline);
                    return Ok(());
                }
                ('(', _) => {
                    if open.start.is_some() {
                        return Err(Unparsable::new(
                            "a `(` follows a word, as in a function definition",
                        ));
                    }
                    let start = self.pos;
                    self.pos += 1;
                    self.nested_list()?;
                    open.grouped = true;
                    open.touch(start, self.pos);
                }
                ('<' | '>', _) => self.redirect(&mut open)?,
                _ => {
                    let start = self.pos;
                    let word = self.word()?;
                    let fd = self.chars[start..self.pos].iter().all(char::is_ascii_digit);
                    if fd && matches!(self.peek(), Some('<' | '>')) {
                        open.touch(start, self.pos);
                        self.redirect(&mut open)?;
                    } else if open.grouped {
                        return Err(Unparsable::new("a word follows a `( … )` group"));
                    } else {
                        open.touch(start, self.pos);
                        open.words.push(word);
                    }
                }
            }
        }
    }

    /// Read a group body through its `)`, one level deeper.
    fn nested_list(&mut self) -> Result<(), Unparsable> {
        if self.depth >= MAX_DEPTH {
            return Err(Unparsable::new("it is nested too deeply"));
        }
        self.depth += 1;
        let result = self.list(true);
        self.depth -= 1;
        result
    }

    fn end_segment(&mut self, open: &mut Open, pipeline: &mut Pipeline) {
        let open = std::mem::take(open);
        let Some(start) = open.start else { return };
        pipeline.push(Segment {
            text: self.raw(start, open.end).trim().to_string(),
            words: open.words,
            redirects: open.redirects,
        });
    }

    fn end_pipeline(&mut self, pipeline: &mut Pipeline) {
        if !pipeline.is_empty() {
            self.out.push(std::mem::take(pipeline));
        }
    }

    /// Read a redirection starting at `<`, `>` or `&>`, and its target word.
    fn redirect(&mut self, open: &mut Open) -> Result<(), Unparsable> {
        let start = self.pos;
        let first = self.peek();
        self.pos += 1;
        let (kind, dup) = match (first, self.peek()) {
            (Some('&'), _) => {
                self.pos += 1;
                if self.peek() == Some('>') {
                    self.pos += 1;
                }
                (RedirectKind::Write, false)
            }
            (_, Some('(')) => return Err(Unparsable::new("process substitution is not supported")),
            (Some('<'), Some('<')) => {
                return Err(Unparsable::new(
                    "heredocs are not supported; write files with write_file",
                ));
            }
            (Some('<'), Some('&')) => {
                self.pos += 1;
                (RedirectKind::Read, true)
            }
            (Some('<'), Some('>')) => {
                self.pos += 1;
                (RedirectKind::Write, false)
            }
            (Some('<'), _) => (RedirectKind::Read, false),
            (_, Some('&')) => {
                self.pos += 1;
                (RedirectKind::Write, true)
            }
            (_, Some('>' | '|')) => {
                self.pos += 1;
                (RedirectKind::Write, false)
            }
            _ => (RedirectKind::Write, false),
        };
        self.skip_blanks();
        if self.peek().is_none_or(is_operator) {
            return Err(Unparsable::new("a redirection has no target"));
        }
        let target = self.word()?;
        open.touch(start, self.pos);
        let copies_fd = target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit());
        if !(dup && copies_fd && !target.dynamic) {
            open.redirects.push(Redirect { kind, target });
        }
        Ok(())
    }
}
