//! Writing a backup archive. The databases are copied with SQLite's online backup
//! (`store::snapshot`), each as of one moment, while the gateway keeps writing; the
//! memory's git history is copied refs first and objects after, so every commit a
//! copied ref names is in the copy (objects are only ever added). Folders are walked
//! by descriptor with no link followed (`pincer_confine`): anything in the workspace
//! may have been written by a command the model ran, so a link there is archived as
//! a link (if it stays inside the workspace) and never read through, and a file with
//! a second name (a hard link) is left out. Other files are read as they are during
//! the walk: the workspace is not copied as of one moment.
//!
//! The archive is written beside FILE under a temporary name, mode 0600 (it holds
//! conversations, and keys with `--with-secrets`), and renamed to FILE when whole.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use flate2::write::GzEncoder;
use pincer_config::Config;
use pincer_confine::gateway::Folder;
use pincer_confine::{FileType, Root};

use super::check::{self, MANIFEST, Top};
use super::{BackupArgs, FORMAT, Manifest};
use crate::home::Home;

/// What `pincer backup` will copy, decided before anything is written.
pub(super) struct Plan {
    file: PathBuf,
    with_secrets: bool,
    config_file: PathBuf,
    security_file: PathBuf,
    db_file: PathBuf,
    state: PathBuf,
    workspace: PathBuf,
}

/// What was written, for the user.
pub(super) struct Written {
    file: PathBuf,
    bytes: u64,
    files: usize,
    schema: i64,
    secrets: bool,
    skipped: Vec<String>,
}

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for why in &self.skipped {
            writeln!(f, "left out {why}")?;
        }
        write!(
            f,
            "Wrote {} ({} files, {} KiB; database schema {}; {}). Restore it with `pincer --home NEW_HOME restore {}`.",
            self.file.display(),
            self.files,
            self.bytes.div_ceil(1024),
            self.schema,
            if self.secrets {
                "with .security.yml: keep the archive as safe as the keys"
            } else {
                "without .security.yml: after a restore, put the keys back there or in the environment"
            },
            self.file.display()
        )
    }
}

impl Plan {
    pub(super) fn new(home: &Home, config: &Config, args: BackupArgs) -> anyhow::Result<Plan> {
        let file = super::super::absolute(&args.file);
        if std::fs::symlink_metadata(&file).is_ok() {
            anyhow::bail!(
                "{} exists already; give a new file name (a backup never overwrites)",
                file.display()
            );
        }
        let workspace = home.workspace(config);
        let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let parent = file.parent().map(real).unwrap_or_default();
        for (inside, what) in [(&home.dir, "the home"), (&workspace, "the workspace")] {
            if parent.starts_with(real(inside)) {
                anyhow::bail!(
                    "{} is inside {what} ({}), which the backup copies; write it somewhere else, such as your home folder",
                    file.display(),
                    inside.display()
                );
            }
        }
        if args.with_secrets && !home.security_file.exists() {
            anyhow::bail!(
                "--with-secrets, but there is no {}; leave the flag out",
                home.security_file.display()
            );
        }
        Ok(Plan {
            file,
            with_secrets: args.with_secrets,
            config_file: home.config_file.clone(),
            security_file: home.security_file.clone(),
            db_file: home.db_file.clone(),
            state: home.state_dir(),
            workspace,
        })
    }

    /// Write the archive; on any failure nothing is left behind.
    pub(super) fn write(self) -> anyhow::Result<Written> {
        let partial = self.file.with_file_name(format!(
            ".{}.partial-{}",
            self.file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            std::process::id()
        ));
        let result = self.write_to(&partial);
        // The database copies are made next to the archive; gone either way.
        let _ = std::fs::remove_file(snapshot_path(&partial, "pincer.db"));
        let _ = std::fs::remove_file(snapshot_path(&partial, "memory.db"));
        match result {
            Ok(mut written) => {
                std::fs::rename(&partial, &self.file).with_context(|| {
                    format!(
                        "cannot rename {} to {}",
                        partial.display(),
                        self.file.display()
                    )
                })?;
                written.bytes = std::fs::metadata(&self.file).map(|m| m.len()).unwrap_or(0);
                Ok(written)
            }
            Err(err) => {
                let _ = std::fs::remove_file(&partial);
                Err(err)
            }
        }
    }

    fn write_to(&self, partial: &Path) -> anyhow::Result<Written> {
        let out = create_private(partial)
            .with_context(|| format!("cannot create {}", partial.display()))?;
        let mut archive = Archive {
            tar: tar::Builder::new(GzEncoder::new(out, flate2::Compression::default())),
            files: 0,
            skipped: Vec::new(),
        };
        // The database first: its schema goes into the manifest.
        let db_copy = snapshot_path(partial, "pincer.db");
        let schema = if self.db_file.exists() {
            crate::store::snapshot(&self.db_file, &db_copy)?
        } else {
            0
        };
        let manifest = Manifest {
            format: FORMAT,
            pincer: env!("CARGO_PKG_VERSION").to_string(),
            created: crate::clock::utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            schema,
            secrets: self.with_secrets,
        };
        let json = serde_json::to_vec_pretty(&manifest)?;
        archive.bytes(MANIFEST, &json, 0o600)?;
        archive.file(Top::Config.name(), &self.config_file, 0o600)?;
        if self.with_secrets {
            archive.file(Top::Secrets.name(), &self.security_file, 0o600)?;
        }
        if self.db_file.exists() {
            archive.file(Top::Database.name(), &db_copy, 0o600)?;
        }
        if self.state.is_dir() {
            self.state(&mut archive, partial)?;
        }
        if self.workspace.is_dir() {
            let root = Root::open(&self.workspace)
                .with_context(|| format!("cannot open {}", self.workspace.display()))?;
            archive.folder("workspace", 0o700)?;
            archive.tree(&Folder::root(&root)?, "workspace", &[])?;
        }
        let files = archive.files;
        let skipped = std::mem::take(&mut archive.skipped);
        let mut out = archive.tar.into_inner()?.finish()?;
        out.flush()?;
        out.sync_all()?;
        Ok(Written {
            file: self.file.clone(),
            bytes: 0,
            files,
            schema,
            secrets: self.with_secrets,
            skipped,
        })
    }

    /// `state/`: the memory's index by online backup, its git history refs first and
    /// objects last, and the rest (the dream's journal, kept attachments) as files.
    fn state(&self, archive: &mut Archive, partial: &Path) -> anyhow::Result<()> {
        let root = Root::open(&self.state)
            .with_context(|| format!("cannot open {}", self.state.display()))?;
        let top = Folder::root(&root)?;
        archive.folder("state", 0o700)?;
        let index = self.state.join("memory.db");
        if index.exists() {
            let copy = snapshot_path(partial, "memory.db");
            crate::store::snapshot(&index, &copy)?;
            archive.file("state/memory.db", &copy, 0o600)?;
        }
        // Left out: the databases' side files (the copy above is whole), the dream's lock,
        // Chromium's profile (a cache, and the cookies of the sites the browser visited).
        let skip = [
            "memory.db",
            "memory.db-wal",
            "memory.db-shm",
            "memory.db-journal",
            "dream.lock",
            "browser",
            pincer_memory::repo::GIT_DIR,
        ];
        archive.tree(&top, "state", &skip)?;
        if let Ok(git) = top.folder(pincer_memory::repo::GIT_DIR) {
            let name = format!("state/{}", pincer_memory::repo::GIT_DIR);
            archive.folder(&name, 0o700)?;
            archive.tree(&git, &name, &["objects"])?;
            if let Ok(objects) = git.folder("objects") {
                let name = format!("{name}/objects");
                archive.folder(&name, 0o700)?;
                archive.tree(&objects, &name, &[])?;
            }
        }
        Ok(())
    }
}

/// Where the copy of a database is made while the archive is written.
fn snapshot_path(partial: &Path, name: &str) -> PathBuf {
    let mut path = partial.as_os_str().to_owned();
    path.push(format!(".{name}"));
    PathBuf::from(path)
}

/// A new file only its owner can read.
fn create_private(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

struct Archive {
    tar: tar::Builder<GzEncoder<File>>,
    files: usize,
    /// What was left out, and why.
    skipped: Vec<String>,
}

impl Archive {
    fn header(kind: tar::EntryType, size: u64, mode: u32, mtime: u64) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(size);
        header.set_mode(mode);
        header.set_mtime(mtime);
        header
    }

    fn bytes(&mut self, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        let mtime = u64::try_from(crate::clock::utc().timestamp()).unwrap_or(0);
        let mut header = Self::header(tar::EntryType::Regular, bytes.len() as u64, mode, mtime);
        self.tar.append_data(&mut header, name, bytes)?;
        self.files += 1;
        Ok(())
    }

    /// A file of the home's own (config, secrets, a database copy), by path.
    fn file(&mut self, name: &str, path: &Path, mode: u32) -> anyhow::Result<()> {
        let mut file =
            File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let size = file.metadata()?.len();
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        self.bytes(name, &bytes, mode)?;
        Ok(())
    }

    fn folder(&mut self, name: &str, mode: u32) -> io::Result<()> {
        let mtime = u64::try_from(crate::clock::utc().timestamp()).unwrap_or(0);
        let mut header = Self::header(tar::EntryType::Directory, 0, mode, mtime);
        self.tar
            .append_data(&mut header, format!("{name}/"), io::empty())
    }

    /// Everything in `folder` (archived as `prefix/…`) but the names in `skip`.
    fn tree(&mut self, folder: &Folder, prefix: &str, skip: &[&str]) -> anyhow::Result<()> {
        let entries = folder
            .entries()
            .with_context(|| format!("cannot list {prefix}"))?;
        for (name, kind) in entries {
            if skip.contains(&name.as_str()) {
                continue;
            }
            let path = format!("{prefix}/{name}");
            let stat = match folder.stat(&name) {
                Ok(stat) => stat,
                // Removed while we walked: it is not part of the backup.
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(err) => return Err(err).with_context(|| format!("cannot read {path}")),
            };
            let mode = stat.st_mode & 0o777;
            let mtime = u64::try_from(stat.st_mtime).unwrap_or(0);
            match kind {
                FileType::Directory => {
                    let Ok(inner) = folder.folder(&name) else {
                        self.skipped
                            .push(format!("{path}: it changed while it was read"));
                        continue;
                    };
                    self.folder(&path, mode | 0o700)?;
                    self.tree(&inner, &path, &[])?;
                }
                FileType::RegularFile => match folder.open_file(&name) {
                    Ok((file, size)) => {
                        let mut header = Self::header(tar::EntryType::Regular, size, mode, mtime);
                        self.tar
                            .append_data(&mut header, &path, Exactly::new(file, size))?;
                        self.files += 1;
                    }
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                    Err(err) => self.skipped.push(format!("{path}: {err}")),
                },
                FileType::Symlink => {
                    let target = folder.read_link(&name)?;
                    let parts: Vec<String> = path.split('/').skip(1).map(str::to_string).collect();
                    if prefix.starts_with("workspace") && check::stays_inside(&parts, &target) {
                        let mut header = Self::header(tar::EntryType::Symlink, 0, 0o777, mtime);
                        self.tar.append_link(&mut header, &path, &target)?;
                    } else {
                        self.skipped.push(format!(
                            "{path}: a link to {}, which leads out of the workspace",
                            target.display()
                        ));
                    }
                }
                _ => self
                    .skipped
                    .push(format!("{path}: not a file, folder or link")),
            }
        }
        Ok(())
    }
}

/// A file read as exactly `size` bytes, as its tar header says: cut if it grew while
/// read, padded with zeros if it shrank (the archive stays readable either way).
struct Exactly {
    inner: io::Take<File>,
    left: u64,
}

impl Exactly {
    fn new(file: File, size: u64) -> Exactly {
        Exactly {
            inner: file.take(size),
            left: size,
        }
    }
}

impl Read for Exactly {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let got = match self.inner.read(&mut buf[..want])? {
            0 => {
                buf[..want].fill(0);
                want
            }
            n => n,
        };
        self.left -= got as u64;
        Ok(got)
    }
}
