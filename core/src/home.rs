//! Where Pincer keeps its files: `$PINCER_HOME` (default `~/.pincer`) holds
//! config.toml, .security.yml, pincer.db, workspace/, state/ (what the gateway keeps
//! out of commands' reach) and the gateway lock. The home is created private (0700).
//! It also keeps the environment as the process started (`env_vars`), which settings
//! are read from after `main` took the secret variables out.

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

    /// Why the workspace of `config` cannot be used, if it cannot: commands write
    /// anything in it, so it may not be the home itself, hold the home (its secrets,
    /// database and config), nor lie in the gateway's state or the MCP servers' folders.
    pub fn workspace_conflict(&self, config: &Config) -> Option<String> {
        let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let (workspace, home) = (real(&self.workspace(config)), real(&self.dir));
        let what = if workspace == home {
            "is $PINCER_HOME itself"
        } else if home.starts_with(&workspace) {
            "holds $PINCER_HOME"
        } else if workspace.starts_with(home.join("state")) {
            "is inside $PINCER_HOME/state, the gateway's own state"
        } else if workspace.starts_with(home.join("mcp")) {
            "is inside $PINCER_HOME/mcp, the MCP servers' folders"
        } else {
            return None;
        };
        Some(format!(
            "agent.workspace = {} {what}: every command the assistant runs could read and write the secrets, the database and the gateway's state there; use a folder of its own, such as $PINCER_HOME/workspace (the default)",
            workspace.display()
        ))
    }

    /// The gateway's own state that no command may reach (the memory's index, history,
    /// the dream's lock and journal): `$PINCER_HOME/state`, hidden from both sandboxes
    /// like the rest of the home but the workspace.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// Take the one-gateway-per-home lock; held as long as the returned file lives.
    /// `status` and `doctor` take the same lock for an instant to see whether a
    /// gateway runs, so a lock held only briefly is waited out before giving up.
    pub fn lock_gateway(&self) -> Result<File, LockError> {
        self.lock_gateway_pausing(|| {
            #[expect(
                clippy::disallowed_methods,
                reason = "start-up, before anything else runs: a brief wait for `status` to let go"
            )]
            std::thread::sleep(LOCK_PAUSE);
        })
    }

    /// `lock_gateway` with the pause between tries given (the tests' is no time at all).
    fn lock_gateway_pausing(&self, mut pause: impl FnMut()) -> Result<File, LockError> {
        let mut tries = 0;
        loop {
            match self.try_lock_gateway() {
                Err(LockError::Held) if tries < LOCK_TRIES => {
                    tries += 1;
                    pause();
                }
                Err(LockError::Held) => return Err(LockError::Running(self.dir.clone())),
                other => return other,
            }
        }
    }

    /// Whether a gateway holds this home's lock right now.
    pub fn gateway_running(&self) -> bool {
        self.dir.is_dir() && matches!(self.try_lock_gateway(), Err(LockError::Held))
    }

    fn try_lock_gateway(&self) -> Result<File, LockError> {
        let path = self.dir.join("gateway.lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| LockError::Failed {
                action: "open",
                path: path.clone(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Held),
            Err(std::fs::TryLockError::Error(source)) => Err(LockError::Failed {
                action: "lock",
                path,
                source,
            }),
        }
    }
}

/// How long a starting gateway waits out someone else's brief hold on the lock.
const LOCK_TRIES: u32 = 20;
const LOCK_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// Why the gateway lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another `pincer run` is already running for {0}; stop it first (or use --home for a second assistant)"
    )]
    Running(PathBuf),
    /// Held right now (maybe only for an instant, by `status`).
    #[error("the gateway lock is held")]
    Held,
    #[error("cannot {action} {path}: {source}")]
    Failed {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

pub(crate) fn user_home() -> Option<PathBuf> {
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

/// The process environment, as the config loader wants it.
pub fn env_vars() -> Vec<(String, String)> {
    match KEPT_ENV.get() {
        Some(vars) => vars.clone(),
        None => std::env::vars().collect(),
    }
}

/// The environment as the process started, kept by `main` before it takes the secret
/// variables out of the process environment.
static KEPT_ENV: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Keep `vars` as the environment settings are read from (see `env_vars`).
pub fn keep_env(vars: Vec<(String, String)>) {
    // A second call (never made by `main`) keeps the first.
    let _ = KEPT_ENV.set(vars);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::resolve(Some(dir.path().to_path_buf()), None);
        (dir, home)
    }

    #[test]
    fn a_gateway_starting_while_status_peeks_still_takes_the_lock() {
        let (_dir, home) = home();
        // `status` holds the lock through the first try and lets go during the pause.
        let mut peek = Some(home.try_lock_gateway().ok().unwrap());
        let mut pauses = 0;
        let lock = home.lock_gateway_pausing(|| {
            pauses += 1;
            peek.take();
        });
        assert!(lock.is_ok(), "{:?}", lock.err());
        assert_eq!(pauses, 1);
        assert!(home.gateway_running());
    }

    #[test]
    fn a_lock_held_through_every_try_is_another_gateway() {
        let (_dir, home) = home();
        let _held = home.try_lock_gateway().ok().unwrap();
        let mut pauses = 0;
        let err = home.lock_gateway_pausing(|| pauses += 1).unwrap_err();
        assert!(matches!(err, LockError::Running(_)), "{err}");
        assert_eq!(pauses, LOCK_TRIES);
    }

    #[test]
    fn a_second_gateway_is_refused_and_told_why() {
        let (_dir, home) = home();
        assert!(!home.gateway_running());
        let _first = home.lock_gateway().unwrap();
        let err = home.lock_gateway_pausing(|| {}).unwrap_err().to_string();
        assert!(err.contains("already running"), "{err}");
    }
}
