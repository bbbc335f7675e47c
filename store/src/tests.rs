use super::messages::{HISTORY, history};
use super::pairing::PendingCode;
use super::session::current_session;
use super::*;
use pincer_channels::SessionKey;
use pincer_provider::{Part, Usage};

/// A key the tests write, read as the store's callers hold one.
fn key(text: &str) -> SessionKey {
    text.parse().expect("a session key")
}

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("pincer.db")).unwrap();
    (dir, store)
}

#[tokio::test]
async fn user_message_is_stored_once_per_platform_id() {
    let (_dir, store) = open();
    let session = store.current_session(&key("telegram:dm:42")).await.unwrap();
    let first = store
        .insert_user(session, "telegram", "7", "telegram:42", "hi")
        .await
        .unwrap();
    let again = store
        .insert_user(session, "telegram", "7", "telegram:42", "hi")
        .await
        .unwrap();
    assert!(first.is_some());
    assert_eq!(
        again, None,
        "a redelivered message must not be stored twice"
    );
    let history = store.history(session).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].status, Status::Pending);
}

#[tokio::test]
async fn receive_stores_a_message_in_the_key_s_current_session_once() {
    let (_dir, store) = open();
    let (session, first) = store
        .receive(&key("telegram:dm:42"), "telegram", "7", "telegram:42", "hi")
        .await
        .unwrap();
    assert_eq!(
        session,
        store.current_session(&key("telegram:dm:42")).await.unwrap()
    );
    let (again_in, again) = store
        .receive(&key("telegram:dm:42"), "telegram", "7", "telegram:42", "hi")
        .await
        .unwrap();
    assert_eq!(
        (again_in, again),
        (session, None),
        "a redelivery is not stored"
    );
    let history = store.history(session).await.unwrap();
    assert_eq!(
        history.iter().map(|m| Some(m.id)).collect::<Vec<_>>(),
        [first]
    );
}

#[tokio::test]
async fn receive_all_stores_every_row_or_none() {
    let (_dir, store) = open();
    // The poisoned row fails after its message row went in.
    store
        .run(|conn| {
            Ok(conn.execute_batch(
                "CREATE TRIGGER poison BEFORE INSERT ON parts WHEN NEW.body LIKE '%poison%'
                 BEGIN SELECT RAISE(ABORT, 'poisoned'); END",
            )?)
        })
        .await
        .unwrap();
    let row = |chat: &str, id: &str| Received {
        key: SessionKey::direct("telegram", chat),
        channel: "telegram".into(),
        platform_id: id.into(),
        sender: "telegram:1".into(),
        text: format!("text of {id}"),
    };
    let all = store
        .receive_all(vec![row("a", "1"), row("b", "poison"), row("b", "2")])
        .await;
    assert!(all.is_err());
    let count: i64 = store
        .run(|conn| Ok(conn.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(count, 0, "none of the batch was kept");
    let stored = store
        .receive_all(vec![row("a", "1"), row("b", "2")])
        .await
        .unwrap();
    assert!(stored.iter().all(|(_, id)| id.is_some()));
}

#[tokio::test]
async fn transcript_reads_the_session_after_its_summary_with_open_calls_closed() {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let text = |t: &str| vec![Part::Text { text: t.into() }];
    store
        .append(session, Role::Assistant, text("summarised"))
        .await
        .unwrap();
    let call = Part::ToolCall {
        id: "a".into(),
        name: "exec".into(),
        arguments: serde_json::json!({}),
    };
    store
        .append(session, Role::Assistant, vec![call])
        .await
        .unwrap();
    let whole = store.history(session).await.unwrap();
    store
        .set_summary(session, "earlier".into(), whole[0].position)
        .await
        .unwrap();
    store.set_pin(session, Some("heavy".into())).await.unwrap();

    let (meta, stored) = store.transcript(session).await.unwrap();
    assert_eq!(meta.pin.as_deref(), Some("heavy"));
    assert_eq!(meta.summary.as_deref(), Some("earlier"));
    assert_eq!(
        stored.len(),
        2,
        "the call and the result that closes it: {stored:?}"
    );
    assert!(matches!(&stored[0].parts[0], Part::ToolCall { id, .. } if id == "a"));
    assert!(
        matches!(&stored[1].parts[0], Part::ToolResult { call_id, content, .. }
        if call_id == "a" && content == INTERRUPTED)
    );
    let (_, again) = store.transcript(session).await.unwrap();
    assert_eq!(again, stored, "closed once");
}

#[tokio::test]
async fn record_call_keeps_the_reply_when_its_usage_row_cannot_be_written() {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let usage = Usage {
        input_tokens: 10,
        ..Usage::default()
    };
    let reply = |t: &str| {
        Some((
            vec![Part::Text { text: t.into() }],
            Some(pincer_config::Tier::Guest),
        ))
    };
    let owner = spend::Spender::owner();
    let call = |reply| store.record_call(session, "p/m", usage, 0.5, &owner, reply);
    let id = call(reply("one")).await.unwrap().unwrap();
    let history = store.history(session).await.unwrap();
    assert_eq!(
        (history[0].id, history[0].tier),
        (id, Some(pincer_config::Tier::Guest))
    );
    assert_eq!(
        store.session_usage(session).await.unwrap().0.input_tokens,
        10
    );

    store
        .run(|conn| Ok(conn.execute_batch("DROP TABLE usage")?))
        .await
        .unwrap();
    call(reply("two"))
        .await
        .expect("the reply is stored all the same");
    assert_eq!(store.history(session).await.unwrap().len(), 2);
    let lone = call(None).await;
    assert!(
        lone.is_err(),
        "a call with no reply says its usage was lost"
    );
}

#[tokio::test]
async fn new_session_replaces_the_current_one_for_a_key() {
    let (_dir, store) = open();
    let first = store
        .current_session(&key("terminal:dm:local"))
        .await
        .unwrap();
    assert_eq!(
        store
            .current_session(&key("terminal:dm:local"))
            .await
            .unwrap(),
        first
    );
    let second = store.new_session(&key("terminal:dm:local")).await.unwrap();
    assert_ne!(first, second);
    assert_eq!(
        store
            .current_session(&key("terminal:dm:local"))
            .await
            .unwrap(),
        second
    );
    assert_eq!(
        store.find_session("terminal:dm:local").await.unwrap(),
        second
    );
    assert_eq!(store.find_session(&first.to_string()).await.unwrap(), first);
    assert!(store.find_session("nope").await.is_err());
}

#[tokio::test]
async fn a_hosts_conversations_are_listed_with_their_opening_words() {
    let (_dir, store) = open();
    let talked = store
        .current_session(&key("terminal:dm:acp-1"))
        .await
        .unwrap();
    store
        .insert_user(talked, "terminal", "1", "me", "water the plants")
        .await
        .unwrap();
    store
        .insert_user(talked, "terminal", "2", "me", "and the cactus")
        .await
        .unwrap();
    let empty = store
        .current_session(&key("terminal:dm:acp-2"))
        .await
        .unwrap();
    let other = store
        .current_session(&key("terminal:dm:agent-1"))
        .await
        .unwrap();
    store
        .insert_user(other, "terminal", "3", "me", "hi")
        .await
        .unwrap();

    let listed = store
        .current_sessions_under("terminal:dm:acp-")
        .await
        .unwrap();
    let ids: Vec<i64> = listed.iter().map(|s| s.id).collect();
    assert_eq!(
        ids,
        [talked],
        "only the prefix's sessions that have messages"
    );
    assert_eq!(listed[0].messages, 2);
    assert_eq!(
        store.opening_text(talked).await.unwrap().as_deref(),
        Some("water the plants")
    );
    assert_eq!(store.opening_text(empty).await.unwrap(), None);

    let next = store.new_session(&key("terminal:dm:acp-1")).await.unwrap();
    assert!(
        store
            .current_sessions_under("terminal:dm:acp-")
            .await
            .unwrap()
            .is_empty(),
        "a key's closed sessions are not listed, and its new one is empty ({next})"
    );
}

#[tokio::test]
async fn a_fork_copies_the_answered_transcript_and_leaves_the_original_alone() {
    let (_dir, store) = open();
    let from = store.current_session(&key("terminal:dm:a")).await.unwrap();
    let asked = store
        .insert_user(from, "terminal", "1", "terminal:local", "plant basil")
        .await
        .unwrap()
        .unwrap();
    store.set_status(vec![asked], Status::Done).await.unwrap();
    let text = |t: &str| vec![Part::Text { text: t.into() }];
    store
        .append(from, Role::Assistant, text("planted"))
        .await
        .unwrap();
    store.set_summary(from, "a garden".into(), 1).await.unwrap();
    // Not answered yet: it stays the original's.
    store
        .insert_user(from, "terminal", "2", "terminal:local", "water it")
        .await
        .unwrap();

    let fork = store.fork_session(from, "terminal:dm:b").await.unwrap();
    assert_eq!(
        store.current_session(&key("terminal:dm:b")).await.unwrap(),
        fork
    );
    let copied = store.history(fork).await.unwrap();
    let original = store.history(from).await.unwrap();
    assert_eq!(copied.len(), 2);
    assert_eq!(copied[0].parts, original[0].parts);
    assert_eq!(copied[1].parts, text("planted"));
    assert_eq!(
        store.session_meta(fork).await.unwrap().summary.as_deref(),
        Some("a garden")
    );

    store
        .append(fork, Role::Assistant, text("only in the fork"))
        .await
        .unwrap();
    assert_eq!(store.history(from).await.unwrap().len(), 3);
    assert!(matches!(
        store.fork_session(from, "terminal:dm:b").await,
        Err(StoreError::SessionExists(_))
    ));
    assert!(matches!(
        store.fork_session(999, "terminal:dm:c").await,
        Err(StoreError::NoSession(_))
    ));
}

#[tokio::test]
async fn repair_closes_tool_calls_left_without_results() {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let call = |id: &str| Part::ToolCall {
        id: id.into(),
        name: "exec".into(),
        arguments: serde_json::json!({}),
    };
    store
        .append(session, Role::Assistant, vec![call("a"), call("b")])
        .await
        .unwrap();
    store
        .append(
            session,
            Role::Tool,
            vec![Part::ToolResult {
                call_id: "a".into(),
                name: "exec".into(),
                content: "ok".into(),
                is_error: false,
            }],
        )
        .await
        .unwrap();
    let calls_at = store.history(session).await.unwrap()[0].position;
    assert_eq!(
        store.repair(session, Some(calls_at)).await.unwrap(),
        0,
        "a summary stands in for the calls: nothing there to close"
    );
    assert_eq!(store.repair(session, None).await.unwrap(), 1);
    assert_eq!(
        store.repair(session, None).await.unwrap(),
        0,
        "repair is idempotent"
    );
    let history = store.history(session).await.unwrap();
    let last = history.last().unwrap();
    assert!(
        matches!(&last.parts[0], Part::ToolResult { call_id, content, is_error: true, .. }
        if call_id == "b" && content == INTERRUPTED)
    );
}

#[tokio::test]
async fn unanswered_messages_are_found_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pincer.db");
    {
        let store = Store::open(&path).unwrap();
        let session = store.current_session(&key("telegram:dm:1")).await.unwrap();
        let id = store
            .insert_user(session, "telegram", "1", "telegram:1", "q")
            .await
            .unwrap()
            .unwrap();
        store.set_status(vec![id], Status::Active).await.unwrap();
        let done = store
            .insert_user(session, "telegram", "2", "telegram:1", "r")
            .await
            .unwrap()
            .unwrap();
        store.set_status(vec![done], Status::Done).await.unwrap();
    }
    let store = Store::open(&path).unwrap();
    let open = store.unanswered().await.unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].status, Status::Active);
    assert_eq!(open[0].key, "telegram:dm:1");
}

#[tokio::test]
async fn usage_adds_up() {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 2,
        cache_write_tokens: 1,
    };
    store
        .record_usage(session, "m", usage, 0.25, &Spender::owner())
        .await
        .unwrap();
    store
        .record_usage(session, "m", usage, 0.5, &Spender::owner())
        .await
        .unwrap();
    let (total, cost) = store.usage_since(0).await.unwrap();
    assert_eq!(total.input_tokens, 20);
    assert!((cost - 0.75).abs() < 1e-9);
    assert!((store.cost_since(now_ms() + 1000).await.unwrap()).abs() < 1e-9);
}

#[tokio::test]
async fn the_days_spend_stays_exact_while_it_is_cached() {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let day = now_ms() - 1000;
    let usage = Usage::default();
    store
        .record_usage(session, "m", usage, 0.25, &Spender::owner())
        .await
        .unwrap();
    assert!((store.cost_since(day).await.unwrap() - 0.25).abs() < 1e-9);
    // Recorded after the sum was cached: added to it.
    store
        .record_usage(session, "m", usage, 0.5, &Spender::owner())
        .await
        .unwrap();
    assert!((store.cost_since(day).await.unwrap() - 0.75).abs() < 1e-9);
    // Another day start is summed afresh.
    assert!(store.cost_since(now_ms() + 1000).await.unwrap().abs() < 1e-9);
    assert!((store.cost_since(day).await.unwrap() - 0.75).abs() < 1e-9);
}

#[tokio::test]
async fn spending_is_kept_per_sender_and_the_owners_apart() {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let day = now_ms() - 1000;
    let usage = Usage::default();
    let guest = Spender {
        sender: "telegram:9".into(),
        tier: pincer_config::Tier::Guest,
    };
    let member = Spender {
        sender: "telegram:7".into(),
        tier: pincer_config::Tier::Member,
    };
    store
        .record_usage(session, "m", usage, 0.25, &Spender::owner())
        .await
        .unwrap();
    // Cached from here on: later calls must still land in the right sums.
    assert!((store.owner_cost_since(day).await.unwrap() - 0.25).abs() < 1e-9);
    store
        .record_usage(session, "m", usage, 0.5, &guest)
        .await
        .unwrap();
    store
        .record_usage(session, "m", usage, 0.125, &member)
        .await
        .unwrap();
    assert!((store.cost_since(day).await.unwrap() - 0.875).abs() < 1e-9);
    assert!((store.owner_cost_since(day).await.unwrap() - 0.25).abs() < 1e-9);
    assert!((store.sender_cost_since("telegram:9", day).await.unwrap() - 0.5).abs() < 1e-9);
    assert!((store.sender_cost_since("telegram:7", day).await.unwrap() - 0.125).abs() < 1e-9);
    assert!(
        store
            .sender_cost_since("telegram:7", now_ms() + 1000)
            .await
            .unwrap()
            .abs()
            < 1e-9
    );
}

#[test]
fn database_is_private_and_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pincer.db");
    drop(Store::open(&path).unwrap());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "pincer.db must be 0600");
    }
    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version as usize, migrations::latest());
    drop(conn);
    // Reopening an existing database is a no-op migration.
    drop(Store::open(&path).unwrap());
}

#[test]
fn a_newer_database_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pincer.db");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let err = Store::open(&path).err().unwrap().to_string();
    assert!(err.contains("upgrade pincer"), "{err}");
}

#[tokio::test]
async fn taken_messages_move_to_the_end_of_the_transcript() {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let first = store
        .insert_user(session, "t", "1", "s", "first")
        .await
        .unwrap()
        .unwrap();
    let waiting = store
        .insert_user(session, "t", "2", "s", "second")
        .await
        .unwrap()
        .unwrap();
    store
        .take(session, vec![first], Status::Active)
        .await
        .unwrap();
    store
        .append(
            session,
            Role::Assistant,
            vec![Part::Text {
                text: "answer".into(),
            }],
        )
        .await
        .unwrap();
    store
        .take(session, vec![waiting], Status::Active)
        .await
        .unwrap();
    let order: Vec<String> = store
        .history(session)
        .await
        .unwrap()
        .iter()
        .map(|m| match &m.parts[0] {
            Part::Text { text } => text.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(order, ["first", "answer", "second"]);
}

fn code(channel: &str, code: &str, sender: &str, expires_at: i64) -> PendingCode {
    PendingCode {
        channel: channel.into(),
        code: code.into(),
        sender_raw: sender.into(),
        sender: format!("{channel}:{sender}"),
        display_name: "Someone".into(),
        expires_at,
        last_sent_at: now_ms(),
        announced: false,
    }
}

#[tokio::test]
async fn pairing_codes_are_approved_in_any_case_and_refused_when_wrong_or_expired() {
    let (_dir, store) = open();
    store
        .insert_code(code("telegram", "ABCD2345", "7", now_ms() + 60_000))
        .await
        .unwrap();
    store
        .insert_code(code("telegram", "EXPRD234", "8", now_ms() - 1))
        .await
        .unwrap();
    assert_eq!(
        store.pending_codes(Some("telegram")).await.unwrap().len(),
        1,
        "expired codes are not pending"
    );
    assert!(
        store
            .approve_code(Some("telegram"), "EXPRD234", "cli")
            .await
            .unwrap()
            .is_none(),
        "expired"
    );
    assert!(
        store
            .approve_code(Some("telegram"), "ABCD2346", "cli")
            .await
            .unwrap()
            .is_none(),
        "wrong"
    );
    assert!(
        store
            .approve_code(Some("discord"), "ABCD2345", "cli")
            .await
            .unwrap()
            .is_none(),
        "other channel"
    );
    let approved = store
        .approve_code(Some("telegram"), " abcd2345 ", "cli")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(approved.sender, "telegram:7");
    assert!(store.is_approved("telegram", "7").await.unwrap());
    assert!(
        store.pending_codes(None).await.unwrap().is_empty(),
        "a used code is gone"
    );
    assert!(
        store
            .approve_code(Some("telegram"), "ABCD2345", "cli")
            .await
            .unwrap()
            .is_none(),
        "codes work once"
    );
    assert!(store.revoke("telegram", "telegram:7").await.unwrap());
    assert!(!store.is_approved("telegram", "7").await.unwrap());
}

#[test]
fn a_turns_statements_are_prepared_once_not_on_every_call() {
    // SQLite recompiles a query like this one (`= ?1` with ORDER BY) on every new
    // binding unless its plan is pinned: the throughput bench spent 8% there.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pincer.db");
    drop(Store::open(&path).unwrap());
    let conn = connect(&path).unwrap();
    for session in 1..=3 {
        current_session(&conn, &format!("terminal:dm:{session}")).unwrap();
        history(&conn, session, i64::MIN).unwrap();
    }
    let stmt = conn.prepare_cached(HISTORY).unwrap();
    assert_eq!(
        stmt.get_status(rusqlite::StatementStatus::RePrepare),
        0,
        "the history query was recompiled"
    );
}

#[tokio::test]
async fn history_after_a_summary_leaves_the_summarised_part_out_but_not_open_messages() {
    let (_dir, store) = open();
    let session = store
        .current_session(&key("terminal:dm:local"))
        .await
        .unwrap();
    let text = |t: &str| vec![Part::Text { text: t.into() }];
    store
        .insert_user(session, "terminal", "1", "me", "old question")
        .await
        .unwrap();
    store
        .run(|conn| Ok(conn.execute("UPDATE messages SET status = 'done'", [])?))
        .await
        .unwrap();
    store
        .append(session, Role::Assistant, text("old answer"))
        .await
        .unwrap();
    let open = store
        .insert_user(session, "terminal", "2", "me", "still waiting")
        .await
        .unwrap()
        .unwrap();
    store
        .append(session, Role::Assistant, text("new answer"))
        .await
        .unwrap();
    let whole = store.history(session).await.unwrap();
    assert_eq!(whole.len(), 4);
    // A summary stands in for everything up to the open message's position.
    let upto = whole[2].position;
    let after = store.history_after(session, upto).await.unwrap();
    let ids: Vec<i64> = after.iter().map(|m| m.id).collect();
    assert_eq!(ids, vec![open, whole[3].id]);
}

#[test]
fn every_role_and_status_reads_back_as_written() {
    for role in [Role::User, Role::Assistant, Role::Tool] {
        assert_eq!(role.as_str().parse::<Role>().unwrap(), role);
    }
    for status in [
        Status::Pending,
        Status::Active,
        Status::Retried,
        Status::Done,
        Status::Ignored,
    ] {
        assert_eq!(status.as_str().parse::<Status>().unwrap(), status);
    }
}

/// The history of a session whose one message had `column` set to `value` behind
/// Pincer's back (the role's CHECK constraint switched off, as another program could).
async fn history_with(column: &'static str, value: &'static str) -> Result<Vec<StoredMessage>> {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let id = store
        .append(
            session,
            Role::Assistant,
            vec![Part::Text { text: "hi".into() }],
        )
        .await
        .unwrap();
    store
        .run(move |conn| {
            conn.pragma_update(None, "ignore_check_constraints", true)?;
            conn.execute(
                &format!("UPDATE messages SET {column} = ?2 WHERE id = ?1"),
                rusqlite::params![id, value],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    store.history(session).await
}

#[tokio::test]
async fn an_unknown_role_status_or_tier_is_an_error_that_names_the_fix_not_a_default() {
    for (column, value) in [("role", "robot"), ("status", "paused"), ("tier", "admin")] {
        let err = history_with(column, value).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::Corrupt { table: "messages", column: c, value: v }
                if *c == column && v == value),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains(&format!("`{value}` in messages.{column}")),
            "{text}"
        );
        assert!(text.contains("upgrade pincer"), "{text}");
    }
    assert_eq!(
        history_with("role", "tool").await.unwrap()[0].role,
        Role::Tool
    );
}

#[tokio::test]
async fn an_unreadable_part_is_an_error_that_names_the_message() {
    let (_dir, store) = open();
    let session = store.current_session(&key("terminal:dm:k")).await.unwrap();
    let id = store
        .append(
            session,
            Role::Assistant,
            vec![Part::Text { text: "hi".into() }],
        )
        .await
        .unwrap();
    store
        .run(move |conn| {
            conn.execute(
                "UPDATE parts SET body = '{\"type\":\"video\"}' WHERE message_id = ?1",
                [id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let err = store.history(session).await.unwrap_err();
    assert!(
        matches!(err, StoreError::BadPart { message_id, .. } if message_id == id),
        "{err:?}"
    );
    assert!(err.to_string().contains("upgrade pincer"), "{err}");
}
