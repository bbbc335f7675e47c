//! The update queue: update ids counting from 1, confirmation by `getUpdates`' `offset`
//! (everything below it is dropped), and what is still pending.

use std::collections::VecDeque;

use serde_json::{Value, json};

#[derive(Debug, Default)]
pub(crate) struct Updates {
    /// Unconfirmed updates, oldest first, as `(update_id, Update object)`.
    queue: VecDeque<(i64, Value)>,
    /// The last update id handed out.
    last_id: i64,
    /// The highest `offset` the bot has passed.
    confirmed: i64,
}

impl Updates {
    /// Queues a `message` update and returns its id.
    pub(crate) fn push_message(&mut self, message: Value) -> i64 {
        self.push("message", message)
    }

    /// Queues an update of `kind` (`message`, `callback_query`) and returns its id.
    pub(crate) fn push(&mut self, kind: &str, object: Value) -> i64 {
        self.last_id += 1;
        let id = self.last_id;
        self.queue
            .push_back((id, json!({"update_id": id, kind: object})));
        id
    }

    /// Applies a `getUpdates` offset: a positive one confirms (drops) every update below
    /// it; a negative one keeps only the last `-offset` updates; 0 does nothing.
    pub(crate) fn confirm(&mut self, offset: i64) {
        if offset > 0 {
            self.confirmed = self.confirmed.max(offset);
            while self.queue.front().is_some_and(|(id, _)| *id < offset) {
                self.queue.pop_front();
            }
        } else if offset < 0 {
            let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
            while self.queue.len() > keep {
                self.queue.pop_front();
            }
        }
    }

    /// Up to `limit` pending updates, oldest first.
    pub(crate) fn batch(&self, limit: usize) -> Vec<Value> {
        self.queue
            .iter()
            .take(limit)
            .map(|(_, u)| u.clone())
            .collect()
    }

    /// Drops every pending update (`deleteWebhook` with `drop_pending_updates`).
    pub(crate) fn drop_all(&mut self) {
        self.queue.clear();
    }

    pub(crate) fn pending(&self) -> usize {
        self.queue.len()
    }

    pub(crate) fn confirmed_offset(&self) -> i64 {
        self.confirmed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_confirms_below_and_negative_keeps_the_tail() {
        let mut updates = Updates::default();
        for n in 0..4 {
            updates.push_message(json!({"n": n}));
        }
        updates.confirm(3);
        assert_eq!(updates.pending(), 2);
        assert_eq!(updates.batch(10)[0]["update_id"], 3);
        assert_eq!(updates.confirmed_offset(), 3);
        updates.confirm(2);
        assert_eq!(updates.confirmed_offset(), 3);
        updates.confirm(-1);
        assert_eq!(updates.batch(10)[0]["update_id"], 4);
    }
}
