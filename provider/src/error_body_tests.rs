//! The error bodies held to the documented formats and to what servers were recorded
//! sending: each reads into `ErrorBody` and gives itself back (`round_trip`), and
//! classifies as a user would expect.

use super::*;
use crate::error::{ErrorKind, classify_http};
use crate::round_trip::assert_round_trip;

const OPENAI: &str = include_str!("fixtures/openai_error.json");
const ANTHROPIC: &str = include_str!("fixtures/anthropic_error.json");
const LLAMACPP_OVERFLOW: &str = include_str!("fixtures/llamacpp_exceed_context.json");
const LLAMACPP_NO_JINJA: &str = include_str!("fixtures/llamacpp_no_jinja.json");

#[test]
fn openais_documented_error_reads_and_gives_itself_back() {
    let body: ErrorBody = assert_round_trip(OPENAI, &["/error/param"]);
    let error = body.detail().object().unwrap();
    assert_eq!(error.kind.as_deref(), Some("invalid_request_error"));
    assert!(matches!(&error.code, Some(Code::Name(name)) if name == "invalid_api_key"));
    assert_eq!(classify_http(401, OPENAI, None).kind, ErrorKind::Auth);
}

#[test]
fn anthropics_documented_error_reads_and_gives_itself_back() {
    let body: ErrorBody = assert_round_trip(ANTHROPIC, &["/type", "/request_id"]);
    let error = body.detail().object().unwrap();
    assert_eq!(error.kind.as_deref(), Some("not_found_error"));
    let err = classify_http(404, ANTHROPIC, None);
    assert_eq!(err.kind, ErrorKind::ModelNotFound);
    assert_eq!(err.message, "The requested resource could not be found.");
}

#[test]
fn llama_cpps_recorded_errors_read_with_their_numbers() {
    let body: ErrorBody = assert_round_trip(LLAMACPP_OVERFLOW, &[]);
    let error = body.detail().object().unwrap();
    assert!(matches!(error.code, Some(Code::Number(400))));
    assert_eq!(
        (error.n_ctx, error.n_prompt_tokens),
        (Some(2048), Some(3031))
    );
    let body: ErrorBody = assert_round_trip(LLAMACPP_NO_JINJA, &[]);
    assert!(matches!(
        body.detail().object().unwrap().code,
        Some(Code::Number(500))
    ));
}

#[test]
fn any_json_is_an_error_body_and_anything_else_is_not() {
    let read = |body: &str| serde_json::from_str::<ErrorBody>(body).ok();
    assert!(matches!(
        read(r#"{"error":"model \"x\" not found"}"#)
            .as_ref()
            .map(ErrorBody::detail),
        Some(ErrorDetail::Text(_))
    ));
    // Older vLLM: the error object is the body.
    let bare = read(r#"{"object":"error","message":"m","type":"BadRequestError","code":400}"#);
    assert!(matches!(
        bare,
        Some(ErrorBody::Bare(ErrorDetail::Object(_)))
    ));
    assert!(matches!(
        read("42").as_ref().map(ErrorBody::detail),
        Some(ErrorDetail::Other(_))
    ));
    // A message of another shape reads as none.
    let odd = read(r#"{"error":{"message":{"text":"m"},"code":-1}}"#).unwrap();
    let object = odd.detail().object().unwrap();
    assert!(object.message.is_none() && object.code.is_none());
    assert!(read("<html>Bad Gateway</html>").is_none());
}
