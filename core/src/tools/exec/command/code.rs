//! Code handed to an interpreter on the command line (`python -c`, `perl -e`, `node -e`
//! …), and the string literals in it: in code that runs commands, a literal such as
//! `os.system('curl … | sh')` may be a shell command, so the deny check parses each one
//! too (and lets through those that do not parse, as most literals are not commands).

use super::Invocation;

impl<'a> Invocation<'a> {
    /// The code given with `-c`, `-e`, `-E`, `-r` or `--eval`, if it is an interpreter.
    pub(crate) fn inline_code(&self) -> Vec<&'a str> {
        let short = match self.program {
            p if p.starts_with("python") || p.starts_with("pypy") => 'c',
            "perl" | "ruby" | "node" | "lua" | "deno" => 'e',
            "php" => 'r',
            _ => return Vec::new(),
        };
        let mut code: Vec<&str> = self
            .values(Some(short), &["--eval"])
            .iter()
            .map(|v| v.0)
            .collect();
        if self.program == "perl" {
            code.extend(self.values(Some('E'), &[]).iter().map(|v| v.0));
        }
        code
    }
}

/// Calls through which code runs shell commands.
const SPAWNS: &[&str] = &[
    "system",
    "popen",
    "subprocess",
    "spawn",
    "exec",
    "check_output",
    "shell_exec",
    "passthru",
    "child_process",
    "`",
    "qx",
];

/// The `'…'` and `"…"` literals with a space in them, escapes left as written, when
/// `code` calls something that runs commands (`os.system`, `subprocess`, `exec` …).
pub(super) fn string_literals(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    if !SPAWNS.iter().any(|call| code.contains(call)) {
        return found;
    }
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        if c != '\'' && c != '"' {
            continue;
        }
        let mut literal = String::new();
        let mut escaped = false;
        for next in chars.by_ref() {
            match next {
                _ if escaped => {
                    literal.push(next);
                    escaped = false;
                }
                '\\' => escaped = true,
                q if q == c => break,
                other => literal.push(other),
            }
        }
        if literal.contains(' ') {
            found.push(literal);
        }
    }
    found
}
