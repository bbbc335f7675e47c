//! Pairing: an unknown DM sender gets an 8-character code (no 0/O/1/I), valid for an
//! hour. A sender holds at most one code (a repeat sender gets the same one again, at
//! most once every few minutes); a channel holds at most ten, and when it is full the
//! oldest unanswered code the owners were not told about makes room, so strangers can
//! neither jam it nor push out the request the owner is looking at. Each new code is
//! announced to the channel's owners in one line (at most one such line a minute). The
//! owner approves with `pincer pairing approve` or `/approve CODE`.

use pincer_channels::InboundMessage;

use super::Decision;
use crate::store::{PendingCode, Store, StoreError, now_ms};

pub const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
pub const CODE_LEN: usize = 8;
pub const MAX_PENDING: usize = 10;
const VALID_MS: i64 = 60 * 60 * 1000;
/// A repeat sender is reminded of their code at most this often.
const RESEND_MS: i64 = 5 * 60 * 1000;
/// The owners hear of new pairing requests at most this often.
const NOTE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// When the owners were last told of a pairing request.
#[derive(Default)]
pub(super) struct NoteLimit(std::sync::Mutex<Option<tokio::time::Instant>>);

impl NoteLimit {
    /// Whether a note may go out now (and if so, it counts as sent).
    fn take(&self) -> bool {
        let Ok(mut last) = self.0.lock() else {
            return false;
        };
        let now = tokio::time::Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < NOTE_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

/// A fresh random code. 32 symbols divide 256, so `byte % 32` is uniform.
pub fn new_code() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; CODE_LEN];
    getrandom::fill(&mut bytes)?;
    Ok(bytes
        .iter()
        .map(|b| CODE_ALPHABET[(*b as usize) % CODE_ALPHABET.len()] as char)
        .collect())
}

fn code_message(channel: &str, code: &str) -> String {
    format!(
        "Hi! I only talk with people my owner has approved. Your pairing code is:\n\n{code}\n\nAsk my owner to approve it: `pincer pairing approve {channel} {code}`, or /approve {code} in their chat with me. The code is valid for 60 minutes."
    )
}

/// The answer to a stranger's DM: their code (new, or theirs again), and for a new
/// code a line for the channel's owners when `has_owner` and the note limit allow.
pub(super) async fn respond(
    store: &Store,
    message: &InboundMessage,
    has_owner: bool,
    notes: &NoteLimit,
) -> Result<Decision, StoreError> {
    let channel = &message.channel;
    let pending = store.pending_codes(Some(channel)).await?;
    if let Some(mine) = pending
        .iter()
        .find(|c| c.sender_raw == message.sender.raw_id)
    {
        if now_ms() - mine.last_sent_at < RESEND_MS {
            return Ok(Decision::Refuse);
        }
        store.mark_code_sent(channel, &mine.code).await?;
        return Ok(Decision::Reply {
            text: code_message(channel, &mine.code),
            owners_note: None,
        });
    }
    if pending.len() >= MAX_PENDING {
        // The oldest code the owners were not told about makes room; when they were
        // told about every one, the newcomer waits.
        let Some(oldest) = pending.iter().find(|c| !c.announced) else {
            return Ok(Decision::Reply {
                text: "I can't take new pairing requests right now; please try again later.".into(),
                owners_note: None,
            });
        };
        tracing::info!(channel = %channel, sender = %oldest.sender, "pairing code dropped to make room for a newer request");
        store.delete_code(channel, &oldest.code).await?;
    }
    let code = new_code()
        .map_err(|err| StoreError::Worker(format!("no randomness for a pairing code: {err}")))?;
    let now = now_ms();
    let announced = has_owner && notes.take();
    store
        .insert_code(PendingCode {
            channel: channel.clone(),
            code: code.clone(),
            sender_raw: message.sender.raw_id.clone(),
            sender: message.sender.canonical.clone(),
            display_name: message.sender.display_name.clone(),
            expires_at: now + VALID_MS,
            last_sent_at: now,
            announced,
        })
        .await?;
    tracing::info!(channel = %channel, sender = %message.sender.canonical, "pairing code issued");
    let owners_note = announced.then(|| {
        format!(
            "{} ({}) asks to pair — reply /approve {code}",
            super::sanitize_name(&message.sender.display_name),
            message.sender.canonical
        )
    });
    Ok(Decision::Reply {
        text: code_message(channel, &code),
        owners_note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_use_only_the_unambiguous_alphabet() {
        for _ in 0..200 {
            let code = new_code().unwrap();
            assert_eq!(code.len(), CODE_LEN);
            assert!(code.bytes().all(|b| CODE_ALPHABET.contains(&b)), "{code}");
            assert!(!code.contains(['0', 'O', '1', 'I']));
        }
    }
}
