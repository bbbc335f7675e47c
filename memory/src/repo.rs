//! The workspace's git repository, which tracks only the curated memory: MEMORY.md,
//! SOUL.md, USER.md and `memory/*.md` (its `.gitignore` excludes everything else —
//! daily logs, the inbox, tool output, scratch files). Created with its `.gitignore`
//! on first use. Commits are signed with a fixed identity (machines often have no git
//! identity configured) and their messages are written from the real diff. git2 is
//! blocking: callers in async code run this on a blocking thread.

use std::path::{Path, PathBuf};

use git2::{DiffFormat, DiffOptions, ErrorCode, Oid, Patch, Repository, Signature, Tree};

use crate::entry::Entry;
use crate::{MemoryError, atomic};

/// Everything but the curated memory stays out of the repository.
pub const GITIGNORE: &str = "# Pincer's memory repository tracks only the curated memory files.\n/*\n!/.gitignore\n!/MEMORY.md\n!/SOUL.md\n!/USER.md\n!/memory/\n/memory/*\n!/memory/*.md\n";

/// A commit made by Pincer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub id: String,
    pub message: String,
    /// One line per changed file ("created memory/tea.md (+5): likes tea").
    pub changes: Vec<String>,
}

/// One revision in `pincer memory log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    pub id: String,
    /// Unix seconds.
    pub time: i64,
    pub message: String,
    /// The revision before it (what `restore` would go back to).
    pub parent: Option<String>,
}

pub struct Repo {
    repo: Repository,
    root: PathBuf,
}

fn git(err: git2::Error) -> MemoryError {
    MemoryError::Git(err.message().to_string())
}

/// Whether the repository tracks this path (relative, `/`-separated).
pub fn is_tracked(path: &str) -> bool {
    matches!(path, ".gitignore" | "MEMORY.md" | "SOUL.md" | "USER.md")
        || path.strip_prefix("memory/").is_some_and(|rest| {
            rest.ends_with(".md") && !rest.contains('/') && !rest.starts_with('.')
        })
}

fn signature() -> Result<Signature<'static>, MemoryError> {
    Signature::now("Pincer", "pincer@localhost").map_err(git)
}

impl Repo {
    /// Open the workspace's repository, creating it (with `.gitignore` and a first
    /// commit of the memory as it is) on first use.
    pub fn open(root: &Path) -> Result<Repo, MemoryError> {
        match Repository::open(root) {
            Ok(repo) => {
                let repo = Repo {
                    repo,
                    root: root.to_path_buf(),
                };
                if !root.join(".gitignore").exists() {
                    atomic::write(&root.join(".gitignore"), GITIGNORE)?;
                }
                Ok(repo)
            }
            Err(err) if err.code() == ErrorCode::NotFound => {
                std::fs::create_dir_all(root).map_err(|source| MemoryError::Write {
                    path: root.to_path_buf(),
                    source,
                })?;
                let repo = Repo {
                    repo: Repository::init(root).map_err(git)?,
                    root: root.to_path_buf(),
                };
                atomic::write(&root.join(".gitignore"), GITIGNORE)?;
                repo.commit("Start the memory repository")?;
                Ok(repo)
            }
            Err(err) => Err(git(err)),
        }
    }

    /// The tracked files that exist on disk.
    fn on_disk(&self) -> Vec<String> {
        let mut paths: Vec<String> = [".gitignore", "MEMORY.md", "SOUL.md", "USER.md"]
            .into_iter()
            .filter(|p| self.root.join(p).is_file())
            .map(str::to_string)
            .collect();
        if let Ok(entries) = std::fs::read_dir(self.root.join("memory")) {
            for entry in entries.filter_map(Result::ok) {
                let path = format!("memory/{}", entry.file_name().to_string_lossy());
                if is_tracked(&path) && entry.path().is_file() {
                    paths.push(path);
                }
            }
        }
        paths.sort();
        paths
    }

    fn head_tree(&self) -> Result<Option<Tree<'_>>, MemoryError> {
        match self.repo.head() {
            Ok(head) => Ok(Some(head.peel_to_tree().map_err(git)?)),
            Err(err) if matches!(err.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => {
                Ok(None)
            }
            Err(err) => Err(git(err)),
        }
    }

    /// The id of HEAD (none before the first commit).
    pub fn head(&self) -> Result<Option<String>, MemoryError> {
        Ok(match self.repo.head() {
            Ok(head) => head.target().map(|id| id.to_string()),
            Err(_) => None,
        })
    }

    /// A tracked file's text as of HEAD.
    pub fn head_text(&self, path: &str) -> Result<Option<String>, MemoryError> {
        let Some(tree) = self.head_tree()? else {
            return Ok(None);
        };
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        let blob = self.repo.find_blob(entry.id()).map_err(git)?;
        Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
    }

    /// Tracked files whose content on disk differs from HEAD (added, changed, removed).
    pub fn changed(&self) -> Result<Vec<String>, MemoryError> {
        let tree = self.head_tree()?;
        let mut paths = self.on_disk();
        if let Some(tree) = &tree {
            for path in tracked_in(tree) {
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
        let mut changed = Vec::new();
        for path in paths {
            let at_head = tree
                .as_ref()
                .and_then(|t| t.get_path(Path::new(&path)).ok())
                .map(|e| e.id());
            let on_disk = match std::fs::read(self.root.join(&path)) {
                Ok(bytes) => Some(Oid::hash_object(git2::ObjectType::Blob, &bytes).map_err(git)?),
                Err(_) => None,
            };
            if at_head != on_disk {
                changed.push(path);
            }
        }
        changed.sort();
        Ok(changed)
    }

    /// Commit the tracked files as they are on disk. `None` when nothing changed. The
    /// message is `title`, a count of what changed, and one line per file.
    pub fn commit(&self, title: &str) -> Result<Option<Commit>, MemoryError> {
        let mut index = self.repo.index().map_err(git)?;
        let on_disk = self.on_disk();
        let staged: Vec<String> = index
            .iter()
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .filter(|p| is_tracked(p) && !on_disk.contains(p))
            .collect();
        for path in staged {
            index.remove_path(Path::new(&path)).map_err(git)?;
        }
        for path in &on_disk {
            index.add_path(Path::new(path)).map_err(git)?;
        }
        index.write().map_err(git)?;
        let tree_id = index.write_tree().map_err(git)?;
        let tree = self.repo.find_tree(tree_id).map_err(git)?;
        let parent = match self.repo.head() {
            Ok(head) => Some(head.peel_to_commit().map_err(git)?),
            Err(_) => None,
        };
        let parent_tree = parent.as_ref().map(|p| p.tree()).transpose().map_err(git)?;
        if parent_tree.as_ref().map(|t| t.id()) == Some(tree_id) {
            return Ok(None);
        }
        let changes = self.describe(parent_tree.as_ref(), &tree)?;
        let message = message(title, &changes);
        let sig = signature()?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let id = self
            .repo
            .commit(Some("HEAD"), &sig, &sig, &message, &tree, &parents)
            .map_err(git)?;
        Ok(Some(Commit {
            id: id.to_string(),
            message,
            changes,
        }))
    }

    /// One line per changed file between two trees.
    fn describe(&self, old: Option<&Tree<'_>>, new: &Tree<'_>) -> Result<Vec<String>, MemoryError> {
        let mut options = DiffOptions::new();
        let diff = self
            .repo
            .diff_tree_to_tree(old, Some(new), Some(&mut options))
            .map_err(git)?;
        let mut lines = Vec::new();
        for (n, delta) in diff.deltas().enumerate() {
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let (_, added, removed) = match Patch::from_diff(&diff, n).map_err(git)? {
                Some(patch) => patch.line_stats().map_err(git)?,
                None => (0, 0, 0),
            };
            let counts = match (added, removed) {
                (0, 0) => String::new(),
                (a, 0) => format!(" (+{a})"),
                (0, r) => format!(" (-{r})"),
                (a, r) => format!(" (+{a} -{r})"),
            };
            let line = match delta.status() {
                git2::Delta::Added => {
                    let about = self.described(delta.new_file().id(), &path);
                    format!("created {path}{counts}{about}")
                }
                git2::Delta::Deleted => format!("deleted {path}{counts}"),
                _ => {
                    let about = self.described(delta.new_file().id(), &path);
                    format!("updated {path}{counts}{about}")
                }
            };
            lines.push(line);
        }
        Ok(lines)
    }

    /// ": <description>" of a typed memory file's blob, for commit messages.
    fn described(&self, blob: Oid, path: &str) -> String {
        let Some(slug) = path
            .strip_prefix("memory/")
            .and_then(|p| p.strip_suffix(".md"))
        else {
            return String::new();
        };
        let Ok(blob) = self.repo.find_blob(blob) else {
            return String::new();
        };
        let entry = Entry::parse(slug, &String::from_utf8_lossy(blob.content()));
        if entry.description.is_empty() {
            String::new()
        } else {
            format!(": {}", entry.description)
        }
    }

    /// The newest `limit` revisions, newest first.
    pub fn log(&self, limit: usize) -> Result<Vec<Revision>, MemoryError> {
        if self.head()?.is_none() {
            return Ok(Vec::new());
        }
        let mut walk = self.repo.revwalk().map_err(git)?;
        walk.push_head().map_err(git)?;
        let mut out = Vec::new();
        for id in walk.take(limit) {
            let commit = self.repo.find_commit(id.map_err(git)?).map_err(git)?;
            out.push(Revision {
                id: commit.id().to_string(),
                time: commit.time().seconds(),
                message: commit.message().unwrap_or_default().trim_end().to_string(),
                parent: commit.parent_id(0).ok().map(|p| p.to_string()),
            });
        }
        Ok(out)
    }

    /// The commit `rev` names (an id, a short id, or any revision git understands).
    fn revision(&self, rev: &str) -> Result<git2::Commit<'_>, MemoryError> {
        self.repo
            .revparse_single(rev)
            .and_then(|o| o.peel_to_commit())
            .map_err(|_| {
                MemoryError::Invalid(format!(
                    "no revision `{rev}` in the memory repository; `pincer memory log` lists them"
                ))
            })
    }

    /// What revision `rev` changed: its unified diff (patch text, as `git show` prints
    /// it) against its parent, or against nothing for the first revision.
    pub fn diff(&self, rev: &str) -> Result<String, MemoryError> {
        let commit = self.revision(rev)?;
        let tree = commit.tree().map_err(git)?;
        let parent = match commit.parent(0) {
            Ok(parent) => Some(parent.tree().map_err(git)?),
            Err(_) => None,
        };
        let diff = self
            .repo
            .diff_tree_to_tree(parent.as_ref(), Some(&tree), Some(&mut DiffOptions::new()))
            .map_err(git)?;
        let mut text = String::new();
        diff.print(DiffFormat::Patch, |_, _, line| {
            // Content lines carry their marker apart; headers and hunk lines carry it in.
            if matches!(line.origin(), '+' | '-' | ' ') {
                text.push(line.origin());
            }
            text.push_str(&String::from_utf8_lossy(line.content()));
            true
        })
        .map_err(git)?;
        Ok(text)
    }

    /// Put the memory files back as they were at `rev`, as a new commit. Uncommitted
    /// edits are committed first, so nothing is lost. `None` when they already are.
    pub fn restore(&self, rev: &str) -> Result<Option<Commit>, MemoryError> {
        let target = self.revision(rev)?;
        let id = target.id().to_string();
        let short = short(&id);
        self.commit("Save edits made since the last commit, before a restore")?;
        let tree = target.tree().map_err(git)?;
        let mut paths = tracked_in(&tree);
        for path in self.on_disk() {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        for path in paths.iter().filter(|p| p.as_str() != ".gitignore") {
            let file = self.root.join(path);
            match tree.get_path(Path::new(path)) {
                Ok(entry) => {
                    let blob = self.repo.find_blob(entry.id()).map_err(git)?;
                    atomic::write(&file, &String::from_utf8_lossy(blob.content()))?;
                }
                Err(_) => atomic::remove(&file)?,
            }
        }
        self.commit(&format!("Restore memory as of {short}"))
    }
}

/// The tracked paths in a tree.
fn tracked_in(tree: &Tree<'_>) -> Vec<String> {
    let mut paths = Vec::new();
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            let path = format!("{dir}{}", entry.name().unwrap_or_default());
            if is_tracked(&path) {
                paths.push(path);
            }
        }
        git2::TreeWalkResult::Ok
    });
    paths
}

/// The first 7 characters of a revision id.
pub fn short(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

fn message(title: &str, changes: &[String]) -> String {
    let count = |verb: &str| changes.iter().filter(|c| c.starts_with(verb)).count();
    let counts: Vec<String> = [
        ("created", "created"),
        ("updated", "updated"),
        ("deleted", "deleted"),
    ]
    .iter()
    .filter_map(|(verb, word)| {
        let n = count(verb);
        (n > 0).then(|| format!("{n} {word}"))
    })
    .collect();
    format!("{title}: {}\n\n{}\n", counts.join(", "), changes.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_tracks_only_curated_memory_and_describes_its_commits() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("memory/logs")).unwrap();
        std::fs::write(root.join("USER.md"), "Ana\n").unwrap();
        std::fs::write(root.join("notes.txt"), "scratch").unwrap();
        std::fs::write(root.join("memory/logs/2026-11-22.md"), "- log").unwrap();
        let repo = Repo::open(root).unwrap();
        let first = repo.log(10).unwrap();
        assert_eq!(first.len(), 1);
        assert!(first[0].message.contains("created USER.md"));
        assert!(
            repo.changed().unwrap().is_empty(),
            "logs and scratch are ignored"
        );
        std::fs::write(
            root.join("memory/tea.md"),
            "---\nname: tea\ndescription: likes green tea\ntype: user\n---\nGreen.\n",
        )
        .unwrap();
        std::fs::write(root.join("USER.md"), "Ana\nLisbon\n").unwrap();
        assert_eq!(repo.changed().unwrap(), ["USER.md", "memory/tea.md"]);
        let commit = repo.commit("Dream").unwrap().unwrap();
        assert_eq!(
            commit.message,
            "Dream: 1 created, 1 updated\n\nupdated USER.md (+1)\ncreated memory/tea.md (+6): likes green tea\n"
        );
        assert_eq!(
            repo.commit("Dream").unwrap(),
            None,
            "nothing changed, no commit"
        );
        let before = first[0].id.clone();
        std::fs::write(root.join("USER.md"), "by hand\n").unwrap();
        let restored = repo.restore(&before[..7]).unwrap().unwrap();
        assert!(restored.message.starts_with("Restore memory as of"));
        assert_eq!(
            std::fs::read_to_string(root.join("USER.md")).unwrap(),
            "Ana\n"
        );
        assert!(!root.join("memory/tea.md").exists());
        let log = repo.log(10).unwrap();
        assert_eq!(log.len(), 4, "start, dream, saved hand edit, restore");
        assert!(
            log[1].message.contains("updated USER.md"),
            "the hand edit was kept in history"
        );
    }

    #[test]
    fn a_revision_diff_is_its_patch_against_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("USER.md"), "Ana\nPorto\n").unwrap();
        let repo = Repo::open(root).unwrap();
        let first = repo.head().unwrap().unwrap();
        let whole = repo.diff(&first).unwrap();
        assert!(whole.contains("+Ana\n+Porto\n"), "{whole}");
        std::fs::write(root.join("USER.md"), "Ana\nLisbon\n").unwrap();
        let second = repo.commit("Dream").unwrap().unwrap();
        let diff = repo.diff(&second.id).unwrap();
        assert!(diff.contains("diff --git a/USER.md b/USER.md"), "{diff}");
        assert!(diff.contains("\n@@ -1,2 +1,2 @@"), "{diff}");
        assert!(diff.contains("\n Ana\n-Porto\n+Lisbon\n"), "{diff}");
        assert!(!diff.contains(".gitignore"), "only what changed: {diff}");
        let err = repo.diff("0123456789abcdef").unwrap_err().to_string();
        assert!(err.contains("pincer memory log"), "{err}");
    }
}
