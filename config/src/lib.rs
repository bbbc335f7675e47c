//! # pincer-config
//!
//! Pincer's configuration: the typed `config.toml` (with `PINCER_<TABLE>__<KEY>`
//! environment overrides), the secrets in `.security.yml`, and the checks that turn every
//! mistake into a message naming the fix. Nothing here reads the process environment or
//! decides where `$PINCER_HOME` is: callers pass paths and `std::env::vars()` in.
//!
//! # Layout
//!
//! - `schema/`: [`Config`] and the typed sections of `config.toml` —
//!   `config` (the root and `version`), `agent`, `router`, `providers` (and prices),
//!   `channels` (with `ids` for integer-or-string id lists), `tools`, `schedules` (cron,
//!   heartbeat, memory), `mcp`, `host` (programs driving Pincer over stdio), `media`
//!   (model capabilities, `[transcription]`), `voice` (spoken replies) — each
//!   with the defaults that make an empty file valid.
//! - `load/`: [`load`] and [`load_str`], the pipeline — `env` (which variables are
//!   overrides), `secret_keys` (secrets written in the wrong file), `keys` (the registry of
//!   valid keys) and `unknown` (typos, with suggestions), `types` (figment's type errors in
//!   words), `validate` (meaning), `locate` (the line or variable behind a key).
//! - `secrets/`: [`Secrets`] and [`load_secrets`] (permission check, redacting
//!   deserializers in `value`), and `resolve` (file-then-environment lookup,
//!   [`check_channels`]).
//! - `write`: [`write_private`] (atomic, mode 0600) and [`backup`] for onboarding and
//!   upgrades.
//! - `owners`: [`add_owner`], which adds a canonical id to `agent.owners` keeping the
//!   file's comments and layout (`pincer pairing approve --owner`).
//! - `error`: [`ConfigError`] and [`Location`]; the CLI prints messages as they are.
//!
//! # Order of checks in [`load`]
//!
//! missing file → TOML syntax → secret-looking keys → newer `version` → unknown keys →
//! types → semantic rules. The first problem wins, so a given input always produces the
//! same message. Channel tokens are checked separately, by [`check_channels`], once the
//! secrets are loaded.
//!
//! # Typical use
//!
//! ```no_run
//! let env: Vec<(String, String)> = std::env::vars().collect();
//! let home = std::path::Path::new("/home/me/.pincer");
//! let (config_file, security_file) = (home.join("config.toml"), home.join(".security.yml"));
//! let config = pincer_config::load(&config_file, &security_file, &env)?;
//! let secrets = pincer_config::load_secrets(&security_file)?;
//! pincer_config::check_channels(&config, &secrets, &security_file, &env)?;
//! # Ok::<(), pincer_config::ConfigError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
// A `ConfigError` is built once, at start-up, and printed; flat, matchable fields are worth
// more here than a small `Result`.
#![allow(clippy::result_large_err)]

mod error;
mod load;
mod owners;
mod schema;
mod secrets;
mod write;

pub use error::{ConfigError, Location};
pub use load::{load, load_str};
pub use owners::{OwnerAdded, OwnerError, add_owner};
pub use schema::*;
pub use secrets::{
    ApiKeySecret, ChannelSecrets, MatrixSecrets, McpSecrets, ProviderSecrets, Secrets,
    SlackSecrets, TokenSecret, ToolSecrets, WebSecrets, check_channels, load_secrets,
    parse_secrets,
};
pub use write::{backup, write_private};
