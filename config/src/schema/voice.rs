//! `[voice]`: spoken replies. A reply can also go out as a voice message, read by a
//! text-to-speech server (an OpenAI-compatible `/audio/speech` named by `provider`) or
//! by a local program (`command`, e.g. espeak-ng or piper) that writes a WAV. Off while
//! neither is set. The reply's text is always shown as well.

use serde::{Deserialize, Serialize};

/// `[voice] reply`: which replies are also spoken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoiceReply {
    /// No reply is spoken.
    Never,
    /// A voice note is answered with a voice message (and its text).
    #[default]
    ToVoice,
    /// Every reply in a chat is spoken too.
    Always,
}

/// `[voice]`; see the module doc.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VoiceConfig {
    /// Which replies are spoken.
    pub reply: VoiceReply,
    /// The name of a `[providers.X]` (OpenAI-compatible) whose base URL serves
    /// `/audio/speech`. Set this or `command`, not both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The speech model the endpoint knows (`tts-1`, `gpt-4o-mini-tts`, a local model).
    pub model: String,
    /// The endpoint's voice (`alloy`, `nova`, …).
    pub voice: String,
    /// A local program that writes a WAV, as its argv (no shell): `{out}` is replaced by
    /// the WAV's path; the text arrives on its standard input, or, if an element is
    /// exactly `{text}`, as that one argument.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Only this many characters of a reply are read aloud; the whole text is shown.
    pub max_chars: usize,
}

impl VoiceConfig {
    /// Whether speech is configured at all.
    pub fn is_on(&self) -> bool {
        self.reply != VoiceReply::Never && (self.provider.is_some() || !self.command.is_empty())
    }
}

impl Default for VoiceConfig {
    fn default() -> Self {
        Self {
            reply: VoiceReply::default(),
            provider: None,
            model: "tts-1".into(),
            voice: "alloy".into(),
            command: Vec::new(),
            max_chars: 1000,
        }
    }
}
