//! `MatrixPlatform`: `FakePlatform` for the conformance suite, backed by the real
//! Synapse (`Homeserver::shared`). The bot is a user registered with a password, which
//! Pincer logs in with through the proxy (`Proxy`); test users are small numbers mapped
//! to registered people (`@{prefix}-u{n}:localhost`, registered on first use), who talk
//! to Synapse directly and accept every invite.
//!
//! What the bot shows is read from the people's sync loops (`shown`); a room only the
//! bot is in is invisible here.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use super::home::{Homeserver, serial};
use super::person::{Person, in_thread, text_content};
use super::proxy::Proxy;
use super::{config, shown};
use crate::PATIENCE;
use crate::platform::{FakePlatform, Shown};

/// Between two looks while waiting for the bot.
const POLL: Duration = Duration::from_millis(50);

/// The reaction each approval choice is pressed with (the bot offers them as its own
/// reactions on the question).
pub const CHOICES: [(&str, &str); 3] = [("once", "👍"), ("always", "✅"), ("deny", "❌")];

/// A group chat made by the first user who wrote in it.
struct Group {
    room: String,
    creator: u64,
    members: HashSet<u64>,
}

#[derive(Default)]
struct Rooms {
    dms: HashMap<u64, String>,
    groups: HashMap<u64, Group>,
}

pub struct MatrixPlatform {
    server: &'static Homeserver,
    /// What the bot's `homeserver` points at: cut by `disconnect`, silenced by `stall`.
    proxy: Proxy,
    /// Makes this platform's user names unique on the shared Synapse.
    prefix: String,
    bot: String,
    bot_password: String,
    /// The account's recovery key, given to the bot in `.security.yml` when set.
    recovery_key: Mutex<Option<String>>,
    /// Invites the bot to check it is listening (`connected`); not one of the users.
    probe: Person,
    people: Mutex<HashMap<u64, Person>>,
    /// Held while a room is set up, so two calls never make the same room twice.
    rooms: tokio::sync::Mutex<Rooms>,
}

impl MatrixPlatform {
    /// Register a bot (with a password) and a probe on the shared Synapse, and start the
    /// proxy the bot is pointed at.
    pub async fn start() -> MatrixPlatform {
        MatrixPlatform::start_on(Homeserver::shared().await).await
    }

    /// The same on `server` (a test's own, which it may restart).
    pub async fn start_on(server: &'static Homeserver) -> MatrixPlatform {
        let prefix = format!("p{}", serial());
        let bot_password = config::random_hex::<12>().expect("random bytes from /dev/urandom");
        let bot = server
            .register_exact(&format!("{prefix}-bot"), &bot_password, false)
            .await;
        let probe = server.register(&format!("{prefix}-probe"), false).await;
        MatrixPlatform {
            proxy: Proxy::start(server.port()).await,
            server,
            prefix,
            bot: bot.user_id().to_owned(),
            bot_password,
            recovery_key: Mutex::new(None),
            probe,
            people: Mutex::new(HashMap::new()),
            rooms: tokio::sync::Mutex::new(Rooms::default()),
        }
    }

    /// The bot's user id.
    pub fn bot(&self) -> &str {
        &self.bot
    }

    pub fn bot_password(&self) -> &str {
        &self.bot_password
    }

    /// Give the bot the account's recovery key (`channels.matrix.recovery_key`).
    pub fn set_recovery_key(&self, key: &str) {
        *self.recovery_key.lock().unwrap_or_else(|e| e.into_inner()) = Some(key.to_owned());
    }

    /// The proxy between the bot and Synapse.
    pub fn proxy(&self) -> &Proxy {
        &self.proxy
    }

    /// The proxy's URL, where the bot finds its homeserver.
    pub fn homeserver_url(&self) -> String {
        self.proxy.url()
    }

    pub fn server(&self) -> &'static Homeserver {
        self.server
    }

    /// `@{prefix}-u{user}:localhost`, registered or not.
    pub fn user_id(&self, user: u64) -> String {
        format!("@{}-u{user}:localhost", self.prefix)
    }

    /// The person playing `user`, registered (and syncing) on first use.
    pub async fn person(&self, user: u64) -> Person {
        if let Some(person) = self.lock_people().get(&user) {
            return person.clone();
        }
        let password = config::random_hex::<12>().expect("random bytes from /dev/urandom");
        let person = self
            .server
            .register_exact(&format!("{}-u{user}", self.prefix), &password, false)
            .await;
        person.accept_invites();
        self.lock_people().entry(user).or_insert(person).clone()
    }

    /// A room other than the ones this platform made in which `user` has seen the bot
    /// speak: the direct chat the bot opened with them.
    pub fn direct_chat(&self, user: u64) -> Option<String> {
        let person = self.lock_people().get(&user)?.clone();
        let ours: HashSet<String> = self
            .rooms
            .try_lock()
            .map(|r| {
                r.dms
                    .values()
                    .chain(r.groups.values().map(|g| &g.room))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        person
            .seen_everywhere()
            .into_iter()
            .filter(|(room, s)| !ours.contains(room) && s.event["sender"] == self.bot.as_str())
            .min_by_key(|(_, s)| s.seq)
            .map(|(room, _)| room)
    }

    fn lock_people(&self) -> MutexGuard<'_, HashMap<u64, Person>> {
        self.people.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn bot_in(&self, person: &Person, room: &str) -> bool {
        person.joined_members(room).await.contains(&self.bot)
    }

    /// Wait (`PATIENCE`) until the bot has joined `room`.
    async fn wait_bot_joined(&self, person: &Person, room: &str) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !self.bot_in(person, room).await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "after {PATIENCE:?} the bot {} had not joined {room} (does it accept invites?)",
                self.bot
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Group `group`'s room with `user` in it (made by them if it is new).
    async fn group_room(&self, group: u64, user: u64) -> String {
        let person = self.person(user).await;
        let mut rooms = self.rooms.lock().await;
        let entry = match rooms.groups.entry(group) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(slot) => {
                let room = person.create_room(&[self.bot.as_str()]).await;
                self.wait_bot_joined(&person, &room).await;
                let members = HashSet::from([user]);
                slot.insert(Group {
                    room,
                    creator: user,
                    members,
                })
            }
        };
        if entry.members.insert(user) {
            let creator = self.person(entry.creator).await;
            creator.invite(&entry.room, person.user_id()).await;
            person.join(&entry.room).await;
        }
        entry.room.clone()
    }

    /// Any of this platform's people joined to `room`, to invite others in.
    async fn member_of(&self, room: &str) -> Option<Person> {
        let people: Vec<Person> = self.lock_people().values().cloned().collect();
        for person in people {
            if person.rooms().iter().any(|r| r == room) {
                let members = person.joined_members(room).await;
                if members.iter().any(|m| m == person.user_id()) {
                    return Some(person);
                }
            }
        }
        None
    }

    /// The bot's `m.notice`s replying to `question`.
    fn answers_to(&self, chat: &str, question: &str) -> usize {
        let people: Vec<Person> = self.lock_people().values().cloned().collect();
        let mut ids = HashSet::new();
        for person in people {
            for event in person.events(chat) {
                let content = &event["content"];
                if event["sender"] == self.bot.as_str()
                    && content["msgtype"] == "m.notice"
                    && content["m.relates_to"]["m.in_reply_to"]["event_id"] == question
                {
                    ids.insert(event["event_id"].to_string());
                }
            }
        }
        ids.len()
    }
}

#[async_trait]
impl FakePlatform for MatrixPlatform {
    fn name(&self) -> &'static str {
        "matrix"
    }

    fn config(&self) -> String {
        format!(
            "homeserver = \"{}\"\nuser_id = \"{}\"\n",
            self.proxy.url(),
            self.bot
        )
    }

    fn secrets(&self) -> String {
        let mut secrets = format!("  matrix:\n    password: \"{}\"\n", self.bot_password);
        if let Some(key) = &*self.recovery_key.lock().unwrap_or_else(|e| e.into_inner()) {
            secrets += &format!("    recovery_key: \"{key}\"\n");
        }
        secrets
    }

    fn limit(&self) -> usize {
        6000
    }

    fn canonical(&self, user: u64) -> String {
        format!("matrix:{}", self.user_id(user))
    }

    async fn connected(&self, timeout: Duration) -> bool {
        let room = self.probe.create_dm(&self.bot).await;
        let joined = tokio::time::timeout(timeout, async {
            while !self.bot_in(&self.probe, &room).await {
                tokio::time::sleep(POLL).await;
            }
        })
        .await
        .is_ok();
        self.probe.leave(&room).await;
        joined
    }

    async fn dm(&self, user: u64, text: &str) -> String {
        let person = self.person(user).await;
        let room = {
            let mut rooms = self.rooms.lock().await;
            match rooms.dms.get(&user) {
                Some(room) => room.clone(),
                None => {
                    let room = person.create_dm(&self.bot).await;
                    self.wait_bot_joined(&person, &room).await;
                    rooms.dms.insert(user, room.clone());
                    room
                }
            }
        };
        person.send_text(&room, text, &[]).await;
        room
    }

    async fn group(&self, group: u64, user: u64, text: &str, mention: bool) -> String {
        let room = self.group_room(group, user).await;
        let mentions: &[&str] = if mention { &[self.bot.as_str()] } else { &[] };
        self.person(user)
            .await
            .send_text(&room, text, mentions)
            .await;
        room
    }

    async fn thread(&self, group: u64, user: u64, text: &str) -> Option<(String, String)> {
        let room = self.group_room(group, user).await;
        let person = self.person(user).await;
        let root = person.send_text(&room, "a thread starts here", &[]).await;
        let content = in_thread(text_content(text, &[self.bot.as_str()]), &root);
        person.send_message(&room, content).await;
        Some((room, root))
    }

    fn shown(&self) -> Vec<Shown> {
        let people: Vec<Person> = self.lock_people().values().cloned().collect();
        let seen = people.iter().flat_map(Person::seen_everywhere).collect();
        shown::read(&self.bot, seen)
    }

    fn typing(&self, chat: &str) -> Option<usize> {
        let people: Vec<Person> = self.lock_people().values().cloned().collect();
        let count = people
            .iter()
            .map(|p| {
                p.typing(chat)
                    .iter()
                    .filter(|ids| ids.contains(&self.bot))
                    .count()
            })
            .max()
            .unwrap_or(0);
        Some(count)
    }

    async fn disconnect(&self, outage: Duration) {
        self.proxy.disconnect(outage);
    }

    fn stall(&self) {
        self.proxy.stall();
    }

    fn stalled(&self) -> usize {
        self.proxy.stalled()
    }

    async fn press(&self, chat: &str, user: u64, choice: &str) -> bool {
        let Some(key) = CHOICES.iter().find(|(c, _)| *c == choice).map(|(_, k)| *k) else {
            panic!("no approval choice `{choice}` (once, always, deny)");
        };
        let Some(question) = self
            .shown()
            .into_iter()
            .rfind(|m| m.chat == chat && m.buttons)
        else {
            return false;
        };
        let person = self.person(user).await;
        // Only members can react: someone already in the chat lets them in (a person
        // outside it may not even list its members).
        let host = self
            .member_of(chat)
            .await
            .unwrap_or_else(|| panic!("none of the test's people is in {chat}"));
        if !host
            .joined_members(chat)
            .await
            .iter()
            .any(|m| m == person.user_id())
        {
            host.invite(chat, person.user_id()).await;
            person.join(chat).await;
        }
        let answered = self.answers_to(chat, &question.id);
        person.react(chat, &question.id, key).await;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let edited = self
                .shown()
                .into_iter()
                .any(|m| m.id == question.id && m.edits > question.edits);
            if edited || self.answers_to(chat, &question.id) > answered {
                return true;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "after {PATIENCE:?} the bot had not answered the press of {key} on {}",
                question.id
            );
            tokio::time::sleep(POLL).await;
        }
    }
}
