//! Image parts in chat requests: accepted and read back (`last_user_images`,
//! `all_image_count`) when well formed, refused with each provider's 400 when not.

use crate::common;

use base64::Engine;
use common::{post_anthropic, post_openai};
use pincer_fakes::FakeModel;
use serde_json::{Value, json};

const JPEG: &[u8] = &[0xFF, 0xD8, 0xFF, 0xE0, 0, 16, b'J', b'F', b'I', b'F'];
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn openai_image(url: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": url}})
}

fn openai_with(messages: Value) -> Value {
    json!({"model": "gpt-fake", "messages": messages})
}

fn anthropic_image(media_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
}

fn anthropic_with(messages: Value) -> Value {
    json!({"model": "claude-fake", "max_tokens": 100, "messages": messages})
}

async fn refusal(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    message.to_string()
}

#[tokio::test]
async fn openai_images_are_read_back_decoded_and_counted() {
    let fake = FakeModel::start().await;
    let earlier = openai_image(&format!("data:image/png;base64,{}", b64(PNG)));
    let body = openai_with(json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "before"}, earlier]},
        {"role": "assistant", "content": "a cat"},
        {"role": "user", "content": [
            {"type": "text", "text": "what is"},
            openai_image(&format!("data:image/jpeg;base64,{}", b64(JPEG))),
            {"type": "text", "text": "this?"},
            openai_image("https://example.com/cat.webp"),
        ]},
    ]));
    let response = post_openai(&fake, &body).await;
    assert_eq!(response.status(), 200);
    let recorded = &fake.requests()[0];
    assert_eq!(
        recorded.last_user_images(),
        vec![("image/jpeg".to_string(), JPEG.to_vec())]
    );
    assert_eq!(recorded.last_user_text(), "what is\nthis?");
    assert_eq!(recorded.all_image_count(), 3);
}

#[tokio::test]
async fn openai_refuses_malformed_image_parts() {
    let fake = FakeModel::start().await;
    let user = |part: Value| openai_with(json!([{"role": "user", "content": [part]}]));
    let cases = [
        (
            user(openai_image("data:text/plain;base64,aGk=")),
            "unsupported MIME type 'text/plain'",
        ),
        (
            user(openai_image("data:image/png;base64,not base64!")),
            "invalid base64",
        ),
        (
            user(openai_image("data:image/png,raw")),
            "not base64-encoded",
        ),
        (user(openai_image("file:///cat.png")), "'data:' prefix"),
        (
            user(json!({"type": "image_url"})),
            "messages[0].content[0].image_url",
        ),
        (user(json!({"type": "picture"})), "Invalid value: 'picture'"),
        (
            openai_with(json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [openai_image("https://example.com/a.png")]},
            ])),
            "role 'assistant' contains an image URL",
        ),
    ];
    for (body, expected) in cases {
        let message = refusal(post_openai(&fake, &body).await).await;
        assert!(
            message.contains(expected),
            "{expected:?} not in {message:?}"
        );
    }
    assert!(
        fake.requests().len() == 7,
        "refused requests are still recorded"
    );
}

#[tokio::test]
async fn anthropic_images_are_read_back_past_tool_results() {
    let fake = FakeModel::start().await;
    let body = anthropic_with(json!([
        {"role": "user", "content": [
            anthropic_image("image/png", &b64(PNG)),
            {"type": "text", "text": "what is this?"},
        ]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "look", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
            anthropic_image("image/jpeg", &b64(JPEG)),
        ]}]},
    ]));
    let response = post_anthropic(&fake, &body).await;
    assert_eq!(response.status(), 200);
    let recorded = &fake.requests()[0];
    assert_eq!(
        recorded.last_user_images(),
        vec![("image/png".to_string(), PNG.to_vec())]
    );
    assert_eq!(recorded.last_user_text(), "what is this?");
    assert_eq!(recorded.all_image_count(), 2);

    let by_url = anthropic_with(json!([{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "text", "text": "and this?"},
    ]}]));
    assert_eq!(post_anthropic(&fake, &by_url).await.status(), 200);
    assert!(fake.requests()[1].last_user_images().is_empty());
    assert_eq!(fake.requests()[1].all_image_count(), 1);
}

#[tokio::test]
async fn anthropic_refuses_malformed_image_blocks() {
    let fake = FakeModel::start().await;
    let user = |block: Value| anthropic_with(json!([{"role": "user", "content": [block]}]));
    let too_big = "A".repeat(5 * 1024 * 1024 + 4);
    let cases = [
        (
            user(anthropic_image("image/bmp", &b64(PNG))),
            "messages.0.content.0.image.source.base64.media_type: Input should be",
        ),
        (
            user(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png"}})),
            "source.base64.data: Field required",
        ),
        (
            user(anthropic_image("image/png", "***")),
            "source.base64.data",
        ),
        (
            user(anthropic_image("image/jpeg", &b64(PNG))),
            "specified using the image/jpeg media type, but the image appears to be a image/png",
        ),
        (
            user(anthropic_image("image/png", &too_big)),
            "image exceeds 5 MB maximum",
        ),
        (
            user(
                json!({"type": "tool_result", "tool_use_id": "t", "content": [
                    anthropic_image("image/tiff", &b64(PNG)),
                ]}),
            ),
            "messages.0.content.0.tool_result.content.0.image.source.base64.media_type",
        ),
    ];
    for (body, expected) in cases {
        let message = refusal(post_anthropic(&fake, &body).await).await;
        assert!(
            message.contains(expected),
            "{expected:?} not in {message:?}"
        );
    }

    // Bytes that look like no image at all pass: tests may send placeholders.
    let placeholder = user(anthropic_image("image/jpeg", &b64(b"fake photo")));
    assert_eq!(post_anthropic(&fake, &placeholder).await.status(), 200);
}

#[tokio::test]
async fn a_chat_request_may_carry_several_megabytes_of_photos() {
    let fake = FakeModel::start().await;
    let mut photo = JPEG.to_vec();
    photo.resize(3 * 1024 * 1024, 7);
    let url = format!("data:image/jpeg;base64,{}", b64(&photo));
    let body = openai_with(json!([{"role": "user", "content": [
        openai_image(&url), openai_image(&url), {"type": "text", "text": "two photos"},
    ]}]));
    let response = post_openai(&fake, &body).await;
    assert_eq!(response.status(), 200);
    let images = fake.requests()[0].last_user_images();
    assert_eq!(images.len(), 2);
    assert_eq!(images[1].1.len(), photo.len());
}
