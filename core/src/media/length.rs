//! How long a recording is, measured from its own bytes before it is sent anywhere: a
//! sender may declare any duration, and transcription is paid by the minute. Ogg (Opus,
//! the voice notes of Telegram, Discord and WhatsApp; Vorbis) carries it in its last
//! page's granule position, WAV in its header. Other formats are bounded by size
//! (`MAX_UNMEASURED_BYTES_PER_SEC`).

/// For a recording whose length cannot be read: the bytes a second it may take (128
/// kbit/s), so `max_minutes` bounds its size instead.
pub const MAX_UNMEASURED_BYTES_PER_SEC: u64 = 16_000;

/// The recording's length in seconds, when its format says.
pub fn measure(bytes: &[u8]) -> Option<f64> {
    if bytes.starts_with(b"OggS") {
        return ogg(bytes);
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE" {
        return wav(bytes);
    }
    None
}

/// Ogg: the last page's granule position over the stream's rate (48 kHz for Opus, the
/// identification header's rate for Vorbis).
fn ogg(bytes: &[u8]) -> Option<f64> {
    let rate = if find(bytes, b"OpusHead").is_some() {
        48_000.0
    } else {
        let at = find(bytes, b"\x01vorbis")?;
        let rate = bytes.get(at + 12..at + 16)?;
        f64::from(u32::from_le_bytes(rate.try_into().ok()?))
    };
    if rate <= 0.0 {
        return None;
    }
    let last = rfind(bytes, b"OggS")?;
    let granule = bytes.get(last + 6..last + 14)?;
    let granule = u64::from_le_bytes(granule.try_into().ok()?);
    // All ones: a page where no packet ends; a real last page never has it.
    if granule == u64::MAX {
        return None;
    }
    Some(granule as f64 / rate)
}

/// WAV: the data chunk's size over the format chunk's byte rate.
fn wav(bytes: &[u8]) -> Option<f64> {
    let mut at = 12;
    let mut byte_rate = None;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().ok()?) as usize;
        let body = at + 8;
        match id {
            b"fmt " => {
                let rate = bytes.get(body + 8..body + 12)?;
                byte_rate = Some(u32::from_le_bytes(rate.try_into().ok()?));
            }
            b"data" => {
                let rate = f64::from(byte_rate.filter(|r| *r > 0)?);
                return Some(size as f64 / rate);
            }
            _ => {}
        }
        at = body.checked_add(size + size % 2)?;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// An Ogg stream whose last page ends at `granule` (Opus: 48,000 a second).
    pub fn ogg_opus(granule: u64, filler: usize) -> Vec<u8> {
        let mut bytes = b"OggS\x00\x02".to_vec();
        bytes.extend_from_slice(&0u64.to_le_bytes());
        bytes.extend_from_slice(b"....OpusHead\x01\x01");
        bytes.resize(bytes.len() + filler, 0);
        bytes.extend_from_slice(b"OggS\x00\x04");
        bytes.extend_from_slice(&granule.to_le_bytes());
        bytes.extend_from_slice(&[0; 16]);
        bytes
    }

    #[test]
    fn an_opus_voice_note_is_measured_from_its_last_page() {
        let secs = measure(&ogg_opus(48_000 * 42, 100)).expect("measured");
        assert!((secs - 42.0).abs() < 0.001, "{secs}");
    }

    #[test]
    fn a_wav_file_is_measured_from_its_header() {
        let mut wav = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        wav.extend_from_slice(&16u32.to_le_bytes());
        wav.extend_from_slice(&[1, 0, 1, 0]); // PCM, mono
        wav.extend_from_slice(&16_000u32.to_le_bytes()); // sample rate
        wav.extend_from_slice(&32_000u32.to_le_bytes()); // byte rate
        wav.extend_from_slice(&[2, 0, 16, 0]);
        wav.extend_from_slice(b"data");
        wav.extend_from_slice(&320_000u32.to_le_bytes());
        assert_eq!(measure(&wav), Some(10.0));
    }

    #[test]
    fn other_bytes_are_not_measured() {
        assert_eq!(measure(b"ID3\x03 an mp3"), None);
        assert_eq!(measure(b"OggS but nothing else"), None);
    }
}
