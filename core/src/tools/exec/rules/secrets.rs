//! Rules for the groups that guard secrets: `env_dump` (printing the environment or a
//! secret-looking variable) and `secrets_read` (touching well-known credential files).
//! The command runs with a clean environment anyway; these catch the intent.

use super::super::command::Invocation;
use super::super::deny::Ctx;
use super::super::paths;
use super::all_words;

/// Whether a variable name looks like it holds a secret (`OPENAI_API_KEY`, `GH_TOKEN`).
pub(super) fn secret_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "KEYS",
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "CREDENTIAL",
        "CREDENTIALS",
        "PAT",
    ];
    const ENDINGS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"];
    name.to_ascii_uppercase()
        .split('_')
        .any(|part| WORDS.contains(&part) || ENDINGS.iter().any(|e| part.ends_with(e)))
}

/// `env`, `printenv`, `set`, `export -p`, `/proc/*/environ`, `ps e`, `echo $API_KEY`.
pub(super) fn env_dump(ctx: &Ctx) -> Option<String> {
    let stage = ctx.stage();
    for (i, inv) in stage.invocations.iter().enumerate() {
        // `env CMD` runs CMD, the next invocation; only a bare `env` prints.
        let bare_env = inv.program == "env" && i + 1 == stage.invocations.len();
        if bare_env && !inv.flag("S", &["--split-string"]) {
            return Some("prints the environment".into());
        }
        if let Some(reason) = dumps(inv) {
            return Some(reason);
        }
    }
    all_words(stage)
        .any(|w| environ_file(&w.text))
        .then(|| "reads a process's environment".into())
}

fn dumps(inv: &Invocation) -> Option<String> {
    let ops = inv.operands();
    let dump = || Some("prints the environment".into());
    match inv.program {
        "printenv" if ops.is_empty() => dump(),
        "printenv" => ops
            .iter()
            .find(|w| secret_name(&w.text))
            .map(|w| format!("prints `{}`, which looks like a secret", w.text)),
        "set" | "export" | "declare" | "typeset" | "readonly" if inv.args.is_empty() => dump(),
        "export" | "declare" | "typeset" if ops.is_empty() && inv.flag("px", &[]) => dump(),
        "compgen" if inv.flag("ve", &[]) => dump(),
        // BSD-style `ps e`, `ps auxe`, `ps eww`: the first argument, letters only.
        "ps" if inv.args.first().is_some_and(|a| {
            a.text.contains('e') && a.text.chars().all(|c| c.is_ascii_alphabetic())
        }) =>
        {
            Some("prints the environment of running processes".into())
        }
        "echo" | "printf" | "print" | "logger" | "tee" | "cat" | "write" | "wall" => inv
            .args
            .iter()
            .flat_map(|w| &w.vars)
            .find(|v| secret_name(v))
            .map(|v| format!("prints `${v}`, which looks like a secret")),
        _ => None,
    }
}

/// `/proc/self/environ`, `/proc/1/environ`, `/proc/*/environ`.
fn environ_file(path: &str) -> bool {
    path.starts_with("/proc/") && path.ends_with("/environ")
}

/// `cat ~/.ssh/id_ed25519`, `cp .security.yml …`, `cat /etc/shadow`.
pub(super) fn secrets_read(ctx: &Ctx) -> Option<String> {
    let stage = ctx.stage();
    // `ssh -i KEY` uses a key without reading it out.
    let key_options: Vec<&str> = stage
        .invocations
        .iter()
        .filter(|i| i.is(&["ssh", "scp", "sftp", "ssh-add"]))
        .flat_map(|i| i.values(Some('i'), &[]))
        .map(|(v, _)| v)
        .collect();
    all_words(stage)
        .filter(|w| !key_options.contains(&w.text.as_str()))
        .find_map(|w| paths::secret(&w.text).map(|what| (w, what)))
        .map(|(w, what)| format!("touches {what} (`{}`)", w.text))
}
