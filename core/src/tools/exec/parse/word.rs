//! Reading one word: quotes, escapes, and the expansions inside it (`$X`, `${X}`,
//! `$(( … ))`, `$( … )`, backticks). Command substitutions are parsed as commands of
//! their own and added to the parser's pipelines.

use super::{Parser, Unparsable, Word, is_operator, parse};

impl Parser {
    /// Read one word up to an unquoted blank or operator.
    pub(super) fn word(&mut self) -> Result<Word, Unparsable> {
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
                        Some('`') => {
                            return Err(Unparsable::new("arithmetic holds a substitution"));
                        }
                        Some('$') if self.peek_at(1) == Some('(') => {
                            return Err(Unparsable::new("arithmetic holds a substitution"));
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
                    return Err(Unparsable::new(
                        "indirect expansion `${!…}` is not supported",
                    ));
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
                        Some('`') => return Err(Unparsable::new("a `${…}` holds a substitution")),
                        Some('$') if self.peek_at(1) == Some('(') => {
                            return Err(Unparsable::new("a `${…}` holds a substitution"));
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
                return Err(Unparsable::new(
                    "`$'…'` and `$\"…\"` quoting are not supported",
                ));
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
