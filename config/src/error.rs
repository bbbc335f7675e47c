//! `ConfigError`: every way reading `config.toml` or `.security.yml` can fail, and where the
//! offending setting came from (`Location`). Each message names the fix — the key, the
//! file, the command — and never contains a secret value; the CLI prints them as they are.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Where a setting came from: a line of a file, or an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file; `line` (1-based) when the key is written in it.
    File {
        /// The file.
        path: PathBuf,
        /// The key's line, if known.
        line: Option<usize>,
    },
    /// A `PINCER_..__..` override.
    Env {
        /// The variable's name.
        var: String,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File {
                path,
                line: Some(line),
            } => write!(f, "{} line {line}", path.display()),
            Self::File { path, line: None } => write!(f, "{}", path.display()),
            Self::Env { var } => write!(f, "environment variable {var}"),
        }
    }
}

/// Why configuration or secrets could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `config.toml` does not exist (the CLI offers onboarding).
    #[error("{} does not exist; run `pincer onboard` to create it", path.display())]
    Missing {
        /// The file looked for.
        path: PathBuf,
    },

    /// A file exists but could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// `config.toml` is not valid TOML.
    #[error("{} line {line}, column {column}: invalid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The parser's description.
        message: String,
    },

    /// A secret-looking key in `config.toml` or a config override variable.
    #[error("{}", secret_in_config(location, key, security_file, security_key.as_deref(), env_var.as_deref()))]
    SecretInConfig {
        /// Where it was written.
        location: Location,
        /// Its dotted key path.
        key: String,
        /// The secrets file it belongs in.
        security_file: PathBuf,
        /// Its key path in the secrets file, when the secrets file has a place for it.
        security_key: Option<String>,
        /// The environment variable that can carry it instead, if any.
        env_var: Option<String>,
    },

    /// `config.toml` was written by a newer pincer.
    #[error(
        "{} is version {found} but this pincer understands {supported}; upgrade pincer",
        path.display()
    )]
    NewerVersion {
        /// The file.
        path: PathBuf,
        /// Its `version`.
        found: i64,
        /// [`crate::CONFIG_VERSION`].
        supported: u32,
    },

    /// A key no table has.
    #[error("{}", unknown_key(location, key, suggestion.as_deref(), valid))]
    UnknownKey {
        /// Where it was written.
        location: Location,
        /// Its dotted key path.
        key: String,
        /// The closest valid key of the same table.
        suggestion: Option<String>,
        /// The valid keys of that table (empty when the parent is not a table).
        valid: Vec<String>,
    },

    /// A `PINCER_` variable with `__` whose name is not a key path.
    #[error(
        "environment variable {var} is not a config override: names like \
         PINCER_AGENT__MAX_ITERATIONS map to config keys (here agent.max_iterations), and \
         no part between `__` may be empty; rename or unset it"
    )]
    BadEnvName {
        /// The variable.
        var: String,
    },

    /// A value of the wrong type.
    #[error("{location}: `{key}` must be {expected} (found {found})")]
    WrongType {
        /// Where it was written.
        location: Location,
        /// Its dotted key path.
        key: String,
        /// What the key takes, in words ("an integer").
        expected: String,
        /// What was written, in words (`string "ten"`).
        found: String,
    },

    /// A value that is well-typed but not acceptable; `problem` completes "`key` ...".
    #[error("{location}: `{key}` {problem}")]
    Invalid {
        /// Where it was written (or the file, for a missing key).
        location: Location,
        /// Its dotted key path.
        key: String,
        /// What is wrong and how to fix it.
        problem: String,
    },

    /// `.security.yml` could not be parsed or has an unknown key.
    #[error("{}{}: {message}", path.display(), yaml_position(*line, *column))]
    SecretsFormat {
        /// The file.
        path: PathBuf,
        /// 1-based line, if known.
        line: Option<usize>,
        /// 1-based column, if known.
        column: Option<usize>,
        /// What is wrong (never the value).
        message: String,
    },

    /// `.security.yml` can be read by group or others.
    #[error(
        "{} is readable by others (mode {mode:04o}); run: chmod 600 {}",
        path.display(),
        path.display()
    )]
    SecretsPermissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },

    /// An enabled channel lacks a token it needs.
    #[error("{}", missing_channel_secret(channel, what, key, security_file, env_var, reason.as_deref()))]
    MissingChannelSecret {
        /// `telegram`, `discord` or `slack`.
        channel: String,
        /// In words: "bot token", "app token", "signing secret".
        what: String,
        /// Key under `channels.<channel>` in `.security.yml`.
        key: String,
        /// The secrets file.
        security_file: PathBuf,
        /// The environment variable that can carry it.
        env_var: String,
        /// Why it is needed beyond being enabled (e.g. Slack's mode).
        reason: Option<String>,
    },
}

fn secret_in_config(
    location: &Location,
    key: &str,
    security_file: &std::path::Path,
    security_key: Option<&str>,
    env_var: Option<&str>,
) -> String {
    let sec = security_file.display();
    let remove = match location {
        Location::File { path, .. } => format!("delete it from {}", path.display()),
        Location::Env { var } => format!("unset {var}"),
    };
    match security_key {
        Some(sec_key) => {
            let or_env = env_var
                .map(|v| format!(" (or set {v})"))
                .unwrap_or_default();
            format!(
                "{location}: `{key}` is a secret; move it to {sec} under {sec_key}{or_env}, then {remove}"
            )
        }
        None => format!(
            "{location}: `{key}` looks like a secret, and secrets never belong in config.toml; \
             {sec} holds the secrets pincer reads — {remove}"
        ),
    }
}

fn unknown_key(
    location: &Location,
    key: &str,
    suggestion: Option<&str>,
    valid: &[String],
) -> String {
    let head = format!("{location}: unknown key `{key}`");
    if let Some(s) = suggestion {
        return format!("{head}; did you mean `{s}`?");
    }
    if valid.is_empty() {
        let parent = key.rsplit_once('.').map_or(key, |(p, _)| p);
        return format!("{head}; `{parent}` has no sub-keys");
    }
    format!("{head}; valid keys here: {}", valid.join(", "))
}

fn yaml_position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" line {l}, column {c}"),
        (Some(l), None) => format!(" line {l}"),
        _ => String::new(),
    }
}

fn missing_channel_secret(
    channel: &str,
    what: &str,
    key: &str,
    security_file: &std::path::Path,
    env_var: &str,
    reason: Option<&str>,
) -> String {
    let reason = reason.map(|r| format!(" {r}")).unwrap_or_default();
    format!(
        "channels.{channel} is enabled{reason} but has no {what}: add channels.{channel}.{key} \
         to {} or set {env_var}",
        security_file.display()
    )
}
