//! Discord end to end: the real `pincer run` binary against the fake Discord (REST and
//! gateway) and the fake model. Each test owns its fakes and its Pincer home.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Gateway, TestHome, pairing_code};
use pincer_fakes::discord::{FakeDiscord, Fault, Incoming, Stored, objects};
use pincer_fakes::{FakeModel, Step};

const WAIT: Duration = Duration::from_secs(20);
const OWNER: u64 = 42;

struct Setup {
    home: TestHome,
    model: FakeModel,
    discord: FakeDiscord,
}

async fn setup(extra_channel: &str) -> Setup {
    let model = FakeModel::start().await;
    let discord = FakeDiscord::start().await;
    let home = TestHome::new();
    home.write_config(&format!(
        "version = 1\n[agent]\nowners = [\"discord:{}\"]\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n\n[channels.discord]\nenabled = true\napi_url = \"{}\"\n{extra_channel}\n",
        objects::user_id(OWNER),
        model.openai_base(),
        discord.api_url()
    ));
    home.write_secrets(&format!(
        "channels:\n  discord:\n    bot_token: \"{}\"\n",
        discord.token()
    ));
    Setup {
        home,
        model,
        discord,
    }
}

impl Setup {
    /// Starts `pincer run` and waits until it is connected to the gateway.
    async fn start(&self) -> Gateway {
        let log = std::fs::File::create(self.home.path().join("gateway.log")).unwrap();
        let child = self
            .home
            .command(&["run"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start pincer run");
        let gateway = Gateway { child };
        assert!(
            self.discord.wait_connected(WAIT).await,
            "never connected: {}",
            self.log()
        );
        gateway
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.path().join("gateway.log")).unwrap_or_default()
    }

    /// Waits until a bot message in `channel` shows `needle`.
    async fn wait_for_text(&self, channel: u64, needle: &str) -> Stored {
        match self.discord.wait_for_bot_text(channel, needle, WAIT).await {
            Some(found) => found,
            None => panic!(
                "no bot message in {channel} shows {needle:?}; shown: {:#?}\nlog:\n{}",
                self.texts_in(channel),
                self.log()
            ),
        }
    }

    fn texts_in(&self, channel: u64) -> Vec<String> {
        self.discord
            .bot_messages()
            .into_iter()
            .filter(|m| m.channel == channel)
            .map(|m| m.content().to_string())
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_gets_a_pairing_code_and_the_owner_gets_the_reply() {
    let s = setup("").await;
    let _gateway = s.start().await;
    s.discord.inject(Incoming::dm(7, "hello, who are you?"));
    let reply = s
        .wait_for_text(objects::dm_channel(7), "pairing code")
        .await;
    let code = pairing_code(reply.content());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        s.model.requests().is_empty(),
        "a stranger's message must never reach the model"
    );
    let approve = s.home.run(&["pairing", "approve", "discord", &code]);
    assert!(approve.ok(), "{approve:?}");

    s.model.push(Step::text("Hello from Pincer over Discord"));
    s.discord.inject(Incoming::dm(OWNER, "hi there"));
    s.wait_for_text(objects::dm_channel(OWNER), "Hello from Pincer over Discord")
        .await;
    assert_eq!(s.model.requests()[0].last_user_text(), "hi there");
    assert!(
        s.discord.typing_in(objects::dm_channel(OWNER)) >= 1,
        "typing was shown during the turn"
    );
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    assert!(
        sessions.contains(&format!("discord:dm:{}", objects::dm_channel(OWNER))),
        "{sessions}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_guild_channel_the_bot_answers_only_when_mentioned() {
    let allowed = objects::text_channel(1);
    let s = setup(&format!(
        "group_policy = \"mention\"\ngroups = [\"{allowed}\"]"
    ))
    .await;
    let _gateway = s.start().await;
    s.discord
        .inject(Incoming::channel(1, 11, "we should pick a date"));
    s.discord
        .inject(Incoming::channel(2, 11, "not an allowed channel").mentioning_bot());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        s.model.requests().is_empty(),
        "unmentioned or disallowed messages reached the model"
    );
    assert!(s.texts_in(allowed).is_empty());
    s.discord
        .inject(Incoming::channel(1, 12, "what do you think?").mentioning_bot());
    s.wait_for_text(allowed, "echo:").await;
    let requests = s.model.requests();
    assert_eq!(requests.len(), 1);
    let seen = requests[0].last_user_text();
    assert!(
        seen.contains("we should pick a date"),
        "context kept: {seen}"
    );
    assert!(
        seen.contains("@pincer_test_bot what do you think?"),
        "{seen}"
    );
    assert!(s.texts_in(objects::text_channel(2)).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_is_its_own_session_and_its_reply_stays_in_it() {
    let s = setup("groups = [\"*\"]").await;
    let _gateway = s.start().await;
    s.discord
        .inject(Incoming::thread(1, OWNER, "in the thread").mentioning_bot());
    let reply = s
        .wait_for_text(objects::thread_channel(1), "in the thread")
        .await;
    assert_eq!(reply.channel, objects::thread_channel(1));
    assert!(s.texts_in(objects::text_channel(1)).is_empty());
    let sessions = s.home.run(&["sessions", "list"]).stdout;
    let key = format!(
        "discord:group:{}:thread:{}",
        objects::text_channel(1),
        objects::thread_channel(1)
    );
    assert!(sessions.contains(&key), "{sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_arrives_in_ordered_chunks_within_2000_characters() {
    let s = setup("").await;
    let mut long = String::new();
    for n in 0..8 {
        long.push_str(&format!(
            "Section {n}: {}\n\n",
            "words that fill the paragraph ".repeat(10)
        ));
        long.push_str(&format!(
            "```rust\n{}```\n\n",
            format!("let x{n} = {n}; // a line of code\n").repeat(12)
        ));
    }
    assert!(long.chars().count() > 5000);
    s.model.push(Step::text(long));
    let _gateway = s.start().await;
    let dm = objects::dm_channel(OWNER);
    s.discord.inject(Incoming::dm(OWNER, "write a lot"));
    s.wait_for_text(dm, "Section 7").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let texts = s.texts_in(dm);
    assert!(texts.len() >= 3, "{} chunks", texts.len());
    for text in &texts {
        assert!(text.chars().count() <= 2000, "{}", text.chars().count());
        assert_eq!(
            text.matches("```").count() % 2,
            0,
            "unbalanced fence: {text}"
        );
    }
    let positions: Vec<usize> = (0..8)
        .map(|n| {
            texts
                .iter()
                .position(|t| t.contains(&format!("Section {n}:")))
                .unwrap()
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] <= w[1]), "{positions:?}");
    assert!(
        s.discord
            .calls_of("create_message")
            .iter()
            .all(|c| c.body["content"].as_str().unwrap_or("").chars().count() <= 2000),
        "nothing over the limit was even tried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reply_streams_by_editing_one_message() {
    let s = setup("").await;
    s.model.push(Step::slow_text(
        "one two three four five six seven eight nine ten eleven twelve",
        250,
    ));
    let _gateway = s.start().await;
    let dm = objects::dm_channel(OWNER);
    s.discord.inject(Incoming::dm(OWNER, "count slowly"));
    let reply = s.wait_for_text(dm, "twelve").await;
    assert!(reply.edits >= 2, "not streamed: {} edits", reply.edits);
    assert_eq!(s.texts_in(dm).len(), 1, "one message, edited in place");
    let edits = s.discord.calls_of("edit_message");
    assert!(
        edits.iter().any(|c| c.body["content"]
            .as_str()
            .is_some_and(|t| t.contains("one") && !t.contains("twelve"))),
        "a partial text was shown while streaming"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_gateway_resumes_without_losing_or_repeating_a_message() {
    let s = setup("").await;
    let _gateway = s.start().await;
    let dm = objects::dm_channel(OWNER);
    s.discord.inject(Incoming::dm(OWNER, "before"));
    s.wait_for_text(dm, "echo: before").await;
    s.discord.drop_socket();
    s.discord.inject(Incoming::dm(OWNER, "during"));
    s.wait_for_text(dm, "echo: during").await;
    s.discord.inject(Incoming::dm(OWNER, "after"));
    s.wait_for_text(dm, "echo: after").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let texts = s.texts_in(dm);
    for word in ["before", "during", "after"] {
        let n = texts
            .iter()
            .filter(|t| t.contains(&format!("echo: {word}")))
            .count();
        assert_eq!(n, 1, "`{word}` answered {n} times: {texts:?}");
    }
    assert_eq!(s.model.requests().len(), 3);
    assert!(s.discord.resumes() >= 1, "the session was resumed");
    assert_eq!(s.discord.identifies(), 1, "never re-identified");
    assert!(s.log().contains("resumed"), "{}", s.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_waited_out_for_retry_after() {
    let s = setup("").await;
    s.model.push(Step::text("after the wait"));
    let _gateway = s.start().await;
    for route in ["create_message", "edit_message"] {
        s.discord
            .fail_next(route, Fault::TooManyRequests { retry_after: 1.2 });
    }
    let sent_at = Instant::now();
    s.discord.inject(Incoming::dm(OWNER, "go"));
    s.wait_for_text(objects::dm_channel(OWNER), "after the wait")
        .await;
    assert!(
        sent_at.elapsed() >= Duration::from_millis(1200),
        "retry_after was not honoured"
    );
    let creates = s.discord.calls_of("create_message");
    let gap = creates[1].at.duration_since(creates[0].at);
    assert!(gap >= Duration::from_millis(1100), "retried after {gap:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_shows_as_down_in_status_and_the_gateway_keeps_running() {
    let s = setup("").await;
    s.discord.revoke_token(true);
    let log = std::fs::File::create(s.home.path().join("gateway.log")).unwrap();
    let mut gateway = Gateway {
        child: s
            .home
            .command(&["run"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    };
    let deadline = Instant::now() + WAIT;
    loop {
        let status = s.home.run(&["status"]).stdout;
        if status.contains("down: Discord rejected the bot token") {
            assert!(status.contains("DISCORD_BOT_TOKEN"), "{status}");
            assert!(status.contains("Gateway: running"), "{status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "status never showed the bad token: {status}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        gateway.child.try_wait().unwrap().is_none(),
        "a bad token must not crash the gateway"
    );
    assert!(!s.log().contains(s.discord.token()), "the token was logged");
}
