//! Loading `config.toml`: read the file, then check in a fixed order — TOML syntax, secrets
//! written where they don't belong, the format version, unknown keys, types (via figment,
//! with the `PINCER_..__..` overrides merged over the file), then meaning. The first
//! problem found is returned, so the same input always gives the same message.

mod env;
mod keys;
mod locate;
mod secret_keys;
mod types;
mod unknown;
mod validate;

use std::io;
use std::path::Path;

use figment::Figment;
use figment::providers::{Format, Toml};
use toml_edit::Document;

use crate::{CONFIG_VERSION, Config, ConfigError};
use env::EnvProvider;
use locate::{Locator, column_at, line_at};

/// Reads and checks `config_file`, with overrides from `env` (pass
/// `std::env::vars().collect::<Vec<_>>()`). `security_file` is only named in messages
/// that tell the user to move a secret there.
///
/// A missing file is [`ConfigError::Missing`], so the CLI can offer `pincer onboard`.
pub fn load(
    config_file: &Path,
    security_file: &Path,
    env: &[(String, String)],
) -> Result<Config, ConfigError> {
    let text = match std::fs::read_to_string(config_file) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ConfigError::Missing {
                path: config_file.to_path_buf(),
            });
        }
        Err(source) => {
            return Err(ConfigError::Read {
                path: config_file.to_path_buf(),
                source,
            });
        }
    };
    load_str(&text, config_file, security_file, env)
}

/// As [`load`], for text already in hand; `config_file` is the name used in messages.
pub fn load_str(
    text: &str,
    config_file: &Path,
    security_file: &Path,
    env: &[(String, String)],
) -> Result<Config, ConfigError> {
    let overrides = env::select(env)?;
    let doc = Document::parse(text.to_owned()).map_err(|e| syntax_error(&e, text, config_file))?;
    secret_keys::check(&doc, &overrides, config_file, security_file)?;
    let locator = Locator {
        file: config_file,
        doc: &doc,
        env: &overrides,
    };
    check_version(&locator)?;
    unknown::check(&locator)?;
    let config: Config = Figment::new()
        .merge(Toml::string(text))
        .merge(EnvProvider(&overrides))
        .extract()
        .map_err(|e| types::translate(e, &locator))?;
    validate::check(&config, &locator)?;
    Ok(config)
}

fn syntax_error(e: &toml_edit::TomlError, text: &str, path: &Path) -> ConfigError {
    let span = e.span().unwrap_or(0..0);
    let mut message = e.message().trim().to_owned();
    if message == "duplicate key"
        && let Some(key) = text.get(span.clone())
    {
        // The span is the repeated key itself (never a value, so never a secret).
        message = format!("duplicate key `{key}`; keep one");
    }
    ConfigError::Syntax {
        path: path.to_path_buf(),
        line: line_at(text, span.start),
        column: column_at(text, span.start),
        message,
    }
}

/// A newer format is refused before unknown keys, which a newer format is expected to have.
fn check_version(locator: &Locator<'_>) -> Result<(), ConfigError> {
    let Some(version) = locator.doc.as_table().get("version") else {
        return Ok(());
    };
    let Some(found) = version.as_integer() else {
        return Ok(()); // not an integer: extraction reports the type with its line
    };
    if found > i64::from(CONFIG_VERSION) {
        return Err(ConfigError::NewerVersion {
            path: locator.file.to_path_buf(),
            found,
            supported: CONFIG_VERSION,
        });
    }
    if found < 1 {
        return Err(ConfigError::Invalid {
            location: locator.locate(&["version"]),
            key: "version".to_owned(),
            problem: format!("must be {CONFIG_VERSION} (found {found})"),
        });
    }
    Ok(())
}
