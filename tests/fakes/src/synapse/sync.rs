//! A person's `/sync` loop and what it saw: every timeline event and every `m.typing`
//! ephemeral event of the rooms they are in (or left), in the order they arrived, each
//! stamped with a process-wide sequence number and the instant it was first seen.
//!
//! The loop runs on the runtime of whoever started it (a `Person`'s first use) until
//! the person is dropped; errors (Synapse restarting, a connection refused) are retried
//! after a short pause. It asks for up to 500 timeline events per room per sync, so a
//! test never meets a `limited` timeline with gaps.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::person::path_segment;

/// Orders events first seen by different people: a person sees a room's timeline in
/// order, so the first sighting of a later event always comes after the earlier one's.
static SEEN: AtomicU64 = AtomicU64::new(0);

/// How long Synapse holds one `/sync` open when nothing happens.
const HOLD_MS: &str = "5000";

/// The sync filter: long timelines, no presence.
const FILTER: &str = r#"{"room":{"timeline":{"limit":500}},"presence":{"not_types":["*"]},"account_data":{"not_types":["*"]}}"#;

/// One event as a person's sync loop first saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) event: Value,
    /// Process-wide arrival order (see `SEEN`).
    pub(crate) seq: u64,
    pub(crate) at: Instant,
}

/// What a sync loop recorded, per room.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub(crate) rooms: HashMap<String, RoomLog>,
    /// Rooms the person is invited to and has not joined.
    pub(crate) invites: HashSet<String>,
    /// Completed syncs, so a caller can wait for one more.
    pub(crate) syncs: u64,
}

#[derive(Debug, Default)]
pub(crate) struct RoomLog {
    pub(crate) events: Vec<Seen>,
    /// The `user_ids` of each `m.typing` event, in order.
    pub(crate) typing: Vec<Vec<String>>,
    ids: HashSet<String>,
}

/// The log a person and their sync loop share.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shared {
    log: Arc<Mutex<Log>>,
    /// Join every room the person is invited to, as a client that accepts invites would.
    pub(crate) auto_join: Arc<std::sync::atomic::AtomicBool>,
}

impl Shared {
    pub(crate) fn read(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes in one `/sync` answer.
    pub(crate) fn record(&self, body: &Value) {
        let now = Instant::now();
        let mut guard = self.read();
        let log = &mut *guard;
        log.syncs += 1;
        let rooms = &body["rooms"];
        for kind in ["join", "leave"] {
            let Some(map) = rooms[kind].as_object() else {
                continue;
            };
            for (room_id, room) in map {
                log.invites.remove(room_id);
                let entry = log.rooms.entry(room_id.clone()).or_default();
                for event in room["timeline"]["events"].as_array().into_iter().flatten() {
                    let id = event["event_id"].as_str().unwrap_or_default().to_owned();
                    if !id.is_empty() && !entry.ids.insert(id) {
                        continue; // seen before (an initial sync after a retry)
                    }
                    entry.events.push(Seen {
                        event: event.clone(),
                        seq: SEEN.fetch_add(1, Ordering::Relaxed),
                        at: now,
                    });
                }
                for event in room["ephemeral"]["events"].as_array().into_iter().flatten() {
                    if event["type"] == "m.typing" {
                        let users = event["content"]["user_ids"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|u| u.as_str().map(str::to_owned))
                            .collect();
                        entry.typing.push(users);
                    }
                }
            }
        }
        if let Some(invited) = rooms["invite"].as_object() {
            log.invites.extend(invited.keys().cloned());
        }
    }
}

/// The loop itself: sync, record, accept invites if asked, again.
pub(crate) async fn run(client: reqwest::Client, base: String, token: String, shared: Shared) {
    let mut since: Option<String> = None;
    let mut joined_on_invite: HashSet<String> = HashSet::new();
    loop {
        let mut request = client
            .get(format!("{base}/_matrix/client/v3/sync"))
            .bearer_auth(&token)
            .query(&[("timeout", HOLD_MS), ("filter", FILTER)])
            .timeout(Duration::from_secs(30));
        if let Some(since) = &since {
            request = request.query(&[("since", since)]);
        }
        let answer = match request.send().await.and_then(|r| r.error_for_status()) {
            Ok(answer) => answer.json::<Value>().await.ok(),
            Err(_) => None,
        };
        let Some(body) = answer else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        shared.record(&body);
        if let Some(next) = body["next_batch"].as_str() {
            since = Some(next.to_owned());
        }
        if shared.auto_join.load(Ordering::Relaxed) {
            let invites: Vec<String> = shared.read().invites.iter().cloned().collect();
            for room in invites {
                if joined_on_invite.insert(room.clone()) {
                    // A failed join is tried again when the invite shows up again.
                    let joined = client
                        .post(format!(
                            "{base}/_matrix/client/v3/join/{}",
                            path_segment(&room)
                        ))
                        .bearer_auth(&token)
                        .json(&serde_json::json!({}))
                        .send()
                        .await
                        .is_ok_and(|r| r.status().is_success());
                    if !joined {
                        joined_on_invite.remove(&room);
                    }
                }
            }
        }
    }
}
