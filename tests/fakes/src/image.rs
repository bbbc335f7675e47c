//! Images as the two chat formats carry them: an OpenAI `image_url` part (a `data:` URL or
//! a web address) and an Anthropic `image` block (a base64 source, a URL or a file id).
//! This file decodes them, tells an image format from its first bytes, and finds every
//! image of a request; it refuses nothing (`openai` and `anthropic` decide what is
//! refused and with which words).

use base64::Engine;
use serde_json::Value;

/// The image types both providers take inline.
pub(crate) const MIME_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Why a `data:` URL is not an inline image, in the words OpenAI's error ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DataUrlError {
    NoPrefix,
    NotBase64,
    UnsupportedMime(String),
    Empty,
    InvalidBase64,
}

impl DataUrlError {
    /// What OpenAI says it "got" instead.
    pub(crate) fn got(&self) -> String {
        match self {
            DataUrlError::NoPrefix => "a value without the 'data:' prefix".into(),
            DataUrlError::NotBase64 => "a data URL that is not base64-encoded".into(),
            DataUrlError::UnsupportedMime(mime) => format!("unsupported MIME type '{mime}'"),
            DataUrlError::Empty => "empty base64-encoded bytes".into(),
            DataUrlError::InvalidBase64 => "an invalid base64-encoded value".into(),
        }
    }
}

/// Splits `data:image/png;base64,AAAA` into its mime type and decoded bytes.
pub(crate) fn decode_data_url(url: &str) -> Result<(String, Vec<u8>), DataUrlError> {
    let rest = url.strip_prefix("data:").ok_or(DataUrlError::NoPrefix)?;
    let (mime, data) = rest.split_once(";base64,").ok_or(DataUrlError::NotBase64)?;
    if !MIME_TYPES.contains(&mime) {
        return Err(DataUrlError::UnsupportedMime(mime.to_string()));
    }
    if data.is_empty() {
        return Err(DataUrlError::Empty);
    }
    let bytes = decode_base64(data).ok_or(DataUrlError::InvalidBase64)?;
    Ok((mime.to_string(), bytes))
}

/// Standard base64 with padding, as both providers take it.
pub(crate) fn decode_base64(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

/// The image type `bytes` start like, if any of the four: what a provider that looks at
/// the bytes would see. Unrecognised bytes (a test's placeholder) give `None`.
pub(crate) fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether a content part or block is an image, in either format.
fn is_image(part: &Value) -> bool {
    part["type"] == "image_url" || part["type"] == "image"
}

/// An inline image part decoded as `(mime, bytes)`; `None` for a URL, a file id or
/// anything malformed.
pub(crate) fn inline(part: &Value) -> Option<(String, Vec<u8>)> {
    match part["type"].as_str()? {
        "image_url" => decode_data_url(part["image_url"]["url"].as_str()?).ok(),
        "image" if part["source"]["type"] == "base64" => {
            let source = &part["source"];
            let bytes = decode_base64(source["data"].as_str()?)?;
            Some((source["media_type"].as_str()?.to_string(), bytes))
        }
        _ => None,
    }
}

/// The image parts of one message's content (top level only).
pub(crate) fn parts(content: &Value) -> impl Iterator<Item = &Value> {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| is_image(p))
}

/// Every image part in a request: in each message's content and, for Anthropic, inside
/// `tool_result` blocks too.
pub(crate) fn count_all(body: &Value) -> usize {
    let messages = body["messages"].as_array().into_iter().flatten();
    messages
        .map(|message| {
            let content = &message["content"];
            let nested: usize = content
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "tool_result")
                .map(|block| parts(&block["content"]).count())
                .sum();
            parts(content).count() + nested
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_urls_decode_or_say_why_not() {
        let ok = decode_data_url("data:image/png;base64,aGk=").unwrap();
        assert_eq!(ok, ("image/png".to_string(), b"hi".to_vec()));
        assert_eq!(decode_data_url("aGk="), Err(DataUrlError::NoPrefix));
        assert_eq!(
            decode_data_url("data:image/png,hi"),
            Err(DataUrlError::NotBase64)
        );
        assert_eq!(
            decode_data_url("data:text/plain;base64,aGk="),
            Err(DataUrlError::UnsupportedMime("text/plain".into()))
        );
        assert_eq!(
            decode_data_url("data:image/png;base64,"),
            Err(DataUrlError::Empty)
        );
        assert_eq!(
            decode_data_url("data:image/png;base64,%%%"),
            Err(DataUrlError::InvalidBase64)
        );
    }

    #[test]
    fn sniffing_knows_the_four_formats() {
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff(b"GIF89a.."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"not an image"), None);
    }

    #[test]
    fn counting_looks_into_tool_results() {
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}});
        let body = json!({"messages": [
            {"role": "user", "content": [image.clone(), {"type": "text", "text": "a"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [image]}]},
            {"role": "user", "content": "plain"}
        ]});
        assert_eq!(count_all(&body), 2);
    }
}
