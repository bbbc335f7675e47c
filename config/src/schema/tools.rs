//! `[tools.*]`: which exec command groups are denied, the allow/ask/deny permission rules,
//! and the web-search backend. The rules' pattern syntax is the core's business; this
//! module only carries the strings.

use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `[tools]` settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// `[tools.exec]`.
    pub exec: ExecConfig,
    /// `[tools.permissions]`.
    pub permissions: PermissionsConfig,
    /// `[tools.web_search]`.
    pub web_search: WebSearchConfig,
}

/// `[tools.exec]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecConfig {
    /// Dangerous command groups refused by `exec`: `"all"` (default) or a list of names.
    pub deny_groups: DenyGroups,
}

/// `deny_groups = "all"` or `deny_groups = ["net", ...]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DenyGroups {
    /// Every group the core knows is denied.
    #[default]
    All,
    /// Only these groups (an empty list denies none).
    Some(Vec<String>),
}

impl DenyGroups {
    /// Whether the group called `name` is denied.
    pub fn denies(&self, name: &str) -> bool {
        match self {
            Self::All => true,
            Self::Some(names) => names.iter().any(|n| n == name),
        }
    }
}

impl Serialize for DenyGroups {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::All => s.serialize_str("all"),
            Self::Some(names) => {
                let mut seq = s.serialize_seq(Some(names.len()))?;
                for name in names {
                    seq.serialize_element(name)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for DenyGroups {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DenyGroupsVisitor)
    }
}

struct DenyGroupsVisitor;

impl<'de> Visitor<'de> for DenyGroupsVisitor {
    type Value = DenyGroups;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"all\" or a list of group names")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DenyGroups, E> {
        if v == "all" {
            Ok(DenyGroups::All)
        } else {
            Err(E::invalid_value(de::Unexpected::Str(v), &self))
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DenyGroups, A::Error> {
        let mut names = Vec::new();
        while let Some(name) = seq.next_element::<String>()? {
            names.push(name);
        }
        Ok(DenyGroups::Some(names))
    }
}

/// `[tools.permissions]`: rules by tool and argument pattern, checked deny, ask, allow.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Calls that run without asking.
    pub allow: Vec<String>,
    /// Calls that need the owner's yes.
    pub ask: Vec<String>,
    /// Calls refused outright.
    pub deny: Vec<String>,
}

/// `[tools.web_search]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    /// One of [`WebSearchConfig::BACKENDS`]; `None` disables `web_search`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Instance URL (required for `searxng`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl WebSearchConfig {
    /// Backends `backend` may name.
    pub const BACKENDS: [&'static str; 3] = ["brave", "searxng", "tavily"];
}
