//! Refusing secrets in `config.toml` (and in `PINCER_..__..` overrides): a key named
//! `api_key`, `api_keys`, `password` or ending in `token`/`secret`, whose value is not a
//! table, is reported before anything else is checked, with where it belongs instead.
//! Free-form names (`[providers.mytoken]`) are tables, so they never match.

use std::path::Path;

use toml_edit::{Document, Item, TableLike, Value};

use super::env::EnvOverride;
use super::locate::line_at;
use crate::secrets::channel_secret_env;
use crate::{ConfigError, Location, ProviderKind};

/// Whether a key name looks like it holds a secret.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace('-', "_");
    n == "api_key"
        || n == "api_keys"
        || n.ends_with("token")
        || n.ends_with("secret")
        || n.ends_with("password")
        || n.ends_with("passphrase")
        || n == "recovery_key"
}

/// The first secret-looking key in the file (in document order), else in the overrides.
pub(crate) fn check(
    doc: &Document<String>,
    env: &[EnvOverride],
    config_file: &Path,
    security_file: &Path,
) -> Result<(), ConfigError> {
    let mut found = Vec::new();
    walk(doc.as_table(), &mut Vec::new(), &mut found);
    if let Some((offset, path)) = found.into_iter().min_by_key(|(offset, _)| *offset) {
        let location = Location::File {
            path: config_file.to_path_buf(),
            line: Some(line_at(doc.raw(), offset)),
        };
        return Err(error(location, &path, doc, security_file));
    }
    for o in env {
        if o.path.last().is_some_and(|k| is_secret_name(k)) {
            let location = Location::Env { var: o.var.clone() };
            return Err(error(location, &o.path, doc, security_file));
        }
    }
    Ok(())
}

fn walk(table: &dyn TableLike, path: &mut Vec<String>, found: &mut Vec<(usize, Vec<String>)>) {
    for (name, item) in table.iter() {
        path.push(name.to_owned());
        let is_table = matches!(item, Item::Table(_) | Item::Value(Value::InlineTable(_)));
        if is_secret_name(name) && !is_table {
            let span = table
                .get_key_value(name)
                .and_then(|(key, _)| key.span())
                .or_else(|| item.span());
            found.push((span.map_or(0, |s| s.start), path.clone()));
        } else {
            walk_item(item, path, found);
        }
        path.pop();
    }
}

fn walk_item(item: &Item, path: &mut Vec<String>, found: &mut Vec<(usize, Vec<String>)>) {
    match item {
        Item::Table(t) => walk(t, path, found),
        Item::ArrayOfTables(a) => a.iter().for_each(|t| walk(t, path, found)),
        Item::Value(v) => walk_value(v, path, found),
        Item::None => {}
    }
}

fn walk_value(value: &Value, path: &mut Vec<String>, found: &mut Vec<(usize, Vec<String>)>) {
    match value {
        Value::InlineTable(t) => walk(t, path, found),
        Value::Array(a) => a.iter().for_each(|v| walk_value(v, path, found)),
        _ => {}
    }
}

fn error(
    location: Location,
    path: &[String],
    doc: &Document<String>,
    security_file: &Path,
) -> ConfigError {
    let (security_key, env_var) = destination(path, doc);
    ConfigError::SecretInConfig {
        location,
        key: path.join("."),
        security_file: security_file.to_path_buf(),
        security_key,
        env_var,
    }
}

/// Where a secret found at `path` belongs in `.security.yml`, and its environment variable.
fn destination(path: &[String], doc: &Document<String>) -> (Option<String>, Option<String>) {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match p.as_slice() {
        ["providers", name, key @ ("api_key" | "api_keys")] => {
            let env = doc
                .as_table()
                .get("providers")
                .and_then(|p| p.get(name))
                .and_then(|p| p.get("kind"))
                .and_then(Item::as_str)
                .and_then(ProviderKind::from_name)
                .map(|k| k.env_var().to_owned());
            (Some(format!("providers.{name}.{key}")), env)
        }
        ["channels", channel, key] => match channel_secret_env(channel, key) {
            Some(env) => (
                Some(format!("channels.{channel}.{key}")),
                Some(env.to_owned()),
            ),
            None => (None, None),
        },
        ["tools", "web_search", "api_key"] => (Some("tools.web_search.api_key".to_owned()), None),
        ["mcp", "servers", name, section @ ("env" | "headers"), var] => {
            (Some(format!("mcp.{name}.{section}.{var}")), None)
        }
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for yes in [
            "api_key",
            "API_KEY",
            "api_keys",
            "bot_token",
            "token",
            "signing_secret",
            "password",
            "db-password",
        ] {
            assert!(is_secret_name(yes), "{yes}");
        }
        for no in ["max_tokens", "api_url", "kind", "tokens", "secrets_file"] {
            assert!(!is_secret_name(no), "{no}");
        }
    }
}
