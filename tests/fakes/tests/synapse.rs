//! The Synapse harness proved against the real Synapse: people, rooms, sync, media,
//! the proxy's cut and stall, a restart, and `MatrixPlatform`'s reading of what a bot
//! shows (played here by a test logged in as the bot).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use pincer_fakes::platform::FakePlatform;
use pincer_fakes::synapse::{Homeserver, MatrixPlatform, Proxy};
use pincer_fakes::wait_until;

fn bodies(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e["content"]["body"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn two_people_talk_in_a_dm_and_each_sees_the_other() {
    let server = Homeserver::shared().await;
    let ann = server.register("ann", false).await;
    let bob = server.register("bob", false).await;
    assert_ne!(ann.user_id(), bob.user_id());
    bob.accept_invites();
    let room = ann.create_dm(bob.user_id()).await;
    wait_until("bob joining the DM", async || {
        ann.joined_members(&room)
            .await
            .iter()
            .any(|m| m == bob.user_id())
    })
    .await;
    let sent = ann.send_text(&room, "hello bob", &[bob.user_id()]).await;
    wait_until("bob seeing ann's message", async || {
        bob.events(&room)
            .iter()
            .any(|e| e["event_id"] == sent.as_str())
    })
    .await;
    let seen = bob.events(&room);
    let message = seen
        .iter()
        .find(|e| e["event_id"] == sent.as_str())
        .expect("seen");
    assert_eq!(
        message["content"]["m.mentions"]["user_ids"][0],
        bob.user_id()
    );
    let body = message["content"]["body"].as_str().expect("a body");
    assert!(
        body.contains(bob.user_id()) && body.ends_with("hello bob"),
        "{body}"
    );

    let reply = bob.send_reply(&room, &sent, "hi ann").await;
    ann.start_sync();
    wait_until("ann seeing bob's reply", async || {
        ann.events(&room)
            .iter()
            .any(|e| e["event_id"] == reply.as_str())
    })
    .await;
}

#[tokio::test]
async fn media_goes_up_and_comes_back_the_same() {
    let server = Homeserver::shared().await;
    let ann = server.register("ann", false).await;
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend_from_slice(&3u32.to_be_bytes());
    png.extend_from_slice(&2u32.to_be_bytes());
    png.extend_from_slice(&[7; 64]);
    let mxc = ann.upload(&png, "image/png").await;
    assert!(mxc.starts_with("mxc://localhost/"), "{mxc}");
    assert_eq!(ann.download(&mxc).await, png);

    let room = ann.create_room(&[]).await;
    let image = ann.send_image(&room, &png).await;
    let events = ann.messages(&room).await;
    let sent = events
        .iter()
        .find(|e| e["event_id"] == image.as_str())
        .expect("in history");
    let info = &sent["content"]["info"];
    assert_eq!((info["w"].as_u64(), info["h"].as_u64()), (Some(3), Some(2)));
    assert_eq!(info["size"].as_u64(), Some(png.len() as u64));
    let url = sent["content"]["url"].as_str().expect("a url");
    assert_eq!(ann.download(url).await, png);

    // A voice note: one Ogg page whose granule position says 2 s at 48 kHz.
    let mut ogg = b"OggS\0\x04".to_vec();
    ogg.extend_from_slice(&96_000u64.to_le_bytes());
    ogg.extend_from_slice(&[0; 32]);
    let voice = ann.send_voice(&room, &ogg).await;
    let events = ann.messages(&room).await;
    let sent = events
        .iter()
        .find(|e| e["event_id"] == voice.as_str())
        .expect("in history");
    let content = &sent["content"];
    assert_eq!(content["msgtype"], "m.audio");
    assert!(content["org.matrix.msc3245.voice"].is_object(), "{content}");
    assert_eq!(content["org.matrix.msc1767.audio"]["duration"], 2000);
    let url = content["url"].as_str().expect("a url");
    assert_eq!(ann.download(url).await, ogg);
}

#[tokio::test]
async fn the_proxy_refuses_during_an_outage_then_serves_again() {
    let server = Homeserver::shared().await;
    let proxy = Proxy::start(server.port()).await;
    let client = reqwest::Client::new();
    let versions = format!("{}/_matrix/client/versions", proxy.url());
    let answer = client.get(&versions).send().await.expect("served");
    assert!(answer.status().is_success());
    proxy.disconnect(Duration::from_secs(2));
    let refused = reqwest::Client::new().get(&versions).send().await;
    assert!(
        refused.as_ref().is_err_and(|e| e.is_connect()),
        "{refused:?}"
    );
    wait_until("the proxy serving again", async || {
        let fresh = reqwest::Client::new();
        fresh
            .get(&versions)
            .send()
            .await
            .is_ok_and(|a| a.status().is_success())
    })
    .await;
}

/// A client that logs in through the proxy stays behind it: Synapse's login answer names
/// no other address (`well_known`, which the SDK would move to, past every cut and stall).
/// And the proxy notes when a watched text passes each way.
#[tokio::test]
async fn a_login_through_the_proxy_stays_behind_it_and_watched_text_is_seen() {
    let server = Homeserver::shared().await;
    let platform = MatrixPlatform::start_on(server).await;
    let proxy = platform.proxy();
    let password = platform.bot_password().to_owned();
    proxy.watch(&password);
    let login: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/_matrix/client/v3/login", proxy.url()))
        .json(&serde_json::json!({
            "type": "m.login.password",
            "identifier": { "type": "m.id.user", "user": platform.bot() },
            "password": password,
        }))
        .send()
        .await
        .expect("login through the proxy")
        .json()
        .await
        .expect("json");
    assert!(login["access_token"].is_string(), "{login}");
    assert!(
        login.get("well_known").is_none(),
        "Synapse sends the bot elsewhere: {login}"
    );
    let (to_bot, from_bot) = proxy.seen(&password);
    assert!(
        from_bot.is_some() && to_bot.is_none(),
        "{to_bot:?} {from_bot:?}"
    );
    let user = login["user_id"].as_str().expect("a user id").to_owned();
    proxy.watch(&user);
    let (to_bot, _) = proxy.seen(&user);
    assert!(to_bot.is_none(), "only what passes after watch() counts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_silences_connections_until_the_client_gives_one_up() {
    let server = Homeserver::shared().await;
    let proxy = Proxy::start(server.port()).await;
    let addr = proxy.url().trim_start_matches("http://").to_owned();
    let request =
        b"GET /_matrix/client/versions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    proxy.stall();
    assert_eq!(proxy.stalled(), 0, "no connection was open to stall");
    let given_up = tokio::task::spawn_blocking({
        let addr = addr.clone();
        move || TcpStream::connect(addr).expect("accepted while stalled")
    })
    .await
    .expect("connected");
    wait_until("the stall catching the next connection", async || {
        proxy.stalled() == 1
    })
    .await;
    let mut silent = TcpStream::connect(&addr).expect("accepted while stalled");
    silent.write_all(request).expect("sent");
    wait_until("both connections accepted", async || {
        proxy.connections() == 2
    })
    .await;
    silent
        .set_read_timeout(Some(pincer_fakes::PATIENCE))
        .expect("a read timeout");
    // The client gives up on the first silent connection: the stall ends, the other
    // silent one is closed having answered nothing, and new ones are served.
    drop(given_up);
    let mut answer = Vec::new();
    let read = tokio::task::spawn_blocking(move || silent.read_to_end(&mut answer).map(|_| answer))
        .await
        .expect("read");
    let answer = read.expect("closed, not timed out");
    assert!(
        answer.is_empty(),
        "a silent connection answered: {}",
        String::from_utf8_lossy(&answer)
    );
    let served = reqwest::Client::new()
        .get(format!("{}/_matrix/client/versions", proxy.url()))
        .send()
        .await
        .expect("served after the stall");
    assert!(served.status().is_success());
    assert_eq!(proxy.stalled(), 1);
}

#[tokio::test]
async fn a_restart_keeps_users_rooms_and_messages() {
    let server = Homeserver::start_own().await;
    let ann = server.register("ann", true).await;
    let room = ann.create_room(&[]).await;
    ann.send_text(&room, "before the restart", &[]).await;
    let started = std::time::Instant::now();
    server.restart().await;
    eprintln!("Synapse restarted in {:?}", started.elapsed());
    assert!(bodies(&ann.messages(&room).await).contains(&"before the restart".to_owned()));
    ann.send_text(&room, "after the restart", &[]).await;
    let after = bodies(&ann.messages(&room).await);
    assert!(
        after.ends_with(&["after the restart".to_owned()]),
        "{after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_platform_reads_edits_buttons_typing_and_presses() {
    let platform = MatrixPlatform::start().await;
    let bot = platform
        .server()
        .login(platform.bot(), platform.bot_password())
        .await;
    bot.accept_invites();
    assert!(
        platform.connected(pincer_fakes::PATIENCE).await,
        "the bot never joined"
    );
    assert!(
        platform
            .config()
            .contains(&format!("user_id = \"{}\"", platform.bot()))
    );

    let chat = platform.dm(1, "hello bot").await;
    bot.set_typing(&chat, true).await;
    let question = bot.send_text(&chat, "Allow write_file?", &[]).await;
    for key in ["👍", "✅", "❌"] {
        bot.react(&chat, &question, key).await;
    }
    wait_until("the question with its buttons shown", async || {
        platform
            .shown()
            .iter()
            .any(|m| m.id == question && m.buttons)
    })
    .await;
    assert!(
        platform.typing(&chat).unwrap_or(0) >= 1,
        "typing never seen"
    );

    // The bot answers a press by editing the question and taking its buttons back.
    let answering = async {
        wait_until("the press reaching the bot", async || {
            bot.events(&chat)
                .iter()
                .any(|e| e["type"] == "m.reaction" && e["sender"] == platform.user_id(1).as_str())
        })
        .await;
        bot.edit(&chat, &question, "Allowed once").await;
        for event in bot.events(&chat) {
            if event["type"] == "m.reaction" && event["sender"] == bot.user_id() {
                bot.redact(&chat, event["event_id"].as_str().expect("an id"))
                    .await;
            }
        }
    };
    let (pressed, ()) = tokio::join!(platform.press(&chat, 1, "once"), answering);
    assert!(pressed);
    wait_until("the settled question shown", async || {
        platform
            .shown()
            .iter()
            .any(|m| m.id == question && m.text == "Allowed once" && m.edits == 1 && !m.buttons)
    })
    .await;
    assert!(
        !platform.press(&chat, 1, "once").await,
        "pressed a settled question"
    );
    assert_eq!(platform.shown().len(), 1, "{:#?}", platform.shown());
}

/// What the bot says in a DM it opens reaches the person even when said before they
/// joined (the conformance case of a message to a user id), and `direct_chat` finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_the_bot_opens_is_found_with_what_it_said_before_the_join() {
    let platform = MatrixPlatform::start().await;
    let bot = platform
        .server()
        .login(platform.bot(), platform.bot_password())
        .await;
    let owner = platform.person(42).await;
    assert_eq!(
        platform.canonical(42),
        format!("matrix:{}", owner.user_id())
    );
    let room = bot.create_dm(owner.user_id()).await;
    bot.send_message(
        &room,
        serde_json::json!({"msgtype": "m.notice", "body": "A note for you."}),
    )
    .await;
    wait_until("the owner seeing the bot's note", async || {
        platform.direct_chat(42).as_deref() == Some(room.as_str())
            && platform.shown().iter().any(|m| m.text == "A note for you.")
    })
    .await;
}
