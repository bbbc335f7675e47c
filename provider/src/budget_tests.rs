//! Tests of sizing a call: its whole-call limit from the request's size and the model's
//! reading speed, its `max_tokens` from the model's writing speed, the request-size
//! estimate and the call's clock.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::types::{ChatMessage, ToolSpec};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

const DEFAULT: Limits = Limits {
    reply: Duration::from_secs(120),
    call: None,
};

fn speeds(prompt: Option<f64>, output: Option<f64>) -> Speeds {
    Speeds {
        prompt_per_sec: prompt,
        output_per_sec: output,
    }
}

#[test]
fn an_unmeasured_model_gets_time_to_read_a_big_first_request() {
    // Issue 34: the first request is about 2,300 tokens; Qwen2.5-Coder 1.5B needed 137 s
    // to read it on a CPU, where a fixed 120 s limit cut it off.
    let budget = size(2_300, 4_096, DEFAULT, Speeds::default());
    let reading = 2_300.0 / UNMEASURED_PROMPT_PER_SEC * 1.5;
    assert_eq!(budget.limit, secs(120) + Duration::from_secs_f64(reading));
    assert!(budget.limit > secs(137), "{:?}", budget.limit);
    assert_eq!(budget.max_tokens, 4_096, "left as asked until measured");
    assert_eq!(budget.prompt_tokens, 2_300);
    assert!(!budget.fixed);
}

#[test]
fn a_measured_slow_reader_gets_its_reading_time_and_a_margin() {
    let budget = size(2_300, 4_096, DEFAULT, speeds(Some(10.0), None));
    assert_eq!(budget.limit, secs(120) + secs(345));
    // A fast server adds next to nothing.
    let budget = size(2_300, 4_096, DEFAULT, speeds(Some(5_000.0), None));
    assert!(budget.limit < secs(121), "{:?}", budget.limit);
}

#[test]
fn a_reply_that_cannot_finish_in_time_is_asked_for_fewer_tokens() {
    // 4,096 tokens at 5 a second take 819 s: not within 120 s. 80% of 120 s at 5/s.
    let budget = size(500, 4_096, DEFAULT, speeds(Some(1_000.0), Some(5.0)));
    assert_eq!(budget.max_tokens, 480);
    // A fast writer keeps the configured cap (agent.max_tokens stays the upper bound).
    let budget = size(500, 4_096, DEFAULT, speeds(Some(1_000.0), Some(200.0)));
    assert_eq!(budget.max_tokens, 4_096);
    // Left to the server (0), a known speed still sets a cap.
    let budget = size(500, 0, DEFAULT, speeds(None, Some(5.0)));
    assert_eq!(budget.max_tokens, 480);
    // Never below a useful minimum, however slow.
    let budget = size(500, 4_096, DEFAULT, speeds(None, Some(0.1)));
    assert_eq!(budget.max_tokens, MIN_REPLY_TOKENS);
}

#[test]
fn a_configured_call_limit_is_the_whole_limit_and_leaves_the_rest_for_writing() {
    let limits = Limits {
        reply: secs(120),
        call: Some(secs(300)),
    };
    // 1,000 tokens at 10/s: 100 s expected, 150 s allowed for reading; 150 s to write
    // at 2/s, 80% of it: 240 tokens.
    let budget = size(1_000, 4_096, limits, speeds(Some(10.0), Some(2.0)));
    assert_eq!(budget.limit, secs(300));
    assert!(budget.fixed);
    assert_eq!(budget.max_tokens, 240);
}

#[test]
fn the_reading_allowance_has_a_ceiling() {
    let budget = size(10_000_000, 0, DEFAULT, speeds(Some(1.0), None));
    assert_eq!(budget.limit, secs(120) + secs(15 * 60));
}

#[test]
fn the_estimate_counts_text_tool_schemas_and_pictures() {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let schema_len = schema.to_string().len();
    let req = ChatRequest {
        system_stable: "a".repeat(400),
        system_volatile: "b".repeat(40),
        messages: vec![
            ChatMessage::user_text("c".repeat(400)),
            ChatMessage {
                role: crate::Role::User,
                parts: vec![Part::Image {
                    path: "inbox/cat.jpg".into(),
                    data: None,
                }],
            },
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "d".repeat(100),
            input_schema: Arc::new(schema),
        }],
        ..ChatRequest::default()
    };
    let bytes = 400 + 40 + 400 + "read_file".len() + 100 + schema_len;
    assert_eq!(estimate_tokens(&req), bytes as u64 / 4 + 1_600);
}

#[tokio::test(start_paused = true)]
async fn the_meter_times_reading_and_writing_unless_the_server_measured() {
    let meter = Meter::start();
    assert!(!meter.replying());
    tokio::time::sleep(secs(30)).await;
    meter.reply_began();
    tokio::time::sleep(secs(10)).await;
    meter.reply_began(); // only the first piece counts
    tokio::time::sleep(secs(10)).await;
    assert!(meter.replying());
    let usage = Usage {
        input_tokens: 300,
        output_tokens: 100,
        cache_read_tokens: 2_000,
        cache_write_tokens: 0,
    };
    let sample = meter.sample(&usage);
    assert_eq!(
        sample,
        Sample {
            prompt_tokens: 300,
            reading: secs(30),
            output_tokens: 100,
            writing: secs(20),
        }
    );
    let server = Sample {
        prompt_tokens: 2_928,
        reading: Duration::from_millis(32_173),
        output_tokens: 4,
        writing: Duration::from_millis(433),
    };
    meter.server_measured(server);
    assert_eq!(meter.sample(&usage), server);
}
