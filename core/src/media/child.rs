//! The confined child process that reads hostile files: PDFs (`pincer __pdf-text`) and
//! pictures (`pincer __image-scale`). A parser may panic, loop or balloon on a crafted
//! file, and this build aborts on panic, so none of them runs inside the gateway: the
//! child has no files (Landlock, where the kernel has it), no environment, limited
//! memory and CPU time, is killed after `TIMEOUT`, reads the file on stdin and writes
//! one JSON line. Its memory is the child's, returned whole when it exits.

use std::process::Stdio;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Children at once, process-wide: each may use up to `MAX_MEMORY`, and many senders'
/// files must not add up to the machine's memory. The rest wait their turn.
static RUNNING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// How long one child may take.
const TIMEOUT: Duration = Duration::from_secs(20);
/// The child's memory and CPU-time limits.
const MAX_MEMORY: u64 = 1 << 30;
const MAX_CPU_SECS: u64 = 15;

/// What a child does with the bytes on stdin: its one-line JSON answer.
type Job = fn(&[u8]) -> String;

/// The hidden subcommands, and their jobs.
const JOBS: &[(&str, Job)] = &[
    (super::pdf::SUBCOMMAND, |bytes| {
        answer(&super::pdf::text_of(bytes))
    }),
    (super::image::SUBCOMMAND, |bytes| {
        answer(&super::image::for_model(bytes))
    }),
];

fn answer<T: Serialize>(result: &Result<T, String>) -> String {
    serde_json::to_string(result).unwrap_or_default()
}

/// `pincer <subcommand>` when it is one of the children: run it and give its exit
/// code; `None` for any other command line.
pub fn entry() -> Option<std::process::ExitCode> {
    let first = std::env::args_os().nth(1)?;
    let (_, job) = JOBS.iter().find(|(name, _)| first == *name)?;
    confine();
    let mut bytes = Vec::new();
    let line = match std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes) {
        Err(e) => answer::<()>(&Err(format!("cannot read the file: {e}"))),
        Ok(_) => job(&bytes),
    };
    println!("{line}");
    Some(std::process::ExitCode::SUCCESS)
}

/// Run `subcommand` of this binary on `bytes` and read its answer.
pub async fn run<T: DeserializeOwned>(
    subcommand: &str,
    what: &str,
    bytes: &[u8],
) -> Result<T, String> {
    let _permit = RUNNING
        .acquire()
        .await
        .map_err(|_| format!("the {what} reader is shut down"))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find pincer itself: {e}"))?;
    let mut child = tokio::process::Command::new(exe)
        .arg(subcommand)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the {what} reader: {e}"))?;
    let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(format!("cannot talk to the {what} reader"));
    };
    let work = async {
        let write = async {
            // A child that stops reading early (a broken file) closes the pipe: its
            // answer says what went wrong.
            let _ = stdin.write_all(bytes).await;
            drop(stdin);
        };
        let mut out = Vec::new();
        let read = stdout.read_to_end(&mut out);
        let (_, read) = tokio::join!(write, read);
        read.map_err(|e| format!("cannot read the {what} reader's answer: {e}"))?;
        let status = child
            .wait()
            .await
            .map_err(|e| format!("the {what} reader failed: {e}"))?;
        let answer: Result<T, String> = serde_json::from_slice(&out)
            .map_err(|_| format!("the {what} reader stopped ({status})"))?;
        answer
    };
    match tokio::time::timeout(TIMEOUT, work).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "reading it took longer than {}s",
            TIMEOUT.as_secs()
        )),
    }
}

/// No files, bounded memory and CPU time: best effort, each where the kernel allows.
fn confine() {
    use landlock::{ABI, Access, AccessFs, Ruleset, RulesetAttr};
    use rustix::process::{Resource, Rlimit, setrlimit};
    for (resource, limit) in [(Resource::As, MAX_MEMORY), (Resource::Cpu, MAX_CPU_SECS)] {
        // Best effort: a kernel that refuses leaves the parent's timeout in charge.
        let _ = setrlimit(
            resource,
            Rlimit {
                current: Some(limit),
                maximum: Some(limit),
            },
        );
    }
    let ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI::V5))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self());
    if let Err(err) = ruleset {
        // Without Landlock the child still has no environment and reads only stdin.
        eprintln!("media reader: no Landlock: {err}");
    }
}
