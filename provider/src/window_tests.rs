//! Tests of asking a server for a model's context window, against the scripted local
//! server: llama.cpp's answers as recorded from a real `llama-server` (`fixtures/`,
//! run with `-c 2048` on a model trained for 8,192), vLLM's, OpenRouter's and Ollama's
//! as they document them.

use secrecy::SecretString;
use serde_json::{Value, json};

use super::*;
use crate::fake_server::{FakeServer, Reply};

const LLAMACPP_MODELS: &str = include_str!("fixtures/llamacpp_models.json");
const LLAMACPP_PROPS: &str = include_str!("fixtures/llamacpp_props.json");

fn not_found() -> Reply {
    Reply::json(404, r#"{"error":"not found"}"#)
}

/// Ask the scripted server about `model`; return the answer and the paths asked.
async fn ask(replies: Vec<Reply>, model: &str) -> (Option<ServerWindow>, Vec<String>) {
    let server = FakeServer::start(replies).await;
    let http = crate::http_client().unwrap();
    let base = format!("{}/v1", server.base);
    let window = window_from_server(&http, &base, None, model).await;
    let paths = server.requests().into_iter().map(|r| r.path).collect();
    (window, paths)
}

#[tokio::test]
async fn llama_cpp_says_the_window_it_runs_with_not_the_trained_one() {
    let (window, paths) = ask(vec![Reply::json(200, LLAMACPP_MODELS)], "smollm2").await;
    let window = window.unwrap();
    assert_eq!((window.tokens, window.trained), (2048, false));
    assert_eq!(window.source, "/v1/models meta.n_ctx");
    assert_eq!(paths, ["/v1/models"]);
}

#[tokio::test]
async fn an_older_llama_cpp_is_asked_at_props() {
    // Older servers list only the trained length in /v1/models.
    let mut models: Value = serde_json::from_str(LLAMACPP_MODELS).unwrap();
    models["data"][0]["meta"]
        .as_object_mut()
        .unwrap()
        .remove("n_ctx");
    let (window, paths) = ask(
        vec![
            Reply::json(200, &models.to_string()),
            Reply::json(200, LLAMACPP_PROPS),
        ],
        "smollm2",
    )
    .await;
    let window = window.unwrap();
    assert_eq!(
        (window.tokens, window.source),
        (2048, "llama.cpp /props n_ctx")
    );
    assert_eq!(paths, ["/v1/models", "/props"]);
}

#[tokio::test]
async fn vllm_and_openrouter_say_it_in_their_model_list() {
    let vllm = json!({"object": "list", "data": [{"id": "Qwen/Qwen2.5-7B-Instruct",
        "object": "model", "owned_by": "vllm", "max_model_len": 32768}]});
    let (window, _) = ask(
        vec![Reply::json(200, &vllm.to_string())],
        "Qwen/Qwen2.5-7B-Instruct",
    )
    .await;
    assert_eq!(window.unwrap().tokens, 32768);

    // Several models: the one asked about, by id.
    let openrouter = json!({"data": [
        {"id": "openai/gpt-4.1-mini", "context_length": 1047576},
        {"id": "qwen/qwen-2.5-coder-32b-instruct", "context_length": 32768},
    ]});
    let (window, _) = ask(
        vec![Reply::json(200, &openrouter.to_string())],
        "qwen/qwen-2.5-coder-32b-instruct",
    )
    .await;
    let window = window.unwrap();
    assert_eq!(
        (window.tokens, window.source),
        (32768, "/v1/models context_length")
    );
}

fn ollama_models() -> Reply {
    let list = json!({"object": "list", "data": [
        {"id": "qwen2.5-coder:1.5b", "object": "model", "created": 1, "owned_by": "library"},
        {"id": "llama3.2:3b", "object": "model", "created": 1, "owned_by": "library"},
    ]});
    Reply::json(200, &list.to_string())
}

fn ollama_show(parameters: &str) -> Reply {
    let show = json!({
        "parameters": parameters,
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
    });
    Reply::json(200, &show.to_string())
}

#[tokio::test]
async fn ollama_says_it_for_a_loaded_model_or_in_its_parameters() {
    // A running model's window, from /api/ps (newer Ollama).
    let ps = json!({"models": [{"name": "qwen2.5-coder:1.5b", "model": "qwen2.5-coder:1.5b",
        "context_length": 4096}]});
    let (window, paths) = ask(
        vec![
            ollama_models(),
            not_found(),
            Reply::json(200, &ps.to_string()),
        ],
        "qwen2.5-coder:1.5b",
    )
    .await;
    assert_eq!(window.unwrap().tokens, 4096);
    assert_eq!(paths, ["/v1/models", "/props", "/api/ps"]);

    // Not loaded: num_ctx from the model's parameters.
    let (window, paths) = ask(
        vec![
            ollama_models(),
            not_found(),
            Reply::json(200, r#"{"models":[]}"#),
            ollama_show("stop                           \"<|im_end|>\"\nnum_ctx                        8192"),
        ],
        "qwen2.5-coder:1.5b",
    )
    .await;
    let window = window.unwrap();
    assert_eq!(
        (window.tokens, window.source),
        (8192, "Ollama /api/show num_ctx")
    );
    assert_eq!(paths, ["/v1/models", "/props", "/api/ps", "/api/show"]);
}

#[tokio::test]
async fn failing_all_the_trained_length_is_an_upper_bound() {
    let (window, _) = ask(
        vec![
            ollama_models(),
            not_found(),
            not_found(),
            ollama_show("stop \"<|im_end|>\""),
        ],
        "qwen2.5-coder:1.5b",
    )
    .await;
    let window = window.unwrap();
    assert_eq!((window.tokens, window.trained), (32768, true));
}

#[tokio::test]
async fn a_server_that_says_nothing_gives_none_and_the_key_goes_along() {
    let server = FakeServer::start(vec![not_found(), not_found(), not_found(), not_found()]).await;
    let http = crate::http_client().unwrap();
    let key = SecretString::from("sk-local-1234567890".to_string());
    let base = format!("{}/v1/", server.base);
    assert_eq!(
        window_from_server(&http, &base, Some(&key), "m").await,
        None
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 4);
    assert!(
        sent.iter()
            .all(|r| r.header("authorization") == Some("Bearer sk-local-1234567890"))
    );
    assert_eq!(sent[3].body, json!({"model": "m"}));
}

#[tokio::test]
async fn a_figure_of_another_shape_is_one_the_server_did_not_say() {
    let odd = json!({"data": [{"id": "m", "aliases": null, "context_length": "32k",
        "meta": "none", "max_model_len": 16384}]});
    let (window, _) = ask(vec![Reply::json(200, &odd.to_string())], "m").await;
    assert_eq!(
        window.map(|w| (w.tokens, w.source)),
        Some((16384, "/v1/models max_model_len"))
    );
}
