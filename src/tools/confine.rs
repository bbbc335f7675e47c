//! Workspace confinement for file tools: every path the model gives is relative to
//! the workspace, and after resolving `..` and symlinks it must still be inside it.
//! Absolute paths, escapes through `..`, and symlinks that point out are refused.

use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// Resolve `rel` inside `workspace`; the target itself need not exist yet.
pub fn confine(workspace: &Path, rel: &str) -> Result<PathBuf, ToolError> {
    let rel = rel.trim();
    let given = Path::new(if rel.is_empty() { "." } else { rel });
    if given.is_absolute() || given.has_root() {
        return Err(ToolError::new(format!(
            "`{rel}` is an absolute path; give a path relative to the workspace"
        )));
    }
    let root = workspace.canonicalize().map_err(|err| {
        ToolError::new(format!(
            "the workspace {} is not usable: {err}",
            workspace.display()
        ))
    })?;
    let mut lexical = root.clone();
    for component in given.components() {
        match component {
            Component::Normal(part) => lexical.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if lexical == root || !lexical.pop() {
                    return Err(outside(rel));
                }
            }
            Component::Prefix(_) | Component::RootDir => return Err(outside(rel)),
        }
    }
    // Resolve symlinks on the longest prefix that exists, then re-append the rest.
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return Err(outside(rel)),
        }
    }
    let mut resolved = existing
        .canonicalize()
        .map_err(|err| ToolError::new(format!("cannot resolve `{rel}`: {err}")))?;
    if !resolved.starts_with(&root) {
        return Err(outside(rel));
    }
    for name in rest.iter().rev() {
        resolved.push(name);
    }
    Ok(resolved)
}

fn outside(rel: &str) -> ToolError {
    ToolError::new(format!(
        "`{rel}` is outside the workspace; file tools only reach files inside it"
    ))
}

/// The path as the model should see it: relative to the workspace.
pub fn display(workspace: &Path, path: &Path) -> String {
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    path.strip_prefix(&root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir(ws.join("notes")).unwrap();
        let root = ws.canonicalize().unwrap();
        assert_eq!(confine(ws, "notes/a.md").unwrap(), root.join("notes/a.md"));
        assert_eq!(confine(ws, "notes/../b.md").unwrap(), root.join("b.md"));
        assert_eq!(
            confine(ws, "new/dir/c.md").unwrap(),
            root.join("new/dir/c.md")
        );
        assert_eq!(confine(ws, "").unwrap(), root);
        for bad in ["/etc/passwd", "../x", "notes/../../x", "a/../../x"] {
            let err = confine(ws, bad).unwrap_err().to_string();
            assert!(err.contains("workspace"), "{bad}: {err}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside_dir = tempfile::tempdir().unwrap();
        std::fs::write(outside_dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside_dir.path(), dir.path().join("link")).unwrap();
        let err = confine(dir.path(), "link/secret").unwrap_err().to_string();
        assert!(err.contains("outside the workspace"), "{err}");
        assert!(confine(dir.path(), "link/new-file").is_err());
    }
}
