//! The file tools against every attack that once worked, through the public pipeline
//! (`Registry::execute` with a default `Guard`): writing through a dangling symlink,
//! reading through a symlink or a folder swapped for one mid-read, FIFOs, hard links,
//! a 512 MB file, the prompt's own files and skills/. Permission rules that must match
//! what really runs are proved through the real binary in `tools.rs`.

use std::os::unix::fs::symlink;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

use pincer::tools::{Caller, Guard, Outcome, Registry, ToolContext};
use serde_json::{Value, json};

/// A workspace, a folder outside it holding `secret`, and the pipeline.
struct Setup {
    ws: tempfile::TempDir,
    out: tempfile::TempDir,
    ctx: ToolContext,
    tools: Registry,
    guard: Guard,
}

fn setup() -> Setup {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("secret"), "OUTSIDE SECRET\n").unwrap();
    let ctx = ToolContext {
        workspace: ws.path().to_path_buf(),
        origin: None,
        caller: Caller::owner(),
        taint: Default::default(),
        pictures: Default::default(),
        session: None,
        mode: None,
    };
    Setup {
        ws,
        out,
        ctx,
        tools: Registry::builtin(),
        guard: Guard::default(),
    }
}

impl Setup {
    async fn call(&self, tool: &str, args: Value) -> Outcome {
        self.tools
            .execute("call_1", tool, args, &self.ctx, &self.guard)
            .await
    }
}

fn refused(out: &Outcome, why: &str) {
    assert!(out.is_error, "not refused: {}", out.content);
    assert!(out.content.contains(why), "{}", out.content);
    assert!(!out.content.contains("OUTSIDE"), "leaked: {}", out.content);
}

/// A figure from /proc/self/status, in kB.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_first_lines_of_a_512_mb_file_takes_a_few_mb() {
    let s = setup();
    let path = s.ws.path().join("big.log");
    std::fs::write(&path, "line 1\nline 2\nline 3\nline 4\n").unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(512 * 1024 * 1024).unwrap(); // sparse: no disk used
    // Start the peak afresh where the kernel allows it (clear_refs 5 resets VmHWM).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_kb("VmHWM:").max(status_kb("VmRSS:"));
    let first = s
        .call("read_file", json!({"path": "big.log", "limit": 3}))
        .await;
    let all = s.call("read_file", json!({"path": "big.log"})).await;
    let grown_mb = status_kb("VmHWM:").saturating_sub(before) / 1024;
    assert!(
        first.content.starts_with(
            "     1\tline 1\n     2\tline 2\n     3\tline 3\n[lines 1-3 of a 512 MB file"
        ),
        "{}",
        first.content
    );
    assert!(!all.is_error, "{}", all.content);
    assert!(grown_mb <= 16, "reading grew the peak RSS by {grown_mb} MB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_out_dangling_or_not_lead_nowhere() {
    let s = setup();
    let (ws, out) = (s.ws.path(), s.out.path());
    symlink(out.join("planted"), ws.join("dangling")).unwrap();
    symlink(out, ws.join("out")).unwrap();
    symlink(out.join("secret"), ws.join("secret.txt")).unwrap();
    for (tool, args) in [
        ("write_file", json!({"path": "dangling", "content": "x"})),
        (
            "write_file",
            json!({"path": "out/new/file", "content": "x"}),
        ),
        ("read_file", json!({"path": "out/secret"})),
        ("read_file", json!({"path": "secret.txt"})),
        (
            "edit_file",
            json!({"path": "secret.txt", "old_text": "SECRET", "new_text": "x"}),
        ),
        ("list_dir", json!({"path": "out"})),
    ] {
        refused(&s.call(tool, args).await, "outside the workspace");
    }
    assert!(!out.join("planted").exists() && !out.join("new").exists());
    let grep = s.call("grep", json!({"pattern": "SECRET"})).await;
    assert_eq!(grep.content, "no lines match `SECRET`");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_symlink_in_a_loop_never_shows_outside_content() {
    let s = setup();
    std::fs::create_dir(s.ws.path().join("d")).unwrap();
    std::fs::write(s.ws.path().join("d/secret"), "inside\n").unwrap();
    symlink(s.out.path(), s.ws.path().join("alt")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = std::thread::spawn({
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        let (a, b) = (s.ws.path().join("d"), s.ws.path().join("alt"));
        move || {
            use rustix::fs::{CWD, RenameFlags, renameat_with};
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
            }
        }
    });
    while swaps.load(Ordering::Relaxed) == 0 {
        std::thread::yield_now();
    }
    let (mut inside, mut refusals) = (0, 0);
    // At least 400 reads, and on until both states of the folder were met.
    while inside + refusals < 400 || inside == 0 || refusals == 0 {
        assert!(inside + refusals < 100_000, "the race never ran");
        let out = s.call("read_file", json!({"path": "d/secret"})).await;
        assert!(!out.content.contains("OUTSIDE"), "leaked: {}", out.content);
        if out.is_error {
            refusals += 1;
        } else {
            assert_eq!(out.content, "     1\tinside\n");
            inside += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
}

#[test]
fn a_fifo_is_refused_at_once() {
    let s = setup();
    let mode = rustix::fs::Mode::from_raw_mode(0o600);
    let fifo = s.ws.path().join("pipe");
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, mode, 0).unwrap();
    let (done, finished) = mpsc::channel();
    // On its own thread: a read that blocks fails the deadline instead of hanging the run.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let read = runtime.block_on(s.call("read_file", json!({"path": "pipe"})));
        let write = runtime.block_on(s.call("write_file", json!({"path": "pipe", "content": "x"})));
        let _ = done.send((read, write));
    });
    let (read, write) = finished
        .recv_timeout(crate::common::PATIENCE)
        .expect("read_file blocked on a FIFO");
    refused(&read, "is a FIFO (named pipe), not a regular file");
    refused(&write, "not a regular file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_link_to_a_file_outside_is_refused() {
    let s = setup();
    std::fs::hard_link(s.out.path().join("secret"), s.ws.path().join("notes.txt")).unwrap();
    let why = "has other hard links; refused so a link cannot reach a file outside the workspace";
    refused(
        &s.call("read_file", json!({"path": "notes.txt"})).await,
        why,
    );
    let write = json!({"path": "notes.txt", "content": "overwritten"});
    refused(&s.call("write_file", write).await, why);
    assert_eq!(
        std::fs::read_to_string(s.out.path().join("secret")).unwrap(),
        "OUTSIDE SECRET\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_files_change_only_through_the_memory_tools_and_skills_ask_first() {
    let s = setup();
    let ws = s.ws.path();
    std::fs::create_dir(ws.join("memory")).unwrap();
    std::fs::write(ws.join("MEMORY.md"), "- likes tea\n").unwrap();
    symlink("MEMORY.md", ws.join("index.md")).unwrap();
    let why =
        "it changes only through the memory tools (memory_write / memory_forget) and the dream";
    for path in [
        "SOUL.md",
        "USER.md",
        "./MEMORY.md",
        "memory/../MEMORY.md",
        "memory/tea.md",
        "index.md",
    ] {
        let out = s
            .call("write_file", json!({"path": path, "content": "x"}))
            .await;
        refused(&out, why);
        let edit = json!({"path": path, "old_text": "tea", "new_text": "coffee"});
        assert!(s.call("edit_file", edit).await.is_error, "{path}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("MEMORY.md")).unwrap(),
        "- likes tea\n"
    );
    // skills/ is writable only with the owner's yes, and nobody can be asked here.
    let skill = json!({"path": "./skills/tea/SKILL.md", "content": "---\nname: tea\n---\n"});
    refused(
        &s.call("write_file", skill).await,
        "needs the owner's approval",
    );
    assert!(!ws.join("skills").exists());
}
