//! `cargo bench --bench media`: what a photo costs. The release `pincer run` with the
//! fake Telegram and Discord and a fake model marked as seeing images:
//! - the bytes a 12-megapixel camera photo (4000 × 3000 JPEG) would add to the model
//!   request as it is (base64), and what Pincer sends after scaling it to 1568 px;
//! - the gateway's peak memory (VmHWM) after text turns, after the photo's turn, and
//!   after a turn with 4 such photos (one Discord message); RSS once that is over.
//!
//! It measures and prints; nothing is asserted.

mod support;

use std::io::Cursor;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use base64::Engine as _;
use pincer_fakes::discord::{FakeDiscord, Incoming as DiscordMessage, objects};
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::telegram::{FakeTelegram, Incoming as TelegramMessage};
use pincer_fakes::{FakeModel, Recorded};
use support::{Gateway, OWNER, mib, seen};

const SEES: &str = "[models.\"fake/m\"]\nvision = true";
const WAIT: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    support::main("media", bench())
}

/// A 4000 × 3000 JPEG at quality 90 with fine detail everywhere, about what a phone
/// camera writes (a smooth picture would compress far better than a photo does).
fn camera_photo(seed: u32) -> anyhow::Result<Vec<u8>> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    let picture = image::RgbImage::from_fn(4000, 3000, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let noise = (state % 48) as u8;
        image::Rgb([
            ((x / 16) % 200) as u8 + noise,
            ((y / 12) % 200) as u8 + noise,
            (((x + y) / 20) % 200) as u8 + noise,
        ])
    });
    let mut out = Cursor::new(Vec::new());
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90)
        .encode_image(&picture)
        .context("cannot encode the test photo")?;
    Ok(out.into_inner())
}

/// The base64 bytes of the images in a request's last user message.
fn image_base64_bytes(request: &Recorded) -> usize {
    request
        .last_user_images()
        .iter()
        .map(|(_, bytes)| {
            base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .len()
        })
        .sum()
}

async fn bench() -> anyhow::Result<()> {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let platforms: Vec<&dyn FakePlatform> = vec![&telegram, &discord];
    let gateway = Gateway::start(&model, &platforms, SEES)?;
    gateway.ready(&platforms).await?;

    // Warm up: a text turn on each platform, so connections and caches exist.
    let tg_chat = telegram.dm(OWNER, "warm up").await;
    seen(&telegram, &tg_chat, "echo: warm up", WAIT).await?;
    let dc_chat = discord.dm(OWNER, "warm up").await;
    seen(&discord, &dc_chat, "echo: warm up", WAIT).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;

    // One photo on Telegram: request bytes with and without scaling.
    let (_, hwm_text) = gateway.memory();
    let photo = camera_photo(1)?;
    let text_only = model
        .requests()
        .last()
        .map(|r| r.body.to_string().len())
        .unwrap_or(0);
    telegram.inject(TelegramMessage::dm(OWNER as i64, "what is this?").with_photo(photo.clone()));
    seen(&telegram, &tg_chat, "echo: what is this?", WAIT).await?;
    let request = model.requests().pop().context("no request for the photo")?;
    let sent_b64 = image_base64_bytes(&request);
    let raw_b64 = base64::engine::general_purpose::STANDARD
        .encode(&photo)
        .len();
    let (width, height) = request
        .last_user_images()
        .first()
        .map(|(_, bytes)| image::load_from_memory(bytes).map(|i| (i.width(), i.height())))
        .transpose()?
        .unwrap_or_default();

    // Four photos in one Discord message: memory around the turn.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (rss_before, hwm_before) = gateway.memory();
    let mut message = DiscordMessage::dm(OWNER, "compare these four");
    for n in 0..4 {
        message = message.with_file(
            &format!("photo{n}.jpg"),
            "image/jpeg",
            camera_photo(10 + n)?,
        );
    }
    discord.inject(message);
    seen(
        &discord,
        &objects::dm_channel(OWNER).to_string(),
        "echo: compare these four",
        WAIT,
    )
    .await?;
    let (_, hwm_after) = gateway.memory();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_after, _) = gateway.memory();
    let four = model
        .requests()
        .pop()
        .context("no request for the four photos")?;

    println!("| measure | result |");
    println!("| --- | --- |");
    println!(
        "| 12 MP camera photo (4000 × 3000 JPEG q90) | {:.1} MB file, {:.1} MB as base64 in the request if sent as is |",
        photo.len() as f64 / 1e6,
        raw_b64 as f64 / 1e6
    );
    println!(
        "| … as Pincer sends it ({width} × {height} JPEG q85) | {:.0} KB of base64; the whole request {:.0} KB (a text turn: {:.1} KB) |",
        sent_b64 as f64 / 1e3,
        request.body.to_string().len() as f64 / 1e3,
        text_only as f64 / 1e3
    );
    println!(
        "| gateway peak RSS (VmHWM) after text turns → after the photo's turn | {} → {} MiB |",
        mib(hwm_text),
        mib(hwm_before)
    );
    println!(
        "| a turn with 4 such photos: request | {} images, {:.0} KB |",
        four.last_user_images().len(),
        four.body.to_string().len() as f64 / 1e3
    );
    println!(
        "| … gateway peak RSS (VmHWM) before → after | {} → {} MiB (+{} MiB) |",
        mib(hwm_before),
        mib(hwm_after),
        mib(hwm_after.saturating_sub(hwm_before))
    );
    println!(
        "| … RSS before → 2 s after the turn | {} → {} MiB |",
        mib(rss_before),
        mib(rss_after)
    );
    Ok(())
}
