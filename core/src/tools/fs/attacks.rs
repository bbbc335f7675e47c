//! Every way out of the workspace that was tried against the file tools, through the
//! tools themselves: symlinks out (dangling ones too), a folder swapped for a symlink
//! while reading, FIFOs, hard links, the prompt's own files, and skills/ by a side door.

use std::os::unix::fs::symlink;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::tools::{Caller, Guard, Outcome, Registry, ToolContext};
use pincer_confine::testing::Swapper;

struct Setup {
    ws: tempfile::TempDir,
    out: tempfile::TempDir,
    ctx: ToolContext,
}

/// A workspace, and a folder outside it holding `secret` ("OUTSIDE SECRET").
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
    Setup { ws, out, ctx }
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> Outcome {
    Registry::builtin().call(tool, args, ctx).await
}

fn refused(out: &Outcome, why: &str) {
    assert!(out.is_error, "not refused: {}", out.content);
    assert!(out.content.contains(why), "{}", out.content);
    assert!(!out.content.contains("OUTSIDE"), "leaked: {}", out.content);
}

#[tokio::test]
async fn writing_through_a_dangling_symlink_creates_nothing_outside() {
    let s = setup();
    symlink(s.out.path().join("planted"), s.ws.path().join("link")).unwrap();
    symlink(s.out.path().join("gone"), s.ws.path().join("dir")).unwrap();
    let out = call(
        &s.ctx,
        "write_file",
        json!({"path": "link", "content": "x"}),
    )
    .await;
    refused(&out, "outside the workspace");
    let out = call(
        &s.ctx,
        "write_file",
        json!({"path": "dir/a/b.txt", "content": "x"}),
    )
    .await;
    refused(&out, "outside the workspace");
    assert!(!s.out.path().join("planted").exists());
    assert!(!s.out.path().join("gone").exists());
    // A dangling symlink to a name inside makes that file.
    symlink("made.txt", s.ws.path().join("inner")).unwrap();
    let out = call(
        &s.ctx,
        "write_file",
        json!({"path": "inner", "content": "ok"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(s.ws.path().join("made.txt")).unwrap(),
        "ok"
    );
}

#[tokio::test]
async fn symlinks_out_are_refused_by_every_file_tool() {
    let s = setup();
    symlink(s.out.path(), s.ws.path().join("out")).unwrap();
    symlink(s.out.path().join("secret"), s.ws.path().join("secret.txt")).unwrap();
    for (tool, args) in [
        ("read_file", json!({"path": "out/secret"})),
        ("read_file", json!({"path": "secret.txt"})),
        ("write_file", json!({"path": "secret.txt", "content": "x"})),
        ("write_file", json!({"path": "out/new", "content": "x"})),
        (
            "edit_file",
            json!({"path": "secret.txt", "old_text": "OUTSIDE", "new_text": "x"}),
        ),
        ("list_dir", json!({"path": "out"})),
    ] {
        refused(&call(&s.ctx, tool, args).await, "outside the workspace");
    }
    let grep = call(&s.ctx, "grep", json!({"pattern": "OUTSIDE"})).await;
    assert_eq!(grep.content, "no lines match `OUTSIDE`");
    let glob = call(&s.ctx, "glob", json!({"pattern": "**/secret"})).await;
    assert_eq!(glob.content, "no files match `**/secret`");
    assert_eq!(
        std::fs::read_to_string(s.out.path().join("secret")).unwrap(),
        "OUTSIDE SECRET\n"
    );
    assert!(!s.out.path().join("new").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_symlink_while_reading_never_shows_outside_content() {
    let s = setup();
    std::fs::create_dir(s.ws.path().join("d")).unwrap();
    std::fs::write(s.ws.path().join("d/secret"), "inside\n").unwrap();
    symlink(s.out.path(), s.ws.path().join("alt")).unwrap();
    let swapper = Swapper::start(s.ws.path().join("d"), s.ws.path().join("alt"));
    while swapper.swaps() == 0 {
        std::thread::yield_now();
    }
    // One registry and guard for all the calls (building the scrubber takes a while).
    let (tools, guard) = (Registry::builtin(), Guard::default());
    let (mut inside, mut refusals) = (0, 0);
    // At least 400 reads, and on until both states of the folder were met.
    while inside + refusals < 400 || inside == 0 || refusals == 0 {
        assert!(inside + refusals < 100_000, "the race never ran");
        let (tool, args) = if (inside + refusals) % 2 == 0 {
            ("read_file", json!({"path": "d/secret"}))
        } else {
            ("grep", json!({"pattern": "SECRET|inside", "path": "d"}))
        };
        let out = tools.execute("call_1", tool, args, &s.ctx, &guard).await;
        assert!(
            !out.content.contains("OUTSIDE"),
            "{tool} leaked: {}",
            out.content
        );
        if out.is_error || out.content.starts_with("no lines") {
            refusals += 1;
        } else {
            assert!(out.content.contains("inside"), "{}", out.content);
            inside += 1;
        }
    }
}

#[test]
fn a_fifo_is_an_error_at_once_for_every_file_tool() {
    let s = setup();
    let fifo = s.ws.path().join("pipe");
    let mode = rustix::fs::Mode::from_raw_mode(0o600);
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, mode, 0).unwrap();
    let ctx = s.ctx.clone();
    let (done, finished) = mpsc::channel();
    // On its own thread, so a tool that blocks on the FIFO fails the deadline below
    // instead of hanging the test run.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let outs = runtime.block_on(async {
            let mut outs = Vec::new();
            for (tool, args) in [
                ("read_file", json!({"path": "pipe"})),
                ("write_file", json!({"path": "pipe", "content": "x"})),
                (
                    "edit_file",
                    json!({"path": "pipe", "old_text": "a", "new_text": "b"}),
                ),
                ("grep", json!({"pattern": "x", "path": "pipe"})),
                ("grep", json!({"pattern": "x"})),
            ] {
                outs.push((tool, call(&ctx, tool, args).await));
            }
            outs
        });
        let _ = done.send(outs);
    });
    let outs = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("a file tool blocked on a FIFO");
    for (tool, out) in &outs[..3] {
        assert!(out.is_error, "{tool}: {}", out.content);
        assert!(out.content.contains("FIFO"), "{tool}: {}", out.content);
        assert!(
            out.content.contains("not a regular file"),
            "{tool}: {}",
            out.content
        );
    }
    assert!(outs[3].1.is_error, "grep of a FIFO: {}", outs[3].1.content);
    assert_eq!(outs[4].1.content, "no lines match `x`");
}

#[tokio::test]
async fn a_hard_link_to_a_file_outside_is_refused() {
    let s = setup();
    std::fs::hard_link(s.out.path().join("secret"), s.ws.path().join("link")).unwrap();
    let why = "has other hard links; refused so a link cannot reach a file outside the workspace";
    for (tool, args) in [
        ("read_file", json!({"path": "link"})),
        ("write_file", json!({"path": "link", "content": "x"})),
        (
            "edit_file",
            json!({"path": "link", "old_text": "OUTSIDE", "new_text": "x"}),
        ),
    ] {
        refused(&call(&s.ctx, tool, args).await, why);
    }
    let grep = call(&s.ctx, "grep", json!({"pattern": "SECRET"})).await;
    assert_eq!(grep.content, "no lines match `SECRET`");
    assert_eq!(
        std::fs::read_to_string(s.out.path().join("secret")).unwrap(),
        "OUTSIDE SECRET\n"
    );
}

#[tokio::test]
async fn the_prompt_files_are_not_tool_writable() {
    let s = setup();
    let ws = s.ws.path();
    std::fs::create_dir(ws.join("memory")).unwrap();
    for name in ["SOUL.md", "USER.md", "MEMORY.md", "memory/tea.md"] {
        std::fs::write(ws.join(name), "kept\n").unwrap();
    }
    symlink("MEMORY.md", ws.join("notes.md")).unwrap();
    symlink("memory", ws.join("m")).unwrap();
    let why = "changes only through the memory tools (memory_write / memory_forget) and the dream";
    for path in [
        "SOUL.md",
        "USER.md",
        "MEMORY.md",
        "./MEMORY.md",
        "memory/../MEMORY.md",
        "memory/tea.md",
        "memory/new.md",
        "memory/deep/new.md",
        "notes.md",
        "m/tea.md",
        "m/new.md",
        "m/deep/new.md",
    ] {
        let out = call(&s.ctx, "write_file", json!({"path": path, "content": "x"})).await;
        assert!(
            out.is_error && out.content.contains(why),
            "{path}: {}",
            out.content
        );
        let args = json!({"path": path, "old_text": "kept", "new_text": "x"});
        let out = call(&s.ctx, "edit_file", args).await;
        assert!(out.is_error, "{path}: {}", out.content);
    }
    for name in ["SOUL.md", "USER.md", "MEMORY.md", "memory/tea.md"] {
        assert_eq!(std::fs::read_to_string(ws.join(name)).unwrap(), "kept\n");
    }
    assert!(!ws.join("memory/new.md").exists() && !ws.join("memory/deep").exists());
    let read = call(&s.ctx, "read_file", json!({"path": "MEMORY.md"})).await;
    assert_eq!(read.content, "     1\tkept\n", "reading them is fine");
}

#[tokio::test]
async fn skills_cannot_be_reached_through_a_symlink() {
    let s = setup();
    std::fs::create_dir(s.ws.path().join("skills")).unwrap();
    symlink("skills", s.ws.path().join("s")).unwrap();
    let args = json!({"path": "s/x/SKILL.md", "content": "---\nname: x\n---\n"});
    let out = call(&s.ctx, "write_file", args).await;
    assert!(
        out.is_error && out.content.contains("leads into skills/ through a symlink"),
        "{}",
        out.content
    );
    assert!(!s.ws.path().join("skills/x").exists());
}

/// A member given the reading tools, and a link a command left in the workspace back to
/// its root (`notes/up -> ..`): nothing of the owner's private files is read or listed
/// through it, by any of them.
#[tokio::test]
async fn a_member_reaches_no_private_file_through_a_link_to_the_root() {
    use crate::access::{Origin, Place};
    use pincer_config::{AccessConfig, Tier};
    let s = setup();
    let ws = s.ws.path();
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    std::fs::create_dir_all(ws.join("memory")).unwrap();
    std::fs::write(ws.join("USER.md"), "OWNER-PRIVATE MARK\n").unwrap();
    std::fs::write(ws.join("memory/cat.md"), "RECALL MARK\n").unwrap();
    std::fs::write(ws.join("notes/mine.md"), "shared MARK\n").unwrap();
    symlink("..", ws.join("notes/up")).unwrap();
    let access = AccessConfig {
        member_tools: vec![
            "read_file".into(),
            "grep".into(),
            "glob".into(),
            "list_dir".into(),
        ],
        ..AccessConfig::default()
    };
    let member = crate::tools::ToolPolicy::new(&access)
        .unwrap()
        .caller(Origin {
            sender: "telegram:7".into(),
            name: "Mo".into(),
            tier: Tier::Member,
            place: Place::Direct,
        });
    let ctx = ToolContext {
        caller: member,
        ..s.ctx.clone()
    };
    for (tool, args) in [
        ("grep", json!({"pattern": "MARK", "path": "notes/up"})),
        (
            "grep",
            json!({"pattern": "MARK", "path": "notes/up/memory"}),
        ),
        ("glob", json!({"pattern": "**/*.md", "path": "notes/up"})),
        ("list_dir", json!({"path": "notes/up"})),
        ("read_file", json!({"path": "notes/up/USER.md"})),
    ] {
        let out = call(&ctx, tool, args.clone()).await;
        assert!(out.is_error, "{tool} {args}: {}", out.content);
        assert!(
            !out.content.contains("OWNER-PRIVATE") && !out.content.contains("RECALL"),
            "{tool} {args}: {}",
            out.content
        );
    }
    let shared = call(&ctx, "grep", json!({"pattern": "MARK", "path": "notes"})).await;
    assert!(shared.content.contains("shared MARK"), "{}", shared.content);
}
