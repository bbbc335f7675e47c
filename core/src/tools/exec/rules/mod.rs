//! One rule per deny group: given a segment (and its pipeline), say what it would do
//! that the group refuses, or nothing. Rules read the parsed words only; they never
//! run anything or look at the disk.
//!
//! - `host`     — destructive, privilege, persistence, system
//! - `packages` — packages
//! - `network`  — exfiltration, reverse_shell, remote_script, network_listen, mining
//! - `secrets`  — env_dump, secrets_read

mod host;
mod network;
mod packages;
mod secrets;

use super::command::Stage;
use super::deny::Ctx;
use super::parse::{RedirectKind, Word};

/// A group's rule: what the segment would do, as a verb phrase, if the group refuses it.
pub(super) type Rule = fn(&Ctx) -> Option<String>;

/// The rule of every group in [`super::deny::GROUPS`], in the same order.
pub(super) const RULES: &[(&str, Rule)] = &[
    ("destructive", host::destructive),
    ("exfiltration", network::exfiltration),
    ("reverse_shell", network::reverse_shell),
    ("remote_script", network::remote_script),
    ("privilege", host::privilege),
    ("packages", packages::packages),
    ("persistence", host::persistence),
    ("env_dump", secrets::env_dump),
    ("secrets_read", secrets::secrets_read),
    ("system", host::system),
    ("network_listen", network::network_listen),
    ("mining", network::mining),
];

/// Every word of the segment and every redirection target.
fn all_words<'a>(stage: &Stage<'a>) -> impl Iterator<Item = &'a Word> {
    let seg = stage.seg;
    seg.words
        .iter()
        .chain(seg.redirects.iter().map(|r| &r.target))
}

/// Whether the segment reads a file through `<`.
fn reads_file(stage: &Stage) -> bool {
    stage
        .seg
        .redirects
        .iter()
        .any(|r| r.kind == RedirectKind::Read)
}

/// The paths the segment writes: `>` targets, `tee` files, `cp`/`mv`/`ln`/`install`
/// destinations, `dd of=`, `curl -o`, `wget -O`, files edited by `sed -i`.
fn written<'a>(stage: &Stage<'a>) -> Vec<&'a str> {
    let mut paths: Vec<&str> = stage
        .seg
        .redirects
        .iter()
        .filter(|r| r.kind == RedirectKind::Write)
        .map(|r| r.target.text.as_str())
        .collect();
    for inv in &stage.invocations {
        let ops = inv.operands();
        let texts = ops.iter().map(|w| w.text.as_str());
        match inv.program {
            "tee" => paths.extend(texts),
            "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => {
                let target = inv.values(Some('t'), &["--target-directory"]);
                paths.extend(target.iter().map(|(v, _)| *v));
                if ops.len() >= 2 {
                    paths.extend(ops.last().map(|w| w.text.as_str()));
                }
            }
            "dd" => paths.extend(texts.filter_map(|t| t.strip_prefix("of="))),
            "curl" => paths.extend(inv.values(Some('o'), &["--output"]).iter().map(|v| v.0)),
            "wget" => {
                let out = inv.values(Some('O'), &["--output-document"]);
                paths.extend(out.iter().map(|v| v.0));
            }
            "sed" | "perl" if inv.flag("i", &["--in-place"]) => paths.extend(texts),
            _ => {}
        }
    }
    paths
}

/// The first of `paths` that `pick` says something about.
fn first_match<'a, T>(paths: &[&'a str], pick: impl Fn(&str) -> Option<T>) -> Option<(&'a str, T)> {
    paths.iter().find_map(|p| pick(p).map(|found| (*p, found)))
}
