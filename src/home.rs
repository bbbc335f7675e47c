//! Where Pincer keeps its files: `$PINCER_HOME` (default `~/.pincer`) holds
//! config.toml, .security.yml, pincer.db, workspace/ and the gateway lock. The home is
//! created private (0700).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use pincer_config::{Config, expand_tilde};

#[derive(Debug, Clone)]
pub struct Home {
    pub dir: PathBuf,
    pub config_file: PathBuf,
    pub security_file: PathBuf,
    pub db_file: PathBuf,
}

impl Home {
    /// `--home`, else `PINCER_HOME`, else `~/.pincer`; `--config` moves only config.toml.
    pub fn resolve(home: Option<PathBuf>, config: Option<PathBuf>) -> Home {
        let dir = home
            .or_else(|| std::env::var_os("PINCER_HOME").map(PathBuf::from))
            .unwrap_or_else(|| user_home().unwrap_or_default().join(".pincer"));
        let user_home = user_home();
        let dir = expand_tilde(&dir, user_home.as_deref());
        Home {
            config_file: config
                .map(|c| expand_tilde(&c, user_home.as_deref()))
                .unwrap_or_else(|| dir.join("config.toml")),
            security_file: dir.join(".security.yml"),
            db_file: dir.join("pincer.db"),
            dir,
        }
    }

    /// Create the home (mode 0700) if it is missing.
    pub fn ensure(&self) -> io::Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)?;
        set_mode(&self.dir, 0o700)
    }

    /// The agent's workspace: `agent.workspace`, else `$PINCER_HOME/workspace`.
    pub fn workspace(&self, config: &Config) -> PathBuf {
        config
            .agent
            .workspace_dir(&self.dir, user_home().as_deref())
    }

    /// Take the one-gateway-per-home lock; held as long as the returned file lives.
    pub fn lock_gateway(&self) -> Result<File, String> {
        let path = self.dir.join("gateway.lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|err| format!("cannot open {}: {err}", path.display()))?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(format!(
                "another `pincer run` is already running for {}; stop it first (or use --home for a second assistant)",
                self.dir.display()
            )),
            Err(std::fs::TryLockError::Error(err)) => {
                Err(format!("cannot lock {}: {err}", path.display()))
            }
        }
    }
}

fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

#[cfg(unix)]
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
pub fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}
