//! Pictures for a vision model: a saved image becomes the bytes a model is sent. One that
//! is already small (long side at most `MAX_SIDE`, a format every provider takes, at most
//! `KEEP_BYTES`) goes as it is; anything else is decoded, scaled down to `MAX_SIDE` and
//! re-encoded as JPEG. Decoding is bounded (`Limits`), so a picture crafted to expand
//! into gigabytes is refused. It all happens in the confined child process
//! (`pincer __image-scale`, see `child`): a decoder that panics on a crafted file takes
//! only the child down, and a big photo's decoded pixels never weigh on the gateway.

use std::io::Cursor;

use base64::Engine;
use image::{ImageFormat, ImageReader, Limits};

use super::child::ReadError;
use crate::provider::ImageData;

/// The hidden subcommand.
pub const SUBCOMMAND: &str = "__image-scale";

/// `for_model` in the child process.
pub async fn scaled(bytes: &[u8]) -> Result<ImageData, ReadError> {
    super::child::run(SUBCOMMAND, "image", bytes).await
}

/// Why a picture cannot go to a model (in the child; the gateway hears the words).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("not an image in a known format (PNG, JPEG, GIF, WebP)")]
    UnknownFormat,
    #[error("unreadable image: {0}")]
    Unreadable(#[from] image::ImageError),
    /// Reading its first bytes to guess the format failed.
    #[error("unreadable image: {0}")]
    Unguessable(std::io::Error),
    #[error(
        "it is {width} × {height} pixels, over the {} megapixels a picture may have",
        MAX_PIXELS / 1_000_000
    )]
    TooManyPixels { width: u32, height: u32 },
    #[error("cannot encode the image: {0}")]
    Encode(image::ImageError),
}

/// The long side of an image as sent, in pixels: what Anthropic recommends, and where
/// OpenAI's detail tiles stop paying off.
pub const MAX_SIDE: u32 = 1568;
/// The most images shown to the model in one turn; further ones are named as files.
pub const MAX_IMAGES: usize = 4;
/// A small picture in a format every provider takes is sent without re-encoding.
const KEEP_BYTES: usize = 1 << 20;
/// The largest picture decoded, in pixels a side, pixels in all (50 megapixels: a
/// phone's largest photos) and bytes of memory.
const MAX_DECODE_SIDE: u32 = 16_384;
const MAX_PIXELS: u64 = 50_000_000;
const MAX_DECODE_BYTES: u64 = 256 << 20;
/// JPEG quality of a re-encoded picture.
const QUALITY: u8 = 85;

/// The image in `bytes`, ready for a model: as it is if small, else scaled to `MAX_SIDE`.
pub fn for_model(bytes: &[u8]) -> Result<ImageData, ImageError> {
    let reader = reader(bytes)?;
    let format = reader.format().ok_or(ImageError::UnknownFormat)?;
    let (width, height) = reader.into_dimensions()?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ImageError::TooManyPixels { width, height });
    }
    let mime = mime_of(format);
    if let Some(mime) = mime
        && width.max(height) <= MAX_SIDE
        && bytes.len() <= KEEP_BYTES
    {
        return Ok(ImageData {
            mime: mime.to_string(),
            base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        });
    }
    let jpeg = downscale(bytes)?;
    Ok(ImageData {
        mime: "image/jpeg".into(),
        base64: base64::engine::general_purpose::STANDARD.encode(jpeg),
    })
}

/// Decode `bytes`, fit the picture in `MAX_SIDE` × `MAX_SIDE` and encode it as JPEG.
pub fn downscale(bytes: &[u8]) -> Result<Vec<u8>, ImageError> {
    let mut reader = reader(bytes)?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_DECODE_SIDE);
    limits.max_image_height = Some(MAX_DECODE_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let image = reader.decode()?;
    // Area averaging on the 8-bit pixels (`thumbnail`): the scaled copy is the only
    // new buffer, where a filtered resize would make a float copy as large as the
    // picture itself.
    let image = if image.width().max(image.height()) > MAX_SIDE {
        image.thumbnail(MAX_SIDE, MAX_SIDE)
    } else {
        image
    };
    // JPEG has no alpha: flatten to RGB first.
    let rgb = image.into_rgb8();
    let mut out = Vec::with_capacity(256 << 10);
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, QUALITY);
    rgb.write_with_encoder(encoder)
        .map_err(ImageError::Encode)?;
    Ok(out)
}

fn reader(bytes: &[u8]) -> Result<ImageReader<Cursor<&[u8]>>, ImageError> {
    ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(ImageError::Unguessable)
}

/// The types every provider accepts.
fn mime_of(format: ImageFormat) -> Option<&'static str> {
    match format {
        ImageFormat::Jpeg => Some("image/jpeg"),
        ImageFormat::Png => Some("image/png"),
        ImageFormat::Gif => Some("image/gif"),
        ImageFormat::WebP => Some("image/webp"),
        _ => None,
    }
}

/// Whether a file is a picture, by what the platform said or by its name.
pub fn is_image(mime: Option<&str>, name: &str) -> bool {
    if mime.is_some_and(|m| m.starts_with("image/")) {
        return true;
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    matches!(
        ext.as_deref(),
        Some("png" | "jpg" | "jpeg" | "gif" | "webp")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = RgbImage::from_fn(width, height, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, 90])
        });
        let mut out = Vec::new();
        image
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    fn decoded(data: &ImageData) -> image::DynamicImage {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&data.base64)
            .unwrap();
        image::load_from_memory(&bytes).unwrap()
    }

    #[test]
    fn a_small_picture_goes_as_it_is() {
        let bytes = png(40, 30);
        let data = for_model(&bytes).unwrap();
        assert_eq!(data.mime, "image/png");
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&data.base64)
                .unwrap(),
            bytes
        );
    }

    #[test]
    fn a_large_picture_is_scaled_to_the_long_side_as_jpeg() {
        let data = for_model(&png(4000, 3000)).unwrap();
        assert_eq!(data.mime, "image/jpeg");
        let image = decoded(&data);
        assert_eq!((image.width(), image.height()), (1568, 1176));
    }

    #[test]
    fn garbage_and_bombs_are_refused() {
        assert!(for_model(b"not a picture at all").is_err());
        // A PNG header claiming 100000 x 100000 pixels.
        let mut bomb = png(1, 1);
        bomb[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        assert!(downscale(&bomb).is_err());
    }

    #[test]
    fn pictures_are_known_by_type_or_name() {
        assert!(is_image(Some("image/heic"), "x"));
        assert!(is_image(None, "Plant.JPG"));
        assert!(!is_image(Some("application/pdf"), "a.pdf"));
    }
}
