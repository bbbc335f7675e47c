//! Media end to end: the real `pincer run` with the fake Telegram, Discord and Slack and
//! the fake model. Photos, voice notes and documents in; files, reactions and spoken
//! replies out.

#[path = "media/attacks.rs"]
mod attacks;
#[path = "media/documents.rs"]
mod documents;
#[path = "media/files_out.rs"]
mod files_out;
#[path = "media/images.rs"]
mod images;
#[path = "media/reactions.rs"]
mod reactions;
#[path = "media/rig.rs"]
mod rig;
#[path = "media/speech.rs"]
mod speech;
#[path = "media/voice.rs"]
mod voice;
