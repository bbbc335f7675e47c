//! The workspace file tools: read_file, write_file, edit_file, list_dir. Every path is
//! normalised by `confine` and opened beneath the workspace at open time, so no
//! symlink, swapped folder or hard link reaches outside it; only regular files are
//! read or written, and never the prompt's own files.
//!
//! - `read`  — read_file, streamed line by line under a size cap
//! - `write` — write_file and edit_file

/// Refuse what an open really reached when it is one of the owner's private files and
/// the caller may not have it (a symlink inside the workspace led there).
pub(crate) fn check_reached(
    caller: &crate::tools::Caller,
    tool: &str,
    root: &Root,
    rel: &Rel,
    fd: std::os::fd::BorrowedFd<'_>,
) -> Result<(), ToolError> {
    if caller.full_access() {
        return Ok(());
    }
    match crate::tools::confine::reached(root, fd) {
        Some(real) => caller.may_reach(tool, rel.given(), &real),
        // Where it lies is unknown (no /proc): the name was checked already.
        None => Ok(()),
    }
}

#[cfg(test)]
mod attacks;
mod read;
#[cfg(test)]
mod tests;
mod write;

use crate::tools::Effects;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::{Rel, Root, tree};
use super::{Tool, ToolContext, ToolError, TypedTool};

pub(super) fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read::ReadFile),
        Arc::new(write::WriteFile),
        Arc::new(write::EditFile),
        Arc::new(ListDir),
    ]
}

/// Run blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    tool: &str,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::new(format!("{tool} failed: {err}")))?
}

struct ListDir;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListDirArgs {
    /// folder relative to the workspace; "." for its root
    path: String,
}

#[async_trait]
impl TypedTool for ListDir {
    type Args = ListDirArgs;
    const NAME: &'static str = "list_dir";
    const EFFECTS: Effects = Effects::READS_WORKSPACE
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "List a folder in the workspace (folders end with /).".into()
    }

    async fn run(&self, args: ListDirArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let given = args.path.as_str();
        let rel = Rel::parse(given)?;
        let workspace = ctx.workspace.clone();
        let caller = ctx.caller.clone();
        let names = blocking("list_dir", move || {
            let root = crate::tools::confine::root(&workspace)?;
            let dir = crate::tools::confine::open_dir(&root, &rel)?;
            check_reached(
                &caller,
                "list_dir",
                &root,
                &rel,
                std::os::fd::AsFd::as_fd(&dir),
            )?;
            tree::list(&root, &rel)
        })
        .await?;
        if names.is_empty() {
            return Ok(format!("{given} is empty"));
        }
        Ok(names.join("\n"))
    }
}
