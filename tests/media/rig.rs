//! One `pincer run` wired to the fake Telegram, Discord and Slack at once, with the fake
//! model speaking either wire format: the media tests send a photo, a voice note or a
//! document from each platform and look at what reached the model and what came back.

use pincer_fakes::FakeModel;
use pincer_fakes::discord::{self, FakeDiscord};
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::slack::FakeSlack;
use pincer_fakes::telegram::FakeTelegram;

use crate::common::PATIENCE;
use crate::common::platform::{channel_table, wait_shown};
use crate::common::{Gateway, TestHome};

/// The owner's small number on every platform (telegram:42, discord:…, slack:U42).
pub(super) const OWNER: u64 = 42;
/// Which wire format the fake model is spoken to in.
#[derive(Clone, Copy, Debug)]
pub(super) enum Wire {
    OpenAi,
    Anthropic,
}

pub(super) struct Rig {
    pub home: TestHome,
    pub model: FakeModel,
    pub telegram: FakeTelegram,
    pub discord: FakeDiscord,
    pub slack: FakeSlack,
    gateway: Option<Gateway>,
}

impl Rig {
    /// A home with the three channels enabled (each with `channel` lines in its table)
    /// and `extra` TOML at the end (whole tables, e.g. `[models."fake/m"]`).
    pub(super) async fn new(wire: Wire, channel: &str, extra: &str) -> Rig {
        let model = FakeModel::start().await;
        let telegram = FakeTelegram::start().await;
        let discord = FakeDiscord::start().await;
        let slack = FakeSlack::start().await;
        let (kind, base) = match wire {
            Wire::OpenAi => ("openai", model.openai_base()),
            Wire::Anthropic => ("anthropic", model.anthropic_base()),
        };
        let platforms: [&dyn FakePlatform; 3] = [&telegram, &discord, &slack];
        let owners: Vec<String> = platforms
            .iter()
            .map(|p| format!("\"{}\"", p.canonical(OWNER)))
            .collect();
        let mut config = format!(
            "version = 1\n[agent]\nowners = [{}]\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"{kind}\"\nbase_url = \"{base}\"\ntimeout_secs = 30\nidle_timeout_secs = 10\n",
            owners.join(", ")
        );
        let mut secrets = String::from("channels:\n");
        for platform in platforms {
            config.push('\n');
            config.push_str(&channel_table(platform, channel));
            secrets.push_str(&platform.secrets());
        }
        config.push_str(extra);
        let home = TestHome::new();
        home.write_config(&config);
        home.write_secrets(&secrets);
        Rig {
            home,
            model,
            telegram,
            discord,
            slack,
            gateway: None,
        }
    }

    /// Starts `pincer run` and waits until every platform is connected.
    pub(super) async fn start(&mut self) {
        self.gateway = Some(self.home.start_gateway());
        let platforms: [&dyn FakePlatform; 3] = [&self.telegram, &self.discord, &self.slack];
        for platform in platforms {
            assert!(
                platform.connected(PATIENCE).await,
                "{} never connected; gateway log:\n{}",
                platform.name(),
                self.log()
            );
        }
    }

    pub(super) fn log(&self) -> String {
        self.home.gateway_log()
    }

    /// The owner's DM on Discord.
    pub(super) fn discord_dm(&self) -> u64 {
        discord::objects::dm_channel(OWNER)
    }

    /// Wait until the fake model has seen `n` requests.
    pub(super) async fn requests(&self, n: usize) -> Vec<pincer_fakes::Recorded> {
        let seen = self.model.wait_for_requests(n, PATIENCE).await;
        assert!(
            seen.len() >= n,
            "the model saw {} requests, not {n}; gateway log:\n{}",
            seen.len(),
            self.log()
        );
        seen
    }

    /// Wait until `platform` shows a message in `chat` containing `needle`.
    pub(super) async fn shown(
        &self,
        platform: &dyn FakePlatform,
        chat: &str,
        needle: &str,
    ) -> String {
        wait_shown(platform, chat, needle, || self.log()).await.text
    }
}

/// A PNG of `width` × `height` pixels: a gradient, so it compresses like a photo does
/// not, but stays quick to make.
pub(super) fn png(width: u32, height: u32) -> Vec<u8> {
    let picture = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x + y) % 239) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    picture
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("encode png");
    out.into_inner()
}

/// The width and height of an encoded picture.
pub(super) fn dimensions(bytes: &[u8]) -> (u32, u32) {
    let picture = image::load_from_memory(bytes).expect("a picture the model could read");
    (picture.width(), picture.height())
}

/// A PDF with one page per entry of `pages`, each showing its text in Helvetica: enough
/// of the format for any reader (objects, a cross-reference table with real offsets).
pub(super) fn pdf(pages: &[&str]) -> Vec<u8> {
    let n = pages.len();
    // 1: catalog, 2: pages, 3: font, then per page its page object and its content.
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_string(),
    ];
    for (i, text) in pages.iter().enumerate() {
        let content = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R /Resources << /Font << /F1 3 0 R >> >> >>",
            5 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A PNG whose header claims `width` × `height` pixels (its IHDR checksum right, so a
/// decoder believes it) over one tiny real picture: a decompression bomb's shape.
pub(super) fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = png(1, 1);
    bytes[16..20].copy_from_slice(&width.to_be_bytes());
    bytes[20..24].copy_from_slice(&height.to_be_bytes());
    // The IHDR chunk: type at 12..16, data at 16..29, CRC of type and data at 29..33.
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

/// CRC-32 as PNG computes it.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
