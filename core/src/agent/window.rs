//! The context window: before each model call the request's size is estimated, and
//! past `agent.compact_at` of the smallest context window in the chain (the capability
//! table's `context_tokens`) the conversation is made to fit — first by pruning old
//! tool results (those before the last `KEEP_TURNS` turns become a one-line stub naming
//! the file the whole result was saved to), then, if still over, by summarising the
//! older part, keeping only what fits `TARGET` of the window word for word, so the
//! next turns do not compact again. The store keeps every word (`pincer sessions show`).
//!
//! The estimate is corrected by what the servers report: each call's prompt tokens,
//! as the server counted them, against the estimate of that request ([`Seen`]) — which
//! also takes out tools a server dropped; and a window a server names (in an overflow
//! error, or its own listing) replaces a larger assumed one.

use super::Agent;
use crate::provider::{ChatRequest, Part};
use crate::store::{self, StoredMessage};

/// What a compaction to fit the window leaves: this share of the window.
pub(super) const TARGET: f64 = 0.4;
/// The most recent turns whose tool results are always sent whole.
const KEEP_TURNS: usize = 3;
/// Results this long or shorter are never pruned: a stub would save nothing.
pub(super) const PRUNE_OVER: usize = 512;
/// What one picture is counted as.
const IMAGE_TOKENS: u64 = 1_600;

/// The request's size in tokens: its JSON form's bytes ÷ 4 (what providers'
/// tokenizers average on English, code and JSON), plus the pictures, whose bytes are not
/// in that form and which providers count by their size in pixels.
pub(super) fn estimate(req: &ChatRequest) -> u64 {
    let bytes = req.system_stable.len()
        + req.system_volatile.len()
        + json_len(&req.tools)
        + json_len(&req.messages);
    let images = req
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::Image { data: Some(_), .. }))
        .count() as u64;
    bytes as u64 / 4 + images * IMAGE_TOKENS
}

/// A request's size, estimated with and without its tools.
#[derive(Debug, Clone, Copy)]
pub(super) struct Estimate {
    pub all: u64,
    pub without_tools: u64,
}

impl Estimate {
    pub(super) fn of(req: &ChatRequest) -> Estimate {
        let all = estimate(req);
        Estimate {
            all,
            without_tools: all.saturating_sub(json_len(&req.tools) as u64 / 4),
        }
    }
}

/// What the servers said about their models while Pincer ran, by model label.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Context windows the servers named.
    windows: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    /// How the model's server counts: the prompt tokens it counted ÷ the estimate, and
    /// whether it left the tools out (a chat template without a place for them).
    counts: std::sync::Mutex<std::collections::HashMap<String, (f64, bool)>>,
}

impl Seen {
    /// The server of `label` says its window is `tokens`.
    pub(super) fn learn_window(&self, label: &str, tokens: u64) {
        if tokens > 0 {
            lock(&self.windows).insert(label.to_string(), tokens);
        }
    }

    /// The window `label`'s server named, if it did.
    pub(super) fn told(&self, label: &str) -> Option<u64> {
        lock(&self.windows).get(label).copied()
    }

    /// The window of `label`: `assumed` (config or the built-in table), or less where
    /// the server said so.
    pub(super) fn window(&self, label: &str, assumed: u64) -> u64 {
        lock(&self.windows)
            .get(label)
            .map_or(assumed, |&told| told.min(assumed))
    }

    /// A call to `label` estimated at `estimated` was counted `counted` tokens by its
    /// server. Nearer the estimate without tools than with them: the server dropped
    /// them. The ratio is kept between a quarter and four, so one odd answer cannot
    /// make the estimate absurd.
    pub(super) fn calibrate(&self, label: &str, estimated: Estimate, counted: u64) {
        if estimated.without_tools == 0 || counted == 0 {
            return;
        }
        let dropped = estimated.all > estimated.without_tools
            && counted < (estimated.all + estimated.without_tools) / 2;
        let base = if dropped {
            estimated.without_tools
        } else {
            estimated.all
        };
        let ratio = (counted as f64 / base as f64).clamp(0.25, 4.0);
        lock(&self.counts).insert(label.to_string(), (ratio, dropped));
    }

    /// The size `label`'s server will count for a request estimated at `estimated`.
    pub(super) fn size(&self, label: &str, estimated: Estimate) -> u64 {
        let (ratio, dropped) = lock(&self.counts)
            .get(label)
            .copied()
            .unwrap_or((1.0, false));
        let base = if dropped {
            estimated.without_tools
        } else {
            estimated.all
        };
        (base as f64 * ratio).ceil() as u64
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One stored message's size in tokens, as `estimate` counts it.
pub(super) fn message_tokens(message: &StoredMessage) -> u64 {
    json_len(&message.parts) as u64 / 4
}

/// The bytes `value` takes as JSON, counted as it is written out, never held.
fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

/// Where a pruned result is saved, relative to the workspace.
pub(super) fn pruned_file(session_id: i64, position: i64) -> String {
    format!("tool-output/pruned-{session_id}-{position}.txt")
}

/// The line a pruned result is sent as.
pub(super) fn stub(name: &str, len: usize, file: &str) -> String {
    format!(
        "[pruned to save room: an earlier result of {name}, {}; the whole result is in {file} (read_file it if you need it again)]",
        crate::media::document::human_size(len as u64)
    )
}

/// Replace the results of `messages` at or before `upto` with their stubs.
pub(super) fn apply_pruning(session_id: i64, upto: i64, messages: &mut [StoredMessage]) {
    for message in messages
        .iter_mut()
        .filter(|m| m.role == store::Role::Tool && m.position <= upto)
    {
        for part in &mut message.parts {
            if let Part::ToolResult { name, content, .. } = part
                && content.len() > PRUNE_OVER
            {
                *content = stub(
                    name,
                    content.len(),
                    &pruned_file(session_id, message.position),
                );
            }
        }
    }
}

impl Agent {
    /// Prune the tool results from before the last `KEEP_TURNS` turns that are not
    /// pruned yet: each is saved to its file in `tool-output/`, and the session's
    /// `pruned_upto` moves past them. `Ok(false)`: nothing left to prune.
    pub(super) async fn prune(&self, session_id: i64) -> Result<bool, crate::store::StoreError> {
        let meta = self.store.session_meta(session_id).await?;
        let stored = self.store.history(session_id).await?;
        let turn_starts: Vec<i64> = stored
            .iter()
            .filter(|m| m.role == store::Role::User && m.status != store::Status::Ignored)
            .map(|m| m.position)
            .collect();
        if turn_starts.len() <= KEEP_TURNS {
            return Ok(false);
        }
        let boundary = turn_starts[turn_starts.len() - KEEP_TURNS];
        let from = meta.pruned_upto.unwrap_or(i64::MIN);
        let due: Vec<&StoredMessage> = stored
            .iter()
            .filter(|m| m.role == store::Role::Tool && m.position > from && m.position < boundary)
            .filter(|m| {
                m.parts.iter().any(
                    |p| matches!(p, Part::ToolResult { content, .. } if content.len() > PRUNE_OVER),
                )
            })
            .collect();
        let Some(last) = due.last().map(|m| m.position) else {
            return Ok(false);
        };
        for message in &due {
            let whole: String = message
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolResult { content, .. } => Some(content.as_str()),
                    _ => None,
                })
                .collect();
            let path = pruned_file(session_id, message.position);
            let workspace = self.workspace.clone();
            let saved = tokio::task::spawn_blocking(move || {
                crate::tools::save_output(&workspace, &path, &whole)
            })
            .await
            .unwrap_or_else(|e| Err(crate::tools::NotSaved::Stopped(e)));
            if let Err(err) = saved {
                // The stub still stands in for it; the store keeps the result.
                tracing::warn!("a pruned tool result was not saved: {err}");
            }
        }
        self.store.set_pruned(session_id, last).await?;
        tracing::info!(session_id, results = due.len(), "old tool results pruned");
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ChatMessage, ToolSpec};

    #[test]
    fn the_estimate_counts_text_tools_and_pictures() {
        let mut req = ChatRequest {
            system_stable: "s".repeat(400),
            messages: vec![ChatMessage::user_text("u".repeat(800))],
            tools: vec![ToolSpec {
                name: "t".into(),
                description: "d".repeat(400),
                input_schema: serde_json::json!({}).into(),
            }],
            ..ChatRequest::default()
        };
        let base = estimate(&req);
        // The text, and the JSON around it (keys, quotes), a little over 1,600 bytes.
        assert!((400..450).contains(&base), "{base}");
        req.messages[0].parts.push(Part::Image {
            path: "inbox/a.png".into(),
            data: Some(crate::provider::ImageData {
                mime: "image/png".into(),
                base64: "x".repeat(100_000),
            }),
        });
        let with_picture = estimate(&req);
        assert!(with_picture >= base + IMAGE_TOKENS && with_picture < base + IMAGE_TOKENS + 20);
    }

    #[test]
    fn what_a_server_counted_corrects_the_estimate_and_dropped_tools_are_left_out() {
        let seen = Seen::default();
        let estimated = Estimate {
            all: 3000,
            without_tools: 1000,
        };
        assert_eq!(seen.size("p/m", estimated), 3000, "nothing counted yet");
        // The server counted 1,140: near the estimate without the tools, 14% over it.
        seen.calibrate("p/m", estimated, 1140);
        let later = Estimate {
            all: 4000,
            without_tools: 2000,
        };
        assert_eq!(seen.size("p/m", later), 2280);
        // A server that counts the tools: the whole estimate, corrected.
        seen.calibrate("q/m", estimated, 3300);
        assert_eq!(seen.size("q/m", later), 4400);
        // An absurd count is bounded.
        seen.calibrate("r/m", estimated, 1);
        assert!(seen.size("r/m", later) >= 500);
        assert_eq!(seen.window("p/m", 128_000), 128_000);
        seen.learn_window("p/m", 8192);
        assert_eq!(seen.window("p/m", 128_000), 8192);
        assert_eq!(seen.window("p/m", 4096), 4096);
    }

    #[test]
    fn a_stub_names_the_tool_the_size_and_the_file() {
        let line = stub("read_file", 4096, &pruned_file(3, 17));
        assert!(line.contains("read_file"), "{line}");
        assert!(line.contains("4.0 KB"), "{line}");
        assert!(line.contains("tool-output/pruned-3-17.txt"), "{line}");
        assert!(!line.contains('\n'));
    }
}
