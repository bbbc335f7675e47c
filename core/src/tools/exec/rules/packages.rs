//! The rule of the `packages` group: installing or removing packages for the whole
//! system or user (`apt install`, `pip install`, `npm install -g`, `cargo install`).
//! Project-local installs (`npm install`, `uv pip install`, a virtualenv's own
//! `.venv/bin/pip`) are left alone.

use super::super::command::Invocation;
use super::super::deny::Ctx;

/// `apt install`, `pip install`, `npm install -g`, `cargo install`, `brew install`.
pub(super) fn packages(ctx: &Ctx) -> Option<String> {
    let invocations = &ctx.stage().invocations;
    invocations.iter().enumerate().find_map(|(i, inv)| {
        // `python -m pip` runs the pip of that python.
        let runner = i.checked_sub(1).map(|before| &invocations[before]);
        let in_venv = project_local(inv.path)
            || runner.is_some_and(|r| r.program.starts_with("python") && project_local(r.path));
        (installs(inv) && !(inv.program.starts_with("pip") && in_venv)).then(|| {
            format!(
                "changes installed packages (`{} {}`)",
                inv.program,
                inv.verb()
            )
        })
    })
}

/// A program inside the working directory, such as a virtualenv's `.venv/bin/pip`.
fn project_local(path: &str) -> bool {
    path.contains('/') && !path.starts_with('/') && !path.starts_with('~') && !path.starts_with('$')
}

fn installs(inv: &Invocation) -> bool {
    let verb = inv.verb();
    let verb_in = |verbs: &[&str]| verbs.contains(&verb);
    let program = inv.program;
    let pip = program
        .strip_prefix("pip")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    let global = inv.flag("g", &["--global"]);
    match program {
        _ if pip => verb_in(&["install", "uninstall"]),
        "apt" | "apt-get" | "aptitude" => verb_in(&[
            "install",
            "reinstall",
            "remove",
            "purge",
            "upgrade",
            "dist-upgrade",
            "full-upgrade",
            "autoremove",
        ]),
        "dpkg" => inv.flag("iPr", &["--install", "--remove", "--purge", "--unpack"]),
        "rpm" => inv.flag("iUFe", &["--install", "--upgrade", "--freshen", "--erase"]),
        "yum" | "dnf" | "microdnf" | "tdnf" | "zypper" => verb_in(&[
            "install",
            "reinstall",
            "remove",
            "erase",
            "update",
            "upgrade",
            "downgrade",
            "in",
            "rm",
            "up",
            "dup",
            "groupinstall",
            "localinstall",
        ]),
        "apk" => verb_in(&["add", "del", "upgrade", "fix"]),
        "pacman" | "yay" | "paru" => inv.args.iter().any(|a| pacman_changes(&a.text)),
        "brew" | "port" => verb_in(&[
            "install",
            "reinstall",
            "upgrade",
            "uninstall",
            "remove",
            "rm",
            "tap",
            "link",
        ]),
        "snap" | "flatpak" => verb_in(&["install", "remove", "uninstall", "refresh", "update"]),
        "nix-env" => inv.flag("ieu", &["--install", "--uninstall", "--upgrade"]),
        "nix" => verb == "profile",
        "emerge" | "xbps-install" => !inv.flag("sp", &["--search", "--pretend", "--info"]),
        "pkg" => verb_in(&["install", "delete", "remove", "upgrade"]),
        "pipx" => verb_in(&["install", "uninstall", "inject", "upgrade", "reinstall"]),
        "uv" => {
            let ops = inv.operands();
            let words: Vec<&str> = ops.iter().take(2).map(|w| w.text.as_str()).collect();
            words == ["tool", "install"]
                || (words == ["pip", "install"] && inv.flag("", &["--system"]))
        }
        "npm" | "pnpm" | "bun" => {
            global
                && verb_in(&[
                    "install",
                    "i",
                    "add",
                    "update",
                    "uninstall",
                    "remove",
                    "rm",
                    "link",
                ])
        }
        "yarn" => verb == "global",
        "cargo" | "go" => verb == "install",
        "gem" => verb_in(&["install", "uninstall", "update"]),
        "composer" => verb == "global",
        _ => false,
    }
}

/// `-S`, `-Syu`, `-U`, `-R` change packages; `-Ss`, `-Si`, `-Sl` only look.
fn pacman_changes(arg: &str) -> bool {
    let Some(ops) = arg.strip_prefix('-').filter(|o| !o.starts_with('-')) else {
        return false;
    };
    match ops.split_at_checked(1) {
        Some(("R" | "U", _)) => true,
        Some(("S", rest)) => !rest.chars().any(|c| "silgp".contains(c)),
        _ => false,
    }
}
