//! Spoken replies (`[voice]`): after a turn that finished, its last text is read aloud
//! and sent as a voice message to the same chat, after the text (which is always shown
//! whole). Under `reply = "to_voice"` only a turn that answered a voice note is spoken;
//! under `"always"` every turn that answered a person in a chat platform's direct chat
//! or group. Scheduled runs, subagents, the terminal, the web chat and the stdio hosts
//! are never spoken. A reading that fails is logged with the reason, and the person
//! already has the text: nothing is lost.
//!
//! The voice message is booked in the outbox like any file (`crate::outbox`), so a
//! crash after it was made sends it after the restart; a crash while it is being read
//! aloud loses only the voice, never the text.

use pincer_channels::{OutboundBody, OutboundMedia, OutboundMessage, Receipt, Target};
use pincer_config::{Platform, VoiceReply};

use crate::access::Place;
use crate::agent::Ended;
use crate::steering::Queued;

/// What a turn's reply needs to be spoken: taken from its batch before the turn runs.
pub(super) struct Spoken {
    target: Target,
    reply_to: Option<String>,
}

impl Spoken {
    /// Whether `batch`'s reply is to be spoken under `reply`, and where it goes.
    pub(super) fn wanted(batch: &Queued, reply: VoiceReply) -> Option<Spoken> {
        let wanted = match reply {
            VoiceReply::Never => false,
            VoiceReply::ToVoice => batch.voice,
            VoiceReply::Always => true,
        };
        let to_a_person = matches!(batch.origin.place, Place::Direct | Place::Group)
            && batch.task.is_none()
            && Platform::from_name(&batch.target.channel).is_some();
        (wanted && to_a_person).then(|| Spoken {
            target: batch.target.clone(),
            reply_to: batch.reply_to.clone(),
        })
    }
}

impl super::Dispatcher {
    /// Read the turn's last text aloud and send it; see the module doc.
    pub(super) async fn speak(&self, spoken: Spoken, ended: &Ended, text: &str) {
        let Some(speaker) = self.agent.media().speaker.as_ref() else {
            return;
        };
        if *ended != Ended::Finished || text.trim().is_empty() {
            return;
        }
        // What is read aloud passes the scrubber as the shown text does: a secret would
        // otherwise go to the speech provider and be heard.
        let script = speaker.script(&crate::scrub::scrub_global(text));
        if script.trim().is_empty() {
            return;
        }
        let channel = spoken.target.channel.clone();
        let voice = match speaker.speak(&script).await {
            Ok(voice) => voice,
            Err(err) => {
                tracing::warn!(%channel, "the reply was not spoken (its text was sent): {err}");
                return;
            }
        };
        tracing::debug!(%channel, secs = voice.secs, "sending a spoken reply");
        let message = OutboundMessage::new(
            spoken.target,
            OutboundBody::File {
                media: OutboundMedia {
                    file_name: "reply.ogg".into(),
                    bytes: voice.bytes,
                    source: None,
                    caption: None,
                    as_photo: false,
                    as_voice: true,
                },
                // Nobody waits on the platform's answer: the manager logs a failure.
                sent: Receipt::pair().0,
            },
            spoken.reply_to,
        );
        // A closed bus means shutdown; the text went already.
        let _ = self.agent.outbox().send(message).await;
    }
}
