//! The confined child process that reads hostile files: PDFs (`pincer __pdf-text`) and
//! pictures (`pincer __image-scale`). A parser may panic, loop or balloon on a crafted
//! file, and this build aborts on panic, so none of them runs inside the gateway: the
//! child has no files (Landlock, where the kernel has it), no environment, limited
//! memory and CPU time, is killed after `TIMEOUT`, reads the file on stdin and writes
//! one JSON line. Its memory is the child's, returned whole when it exits.

use std::fmt::Display;
use std::process::{ExitStatus, Stdio};
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
        answer(super::pdf::text_of(bytes))
    }),
    (super::image::SUBCOMMAND, |bytes| {
        answer(super::image::for_model(bytes))
    }),
];

/// The child's answer line: `{"Ok": …}`, or `{"Err": "<its words>"}` (what `run` reads).
fn answer<T: Serialize, E: Display>(result: Result<T, E>) -> String {
    serde_json::to_string(&result.map_err(|e| e.to_string())).unwrap_or_default()
}

/// Why a file was not read in a child: the child's words about the file, or what went
/// wrong running the child.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The child read the file and refused it ("not a readable PDF: …").
    #[error("{0}")]
    Refused(String),
    #[error("the {0} reader is shut down")]
    ShutDown(&'static str),
    #[error("cannot find pincer itself: {0}")]
    NoExe(std::io::Error),
    #[error("cannot start the {what} reader: {source}")]
    Start {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("cannot talk to the {0} reader")]
    NoPipe(&'static str),
    #[error("cannot read the {what} reader's answer: {source}")]
    Answer {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("the {what} reader failed: {source}")]
    Wait {
        what: &'static str,
        source: std::io::Error,
    },
    /// It ended without an answer (killed at a limit, or crashed).
    #[error("the {what} reader stopped ({status})")]
    Stopped {
        what: &'static str,
        status: ExitStatus,
    },
    #[error("reading it took longer than {}s", TIMEOUT.as_secs())]
    TooSlow,
}

/// `pincer <subcommand>` when it is one of the children: run it and give its exit
/// code; `None` for any other command line.
pub fn entry() -> Option<std::process::ExitCode> {
    let first = std::env::args_os().nth(1)?;
    let (_, job) = JOBS.iter().find(|(name, _)| first == *name)?;
    confine();
    let mut bytes = Vec::new();
    let line = match std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes) {
        Err(e) => answer::<(), _>(Err(format!("cannot read the file: {e}"))),
        Ok(_) => job(&bytes),
    };
    println!("{line}");
    Some(std::process::ExitCode::SUCCESS)
}

/// Run `subcommand` of this binary on `bytes` and read its answer.
pub(super) async fn run<T: DeserializeOwned>(
    subcommand: &str,
    what: &'static str,
    bytes: &[u8],
) -> Result<T, ReadError> {
    let _permit = RUNNING
        .acquire()
        .await
        .map_err(|_| ReadError::ShutDown(what))?;
    let exe = std::env::current_exe().map_err(ReadError::NoExe)?;
    let mut child = tokio::process::Command::new(exe)
        .arg(subcommand)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| ReadError::Start { what, source })?;
    let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ReadError::NoPipe(what));
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
        read.map_err(|source| ReadError::Answer { what, source })?;
        let status = child
            .wait()
            .await
            .map_err(|source| ReadError::Wait { what, source })?;
        // The line `answer` wrote: the child's error is its words, as text.
        let answer: Result<T, String> =
            serde_json::from_slice(&out).map_err(|_| ReadError::Stopped { what, status })?;
        answer.map_err(ReadError::Refused)
    };
    match tokio::time::timeout(TIMEOUT, work).await {
        Ok(result) => result,
        Err(_) => Err(ReadError::TooSlow),
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
