//! Finding things in the workspace: `glob` (files by name pattern) and `grep` (lines by
//! regular expression). Both are read-only, bounded, and confined to the workspace:
//! they walk it by descriptors (`confine::tree`), never follow a symlink, and read only
//! regular files with one link.

use std::io::Read;
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use globset::GlobBuilder;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::{Rel, Root, tree};
use super::{Effects, Tool, ToolContext, ToolError, TypedTool};

/// Most paths glob lists.
const MAX_PATHS: usize = 500;
/// Most matching lines grep shows.
const MAX_MATCHES: usize = 200;
/// Files larger than this are not searched.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

pub(super) fn all() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(GlobTool), Arc::new(GrepTool)]
}

/// The folder (or file) to search: the `path` argument, else the workspace.
fn start(path: Option<&str>) -> Result<Rel, ToolError> {
    Ok(Rel::parse(path.unwrap_or("."))?)
}

/// Walk `rel` in the workspace on the blocking pool, once the caller may have where
/// it really leads (a folder link to the workspace's root, or into a private folder,
/// is refused to anyone but the owner in their own places).
async fn walk<T: Send + 'static>(
    tool: &'static str,
    ctx: &ToolContext,
    rel: Rel,
    work: impl FnOnce(&Root, &Rel) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let (workspace, caller) = (ctx.workspace.clone(), ctx.caller.clone());
    tokio::task::spawn_blocking(move || {
        let root = super::confine::root(&workspace)?;
        let flags = pincer_confine::OFlags::PATH | pincer_confine::OFlags::CLOEXEC;
        if let Ok(fd) = root.open_at(&rel, flags, pincer_confine::Mode::empty()) {
            super::fs::check_reached(&caller, tool, &root, &rel, std::os::fd::AsFd::as_fd(&fd))?;
        }
        work(&root, &rel)
    })
    .await
    .map_err(|e| ToolError::new(format!("{tool} failed: {e}")))?
}

struct GlobTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GlobArgs {
    pattern: String,
    /// folder to search in; default the workspace root
    path: Option<String>,
}

#[async_trait]
impl TypedTool for GlobTool {
    type Args = GlobArgs;
    const NAME: &'static str = "glob";
    const EFFECTS: Effects = Effects::READS_WORKSPACE
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "List workspace files whose path matches a glob such as **/*.md or notes/*.txt.".into()
    }

    async fn run(&self, args: GlobArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let pattern = args.pattern.as_str();
        let rel = start(args.path.as_deref())?;
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::new(format!("`{pattern}` is not a glob: {e}")))?
            .compile_matcher();
        let found = walk("glob", ctx, rel, move |root, rel| {
            let mut found = Vec::new();
            tree::walk(root, rel, &mut |entry| {
                if matcher.is_match(entry.below) {
                    found.push(entry.path.to_string());
                    if found.len() > MAX_PATHS {
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            })?;
            Ok(found)
        })
        .await?;
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

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GrepArgs {
    /// a regular expression (Rust syntax)
    pattern: String,
    /// file or folder; default the workspace root
    path: Option<String>,
}

#[async_trait]
impl TypedTool for GrepTool {
    type Args = GrepArgs;
    const NAME: &'static str = "grep";
    const EFFECTS: Effects = Effects::READS_WORKSPACE
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Search workspace text files for a regular expression; shows path:line: text.".into()
    }

    async fn run(&self, args: GrepArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let pattern = args.pattern.as_str();
        let regex = Regex::new(pattern).map_err(|e| {
            ToolError::new(format!(
                "`{pattern}` is not a valid regular expression: {e}"
            ))
        })?;
        let rel = start(args.path.as_deref())?;
        let (lines, more) = walk("grep", ctx, rel, move |root, rel| {
            let mut lines = Vec::new();
            let mut more = false;
            tree::walk(root, rel, &mut |entry| {
                // Big, special, hard-linked, binary and unreadable files are skipped.
                let Some(file) = entry.open(MAX_FILE_BYTES) else {
                    return ControlFlow::Continue(());
                };
                let mut text = String::new();
                if file.take(MAX_FILE_BYTES).read_to_string(&mut text).is_err() {
                    return ControlFlow::Continue(());
                }
                for (n, line) in text.lines().enumerate() {
                    if regex.is_match(line) {
                        if lines.len() == MAX_MATCHES {
                            more = true;
                            return ControlFlow::Break(());
                        }
                        let shown: String = line.chars().take(300).collect();
                        lines.push(format!("{}:{}: {shown}", entry.path, n + 1));
                    }
                }
                ControlFlow::Continue(())
            })?;
            Ok((lines, more))
        })
        .await?;
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
