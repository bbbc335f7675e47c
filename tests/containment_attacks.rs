//! Red-team attacks on containment that `tests/security.rs` does not replay: what a
//! sandboxed command can plant for the gateway to follow later (the daily logs, the
//! memory index, the memory repository), the landlock launcher run again from inside,
//! and the network switched off. Each runs through the real binary (`pincer chat -m go`)
//! with the fake model scripted to make the calls, the deny groups off so the sandbox
//! alone must hold.

use crate::common;

use std::path::{Path, PathBuf};

use common::TestHome;
use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

/// The provider key (in .security.yml; the fake model refuses calls without it).
const KEY: &str = "sk-fakeprovider-S3CR3T-0123456789abcdef";
/// A line of the secrets file that is not itself a secret: seeing it means the file
/// was read.
const FILE_MARKER: &str = "MARKER-c0ffee-secrets-file";

struct Rig {
    home: TestHome,
    model: FakeModel,
    runtime: tokio::runtime::Runtime,
}

/// A home with the fake model, `sandbox`, `network`, no deny groups, a secrets file with
/// a marker line; with `memory` the workspace already holds MEMORY.md and memory/.
fn rig(sandbox: &str, network: bool, memory: bool) -> Rig {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = runtime.block_on(FakeModel::start());
    model.require_key(KEY);
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &model,
        &format!("[tools.exec]\nsandbox = \"{sandbox}\"\nnetwork = {network}\ndeny_groups = []\n"),
    ));
    home.write_secrets(&format!(
        "# {FILE_MARKER}\nproviders:\n  fake:\n    api_key: \"{KEY}\"\n"
    ));
    std::fs::create_dir_all(home.workspace()).unwrap();
    if memory {
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
    }
    Rig {
        home,
        model,
        runtime,
    }
}

/// What one turn left behind.
struct Seen {
    stdout: String,
    stderr: String,
    /// Every tool result the model was sent, in order.
    results: Vec<String>,
}

impl Seen {
    fn all(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.stdout,
            self.stderr,
            self.results.join("\n")
        )
    }
}

fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// One turn of `chat -m go` in which the model makes `calls` in order, then says `reply`.
fn turn(rig: &Rig, calls: &[(&str, Value)], reply: &str) -> Seen {
    let _enter = rig.runtime.enter();
    rig.model.reset();
    rig.model.push_all(
        calls
            .iter()
            .map(|(tool, args)| Step::tool_call(*tool, args.clone())),
    );
    rig.model.push(Step::text(reply));
    let output = rig
        .home
        .command(&["chat", "-m", "go"])
        .output()
        .expect("run pincer chat");
    let results = rig
        .model
        .requests()
        .last()
        .map(|r| tool_results(&r.body))
        .unwrap_or_default();
    Seen {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        results,
    }
}

fn exec(command: &str) -> (&'static str, Value) {
    ("exec", json!({ "command": command }))
}

fn sandboxes() -> Vec<&'static str> {
    if Path::new("/usr/bin/bwrap").exists() {
        vec!["bwrap", "landlock"]
    } else {
        eprintln!("bubblewrap is not installed: only landlock is tried");
        vec!["landlock"]
    }
}

/// Fails with every problem found, naming the sandbox.
fn verdict(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Links for yesterday, today and tomorrow in `memory/logs`, pointing at `target`:
/// whichever the gateway's clock calls today, its daily log goes through one.
fn plant_log_links(target: &str) -> String {
    format!(
        "mkdir -p memory/logs && for d in '1 day ago' now tomorrow; do ln -sf {target} memory/logs/$(date -d \"$d\" +%F).md; done; ls -l memory/logs 2>&1"
    )
}

// ---------------------------------------------------------------------------------
// The daily logs: `memory/logs` is left out of the put-back (the gateway writes it),
// so a link a command plants there survives the call, and the gateway follows it.
// ---------------------------------------------------------------------------------

/// A link in memory/logs to the secrets file: `memory_search` (which indexes the logs,
/// in the gateway, unconfined) reads the secrets file through it and hands its lines
/// to the model.
fn memory_search_through_a_log_link(sandbox: &str, memory: bool) -> Vec<String> {
    let rig = rig(sandbox, true, memory);
    let seen = turn(
        &rig,
        &[
            exec(
                "mkdir -p memory/logs && ln -sf ../../../.security.yml memory/logs/2026-01-01.md; ls -l memory/logs 2>&1",
            ),
            ("memory_search", json!({"query": "providers"})),
            ("memory_search", json!({"query": "api_key"})),
            ("memory_read", json!({"name": "logs/2026-01-01"})),
        ],
        "CASE DONE",
    );
    let mut problems = Vec::new();
    for secret in [KEY, FILE_MARKER, "c0ffee", "S3CR3T"] {
        if seen.all().contains(secret) {
            problems.push(format!(
                "[{sandbox}, memory/ {}] memory_search read the secrets file through a log link: {:?}",
                if memory { "present" } else { "absent" },
                seen.results
            ));
            break;
        }
    }
    problems
}

#[test]
fn memory_search_does_not_follow_a_log_link_under_bwrap() {
    verdict(memory_search_through_a_log_link("bwrap", true));
}

#[test]
fn memory_search_does_not_follow_a_log_link_under_landlock() {
    verdict(memory_search_through_a_log_link("landlock", true));
}

#[test]
fn memory_search_does_not_follow_a_log_link_in_a_fresh_workspace_under_bwrap() {
    verdict(memory_search_through_a_log_link("bwrap", false));
}

/// A link in memory/logs to the secrets file, then the dream: it reads the logs since
/// its cursor (`daily::since`, in the gateway, unconfined) and sends them to the model.
fn dream_through_a_log_link(sandbox: &str, memory: bool) -> Vec<String> {
    let rig = rig(sandbox, true, memory);
    let planted = turn(
        &rig,
        &[exec(
            "mkdir -p memory/logs && ln -sf ../../../.security.yml memory/logs/2026-01-01.md; ls -l memory/logs 2>&1",
        )],
        "CASE DONE",
    );
    let _enter = rig.runtime.enter();
    rig.model.reset();
    rig.model.push(Step::text("nothing to change"));
    let dream = rig.home.run(&["memory", "dream"]);
    let sent: String = rig
        .model
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let mut problems = Vec::new();
    if sent.contains(FILE_MARKER) || sent.contains("c0ffee") {
        problems.push(format!(
            "[{sandbox}, memory/ {}] the dream read the secrets file through a log link and sent it to the model (plant {:?}, dream {dream:?})",
            if memory { "present" } else { "absent" },
            planted.results
        ));
    }
    problems
}

#[test]
fn the_dream_does_not_follow_a_log_link_under_bwrap() {
    verdict(dream_through_a_log_link("bwrap", true));
}

#[test]
fn the_dream_does_not_follow_a_log_link_under_landlock() {
    verdict(dream_through_a_log_link("landlock", true));
}

#[test]
fn the_dream_does_not_follow_a_log_link_in_a_fresh_workspace_under_bwrap() {
    verdict(dream_through_a_log_link("bwrap", false));
}

/// A link for today's log pointing outside the workspace: after the turn the gateway
/// appends the turn's lines (the model's own words included) to the target, creating
/// it if need be — a write outside the workspace, by the unconfined gateway.
fn daily_log_through_a_link(sandbox: &str, memory: bool) -> Vec<String> {
    let rig = rig(sandbox, true, memory);
    let outside = tempfile::tempdir().unwrap();
    let target: PathBuf = outside.path().join("owned-by-the-log");
    let seen = turn(
        &rig,
        &[exec(&plant_log_links(&target.display().to_string()))],
        "; touch /tmp/pincer-containment-pwned # CASE DONE",
    );
    let mut problems = Vec::new();
    if let Ok(text) = std::fs::read_to_string(&target) {
        problems.push(format!(
            "[{sandbox}, memory/ {}] the gateway wrote outside the workspace through memory/logs: {text:?} (results {:?})",
            if memory { "present" } else { "absent" },
            seen.results
        ));
    }
    problems
}

#[test]
fn the_daily_log_does_not_follow_a_planted_link_under_bwrap() {
    verdict(daily_log_through_a_link("bwrap", true));
}

#[test]
fn the_daily_log_does_not_follow_a_planted_link_under_landlock() {
    verdict(daily_log_through_a_link("landlock", true));
}

#[test]
fn the_daily_log_does_not_follow_a_planted_link_in_a_fresh_workspace_under_bwrap() {
    verdict(daily_log_through_a_link("bwrap", false));
}

// ---------------------------------------------------------------------------------
// The network switched off.
// ---------------------------------------------------------------------------------

/// With `network = false`, a UDP datagram to a listener on the loopback (DNS-style
/// exfiltration needs nothing more) must not arrive.
fn udp_with_the_network_off(sandbox: &str) -> Vec<String> {
    let rig = rig(sandbox, false, true);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let port = socket.local_addr().unwrap().port();
    let seen = turn(
        &rig,
        &[exec(&format!(
            "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leaked-over-udp', ('127.0.0.1', {port}))\" 2>&1; bash -c 'echo leaked-over-udp > /dev/udp/127.0.0.1/{port}' 2>&1; echo tried"
        ))],
        "CASE DONE",
    );
    let mut buf = [0u8; 64];
    match socket.recv(&mut buf) {
        Ok(n) => vec![format!(
            "[{sandbox}] a UDP datagram left the sandbox with network = false: {:?} (results {:?})",
            String::from_utf8_lossy(&buf[..n]),
            seen.results
        )],
        Err(_) => Vec::new(),
    }
}

#[test]
fn network_off_stops_udp_under_bwrap() {
    verdict(udp_with_the_network_off("bwrap"));
}

#[test]
fn network_off_stops_udp_under_landlock() {
    verdict(udp_with_the_network_off("landlock"));
}

// ---------------------------------------------------------------------------------
// The sandbox launcher run again from inside.
// ---------------------------------------------------------------------------------

/// A command runs `pincer __sandbox launch` itself with a confinement that hides
/// nothing, hoping for a fresh, wider sandbox. Landlock domains only ever narrow, and
/// under bwrap the home is an empty tmpfs anyway.
fn relaunch_from_inside(sandbox: &str) -> Vec<String> {
    let rig = rig(sandbox, true, true);
    let pincer = env!("CARGO_BIN_EXE_pincer");
    let home = rig.home.path().canonicalize().unwrap();
    let spec = json!({
        "workspace": "/",
        "hidden": "/nonexistent-pincer-hidden",
        "network": true,
        "read_only": [],
    })
    .to_string();
    let seen = turn(
        &rig,
        &[exec(&format!(
            "{pincer} __sandbox launch '{spec}' -- /bin/sh -c 'cat {home}/.security.yml; echo owned > /tmp/pincer-containment-relaunch' 2>&1; {pincer} __sandbox inner '{spec}' /tmp -- /bin/cat {home}/.security.yml 2>&1; echo tried",
            home = home.display()
        ))],
        "CASE DONE",
    );
    let mut problems = Vec::new();
    if seen.all().contains(FILE_MARKER) {
        problems.push(format!(
            "[{sandbox}] the relaunched sandbox read the secrets: {:?}",
            seen.results
        ));
    }
    if Path::new("/tmp/pincer-containment-relaunch").exists() {
        let _ = std::fs::remove_file("/tmp/pincer-containment-relaunch");
        problems.push(format!("[{sandbox}] the relaunched sandbox wrote to /tmp"));
    }
    problems
}

#[test]
fn running_the_launcher_again_from_inside_widens_nothing() {
    let mut failures = Vec::new();
    for sandbox in sandboxes() {
        failures.extend(relaunch_from_inside(sandbox));
    }
    verdict(failures);
}

// ---------------------------------------------------------------------------------
// The memory repository: `.git` sits in the writable workspace.
// ---------------------------------------------------------------------------------

/// A command writes git hooks (and an fsmonitor) into the memory repository, then a
/// memory write commits: libgit2 runs no hooks, so nothing runs outside the sandbox.
fn git_hooks_planted(sandbox: &str) -> Vec<String> {
    let rig = rig(sandbox, true, true);
    let write = |content: &str| {
        (
            "memory_write",
            json!({"name": "dog", "type": "user", "description": "the dog", "content": content}),
        )
    };
    let hook = "#!/bin/sh\\necho ran > \"$(git rev-parse --show-toplevel 2>/dev/null || pwd)/hook-ran\"\\n";
    let seen = turn(
        &rig,
        &[
            write("Rex"),
            exec(&format!(
                "ls .git >/dev/null 2>&1 || git init -q .; for h in pre-commit post-commit commit-msg prepare-commit-msg post-checkout reference-transaction; do printf '{hook}' > .git/hooks/$h; chmod +x .git/hooks/$h; done; printf '#!/bin/sh\\necho ran > hook-ran\\n' > fsmon; chmod +x fsmon; git config core.fsmonitor \"$PWD/fsmon\" 2>&1; git config core.hooksPath .git/hooks 2>&1; echo planted"
            )),
            write("Rex, a beagle"),
        ],
        "CASE DONE",
    );
    let mut problems = Vec::new();
    if rig.home.workspace().join("hook-ran").exists() {
        problems.push(format!(
            "[{sandbox}] a git hook planted by a command ran in the gateway: {:?}",
            seen.results
        ));
    }
    if !seen.results.iter().any(|r| r.contains("planted")) {
        problems.push(format!(
            "[{sandbox}] the hooks were not planted: {:?}",
            seen.results
        ));
    }
    if !seen.results.iter().any(|r| r.contains("Updated")) {
        problems.push(format!(
            "[{sandbox}] the second memory write did not happen: {:?}",
            seen.results
        ));
    }
    problems
}

#[test]
fn git_hooks_planted_in_the_memory_repository_never_run() {
    let mut failures = Vec::new();
    for sandbox in sandboxes() {
        failures.extend(git_hooks_planted(sandbox));
    }
    verdict(failures);
}
