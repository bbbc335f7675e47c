//! Pairing: an unknown DM sender gets an 8-character code (no 0/O/1/I), valid for an
//! hour, at most three pending per channel. The owner approves it with `pincer
//! pairing approve` or `/approve CODE`. A repeat sender gets the same code again, at
//! most once every few minutes.

use pincer_channels::InboundMessage;

use super::Decision;
use crate::store::{PendingCode, Store, StoreError, now_ms};

pub const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
pub const CODE_LEN: usize = 8;
pub const MAX_PENDING: usize = 3;
const VALID_MS: i64 = 60 * 60 * 1000;
/// A repeat sender is reminded of their code at most this often.
const RESEND_MS: i64 = 5 * 60 * 1000;

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

pub async fn respond(store: &Store, message: &InboundMessage) -> Result<Decision, StoreError> {
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
        return Ok(Decision::Reply(code_message(channel, &mine.code)));
    }
    if pending.len() >= MAX_PENDING {
        return Ok(Decision::Reply(
            "I can't take new pairing requests right now; please try again later.".into(),
        ));
    }
    let code = new_code()
        .map_err(|err| StoreError::Worker(format!("no randomness for a pairing code: {err}")))?;
    let now = now_ms();
    store
        .insert_code(PendingCode {
            channel: channel.clone(),
            code: code.clone(),
            sender_raw: message.sender.raw_id.clone(),
            sender: message.sender.canonical.clone(),
            display_name: message.sender.display_name.clone(),
            expires_at: now + VALID_MS,
            last_sent_at: now,
        })
        .await?;
    tracing::info!(channel = %channel, sender = %message.sender.canonical, "pairing code issued");
    Ok(Decision::Reply(code_message(channel, &code)))
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
