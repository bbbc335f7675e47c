//! Server-sent events on the wire: formatting one event, and playing a list of `Frame`s
//! (events, pauses, a hang, a cut) as an HTTP body.
//!
//! Knows nothing of either provider's JSON; `openai` and `anthropic` hand it finished text.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use serde_json::Value;
use tokio::sync::watch;

/// One step of a response body.
#[derive(Debug)]
pub(crate) enum Frame {
    /// Write these bytes (usually one whole SSE event).
    Send(String),
    /// Wait before the next frame.
    Pause(Duration),
    /// Write nothing more until the fake shuts down, then drop the connection.
    Hang,
    /// Drop the connection now, leaving the body unterminated.
    Abort,
}

/// `event: NAME\ndata: JSON\n\n`, or just `data: JSON\n\n` without a name.
pub(crate) fn event(name: Option<&str>, data: &Value) -> String {
    raw_event(name, &data.to_string())
}

/// Like `event`, with `data` written exactly as given (for `[DONE]` and malformed JSON).
pub(crate) fn raw_event(name: Option<&str>, data: &str) -> String {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// A body that plays `frames` in order; it ends cleanly after the last one unless that
/// frame was `Hang` or `Abort`.
pub(crate) fn body(frames: Vec<Frame>, shutdown: watch::Receiver<bool>) -> Body {
    counted_body(frames, shutdown, None)
}

/// `body`, adding one to `hung_up` if the client leaves while frames are left to play.
pub(crate) fn counted_body(
    frames: Vec<Frame>,
    shutdown: watch::Receiver<bool>,
    hung_up: Option<Arc<AtomicU64>>,
) -> Body {
    let frames = Left {
        frames: VecDeque::from(frames),
        hung_up,
    };
    let stream =
        futures_util::stream::unfold((frames, shutdown), |(mut left, mut shutdown)| async move {
            loop {
                match left.frames.pop_front()? {
                    Frame::Send(text) => return Some((Ok(Bytes::from(text)), (left, shutdown))),
                    Frame::Pause(pause) => tokio::time::sleep(pause).await,
                    Frame::Hang => {
                        // An error here means the fake itself is gone: stop hanging either way.
                        let _ = shutdown.wait_for(|down| *down).await;
                        let cut = io::Error::other("fake model shut down while stalled");
                        return Some((Err(cut), (left.done(), shutdown)));
                    }
                    Frame::Abort => {
                        let cut = io::Error::other("fake model cut the connection");
                        return Some((Err(cut), (left.done(), shutdown)));
                    }
                }
            }
        });
    Body::from_stream(stream)
}

/// The frames a body has still to play. Dropped with some left, the client hung up.
struct Left {
    frames: VecDeque<Frame>,
    hung_up: Option<Arc<AtomicU64>>,
}

impl Left {
    /// Nothing more to play (the body ends here on purpose).
    fn done(mut self) -> Left {
        self.frames.clear();
        self
    }
}

impl Drop for Left {
    fn drop(&mut self) {
        if let Some(hung_up) = &self.hung_up
            && !self.frames.is_empty()
        {
            hung_up.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `text` in one-word pieces that concatenate back to it exactly (whitespace stays on
/// the word before it), so a client must accumulate deltas.
pub(crate) fn words(text: &str) -> Vec<&str> {
    text.split_inclusive(char::is_whitespace).collect()
}

/// A JSON string in up to three pieces cut at char boundaries, for argument deltas.
pub(crate) fn fragments(json: &str) -> Vec<&str> {
    let chars: Vec<usize> = json.char_indices().map(|(i, _)| i).collect();
    if chars.len() < 3 {
        return vec![json];
    }
    let (a, b) = (chars[chars.len() / 3], chars[2 * chars.len() / 3]);
    vec![&json[..a], &json[a..b], &json[b..]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_concatenate_back() {
        let text = "Hello there,\nworld  ok";
        let parts = words(text);
        assert!(parts.len() >= 4);
        assert_eq!(parts.concat(), text);
        assert!(words("").is_empty());
    }

    #[test]
    fn fragments_concatenate_back() {
        for json in ["{}", r#"{"path":"é/a.txt"}"#, "[1]"] {
            let parts = fragments(json);
            assert_eq!(parts.concat(), json);
            assert!(parts.iter().all(|p| !p.is_empty()));
        }
        assert_eq!(fragments(r#"{"a":1}"#).len(), 3);
    }
}
