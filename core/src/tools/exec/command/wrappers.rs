//! What each wrapper runs: `sudo`, `doas`, `env`, `nohup`, `nice`, `timeout`, `xargs`,
//! `exec`, `command`, `npx`, `python -m`, `find -exec` … hand on a program and its
//! words; shells given `-c`, `su -c`, `env -S`, `watch` and `trap` hand on a command
//! string. Options that take a value are listed per wrapper so the value is not taken
//! for the program.

use super::{SHELLS, Word, is_assignment};

/// What a wrapper runs.
pub(super) enum Inner<'a> {
    /// These of its arguments are a program and its words.
    Argv(usize, usize),
    /// These words, joined by spaces, are a command string for a shell.
    Script(Vec<&'a Word>),
}

/// Index of the first argument after the options, skipping the value of each option in
/// `valued` (written `-u root`; `-uroot` and `--user=root` need no skipping).
/// Assignments are skipped too when `assignments` is set (`env X=1 cmd`).
fn after_options(args: &[Word], valued: &[&str], assignments: bool) -> usize {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let text = arg.text.as_str();
        if text == "--" {
            return i + 1;
        }
        if valued.contains(&text) {
            i += 2;
        } else if (text.starts_with('-') && text.len() > 1) || (assignments && is_assignment(arg)) {
            i += 1;
        } else {
            return i;
        }
    }
    i
}

fn rest(args: &[Word], start: usize) -> Vec<Inner<'_>> {
    if start < args.len() {
        vec![Inner::Argv(start, args.len())]
    } else {
        Vec::new()
    }
}

fn has(args: &[Word], flag: &str) -> bool {
    args.iter().any(|a| a.text == flag)
}

/// What the wrapper `program` runs, if it is one.
pub(super) fn wrapped<'a>(program: &str, args: &'a [Word]) -> Vec<Inner<'a>> {
    let python = program.starts_with("python") || program.starts_with("pypy");
    match program {
        "sudo" => rest(
            args,
            after_options(
                args,
                &[
                    "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R", "--user",
                    "--group",
                ],
                true,
            ),
        ),
        "doas" => rest(args, after_options(args, &["-u", "-C"], false)),
        "pkexec" => rest(args, after_options(args, &["--user"], false)),
        "nohup" | "builtin" | "setsid" | "unbuffer" | "busybox" | "toybox" => {
            rest(args, after_options(args, &[], false))
        }
        "stdbuf" => rest(args, after_options(args, &["-i", "-o", "-e"], false)),
        "time" => rest(args, after_options(args, &["-f", "-o"], false)),
        "npx" | "bunx" | "pnpx" => rest(args, after_options(args, &["-p", "--package"], false)),
        "exec" => rest(args, after_options(args, &["-a"], false)),
        "nice" => rest(args, after_options(args, &["-n", "--adjustment"], false)),
        "ionice" => rest(
            args,
            after_options(args, &["-c", "-n", "--class", "--classdata"], false),
        ),
        "xargs" => rest(args, after_options(args, XARGS_VALUED, false)),
        "command" if has(args, "-v") || has(args, "-V") => Vec::new(),
        "command" => rest(args, after_options(args, &[], false)),
        "timeout" => rest(
            args,
            after_options(args, &["-s", "-k", "--signal", "--kill-after"], false) + 1,
        ),
        "env" => {
            let start = after_options(args, &["-u", "-C", "--unset", "--chdir"], true);
            match args
                .iter()
                .position(|a| a.text == "-S" || a.text == "--split-string")
            {
                Some(i) => script(args.get(i + 1)),
                None => rest(args, start),
            }
        }
        "su" | "runuser" => script(option_value(args, &["-c", "--command"])),
        "trap" if args.len() >= 2 && !args[0].text.starts_with('-') => script(args.first()),
        "watch" => {
            let start = after_options(args, &["-n", "--interval"], false);
            if has(args, "-x") || has(args, "--exec") {
                rest(args, start)
            } else if start < args.len() {
                vec![Inner::Script(args[start..].iter().collect())]
            } else {
                Vec::new()
            }
        }
        "find" => find_execs(args),
        _ if SHELLS.contains(&program) => script(shell_script(args)),
        _ if python => match args.iter().position(|a| a.text == "-m") {
            Some(i) if i + 1 < args.len() => vec![Inner::Argv(i + 1, args.len())],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// `xargs` options whose value is the next word (GNU and BSD); `-i`, `-e`, `-l` and
/// `--replace`, `--eof`, `--max-lines` take theirs only attached (`-i{}`, `--eof=END`).
const XARGS_VALUED: &[&str] = &[
    "-I",
    "-J",
    "-L",
    "-n",
    "-P",
    "-R",
    "-S",
    "-s",
    "-d",
    "-E",
    "-a",
    "--delimiter",
    "--arg-file",
    "--max-args",
    "--max-chars",
    "--max-procs",
    "--process-slot-var",
];

/// The text `xargs` replaces with each input item in the command it runs (`-I {}`,
/// `-i`, `--replace`, BSD `-J %`), if it replaces any.
pub(super) fn xargs_replaces(args: &[Word]) -> Option<&str> {
    let end = after_options(args, XARGS_VALUED, false);
    let options = &args[..end.min(args.len())];
    let mut found = None;
    for (i, arg) in options.iter().enumerate() {
        let text = arg.text.as_str();
        let next = || options.get(i + 1).map(|w| w.text.as_str());
        let replace = match text {
            "-I" | "-J" => next(),
            "-i" | "--replace" => Some("{}"),
            _ => text
                .strip_prefix("--replace=")
                .or_else(|| text.strip_prefix("-I"))
                .or_else(|| text.strip_prefix("-J"))
                .or_else(|| text.strip_prefix("-i"))
                .filter(|r| !r.is_empty()),
        };
        found = replace.or(found);
    }
    found
}

fn script(word: Option<&Word>) -> Vec<Inner<'_>> {
    word.map(|w| Inner::Script(vec![w])).into_iter().collect()
}

/// The value of the first of `options` (`-c CMD`, `--command CMD`).
fn option_value<'a>(args: &'a [Word], options: &[&str]) -> Option<&'a Word> {
    let i = args
        .iter()
        .position(|a| options.contains(&a.text.as_str()))?;
    args.get(i + 1)
}

/// The command string of `sh -c '…'` (also `bash -lc`, `sh -e -c`).
fn shell_script(args: &[Word]) -> Option<&Word> {
    let mut wants_script = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let text = arg.text.as_str();
        if matches!(text, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if text == "--command" {
            return args.get(i + 1);
        }
        let short = (text.starts_with('-') || text.starts_with('+')) && !text.starts_with("--");
        if short && text.len() > 1 {
            wants_script |= text.contains('c');
        } else if !text.starts_with("--") {
            return wants_script.then_some(arg);
        }
        i += 1;
    }
    None
}

/// The commands of `find … -exec CMD {} ;` (also `-execdir`, `-ok`, `-okdir`).
fn find_execs(args: &[Word]) -> Vec<Inner<'_>> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(
            args[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = i + 1;
            let end = args[start..]
                .iter()
                .position(|a| a.text == ";" || a.text == "+")
                .map_or(args.len(), |n| start + n);
            found.push(Inner::Argv(start, end));
            i = end;
        }
        i += 1;
    }
    found
}
