//! The result budget: a tool result over its tool's cap (`MAX_RESULT_BYTES` unless the
//! tool says otherwise) is saved whole to a file
//! in the workspace (`tool-output/`, not tracked by the memory repository), and the
//! model gets its head and tail with the path to read the rest. The file is made
//! beneath the workspace with no link followed at all (the gateway writes it: a
//! `tool-output` symlink cannot send it anywhere, not even elsewhere inside).

use std::io::Write;
use std::path::Path;

use super::ToolContext;
use super::confine::{Rel, Root};
use crate::store::now_ms;

/// How much of the head and of the tail an oversized result keeps inline.
const HEAD: usize = 8 * 1024;
const TAIL: usize = 2 * 1024;

pub(super) async fn fit(tool: &str, content: String, cap: usize, ctx: &ToolContext) -> String {
    if content.len() <= cap {
        return content;
    }
    let name = format!("{tool}-{}.txt", now_ms());
    let head = cut_at(&content, HEAD.min(cap * 4 / 5), true).to_string();
    let tail = cut_at(&content, TAIL.min(cap / 5), false).to_string();
    let (workspace, path) = (ctx.workspace.clone(), format!("tool-output/{name}"));
    let len = content.len();
    let saved = tokio::task::spawn_blocking(move || save(&workspace, &path, &content))
        .await
        .unwrap_or_else(|err| Err(NotSaved::Stopped(err)));
    let note = match saved {
        Ok(()) => format!(
            "[{len} bytes in all; the full output is in tool-output/{name} — read_file it with offset/limit]"
        ),
        Err(err) => format!("[{len} bytes in all; the rest could not be saved: {err}]"),
    };
    format!("{head}\n[…]\n{tail}\n{note}")
}

/// Why an oversized result was not saved whole (the preview says so).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotSaved {
    #[error("{0}")]
    Workspace(std::io::Error),
    #[error(transparent)]
    Path(#[from] pincer_confine::RelError),
    /// Making or writing the file beneath the workspace was refused (a link or a file
    /// in the way).
    #[error(
        "{path}: {}; remove what stands there",
        pincer_confine::explain(source)
    )]
    Refused {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Stopped(tokio::task::JoinError),
}

/// Save `content` as the new file `path` of the workspace (made beneath it, through
/// no link).
pub(crate) fn save(workspace: &Path, path: &str, content: &str) -> Result<(), NotSaved> {
    let root = Root::open(workspace).map_err(NotSaved::Workspace)?;
    let rel = Rel::parse(path)?;
    let refused = |source: std::io::Error| {
        let why = pincer_confine::explain(&source);
        tracing::warn!(path, "a tool result was not saved in the workspace: {why}");
        NotSaved::Refused {
            path: path.to_string(),
            source,
        }
    };
    let mut file = pincer_confine::gateway::create_new(&root, &rel).map_err(refused)?;
    file.write_all(content.as_bytes()).map_err(refused)
}

/// The first (or last) `n` bytes, on a character boundary.
fn cut_at(text: &str, n: usize, head: bool) -> &str {
    if head {
        let mut end = n.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        &text[..end]
    } else {
        let mut start = text.len().saturating_sub(n);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        &text[start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::MAX_RESULT_BYTES;

    #[tokio::test]
    async fn oversized_results_are_saved_and_previewed() {
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
        let big = format!("START{}END", "é".repeat(40_000));
        let shown = fit("grep", big.clone(), MAX_RESULT_BYTES, &ctx).await;
        assert!(
            shown.len() < MAX_RESULT_BYTES && shown.starts_with("START") && shown.contains("END")
        );
        let saved: Vec<_> = std::fs::read_dir(dir.path().join("tool-output"))
            .unwrap()
            .collect();
        assert_eq!(saved.len(), 1);
        let path = saved[0].as_ref().unwrap().path();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), big);
        assert!(shown.contains(&format!(
            "tool-output/{}",
            path.file_name().unwrap().to_string_lossy()
        )));
        assert_eq!(
            fit("x", "small".into(), MAX_RESULT_BYTES, &ctx).await,
            "small"
        );
        let tight = fit("x", "y".repeat(1000), 100, &ctx).await;
        assert!(
            tight.starts_with(&"y".repeat(80)) && !tight.starts_with(&"y".repeat(81)),
            "{tight}"
        );
    }

    #[tokio::test]
    async fn a_tool_output_symlink_cannot_send_the_saved_result_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("tool-output")).unwrap();
        let ctx = ToolContext {
            workspace: dir.path().to_path_buf(),
            origin: None,
            caller: crate::tools::Caller::owner(),
            taint: Default::default(),
            pictures: Default::default(),
            session: None,
            mode: None,
        };
        let shown = fit("grep", "z".repeat(50_000), MAX_RESULT_BYTES, &ctx).await;
        assert!(
            shown.contains("could not be saved: tool-output/")
                && shown.contains("a symlink stands in the way"),
            "{shown}"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
