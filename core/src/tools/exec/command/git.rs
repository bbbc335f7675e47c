//! Where git's own command starts: `git -C /x -c a=b --no-pager push` runs `git push`.
//! Git's global options come before its command, and some take a value (`-C <path>`,
//! `--git-dir <path>`), so the command is the first word after them. The permission
//! rules match `git push` in every such spelling through this.
//!
//! It must not decide what a command may do by itself: options a future git adds are
//! taken as options (the word after an unknown option is taken for the command), which
//! for a deny or ask rule errs towards matching.

use super::Word;

/// Global options whose value is the next word unless written `--opt=value`.
const VALUED: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--attr-source",
    "--list-cmds",
];

/// Index in `args` (the words after `git`) of git's command (`push`), past its global
/// options; `None` when there is none (`git --version`, `git -C x`).
pub(super) fn command_at(args: &[Word]) -> Option<usize> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let text = arg.text.as_str();
        if text == "--" {
            return (i + 1 < args.len()).then_some(i + 1);
        }
        if !text.starts_with('-') || text.len() == 1 {
            return Some(i);
        }
        i += if VALUED.contains(&text) { 2 } else { 1 };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace()
            .map(|w| Word {
                text: w.into(),
                ..Word::default()
            })
            .collect()
    }

    fn command(line: &str) -> Option<String> {
        let args = words(line);
        command_at(&args).map(|i| args[i].text.clone())
    }

    #[test]
    fn the_command_is_found_past_every_global_option() {
        for line in [
            "push",
            "-C /x push",
            "-c a=b push",
            "--no-pager push",
            "-p push",
            "--paginate push",
            "-P push",
            "--git-dir=.git push",
            "--git-dir .git --work-tree . push",
            "--work-tree=. push",
            "--namespace=n push",
            "--namespace n push",
            "--bare push",
            "--no-replace-objects push",
            "--literal-pathspecs push",
            "--exec-path=/usr/lib/git-core push",
            "--exec-path push",
            "--config-env=a.b=VAR push",
            "--config-env a.b=VAR push",
            "--no-optional-locks --no-lazy-fetch --no-advice push",
            "--attr-source HEAD push",
            "-C a -C b -c x=1 -c y=2 push",
            "-- push",
        ] {
            assert_eq!(command(line).as_deref(), Some("push"), "git {line}");
        }
        assert_eq!(command("-C push status").as_deref(), Some("status"));
        assert_eq!(command("-c push=1 log").as_deref(), Some("log"));
        assert_eq!(command("--version"), None);
        assert_eq!(command("-C x"), None);
        assert_eq!(command(""), None);
    }
}
