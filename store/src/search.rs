//! Full-text search over what was said in every conversation: the text of user and
//! assistant messages, indexed by SQLite FTS5 (the `said` table, migration 12, kept in
//! step by triggers inside the writer's transactions). Words are matched by their stem
//! ("plumbers" finds "plumber"), without case or accents; every word must appear, and a
//! search that finds nothing that way tries any of them. Tool calls, their results and
//! the model's thinking are not indexed.

use rusqlite::types::Value as Sql;

use super::{Result, Role, Store};

/// Hits a search returns at most.
pub const MAX_HITS: usize = 50;

/// What to look for, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchQuery {
    /// The words, as a person types them (quotes and operators are taken as words).
    pub text: String,
    /// Only conversations on this channel (`telegram`): the session key's first part.
    pub channel: Option<String>,
    /// Only this conversation: a session key (`telegram:dm:42`), or the start of keys
    /// (`telegram:group:-100`) down to a `:` boundary.
    pub chat: Option<String>,
    /// Only messages these people wrote (canonical ids, `telegram:42`).
    pub people: Option<Vec<String>>,
    /// Only messages from this moment on (Unix ms).
    pub since_ms: Option<i64>,
    /// Only messages before this moment (Unix ms).
    pub until_ms: Option<i64>,
    /// Only direct chats where nobody but this person wrote (a member's own, never a
    /// group even if only they spoke there): how a non-owner's search is held to their
    /// own conversations.
    pub only_conversations_of: Option<String>,
    /// At most this many hits (capped at [`MAX_HITS`]).
    pub limit: usize,
}

/// One message that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub session_id: i64,
    /// The session key (`telegram:dm:42`).
    pub key: String,
    pub message_id: i64,
    pub role: Role,
    /// Who wrote it (user messages; canonical id).
    pub sender: Option<String>,
    /// Unix ms.
    pub created_at: i64,
    /// The matching stretch, the matched words in «»; cut ends marked with "…".
    pub snippet: String,
    /// The whole text of the message part that matched.
    pub text: String,
}

/// The words of `text` as an FTS5 query: each quoted (so nothing is an operator), all
/// required (`joiner` " ") or any (" OR "). `None` when there is no word at all.
fn fts_query(text: &str, joiner: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(32)
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(joiner))
}

impl Store {
    /// The messages that match `query`, best first (ties: newest first). A query with
    /// no word in it finds nothing.
    pub async fn search_said(&self, query: SearchQuery) -> Result<Vec<Hit>> {
        let Some(all) = fts_query(&query.text, " ") else {
            return Ok(Vec::new());
        };
        let any = fts_query(&query.text, " OR ").filter(|any| *any != all);
        self.run(move |conn| {
            let hits = find(conn, &query, &all)?;
            match any {
                Some(any) if hits.is_empty() => find(conn, &query, &any),
                _ => Ok(hits),
            }
        })
        .await
    }
}

fn find(conn: &rusqlite::Connection, query: &SearchQuery, fts: &str) -> Result<Vec<Hit>> {
    let sql = String::from(
        "SELECT s.id, s.key, m.id, m.role, m.sender, m.created_at,
                snippet(said, 0, '«', '»', '…', 24), said.text
         FROM said JOIN parts p ON p.id = said.rowid
         JOIN messages m ON m.id = p.message_id
         JOIN sessions s ON s.id = m.session_id
         WHERE said MATCH ?1",
    );
    let mut sql = Statement {
        sql,
        args: vec![Sql::Text(fts.to_string())],
    };
    if let Some(channel) = &query.channel {
        sql.and(
            " AND s.key LIKE ? ESCAPE '\\'",
            Sql::Text(format!("{}:%", like(channel))),
        );
    }
    if let Some(chat) = &query.chat {
        let chat = chat.trim_end_matches(':');
        sql.and(" AND (s.key = ?", Sql::Text(chat.to_string()));
        sql.and(
            " OR s.key LIKE ? ESCAPE '\\')",
            Sql::Text(format!("{}:%", like(chat))),
        );
    }
    if let Some(people) = &query.people {
        let list = serde_json::Value::from(people.clone()).to_string();
        sql.and(
            " AND m.sender IN (SELECT value FROM json_each(?))",
            Sql::Text(list),
        );
    }
    if let Some(since) = query.since_ms {
        sql.and(" AND m.created_at >= ?", Sql::Integer(since));
    }
    if let Some(until) = query.until_ms {
        sql.and(" AND m.created_at < ?", Sql::Integer(until));
    }
    if let Some(person) = &query.only_conversations_of {
        sql.and(
            " AND s.key GLOB '*:dm:*' AND NOT EXISTS (SELECT 1 FROM messages o
                  WHERE o.session_id = s.id AND o.role = 'user'
                  AND (o.sender IS NULL OR o.sender <> ?))",
            Sql::Text(person.clone()),
        );
    }
    sql.sql
        .push_str(" ORDER BY rank, m.created_at DESC, m.id DESC");
    sql.and(
        " LIMIT ?",
        Sql::Integer(query.limit.clamp(1, MAX_HITS) as i64),
    );
    let Statement { sql, args } = sql;
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, Option<String>>(4)?,
            row.get::<_, i64>(5)?,
            row.get::<_, String>(6)?,
            row.get::<_, String>(7)?,
        ))
    })?;
    let mut hits = Vec::new();
    for row in rows {
        let (session_id, key, message_id, role, sender, created_at, snippet, text) = row?;
        hits.push(Hit {
            session_id,
            key,
            message_id,
            role: role.parse()?,
            sender,
            created_at,
            snippet,
            text,
        });
    }
    Ok(hits)
}

/// A statement being put together: each clause's one `?` numbered as its argument.
struct Statement {
    sql: String,
    args: Vec<Sql>,
}

impl Statement {
    fn and(&mut self, clause: &str, value: Sql) {
        self.args.push(value);
        self.sql
            .push_str(&clause.replace('?', &format!("?{}", self.args.len())));
    }
}

/// `text` with LIKE's wildcards escaped (by `\`).
fn like(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pincer_channels::SessionKey;
    use pincer_provider::Part;

    fn text(words: &str) -> Vec<Part> {
        vec![Part::Text { text: words.into() }]
    }

    async fn said(store: &Store, key: &str, id: &str, sender: &str, words: &str) -> i64 {
        let key: SessionKey = key.parse().unwrap();
        let channel = key.to_string();
        let channel = channel.split(':').next().unwrap().to_string();
        let (session, _) = store
            .receive(&key, &channel, id, sender, words)
            .await
            .unwrap();
        session
    }

    fn words(text: &str) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            limit: 10,
            ..SearchQuery::default()
        }
    }

    #[tokio::test]
    async fn what_was_said_is_found_by_its_stem_with_its_conversation_and_who_said_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("pincer.db")).unwrap();
        let dm = said(
            &store,
            "telegram:dm:42",
            "1",
            "telegram:42",
            "The plumber comes Tuesday at 9, his name is Jorge",
        )
        .await;
        store
            .append(
                dm,
                Role::Assistant,
                text("Noted: Jorge the plumber, Tuesday 9:00."),
            )
            .await
            .unwrap();
        store
            .append(
                dm,
                Role::Tool,
                vec![Part::ToolResult {
                    call_id: "c".into(),
                    name: "exec".into(),
                    content: "plumbers everywhere".into(),
                    is_error: false,
                }],
            )
            .await
            .unwrap();
        said(
            &store,
            "discord:dm:7",
            "2",
            "discord:7",
            "buy basil and tomatoes",
        )
        .await;

        let hits = store.search_said(words("plumbers")).await.unwrap();
        assert_eq!(
            hits.len(),
            2,
            "the user's words and the reply, not the tool result: {hits:?}"
        );
        assert!(hits.iter().all(|h| h.key == "telegram:dm:42"));
        let user = hits.iter().find(|h| h.role == Role::User).unwrap();
        assert_eq!(user.sender.as_deref(), Some("telegram:42"));
        assert!(user.snippet.contains("«plumber»"), "{}", user.snippet);

        // Every word must be there; when no message has them all, any will do.
        assert_eq!(
            store
                .search_said(words("plumber Jorge Tuesday"))
                .await
                .unwrap()
                .len(),
            2
        );
        let any = store.search_said(words("basil plumber")).await.unwrap();
        assert_eq!(any.len(), 3, "{any:?}");
        // Operators and quotes are only words.
        assert!(
            store
                .search_said(words("\"plumber\" OR NEAR("))
                .await
                .unwrap()
                .len()
                >= 2
        );
        assert!(store.search_said(words("?!")).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn filters_narrow_by_channel_chat_person_time_and_a_member_s_own_conversations() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("pincer.db")).unwrap();
        said(
            &store,
            "telegram:dm:42",
            "1",
            "telegram:42",
            "the plumber is late",
        )
        .await;
        said(
            &store,
            "telegram:group:-100",
            "2",
            "telegram:42",
            "plumber in the group",
        )
        .await;
        said(
            &store,
            "telegram:group:-100",
            "3",
            "telegram:9",
            "my plumber too",
        )
        .await;
        said(&store, "slack:dm:U1", "4", "slack:U1", "plumber on slack").await;
        said(
            &store,
            "telegram:group:-200",
            "5",
            "telegram:42",
            "plumber alone in a group",
        )
        .await;
        let all = store.search_said(words("plumber")).await.unwrap();
        assert_eq!(all.len(), 5);

        let on = |q: SearchQuery| {
            let store = store.clone();
            async move { store.search_said(q).await.unwrap() }
        };
        let slack = on(SearchQuery {
            channel: Some("slack".into()),
            ..words("plumber")
        })
        .await;
        assert_eq!(slack.len(), 1);
        assert_eq!(slack[0].key, "slack:dm:U1");
        let group = on(SearchQuery {
            chat: Some("telegram:group:-100".into()),
            ..words("plumber")
        })
        .await;
        assert_eq!(group.len(), 2);
        let nine = on(SearchQuery {
            people: Some(vec!["telegram:9".into()]),
            ..words("plumber")
        })
        .await;
        assert_eq!(nine.len(), 1);
        assert_eq!(nine[0].snippet, "my «plumber» too");
        let later = on(SearchQuery {
            since_ms: Some(all.iter().map(|h| h.created_at).max().unwrap() + 1),
            ..words("plumber")
        })
        .await;
        assert!(later.is_empty());
        let before = on(SearchQuery {
            until_ms: Some(0),
            ..words("plumber")
        })
        .await;
        assert!(before.is_empty());

        // Person 42 wrote in a group with someone else, and alone in another group:
        // only the direct chat is theirs.
        let own = on(SearchQuery {
            only_conversations_of: Some("telegram:42".into()),
            ..words("plumber")
        })
        .await;
        assert_eq!(own.len(), 1, "{own:?}");
        assert_eq!(own[0].key, "telegram:dm:42");
    }

    #[tokio::test]
    async fn a_rewritten_message_is_found_by_its_new_words_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("pincer.db")).unwrap();
        let key: SessionKey = "telegram:dm:42".parse().unwrap();
        let (_, id) = store
            .receive(&key, "telegram", "1", "telegram:42", "see the attachment")
            .await
            .unwrap();
        store
            .rewrite_user(
                id.unwrap(),
                "see the file: invoice from the plumber",
                Vec::new(),
            )
            .await
            .unwrap();
        assert_eq!(store.search_said(words("invoice")).await.unwrap().len(), 1);
        assert!(
            store
                .search_said(words("attachment"))
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_database_from_before_the_index_is_indexed_when_it_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pincer.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            super::super::migrations::apply_first(&conn, 11).unwrap();
            conn.execute_batch(
                "INSERT INTO sessions (id, key, created_at, updated_at) VALUES (1, 'telegram:dm:42', 1, 1);
                 INSERT INTO messages (id, session_id, role, sender, position, created_at)
                     VALUES (1, 1, 'user', 'telegram:42', 1, 1000), (2, 1, 'tool', NULL, 2, 1001);
                 INSERT INTO parts (message_id, seq, kind, body) VALUES
                     (1, 0, 'text', '{\"type\":\"text\",\"text\":\"call the plumber\"}'),
                     (2, 0, 'text', '{\"type\":\"text\",\"text\":\"plumber in a tool\"}'),
                     (1, 1, 'text', 'not json at all');",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let hits = store.search_said(words("plumber")).await.unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!((hits[0].message_id, hits[0].created_at), (1, 1000));
    }
}
