//! The outbox: what a person is to see — a reply, a notice, a file, a reaction — stored
//! with its target before it is sent, and settled once the platform has it (or delivery
//! gave up). A long text cut into several platform messages records each part as it
//! goes. What a crash left unsettled is read back by the next start and sent, from
//! the part where it stopped, instead of being made again. The store is the channel
//! manager's `Ledger`.
//!
//! Settled rows are kept a week (`prune_outbox`), so a reply can be traced to its
//! delivery; a file's bytes only until it is settled.

use async_trait::async_trait;
use pincer_channels::Target;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use super::{Cached as _, Result, Store, StoreError, now_ms};

/// How long settled entries are kept.
const KEEP_MS: i64 = 7 * 24 * 3600 * 1000;

/// What an entry shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A reply's text, or a message outside a turn.
    Text(String),
    /// A message about the turn rather than part of its reply.
    Notice(String),
    /// Something failed; the text says why and what to do.
    Error(String),
    File(StoredFile),
    /// An emoji on the person's message.
    React {
        message_id: String,
        emoji: String,
    },
}

/// A file as the outbox keeps it until it is sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredFile {
    pub file_name: String,
    pub caption: Option<String>,
    pub as_photo: bool,
    /// A voice message (a spoken reply); absent in entries booked before it existed.
    #[serde(default)]
    pub as_voice: bool,
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Reaction {
    message_id: String,
    emoji: String,
}

/// An entry to store before its message goes out.
#[derive(Debug, Clone, PartialEq)]
pub struct Booking {
    /// The conversation it belongs to, if any.
    pub session_id: Option<i64>,
    /// The assistant message a reply's text came from.
    pub source: Option<i64>,
    pub target: Target,
    pub reply_to: Option<String>,
    pub item: Item,
}

/// An entry a previous run stored and never settled.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsent {
    pub id: i64,
    pub booking: Booking,
    /// The parts of a long text the platform already has.
    pub parts_sent: usize,
    pub created_at: i64,
}

impl Item {
    fn encode(&self) -> Result<(&'static str, String, Option<&[u8]>)> {
        Ok(match self {
            Item::Text(text) => ("text", text.clone(), None),
            Item::Notice(text) => ("notice", text.clone(), None),
            Item::Error(text) => ("error", text.clone(), None),
            Item::File(file) => ("file", serde_json::to_string(file)?, Some(&file.bytes)),
            Item::React { message_id, emoji } => (
                "react",
                serde_json::to_string(&Reaction {
                    message_id: message_id.clone(),
                    emoji: emoji.clone(),
                })?,
                None,
            ),
        })
    }

    fn decode(kind: &str, body: String, data: Option<Vec<u8>>) -> Result<Item> {
        Ok(match kind {
            "text" => Item::Text(body),
            "notice" => Item::Notice(body),
            "error" => Item::Error(body),
            "file" => {
                let mut file: StoredFile = serde_json::from_str(&body)?;
                file.bytes = data.unwrap_or_default();
                Item::File(file)
            }
            "react" => {
                let reaction: Reaction = serde_json::from_str(&body)?;
                Item::React {
                    message_id: reaction.message_id,
                    emoji: reaction.emoji,
                }
            }
            other => return Err(StoreError::corrupt("outbox", "kind", other)),
        })
    }
}

impl Store {
    /// Store an entry before its message goes out; its id goes with the message.
    pub async fn book(&self, booking: Booking) -> Result<i64> {
        self.run(move |conn| book(conn, &booking)).await
    }

    /// Entries a previous run stored and never settled, oldest first.
    pub async fn unsent(&self) -> Result<Vec<Unsent>> {
        self.run(|conn| {
            let mut stmt = conn.prepare(
                "SELECT id, session_id, source, channel, chat_id, thread_id, to_user, reply_to,
                        kind, body, data, parts_sent, created_at
                 FROM outbox WHERE settled_at IS NULL ORDER BY id",
            )?;
            let mut rows = stmt.query([])?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let kind: String = row.get(8)?;
                let item = Item::decode(&kind, row.get(9)?, row.get(10)?)?;
                out.push(Unsent {
                    id: row.get(0)?,
                    booking: Booking {
                        session_id: row.get(1)?,
                        source: row.get(2)?,
                        target: Target {
                            channel: row.get(3)?,
                            chat_id: row.get(4)?,
                            thread_id: row.get(5)?,
                            user: row.get(6)?,
                        },
                        reply_to: row.get(7)?,
                        item,
                    },
                    parts_sent: usize::try_from(row.get::<_, i64>(11)?).unwrap_or(0),
                    created_at: row.get(12)?,
                });
            }
            Ok(out)
        })
        .await
    }

    /// Whether the text of assistant message `source` has an entry (a crash between
    /// storing a reply and booking it leaves none).
    pub async fn booked_from(&self, source: i64) -> Result<bool> {
        self.run(move |conn| {
            Ok(conn.row(
                "SELECT EXISTS (SELECT 1 FROM outbox WHERE source = ?1)",
                params![source],
                |row| row.get(0),
            )?)
        })
        .await
    }

    /// Drop entries settled over a week ago. Returns how many.
    pub async fn prune_outbox(&self) -> Result<usize> {
        self.run(|conn| {
            Ok(conn.exec(
                "DELETE FROM outbox WHERE settled_at IS NOT NULL AND settled_at < ?1",
                params![now_ms() - KEEP_MS],
            )?)
        })
        .await
    }

    /// How entry `id` was settled: `None` while it is not, else whether it was delivered.
    pub async fn settlement(&self, id: i64) -> Result<Option<bool>> {
        self.run(move |conn| {
            Ok(conn.row(
                "SELECT CASE WHEN settled_at IS NULL THEN NULL ELSE delivered END
                 FROM outbox WHERE id = ?1",
                params![id],
                |row| row.get(0),
            )?)
        })
        .await
    }
}

fn book(conn: &Connection, booking: &Booking) -> Result<i64> {
    let (kind, body, data) = booking.item.encode()?;
    let target = &booking.target;
    conn.exec(
        "INSERT INTO outbox (session_id, source, channel, chat_id, thread_id, to_user, reply_to,
                             kind, body, data, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            booking.session_id,
            booking.source,
            target.channel,
            target.chat_id,
            target.thread_id,
            target.user,
            booking.reply_to,
            kind,
            body,
            data,
            now_ms()
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// The manager's ledger: each report is committed before the manager goes on, so a
/// part recorded sent is never sent again. A report that cannot be stored is logged;
/// the worst it costs is that part sent twice after a restart.
#[async_trait]
impl pincer_channels::Ledger for Store {
    async fn progress(&self, id: i64, parts: usize) {
        let parts = i64::try_from(parts).unwrap_or(i64::MAX);
        let done = self
            .run(move |conn| {
                conn.exec(
                    "UPDATE outbox SET parts_sent = MAX(parts_sent, ?2) WHERE id = ?1",
                    params![id, parts],
                )?;
                Ok(())
            })
            .await;
        if let Err(err) = done {
            tracing::warn!("the outbox did not record a part as sent: {err}");
        }
    }

    async fn settled(&self, id: i64, delivered: bool) {
        let done = self
            .run(move |conn| {
                conn.exec(
                    "UPDATE outbox SET settled_at = ?2, delivered = ?3, data = NULL WHERE id = ?1",
                    params![id, now_ms(), delivered],
                )?;
                Ok(())
            })
            .await;
        if let Err(err) = done {
            tracing::warn!("the outbox did not record a message as sent: {err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use pincer_channels::Ledger as _;

    use super::*;

    fn booking(item: Item) -> Booking {
        Booking {
            session_id: Some(1),
            source: Some(5),
            target: Target::chat("telegram", "42", Some("7")),
            reply_to: Some("99".into()),
            item,
        }
    }

    #[tokio::test]
    async fn what_is_not_settled_comes_back_in_order_from_the_part_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("p.db")).unwrap();
        let text = store
            .book(booking(Item::Text("long".into())))
            .await
            .unwrap();
        let file = StoredFile {
            file_name: "a.png".into(),
            caption: Some("look".into()),
            as_photo: true,
            as_voice: false,
            bytes: vec![1, 2, 3],
        };
        let sent = store.book(booking(Item::File(file.clone()))).await.unwrap();
        let react = Item::React {
            message_id: "3".into(),
            emoji: "👀".into(),
        };
        let reaction = store.book(booking(react.clone())).await.unwrap();
        store.progress(text, 2).await;
        store.progress(text, 1).await; // never backwards
        store.settled(sent, true).await;
        assert!(store.booked_from(5).await.unwrap());
        assert!(!store.booked_from(6).await.unwrap());

        // The store is reopened, as by the next start.
        drop(store);
        let store = Store::open(&dir.path().join("p.db")).unwrap();
        let unsent = store.unsent().await.unwrap();
        assert_eq!(unsent.len(), 2);
        assert_eq!((unsent[0].id, unsent[0].parts_sent), (text, 2));
        assert_eq!(unsent[0].booking, booking(Item::Text("long".into())));
        assert_eq!(unsent[1].booking, booking(react));
        assert_eq!(store.settlement(sent).await.unwrap(), Some(true));
        assert_eq!(store.settlement(text).await.unwrap(), None);
        store.settled(reaction, false).await;
        assert_eq!(store.settlement(reaction).await.unwrap(), Some(false));
        assert!(store.unsent().await.unwrap().len() == 1);
    }

    #[tokio::test]
    async fn a_file_keeps_its_bytes_until_it_is_settled() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("p.db")).unwrap();
        let file = StoredFile {
            file_name: "a.pdf".into(),
            caption: None,
            as_photo: false,
            as_voice: false,
            bytes: b"%PDF".to_vec(),
        };
        let id = store.book(booking(Item::File(file.clone()))).await.unwrap();
        assert_eq!(
            store.unsent().await.unwrap()[0].booking.item,
            Item::File(file)
        );
        store.settled(id, true).await;
        let kept: Option<Vec<u8>> = store
            .run(move |conn| {
                Ok(conn.row("SELECT data FROM outbox WHERE id = ?1", [id], |r| r.get(0))?)
            })
            .await
            .unwrap();
        assert_eq!(kept, None);
    }

    #[test]
    fn a_voice_message_is_kept_as_one_and_older_entries_read_as_files() {
        let old: StoredFile =
            serde_json::from_str(r#"{"file_name":"a.pdf","caption":null,"as_photo":false}"#)
                .unwrap();
        assert!(
            !old.as_voice,
            "an entry booked before voice messages is a file"
        );
        let voice = StoredFile {
            file_name: "reply.ogg".into(),
            caption: None,
            as_photo: false,
            as_voice: true,
            bytes: Vec::new(),
        };
        let back: StoredFile =
            serde_json::from_str(&serde_json::to_string(&voice).unwrap()).unwrap();
        assert_eq!(back, voice);
    }
}
