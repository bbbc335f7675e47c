//! Voice in: a voice note is transcribed by the OpenAI-compatible endpoint named in
//! `[transcription]`, and the model and the transcript see `[voice 0:01] …`; without
//! `[transcription]` the model hears that a voice note came and `doctor` says how to
//! turn transcription on.

use pincer_fakes::{discord, telegram};

use super::rig::{OWNER, Rig, Wire};
use crate::common::PATIENCE;

const TRANSCRIPTION: &str = "[transcription]\nprovider = \"fake\"\nmodel = \"whisper-1\"\n";

/// Bytes that start like an OGG file, as a voice note does.
fn ogg() -> Vec<u8> {
    let mut bytes = b"OggS\0\x02".to_vec();
    bytes.resize(2048, 7);
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_voice_note_is_transcribed_into_the_request_and_the_transcript() {
    let mut rig = Rig::new(Wire::OpenAi, "", TRANSCRIPTION).await;
    rig.model
        .set_transcript("remind me to water the basil tomorrow", 42.0);
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(ogg()));
    rig.shown(&rig.telegram, "42", "echo:").await;

    let heard = rig.model.wait_for_transcriptions(1, PATIENCE).await;
    assert_eq!(heard.len(), 1);
    assert_eq!(heard[0].model, "whisper-1");
    assert_eq!(heard[0].size, 2048, "the whole recording is sent");
    assert_eq!(heard[0].status, 200);

    let request = rig.requests(1).await.remove(0);
    let text = request.last_user_text();
    // Telegram says the note is 1 s long; its length wins over the transcriber's.
    assert!(
        text.contains("[voice 0:01] remind me to water the basil tomorrow"),
        "{text}"
    );
    let shown = rig.home.run(&["sessions", "show", "telegram:dm:42"]).stdout;
    assert!(
        shown.contains("[voice 0:01] remind me to water the basil tomorrow"),
        "the transcript is stored: {shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_transcriber_is_named_and_the_turn_still_runs() {
    let mut rig = Rig::new(Wire::OpenAi, "", TRANSCRIPTION).await;
    rig.model.fail_next_transcription(500, None);
    rig.start().await;
    rig.discord
        .inject(discord::Incoming::dm(OWNER, "").with_voice(ogg(), 12.0));
    let dm = rig.discord_dm().to_string();
    rig.shown(&rig.discord, &dm, "echo:").await;
    let text = rig.requests(1).await.remove(0).last_user_text();
    assert!(text.contains("[voice 0:12 not transcribed:"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_transcription_the_model_is_told_and_doctor_says_how_to_turn_it_on() {
    let mut rig = Rig::new(Wire::OpenAi, "", "").await;
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "").with_voice(ogg()));
    rig.shown(&rig.telegram, "42", "echo:").await;
    let text = rig.requests(1).await.remove(0).last_user_text();
    assert!(
        text.contains("[voice 0:01 received; transcription is off"),
        "{text}"
    );
    assert!(rig.model.transcriptions().is_empty());

    let doctor = rig.home.run(&["doctor"]).stdout;
    let line = doctor
        .lines()
        .find(|l| l.contains("transcription"))
        .unwrap_or_else(|| panic!("doctor names transcription: {doctor}"));
    assert!(line.contains("warn"), "{line}");
    assert!(doctor.contains("[transcription] provider"), "{doctor}");
}
