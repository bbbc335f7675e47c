//! What a Matrix client says about the media it sends: an image's type and size in
//! pixels, a voice note's length. Read from the bytes' headers only; nothing decodes.

/// The image's MIME type and (width, height), for PNG, GIF and JPEG; other bytes are
/// `application/octet-stream` without a size.
pub(crate) fn image_info(bytes: &[u8]) -> (&'static str, Option<(u32, u32)>) {
    let be16 = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u32::from(u16::from_be_bytes([b[0], b[1]])))
    };
    let be32 = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return ("image/png", be32(16).zip(be32(20)));
    }
    if bytes.starts_with(b"GIF8") {
        let le16 = |at: usize| {
            bytes
                .get(at..at + 2)
                .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
        };
        return ("image/gif", le16(6).zip(le16(8)));
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        // Walk the segments to the first start-of-frame marker (C0..CF but C4, C8, CC).
        let mut at = 2;
        while let (Some(&0xFF), Some(&marker)) = (bytes.get(at), bytes.get(at + 1)) {
            let frame = (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker);
            if frame {
                return ("image/jpeg", be16(at + 7).zip(be16(at + 5)));
            }
            let Some(len) = be16(at + 2) else { break };
            at += 2 + len as usize;
        }
        return ("image/jpeg", None);
    }
    ("application/octet-stream", None)
}

/// An Ogg Opus file's length in milliseconds: the last page's granule position, which
/// Opus counts at 48 kHz. 0 when the bytes hold no Ogg page.
pub(crate) fn ogg_duration_ms(bytes: &[u8]) -> u64 {
    let Some(last) = bytes.windows(4).rposition(|w| w == b"OggS") else {
        return 0;
    };
    bytes
        .get(last + 6..last + 14)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(|b| u64::from_le_bytes(b) / 48)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_png_says_its_size() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&640u32.to_be_bytes());
        png.extend_from_slice(&480u32.to_be_bytes());
        assert_eq!(image_info(&png), ("image/png", Some((640, 480))));
        assert_eq!(image_info(b"hello").0, "application/octet-stream");
    }

    #[test]
    fn an_ogg_page_gives_the_length() {
        let mut ogg = b"OggS\0\x04".to_vec();
        ogg.extend_from_slice(&(48_000u64 * 3).to_le_bytes());
        assert_eq!(ogg_duration_ms(&ogg), 3000);
    }
}
