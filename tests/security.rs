//! The security regression suite: attacks that worked before the sandbox, replayed
//! through the real binary with the fake model scripted to make each call, under both
//! sandboxes, with the exec deny groups switched off so the sandbox alone must hold. For every case it checks what a user cares about: no secret (nor the
//! secrets file's contents) in any reply, log line or tool result; no file outside the
//! workspace created or changed; `pincer` itself still alive and answering; no process
//! left behind by the call. Cases that need more than that say so in `expect`.

use crate::common;

use std::path::Path;
use std::process::Command as Process;

use common::TestHome;
use pincer_fakes::{FakeModel, Step};
use serde_json::Value;

#[path = "security/cases.rs"]
mod cases;
use cases::{Case, Expect, cases};

/// The provider key (in .security.yml; the fake model refuses calls without it).
const KEY: &str = "sk-fakeprovider-S3CR3T-0123456789abcdef";
/// A key only in pincer's starting environment (no provider uses it, so the scrubber
/// does not know it: if it shows up, it came out of `/proc`).
const ENV_SECRET: &str = "sk-ant-envonly-0987654321fedcba-secret";
/// A line of the secrets file that is not itself a secret: seeing it means the file
/// was read.
const FILE_MARKER: &str = "MARKER-c0ffee-secrets-file";

struct Rig {
    home: TestHome,
    model: FakeModel,
}

async fn rig(sandbox: &str, network: bool) -> Rig {
    let model = FakeModel::start().await;
    model.require_key(KEY);
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &model,
        // The deny groups are off: the sandbox alone must hold.
        &format!("[tools.exec]\nsandbox = \"{sandbox}\"\nnetwork = {network}\ndeny_groups = []\n"),
    ));
    home.write_secrets(&format!(
        "# {FILE_MARKER}\nproviders:\n  fake:\n    api_key: \"{KEY}\"\n"
    ));
    std::fs::create_dir_all(home.workspace().join("memory")).unwrap();
    std::fs::write(
        home.workspace().join("MEMORY.md"),
        "- the owner's real memory\n",
    )
    .unwrap();
    std::fs::write(
        home.workspace().join("memory/cat.md"),
        "---\nname: cat\ndescription: the cat\ntype: user\n---\nMochi\n",
    )
    .unwrap();
    Rig { home, model }
}

/// What one case left behind.
struct Seen {
    ok: bool,
    stdout: String,
    stderr: String,
    /// Every tool result the model was sent.
    results: String,
}

fn tool_results(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_case(rig: &Rig, case: &Case) -> Seen {
    rig.model.reset();
    let calls: Vec<Step> = case
        .calls
        .iter()
        .map(|(tool, args)| Step::tool_call(*tool, args.clone()))
        .collect();
    rig.model.push_all(calls);
    rig.model.push(Step::text("CASE DONE"));
    let output = rig
        .home
        .command(&["chat", "-m", "go"])
        .env("ANTHROPIC_API_KEY", ENV_SECRET)
        .output()
        .expect("run pincer chat");
    let requests = rig.model.requests();
    let results = requests
        .last()
        .map(|r| tool_results(&r.body))
        .unwrap_or_default();
    Seen {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        results,
    }
}

/// Every file under `dir` but the workspace, with its contents.
fn snapshot_home(home: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(home)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter(|e| !e.path().starts_with(home.join("workspace")))
        .filter(|e| {
            // The database, the logs, and the gateway's own index and command lock
            // (made at its first command) change with every turn.
            let name = e.file_name().to_string_lossy();
            let state = e.path().starts_with(home.join("state"));
            !name.starts_with("pincer.db")
                && !e.path().starts_with(home.join("logs"))
                && !(state && (name == "commands.lock" || name.starts_with("memory.db")))
        })
        .map(|e| {
            (
                e.path().display().to_string(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Processes whose command line holds `marker`.
fn left_running(marker: &str) -> Vec<String> {
    let out = Process::new("pgrep")
        .args(["-af", marker])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("pgrep"))
        .map(str::to_string)
        .collect()
}

fn check(rig: &Rig, case: &Case, seen: &Seen, before: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut problems = Vec::new();
    let everything = format!("{}\n{}\n{}", seen.stdout, seen.stderr, seen.results);
    for secret in [KEY, ENV_SECRET, FILE_MARKER] {
        if everything.contains(secret) {
            problems.push(format!("{secret} leaked"));
        }
    }
    if !seen.ok || !seen.stdout.contains("CASE DONE") {
        problems.push(format!(
            "pincer did not finish the turn (stdout {:?}, stderr {:?})",
            seen.stdout, seen.stderr
        ));
    }
    if snapshot_home(rig.home.path()) != before {
        problems.push("a file outside the workspace was created or changed".into());
    }
    for outside in ["/tmp/pincer-security-outside", "/etc/pincer-security-owned"] {
        if Path::new(outside).exists() {
            let _ = std::fs::remove_file(outside);
            problems.push(format!("{outside} was created"));
        }
    }
    let stray = left_running("4242424");
    if !stray.is_empty() {
        problems.push(format!("processes outlived the call: {stray:?}"));
        let _ = Process::new("pkill").args(["-9", "-f", "4242424"]).status();
    }
    let ws = rig.home.workspace();
    match &case.expect {
        Expect::Contained => {}
        Expect::ResultHas(needle) => {
            if !seen.results.contains(needle) {
                problems.push(format!("the result lacks {needle:?}: {}", seen.results));
            }
        }
        Expect::ResultLacks(needle) => {
            if seen.results.contains(needle) {
                problems.push(format!("the result has {needle:?}: {}", seen.results));
            }
        }
        Expect::MemoryIntact => {
            let memory = std::fs::read_to_string(ws.join("MEMORY.md")).unwrap_or_default();
            let cat = std::fs::read_to_string(ws.join("memory/cat.md")).unwrap_or_default();
            if memory != "- the owner's real memory\n" || !cat.contains("Mochi") {
                problems.push(format!("the prompt's files changed: {memory:?} {cat:?}"));
            }
            for planted in ["SOUL.md", "USER.md"] {
                if ws.join(planted).exists() {
                    problems.push(format!("{planted} was planted"));
                }
            }
        }
    }
    problems
}

fn run_suite(sandbox: &str, failures: &mut Vec<String>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut ran = 0;
    let all = cases();
    for network in [true, false] {
        let rig = runtime.block_on(rig(sandbox, network));
        for case in all.iter().filter(|c| c.network_off != network) {
            let before = snapshot_home(rig.home.path());
            let seen = run_case(&rig, case);
            ran += 1;
            for problem in check(&rig, case, &seen, &before) {
                failures.push(format!("[{sandbox}] {}: {problem}", case.name));
            }
        }
    }
    assert!(ran >= 40, "only {ran} cases ran");
}

/// bubblewrap must be there where CI runs (it installs it); elsewhere the bwrap half is
/// skipped with a note rather than failed.
fn bwrap_installed() -> bool {
    let found = Path::new("/usr/bin/bwrap").exists();
    assert!(
        found || std::env::var_os("CI").is_none(),
        "CI must install bubblewrap (.ci/run does: apt-get install -y bubblewrap)"
    );
    if !found {
        eprintln!("bubblewrap is not installed: the bwrap half of the suite is skipped");
    }
    found
}

/// One test for both sandboxes, one after the other: the cases look for stray
/// processes and files by name, and two suites at once would see each other's.
#[test]
fn every_known_attack_is_contained_under_both_sandboxes() {
    let mut failures = Vec::new();
    if bwrap_installed() {
        run_suite("bwrap", &mut failures);
    }
    run_suite("landlock", &mut failures);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
