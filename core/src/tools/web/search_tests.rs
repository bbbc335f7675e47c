//! web_search through `Tool::call` against a fake of each backend on 127.0.0.1: the
//! request each sends (path, query, headers, key), how answers become the list, and
//! the errors a user meets when it is not set up.

use std::path::PathBuf;

use secrecy::SecretString;
use serde_json::{Value, json};

use super::fake::{Fake, Reply};
use super::{SearchSettings, WebSearch};
use crate::tools::{Tool, ToolContext};

fn ctx() -> ToolContext {
    ToolContext {
        workspace: PathBuf::new(),
        origin: None,
        caller: crate::tools::Caller::owner(),
        taint: Default::default(),
        pictures: Default::default(),
        session: None,
        mode: None,
    }
}

fn settings(backend: &str, key: Option<&str>, base: &str) -> SearchSettings {
    SearchSettings {
        backend: Some(backend.into()),
        url: None,
        api_key: key.map(|k| SecretString::from(k.to_owned())),
        base_url_override: Some(base.into()),
    }
}

async fn search(settings: SearchSettings, args: Value) -> Result<String, String> {
    WebSearch::new(settings)
        .call(args, &ctx())
        .await
        .map_err(|e| e.0)
}

const BRAVE: &str = r#"{"type": "search", "web": {"results": [
    {"title": "The <strong>Rust</strong> Book", "url": "https://doc.rust-lang.org/book/",
     "description": "Learn <strong>Rust</strong> &amp; more.", "age": "2 days"},
    {"title": "Rust (language)", "url": "https://en.wikipedia.org/wiki/Rust", "description": ""}
]}}"#;

#[tokio::test]
async fn brave_sends_the_key_header_and_lists_results() {
    let fake = Fake::start(|_| Reply::ok("application/json", BRAVE)).await;
    let out = search(
        settings("brave", Some("brave-key"), &fake.url("")),
        json!({"query": "rust lang", "max_results": 3}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        "1. The Rust Book — https://doc.rust-lang.org/book/\n   Learn Rust & more.\n\
         2. Rust (language) — https://en.wikipedia.org/wiki/Rust"
    );
    let request = &fake.requests()[0];
    assert_eq!(request.method, "GET");
    assert_eq!(request.target, "/res/v1/web/search?q=rust+lang&count=3");
    assert_eq!(request.header("x-subscription-token"), Some("brave-key"));
    assert_eq!(request.header("accept"), Some("application/json"));
}

#[tokio::test]
async fn brave_without_results_and_with_a_refused_key() {
    let fake = Fake::start(|req| match req.header("x-subscription-token") {
        Some("good") => Reply::ok("application/json", r#"{"type": "search"}"#),
        _ => Reply::status(401, r#"{"error": "invalid token"}"#),
    })
    .await;
    let out = search(
        settings("brave", Some("good"), &fake.url("")),
        json!({"query": "zzz"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "no results for \"zzz\"");
    let err = search(
        settings("brave", Some("bad"), &fake.url("")),
        json!({"query": "zzz"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(
        err.contains("tools.web_search.api_key in .security.yml"),
        "{err}"
    );
}

#[tokio::test]
async fn tavily_posts_the_key_and_query() {
    let fake = Fake::start(|_| {
        Reply::ok(
            "application/json",
            r#"{"query": "q", "results": [
                {"title": "A", "url": "https://a.example/", "content": "alpha\n  text", "score": 0.9},
                {"title": "B", "url": "https://b.example/", "content": "beta"}]}"#,
        )
    })
    .await;
    let out = search(
        settings("tavily", Some("tvly-key"), &fake.url("/")),
        json!({"query": "q"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        "1. A — https://a.example/\n   alpha text\n2. B — https://b.example/\n   beta"
    );
    let request = &fake.requests()[0];
    assert_eq!(
        (request.method.as_str(), request.target.as_str()),
        ("POST", "/search")
    );
    assert_eq!(request.header("authorization"), Some("Bearer tvly-key"));
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body,
        json!({"api_key": "tvly-key", "query": "q", "max_results": 5})
    );
}

#[tokio::test]
async fn searxng_asks_for_json_and_results_are_capped() {
    let many: Vec<Value> = (1..=15)
        .map(|i| json!({"title": format!("r{i}"), "url": format!("https://r{i}.example/"), "content": ""}))
        .collect();
    let answer = json!({"query": "cats", "results": many}).to_string();
    let fake = Fake::start(move |_| Reply::ok("application/json", answer.clone())).await;
    let mut config = settings("searxng", None, "");
    config.base_url_override = None;
    config.url = Some(fake.url("/searx/"));
    let out = search(config, json!({"query": "cats & dogs", "max_results": 50}))
        .await
        .unwrap();
    assert_eq!(out.lines().count(), 10, "{out}");
    assert!(out.ends_with("10. r10 — https://r10.example/"), "{out}");
    let request = &fake.requests()[0];
    assert_eq!(request.target, "/searx/search?q=cats+%26+dogs&format=json");
    assert_eq!(request.header("x-subscription-token"), None);
}

#[tokio::test]
async fn searxng_without_json_enabled_names_the_fix() {
    let fake = Fake::start(|_| Reply::status(403, "Forbidden")).await;
    let mut config = settings("searxng", None, "");
    config.base_url_override = None;
    config.url = Some(fake.url(""));
    let err = search(config, json!({"query": "x"})).await.unwrap_err();
    assert!(err.contains("add `json` to search.formats"), "{err}");
}

#[tokio::test]
async fn unconfigured_and_half_configured_searches_say_what_to_set() {
    let err = search(SearchSettings::default(), json!({"query": "x"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "web search is not configured: set [tools.web_search] backend = \"brave\" (key in \
         .security.yml under tools.web_search.api_key), \"tavily\", or \"searxng\" with url = \
         \"https://searx.example.org\""
    );
    for backend in ["brave", "tavily"] {
        let err = search(
            settings(backend, None, "http://127.0.0.1:9"),
            json!({"query": "x"}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err,
            format!(
                "web search backend \"{backend}\" needs an API key: set \
                 tools.web_search.api_key in .security.yml"
            )
        );
    }
    let mut config = settings("searxng", None, "");
    config.base_url_override = None;
    let err = search(config, json!({"query": "x"})).await.unwrap_err();
    assert!(err.contains("needs the instance address"), "{err}");
    let err = search(settings("bing", None, ""), json!({"query": "x"}))
        .await
        .unwrap_err();
    assert!(
        err.starts_with("unknown web search backend \"bing\""),
        "{err}"
    );
    let err = search(SearchSettings::default(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(err, "missing field `query`");
    let err = search(SearchSettings::default(), json!({"query": "  "}))
        .await
        .unwrap_err();
    assert_eq!(err, "missing string argument `query`");
}

#[test]
fn web_search_is_read_only() {
    let tool = WebSearch::new(SearchSettings::default());
    assert!(crate::tools::Tool::call_effects(&tool, &json!({"query": "x"})).read_only());
    assert_eq!(tool.spec().name, "web_search");
}
