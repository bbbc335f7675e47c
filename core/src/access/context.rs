//! Recent unaddressed group messages, kept (bounded, in memory) so that when someone
//! does address the bot it knows what the conversation was about.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use pincer_channels::SessionKey;

/// Messages kept per group.
const PER_GROUP: usize = 20;
/// Groups tracked at once; past this the oldest group's context is dropped.
const MAX_GROUPS: usize = 256;
/// A kept message is cut to this many characters.
const MAX_CHARS: usize = 500;

#[derive(Default)]
pub(super) struct GroupContext {
    groups: Mutex<HashMap<SessionKey, (u64, VecDeque<String>)>>,
}

impl GroupContext {
    /// Keep `line` (a speaker line, see `speaker_line`) as context for `key`'s group.
    pub(super) fn remember(&self, key: &SessionKey, line: String) {
        let Ok(mut groups) = self.groups.lock() else {
            return;
        };
        let tick = groups.values().map(|(t, _)| *t).max().unwrap_or(0) + 1;
        if !groups.contains_key(key) && groups.len() >= MAX_GROUPS {
            let oldest = groups
                .iter()
                .min_by_key(|(_, (t, _))| *t)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                groups.remove(&oldest);
            }
        }
        let entry = groups
            .entry(key.clone())
            .or_insert_with(|| (tick, VecDeque::new()));
        entry.0 = tick;
        let line: String = line.chars().take(MAX_CHARS).collect();
        entry.1.push_back(line);
        while entry.1.len() > PER_GROUP {
            entry.1.pop_front();
        }
    }

    /// `said`, preceded by what the group said since the bot was last addressed.
    pub(super) fn with_context(&self, key: &SessionKey, said: String) -> String {
        let recent = self
            .groups
            .lock()
            .ok()
            .and_then(|mut groups| groups.remove(key))
            .map(|(_, lines)| lines)
            .unwrap_or_default();
        if recent.is_empty() {
            return said;
        }
        let lines: Vec<String> = recent.into_iter().collect();
        format!(
            "[Recent messages in this group, for context]\n{}\n\n[Addressed to you]\n{said}",
            lines.join("\n")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_is_bounded_and_used_once() {
        let context = GroupContext::default();
        let g: SessionKey = "test:group:g".parse().unwrap();
        for n in 0..30 {
            context.remember(&g, format!("Ann: message {n}"));
        }
        let text = context.with_context(&g, "Bob: @bot what do you think?".into());
        assert!(text.contains("Ann: message 29") && !text.contains("message 9\n"));
        assert_eq!(text.matches("Ann:").count(), PER_GROUP);
        assert_eq!(
            context.with_context(&g, "again".into()),
            "again",
            "context is consumed"
        );
    }
}
