//! The system prompt, assembled from small sections. Stable sections come first and
//! form the cached prefix (identity, persona, tool rules, owner profile, memory
//! index); what changes every turn (date, time, channel) goes in the volatile half.

use std::path::Path;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use pincer_memory::Memory;

const IDENTITY: &str = "You are Pincer, a personal AI assistant. You talk with your owner through chat apps and a terminal. Answer directly and briefly; use markdown sparingly.";

const TOOL_RULES: &str = "Use tools when they help and say what you did. File paths are relative to the workspace. When a tool fails, read its error and fix the call. Never reveal secrets or API keys.";

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
    pub now: DateTime<Utc>,
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
    if let Ok(Some(profile)) = memory.user_profile() {
        section("About your owner", &profile);
    }
    if let Ok(Some(index)) = memory.index() {
        section("Memory index (MEMORY.md)", &index.text);
    }
    let local = context.now.with_timezone(&context.timezone);
    let volatile = format!(
        "Now: {} ({}).\nChannel: {} ({}).",
        local.format("%Y-%m-%d %H:%M %A"),
        context.timezone.name(),
        context.channel,
        context.chat,
    );
    SystemPrompt { stable, volatile }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn stable_half_holds_memory_and_volatile_half_the_time() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SOUL.md"), "Dry wit.").unwrap();
        std::fs::write(dir.path().join("MEMORY.md"), "- owner likes tea\n").unwrap();
        let memory = Memory::new(dir.path());
        let now = Utc.with_ymd_and_hms(2026, 11, 22, 8, 30, 0).unwrap();
        let ctx = |now| Context {
            channel: "terminal",
            chat: "direct chat with your owner",
            timezone: chrono_tz::Europe::Paris,
            now,
        };
        let a = build(&memory, dir.path(), true, &ctx(now));
        let b = build(
            &memory,
            dir.path(),
            true,
            &ctx(now + chrono::Duration::hours(3)),
        );
        assert_eq!(
            a.stable, b.stable,
            "the cached prefix must not change with the clock"
        );
        assert!(a.stable.contains("Dry wit.") && a.stable.contains("owner likes tea"));
        assert!(
            a.volatile
                .contains("2026-11-22 09:30 Sunday (Europe/Paris)"),
            "{}",
            a.volatile
        );
        assert!(!a.stable.contains("2026"));
    }
}
