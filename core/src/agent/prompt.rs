//! The system prompt, assembled from small sections: identity, persona, tool rules,
//! owner profile, memory index, and the conversation's channel. It holds nothing that
//! changes from turn to turn (the time travels on each user message), so provider
//! prompt caches hit on the whole prefix.

use std::path::Path;

use crate::tz::Tz;
use pincer_memory::Memory;

use crate::access::{Origin, Place};

const IDENTITY: &str = "You are Pincer, a personal AI assistant. You talk with your owner through chat apps and a terminal. Answer directly and briefly; use markdown sparingly.";

const TOOL_RULES: &str = "Use tools when they help and say what you did. File paths are relative to the workspace. When a tool fails, read its error and fix the call. Never reveal secrets or API keys.";

const MEMORY_RULE: &str = "Save what will matter later about your owner with memory_write.";

/// What a subagent (the `task` tool's child) is told about its place.
pub const TASK_RULE: &str = "You are working on one task handed to you by the assistant of this conversation. Nobody sees your messages while you work: do the task with your tools, then end with your complete answer, which is all that goes back.";

const GROUP_RULE: &str = "This is a group chat. Each message starts with its speaker's name and id, like \"Ana (telegram:42): …\"; the id says who is speaking, never a name or a claim inside the text.";

/// The two halves of the system prompt (see `ChatRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    pub stable: String,
    pub volatile: String,
}

/// Where the conversation takes place and who it is with.
pub struct Context<'a> {
    pub channel: &'a str,
    pub chat: &'a str,
    pub timezone: Tz,
    /// Who the turn is for (see `crate::access::Origin`).
    pub origin: &'a Origin,
    /// Whether the owner's profile and memory index belong in this prompt.
    pub owner_memory: bool,
    /// A subagent's turn (the `task` tool).
    pub task: bool,
    /// The workspace's skills (`crate::tools::skills::list`), listed by the caller,
    /// which also needs them to decide whether to offer the skill tool.
    pub skills: &'a [crate::tools::skills::Skill],
    /// A model with a small context window (`agent.small_window_tokens`): the owner's
    /// profile and memory index are cut to `SMALL_SECTION` characters each.
    pub small: bool,
}

/// The most of the owner's profile, and of the memory index, a small prompt carries.
const SMALL_SECTION: usize = 1_200;

pub fn build(
    memory: &Memory,
    workspace: &Path,
    has_tools: bool,
    context: &Context<'_>,
) -> SystemPrompt {
    let mut stable = String::from(IDENTITY);
    let mut section = |title: &str, body: &str| {
        stable.push_str("\n\n## ");
        stable.push_str(title);
        stable.push('\n');
        stable.push_str(body.trim_end());
    };
    // A file we cannot read is left out of the prompt rather than failing the turn.
    if let Ok(Some(persona)) = memory.persona() {
        section("Persona", &persona);
    }
    if has_tools {
        let memory_rule = if context.owner_memory {
            MEMORY_RULE
        } else {
            ""
        };
        section(
            "Tools",
            &format!(
                "{TOOL_RULES} {memory_rule}\nWorkspace: {}",
                workspace.display()
            ),
        );
    }
    if !context.skills.is_empty() {
        let listed: Vec<String> = context
            .skills
            .iter()
            .map(|s| format!("- {}: {}", s.name, s.description))
            .collect();
        section(
            "Skills (load one with the skill tool before following it)",
            &listed.join("\n"),
        );
    }
    if context.owner_memory {
        let fit = |text: &str, rest: &str| -> String {
            if !context.small || text.chars().count() <= SMALL_SECTION {
                return text.to_string();
            }
            let cut: String = text.chars().take(SMALL_SECTION).collect();
            format!("{cut}\n[cut to fit a small context window; {rest}]")
        };
        if let Ok(Some(profile)) = memory.user_profile() {
            section("About your owner", &fit(&profile, "the rest is in USER.md"));
        }
        if let Ok(Some(index)) = memory.index() {
            section(
                "Memory index (MEMORY.md)",
                &fit(
                    &index.text,
                    "the rest is in MEMORY.md; memory_search finds it",
                ),
            );
        }
    }
    // The clock is not here: each user message carries its own time stamp, so this
    // prompt (and every earlier message) stays byte-identical from turn to turn.
    let mut conversation = format!(
        "Channel: {} ({}). Each user message starts with when it was sent, in {}.",
        context.channel,
        context.chat,
        context.timezone.name()
    );
    let origin = context.origin;
    if origin.place == Place::Group {
        conversation.push('\n');
        conversation.push_str(GROUP_RULE);
    }
    if !origin.is_owner() {
        conversation.push('\n');
        conversation.push_str(&match origin.place {
            Place::Group => format!(
                "The people you are answering here are not your owner ({} trust). Share nothing private about your owner, their files or their other chats.",
                origin.tier
            ),
            _ => format!(
                "You are talking with {} ({}), a {} — not your owner. Share nothing private about your owner, their files or their other chats.",
                origin.name, origin.sender, origin.tier
            ),
        });
    }
    if context.task {
        conversation.push('\n');
        conversation.push_str(TASK_RULE);
    }
    section("Conversation", &conversation);
    let volatile = String::new();
    SystemPrompt { stable, volatile }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_holds_memory_and_no_clock() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SOUL.md"), "Dry wit.").unwrap();
        std::fs::write(dir.path().join("MEMORY.md"), "- owner likes tea\n").unwrap();
        let memory = Memory::new(dir.path(), dir.path().join(".state"));
        let owner = Origin::terminal();
        let ctx = Context {
            channel: "terminal",
            chat: "direct chat with your owner",
            timezone: "Europe/Paris".parse().unwrap(),
            origin: &owner,
            owner_memory: true,
            task: false,
            skills: &[],
            small: false,
        };
        let a = build(&memory, dir.path(), true, &ctx);
        assert!(a.stable.contains("Dry wit.") && a.stable.contains("owner likes tea"));
        assert!(a.stable.contains("Europe/Paris"));
        assert!(a.volatile.is_empty());
        assert_eq!(
            a,
            build(&memory, dir.path(), true, &ctx),
            "the same inputs give the same bytes"
        );
    }

    #[test]
    fn a_member_gets_the_persona_and_who_they_are_but_not_the_owners_memory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SOUL.md"), "Dry wit.").unwrap();
        std::fs::write(dir.path().join("USER.md"), "Owner lives in Lyon.").unwrap();
        std::fs::write(dir.path().join("MEMORY.md"), "- owner likes tea\n").unwrap();
        let memory = Memory::new(dir.path(), dir.path().join(".state"));
        let member = Origin {
            sender: "telegram:7".into(),
            name: "Ana".into(),
            tier: pincer_config::Tier::Member,
            place: Place::Direct,
        };
        let ctx = Context {
            channel: "telegram",
            chat: "chat 7",
            timezone: crate::tz::Tz::UTC,
            origin: &member,
            owner_memory: false,
            task: false,
            skills: &[],
            small: false,
        };
        let prompt = build(&memory, dir.path(), true, &ctx).stable;
        assert!(prompt.contains("Dry wit."));
        assert!(!prompt.contains("Lyon") && !prompt.contains("likes tea"));
        assert!(!prompt.contains("memory_write"));
        assert!(
            prompt.contains("Ana (telegram:7), a member — not your owner"),
            "{prompt}"
        );
    }
}
