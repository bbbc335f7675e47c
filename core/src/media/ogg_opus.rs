//! A WAV (what a speech server or program writes) to OGG/Opus, the format Telegram plays
//! as a voice message and Discord and Slack play as an audio file: the WAV's samples
//! are mixed to mono, resampled to 48 kHz (linearly: speech needs no better), encoded
//! by libopus in 20 ms frames, and put in an OGG stream with the `OpusHead` and
//! `OpusTags` headers and granule positions RFC 7845 asks for, so a player knows the
//! exact length. It touches no file and no network.

use std::io::Cursor;

use ogg::writing::{PacketWriteEndInfo, PacketWriter};

/// Opus's own rate; granule positions count samples at it.
const RATE: u32 = 48_000;
/// 20 ms at 48 kHz.
const FRAME: usize = 960;
/// A page every second of audio.
const FRAMES_PER_PAGE: usize = 50;
/// The longest a spoken reply may be (a WAV claiming more is refused, not encoded).
const MAX_SECS: u64 = 30 * 60;

/// Why a WAV could not be turned into a voice message.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("the speech audio is not a WAV this can read: {0}")]
    Wav(#[from] hound::Error),
    #[error("the speech audio is empty")]
    Empty,
    #[error("the speech audio is longer than {} minutes", MAX_SECS / 60)]
    TooLong,
    #[error("the Opus encoder failed: {0}")]
    Opus(#[from] opus::Error),
    #[error("writing the OGG stream failed: {0}")]
    Ogg(#[from] std::io::Error),
}

/// An encoded voice message and its length.
#[derive(Debug, Clone, PartialEq)]
pub struct Voice {
    pub bytes: Vec<u8>,
    pub secs: f64,
}

/// `wav` as OGG/Opus.
pub fn encode(wav: &[u8]) -> Result<Voice, EncodeError> {
    let (samples, rate) = mono(wav)?;
    if samples.is_empty() {
        return Err(EncodeError::Empty);
    }
    let pcm = resample(&samples, rate);
    let mut encoder = opus::Encoder::new(RATE, opus::Channels::Mono, opus::Application::Voip)?;
    let pre_skip = usize::try_from(encoder.get_lookahead()?).unwrap_or(0);
    let total = pcm.len();
    let serial = 0x7069_6e63; // "pinc"
    let mut out = PacketWriter::new(Cursor::new(Vec::new()));
    out.write_packet(head(pre_skip, rate), serial, PacketWriteEndInfo::EndPage, 0)?;
    out.write_packet(tags(), serial, PacketWriteEndInfo::EndPage, 0)?;
    // The encoder's output lags by `pre_skip`: feed that much silence after the end, so
    // the last words come out; the final granule position cuts the padding off again.
    let padded = total + pre_skip;
    let frames = padded.div_ceil(FRAME);
    let mut frame = [0f32; FRAME];
    let mut packet = vec![0u8; 4000];
    for n in 0..frames {
        let start = n * FRAME;
        for (i, slot) in frame.iter_mut().enumerate() {
            *slot = pcm.get(start + i).copied().unwrap_or(0.0);
        }
        let len = encoder.encode_float(&frame, &mut packet)?;
        let last = n + 1 == frames;
        let granule = if last { padded } else { (n + 1) * FRAME };
        let end = if last {
            PacketWriteEndInfo::EndStream
        } else if (n + 1) % FRAMES_PER_PAGE == 0 {
            PacketWriteEndInfo::EndPage
        } else {
            PacketWriteEndInfo::NormalPacket
        };
        out.write_packet(packet[..len].to_vec(), serial, end, granule as u64)?;
    }
    Ok(Voice {
        bytes: out.into_inner().into_inner(),
        secs: total as f64 / f64::from(RATE),
    })
}

/// The WAV's samples mixed to one channel, in -1..1, and its rate.
fn mono(wav: &[u8]) -> Result<(Vec<f32>, u32), EncodeError> {
    let reader = hound::WavReader::new(Cursor::new(wav))?;
    let spec = reader.spec();
    let channels = usize::from(spec.channels.max(1));
    if u64::from(reader.duration()) > MAX_SECS * u64::from(spec.sample_rate.max(1)) {
        return Err(EncodeError::TooLong);
    }
    let interleaved: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader.into_samples::<f32>().collect::<Result<_, _>>()?,
        hound::SampleFormat::Int => {
            let scale = 2f32.powi(i32::from(spec.bits_per_sample.saturating_sub(1)));
            reader
                .into_samples::<i32>()
                .map(|s| s.map(|s| s as f32 / scale))
                .collect::<Result<_, _>>()?
        }
    };
    let samples = interleaved
        .chunks(channels)
        .map(|c| c.iter().sum::<f32>() / c.len() as f32)
        .collect();
    Ok((samples, spec.sample_rate.max(1)))
}

/// `samples` at `rate` as samples at 48 kHz, by linear interpolation.
fn resample(samples: &[f32], rate: u32) -> Vec<f32> {
    if rate == RATE {
        return samples.to_vec();
    }
    let len = (samples.len() as u64 * u64::from(RATE) / u64::from(rate)) as usize;
    let step = f64::from(rate) / f64::from(RATE);
    (0..len)
        .map(|i| {
            let at = i as f64 * step;
            let j = at as usize;
            let frac = (at - j as f64) as f32;
            let a = samples.get(j).copied().unwrap_or(0.0);
            let b = samples.get(j + 1).copied().unwrap_or(a);
            a + (b - a) * frac
        })
        .collect()
}

/// The identification header (RFC 7845 §5.1): mono, no gain, mapping family 0.
fn head(pre_skip: usize, input_rate: u32) -> Vec<u8> {
    let mut head = b"OpusHead".to_vec();
    head.push(1); // version
    head.push(1); // channels
    head.extend_from_slice(&u16::try_from(pre_skip).unwrap_or(u16::MAX).to_le_bytes());
    head.extend_from_slice(&input_rate.to_le_bytes());
    head.extend_from_slice(&0i16.to_le_bytes()); // output gain
    head.push(0); // channel mapping family
    head
}

/// The comment header (RFC 7845 §5.2): the vendor and no comments.
fn tags() -> Vec<u8> {
    let vendor = b"pincer";
    let mut tags = b"OpusTags".to_vec();
    tags.extend_from_slice(&(vendor.len() as u32).to_le_bytes());
    tags.extend_from_slice(vendor);
    tags.extend_from_slice(&0u32.to_le_bytes());
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAV of `secs` of a 440 Hz tone at `rate`, 16-bit, `channels` channels.
    fn tone(secs: f64, rate: u32, channels: u16) -> Vec<u8> {
        let spec = hound::WavSpec {
            channels,
            sample_rate: rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut out = Cursor::new(Vec::new());
        let mut writer = hound::WavWriter::new(&mut out, spec).unwrap();
        let n = (secs * f64::from(rate)) as usize;
        for i in 0..n {
            let v = (i as f64 * 440.0 * std::f64::consts::TAU / f64::from(rate)).sin();
            for _ in 0..channels {
                writer.write_sample((v * 8000.0) as i16).unwrap();
            }
        }
        writer.finalize().unwrap();
        out.into_inner()
    }

    /// Decode an OGG/Opus stream: its pre-skip, its final granule, and the samples the
    /// decoder gives.
    fn decode(bytes: &[u8]) -> (usize, u64, usize) {
        let mut reader = ogg::reading::PacketReader::new(Cursor::new(bytes));
        let head = reader.read_packet_expected().unwrap();
        assert_eq!(&head.data[..8], b"OpusHead");
        let pre_skip = usize::from(u16::from_le_bytes([head.data[10], head.data[11]]));
        let tags = reader.read_packet_expected().unwrap();
        assert_eq!(&tags.data[..8], b"OpusTags");
        let mut decoder = opus::Decoder::new(RATE, opus::Channels::Mono).unwrap();
        let mut pcm = vec![0f32; 5760];
        let (mut decoded, mut last) = (0, 0);
        while let Some(packet) = reader.read_packet().unwrap() {
            decoded += decoder.decode_float(&packet.data, &mut pcm, false).unwrap();
            last = packet.absgp_page();
        }
        (pre_skip, last, decoded)
    }

    #[test]
    fn a_tone_keeps_its_length_through_resampling_and_encoding() {
        for (rate, channels) in [(24_000, 1), (22_050, 1), (48_000, 2), (16_000, 1)] {
            let voice = encode(&tone(1.5, rate, channels)).unwrap();
            assert!((voice.secs - 1.5).abs() < 0.01, "{rate}: {}", voice.secs);
            let (pre_skip, granule, decoded) = decode(&voice.bytes);
            let secs = (granule as f64 - pre_skip as f64) / f64::from(RATE);
            assert!((secs - 1.5).abs() < 0.01, "{rate}: {secs}");
            assert!(decoded >= granule as usize, "{decoded} < {granule}");
        }
    }

    #[test]
    fn what_is_not_a_wav_or_is_silent_is_refused() {
        assert!(matches!(encode(b"not a wav"), Err(EncodeError::Wav(_))));
        assert!(matches!(
            encode(&tone(0.0, 24_000, 1)),
            Err(EncodeError::Empty)
        ));
    }
}
