//! Finding things in the workspace: `glob` (files by name pattern) and `grep` (lines by
//! regular expression). Both are read-only, bounded, and confined to the workspace.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use globset::GlobBuilder;
use regex::Regex;
use serde_json::{Value, json};

use super::confine::{confine, display};
use super::{Tool, ToolContext, ToolError, string_arg};
use crate::provider::ToolSpec;

/// Most paths glob lists.
const MAX_PATHS: usize = 500;
/// Most matching lines grep shows.
const MAX_MATCHES: usize = 200;
/// Files larger than this are not searched.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(GlobTool), Arc::new(GrepTool)]
}

/// Every file under `root`, skipping `.git` and hidden folders' internals.
fn files(root: &Path) -> impl Iterator<Item = walkdir::DirEntry> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || e.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
}

struct GlobTool;

#[async_trait]
impl Tool for GlobTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".into(),
            description:
                "List workspace files whose path matches a glob such as **/*.md or notes/*.txt."
                    .into(),
            input_schema: json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "folder to search in; default the workspace root"}
            }, "required": ["pattern"]}),
        }
    }

    fn read_only(&self, _args: &Value) -> bool {
        true
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let pattern = string_arg(&args, "pattern")?;
        let root = confine(
            &ctx.workspace,
            args.get("path").and_then(Value::as_str).unwrap_or("."),
        )?;
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::new(format!("`{pattern}` is not a glob: {e}")))?
            .compile_matcher();
        let workspace = ctx.workspace.clone();
        let found = tokio::task::spawn_blocking(move || {
            let mut found = Vec::new();
            for entry in files(&root) {
                let relative = entry.path().strip_prefix(&root).unwrap_or(entry.path());
                if matcher.is_match(relative) {
                    found.push(display(&workspace, entry.path()));
                    if found.len() > MAX_PATHS {
                        break;
                    }
                }
            }
            found
        })
        .await
        .map_err(|e| ToolError::new(format!("glob failed: {e}")))?;
        Ok(match found.len() {
            0 => format!("no files match `{pattern}`"),
            n if n > MAX_PATHS => format!(
                "{}\n[more than {MAX_PATHS} matches; narrow the pattern]",
                found[..MAX_PATHS].join("\n")
            ),
            _ => found.join("\n"),
        })
    }
}

struct GrepTool;

#[async_trait]
impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description:
                "Search workspace text files for a regular expression; shows path:line: text."
                    .into(),
            input_schema: json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "a regular expression (Rust syntax)"},
                "path": {"type": "string", "description": "file or folder; default the workspace root"}
            }, "required": ["pattern"]}),
        }
    }

    fn read_only(&self, _args: &Value) -> bool {
        true
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let pattern = string_arg(&args, "pattern")?;
        let regex = Regex::new(pattern).map_err(|e| {
            ToolError::new(format!(
                "`{pattern}` is not a valid regular expression: {e}"
            ))
        })?;
        let root = confine(
            &ctx.workspace,
            args.get("path").and_then(Value::as_str).unwrap_or("."),
        )?;
        let workspace = ctx.workspace.clone();
        let (lines, more) = tokio::task::spawn_blocking(move || {
            let mut lines = Vec::new();
            for entry in files(&root) {
                if entry
                    .metadata()
                    .map(|m| m.len() > MAX_FILE_BYTES)
                    .unwrap_or(true)
                {
                    continue;
                }
                // Binary and unreadable files are skipped.
                let Ok(text) = std::fs::read_to_string(entry.path()) else {
                    continue;
                };
                for (n, line) in text.lines().enumerate() {
                    if regex.is_match(line) {
                        if lines.len() == MAX_MATCHES {
                            return (lines, true);
                        }
                        let shown: String = line.chars().take(300).collect();
                        lines.push(format!(
                            "{}:{}: {shown}",
                            display(&workspace, entry.path()),
                            n + 1
                        ));
                    }
                }
            }
            (lines, false)
        })
        .await
        .map_err(|e| ToolError::new(format!("grep failed: {e}")))?;
        if lines.is_empty() {
            return Ok(format!("no lines match `{pattern}`"));
        }
        let mut out = lines.join("\n");
        if more {
            out.push_str(&format!(
                "\n[stopped at {MAX_MATCHES} matches; narrow the pattern or the path]"
            ));
        }
        Ok(out)
    }
}
