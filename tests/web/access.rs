//! The Access page: pending pairing codes with Approve and Deny, approved senders with
//! Revoke, owners, tiers and today's spend — each action through the real store.

use axum::http::StatusCode;
use pincer::store::{PendingCode, Spender, now_ms};
use pincer_config::Tier;

use super::harness::Panel;

const OWNERS: &str = "[agent]\nowners = [\"telegram:1\"]\n";

/// A code waiting on telegram for sender 42, expiring in `minutes`.
fn code(code: &str, raw: &str, name: &str, minutes: i64) -> PendingCode {
    PendingCode {
        channel: "telegram".into(),
        code: code.into(),
        sender_raw: raw.into(),
        sender: format!("telegram:{raw}"),
        display_name: name.into(),
        expires_at: now_ms() + minutes * 60_000,
        last_sent_at: now_ms(),
        announced: true,
    }
}

#[tokio::test]
async fn approve_a_pairing_code_from_the_page_and_the_sender_is_admitted() {
    let panel = Panel::start(OWNERS).await;
    let store = &panel.state.agent.store();
    store
        .insert_code(code("ABCD2345", "42", "Ana [admin] <b>", 60))
        .await
        .unwrap();
    assert!(!store.is_approved("telegram", "42").await.unwrap());

    let page = panel.get("/access").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("ABCD2345"), "{}", page.text);
    // The name is shown sanitized (no brackets, no markup), and escaped.
    assert!(page.text.contains("Ana admin b"), "{}", page.text);
    assert!(!page.text.contains("<b>"), "{}", page.text);
    assert!(page.text.contains("action=\"/access/approve\""));
    assert!(page.text.contains(&format!("value=\"{}\"", panel.csrf)));

    // Any case, like the CLI.
    let page = panel
        .post(
            "/access/approve",
            &[("channel", "telegram"), ("code", "abcd2345")],
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text
            .contains("Approved Ana admin b (telegram:42) on telegram as a member"),
        "{}",
        page.text
    );
    assert!(store.is_approved("telegram", "42").await.unwrap());
    assert!(store.pending_codes(None).await.unwrap().is_empty());
    assert!(!page.text.contains("ABCD2345"), "{}", page.text);
    // Now listed among the approved senders, as a member, approved from the web.
    assert!(page.text.contains("Nobody is waiting"), "{}", page.text);
    assert!(page.text.contains("telegram:42"), "{}", page.text);
    assert!(page.text.contains("<td>member</td>"), "{}", page.text);
    let approved = store.approved(None).await.unwrap();
    assert_eq!(approved.len(), 1);
    assert_eq!(approved[0].approved_by, "web");
}

#[tokio::test]
async fn a_wrong_or_expired_code_admits_nobody_and_says_so_like_the_cli() {
    let panel = Panel::start(OWNERS).await;
    let store = &panel.state.agent.store();
    store
        .insert_code(code("EXPD2345", "43", "Late", -1))
        .await
        .unwrap();
    for wrong in ["ZZZZ2345", "EXPD2345"] {
        let page = panel
            .post(
                "/access/approve",
                &[("channel", "telegram"), ("code", wrong)],
            )
            .await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{}", page.text);
        assert!(
            page.text.contains(&format!(
                "no pending code {wrong} on telegram (wrong, or expired after 60 minutes)"
            )),
            "{}",
            page.text
        );
        assert!(page.text.contains("flash err"), "{}", page.text);
    }
    assert!(!store.is_approved("telegram", "43").await.unwrap());
    assert!(store.approved(None).await.unwrap().is_empty());
    // A form without a code is refused as bad input.
    let page = panel
        .post("/access/approve", &[("channel", "telegram")])
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.text);
    assert!(page.text.contains("no code"), "{}", page.text);
}

#[tokio::test]
async fn deny_drops_the_code_and_admits_nobody() {
    let panel = Panel::start(OWNERS).await;
    let store = &panel.state.agent.store();
    store
        .insert_code(code("DENY2345", "77", "Mallory", 60))
        .await
        .unwrap();
    store
        .insert_code(code("KEEP2345", "78", "Bob", 60))
        .await
        .unwrap();
    let page = panel
        .post(
            "/access/deny",
            &[("channel", "telegram"), ("code", "DENY2345")],
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text
            .contains("Denied Mallory (telegram:77) on telegram: code DENY2345 no longer works"),
        "{}",
        page.text
    );
    let pending = store.pending_codes(None).await.unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].code, "KEEP2345", "only the denied code went");
    assert!(!store.is_approved("telegram", "77").await.unwrap());
    assert!(page.text.contains("KEEP2345") && !page.text.contains(">DENY2345<"));
    // The denied code cannot be approved afterwards.
    let page = panel
        .post(
            "/access/approve",
            &[("channel", "telegram"), ("code", "DENY2345")],
        )
        .await;
    assert_eq!(page.status, StatusCode::NOT_FOUND, "{}", page.text);
    assert!(!store.is_approved("telegram", "77").await.unwrap());
    // Denying it again finds nothing.
    let page = panel
        .post(
            "/access/deny",
            &[("channel", "telegram"), ("code", "DENY2345")],
        )
        .await;
    assert_eq!(page.status, StatusCode::NOT_FOUND, "{}", page.text);
    assert!(
        page.text.contains("no pending code DENY2345"),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn revoke_takes_an_approval_back() {
    let panel = Panel::start(OWNERS).await;
    let store = &panel.state.agent.store();
    store
        .insert_code(code("RVKE2345", "42", "Ana", 60))
        .await
        .unwrap();
    store
        .approve_code(Some("telegram"), "RVKE2345", "cli")
        .await
        .unwrap()
        .unwrap();
    let page = panel.get("/access").await;
    assert!(
        page.text.contains("action=\"/access/revoke\""),
        "{}",
        page.text
    );
    let page = panel
        .post(
            "/access/revoke",
            &[("channel", "telegram"), ("sender", "42")],
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text.contains("Revoked 42 on telegram."),
        "{}",
        page.text
    );
    assert!(!store.is_approved("telegram", "42").await.unwrap());
    assert!(page.text.contains("Nobody approved yet"), "{}", page.text);
    let page = panel
        .post(
            "/access/revoke",
            &[("channel", "telegram"), ("sender", "42")],
        )
        .await;
    assert_eq!(page.status, StatusCode::NOT_FOUND, "{}", page.text);
    assert!(
        page.text.contains("42 is not approved on telegram"),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn the_page_shows_owners_tiers_and_what_each_sender_spent_today() {
    let panel = Panel::start(OWNERS).await;
    let store = &panel.state.agent.store();
    store
        .insert_code(code("SPND2345", "42", "Ana", 60))
        .await
        .unwrap();
    store
        .approve_code(Some("telegram"), "SPND2345", "cli")
        .await
        .unwrap()
        .unwrap();
    let session = store
        .new_session(&"telegram:dm:42".parse().unwrap())
        .await
        .unwrap();
    let member = Spender {
        sender: "telegram:42".into(),
        tier: Tier::Member,
    };
    store
        .record_usage(session, "fake/m", Default::default(), 0.25, &member)
        .await
        .unwrap();
    let owner = Spender {
        sender: "telegram:1".into(),
        tier: Tier::Owner,
    };
    store
        .record_usage(session, "fake/m", Default::default(), 1.5, &owner)
        .await
        .unwrap();
    let page = panel.get("/access").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("$0.25 of $0.50"), "{}", page.text);
    assert!(
        page.text.contains("<td>telegram:1</td><td>owner</td>"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("The owners' turns today cost $1.50"),
        "{}",
        page.text
    );
}
