//! Login, CSRF, the security headers, the overview, `/healthz` and the chat stream.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use pincer_fakes::Step;

use tower::ServiceExt;

use super::harness::{Panel, TOKEN, get};

#[tokio::test]
async fn every_page_needs_the_login_cookie_and_every_action_the_csrf_token() {
    let panel = Panel::start("").await;
    for path in [
        "/",
        "/conversations",
        "/access",
        "/cron",
        "/memory",
        "/usage",
        "/chat",
    ] {
        let page = panel.request(get(path)).await;
        assert_eq!(
            page.status,
            StatusCode::UNAUTHORIZED,
            "{path} without a cookie"
        );
        assert!(page.text.contains("pincer web url"), "{}", page.text);
        let page = panel.get(path).await;
        assert_eq!(
            page.status,
            StatusCode::OK,
            "{path} logged in: {}",
            page.text
        );
        let csp = page.headers["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(page.headers["x-frame-options"], "DENY");
    }
    let wrong = panel.request(get("/login?token=not-it")).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(!wrong.headers.contains_key(header::SET_COOKIE));
    // A POST without the token is refused before it does anything.
    let refused = panel
        .post_raw(
            "/access/approve",
            &[("channel", "telegram"), ("code", "ABCD2345")],
            true,
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
    let wrong = panel.post_raw("/logout", &[("csrf", "0000")], true).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    // Without the cookie, even with a token from somewhere: 401.
    let stranger = panel
        .post_raw("/logout", &[("csrf", &panel.csrf)], false)
        .await;
    assert_eq!(stranger.status, StatusCode::UNAUTHORIZED);
    // A program may use the token as a bearer token instead.
    let request = Request::get("/usage")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(panel.request(request).await.status, StatusCode::OK);
    // Logging out ends the session.
    assert_eq!(panel.post("/logout", &[]).await.status, StatusCode::OK);
    assert_eq!(panel.get("/").await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn healthz_is_open_and_ok_with_every_channel_up() {
    let panel = Panel::start("").await;
    let page = panel.request(get("/healthz")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.text, r#"{"status":"ok"}"#);
}

#[tokio::test]
async fn a_loopback_panel_answers_only_to_its_own_host_name() {
    let panel = Panel::start("[web]\nlisten = \"127.0.0.1:8790\"\n").await;
    let asked = |host: &str| {
        Request::get("/healthz")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap()
    };
    for host in ["127.0.0.1:8790", "localhost:8790", "LOCALHOST:8790"] {
        assert_eq!(
            panel.request(asked(host)).await.status,
            StatusCode::OK,
            "{host}"
        );
    }
    // A page whose name was pointed at 127.0.0.1 (DNS rebinding) is refused.
    let rebound = panel.request(asked("evil.example:8790")).await;
    assert_eq!(
        rebound.status,
        StatusCode::MISDIRECTED_REQUEST,
        "{}",
        rebound.text
    );
    // So is a request that names no host at all (HTTP/1.0).
    let response = panel.app().oneshot(get("/healthz")).await.unwrap();
    assert_eq!(response.status(), StatusCode::MISDIRECTED_REQUEST);
    // The address it listens on is its own name too (what `pincer web url` prints).
    let other = Panel::start("[web]\nlisten = \"127.0.0.2:8790\"\n").await;
    let own = Request::get("/healthz")
        .header(header::HOST, "127.0.0.2:8790")
        .body(Body::empty())
        .unwrap();
    assert_eq!(other.request(own).await.status, StatusCode::OK);
}

#[test]
fn a_short_or_empty_token_is_refused_wherever_the_panel_listens() {
    use secrecy::SecretString;
    for listen in ["127.0.0.1:8790", "0.0.0.0:8790"] {
        for short in ["", "   ", "0123456789abcdef"] {
            let token = SecretString::from(short);
            let refused = pincer::web::check_listen(listen, Some(&token))
                .unwrap_err()
                .to_string();
            assert!(
                refused.contains("pincer web token") && refused.contains("at least 32"),
                "{refused}"
            );
        }
        let good = SecretString::from("x".repeat(64));
        assert!(pincer::web::check_listen(listen, Some(&good)).is_ok());
    }
    assert!(pincer::web::check_listen("127.0.0.1:8790", None).is_ok());
    assert!(pincer::web::check_listen("0.0.0.0:8790", None).is_err());
}

#[tokio::test]
async fn the_overview_shows_version_spend_and_budget() {
    let panel = Panel::start("[agent]\nmax_day_cost_usd = 3.5\n").await;
    let page = panel.get("/").await;
    assert!(
        page.text.contains(env!("CARGO_PKG_VERSION")),
        "{}",
        page.text
    );
    assert!(page.text.contains("of $3.50 a day"), "{}", page.text);
    assert!(
        page.text.contains("No chat channel is enabled"),
        "{}",
        page.text
    );
}

/// The SSE events of a response body, as JSON values (the `[DONE]` marker as a string).
fn events(body: &str) -> Vec<serde_json::Value> {
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap_or_else(|_| serde_json::Value::String(d.into())))
        .collect()
}

#[tokio::test]
async fn the_chat_streams_a_turn_as_ai_sdk_ui_message_chunks() {
    let panel = Panel::start("").await;
    panel.fake.push(Step::text("Hello from the web."));
    let body = serde_json::json!({
        "id": "web",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi there"}]}],
        "trigger": "submit-message",
    });
    let request = Request::post("/api/chat")
        .header(header::COOKIE, &panel.cookie)
        .header("x-csrf-token", &panel.csrf)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let page = panel.request(request).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert_eq!(page.headers["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(page.headers[header::CONTENT_TYPE], "text/event-stream");
    let events = events(&page.text);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e.get("type").and_then(|t| t.as_str()).unwrap_or("[DONE]"))
        .collect();
    assert_eq!(kinds.first(), Some(&"start"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"[DONE]"), "{kinds:?}");
    assert!(
        kinds.contains(&"finish") && kinds.contains(&"text-delta"),
        "{kinds:?}"
    );
    let said: String = events
        .iter()
        .filter(|e| e["type"] == "text-delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(said, "Hello from the web.");
    // Only the schema's keys go on the wire (v6's useChat rejects unknown ones).
    for e in &events {
        if e["type"] == "text-end" {
            assert_eq!(e.as_object().unwrap().len(), 2, "{e}");
        }
    }
    // The model saw the owner's words, in the session web:dm:owner.
    let seen = panel.fake.requests();
    assert!(seen.last().unwrap().body.to_string().contains("hi there"));
    let sessions = panel.state.agent.store().sessions().await.unwrap();
    assert!(
        sessions.iter().any(|s| s.key == "web:dm:owner"),
        "{sessions:?}"
    );
    // Without the CSRF header the same request is refused.
    let request = Request::post("/api/chat")
        .header(header::COOKIE, &panel.cookie)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    assert_eq!(panel.request(request).await.status, StatusCode::FORBIDDEN);
}

/// Run one web chat turn that says `text` and wait for its end.
async fn chat(panel: &Panel, text: &str) -> String {
    panel.chat(text).await.text
}

#[tokio::test]
async fn conversations_are_listed_by_channel_searched_and_shown_with_tools_folded() {
    let panel = Panel::start("").await;
    panel.fake.push_all([
        Step::tool_call("list_dir", serde_json::json!({"path": "."})),
        Step::text("The workspace holds marmalade notes."),
    ]);
    chat(&panel, "what is in my workspace?").await;
    let store = &panel.state.agent.store();
    let other = store
        .current_session(&"telegram:dm:42".parse().unwrap())
        .await
        .unwrap();
    store
        .insert_user(other, "telegram", "42:1", "telegram:42", "buy oat milk")
        .await
        .unwrap();
    let list = panel.get("/conversations").await;
    assert!(
        list.text.contains("web:dm:owner") && list.text.contains("telegram:dm:42"),
        "{}",
        list.text
    );
    assert!(list.text.contains("<h2>telegram"), "{}", list.text);
    // The search reads the words (by their stems, through the full-text index), not
    // only the keys, and lists the messages found, linked into their transcripts.
    let found = panel.get("/conversations?q=oats+milk").await;
    assert!(
        found.text.contains("telegram:dm:42") && !found.text.contains("web:dm:owner"),
        "{}",
        found.text
    );
    assert!(
        found
            .text
            .contains("buy <mark>oat</mark> <mark>milk</mark>"),
        "{}",
        found.text
    );
    assert!(
        found.text.contains(&format!("/conversations/{other}#m")),
        "{}",
        found.text
    );
    let only = panel.get("/conversations?channel=web").await;
    assert!(only.text.contains("web:dm:owner") && !only.text.contains("telegram:dm:42"));
    let none = panel.get("/conversations?q=%25").await;
    assert!(
        none.text.contains("Nothing matches"),
        "a % is literal: {}",
        none.text
    );
    // The transcript: the owner's words, the tool call folded with its result, the answer.
    let id = store.find_session("web:dm:owner").await.unwrap();
    let page = panel.get(&format!("/conversations/{id}")).await;
    assert!(
        page.text.contains("what is in my workspace?"),
        "{}",
        page.text
    );
    assert!(
        page.text
            .contains("<details class=\"tool\"><summary>tool: list_dir"),
        "{}",
        page.text
    );
    assert!(page.text.contains("marmalade notes"), "{}", page.text);
    assert_eq!(
        panel.get("/conversations/9999").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn pictures_are_shown_from_the_inbox_and_nothing_else_is_served() {
    let panel = Panel::start("").await;
    let workspace = panel.state.agent.workspace().to_path_buf();
    std::fs::create_dir_all(workspace.join("inbox/telegram")).unwrap();
    std::fs::write(workspace.join("inbox/telegram/cat.png"), b"\x89PNG fake").unwrap();
    std::fs::write(workspace.join("secret.png"), b"not for the panel").unwrap();
    std::os::unix::fs::symlink(
        workspace.join("secret.png"),
        workspace.join("inbox/telegram/link.png"),
    )
    .unwrap();
    let store = &panel.state.agent.store();
    let session = store
        .current_session(&"telegram:dm:42".parse().unwrap())
        .await
        .unwrap();
    let image = pincer::provider::Part::Image {
        path: "inbox/telegram/cat.png".into(),
        data: None,
    };
    store
        .insert_user_with(
            session,
            "telegram",
            "42:2",
            "telegram:42",
            "look",
            vec![image],
        )
        .await
        .unwrap();
    let page = panel.get(&format!("/conversations/{session}")).await;
    assert!(
        page.text
            .contains("<img src=\"/media/inbox/telegram/cat.png\""),
        "{}",
        page.text
    );
    let picture = panel.get("/media/inbox/telegram/cat.png").await;
    assert_eq!(picture.status, StatusCode::OK);
    assert_eq!(picture.headers[header::CONTENT_TYPE], "image/png");
    for path in [
        "/media/inbox/telegram/link.png",
        "/media/inbox/../secret.png",
        "/media/secret.png",
        "/media/inbox/telegram/cat.txt",
    ] {
        let page = panel.get(path).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{path}: {}", page.text);
    }
    assert_eq!(
        panel
            .request(get("/media/inbox/telegram/cat.png"))
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn usage_draws_tokens_and_cost_per_day_and_the_light_heavy_split() {
    let panel = Panel::start("").await;
    panel.fake.push(Step::text("counted"));
    chat(&panel, "count me").await;
    let page = panel.get("/usage").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.text
            .contains("<svg class=\"chart\" id=\"tokens-per-day\""),
        "{}",
        page.text
    );
    assert_eq!(
        page.text.matches("<rect class=\"bar\"").count(),
        60,
        "30 days, two charts"
    );
    // Today's bar is not empty: the fake model reports tokens for every call.
    let chart = page.text.split("id=\"tokens-per-day\"").nth(1).unwrap();
    let today = chart
        .split("</svg>")
        .next()
        .unwrap()
        .rsplit("<rect")
        .next()
        .unwrap();
    assert!(!today.contains("height=\"0.0\""), "{today}");
    assert!(page.text.contains("1 light · 0 heavy"), "{}", page.text);
    assert!(
        page.text.contains("<td>fake/m</td><td>light</td>"),
        "{}",
        page.text
    );
}
