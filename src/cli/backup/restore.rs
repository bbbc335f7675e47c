//! Putting a backup archive back, into an empty home only (never over a live one).
//! The archive is read twice: first every entry is checked (`check`) and the
//! manifest, config and secrets are read, so a refused entry means nothing was
//! written; then the files are written. Everything is created new (`O_EXCL`) beneath
//! folders opened with no link followed, and the workspace's links are made last, so
//! no file is ever written through a link. Modes come from the archive with the
//! set-id bits dropped; `.security.yml` and `pincer.db` are 0600 and the home 0700
//! whatever the archive says. If anything fails, what was written is removed again.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use flate2::read::GzDecoder;
use pincer_confine::gateway::Folder;
use pincer_confine::{Mode, OFlags, Root};

use super::check::{self, Kind, MANIFEST, Place, Top};
use super::{FORMAT, Manifest};
use crate::home::Home;

/// The most a config or secrets file may hold (both are a few KiB).
const SMALL: u64 = 1 << 20;

/// What was restored, for the user.
pub(super) struct Restored {
    home: PathBuf,
    manifest: Manifest,
    files: usize,
}

impl std::fmt::Display for Restored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Restored {} files into {} (a backup made {} by Pincer {}); {}",
            self.files,
            self.home.display(),
            self.manifest.created,
            self.manifest.pincer,
            if self.manifest.secrets {
                "with .security.yml".to_string()
            } else {
                format!(
                    "it held no secrets: put the keys back in {} or the environment (`pincer doctor` says which are missing)",
                    self.home.join(".security.yml").display()
                )
            }
        )
    }
}

/// What the first reading found.
struct Checked {
    manifest: Manifest,
    config: Vec<u8>,
    secrets: Option<Vec<u8>>,
}

pub(super) fn restore(home: &Home, file: &Path) -> anyhow::Result<Restored> {
    if home.config_file != home.dir.join("config.toml") {
        anyhow::bail!("restore puts config.toml into the home; leave --config out");
    }
    if let Some(held) = holdings(&home.dir)? {
        anyhow::bail!(
            "{} is not empty (it holds {held}); restore into a new or empty folder with `pincer --home NEW_DIR restore {}`, or move {} aside first",
            home.dir.display(),
            file.display(),
            home.dir.display()
        );
    }
    let checked = check_archive(file)?;
    let mut undo = Undo::default();
    let result = write_all(home, file, checked, &mut undo);
    if result.is_err() {
        undo.run();
    }
    result
}

/// Open the archive for reading.
fn open(file: &Path) -> anyhow::Result<tar::Archive<GzDecoder<File>>> {
    let reader = File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    Ok(tar::Archive::new(GzDecoder::new(reader)))
}

/// The entry's path and kind, as the archive gives them.
fn describe<R: Read>(entry: &tar::Entry<'_, R>) -> io::Result<(PathBuf, Option<Kind>, String)> {
    let path = entry.path()?.into_owned();
    let kind_of = entry.header().entry_type();
    let kind = match kind_of {
        tar::EntryType::Regular | tar::EntryType::Continuous => Some(Kind::File),
        tar::EntryType::Directory => Some(Kind::Folder),
        tar::EntryType::Symlink => Some(Kind::Link(
            entry
                .link_name()?
                .map(|target| target.into_owned())
                .unwrap_or_default(),
        )),
        _ => None,
    };
    let name = match kind_of {
        tar::EntryType::Link => "hard link".to_string(),
        tar::EntryType::Char => "character device".to_string(),
        tar::EntryType::Block => "block device".to_string(),
        tar::EntryType::Fifo => "FIFO".to_string(),
        tar::EntryType::GNUSparse => "sparse file".to_string(),
        other => format!("{other:?}").to_lowercase(),
    };
    Ok((path, kind, name))
}

/// The first reading: every entry checked, the small files read. Writes nothing.
fn check_archive(file: &Path) -> anyhow::Result<Checked> {
    let unreadable = |err: io::Error| {
        anyhow::anyhow!(
            "cannot read {} as a backup archive ({err}); give a file written by `pincer backup`",
            file.display()
        )
    };
    let mut archive = open(file)?;
    let (mut manifest, mut config, mut secrets) = (None, None, None);
    for entry in archive.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let (path, kind, kind_name) = describe(&entry).map_err(unreadable)?;
        let place = check::entry(&path, kind.as_ref(), &kind_name).map_err(|refused| {
            anyhow::anyhow!(
                "{} cannot be restored: {refused}; nothing was written (`pincer backup` writes no such entry, so the archive was changed or made by something else)",
                file.display()
            )
        })?;
        let slot = match place {
            Place::Manifest => &mut manifest,
            Place::Top(Top::Config) => &mut config,
            Place::Top(Top::Secrets) => &mut secrets,
            _ => continue,
        };
        if entry.size() > SMALL {
            anyhow::bail!(
                "{} holds a {} too large to be one",
                file.display(),
                path.display()
            );
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(unreadable)?;
        *slot = Some(bytes);
    }
    let manifest = manifest.with_context(|| {
        format!(
            "{} is not an archive written by `pincer backup` (it has no {MANIFEST})",
            file.display()
        )
    })?;
    let manifest: Manifest = serde_json::from_slice(&manifest).with_context(|| {
        format!(
            "{} has a {MANIFEST} this Pincer cannot read",
            file.display()
        )
    })?;
    if manifest.format > FORMAT {
        anyhow::bail!(
            "{} was written by a newer Pincer ({}, archive format {}); restore it with that version or newer",
            file.display(),
            manifest.pincer,
            manifest.format
        );
    }
    let known = crate::store::schema_version();
    if usize::try_from(manifest.schema).unwrap_or(usize::MAX) > known {
        anyhow::bail!(
            "{} holds a database from a newer Pincer ({}, schema {}; this one knows up to {known}); restore it with that version or newer",
            file.display(),
            manifest.pincer,
            manifest.schema
        );
    }
    let config = config.with_context(|| format!("{} holds no config.toml", file.display()))?;
    Ok(Checked {
        manifest,
        config,
        secrets,
    })
}

/// The second reading: write everything.
fn write_all(
    home: &Home,
    file: &Path,
    checked: Checked,
    undo: &mut Undo,
) -> anyhow::Result<Restored> {
    undo.empty(&home.dir);
    super::super::ensure_home(home)?;
    let home_root =
        Root::open(&home.dir).with_context(|| format!("cannot open {}", home.dir.display()))?;
    let home_folder = Folder::root(&home_root)?;
    create(
        &home_folder,
        Top::Config.name(),
        0o600,
        &mut checked.config.as_slice(),
    )?;
    if let Some(secrets) = &checked.secrets {
        create(
            &home_folder,
            Top::Secrets.name(),
            0o600,
            &mut secrets.as_slice(),
        )?;
    }
    let (config, _) = super::super::load(home)
        .context("the archive's config.toml does not load; nothing of it was kept")?;
    if let Some(conflict) = home.workspace_conflict(&config) {
        anyhow::bail!("{conflict}");
    }
    let workspace = home.workspace(&config);
    if !workspace.starts_with(&home.dir) {
        if let Some(held) = holdings(&workspace)? {
            anyhow::bail!(
                "the archive's config puts the workspace at {}, which is not empty (it holds {held}); move it aside first, or change agent.workspace in the archive's config",
                workspace.display()
            );
        }
        undo.empty(&workspace);
    }
    std::fs::create_dir_all(&workspace)
        .with_context(|| format!("cannot create {}", workspace.display()))?;
    crate::home::set_mode(&workspace, 0o700)?;
    let ws_root =
        Root::open(&workspace).with_context(|| format!("cannot open {}", workspace.display()))?;
    let ws_folder = Folder::root(&ws_root)?;
    let state_folder = home_folder.make_folder("state")?;
    crate::home::set_mode(&home.state_dir(), 0o700)?;

    let mut files = 1 + usize::from(checked.secrets.is_some());
    let mut links = Vec::new();
    let mut archive = open(file)?;
    for entry in archive.entries()? {
        let mut entry = entry?;
        let (path, kind, kind_name) = describe(&entry)?;
        // Checked in the first reading already; checked again, as the file may have changed.
        let place = check::entry(&path, kind.as_ref(), &kind_name)?;
        let mode = entry.header().mode().unwrap_or(0o600) & 0o777;
        let (root, parts) = match place {
            Place::Manifest | Place::Top(Top::Config | Top::Secrets) => continue,
            Place::Top(Top::Database) => {
                create(&home_folder, Top::Database.name(), 0o600, &mut entry)?;
                files += 1;
                continue;
            }
            Place::State(parts) => (&state_folder, parts),
            Place::Workspace(parts) => (&ws_folder, parts),
        };
        match kind {
            Some(Kind::Folder) => {
                folder_at(root, &parts)?;
            }
            Some(Kind::File) => {
                let Some((name, parents)) = parts.split_last() else {
                    continue;
                };
                create(&folder_at(root, parents)?, name, mode, &mut entry)
                    .with_context(|| format!("cannot restore {}", path.display()))?;
                files += 1;
            }
            Some(Kind::Link(target)) => links.push((parts, target)),
            None => {}
        }
    }
    // Links last: nothing above was written through one.
    for (parts, target) in links {
        let Some((name, parents)) = parts.split_last() else {
            continue;
        };
        folder_at(&ws_folder, parents)?
            .symlink(&target, name)
            .with_context(|| format!("cannot restore the link workspace/{}", parts.join("/")))?;
    }
    if home.db_file.exists() {
        crate::home::set_mode(&home.db_file, 0o600)?;
    }
    Ok(Restored {
        home: home.dir.clone(),
        manifest: checked.manifest,
        files,
    })
}

/// The folder `parts` beneath `root`, made where missing (never through a link).
fn folder_at(root: &Folder, parts: &[String]) -> io::Result<Folder> {
    let mut folder = root.folder(".")?;
    for part in parts {
        folder = folder.make_folder(part)?;
    }
    Ok(folder)
}

/// Create the new file `name` in `folder` with `mode` and `data` in it.
fn create(folder: &Folder, name: &str, mode: u32, data: &mut dyn Read) -> anyhow::Result<()> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd =
        rustix::fs::openat(folder.fd(), name, flags, Mode::from_raw_mode(mode)).map_err(|err| {
            match err {
                rustix::io::Errno::EXIST => anyhow::anyhow!("the archive holds {name} twice"),
                other => anyhow::anyhow!("cannot create {name}: {other}"),
            }
        })?;
    let mut out = File::from(fd);
    io::copy(data, &mut out)?;
    out.sync_all()?;
    Ok(())
}

/// What `dir` holds, if anything: `None` when it is missing or empty.
fn holdings(dir: &Path) -> anyhow::Result<Option<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.is_empty() {
        return Ok(None);
    }
    names.sort();
    let more = names.len().saturating_sub(3);
    names.truncate(3);
    let mut held = names.join(", ");
    if more > 0 {
        held.push_str(&format!(" and {more} more"));
    }
    Ok(Some(held))
}

/// What a failed restore removes again: folders that were missing or empty before.
#[derive(Default)]
struct Undo {
    /// Each folder, and whether it existed (empty) before.
    folders: Vec<(PathBuf, bool)>,
}

impl Undo {
    /// `dir` is missing or empty now; a failure leaves it so.
    fn empty(&mut self, dir: &Path) {
        self.folders.push((dir.to_path_buf(), dir.exists()));
    }

    fn run(self) {
        for (dir, existed) in self.folders {
            // Best effort: the error the user sees is the restore's own.
            if existed {
                if let Ok(entries) = std::fs::read_dir(&dir) {
                    for entry in entries.filter_map(Result::ok) {
                        let path = entry.path();
                        // `remove_dir_all` removes a link as itself, never what it points to.
                        let _ = match entry.file_type() {
                            Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
                            _ => std::fs::remove_file(&path),
                        };
                    }
                }
            } else {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
}
