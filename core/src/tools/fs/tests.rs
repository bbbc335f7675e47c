//! Tests of the file tools: the round trip, the errors the model sees, and every way
//! out of the workspace that has been tried (symlinks, a folder swapped mid-read, FIFOs,
//! hard links, huge files, the prompt's own files).

use serde_json::{Value, json};

use super::*;
use crate::tools::Registry;

fn ctx() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext {
        workspace: dir.path().to_path_buf(),
        origin: None,
        caller: crate::tools::Caller::owner(),
        taint: Default::default(),
        pictures: Default::default(),
        session: None,
        mode: None,
    };
    (dir, ctx)
}

#[tokio::test]
async fn write_read_edit_list_round_trip() {
    let (_dir, ctx) = ctx();
    let tools = Registry::builtin();
    let out = tools
        .call(
            "write_file",
            json!({"path": "notes/a.md", "content": "one\ntwo\nthree\n"}),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    let read = tools
        .call(
            "read_file",
            json!({"path": "notes/a.md", "offset": 2, "limit": 1}),
            &ctx,
        )
        .await;
    assert_eq!(
        read.content,
        "     2\ttwo\n[lines 2-2 of 3; use offset=3 to read on]\n"
    );
    let edit = tools
        .call(
            "edit_file",
            json!({"path": "notes/a.md", "old_text": "two", "new_text": "2"}),
            &ctx,
        )
        .await;
    assert!(!edit.is_error, "{}", edit.content);
    let text = std::fs::read_to_string(ctx.workspace.join("notes/a.md")).unwrap();
    assert_eq!(text, "one\n2\nthree\n");
    let list = tools.call("list_dir", json!({"path": "."}), &ctx).await;
    assert_eq!(list.content, "notes/");
}

#[tokio::test]
async fn edit_refuses_ambiguous_missing_and_no_op_edits() {
    let (_dir, ctx) = ctx();
    std::fs::write(ctx.workspace.join("f"), "x x").unwrap();
    let tools = Registry::builtin();
    for (old, new, want) in [
        ("x", "y", "matches 2 places"),
        ("z", "y", "not found"),
        ("x", "x", "same"),
    ] {
        let out = tools
            .call(
                "edit_file",
                json!({"path": "f", "old_text": old, "new_text": new}),
                &ctx,
            )
            .await;
        assert!(
            out.is_error && out.content.contains(want),
            "{}",
            out.content
        );
    }
    assert_eq!(
        std::fs::read_to_string(ctx.workspace.join("f")).unwrap(),
        "x x"
    );
}

#[tokio::test]
async fn bad_arguments_and_escapes_are_errors_for_the_model() {
    let (_dir, ctx) = ctx();
    let tools = Registry::builtin();
    // serde's message, naming the tool and the field, as the model sees it.
    let out = tools.call("read_file", json!({}), &ctx).await;
    assert!(out.is_error);
    assert_eq!(
        out.content,
        "invalid arguments for read_file: missing field `path`; fix them and call again"
    );
    let out = tools.call("cat", json!({"path": 3}), &ctx).await;
    assert_eq!(
        out.content,
        "invalid arguments for read_file: `path`: invalid type: integer `3`, expected a string; fix them and call again"
    );
    let out = tools
        .call(
            "todo",
            json!({"items": [{"text": "a"}, {"done": true}]}),
            &ctx,
        )
        .await;
    assert!(
        out.is_error && out.content.contains("`items[1]`: missing field `text`"),
        "{}",
        out.content
    );
    let out = tools
        .call("read_file", json!({"path": "a", "offset": 0}), &ctx)
        .await;
    assert!(
        out.is_error
            && out
                .content
                .starts_with("invalid arguments for read_file: `offset`"),
        "{}",
        out.content
    );
    let out = tools
        .call("read_file", json!({"path": "a", "lines": 3}), &ctx)
        .await;
    assert!(
        out.is_error && out.content.contains("unknown field `lines`"),
        "{}",
        out.content
    );
    let out = tools
        .call("read_file", json!({"path": "../../etc/passwd"}), &ctx)
        .await;
    assert!(out.is_error && out.content.contains("outside the workspace"));
    let out = tools
        .call("write_file", Value::String("{not json".into()), &ctx)
        .await;
    assert!(out.is_error && out.content.contains("not valid JSON"));
    let out = tools.call("nope", json!({}), &ctx).await;
    assert!(out.is_error && out.content.contains("unknown tool"));
}

#[test]
fn tools_are_sorted_by_name() {
    let names: Vec<String> = Registry::builtin()
        .specs()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "edit_file",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "skill",
            "todo",
            "write_file"
        ]
    );
}

#[tokio::test]
async fn a_file_over_the_cap_is_read_up_to_the_lines_asked_for() {
    let (_dir, ctx) = ctx();
    let path = ctx.workspace.join("big.log");
    std::fs::write(&path, "one\ntwo\nthree\nfour\n").unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(read::MAX_READ_BYTES + 1024 * 1024).unwrap();
    let tools = Registry::builtin();
    let read = tools
        .call(
            "read_file",
            json!({"path": "big.log", "offset": 2, "limit": 2}),
            &ctx,
        )
        .await;
    assert_eq!(
        read.content,
        "     2\ttwo\n     3\tthree\n[lines 2-3 of a 11 MB file (read_file stops at the lines asked for in files over 10 MB); use offset=4 to read on]\n"
    );
    // Past the lines in the first 10 MB: the note says how to get at the rest.
    let read = tools
        .call("read_file", json!({"path": "big.log", "offset": 9}), &ctx)
        .await;
    assert!(
        read.content.contains("reads only the first 10 MB") && read.content.contains("tail"),
        "{}",
        read.content
    );
    let edit = tools
        .call(
            "edit_file",
            json!({"path": "big.log", "old_text": "one", "new_text": "1"}),
            &ctx,
        )
        .await;
    assert!(
        edit.is_error && edit.content.contains("edits files up to 10 MB"),
        "{}",
        edit.content
    );
}

#[tokio::test]
async fn long_lines_are_cut_and_folders_are_not_files() {
    let (_dir, ctx) = ctx();
    let long = "x".repeat(3 * 1024 * 1024);
    std::fs::write(ctx.workspace.join("wide.txt"), format!("{long}\nshort\r\n")).unwrap();
    std::fs::create_dir(ctx.workspace.join("notes")).unwrap();
    let tools = Registry::builtin();
    // The tool itself: through the registry the result would go to a file.
    let read = read::ReadFile
        .call(json!({"path": "wide.txt"}), &ctx)
        .await
        .unwrap();
    let lines: Vec<&str> = read.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].ends_with("x [… line cut at 1 MB]"));
    assert_eq!(
        lines[0].len(),
        "     1\t".len() + 1024 * 1024 + " [… line cut at 1 MB]".len()
    );
    assert_eq!(lines[1], "     2\tshort");
    let read = tools
        .call("read_file", json!({"path": "notes"}), &ctx)
        .await;
    assert!(
        read.is_error && read.content.contains("is a folder"),
        "{}",
        read.content
    );
    let write = tools
        .call("write_file", json!({"path": "notes", "content": "x"}), &ctx)
        .await;
    assert!(
        write.is_error && write.content.contains("is a folder"),
        "{}",
        write.content
    );
    let list = tools
        .call("list_dir", json!({"path": "wide.txt"}), &ctx)
        .await;
    assert!(
        list.is_error && list.content.contains("not a folder"),
        "{}",
        list.content
    );
}
