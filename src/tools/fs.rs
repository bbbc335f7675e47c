//! The workspace file tools: read_file, write_file, edit_file, list_dir. All paths
//! go through `confine`, so none reaches outside the workspace.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::confine::{confine, display};
use super::{Tool, ToolContext, ToolError, count_arg, string_arg};
use crate::provider::ToolSpec;

/// Lines read_file returns when the model gives no limit.
const DEFAULT_READ_LINES: usize = 2000;

pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile),
        Arc::new(WriteFile),
        Arc::new(EditFile),
        Arc::new(ListDir),
    ]
}

fn spec(name: &str, description: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
    }
}

fn io_error(what: &str, rel: &str, err: std::io::Error) -> ToolError {
    let hint = match err.kind() {
        std::io::ErrorKind::NotFound => " (no such file; list_dir shows what exists)",
        std::io::ErrorKind::StorageFull => " (the disk is full)",
        _ => "",
    };
    ToolError::new(format!("cannot {what} `{rel}`: {err}{hint}"))
}

struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        spec(
            "read_file",
            "Read a text file in the workspace. Lines come numbered; use offset (1-based first line) and limit for long files.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "path relative to the workspace"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1}
            }, "required": ["path"]}),
        )
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let rel = string_arg(&args, "path")?;
        let offset = count_arg(&args, "offset")?.unwrap_or(1).max(1);
        let limit = count_arg(&args, "limit")?.unwrap_or(DEFAULT_READ_LINES);
        let path = confine(&ctx.workspace, rel)?;
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|e| io_error("read", rel, e))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| ToolError::new(format!("`{rel}` is not a UTF-8 text file")))?;
        let total = text.lines().count();
        let mut out = String::new();
        for (n, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
            out.push_str(&format!("{:>6}\t{line}\n", n + 1));
        }
        let shown_end = (offset - 1 + limit).min(total);
        if shown_end < total {
            out.push_str(&format!(
                "[lines {offset}-{shown_end} of {total}; use offset={} to read on]\n",
                shown_end + 1
            ));
        }
        if total == 0 {
            out.push_str("[empty file]\n");
        }
        Ok(out)
    }
}

struct WriteFile;

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        spec(
            "write_file",
            "Create or overwrite a file in the workspace with the given content (parent folders are created).",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            }, "required": ["path", "content"]}),
        )
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let rel = string_arg(&args, "path")?;
        let content = string_arg(&args, "content")?;
        let path = confine(&ctx.workspace, rel)?;
        if path.is_dir() {
            return Err(ToolError::new(format!("`{rel}` is a folder, not a file")));
        }
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| io_error("create the folder for", rel, e))?;
        }
        tokio::fs::write(&path, content)
            .await
            .map_err(|e| io_error("write", rel, e))?;
        Ok(format!(
            "wrote {} bytes to {}",
            content.len(),
            display(&ctx.workspace, &path)
        ))
    }
}

struct EditFile;

#[async_trait]
impl Tool for EditFile {
    fn spec(&self) -> ToolSpec {
        spec(
            "edit_file",
            "Replace exactly one occurrence of old_text with new_text in a workspace file. old_text must match exactly once; include surrounding lines to make it unique.",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"}
            }, "required": ["path", "old_text", "new_text"]}),
        )
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let old = string_arg(args, "old_text")?;
        if old.is_empty() {
            return Err(ToolError::new(
                "old_text is empty; give the exact text to replace",
            ));
        }
        if old == string_arg(args, "new_text")? {
            return Err(ToolError::new(
                "old_text and new_text are the same; nothing would change",
            ));
        }
        Ok(())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let rel = string_arg(&args, "path")?;
        let old = string_arg(&args, "old_text")?;
        let new = string_arg(&args, "new_text")?;
        let path = confine(&ctx.workspace, rel)?;
        let text = tokio::fs::read_to_string(&path)
            .await
            .map_err(|e| io_error("read", rel, e))?;
        match text.matches(old).count() {
            0 => Err(ToolError::new(format!(
                "old_text was not found in `{rel}`; read_file it and copy the text exactly"
            ))),
            1 => {
                let updated = text.replacen(old, new, 1);
                tokio::fs::write(&path, &updated)
                    .await
                    .map_err(|e| io_error("write", rel, e))?;
                Ok(format!("edited {}", display(&ctx.workspace, &path)))
            }
            n => Err(ToolError::new(format!(
                "old_text matches {n} places in `{rel}`; include more surrounding text so it matches once"
            ))),
        }
    }
}

struct ListDir;

#[async_trait]
impl Tool for ListDir {
    fn spec(&self) -> ToolSpec {
        spec(
            "list_dir",
            "List a folder in the workspace (folders end with /).",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "folder relative to the workspace; \".\" for its root"}
            }, "required": ["path"]}),
        )
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let rel = args.get("path").and_then(Value::as_str).unwrap_or(".");
        let path = confine(&ctx.workspace, rel)?;
        let mut reader = tokio::fs::read_dir(&path)
            .await
            .map_err(|e| io_error("list", rel, e))?;
        let mut names = Vec::new();
        while let Some(entry) = reader
            .next_entry()
            .await
            .map_err(|e| io_error("list", rel, e))?
        {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().await.map(|t| t.is_dir()).unwrap_or(false) {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        if names.is_empty() {
            return Ok(format!("{rel} is empty"));
        }
        Ok(names.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext {
            workspace: dir.path().to_path_buf(),
            origin: None,
            caller: crate::tools::Caller::owner(),
            taint: Default::default(),
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
        let out = tools.call("read_file", json!({}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("missing required argument(s): path"),
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
}
