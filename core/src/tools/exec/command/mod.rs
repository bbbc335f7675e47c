//! Turns a parsed segment into the programs it runs. Wrappers are seen through, each
//! kept as an invocation of its own: `sudo env X=1 nice rm -rf /` runs `sudo`, `env`,
//! `nice` and `rm`, and every one is checked. Command strings handed to a shell
//! (`sh -c '…'`, `su -c`, `watch`, `trap`) come back as nested commands to parse and
//! check in turn.
//!
//! What would hide the program (a variable or substitution in its place, a glob,
//! `eval`, `case`, function definitions, aliases) is `Unparsable`.
//!
//! - `wrappers` — what each wrapper hands on
//! - `git`      — where git's command starts, past its global options
//! - `code`     — string literals in interpreter code

mod code;
mod git;
mod wrappers;

use super::parse::{Segment, Unparsable, Word};
use wrappers::{Inner, wrapped};

/// One program run by a segment, with the words after it.
#[derive(Debug)]
pub(super) struct Invocation<'a> {
    /// The program's base name (`/bin/rm` → `rm`).
    pub program: &'a str,
    /// The program as written (`.venv/bin/pip`).
    pub path: &'a str,
    pub args: &'a [Word],
    /// The wrapper that runs it (`sudo`, `xargs` …): its index in the stage's invocations.
    pub via: Option<usize>,
}

/// A segment with the programs it runs.
#[derive(Debug)]
pub(super) struct Stage<'a> {
    pub seg: &'a Segment,
    pub invocations: Vec<Invocation<'a>>,
    /// Command strings this segment hands to a shell, to be checked as commands.
    pub nested: Vec<String>,
    /// String literals in interpreter code (`python -c '…'`), checked when they parse.
    pub embedded: Vec<String>,
}

impl<'a> Invocation<'a> {
    /// Whether it is one of `names`.
    pub(super) fn is(&self, names: &[&str]) -> bool {
        names.contains(&self.program)
    }

    /// The options, up to `--`.
    fn options(&self) -> impl Iterator<Item = &'a str> {
        self.args
            .iter()
            .map(|a| a.text.as_str())
            .take_while(|a| *a != "--")
            .filter(|a| a.starts_with('-') && a.len() > 1)
    }

    /// Whether an option is one of `long` (also `--long=…`) or a cluster of short
    /// options holding one of the letters in `short` (`-rf` holds `r`).
    pub(super) fn flag(&self, short: &str, long: &[&str]) -> bool {
        self.options().any(|opt| match opt.strip_prefix("--") {
            Some(_) => long
                .iter()
                .any(|l| opt == *l || opt.strip_prefix(l).is_some_and(|r| r.starts_with('='))),
            None => opt[1..].chars().any(|c| short.contains(c)),
        })
    }

    /// Values given to an option: `-d X`, `-dX`, `-sd X`, `--data X`, `--data=X`.
    pub(super) fn values(&self, short: Option<char>, long: &[&str]) -> Vec<(&'a str, &'a Word)> {
        let mut found = Vec::new();
        for (i, word) in self.args.iter().enumerate() {
            let text = word.text.as_str();
            if text == "--" {
                break;
            }
            let next = self.args.get(i + 1).map(|w| (w.text.as_str(), w));
            let long_value = long.iter().find_map(|l| match text.strip_prefix(l)? {
                "" => Some(None),
                rest => rest.strip_prefix('=').map(Some),
            });
            if let Some(value) = long_value {
                match value {
                    None => found.extend(next),
                    Some(value) => found.push((value, word)),
                }
            } else if let Some(cluster) = text.strip_prefix('-').filter(|t| !t.starts_with('-'))
                && let Some(at) = short.and_then(|s| cluster.find(s))
            {
                match &cluster[at + 1..] {
                    "" => found.extend(next),
                    rest => found.push((rest, word)),
                }
            }
        }
        found
    }

    /// The arguments that are not options (every one after `--`).
    pub(super) fn operands(&self) -> Vec<&'a Word> {
        let mut after_dashes = false;
        let mut found = Vec::new();
        for word in self.args {
            if after_dashes {
                found.push(word);
            } else if word.text == "--" {
                after_dashes = true;
            } else if !(word.text.starts_with('-') && word.text.len() > 1) {
                found.push(word);
            }
        }
        found
    }

    /// The program as it will run, when that reads differently from how it is written:
    /// git past its global options (`git -C x --no-pager push -f` → `git push -f`).
    pub(super) fn as_run(&self) -> Option<String> {
        if self.program != "git" {
            return None;
        }
        let at = git::command_at(self.args)?;
        (at > 0).then(|| {
            std::iter::once(self.program)
                .chain(self.args[at..].iter().map(|w| w.text.as_str()))
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    /// What this program is told to do comes from its input, not from the command: git
    /// run by `xargs` with its command left to the input (`xargs git`, `xargs -I{} git
    /// {}`). The reason, worded to follow "cannot be checked (…)".
    pub(super) fn fed_by<'s>(&self, stage: &Stage<'s>) -> Option<String> {
        let via = &stage.invocations[self.via?];
        if via.program != "xargs" || self.program != "git" {
            return None;
        }
        let command = git::command_at(self.args).map(|at| self.args[at].text.as_str());
        let fed = match command {
            None => true,
            Some(word) => wrappers::xargs_replaces(via.args).is_some_and(|r| word.contains(r)),
        };
        fed.then(|| "`xargs` gives git its command from its input".to_string())
    }

    /// The first operand: the sub-command of `apt`, `systemctl`, `npm` ….
    pub(super) fn verb(&self) -> &'a str {
        self.operands().first().map_or("", |w| w.text.as_str())
    }

    /// A shell with no command string and no script file: it runs what it reads.
    pub(super) fn reads_script_from_stdin(&self) -> bool {
        let interpreter = self.program.starts_with("python")
            || self.is(&["perl", "ruby", "node", "php", "lua", "pypy", "pypy3"]);
        let shell = SHELLS.contains(&self.program);
        let ops = self.operands();
        let no_script = ops.is_empty() || ops[0].text == "-" || (shell && self.flag("s", &[]));
        (shell || interpreter)
            && no_script
            && !self.flag(
                if interpreter { "ceErm" } else { "c" },
                &["--command", "--eval"],
            )
    }
}

/// Reserved words that may precede the program.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "while", "until", "do", "done",
];

/// Shells whose `-c` argument is a command string.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "rbash", "tcsh", "csh",
];

/// Find the programs `seg` runs.
pub(super) fn stage(seg: &Segment) -> Result<Stage<'_>, Unparsable> {
    let mut stage = Stage {
        seg,
        invocations: Vec::new(),
        nested: Vec::new(),
        embedded: Vec::new(),
    };
    collect(&seg.words, &mut stage, None, 0)?;
    stage.embedded = stage
        .invocations
        .iter()
        .flat_map(|inv| inv.inline_code())
        .flat_map(code::string_literals)
        .collect();
    Ok(stage)
}

fn collect<'a>(
    words: &'a [Word],
    stage: &mut Stage<'a>,
    via: Option<usize>,
    depth: usize,
) -> Result<(), Unparsable> {
    if depth > super::parse::MAX_DEPTH {
        return Err(Unparsable("it wraps commands too deeply".into()));
    }
    let skip = words
        .iter()
        .take_while(|w| is_assignment(w) || KEYWORDS.contains(&w.text.as_str()))
        .count();
    let Some((first, args)) = words[skip..].split_first() else {
        return Ok(());
    };
    if first.dynamic {
        return Err(Unparsable(format!(
            "the program `{}` is only known when it runs",
            first.text
        )));
    }
    if first.pattern {
        return Err(Unparsable(format!(
            "the program `{}` is a pattern",
            first.text
        )));
    }
    let program = first.text.rsplit('/').next().unwrap_or_default();
    match program {
        "for" | "select" => return Ok(()),
        "case" => return Err(Unparsable("`case` is not supported".into())),
        "function" => return Err(Unparsable("function definitions are not supported".into())),
        "eval" => return Err(Unparsable("`eval` runs text built at run time".into())),
        "alias" if args.iter().any(|a| a.text.contains('=')) => {
            return Err(Unparsable("aliases can hide what runs".into()));
        }
        _ => {}
    }
    let this = stage.invocations.len();
    stage.invocations.push(Invocation {
        program,
        path: &first.text,
        args,
        via,
    });
    for inner in wrapped(program, args) {
        match inner {
            Inner::Argv(start, end) => collect(&args[start..end], stage, Some(this), depth + 1)?,
            Inner::Script(words) => {
                let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
                let text = text.join(" ");
                if words.iter().any(|w| w.substituted) {
                    return Err(Unparsable(format!(
                        "the command string `{text}` is only known when it runs"
                    )));
                }
                stage.nested.push(text);
            }
        }
    }
    Ok(())
}

/// `NAME=value` (also `NAME+=value`, `NAME[i]=value`).
fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else {
        return false;
    };
    let name = name.trim_end_matches('+');
    let name = name.split('[').next().unwrap_or_default();
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
