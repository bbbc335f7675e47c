//! The memory's history: a git repository that tracks only the curated memory —
//! MEMORY.md, SOUL.md, USER.md and `memory/*.md`. It is a bare repository in the
//! gateway's state folder (`$PINCER_HOME/state/memory.git`), not a `.git` in the
//! workspace, where any sandboxed command could rewrite its config, refs or objects
//! (a `core.worktree`, a link in `objects/`) for the gateway to follow. libgit2 never
//! touches the workspace: commits are built from the files as read beneath it (no
//! links, regular files only), and a restore writes them back the same way.
//!
//! Commits are signed with a fixed identity (machines often have no git identity
//! configured) and their messages are written from the real diff. git2 is blocking:
//! callers in async code run this on a blocking thread. Read the history with
//! `pincer memory log`, or `git --git-dir $PINCER_HOME/state/memory.git log`.

use std::path::{Path, PathBuf};

use git2::{DiffFormat, DiffOptions, ErrorCode, Oid, Patch, Repository, Signature, Tree};

use crate::entry::{self, Entry};
use crate::{MemoryError, files};

/// The repository's folder in the state folder.
pub const GIT_DIR: &str = "memory.git";

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
    /// The workspace, whose memory files are read and restored beneath it.
    root: PathBuf,
}

/// Tracked files at the workspace root.
const TOP: [&str; 3] = ["MEMORY.md", "SOUL.md", "USER.md"];

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
    /// Open the memory's repository in `state`, creating it on first use with a first
    /// commit of the memory as it is (an older workspace's history is moved in by
    /// `migrate::first_start`, before).
    pub fn open(root: &Path, state: &Path) -> Result<Repo, MemoryError> {
        Self::open_with(root, state, |_| Ok(false))
    }

    /// `open`, where a new repository is first offered to `adopt` (which says whether
    /// it filled it with history).
    pub(crate) fn open_with(
        root: &Path,
        state: &Path,
        adopt: impl FnOnce(&Repository) -> Result<bool, MemoryError>,
    ) -> Result<Repo, MemoryError> {
        let dir = state.join(GIT_DIR);
        match Repository::open_bare(&dir) {
            Ok(repo) => Ok(Repo {
                repo,
                root: root.to_path_buf(),
            }),
            Err(err) if err.code() == ErrorCode::NotFound => {
                std::fs::create_dir_all(state).map_err(|source| MemoryError::Write {
                    path: state.to_path_buf(),
                    source,
                })?;
                let repo = Repo {
                    repo: Repository::init_bare(&dir).map_err(git)?,
                    root: root.to_path_buf(),
                };
                if !adopt(&repo.repo)? {
                    repo.commit("Start the memory repository")?;
                }
                Ok(repo)
            }
            Err(err) => Err(git(err)),
        }
    }

    /// The tracked files on disk, with their text: regular files with one name, read
    /// beneath the workspace with no link followed (anything else is left out).
    fn on_disk(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for path in TOP {
            if let Ok(Some(text)) = files::read(&self.root, path) {
                found.push((path.to_string(), text));
            }
        }
        let listed = files::folder(&self.root, entry::DIR).and_then(|f| f.entries().ok());
        for (name, kind) in listed.unwrap_or_default() {
            let path = format!("{}/{name}", entry::DIR);
            if kind != pincer_confine::FileType::RegularFile || !is_tracked(&path) {
                continue;
            }
            match files::read(&self.root, &path) {
                Ok(Some(text)) => found.push((path, text)),
                Ok(None) => {}
                Err(err) => tracing::warn!("left out of the memory's history: {err}"),
            }
        }
        found.sort();
        found
    }

    /// A tree of `files`, keeping an old `.gitignore` of `parent` (older versions kept
    /// one in the workspace) so history shows no change that did not happen.
    fn tree(
        &self,
        files: &[(String, String)],
        parent: Option<&Tree<'_>>,
    ) -> Result<Oid, MemoryError> {
        let mut top = self.repo.treebuilder(None).map_err(git)?;
        let mut memory = self.repo.treebuilder(None).map_err(git)?;
        for (path, text) in files {
            let blob = self.repo.blob(text.as_bytes()).map_err(git)?;
            match path.strip_prefix("memory/") {
                Some(name) => memory.insert(name, blob, 0o100644),
                None => top.insert(path.as_str(), blob, 0o100644),
            }
            .map_err(git)?;
        }
        if !memory.is_empty() {
            let id = memory.write().map_err(git)?;
            top.insert(entry::DIR, id, 0o040000).map_err(git)?;
        }
        if let Some(old) = parent.and_then(|t| t.get_name(".gitignore")) {
            top.insert(".gitignore", old.id(), 0o100644).map_err(git)?;
        }
        top.write().map_err(git)
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
        let on_disk = self.on_disk();
        let mut paths: Vec<String> = on_disk.iter().map(|(p, _)| p.clone()).collect();
        if let Some(tree) = &tree {
            for path in tracked_in(tree) {
                if !paths.contains(&path) && path != ".gitignore" {
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
            let now = match on_disk.iter().find(|(p, _)| *p == path) {
                Some((_, text)) => {
                    Some(Oid::hash_object(git2::ObjectType::Blob, text.as_bytes()).map_err(git)?)
                }
                None => None,
            };
            if at_head != now {
                changed.push(path);
            }
        }
        changed.sort();
        Ok(changed)
    }

    /// Commit the tracked files as they are on disk. `None` when nothing changed. The
    /// message is `title`, a count of what changed, and one line per file.
    pub fn commit(&self, title: &str) -> Result<Option<Commit>, MemoryError> {
        let parent = match self.repo.head() {
            Ok(head) => Some(head.peel_to_commit().map_err(git)?),
            Err(_) => None,
        };
        let parent_tree = parent.as_ref().map(|p| p.tree()).transpose().map_err(git)?;
        let tree_id = self.tree(&self.on_disk(), parent_tree.as_ref())?;
        let tree = self.repo.find_tree(tree_id).map_err(git)?;
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
        for (path, _) in self.on_disk() {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        for path in paths.iter().filter(|p| p.as_str() != ".gitignore") {
            match tree.get_path(Path::new(path)) {
                Ok(entry) => {
                    let blob = self.repo.find_blob(entry.id()).map_err(git)?;
                    files::write(&self.root, path, &String::from_utf8_lossy(blob.content()))?;
                }
                Err(_) => files::remove(&self.root, path)?,
            }
        }
        self.commit(&format!("Restore memory as of {short}"))
    }
}

/// Whether `tree` holds nothing but tracked memory files (a repository Pincer made).
pub(crate) fn tracks_only_memory(tree: &Tree<'_>) -> bool {
    let mut only = true;
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            let path = format!("{dir}{}", entry.name().unwrap_or_default());
            if !is_tracked(&path) {
                only = false;
                return git2::TreeWalkResult::Abort;
            }
        }
        git2::TreeWalkResult::Ok
    });
    only
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
        let repo = Repo::open(root, &root.join(".state")).unwrap();
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
        let repo = Repo::open(root, &root.join(".state")).unwrap();
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
