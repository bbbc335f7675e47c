//! Who a tool call is made for, and so which tools they may use. Owners have every tool
//! (the tools that touch the owner's memory — by their declared `Effects` — only where
//! their memory belongs in the turn: direct chats, the terminal, their own jobs; groups
//! only with `access.owner_memory_in_groups`). Members and guests have the tools
//! `access.member_tools` / `guest_tools` name (names or globs such as
//! `mcp__weather__*`), and never the owner's memory. A subagent has only the tools
//! declared for subagents. A conversation a host restricted with a tool preset has only
//! what the preset keeps (`preset`). A tool a caller may not use is not offered to the
//! model and is refused if called anyway.

use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use pincer_config::{AccessConfig, Tier};

use super::preset::ToolPreset;
use super::{Effects, ToolError};
use crate::access::{Origin, Place};

/// `[access]`'s tool lists, compiled once at start.
#[derive(Debug, Clone)]
pub struct ToolPolicy {
    member: Arc<GlobSet>,
    guest: Arc<GlobSet>,
    owner_memory_in_groups: bool,
}

/// A tool pattern of `access.member_tools`/`guest_tools` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolPatternError {
    #[error(
        "access.{key}: `{pattern}` is not a tool name or glob ({why}); write e.g. \"web_search\" or \"mcp__weather__*\""
    )]
    Glob {
        key: &'static str,
        pattern: String,
        why: String,
    },
    /// The patterns, each fine, could not be put together.
    #[error("access.{key}: {why}")]
    Set { key: &'static str, why: String },
}

impl ToolPolicy {
    /// A pattern that is not a glob is an error naming its key.
    pub fn new(access: &AccessConfig) -> Result<ToolPolicy, ToolPatternError> {
        let compile =
            |patterns: &[String], key: &'static str| -> Result<Arc<GlobSet>, ToolPatternError> {
                let mut set = GlobSetBuilder::new();
                for pattern in patterns {
                    let glob = Glob::new(pattern).map_err(|e| ToolPatternError::Glob {
                        key,
                        pattern: pattern.clone(),
                        why: e.to_string(),
                    })?;
                    set.add(glob);
                }
                set.build()
                    .map(Arc::new)
                    .map_err(|e| ToolPatternError::Set {
                        key,
                        why: e.to_string(),
                    })
            };
        Ok(ToolPolicy {
            member: compile(&access.member_tools, "member_tools")?,
            guest: compile(&access.guest_tools, "guest_tools")?,
            owner_memory_in_groups: access.owner_memory_in_groups,
        })
    }

    /// What `origin` may use in a turn.
    pub fn caller(&self, origin: Origin) -> Caller {
        let tools = match origin.tier {
            Tier::Owner => None,
            Tier::Member => Some(Arc::clone(&self.member)),
            Tier::Guest => Some(Arc::clone(&self.guest)),
        };
        let memory = origin.owner_memory(self.owner_memory_in_groups);
        Caller {
            origin,
            tools,
            memory,
            subagent: false,
            preset: ToolPreset::Full,
        }
    }

    /// Whether the owner's memory (USER.md, MEMORY.md, recall) belongs in `origin`'s turn.
    pub fn owner_memory(&self, origin: &Origin) -> bool {
        origin.owner_memory(self.owner_memory_in_groups)
    }
}

impl Default for ToolPolicy {
    fn default() -> Self {
        // The defaults are valid globs; a failure here would be a bug in them.
        ToolPolicy::new(&AccessConfig::default()).unwrap_or(ToolPolicy {
            member: Arc::new(GlobSet::empty()),
            guest: Arc::new(GlobSet::empty()),
            owner_memory_in_groups: false,
        })
    }
}

/// The person a turn's tool calls are made for, and what they may use.
#[derive(Debug, Clone)]
pub struct Caller {
    pub origin: Origin,
    /// `None`: every tool (owners).
    tools: Option<Arc<GlobSet>>,
    /// Whether the owner's memory tools are available in this turn.
    memory: bool,
    /// A subagent's turn: no tasks of its own, no messages or jobs of its own.
    subagent: bool,
    /// What the conversation's host kept (`--tool-preset`); `Full` elsewhere.
    preset: ToolPreset,
}

impl Caller {
    /// The owner at the terminal: every tool.
    pub fn owner() -> Caller {
        Caller {
            origin: Origin::terminal(),
            tools: None,
            memory: true,
            subagent: false,
            preset: ToolPreset::Full,
        }
    }

    /// The same caller in a subagent's turn: only the tools declared for subagents (it
    /// runs one level deep, and speaks only through its answer).
    pub fn subagent(mut self) -> Caller {
        self.subagent = true;
        self
    }

    /// The same caller, held to a host's tool preset.
    pub fn with_preset(mut self, preset: ToolPreset) -> Caller {
        self.preset = preset;
        self
    }

    /// Whether `tool` (its real name, aliases resolved), which does `effects`, may be
    /// used.
    pub fn may_use(&self, tool: &str, effects: Effects) -> bool {
        if !self.preset.allows(effects) {
            return false;
        }
        if effects.owner_memory() && !self.memory {
            return false;
        }
        if effects.contains(Effects::CONVERSATIONS)
            && self.origin.place == Place::Group
            && !self.memory
        {
            return false;
        }
        if self.subagent && !effects.in_subagents() {
            return false;
        }
        self.tools
            .as_ref()
            .is_none_or(|set| set.is_match(tool) || effects.contains(Effects::ANY_TIER))
    }

    /// Whether every file of the workspace is open to this caller: the owner, where the
    /// owner's memory belongs (not a group, unless `access.owner_memory_in_groups`).
    pub fn full_access(&self) -> bool {
        self.origin.is_owner() && self.memory
    }

    /// Whether a call of a tool that reaches the workspace by a `path` (`takes_path`,
    /// from its schema) stays out of the owner's private files, by the path it names.
    /// Anyone but the owner in their own places (`full_access`) never reads, sends or
    /// writes USER.md, MEMORY.md, HEARTBEAT.md (its tasks run as the owner), `memory/`,
    /// `inbox/` (what people sent the owner), `tool-output/`, or any dot-entry at the
    /// workspace root (`.git`, `.pincer`) — names compared without case, as a
    /// case-insensitive disk does; nor writes under `skills/`; nor reads the whole
    /// workspace at once (its root), which holds them. What an open really reached is
    /// checked again (`may_reach`).
    pub fn may_touch(
        &self,
        tool: &str,
        effects: Effects,
        takes_path: bool,
        args: &serde_json::Value,
    ) -> Result<(), ToolError> {
        if self.full_access() || !takes_path || !effects.workspace() {
            return Ok(());
        }
        let writes = effects.contains(Effects::WRITES_WORKSPACE);
        let searches = !writes;
        let path = args
            .get("path")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(".");
        let normal = normalise(path);
        let first = normal.split('/').next().unwrap_or_default();
        let refused = is_private(first)
            || (writes && first.eq_ignore_ascii_case("skills"))
            || (searches && normal.is_empty());
        if refused {
            let what = if normal.is_empty() {
                "the whole workspace"
            } else {
                path
            };
            return Err(self.private_refusal(tool, what));
        }
        Ok(())
    }

    /// After the open: whether the file or folder it really reached (`real`, its path
    /// below the workspace, through any symlink) is one of the owner's private ones, or
    /// the workspace's root itself (which holds them all).
    pub fn may_reach(&self, tool: &str, given: &str, real: &[String]) -> Result<(), ToolError> {
        if self.full_access() {
            return Ok(());
        }
        match real.first() {
            Some(first) if is_private(first) => Err(self.private_refusal(tool, given)),
            None => Err(self.private_refusal(tool, &format!("{given} (the whole workspace)"))),
            _ => Ok(()),
        }
    }

    fn private_refusal(&self, tool: &str, what: &str) -> ToolError {
        if self.origin.is_owner() {
            return ToolError(format!(
                "{tool} on {what} is not available here: the owner's private files stay out of group chats (access.owner_memory_in_groups)"
            ));
        }
        ToolError(format!(
            "{tool} on {what} is not available to {} ({}): the owner's private files stay the owner's; use a folder of your own",
            self.origin.name, self.origin.tier
        ))
    }

    /// Why a call to `tool` (which does `effects`) is refused, for the model.
    pub fn refusal(&self, tool: &str, effects: Effects) -> String {
        if !self.preset.allows(effects) {
            return format!(
                "{tool} is not available in this conversation: its host chose the tool preset {} ({}); do not retry it — answer with what those tools can do",
                self.preset.as_str(),
                self.preset.keeps()
            );
        }
        if effects.owner_memory() && self.origin.is_owner() {
            return format!(
                "{tool} is not available here: the owner's memory stays out of group chats (access.owner_memory_in_groups)"
            );
        }
        format!(
            "{tool} is not available to {} ({}); do not retry it — answer with what you can do, or say the owner can allow it with access.{}_tools",
            self.origin.name, self.origin.tier, self.origin.tier
        )
    }
}

/// The owner's private entries at the workspace root.
const PRIVATE: &[&str] = &[
    "USER.md",
    "MEMORY.md",
    "HEARTBEAT.md",
    "memory",
    "inbox",
    "tool-output",
];

/// Whether a first path component names a private entry: one of `PRIVATE` in any case,
/// or a dot-entry (`.git`, `.pincer`, `.gitignore`).
fn is_private(first: &str) -> bool {
    first.starts_with('.') && first != "." && first != ".."
        || PRIVATE.iter().any(|p| p.eq_ignore_ascii_case(first))
}

/// A workspace-relative path with `.` and `..` resolved by hand ("" is the root).
fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.trim().split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Place;

    /// Each tool's effects as declared.
    fn fx(tool: &str) -> Effects {
        let read = Effects::READS_WORKSPACE | Effects::PLAN | Effects::SUBAGENT;
        match tool {
            "read_file" | "grep" | "list_dir" => read,
            "write_file" => {
                Effects::READS_WORKSPACE | Effects::WRITES_WORKSPACE | Effects::SUBAGENT
            }
            "exec" => Effects::RUNS | Effects::WRITES_WORKSPACE | Effects::SUBAGENT,
            "memory_read" => Effects::OWNER_MEMORY | Effects::PLAN | Effects::SUBAGENT,
            "memory_write" => Effects::WRITES_MEMORY | Effects::SUBAGENT,
            "cron" => Effects::SCHEDULES,
            "web_search" => {
                Effects::FETCHES | Effects::UNTRUSTED | Effects::PLAN | Effects::SUBAGENT
            }
            "todo" => Effects::PLAN | Effects::SUBAGENT,
            _ => Effects::STRICTEST.difference(Effects::OWNER_MEMORY | Effects::WRITES_MEMORY),
        }
    }

    fn origin(tier: Tier, place: Place) -> Origin {
        Origin {
            sender: "telegram:9".into(),
            name: "Eve".into(),
            tier,
            place,
        }
    }

    #[test]
    fn each_tier_gets_its_tools_and_only_owners_the_memory() {
        let mut access = AccessConfig::default();
        access.member_tools.push("mcp__weather__*".into());
        access.member_tools.push("memory_read".into());
        let policy = ToolPolicy::new(&access).unwrap();
        let guest = policy.caller(origin(Tier::Guest, Place::Group));
        assert!(
            guest.may_use("web_search", fx("web_search")) && !guest.may_use("exec", fx("exec"))
        );
        assert!(!guest.may_use("todo", fx("todo")));
        let member = policy.caller(origin(Tier::Member, Place::Direct));
        assert!(
            member.may_use("todo", fx("todo"))
                && member.may_use("mcp__weather__now", fx("mcp__weather__now"))
        );
        assert!(
            !member.may_use("mcp__github__push", fx("mcp__github__push"))
                && !member.may_use("cron", fx("cron"))
        );
        assert!(
            !member.may_use("memory_read", fx("memory_read")),
            "never the owner's memory"
        );
        let owner = policy.caller(origin(Tier::Owner, Place::Direct));
        assert!(
            owner.may_use("exec", fx("exec")) && owner.may_use("memory_write", fx("memory_write"))
        );
        let sub = policy.caller(origin(Tier::Owner, Place::Direct)).subagent();
        assert!(sub.may_use("read_file", fx("read_file")) && !sub.may_use("cron", fx("cron")));
        assert!(
            !sub.may_use("mcp__x__y", Effects::STRICTEST),
            "undeclared: not for subagents"
        );
        let owner_in_group = policy.caller(origin(Tier::Owner, Place::Group));
        assert!(
            owner_in_group.may_use("exec", fx("exec"))
                && !owner_in_group.may_use("memory_read", fx("memory_read"))
        );
        assert!(
            owner_in_group
                .refusal("memory_read", fx("memory_read"))
                .contains("owner_memory_in_groups")
        );
        assert!(
            guest
                .refusal("exec", fx("exec"))
                .contains("access.guest_tools")
        );
    }

    #[test]
    fn non_owners_keep_out_of_the_owners_files_whatever_their_tools() {
        let access = AccessConfig {
            member_tools: vec!["read_file".into(), "write_file".into(), "grep".into()],
            ..AccessConfig::default()
        };
        let policy = ToolPolicy::new(&access).unwrap();
        let member = policy.caller(origin(Tier::Member, Place::Direct));
        let path = |p: &str| serde_json::json!({ "path": p });
        for private in [
            "USER.md",
            "./MEMORY.md",
            "notes/../memory/cat.md",
            "HEARTBEAT.md",
            "inbox/x.png",
        ] {
            assert!(
                member
                    .may_touch("read_file", fx("read_file"), true, &path(private))
                    .is_err(),
                "{private}"
            );
        }
        assert!(
            member
                .may_touch(
                    "write_file",
                    fx("write_file"),
                    true,
                    &path("skills/evil/SKILL.md")
                )
                .is_err()
        );
        assert!(
            member
                .may_touch(
                    "read_file",
                    fx("read_file"),
                    true,
                    &path("skills/a/SKILL.md")
                )
                .is_ok()
        );
        assert!(
            member
                .may_touch("grep", fx("grep"), true, &path("."))
                .is_err()
        );
        // A tool that takes no path (exec) is held by its tier's tools, not by a path.
        assert!(
            member
                .may_touch(
                    "exec",
                    fx("exec"),
                    false,
                    &serde_json::json!({"command": "ls"})
                )
                .is_ok()
        );
        assert!(
            member
                .may_touch("grep", fx("grep"), true, &path("notes"))
                .is_ok()
        );
        assert!(
            member
                .may_touch("write_file", fx("write_file"), true, &path("notes/mine.md"))
                .is_ok()
        );
        let owner = policy.caller(origin(Tier::Owner, Place::Direct));
        assert!(
            owner
                .may_touch("read_file", fx("read_file"), true, &path("USER.md"))
                .is_ok()
        );
    }

    #[test]
    fn a_hosts_tool_preset_holds_the_owner_too() {
        let owner = Caller::owner().with_preset(ToolPreset::ReadOnly);
        assert!(owner.may_use("read_file", fx("read_file")));
        assert!(
            !owner.may_use("write_file", fx("write_file")) && !owner.may_use("exec", fx("exec"))
        );
        let why = owner.refusal("write_file", fx("write_file"));
        assert!(
            why.contains("read-only") && why.contains("do not retry"),
            "{why}"
        );
    }

    #[test]
    fn a_bad_pattern_names_its_key() {
        let access = AccessConfig {
            guest_tools: vec!["web_[".into()],
            ..AccessConfig::default()
        };
        let err = ToolPolicy::new(&access).unwrap_err().to_string();
        assert!(
            err.contains("access.guest_tools") && err.contains("web_["),
            "{err}"
        );
    }
}
