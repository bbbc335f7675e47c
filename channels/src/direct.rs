//! People's direct chats with the bot, for targets that name a person (`Target::user`)
//! rather than a chat: `resolve` turns such a target into their direct chat's, and
//! `DirectChats` is the cache an adapter keeps so that only the first message to someone
//! asks the platform. How a chat is opened is each adapter's (`DirectOpener`); when to
//! resolve is the channel manager's (before a chat's first operation) and the approval
//! prompters' (the core hands them targets directly). Nothing here talks to a platform.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use crate::channel::{ChannelError, DirectOpener};
use crate::message::Target;

/// How many people's direct chats an adapter remembers.
const REMEMBERED: usize = 1024;

/// Direct chat ids by user id. Bounded: a bot that writes to many people must not grow
/// it for as long as the gateway runs; when full it starts over (a direct chat's id
/// never changes, so forgetting one costs a single request to open it again).
#[derive(Default)]
pub struct DirectChats(Mutex<HashMap<String, String>>);

impl DirectChats {
    pub fn get(&self, user: &str) -> Option<String> {
        self.0.lock().ok()?.get(user).cloned()
    }

    pub fn put(&self, user: &str, chat: &str) {
        // A poisoned cache remembers nothing; every message then opens the chat anew.
        let Ok(mut chats) = self.0.lock() else {
            return;
        };
        if chats.len() >= REMEMBERED {
            chats.clear();
        }
        chats.insert(user.to_string(), chat.to_string());
    }

    /// The remembered chat with `user`, else the one `open` returns (then remembered).
    pub async fn get_or_open<F>(&self, user: &str, open: F) -> Result<String, ChannelError>
    where
        F: Future<Output = Result<String, ChannelError>>,
    {
        if let Some(chat) = self.get(user) {
            return Ok(chat);
        }
        let chat = open.await?;
        self.put(user, &chat);
        Ok(chat)
    }
}

/// `target` itself when it names a chat; else the direct chat with the person it names,
/// opened through `opener`.
pub async fn resolve(opener: &dyn DirectOpener, target: &Target) -> Result<Target, ChannelError> {
    if !target.user {
        return Ok(target.clone());
    }
    let chat = opener.open_direct(&target.chat_id).await?;
    Ok(Target::chat(
        &target.channel,
        &chat,
        target.thread_id.as_deref(),
    ))
}

/// The error for a person's target that reached an operation which needs a chat.
pub fn unresolved(target: &Target) -> ChannelError {
    ChannelError::permanent(format!(
        "`{}:{}` names a person, not a chat: open their direct chat first (pincer_channels::direct::resolve, which the channel manager does)",
        target.channel, target.chat_id
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_cache_starts_over_when_full() {
        let chats = DirectChats::default();
        chats.put("u0", "d0");
        for n in 1..REMEMBERED {
            chats.put(&format!("u{n}"), "d");
        }
        assert_eq!(chats.get("u0").as_deref(), Some("d0"));
        chats.put("u-new", "d-new");
        assert_eq!(chats.get("u0"), None, "a full cache starts over");
        assert_eq!(chats.get("u-new").as_deref(), Some("d-new"));
    }

    struct Opener(AtomicUsize);

    #[async_trait]
    impl DirectOpener for Opener {
        async fn open_direct(&self, user_id: &str) -> Result<String, ChannelError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            match user_id {
                "nobody" => Err(ChannelError::permanent("unknown user")),
                id => Ok(format!("dm-{id}")),
            }
        }
    }

    #[tokio::test]
    async fn a_persons_target_becomes_their_direct_chats_and_a_chat_stays_itself() {
        let opener = Opener(AtomicUsize::new(0));
        let chat = Target::chat("discord", "500", Some("600"));
        assert_eq!(resolve(&opener, &chat).await.unwrap(), chat);
        assert_eq!(
            opener.0.load(Ordering::SeqCst),
            0,
            "a chat needs no opening"
        );
        let person = Target::user("discord:42").unwrap();
        let resolved = resolve(&opener, &person).await.unwrap();
        assert_eq!(resolved, Target::chat("discord", "dm-42", None));
        assert!(!resolved.user);
        let nobody = Target::user("discord:nobody").unwrap();
        assert!(resolve(&opener, &nobody).await.is_err());
    }

    #[tokio::test]
    async fn get_or_open_asks_once_per_person_and_remembers_no_failure() {
        let chats = DirectChats::default();
        let opened = AtomicUsize::new(0);
        let open = |chat: &'static str| {
            opened.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ChannelError>(chat.to_string()) }
        };
        assert_eq!(chats.get_or_open("u1", open("d1")).await.unwrap(), "d1");
        assert_eq!(
            chats
                .get_or_open("u1", async { unreachable!() })
                .await
                .unwrap(),
            "d1"
        );
        assert_eq!(opened.load(Ordering::SeqCst), 1);
        let failed = chats
            .get_or_open("u2", async { Err(ChannelError::transient("down")) })
            .await;
        assert!(failed.is_err());
        assert_eq!(chats.get("u2"), None, "a failure is not remembered");
    }
}
