//! Voice out: with `[voice]`, a reply is also read aloud — by the fake model's
//! `/v1/audio/speech` or by a local program (espeak-ng) — and sent as a voice message
//! (Telegram `sendVoice`, OGG/Opus; a file on Discord), after its text, which is always
//! shown whole. The tests decode what came back and measure it.

use std::io::Cursor;

use pincer_fakes::telegram::{MediaKind, SentFile};
use pincer_fakes::{SPEECH_SECS_PER_CHAR, Step, discord, telegram};

use super::rig::{OWNER, Rig, Wire};
use crate::common::PATIENCE;

const TRANSCRIPTION: &str = "[transcription]\nprovider = \"fake\"\n";

/// Bytes that start like an OGG file, as a voice note does.
fn voice_note() -> Vec<u8> {
    let mut bytes = b"OggS\0\x02".to_vec();
    bytes.resize(2048, 7);
    bytes
}

/// The length of an OGG/Opus stream in seconds, by decoding every packet (the final
/// granule position, less the pre-skip, must agree with what the decoder gave).
fn decoded_secs(bytes: &[u8]) -> f64 {
    let mut reader = ogg::reading::PacketReader::new(Cursor::new(bytes));
    let head = reader.read_packet_expected().expect("an OpusHead packet");
    assert_eq!(&head.data[..8], b"OpusHead", "an Opus stream");
    let pre_skip = u64::from(u16::from_le_bytes([head.data[10], head.data[11]]));
    let tags = reader.read_packet_expected().expect("an OpusTags packet");
    assert_eq!(&tags.data[..8], b"OpusTags");
    let mut decoder = opus::Decoder::new(48_000, opus::Channels::Mono).expect("decoder");
    let mut pcm = vec![0f32; 5760];
    let (mut decoded, mut granule) = (0u64, 0u64);
    while let Some(packet) = reader.read_packet().expect("a readable OGG stream") {
        let n = decoder
            .decode_float(&packet.data, &mut pcm, false)
            .expect("an Opus packet");
        decoded += n as u64;
        granule = packet.absgp_page();
    }
    assert!(
        decoded >= granule,
        "{decoded} samples decoded, granule {granule}"
    );
    assert!(decoded - granule < 960, "no more than one frame of padding");
    (granule - pre_skip) as f64 / 48_000.0
}

/// Wait for `n` voice messages in the owner's Telegram chat.
async fn voices(rig: &Rig, n: usize) -> Vec<SentFile> {
    let sent = rig.telegram.wait_for_sent_files(n, PATIENCE).await;
    let voices: Vec<SentFile> = sent
        .into_iter()
        .filter(|f| f.kind == MediaKind::Voice)
        .collect();
    assert!(
        voices.len() >= n,
        "{} voice messages, not {n}; gateway log:\n{}",
        voices.len(),
        rig.log()
    );
    voices
}

/// Send `text` in the owner's Telegram chat and wait for the model's echo of it: every
/// earlier message of the chat has been answered (and spoken, if it was to be) then.
async fn round_trip(rig: &Rig, text: &str) {
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, text));
    rig.shown(&rig.telegram, "42", text).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_is_answered_with_a_voice_message_as_long_as_its_text_and_the_text() {
    let config = format!("{TRANSCRIPTION}[voice]\nprovider = \"fake\"\nvoice = \"nova\"\n");
    let mut rig = Rig::new(Wire::OpenAi, "", &config).await;
    rig.model.set_transcript("what should I cook tonight", 3.0);
    rig.model.push(Step::text(
        "Try a **basil** risotto. It takes half an hour.",
    ));
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    rig.shown(&rig.telegram, "42", "basil").await;

    let voice = voices(&rig, 1).await.remove(0);
    assert_eq!(voice.chat_id, 42);
    let speech = rig.model.wait_for_speeches(1, PATIENCE).await.remove(0);
    assert_eq!(
        speech.input, "Try a basil risotto. It takes half an hour.",
        "markdown is not read"
    );
    assert_eq!(
        (speech.model.as_str(), speech.voice.as_str()),
        ("tts-1", "nova")
    );
    assert_eq!(speech.response_format.as_deref(), Some("wav"));
    let expected = speech.input.chars().count() as f64 * SPEECH_SECS_PER_CHAR;
    let secs = decoded_secs(&voice.bytes);
    assert!((secs - expected).abs() < 0.03, "{secs} s, not {expected} s");
    // The text is shown too, whole, before the voice.
    let texts = rig.telegram.sent();
    let text = texts
        .iter()
        .find(|s| s.text.contains("risotto"))
        .expect("the text");
    assert!(text.text.contains("half an hour"), "{}", text.text);
    assert!(text.message_id < voice.message_id, "text first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_speaks_nothing_and_always_speaks_a_typed_message_too() {
    let config = format!("{TRANSCRIPTION}[voice]\nprovider = \"fake\"\nreply = \"never\"\n");
    let mut rig = Rig::new(Wire::OpenAi, "", &config).await;
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    rig.shown(&rig.telegram, "42", "echo:").await;
    round_trip(&rig, "and now?").await;
    assert!(
        rig.model.speeches().is_empty(),
        "{:?}",
        rig.model.speeches()
    );
    assert!(rig.telegram.sent_files().is_empty());
    drop(rig);

    let config = "[voice]\nprovider = \"fake\"\nreply = \"always\"\n";
    let mut rig = Rig::new(Wire::OpenAi, "", config).await;
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "typed, not spoken"));
    rig.shown(&rig.telegram, "42", "typed, not spoken").await;
    let voice = voices(&rig, 1).await.remove(0);
    assert!(decoded_secs(&voice.bytes) > 0.5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_is_read_up_to_max_chars_and_shown_whole() {
    let config = format!("{TRANSCRIPTION}[voice]\nprovider = \"fake\"\nmax_chars = 60\n");
    let mut rig = Rig::new(Wire::OpenAi, "", &config).await;
    let long = "First, soak the beans overnight. Then simmer them for an hour. \
                Finally, season with salt, garlic and a little lemon before serving.";
    rig.model.push(Step::text(long));
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    rig.shown(&rig.telegram, "42", "before serving").await;
    voices(&rig, 1).await;
    let speech = rig.model.wait_for_speeches(1, PATIENCE).await.remove(0);
    assert_eq!(speech.input, "First, soak the beans overnight.");
    let shown: String = rig.telegram.sent().iter().map(|s| s.text.clone()).collect();
    assert!(shown.contains(long), "all the text is shown: {shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_speech_server_is_named_and_the_text_still_goes() {
    let config = format!("{TRANSCRIPTION}[voice]\nprovider = \"fake\"\n");
    let mut rig = Rig::new(Wire::OpenAi, "", &config).await;
    rig.model.fail_next_speech(500);
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    rig.shown(&rig.telegram, "42", "echo:").await;
    round_trip(&rig, "still there?").await;
    assert_eq!(rig.model.speeches()[0].status, 500);
    assert!(rig.telegram.sent_files().is_empty());
    let log = rig.log();
    assert!(
        log.contains("the reply was not spoken") && log.contains("HTTP 500"),
        "{log}"
    );
    // The next voice note is spoken again.
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    voices(&rig, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discord_gets_the_spoken_reply_as_an_ogg_file_with_the_text() {
    let config = format!("{TRANSCRIPTION}[voice]\nprovider = \"fake\"\n");
    let mut rig = Rig::new(Wire::OpenAi, "", &config).await;
    rig.start().await;
    rig.discord
        .inject(discord::Incoming::dm(OWNER, "").with_voice(voice_note(), 2.0));
    let dm = rig.discord_dm();
    rig.shown(&rig.discord, &dm.to_string(), "echo:").await;
    let files = rig.discord.wait_for_sent_files(1, PATIENCE).await;
    assert_eq!(files.len(), 1, "gateway log:\n{}", rig.log());
    assert_eq!(files[0].channel, dm);
    assert_eq!(files[0].file_name, "reply.ogg");
    let speech = rig.model.wait_for_speeches(1, PATIENCE).await.remove(0);
    let expected = speech.input.chars().count() as f64 * SPEECH_SECS_PER_CHAR;
    assert!((decoded_secs(&files[0].bytes) - expected).abs() < 0.03);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn espeak_ng_reads_the_reply_through_the_command_path() {
    if std::process::Command::new("espeak-ng")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install espeak-ng (.ci/run)"
        );
        eprintln!("skipped: espeak-ng is not installed (apt-get install espeak-ng)");
        return;
    }
    let config = format!(
        "{TRANSCRIPTION}[voice]\ncommand = [\"espeak-ng\", \"-w\", \"{{out}}\", \"--stdin\"]\n"
    );
    let mut rig = Rig::new(Wire::OpenAi, "", &config).await;
    // Shell syntax in the text is read, never run.
    rig.model.push(Step::text(
        "Good morning $(touch pwned) `id`; the weather is fine.",
    ));
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    rig.shown(&rig.telegram, "42", "weather is fine").await;
    let voice = voices(&rig, 1).await.remove(0);
    let secs = decoded_secs(&voice.bytes);
    assert!(secs > 1.0 && secs < 30.0, "{secs} s of speech");
    assert!(
        rig.model.speeches().is_empty(),
        "the program read it, not the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_voice_doctor_says_how_to_turn_it_on() {
    let rig = Rig::new(Wire::OpenAi, "", "").await;
    let doctor = rig.home.run(&["doctor"]).stdout;
    let line = doctor
        .lines()
        .find(|l| l.contains("voice") && l.contains("never spoken"))
        .unwrap_or_else(|| panic!("doctor names spoken replies: {doctor}"));
    assert!(line.contains("warn"), "{line}");
    assert!(doctor.contains("[voice] provider"), "{doctor}");
    assert!(doctor.contains("[voice] command"), "{doctor}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_speech_servers_key_is_sent_and_never_logged() {
    const KEY: &str = "sk-speech-7Hq2xLz9Vb4Nc8Rt1Kd5";
    let config = format!("{TRANSCRIPTION}[voice]\nprovider = \"fake\"\n");
    let mut rig = Rig::new(Wire::OpenAi, "", &config).await;
    let secrets = std::fs::read_to_string(rig.home.path().join(".security.yml")).expect("secrets");
    rig.home.write_secrets(&format!(
        "{secrets}providers:\n  fake: {{ api_key: \"{KEY}\" }}\n"
    ));
    // Every request without the key is refused: a voice message back means it was sent.
    rig.model.require_key(KEY);
    rig.model.fail_next_speech(500);
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    rig.shown(&rig.telegram, "42", "echo:").await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    voices(&rig, 1).await;
    let log = rig.log();
    assert!(log.contains("HTTP 500"), "the failure is logged: {log}");
    assert!(!log.contains(KEY), "the key is never logged");
}

/// What is read aloud passes the scrubber as the shown text does: a secret in the reply
/// never goes to the speech server (nor into the audio).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_in_the_reply_is_not_read_aloud() {
    const KEY: &str = "sk-speech-7Hq2xLz9Vb4Nc8Rt1Kd5";
    let config = format!("{TRANSCRIPTION}[voice]\nprovider = \"fake\"\n");
    let mut rig = Rig::new(Wire::OpenAi, "", &config).await;
    let secrets = std::fs::read_to_string(rig.home.path().join(".security.yml")).expect("secrets");
    rig.home.write_secrets(&format!(
        "{secrets}providers:\n  fake: {{ api_key: \"{KEY}\" }}\n"
    ));
    rig.model
        .push(Step::text(format!("The key is {KEY}, keep it safe.")));
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(voice_note()));
    let speech = rig.model.wait_for_speeches(1, PATIENCE).await.remove(0);
    assert!(speech.input.contains("keep it safe"), "{}", speech.input);
    assert!(!speech.input.contains("7Hq2xLz9"), "{}", speech.input);
}
