//! Splits a POSIX-ish shell command into pipelines of segments, so the deny groups can
//! look at every command that would run: the parts joined by `&&`, `||`, `;`, `|`, `&`
//! and newlines, subshells `( … )`, and the bodies of `$( … )` and backticks. Each
//! segment keeps its words with the quotes removed and its file redirections.
//!
//! This is a checker's parser, not a shell: it never expands anything. What it cannot
//! follow with confidence (heredocs, `$'…'`, process substitution, function
//! definitions, unbalanced quotes or parentheses) is `Unparsable`, which the caller
//! refuses. It must not be loosened to "parse what we can".

/// Deepest nesting of subshells, substitutions and `sh -c` strings that is followed.
pub const MAX_DEPTH: usize = 16;

/// Why a command cannot be checked, worded to follow "cannot be checked (…)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsable(pub String);

impl Unparsable {
    fn new(reason: &str) -> Self {
        Self(reason.to_string())
    }
}

/// One shell word as the command will see it, before expansion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
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
pub enum RedirectKind {
    Read,
    Write,
}

/// A redirection to or from a file (`> out`, `>> log`, `< in`, `&> all`); descriptor
/// copies such as `2>&1` are not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// One simple command: its words and redirections, and its text for messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Segment {
    pub text: String,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

/// Segments joined by `|`, in order; a subshell stage is an empty placeholder segment
/// and its own commands are separate pipelines.
pub type Pipeline = Vec<Segment>;

/// Parse `command`, found `depth` levels inside another (0 for the top), into every
/// pipeline it contains, nested ones included.
pub fn parse(command: &str, depth: usize) -> Result<Vec<Pipeline>, Unparsable> {
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
            (Some('<'), Some('<')) => return Err(Unparsable::new("heredocs are not supported")),
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

    /// Read one word up to an unquoted blank or operator.
    fn word(&mut self) -> Result<Word, Unparsable> {
        let mut word = Word::default();
        let mut pattern = false;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' => break,
                c if is_operator(c) => break,
                '\'' => {
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => return Err(Unparsable::new("a single quote is never closed")),
                            Some('\'') => break,
                            Some(c) => word.text.push(c),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => self.double_quoted(&mut word)?,
                '\\' => {
                    match self.peek_at(1) {
                        None => return Err(Unparsable::new("it ends in a backslash")),
                        Some('\n') => {}
                        Some(c) => word.text.push(c),
                    }
                    self.pos += 2;
                }
                '$' => self.dollar(&mut word, false)?,
                '`' => self.backtick(&mut word)?,
                c => {
                    pattern |= matches!(c, '*' | '?' | '[' | '{');
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
        word.pattern = pattern && !matches!(word.text.as_str(), "[" | "[[" | "{");
        Ok(word)
    }

    fn double_quoted(&mut self, word: &mut Word) -> Result<(), Unparsable> {
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(Unparsable::new("a double quote is never closed")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(c @ ('$' | '`' | '"' | '\\')) => {
                        word.text.push(c);
                        self.pos += 2;
                    }
                    _ => {
                        word.text.push('\\');
                        self.pos += 1;
                    }
                },
                Some('$') => self.dollar(word, true)?,
                Some('`') => self.backtick(word)?,
                Some(c) => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// Read an expansion starting at `$`.
    fn dollar(&mut self, word: &mut Word, quoted: bool) -> Result<(), Unparsable> {
        let start = self.pos;
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.pos += 3;
                let mut depth = 2;
                while depth > 0 {
                    match self.peek() {
                        None => return Err(Unparsable::new("a `$((` is never closed")),
                        Some('(') => depth += 1,
                        Some(')') => depth -= 1,
                        Some('$' | '`') => {
                            return Err(Unparsable::new("arithmetic holds an expansion"));
                        }
                        Some(_) => {}
                    }
                    self.pos += 1;
                }
            }
            Some('(') => {
                self.pos += 2;
                self.nested_list()?;
                word.substituted = true;
            }
            Some('{') => {
                self.pos += 2;
                if self.peek() == Some('!') {
                    return Err(Unparsable::new("indirect expansion `${!…}` is not supported"));
                }
                if self.peek() == Some('#') {
                    self.pos += 1;
                }
                word.vars.push(self.name());
                let mut depth = 1;
                while depth > 0 {
                    match self.peek() {
                        None => return Err(Unparsable::new("a `${` is never closed")),
                        Some('{') => depth += 1,
                        Some('}') => depth -= 1,
                        Some('$' | '`') => {
                            return Err(Unparsable::new("a `${…}` holds another expansion"));
                        }
                        Some(_) => {}
                    }
                    self.pos += 1;
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                word.vars.push(self.name());
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => self.pos += 2,
            Some('\'' | '"') if !quoted => {
                return Err(Unparsable::new("`$'…'` and `$\"…\"` quoting are not supported"));
            }
            _ => {
                word.text.push('$');
                self.pos += 1;
                return Ok(());
            }
        }
        word.text.push_str(&self.raw(start, self.pos));
        word.dynamic = true;
        Ok(())
    }

    /// Read a variable name at the cursor.
    fn name(&mut self) -> String {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.pos += 1;
        }
        self.raw(start, self.pos)
    }

    /// Read a backtick substitution and parse its body as its own command.
    fn backtick(&mut self, word: &mut Word) -> Result<(), Unparsable> {
        let start = self.pos;
        self.pos += 1;
        let mut body = String::new();
        loop {
            match (self.peek(), self.peek_at(1)) {
                (None, _) => return Err(Unparsable::new("a backtick is never closed")),
                (Some('`'), _) => break,
                (Some('\\'), Some(c @ ('`' | '\\' | '$'))) => {
                    body.push(c);
                    self.pos += 2;
                }
                (Some(c), _) => {
                    body.push(c);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        let nested = parse(&body, self.depth + 1)?;
        self.out.extend(nested);
        word.text.push_str(&self.raw(start, self.pos));
        word.dynamic = true;
        word.substituted = true;
        Ok(())
    }
}
