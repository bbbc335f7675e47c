//! web_fetch through `Tool::call`: what is refused (and that it is refused before any
//! connection), redirects re-checked per hop, and what a fetched page looks like.
//! Every connection goes to the fake on 127.0.0.1; inner addresses outside loopback
//! are only ever named, never dialled.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::Url;
use serde_json::json;

use super::fake::{Fake, Reply};
use super::ssrf;
use super::{FetchPolicy, WebFetch};
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

/// A policy that reaches only `fake`'s port on loopback.
fn only(fake: &Fake) -> FetchPolicy {
    FetchPolicy {
        allow_loopback_ports: vec![fake.port()],
        ..FetchPolicy::default()
    }
}

async fn fetch(policy: FetchPolicy, url: &str) -> Result<String, String> {
    WebFetch::new(policy)
        .call(json!({ "url": url }), &ctx())
        .await
        .map_err(|e| e.0)
}

/// Guard for tests that name a non-loopback literal: prove offline that the URL check
/// refuses it, so the test can never dial it even if the fetch loop were wrong.
fn refused_offline(url: &str) {
    let url = Url::parse(url).unwrap();
    assert!(
        ssrf::check_url(&url, &[]).is_err(),
        "{url} passed the check"
    );
}

const PAGE: &str = "<!doctype html><html><head><title>Fake news</title>\
    <style>p { color: red }</style><script>alert('<b>boo</b>')</script></head>\
    <body><h1>Headline</h1><p>Body text with <a href=\"/more\">a link</a>.</p>\
    <script>var hidden = 1;</script></body></html>";

#[tokio::test]
async fn loopback_literals_are_refused_by_default() {
    let fake = Fake::start(|_| Reply::ok("text/plain", "secret")).await;
    let port = fake.port();
    for (url, shown) in [
        (
            format!("http://127.0.0.1:{port}/"),
            "127.0.0.1 is a loopback address",
        ),
        (format!("http://[::1]:{port}/"), "::1 is a loopback address"),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            "::ffff:127.0.0.1 is a loopback address",
        ),
        (
            format!("http://2130706433:{port}/"),
            "127.0.0.1 is a loopback address",
        ),
    ] {
        let err = fetch(FetchPolicy::default(), &url).await.unwrap_err();
        assert!(err.contains(shown), "{url}: {err}");
        assert!(err.contains("only reaches the public internet"), "{err}");
    }
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn localhost_by_name_is_refused_through_the_system_resolver() {
    let fake = Fake::start(|_| Reply::ok("text/plain", "secret")).await;
    let err = fetch(
        FetchPolicy::default(),
        &fake.url("/").replace("127.0.0.1", "localhost"),
    )
    .await
    .unwrap_err();
    assert!(err.contains("localhost resolves to"), "{err}");
    assert!(err.contains("a loopback address"), "{err}");
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn metadata_and_private_literals_are_refused() {
    for (url, shown) in [
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is a link-local address",
        ),
        (
            "http://10.0.0.5/",
            "refused: 10.0.0.5 is a private address; web_fetch only reaches the public internet",
        ),
        ("https://[fd00::1]/", "fd00::1 is a private address"),
        ("http://100.64.1.1/", "carrier-grade NAT"),
    ] {
        refused_offline(url);
        let err = fetch(FetchPolicy::default(), url).await.unwrap_err();
        assert!(err.contains(shown), "{url}: {err}");
    }
}

#[tokio::test]
async fn a_name_resolving_to_a_private_address_is_refused_before_connecting() {
    let lookups = Arc::new(AtomicUsize::new(0));
    let counter = lookups.clone();
    let policy = FetchPolicy {
        resolver: Some(Arc::new(move |host: &str| {
            counter.fetch_add(1, Ordering::SeqCst);
            match host {
                "internal.example" => vec!["10.0.0.7".parse::<IpAddr>().unwrap()],
                _ => Vec::new(),
            }
        })),
        ..FetchPolicy::default()
    };
    // Nothing listens at 10.0.0.7: a connection attempt would hang until the 20 s
    // deadline, so an answer well inside 5 s means the resolver refused first.
    let result = tokio::time::timeout(
        Duration::from_secs(5),
        fetch(policy, "http://internal.example/admin"),
    )
    .await
    .expect("the refusal must come before any connection attempt");
    let err = result.unwrap_err();
    assert!(
        err.starts_with("refused: internal.example resolves to 10.0.0.7, a private address"),
        "{err}"
    );
    assert_eq!(lookups.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn non_http_schemes_are_refused() {
    for url in [
        "file:///etc/passwd",
        "ftp://example.org/file.txt",
        "gopher://example.org/",
    ] {
        let err = fetch(FetchPolicy::default(), url).await.unwrap_err();
        assert!(err.contains("http:// and https:// only"), "{url}: {err}");
    }
    let err = fetch(FetchPolicy::default(), "not a url")
        .await
        .unwrap_err();
    assert!(err.contains("is not a URL"), "{err}");
}

#[tokio::test]
async fn a_page_comes_back_as_text() {
    let fake = Fake::start(|_| Reply::ok("text/html; charset=utf-8", PAGE)).await;
    let out = fetch(only(&fake), &fake.url("/news")).await.unwrap();
    assert!(
        out.starts_with(&format!("URL: {}\nTitle: Fake news\n", fake.url("/news"))),
        "{out}"
    );
    assert!(
        out.contains("# Headline\n\nBody text with a link [1]."),
        "{out}"
    );
    assert!(
        out.contains(&format!("Links:\n[1] {}", fake.url("/more"))),
        "{out}"
    );
    for leaked in ["<", "color", "alert", "hidden"] {
        assert!(!out.contains(leaked), "{leaked} leaked: {out}");
    }
    let request = &fake.requests()[0];
    assert_eq!(request.method, "GET");
    assert!(request.header("user-agent").unwrap().contains("pincer"));
}

#[tokio::test]
async fn a_name_is_fetched_at_the_address_the_resolver_allowed() {
    let fake = Fake::start(|_| Reply::ok("text/plain", "plain words")).await;
    let policy = FetchPolicy {
        resolver: Some(Arc::new(|_: &str| {
            vec!["127.0.0.1".parse::<IpAddr>().unwrap()]
        })),
        ..only(&fake)
    };
    let out = fetch(policy, &format!("http://site.test:{}/a.txt", fake.port()))
        .await
        .unwrap();
    assert!(out.ends_with("\n\nplain words"), "{out}");
    let host = fake.requests()[0].header("host").map(str::to_owned);
    assert_eq!(host, Some(format!("site.test:{}", fake.port())));
}

#[tokio::test]
async fn redirects_are_followed_and_each_hop_rechecked() {
    let other = Fake::start(|_| Reply::ok("text/plain", "must not be read")).await;
    let other_url = other.url("/");
    let fake = Fake::start(move |req| match req.target.as_str() {
        "/old" => Reply::redirect("/new"),
        "/new" => Reply::ok("text/plain", "arrived"),
        "/to-other-port" => Reply::redirect(&other_url),
        "/to-metadata" => Reply::redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-internal" => Reply::redirect("http://internal.example/"),
        _ => Reply::redirect("/loop"),
    })
    .await;
    let policy = FetchPolicy {
        resolver: Some(Arc::new(|_: &str| {
            vec!["10.0.0.7".parse::<IpAddr>().unwrap()]
        })),
        ..only(&fake)
    };

    let out = fetch(policy.clone(), &fake.url("/old")).await.unwrap();
    assert!(
        out.starts_with(&format!("URL: {}", fake.url("/new"))),
        "{out}"
    );
    assert!(out.ends_with("arrived"), "{out}");

    let err = fetch(policy.clone(), &fake.url("/to-other-port"))
        .await
        .unwrap_err();
    assert!(err.contains("127.0.0.1 is a loopback address"), "{err}");
    assert!(
        err.contains(&format!(
            "reached by a redirect from {}",
            fake.url("/to-other-port")
        )),
        "{err}"
    );
    assert!(other.requests().is_empty(), "the refused hop was requested");

    refused_offline("http://169.254.169.254/latest/meta-data/");
    let err = fetch(policy.clone(), &fake.url("/to-metadata"))
        .await
        .unwrap_err();
    assert!(
        err.contains("169.254.169.254 is a link-local address"),
        "{err}"
    );

    let err = fetch(policy.clone(), &fake.url("/to-internal"))
        .await
        .unwrap_err();
    assert!(
        err.contains("internal.example resolves to 10.0.0.7, a private address"),
        "{err}"
    );
    assert!(err.contains("reached by a redirect"), "{err}");

    let err = fetch(policy, &fake.url("/loop")).await.unwrap_err();
    assert!(err.contains("gave up after 5 redirects"), "{err}");
}

#[tokio::test]
async fn big_pages_are_cut_while_reading_and_in_the_output() {
    let big = "word ".repeat(600 * 1024); // 3 MiB
    let fake = Fake::start(move |_| Reply::ok("text/plain", big.clone())).await;
    let out = fetch(only(&fake), &fake.url("/big")).await.unwrap();
    assert!(
        out.contains("[the page is larger than 2 MiB; only its start was read]"),
        "tail: {}",
        &out[out.len() - 300..]
    );
    assert!(
        out.contains(&format!("of {} bytes", 2 * 1024 * 1024)),
        "{}",
        &out[out.len() - 300..]
    );
    assert!(out.len() < 24 * 1024 + 300, "{} bytes", out.len());
}

#[tokio::test]
async fn binary_types_are_refused_and_other_text_passes_as_is() {
    let fake = Fake::start(|req| match req.target.as_str() {
        "/logo.png" => Reply::ok("image/png", vec![0x89, b'P', b'N', b'G', 0, 0]),
        "/blob" => Reply::ok("application/octet-stream", vec![0u8, 1, 2, 3]),
        "/data.json" => Reply::ok("application/json", r#"{"a": "<b>1</b>"}"#),
        _ => Reply::status(404, "gone"),
    })
    .await;
    let err = fetch(only(&fake), &fake.url("/logo.png"))
        .await
        .unwrap_err();
    assert!(err.contains("is image/png, not text"), "{err}");
    let err = fetch(only(&fake), &fake.url("/blob")).await.unwrap_err();
    assert!(err.contains("looks binary"), "{err}");
    let out = fetch(only(&fake), &fake.url("/data.json")).await.unwrap();
    assert!(out.ends_with(r#"{"a": "<b>1</b>"}"#), "{out}");
    let err = fetch(only(&fake), &fake.url("/missing")).await.unwrap_err();
    assert!(err.contains("answered HTTP 404"), "{err}");
}

#[test]
fn web_fetch_is_read_only() {
    let tool = WebFetch::new(FetchPolicy::default());
    assert!(
        crate::tools::Tool::call_effects(&tool, &json!({"url": "https://example.org"})).read_only()
    );
    assert_eq!(tool.spec().name, "web_fetch");
}
