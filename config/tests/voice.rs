//! `[voice]`: its defaults, and each mistake's message naming the fix.

use std::path::PathBuf;

use pincer_config::{VoiceReply, load_str};

fn load(text: &str) -> Result<pincer_config::Config, String> {
    load_str(
        text,
        &PathBuf::from("/h/config.toml"),
        &PathBuf::from("/h/.security.yml"),
        &[],
    )
    .map_err(|e| e.to_string())
}

const PROVIDERS: &str =
    "[providers.openai]\nkind = \"openai\"\n[providers.claude]\nkind = \"anthropic\"\n";

#[test]
fn voice_is_off_by_default_and_answers_voice_notes_once_on() {
    let config = load("").unwrap();
    assert_eq!(config.voice.reply, VoiceReply::ToVoice);
    assert_eq!(config.voice.max_chars, 1000);
    assert!(!config.voice.is_on(), "no provider, no command: off");
    let config = load(&format!("{PROVIDERS}[voice]\nprovider = \"openai\"\n")).unwrap();
    assert!(config.voice.is_on());
    assert_eq!(
        (config.voice.model.as_str(), config.voice.voice.as_str()),
        ("tts-1", "alloy")
    );
    let config = load(
        "[voice]\ncommand = [\"espeak-ng\", \"-w\", \"{out}\", \"--stdin\"]\nreply = \"always\"\n",
    )
    .unwrap();
    assert_eq!(config.voice.reply, VoiceReply::Always);
    assert!(config.voice.is_on());
    let config =
        load("[voice]\ncommand = [\"espeak-ng\", \"-w\", \"{out}\"]\nreply = \"never\"\n").unwrap();
    assert!(!config.voice.is_on(), "never is off");
}

#[test]
fn each_mistake_names_the_fix() {
    let cases = [
        (
            "[voice]\nprovider = \"nope\"\n",
            "voice.provider",
            "not configured",
        ),
        (
            "[voice]\nprovider = \"claude\"\n",
            "voice.provider",
            "Anthropic",
        ),
        (
            "[voice]\nprovider = \"openai\"\ncommand = [\"espeak-ng\", \"-w\", \"{out}\"]\n",
            "voice.command",
            "keep one",
        ),
        (
            "[voice]\ncommand = [\"espeak-ng\", \"hello\"]\n",
            "voice.command",
            "{out}",
        ),
        (
            "[voice]\ncommand = [\"\", \"{out}\"]\n",
            "voice.command",
            "empty program",
        ),
        (
            "[voice]\nprovider = \"openai\"\nmodel = \" \"\n",
            "voice.model",
            "tts-1",
        ),
        ("[voice]\nmax_chars = 0\n", "voice.max_chars", "at least 1"),
        (
            "[voice]\nreply = \"sometimes\"\n",
            "voice.reply",
            "to_voice",
        ),
        ("[voice]\nspeed = 2\n", "voice.speed", "max_chars"),
    ];
    for (text, key, fix) in cases {
        let message = load(&format!("{PROVIDERS}{text}")).unwrap_err();
        assert!(
            message.contains(key) && message.contains(fix),
            "{text:?}: {message}"
        );
    }
}
