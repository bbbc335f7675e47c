//! The system prompt, assembled from small sections: identity, persona, tool rules,
//! owner profile, memory index, and the conversation's channel. It holds nothing that
//! changes from turn to turn (the time travels on each user message), so provider
//! prompt caches hit on the whole prefix.

use std::path::Path;

use chrono_tz::Tz;
use pincer_memory::Memory;

const IDENTITY: &str = "You are Pincer, a personal AI assistant. You talk with your owner through chat apps and a terminal. Answer directly and briefly; use markdown sparingly.";

const TOOL_RULES: &str = "Use tools when they help and say what you did. File paths are relative to the workspace. When a tool fails, read its error and fix the call. Never reveal secrets or API keys. Save what will matter later about your owner with memory_write.";

/// The two halves of the system prompt (see `ChatRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    pub stable: String,
    pub volatile: String,
}

/// Where the conversation takes place, for the volatile half.
pub struct Context<'a> {
    pub channel: &'a str,
    pub chat: &'a str,
    pub timezone: Tz,
}

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
        section(
            "Tools",
            &format!("{TOOL_RULES}\nWorkspace: {}", workspace.display()),
        );
    }
    let skills = crate::tools::skills::list(workspace);
    if !skills.is_empty() {
        let listed: Vec<String> = skills
            .iter()
            .map(|s| format!("- {}: {}", s.name, s.description))
            .collect();
        section(
            "Skills (load one with the skill tool before following it)",
            &listed.join("\n"),
        );
    }
    if let Ok(Some(profile)) = memory.user_profile() {
        section("About your owner", &profile);
    }
    if let Ok(Some(index)) = memory.index() {
        section("Memory index (MEMORY.md)", &index.text);
    }
    // The clock is not here: each user message carries its own time stamp, so this
    // prompt (and every earlier message) stays byte-identical from turn to turn.
    section(
        "Conversation",
        &format!(
            "Channel: {} ({}). Each user message starts with when it was sent, in {}.",
            context.channel,
            context.chat,
            context.timezone.name()
        ),
    );
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
        let memory = Memory::new(dir.path());
        let ctx = Context {
            channel: "terminal",
            chat: "direct chat with your owner",
            timezone: chrono_tz::Europe::Paris,
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
}
