//! The runner's types held to recorded lines (`host/tests/fixtures/runner/`): what a
//! backend written from seed 001 sends reads and writes back, odd lines read as the
//! runner always took them, and every event Pincer wrote before the types (its json!
//! trees) reads back to the same text.

use serde_json::json;

use super::*;
use crate::round_trip::{assert_round_trip, assert_same_line, fixture};

const SEED_INPUT: &str = include_str!("../../../tests/fixtures/runner/seed_input.jsonl");
const PINCER_OUTPUT: &str = include_str!("../../../tests/fixtures/runner/pincer_output.jsonl");

fn input(name: &str) -> Input {
    let (_, line) = fixture(SEED_INPUT)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no line {name}"));
    match Line::read(&line).expect("JSON") {
        Line::Input(input) => input,
        Line::Unknown(kind) => panic!("{name} reads as an unknown {kind}"),
    }
}

#[test]
fn every_line_of_seed_001_reads_and_writes_back() {
    let lines = fixture(SEED_INPUT);
    assert!(lines.len() >= 17, "{} lines", lines.len());
    for (name, line) in &lines {
        assert_round_trip::<Input>(name, line, &[], &[]);
        assert!(
            matches!(Line::read(line), Ok(Line::Input(_))),
            "{name} is a line of a known type"
        );
    }
}

#[test]
fn seed_001s_lines_mean_what_the_backend_meant() {
    let Input::Message { attachments, .. } =
        input("message with attachments (seed 001 names no fields of one; Pincer reads none)")
    else {
        panic!("a message");
    };
    assert_eq!(attachments.len(), 2);
    let Input::UserQuestionResponse { answers, .. } = input("user_question_response") else {
        panic!("an answer");
    };
    assert_eq!(answers["Which database?"], "Postgres");
    let Input::UserQuestionResponse {
        question_request_id,
        request_id,
        ..
    } = input("user_question_response: cancelled, by requestId")
    else {
        panic!("an answer");
    };
    assert_eq!(
        (question_request_id, request_id.as_deref()),
        (None, Some("pincer-req-3"))
    );
    assert_eq!(
        input("plan_approval_response: refused with a reason"),
        Input::PlanApprovalResponse {
            plan_approval_request_id: Some("pincer-req-4".into()),
            request_id: None,
            plan_approved: Some(false),
            plan_approval_reason: Some("Split it into two steps".into()),
        }
    );
    assert_eq!(
        input("set_permission_mode"),
        Input::SetPermissionMode {
            permission_mode: "acceptEdits".into()
        }
    );
}

/// Lines no backend should send are answered as before the types: a field of another
/// type is absent, and a line of another type (or of none) is named in a
/// `command_error`.
#[test]
fn odd_lines_read_as_the_runner_always_took_them() {
    let read = |line: &str| Line::read(line).expect("JSON");
    assert!(Line::read("not json").is_err());
    assert_eq!(read("[1]"), Line::Unknown(String::new()));
    assert_eq!(read(r#"{"type":5}"#), Line::Unknown(String::new()));
    assert_eq!(read(r#"{"type":"foo"}"#), Line::Unknown("foo".into()));
    assert_eq!(
        read(r#"{"type":"message","content":5,"attachments":{}}"#),
        Line::Input(Input::Message {
            content: String::new(),
            attachments: Vec::new()
        })
    );
    assert_eq!(
        read(r#"{"type":"permission_response","requestId":5,"allow":"yes"}"#),
        Line::Input(Input::PermissionResponse {
            request_id: String::new(),
            allow: None,
            message: None
        })
    );
    assert_eq!(
        read(r#"{"type":"user_question_response","answers":5}"#),
        Line::Input(Input::UserQuestionResponse {
            question_request_id: None,
            request_id: None,
            answers: Map::new()
        })
    );
    assert_eq!(
        read(r#"{"type":"set_model","model":5}"#),
        Line::Input(Input::SetModel { model: None })
    );
    assert_eq!(
        read(r#"{"type":"rewind_files","checkpointUuid":7}"#),
        Line::Input(Input::RewindFiles {
            checkpoint_uuid: json!(7)
        }),
        "the id is echoed as given"
    );
}

#[test]
fn every_event_pincer_wrote_reads_back_to_the_same_text() {
    let lines = fixture(PINCER_OUTPUT);
    assert!(lines.len() >= 40, "{} lines", lines.len());
    for (name, line) in &lines {
        assert_same_line::<Event>(name, line);
    }
}
