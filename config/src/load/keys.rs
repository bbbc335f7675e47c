//! The valid keys of `config.toml`, table by table: the single list that unknown-key checks
//! and "did you mean" suggestions read. A test proves it matches the serde types exactly,
//! so adding a field to a section without adding it here fails the build's tests.

/// One position in the key tree.
#[derive(Debug)]
pub(crate) enum Node {
    /// A value (scalar, list, or a table the types treat as a value).
    Leaf,
    /// A table with exactly these keys.
    Table(&'static [(&'static str, Node)]),
    /// A table whose keys are the user's names (`providers`, `prices`, `mcp.servers`);
    /// each name's value has this shape.
    Names(&'static Node),
}

use Node::{Leaf, Names, Table};

const CHANNEL: Node = Table(&[
    ("enabled", Leaf),
    ("api_url", Leaf),
    ("dm_policy", Leaf),
    ("allow_from", Leaf),
    ("group_policy", Leaf),
    ("groups", Leaf),
    ("media_max_mb", Leaf),
    ("ack_reaction", Leaf),
    ("silence_secs", Leaf),
]);

const SLACK: Node = Table(&[
    ("enabled", Leaf),
    ("api_url", Leaf),
    ("dm_policy", Leaf),
    ("allow_from", Leaf),
    ("group_policy", Leaf),
    ("groups", Leaf),
    ("media_max_mb", Leaf),
    ("ack_reaction", Leaf),
    ("silence_secs", Leaf),
    ("mode", Leaf),
    ("listen", Leaf),
]);

const MATRIX: Node = Table(&[
    ("enabled", Leaf),
    ("homeserver", Leaf),
    ("user_id", Leaf),
    ("encryption", Leaf),
    ("dm_policy", Leaf),
    ("allow_from", Leaf),
    ("group_policy", Leaf),
    ("groups", Leaf),
    ("media_max_mb", Leaf),
    ("ack_reaction", Leaf),
    ("silence_secs", Leaf),
    ("invites_per_hour", Leaf),
]);

const PROVIDER: Node = Table(&[
    ("kind", Leaf),
    ("base_url", Leaf),
    ("timeout_secs", Leaf),
    ("idle_timeout_secs", Leaf),
]);

const PRICE: Node = Table(&[
    ("input", Leaf),
    ("output", Leaf),
    ("cache_read", Leaf),
    ("cache_write", Leaf),
]);

const MODEL: Node = Table(&[
    ("vision", Leaf),
    ("context_tokens", Leaf),
    ("thinking_budget", Leaf),
    ("call_timeout_secs", Leaf),
    ("text_tool_calls", Leaf),
]);

const HOOK: Node = Table(&[
    ("event", Leaf),
    ("tools", Leaf),
    ("command", Leaf),
    ("timeout_secs", Leaf),
]);
const MCP_SERVER: Node = Table(&[
    ("command", Leaf),
    ("args", Leaf),
    ("url", Leaf),
    ("sandbox", Leaf),
    ("cwd", Leaf),
    ("trusted", Leaf),
]);

/// The whole of `config.toml`.
pub(crate) const ROOT: Node = Table(&[
    ("version", Leaf),
    (
        "agent",
        Table(&[
            ("workspace", Leaf),
            ("max_iterations", Leaf),
            ("max_turn_cost_usd", Leaf),
            ("max_day_cost_usd", Leaf),
            ("max_turn_secs", Leaf),
            ("queue_mode", Leaf),
            ("timezone", Leaf),
            ("owners", Leaf),
            ("idle_session_secs", Leaf),
            ("max_tokens", Leaf),
            ("compact_at", Leaf),
            ("task_max_iterations", Leaf),
            ("small_window_tokens", Leaf),
            ("small_window_tools", Leaf),
            ("always_tools", Leaf),
        ]),
    ),
    (
        "router",
        Table(&[("threshold", Leaf), ("light", Leaf), ("heavy", Leaf)]),
    ),
    ("providers", Names(&PROVIDER)),
    ("prices", Names(&PRICE)),
    ("models", Names(&MODEL)),
    (
        "transcription",
        Table(&[("provider", Leaf), ("model", Leaf), ("max_minutes", Leaf)]),
    ),
    (
        "voice",
        Table(&[
            ("reply", Leaf),
            ("provider", Leaf),
            ("model", Leaf),
            ("voice", Leaf),
            ("command", Leaf),
            ("max_chars", Leaf),
        ]),
    ),
    (
        "channels",
        Table(&[
            ("telegram", CHANNEL),
            ("discord", CHANNEL),
            ("slack", SLACK),
            ("matrix", MATRIX),
        ]),
    ),
    (
        "tools",
        Table(&[
            (
                "exec",
                Table(&[
                    ("deny_groups", Leaf),
                    ("sandbox", Leaf),
                    ("network", Leaf),
                    (
                        "limits",
                        Table(&[
                            ("memory_mb", Leaf),
                            ("cpu_secs", Leaf),
                            ("file_size_mb", Leaf),
                            ("open_files", Leaf),
                            ("processes", Leaf),
                        ]),
                    ),
                ]),
            ),
            (
                "permissions",
                Table(&[
                    ("allow", Leaf),
                    ("ask", Leaf),
                    ("deny", Leaf),
                    ("approval_timeout_secs", Leaf),
                ]),
            ),
            ("web_search", Table(&[("backend", Leaf), ("url", Leaf)])),
            (
                "browser",
                Table(&[
                    ("idle_s", Leaf),
                    ("allow_private", Leaf),
                    ("executable", Leaf),
                ]),
            ),
            ("hooks", Names(&HOOK)),
            ("after_untrusted", Leaf),
        ]),
    ),
    ("cron", Table(&[("grace_secs", Leaf)])),
    (
        "heartbeat",
        Table(&[("enabled", Leaf), ("every", Leaf), ("max_day_tokens", Leaf)]),
    ),
    (
        "memory",
        Table(&[("dream_schedule", Leaf), ("dream_max_tokens", Leaf)]),
    ),
    (
        "mcp",
        Table(&[("servers", Names(&MCP_SERVER)), ("connect_wait_secs", Leaf)]),
    ),
    (
        "access",
        Table(&[
            ("member_tools", Leaf),
            ("guest_tools", Leaf),
            ("owner_memory_in_groups", Leaf),
            ("rate_per_minute", Leaf),
            ("member_day_cost_usd", Leaf),
            ("guest_day_cost_usd", Leaf),
            ("inbox_max_mb_per_day", Leaf),
        ]),
    ),
    ("workspace", Table(&[("retention_days", Leaf)])),
    ("web", Table(&[("enabled", Leaf), ("listen", Leaf)])),
    ("host", Table(&[("approval_timeout_secs", Leaf)])),
]);

impl Node {
    /// The node one key below this one: `Ok(child)`, or `Err(valid keys)` when `key` is
    /// not allowed here (an empty list when this node takes no keys at all).
    pub(crate) fn child(&self, key: &str) -> Result<&Node, Vec<String>> {
        match self {
            Leaf => Err(Vec::new()),
            Names(inner) => Ok(inner),
            Table(fields) => fields
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, node)| node)
                .ok_or_else(|| fields.iter().map(|(name, _)| (*name).to_owned()).collect()),
        }
    }
}

/// The valid key closest to `wrong`, if any is close enough to be a likely typo.
pub(crate) fn suggest<S: AsRef<str>>(wrong: &str, valid: &[S]) -> Option<String> {
    let wrong_lower = wrong.to_lowercase();
    valid
        .iter()
        .map(|v| (strsim::jaro_winkler(&wrong_lower, v.as_ref()), v.as_ref()))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, v)| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use figment::Figment;
    use figment::providers::Serialized;
    use figment::value::{Dict, Value};

    /// Every table path in the registry, with a placeholder for user names.
    fn tables(node: &Node, path: Vec<String>, out: &mut Vec<(Vec<String>, Vec<String>)>) {
        match node {
            Leaf => {}
            Names(inner) => {
                let mut p = path;
                p.push("somename".into());
                tables(inner, p, out);
            }
            Table(fields) => {
                out.push((
                    path.clone(),
                    fields.iter().map(|(n, _)| (*n).to_owned()).collect(),
                ));
                for (name, child) in *fields {
                    let mut p = path.clone();
                    p.push((*name).to_owned());
                    tables(child, p, out);
                }
            }
        }
    }

    fn nest(path: &[String], leaf: Value) -> Value {
        path.iter().rev().fold(leaf, |inner, key| {
            let mut dict = Dict::new();
            dict.insert(key.clone(), inner);
            Value::from(dict)
        })
    }

    #[test]
    fn registry_matches_the_serde_types() {
        let mut all = Vec::new();
        tables(&ROOT, Vec::new(), &mut all);
        assert!(all.len() > 15);
        for (path, mut listed) in all {
            let mut probe = path.clone();
            probe.push("zz_not_a_key".into());
            let value = nest(&probe, Value::from(1));
            let err = Figment::from(Serialized::defaults(value))
                .extract::<Config>()
                .expect_err("unknown key must be refused");
            let figment::error::Kind::UnknownField(_, expected) = err.kind else {
                panic!("{path:?}: expected an unknown-field error, got {err}");
            };
            let mut expected: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
            expected.sort();
            listed.sort();
            assert_eq!(listed, expected, "registry differs from serde at {path:?}");
        }
    }

    #[test]
    fn suggestions_pick_near_keys_only() {
        let valid = ["max_iterations", "max_turn_secs", "timezone"];
        assert_eq!(
            suggest("max_iteration", &valid).as_deref(),
            Some("max_iterations")
        );
        assert_eq!(suggest("timezon", &valid).as_deref(), Some("timezone"));
        assert_eq!(suggest("colour", &valid), None);
    }
}
