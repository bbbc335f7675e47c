//! An incremental Server-Sent Events decoder: bytes arrive in arbitrary splits, complete
//! events come out. It knows the SSE line grammar (LF, CRLF or CR line ends, multi-line
//! `data:` joined with `\n`, `:` comments, a leading byte-order mark) and nothing about
//! what the data means: `[DONE]` and JSON are the caller's business.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `"message"` when the server sent none (as the spec says).
    pub event: String,
    /// All `data:` lines of the event joined with `\n`.
    pub data: String,
}

/// Holds the unfinished line and the event being built between `feed` calls.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of a line whose end has not arrived yet. Lines are decoded as UTF-8 only
    /// once complete, so a character split across two reads survives.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` at the start of the next one belongs to it.
    after_cr: bool,
    /// The stream's first bytes have been seen (a byte-order mark is only skipped there).
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes of the stream; returns the events they complete, in order.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.started && !chunk.is_empty() {
            self.started = true;
            if let Some(rest) = chunk.strip_prefix(b"\xEF\xBB\xBF".as_slice()) {
                chunk = rest;
            }
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n".as_slice()) {
                chunk = rest;
            }
        }
        let mut i = 0;
        while i < chunk.len() {
            let byte = chunk[i];
            if byte == b'\n' || byte == b'\r' {
                let line = std::mem::take(&mut self.line);
                self.line_complete(&line, &mut out);
                if byte == b'\r' {
                    match chunk.get(i + 1) {
                        Some(b'\n') => i += 1,
                        Some(_) => {}
                        None => self.after_cr = true,
                    }
                }
            } else {
                self.line.push(byte);
            }
            i += 1;
        }
        out
    }

    /// The stream ended: dispatch an event the server did not close with a blank line.
    /// (The spec would drop it; servers that forget the last blank line are common.)
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            let mut out = Vec::new();
            self.line_complete(&line, &mut out);
        }
        self.dispatch()
    }

    fn line_complete(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if let Some(event) = self.dispatch() {
                out.push(event);
            }
            return;
        }
        if line[0] == b':' {
            return; // a comment (servers send these as keep-alives)
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` matter only to browsers that reconnect; unknown fields are
            // ignored, as the spec says.
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event: if event.is_empty() {
                "message".to_string()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.to_string(),
            data: data.to_string(),
        }
    }

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(decoder.feed(chunk));
        }
        out.extend(decoder.finish());
        out
    }

    const STREAM: &str = "\u{feff}: keep-alive\r\n\
        event: message_start\r\n\
        data: {\"a\":1}\r\n\
        \r\n\
        data: first line\n\
        data:second line\n\
        data: héllo ✓\n\
        \n\
        :comment\n\
        event: ping\r\r\
        data: [DONE]\n\n";

    fn expected() -> Vec<SseEvent> {
        vec![
            ev("message_start", "{\"a\":1}"),
            ev("message", "first line\nsecond line\nhéllo ✓"),
            ev("message", "[DONE]"),
        ]
    }

    #[test]
    fn whole_stream_at_once() {
        assert_eq!(decode_all(&[STREAM.as_bytes()]), expected());
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(decode_all(&[a, b]), expected(), "split at byte {cut}");
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let bytes = STREAM.as_bytes();
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode_all(&chunks), expected());
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_its_name_is_reset() {
        let out = decode_all(&[b"event: ping\n\ndata: x\n\n"]);
        assert_eq!(out, vec![ev("message", "x")]);
    }

    #[test]
    fn unterminated_last_event_is_flushed_at_finish() {
        let out = decode_all(&[b"data: tail"]);
        assert_eq!(out, vec![ev("message", "tail")]);
    }

    #[test]
    fn empty_data_line_still_dispatches() {
        let out = decode_all(&[b"data\n\ndata:\ndata:\n\n"]);
        assert_eq!(out, vec![ev("message", ""), ev("message", "\n")]);
    }
}
