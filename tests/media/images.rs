//! Photos in: a picture sent on Telegram, Discord or Slack reaches a vision model as an
//! image part of its wire format, scaled down when large, sent once (later turns get a
//! placeholder); with no model that sees, the reply names the setting to change.

use pincer_fakes::{Recorded, Step, discord, slack, telegram};

use super::rig::{OWNER, Rig, Wire, dimensions, png, png_claiming};

const SEES: &str = "[models.\"fake/m\"]\nvision = true\n";

/// The one image of the last message a person wrote in `request`, as (mime, bytes).
fn only_image(request: &Recorded) -> (String, Vec<u8>) {
    let images = request.last_user_images();
    assert_eq!(images.len(), 1, "one image part: {}", request.body);
    images.into_iter().next().expect("one image")
}

/// The wire format's own shape for an image part is in the body.
fn assert_wire_shape(wire: Wire, request: &Recorded) {
    let body = request.body.to_string();
    match wire {
        Wire::OpenAi => assert!(
            body.contains("\"image_url\"") && body.contains("data:image/"),
            "no OpenAI image_url data URL: {body}"
        ),
        Wire::Anthropic => assert!(
            body.contains("\"type\":\"image\"") && body.contains("\"type\":\"base64\""),
            "no Anthropic base64 image block: {body}"
        ),
    }
}

/// A small photo on Telegram, a large image attachment on Discord and a small image
/// file on Slack, in one gateway speaking `wire`.
async fn each_platform_shows_its_picture(wire: Wire) {
    let mut rig = Rig::new(wire, "", SEES).await;
    rig.start().await;
    let small = png(64, 48);
    let large = png(4000, 3000); // 12 megapixels

    rig.telegram.inject(
        telegram::Incoming::dm(OWNER as i64, "what plant is this?").with_photo(small.clone()),
    );
    rig.shown(&rig.telegram, "42", "echo:").await;
    let request = rig.requests(1).await.remove(0);
    assert_wire_shape(wire, &request);
    let (mime, bytes) = only_image(&request);
    assert_eq!(mime, "image/png", "a small PNG goes as it is");
    assert_eq!(bytes, small);
    assert!(request.last_user_text().contains("what plant is this?"));

    rig.discord
        .inject(discord::Incoming::dm(OWNER, "and this one?").with_file(
            "tree.png",
            "image/png",
            large.clone(),
        ));
    let dm = rig.discord_dm().to_string();
    rig.shown(&rig.discord, &dm, "echo:").await;
    let request = rig.requests(2).await.remove(1);
    assert_wire_shape(wire, &request);
    let (mime, bytes) = only_image(&request);
    assert_eq!(mime, "image/jpeg", "a large picture is re-encoded as JPEG");
    let (width, height) = dimensions(&bytes);
    assert_eq!(
        (width, height),
        (1568, 1176),
        "scaled to a long side of 1568"
    );
    assert!(
        bytes.len() < large.len() / 4,
        "{} bytes sent for a {}-byte picture",
        bytes.len(),
        large.len()
    );

    rig.slack
        .inject(slack::Incoming::dm(OWNER, "and from Slack?").with_file(
            "leaf.png",
            "image/png",
            small.clone(),
        ));
    rig.shown(&rig.slack, "D42", "echo:").await;
    let request = rig.requests(3).await.remove(2);
    assert_wire_shape(wire, &request);
    assert_eq!(only_image(&request).1, small);

    // The picture is kept once, in the inbox; the next turn of the Telegram chat sends a
    // placeholder, not the picture again.
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "thanks"));
    rig.shown(&rig.telegram, "42", "echo: thanks").await;
    let request = rig.requests(4).await.remove(3);
    assert_eq!(request.all_image_count(), 0, "{}", request.body);
    assert!(
        request
            .body
            .to_string()
            .contains("sent earlier: inbox/telegram/"),
        "{}",
        request.body
    );
    let inbox = std::fs::read_dir(rig.home.workspace().join("inbox/telegram"))
        .expect("the telegram inbox")
        .count();
    assert_eq!(inbox, 1, "the photo is stored once");
    let shown = rig.home.run(&["sessions", "show", "telegram:dm:42"]).stdout;
    assert!(shown.contains("[image] inbox/telegram/"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pictures_from_every_platform_reach_an_openai_vision_model() {
    each_platform_shows_its_picture(Wire::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pictures_from_every_platform_reach_an_anthropic_vision_model() {
    each_platform_shows_its_picture(Wire::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_text_only_model_the_reply_names_the_setting_and_no_image_is_sent() {
    let mut rig = Rig::new(Wire::OpenAi, "", "").await;
    rig.start().await;
    rig.model.push(Step::text("I only read text"));
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "what is this?").with_photo(png(32, 32)));
    let notice = rig.shown(&rig.telegram, "42", "can't see images").await;
    assert!(notice.contains("vision = true"), "{notice}");
    assert!(notice.contains("[models."), "{notice}");
    rig.shown(&rig.telegram, "42", "I only read text").await;
    let request = rig.requests(1).await.remove(0);
    assert_eq!(request.all_image_count(), 0, "{}", request.body);
    let text = request.last_user_text();
    assert!(
        text.contains("not shown"),
        "the model is told in one line: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vision_light_model_is_picked_over_the_heavy_chain() {
    // Light sees; heavy does not: a photo goes to light, though an attachment scores 1.0.
    let extra = "[models.\"fake/light-eyes\"]\nvision = true\n";
    let mut rig = Rig::new(Wire::OpenAi, "", extra).await;
    let config = std::fs::read_to_string(rig.home.config_file())
        .expect("config")
        .replace(
            "light = [\"fake/m\"]",
            "light = [\"fake/light-eyes\"]\nheavy = [\"fake/heavy-blind\"]",
        );
    rig.home.write_config(&config);
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "look").with_photo(png(16, 16)));
    rig.shown(&rig.telegram, "42", "echo:").await;
    let request = rig.requests(1).await.remove(0);
    assert_eq!(request.model(), "light-eyes");
    assert_eq!(request.last_user_images().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_four_pictures_are_shown_a_turn_and_the_rest_are_named() {
    let mut rig = Rig::new(Wire::Anthropic, "", SEES).await;
    rig.start().await;
    let mut message = discord::Incoming::dm(OWNER, "compare these");
    for n in 0..6 {
        message = message.with_file(&format!("p{n}.png"), "image/png", png(20 + n, 20));
    }
    rig.discord.inject(message);
    let dm = rig.discord_dm().to_string();
    rig.shown(&rig.discord, &dm, "echo:").await;
    let request = rig.requests(1).await.remove(0);
    assert_eq!(request.last_user_images().len(), 4, "{}", request.body);
    let text = request.last_user_text();
    assert_eq!(text.matches("at most 4 images a turn").count(), 2, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_crafted_to_explode_is_refused_and_the_gateway_goes_on() {
    let mut rig = Rig::new(Wire::OpenAi, "", SEES).await;
    rig.start().await;
    // A PNG whose header claims 100000 × 100000 pixels (40 GB decoded).
    let bomb = png_claiming(100_000, 100_000);
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "what is this?").with_photo(bomb));
    rig.shown(&rig.telegram, "42", "echo:").await;
    let request = rig.requests(1).await.remove(0);
    assert_eq!(request.all_image_count(), 0);
    assert!(
        request.last_user_text().contains("could not be shown")
            && request.last_user_text().contains("100000"),
        "{}",
        request.last_user_text()
    );
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "still there?"));
    rig.shown(&rig.telegram, "42", "echo: still there?").await;
}
