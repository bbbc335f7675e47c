//! What a backup archive may hold, checked before anything of it is written: an
//! archive is hostile input (it may come from anywhere), so each entry must be a plain
//! relative path under one of the places a backup writes (`Place`), a regular file or
//! a folder — or, in the workspace only, a link whose target stays inside the
//! workspace. No `..`, no absolute path, no hard link, no device, FIFO or sparse file.
//! `pincer backup` writes nothing else, and leaves out what it could not restore.

use std::path::{Component, Path, PathBuf};

/// The archive's description of itself, first in every archive.
pub(super) const MANIFEST: &str = "pincer-backup.json";

/// Where an entry of the archive goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// `pincer-backup.json`: read, never written out.
    Manifest,
    /// `config.toml`, `.security.yml` or `pincer.db`, in the home.
    Top(Top),
    /// Under `state/` in the home (the memory's history and index, the inbox).
    State(Vec<String>),
    /// Under `workspace/`: the agent's workspace, wherever the config puts it.
    Workspace(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Top {
    Config,
    Secrets,
    Database,
}

impl Top {
    pub(super) fn name(self) -> &'static str {
        match self {
            Top::Config => "config.toml",
            Top::Secrets => ".security.yml",
            Top::Database => "pincer.db",
        }
    }
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Folder,
    /// A link and its target, as written in the archive.
    Link(PathBuf),
}

/// Why an entry is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum Refused {
    #[error("`{0}` is an absolute path")]
    Absolute(String),
    #[error("`{0}` climbs out with `..`")]
    Climbs(String),
    #[error("`{0}` is not a plain path (empty, `.` or not UTF-8)")]
    NotPlain(String),
    #[error("`{0}` is not something `pincer backup` writes")]
    Unknown(String),
    #[error("`{path}` is a {kind}, which a backup never holds")]
    Kind { path: String, kind: String },
    #[error("`{0}` is a link outside the workspace")]
    LinkOutsideWorkspace(String),
    #[error("`{path}` is a link to `{target}`, which leads out of the workspace")]
    LinkLeadsOut { path: String, target: String },
}

/// Where `path` (as the archive names it) goes, if anywhere allowed.
pub(super) fn place(path: &Path) -> Result<Place, Refused> {
    let shown = path.display().to_string();
    let mut parts = Vec::new();
    for part in path.components() {
        match part {
            Component::Normal(name) => match name.to_str() {
                Some(name) => parts.push(name.to_string()),
                None => return Err(Refused::NotPlain(shown)),
            },
            Component::RootDir | Component::Prefix(_) => return Err(Refused::Absolute(shown)),
            Component::ParentDir => return Err(Refused::Climbs(shown)),
            // `./x` is how many tar programs write names; harmless.
            Component::CurDir => {}
        }
    }
    let Some((first, rest)) = parts.split_first() else {
        return Err(Refused::NotPlain(shown));
    };
    let rest = rest.to_vec();
    match (first.as_str(), rest.is_empty()) {
        (MANIFEST, true) => Ok(Place::Manifest),
        ("config.toml", true) => Ok(Place::Top(Top::Config)),
        (".security.yml", true) => Ok(Place::Top(Top::Secrets)),
        ("pincer.db", true) => Ok(Place::Top(Top::Database)),
        ("state", _) => Ok(Place::State(rest)),
        ("workspace", _) => Ok(Place::Workspace(rest)),
        _ => Err(Refused::Unknown(shown)),
    }
}

/// Check one entry: its place and its kind together. `kind` is `None` for every kind
/// of entry a backup never holds, named by `kind_name`.
pub(super) fn entry(path: &Path, kind: Option<&Kind>, kind_name: &str) -> Result<Place, Refused> {
    let place = place(path)?;
    let shown = || path.display().to_string();
    match (kind, &place) {
        (None, _) => Err(Refused::Kind {
            path: shown(),
            kind: kind_name.to_string(),
        }),
        (Some(Kind::Link(target)), Place::Workspace(parts)) => {
            if stays_inside(parts, target) {
                Ok(place)
            } else {
                Err(Refused::LinkLeadsOut {
                    path: shown(),
                    target: target.display().to_string(),
                })
            }
        }
        (Some(Kind::Link(_)), _) => Err(Refused::LinkOutsideWorkspace(shown())),
        (Some(Kind::Folder), Place::Manifest | Place::Top(_)) => Err(Refused::Kind {
            path: shown(),
            kind: "folder".into(),
        }),
        (Some(Kind::Folder), Place::State(parts) | Place::Workspace(parts)) if parts.is_empty() => {
            Ok(place)
        }
        (Some(Kind::File), Place::State(parts) | Place::Workspace(parts)) if parts.is_empty() => {
            Err(Refused::Kind {
                path: shown(),
                kind: "file where a folder belongs".into(),
            })
        }
        _ => Ok(place),
    }
}

/// Whether a link at `parts` (relative to the workspace, the link's own name last)
/// pointing at `target` stays inside the workspace: relative, its `..` only at the
/// start and never above the workspace, then names going down. A `..` after a name is
/// refused, since the name may itself be a link (`up/..` leaves by way of `up -> ..`);
/// with `..` only first, every link in a chain climbs from the real folder it lies in,
/// so none leads out.
pub(super) fn stays_inside(parts: &[String], target: &Path) -> bool {
    if target.as_os_str().is_empty() {
        return false;
    }
    // How deep the folder holding the link is.
    let mut depth = parts.len().saturating_sub(1);
    let mut named = false;
    for part in target.components() {
        match part {
            Component::Normal(_) => named = true,
            Component::CurDir => {}
            Component::ParentDir if !named => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return false,
            },
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> Vec<String> {
        text.split('/').map(str::to_string).collect()
    }

    #[test]
    fn the_places_a_backup_writes_are_taken() {
        assert_eq!(place(Path::new("config.toml")), Ok(Place::Top(Top::Config)));
        assert_eq!(
            place(Path::new("./pincer.db")),
            Ok(Place::Top(Top::Database))
        );
        assert_eq!(
            place(Path::new("state/memory.git/HEAD")),
            Ok(Place::State(parts("memory.git/HEAD")))
        );
        assert_eq!(
            place(Path::new("workspace/notes/a.md")),
            Ok(Place::Workspace(parts("notes/a.md")))
        );
    }

    #[test]
    fn paths_that_climb_or_start_at_the_root_or_go_elsewhere_are_refused() {
        for (path, why) in [
            ("../x", "climbs"),
            ("workspace/../../x", "climbs"),
            ("/etc/passwd", "absolute"),
            ("gateway.lock", "not something"),
            ("config.toml/x", "not something"),
            ("", "not a plain"),
        ] {
            let err = place(Path::new(path)).unwrap_err().to_string();
            assert!(err.contains(why), "{path}: {err}");
        }
    }

    #[test]
    fn links_stay_inside_the_workspace_or_are_refused() {
        let link = |target: &str| Kind::Link(PathBuf::from(target));
        let ok =
            |path: &str, target: &str| entry(Path::new(path), Some(&link(target)), "link").is_ok();
        assert!(ok("workspace/a/now.md", "../notes/b.md"));
        assert!(ok("workspace/latest", "logs/today.md"));
        assert!(!ok("workspace/a/key", "../../.security.yml"));
        assert!(!ok("workspace/key", "/home/ann/.pincer/.security.yml"));
        assert!(!ok("workspace/x", "a/../../y"));
        // `up -> ..` would make `up/..` the workspace's parent.
        assert!(!ok("workspace/s", "a/b/up/.."));
        assert!(!ok("workspace/x", ""));
        assert!(!ok("state/memory.git/HEAD", "refs/heads/main"));
        assert!(!ok("config.toml", "workspace/config.toml"));
    }

    #[test]
    fn devices_and_hard_links_are_refused_by_kind() {
        let err = entry(Path::new("workspace/tty"), None, "character device").unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        assert!(entry(Path::new("state"), Some(&Kind::Folder), "folder").is_ok());
        assert!(entry(Path::new("workspace"), Some(&Kind::File), "file").is_err());
        assert!(entry(Path::new("pincer.db"), Some(&Kind::Folder), "folder").is_err());
    }
}
