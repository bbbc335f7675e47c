//! The text of a PDF, extracted in a child process (`pincer __pdf-text`): the parser
//! reads hostile files and may panic, loop or balloon on a crafted one, and this build
//! aborts on panic, so it never runs inside the gateway. The child has no files (Landlock,
//! where the kernel has it), no environment, limited memory and CPU time, and is killed
//! after `TIMEOUT`; it reads the PDF on stdin and writes one JSON line.

use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The hidden subcommand.
pub const SUBCOMMAND: &str = "__pdf-text";
/// How long one extraction may take.
const TIMEOUT: Duration = Duration::from_secs(20);
/// The child's memory and CPU-time limits.
const MAX_MEMORY: u64 = 1 << 30;
const MAX_CPU_SECS: u64 = 15;
/// The most text the child returns, in bytes (the message takes 100 KB of it).
const MAX_TEXT: usize = 200 * 1024;

/// What the child found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PdfText {
    pub pages: usize,
    pub text: String,
}

/// Extract the text of `bytes` in a child process of this binary.
pub async fn extract(bytes: &[u8]) -> Result<PdfText, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find pincer itself: {e}"))?;
    let mut child = tokio::process::Command::new(exe)
        .arg(SUBCOMMAND)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the PDF reader: {e}"))?;
    let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("cannot talk to the PDF reader".into());
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
        read.map_err(|e| format!("cannot read the PDF reader's answer: {e}"))?;
        let status = child
            .wait()
            .await
            .map_err(|e| format!("the PDF reader failed: {e}"))?;
        let answer: Result<PdfText, String> = serde_json::from_slice(&out)
            .map_err(|_| format!("the PDF reader stopped ({status})"))?;
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

/// The child: read a PDF on stdin, write `Result<PdfText, String>` as JSON on stdout.
pub fn child_main() -> std::process::ExitCode {
    confine();
    let mut bytes = Vec::new();
    let read = std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes);
    let answer: Result<PdfText, String> = match read {
        Err(e) => Err(format!("cannot read the PDF: {e}")),
        Ok(_) => text_of(&bytes),
    };
    let line = serde_json::to_string(&answer).unwrap_or_default();
    println!("{line}");
    std::process::ExitCode::SUCCESS
}

fn text_of(bytes: &[u8]) -> Result<PdfText, String> {
    let document =
        pdf_extract::Document::load_mem(bytes).map_err(|e| format!("not a readable PDF: {e}"))?;
    if document.is_encrypted() {
        return Err("it is encrypted".into());
    }
    let pages = document.get_pages().len();
    let mut text = pdf_extract::extract_text_from_mem(bytes)
        .map_err(|e| format!("no text could be extracted: {e}"))?;
    if text.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    Ok(PdfText { pages, text })
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
        eprintln!("pdf reader: no Landlock: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_not_a_pdf() {
        let err = text_of(b"%PDF-1.4 but then nothing").unwrap_err();
        assert!(err.contains("not a readable PDF"), "{err}");
    }
}
