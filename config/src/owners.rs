//! Adding an owner to `agent.owners` in `config.toml` the way a person would: the rest of
//! the file — comments, order, spacing — stays as it was, a backup of the old file is
//! taken first, and the new file replaces the old one atomically.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use crate::write::{backup, write_private};

/// What adding an owner did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerAdded {
    /// Written; the old file was saved at `backup` (none when there was no file).
    Added {
        /// Where the file as it was before is kept.
        backup: Option<PathBuf>,
    },
    /// They were an owner already; nothing was written.
    Already,
}

/// Why an owner could not be added: one sentence naming the file and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OwnerError(pub String);

/// Add `canonical` ("telegram:42") to `agent.owners` in `path`.
pub fn add_owner(path: &Path, canonical: &str) -> Result<OwnerAdded, OwnerError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(OwnerError(format!("cannot read {}: {e}", path.display())));
        }
    };
    let mut doc: DocumentMut = text
        .as_deref()
        .unwrap_or("version = 1\n")
        .parse()
        .map_err(|e| {
            OwnerError(format!(
                "{} is not valid TOML ({e}); fix it, then run the command again",
                path.display()
            ))
        })?;
    let shape = |key: &str, expected: &str| {
        OwnerError(format!(
            "{} has `{key}` that is not a {expected}; fix it by hand, then run the command again",
            path.display()
        ))
    };
    let write_failed = |e: std::io::Error| {
        OwnerError(format!(
            "cannot write {}: {e} (the old file is unchanged)",
            path.display()
        ))
    };
    let agent = doc
        .entry("agent")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| shape("agent", "table"))?;
    let owners = agent
        .entry("owners")
        .or_insert(Item::Value(Value::Array(Array::new())))
        .as_array_mut()
        .ok_or_else(|| shape("agent.owners", "list"))?;
    if owners.iter().any(|v| v.as_str() == Some(canonical)) {
        return Ok(OwnerAdded::Already);
    }
    owners.push(canonical);
    let backup = match text {
        Some(_) => Some(backup(path).map_err(write_failed)?),
        None => None,
    };
    write_private(path, &doc.to_string()).map_err(write_failed)?;
    Ok(OwnerAdded::Added { backup })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_added_and_the_files_comments_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let before = "version = 1\n# my assistant\n[agent]\ntimezone = \"Europe/Paris\" # home\nowners = [\"telegram:1\"]\n\n[router]\n# cheap first\nlight = [\"a/b\"]\n\n[providers.a]\nkind = \"openai\"\n";
        std::fs::write(&path, before).unwrap();
        let added = add_owner(&path, "discord:80351110224678912").unwrap();
        let OwnerAdded::Added {
            backup: Some(backup),
        } = added
        else {
            panic!("{added:?}")
        };
        assert_eq!(std::fs::read_to_string(backup).unwrap(), before);
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.contains("# my assistant") && after.contains("# home"));
        assert!(after.contains("# cheap first"));
        assert!(
            after.contains("owners = [\"telegram:1\", \"discord:80351110224678912\"]"),
            "{after}"
        );
        let config =
            crate::load_str(&after, &path, &dir.path().join(".security.yml"), &[]).unwrap();
        assert_eq!(config.agent.owners.len(), 2);
        assert_eq!(add_owner(&path, "telegram:1").unwrap(), OwnerAdded::Already);
    }

    #[test]
    fn a_file_without_agent_gets_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "version = 1\n").unwrap();
        add_owner(&path, "slack:U024BE7LH").unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(
            after.contains("[agent]") && after.contains("slack:U024BE7LH"),
            "{after}"
        );
        std::fs::write(&path, "agent = 3\n").unwrap();
        let err = add_owner(&path, "slack:U1").unwrap_err();
        assert!(
            err.0.contains("`agent`") && err.0.contains("fix it by hand"),
            "{err}"
        );
    }
}
