//! Environment overrides: which variables are configuration, the key path each names, and
//! a figment provider serving them. Only variables that start with `PINCER_` *and* contain
//! `__` count (`PINCER_AGENT__MAX_ITERATIONS=10` → `agent.max_iterations`), so
//! `PINCER_HOME` and friends are never keys. The process environment is never read here:
//! callers pass it in.

use figment::value::{Dict, Map, Value};
use figment::{Error, Metadata, Profile, Provider};

use crate::ConfigError;

const PREFIX: &str = "PINCER_";

/// One configuration override from the environment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EnvOverride {
    /// The variable as given, for messages.
    pub var: String,
    /// Lower-cased key path.
    pub path: Vec<String>,
    /// The raw value (parsed like figment's `Env`: numbers, booleans, `[..]` lists).
    pub value: String,
}

/// Picks the override variables out of `env`, sorted by name so the result is the same
/// whatever order the environment listed them in.
pub(crate) fn select(env: &[(String, String)]) -> Result<Vec<EnvOverride>, ConfigError> {
    let mut out = Vec::new();
    for (var, value) in env {
        let Some(rest) = var.strip_prefix(PREFIX) else {
            continue;
        };
        if !rest.contains("__") {
            continue;
        }
        let path: Vec<String> = rest.split("__").map(str::to_lowercase).collect();
        if path.iter().any(String::is_empty) {
            return Err(ConfigError::BadEnvName { var: var.clone() });
        }
        out.push(EnvOverride {
            var: var.clone(),
            path,
            value: value.clone(),
        });
    }
    out.sort_by(|a, b| a.var.cmp(&b.var));
    Ok(out)
}

/// Name figment reports for values that came from [`EnvProvider`].
pub(crate) const METADATA_NAME: &str = "PINCER_ environment variables";

/// Serves a set of overrides to figment as one nested dictionary.
pub(crate) struct EnvProvider<'a>(pub &'a [EnvOverride]);

impl Provider for EnvProvider<'_> {
    fn metadata(&self) -> Metadata {
        Metadata::named(METADATA_NAME)
    }

    fn data(&self) -> Result<Map<Profile, Dict>, Error> {
        let mut root = Dict::new();
        for o in self.0 {
            let Ok(value) = o.value.parse::<Value>();
            insert(&mut root, &o.path, value);
        }
        let mut map = Map::new();
        map.insert(Profile::Default, root);
        Ok(map)
    }
}

/// Inserts `value` at `path`, creating (or replacing non-table values with) tables on the
/// way. Conflicts such as `a__b` next to `a__b__c` are reported as unknown keys earlier.
fn insert(dict: &mut Dict, path: &[String], value: Value) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        dict.insert(first.clone(), value);
        return;
    }
    let entry = dict
        .entry(first.clone())
        .or_insert_with(|| Value::from(Dict::new()));
    if entry.as_dict().is_none() {
        *entry = Value::from(Dict::new());
    }
    if let Value::Dict(_, inner) = entry {
        insert(inner, rest, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn only_prefixed_variables_with_double_underscore_count() {
        let got = select(&env(&[
            ("PINCER_HOME", "/x"),
            ("PINCER_LOG", "debug"),
            ("HOME", "/home/u"),
            ("OTHER__X", "1"),
            ("PINCER_AGENT__MAX_ITERATIONS", "10"),
        ]))
        .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path, ["agent", "max_iterations"]);
    }

    #[test]
    fn empty_segments_are_refused() {
        let err = select(&env(&[("PINCER_AGENT____X", "1")])).unwrap_err();
        assert!(err.to_string().contains("PINCER_AGENT____X"), "{err}");
    }
}
