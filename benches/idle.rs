//! `cargo bench --bench idle`: where the idle memory of `pincer run` goes. The release
//! gateway is started against the in-process fakes (and, for Matrix, a real Synapse this
//! process starts: `scripts/install-synapse.sh`) with no channel, with each channel
//! alone and with all four, `RUNS` times each (default 5), and read 2 s after every
//! channel connected. Prints, per set, min/median/max of `VmRSS` and its parts from
//! `/proc/<pid>/status` (`RssAnon`: heap and stacks; `RssFile`: pages of the binary and
//! its libraries; `RssShmem`) and the thread count, then the median resident KiB of each
//! kind of mapping from `/proc/<pid>/smaps` (the binary's code, read-only data and
//! relocated data; libc; ld.so; heap; other anonymous memory).
//!
//! `IDLE_SETS=none,telegram,all` picks the sets. `IDLE_RESTART=1` reads each gateway
//! after a restart instead (started, connected, stopped with SIGTERM, started again on
//! the same home): the state of a gateway that has been running for a while, whose
//! channels resume saved sessions (Matrix's login, device keys and cross-signing are
//! done on the first start only). Only Matrix's fake tells a second connection from
//! the first (it opens a new probe chat); the other fakes count the first start's, so
//! alone they are read 2 s after the restart's spawn. `IDLE_WAIT=<seconds>` reads the
//! gateway that long after connecting instead of 2 s: after a minute or two at rest
//! each channel has been through its idle round trips (long polls, heartbeats, Matrix's
//! empty syncs) and the heap trimmer has run. It measures and prints; nothing is
//! asserted.

mod support;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use pincer_fakes::FakeModel;
use pincer_fakes::discord::FakeDiscord;
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::slack::FakeSlack;
use pincer_fakes::synapse::MatrixPlatform;
use pincer_fakes::telegram::FakeTelegram;
use support::Gateway;

const SETS: [&str; 6] = ["none", "telegram", "discord", "slack", "matrix", "all"];

fn main() -> ExitCode {
    support::main("idle", bench())
}

/// One reading of the gateway at rest: the status fields and KiB per kind of mapping.
struct Reading {
    status: BTreeMap<&'static str, u64>,
    mappings: BTreeMap<String, u64>,
}

const FIELDS: [&str; 5] = ["VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads"];

async fn bench() -> anyhow::Result<()> {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let sets: Vec<String> = std::env::var("IDLE_SETS")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_else(|_| SETS.iter().map(|s| s.to_string()).collect());
    let restarted = std::env::var("IDLE_RESTART").is_ok_and(|v| v == "1");
    let wait = Duration::from_secs(
        std::env::var("IDLE_WAIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2),
    );
    let mut table = Vec::new();
    for set in &sets {
        let mut readings = Vec::new();
        for _ in 0..runs {
            readings.push(measure(set, restarted, wait).await?);
        }
        table.push((set.clone(), readings));
    }

    println!();
    println!(
        "Idle `pincer run` (release), {} s after connecting to the in-process fakes{}, {runs} runs per set: min / median / max KiB",
        wait.as_secs(),
        if restarted {
            " on its second start"
        } else {
            ""
        }
    );
    println!();
    println!("| channels | {} |", FIELDS.join(" | "));
    println!("| --- |{}", " --- |".repeat(FIELDS.len()));
    for (set, readings) in &table {
        let cells: Vec<String> = FIELDS
            .iter()
            .map(|f| spread(readings.iter().map(|r| r.status[f]).collect()))
            .collect();
        println!("| {set} | {} |", cells.join(" | "));
    }
    println!();
    println!("Median resident KiB per mapping:");
    println!();
    let mut kinds: Vec<String> = table
        .iter()
        .flat_map(|(_, rs)| rs.iter().flat_map(|r| r.mappings.keys().cloned()))
        .collect();
    kinds.sort();
    kinds.dedup();
    println!("| mapping | {} |", sets.join(" | "));
    println!("| --- |{}", " --- |".repeat(sets.len()));
    for kind in &kinds {
        let cells: Vec<String> = table
            .iter()
            .map(|(_, rs)| {
                let mut v: Vec<u64> = rs
                    .iter()
                    .map(|r| r.mappings.get(kind).copied().unwrap_or(0))
                    .collect();
                v.sort_unstable();
                v[v.len() / 2].to_string()
            })
            .collect();
        println!("| {kind} | {} |", cells.join(" | "));
    }
    Ok(())
}

/// Start fresh fakes and a gateway with the channels of `set` (started twice when
/// `restarted`), and read it `wait` after it connected.
async fn measure(set: &str, restarted: bool, wait: Duration) -> anyhow::Result<Reading> {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let slack = FakeSlack::start().await;
    let matrix = MatrixPlatform::start().await;
    let all: [&dyn FakePlatform; 4] = [&telegram, &discord, &slack, &matrix];
    let platforms: Vec<&dyn FakePlatform> = all
        .into_iter()
        .filter(|p| set == "all" || set == p.name())
        .collect();
    let mut gateway = Gateway::start(&model, &platforms, "")?;
    gateway.ready(&platforms).await?;
    if restarted {
        gateway.restart()?;
        gateway.ready(&platforms).await?;
    }
    tokio::time::sleep(wait).await;
    let pid = gateway.child.id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps"))?;
    let binary = std::fs::canonicalize(support::pincer_binary())?;
    Ok(Reading {
        status: FIELDS
            .iter()
            .map(|f| (*f, support::field(&status, &format!("{f}:"))))
            .collect(),
        mappings: by_mapping(&smaps, &binary.to_string_lossy()),
    })
}

/// Resident KiB of each kind of mapping in `/proc/<pid>/smaps`. The binary's mappings
/// come in the linker's order: headers, relocations, read-only data and unwind tables;
/// code; then the data the loader relocated (`.data.rel.ro`, copied on write, so
/// anonymous); then writable data.
fn by_mapping(smaps: &str, binary: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut kind = String::new();
    let mut past_code = false;
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        if first.contains('-') && !first.ends_with(':') {
            let perms = words.next().unwrap_or_default();
            let path = line.split_whitespace().nth(5).unwrap_or_default();
            kind = if path == binary {
                let part = match perms {
                    "r-xp" => "code",
                    "r--p" if past_code => "relocated data (.data.rel.ro)",
                    "r--p" => "relocations, rodata, eh_frame",
                    _ => "data",
                };
                past_code |= perms == "r-xp";
                format!("pincer: {part}")
            } else if path.is_empty() {
                if perms.starts_with("---") {
                    "guard pages".into()
                } else {
                    "anonymous (thread stacks, arenas)".into()
                }
            } else if let Some(name) = path
                .strip_prefix('/')
                .map(|p| p.rsplit('/').next().unwrap_or(p))
            {
                let name = name.split(".so").next().unwrap_or(name);
                if name.ends_with(".db-shm") || name.ends_with(".db") {
                    "SQLite".into()
                } else {
                    name.to_string()
                }
            } else {
                path.to_string()
            };
        } else if first == "Rss:" {
            let kib: u64 = words.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            *out.entry(kind.clone()).or_insert(0) += kib;
        }
    }
    out.retain(|_, kib| *kib > 0);
    out
}

fn spread(mut v: Vec<u64>) -> String {
    v.sort_unstable();
    format!("{} / {} / {}", v[0], v[v.len() / 2], v[v.len() - 1])
}
