//! Reading what the bot shows from the events people's sync loops saw: its
//! `m.room.message`s in arrival order, with its `m.replace` edits applied and its own
//! un-redacted `m.reaction` annotations read as approval buttons.
//!
//! Pure: no network, so the rules are tested here on hand-made events.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::sync::Seen;
use crate::platform::Shown;

/// The bot's messages among `seen` (room id, event), deduplicated across the people who
/// saw them, oldest first.
pub(crate) fn read(bot: &str, seen: Vec<(String, Seen)>) -> Vec<Shown> {
    let mut first: HashMap<String, (String, Seen)> = HashMap::new();
    for (room, event) in seen {
        let Some(id) = event.event["event_id"].as_str().map(str::to_owned) else {
            continue;
        };
        match first.get(&id) {
            Some((_, known)) if known.seq <= event.seq => {}
            _ => {
                first.insert(id, (room, event));
            }
        }
    }
    let mut events: Vec<(String, Seen)> = first.into_values().collect();
    events.sort_by_key(|(_, seen)| seen.seq);

    let redacted: HashSet<&str> = events
        .iter()
        .filter(|(_, s)| s.event["type"] == "m.room.redaction")
        .filter_map(|(_, s)| {
            s.event["redacts"]
                .as_str()
                .or_else(|| s.event["content"]["redacts"].as_str())
        })
        .collect();
    let by_bot = |s: &Seen| s.event["sender"] == bot;
    let id_of = |s: &Seen| s.event["event_id"].as_str().unwrap_or_default().to_owned();

    let mut buttons: HashSet<String> = HashSet::new();
    for (_, s) in &events {
        let relation = &s.event["content"]["m.relates_to"];
        if by_bot(s)
            && s.event["type"] == "m.reaction"
            && relation["rel_type"] == "m.annotation"
            && !redacted.contains(id_of(s).as_str())
            && let Some(target) = relation["event_id"].as_str()
        {
            buttons.insert(target.to_owned());
        }
    }

    let mut shown: Vec<Shown> = Vec::new();
    for (room, s) in &events {
        if !by_bot(s) || s.event["type"] != "m.room.message" {
            continue;
        }
        let id = id_of(s);
        if redacted.contains(id.as_str()) {
            continue;
        }
        let content = &s.event["content"];
        let relation = &content["m.relates_to"];
        if relation["rel_type"] == "m.replace" {
            let target = relation["event_id"].as_str().unwrap_or_default();
            if let Some(message) = shown.iter_mut().find(|m| m.id == target) {
                message.text = text_of(&content["m.new_content"]);
                message.edits += 1;
                message.at = s.at;
            }
            continue;
        }
        let thread = (relation["rel_type"] == "m.thread")
            .then(|| relation["event_id"].as_str().map(str::to_owned))
            .flatten();
        shown.push(Shown {
            chat: room.clone(),
            buttons: buttons.contains(&id),
            id,
            text: text_of(content),
            thread,
            edits: 0,
            at: s.at,
        });
    }
    shown
}

fn text_of(content: &Value) -> String {
    content["body"].as_str().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::*;

    fn seen(seq: u64, event: Value) -> (String, Seen) {
        let at = Instant::now();
        ("!room:localhost".to_owned(), Seen { event, seq, at })
    }

    fn message(id: &str, sender: &str, content: Value) -> Value {
        json!({"type": "m.room.message", "event_id": id, "sender": sender, "content": content})
    }

    #[test]
    fn edits_apply_and_reactions_are_buttons_until_redacted() {
        let bot = "@bot:localhost";
        let events = vec![
            seen(
                1,
                message("$q", bot, json!({"msgtype": "m.text", "body": "Allow?"})),
            ),
            seen(
                2,
                message(
                    "$p",
                    "@ann:localhost",
                    json!({"msgtype": "m.text", "body": "hi"}),
                ),
            ),
            seen(
                3,
                json!({"type": "m.reaction", "event_id": "$r1", "sender": bot,
                "content": {"m.relates_to": {"rel_type": "m.annotation", "event_id": "$q", "key": "👍"}}}),
            ),
            seen(
                4,
                message(
                    "$e",
                    bot,
                    json!({"msgtype": "m.text", "body": "* Allowed",
                "m.new_content": {"msgtype": "m.text", "body": "Allowed once"},
                "m.relates_to": {"rel_type": "m.replace", "event_id": "$q"}}),
                ),
            ),
            seen(
                5,
                message(
                    "$t",
                    bot,
                    json!({"msgtype": "m.notice", "body": "in a thread",
                "m.relates_to": {"rel_type": "m.thread", "event_id": "$p"}}),
                ),
            ),
            // The same event seen by a second person later changes nothing.
            seen(
                6,
                message("$q", bot, json!({"msgtype": "m.text", "body": "Allow?"})),
            ),
        ];
        let shown = read(bot, events.clone());
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert_eq!(
            (shown[0].text.as_str(), shown[0].edits),
            ("Allowed once", 1)
        );
        assert!(shown[0].buttons);
        assert_eq!(shown[1].thread.as_deref(), Some("$p"));

        let mut more = events;
        more.push(seen(
            7,
            json!({"type": "m.room.redaction", "event_id": "$x", "sender": bot,
            "redacts": "$r1", "content": {"redacts": "$r1"}}),
        ));
        assert!(
            !read(bot, more)[0].buttons,
            "a redacted reaction is no button"
        );
    }
}
