//! Matrix beyond the conformance suite, through `pincer run` against a real Synapse: a
//! picture and a voice note reach the model, an approval answered by a typed reply, a
//! file the assistant sends arrives in the room, and a homeserver restart in the middle
//! of a conversation loses nothing and answers nothing twice; and an encrypted direct
//! chat with a real end-to-end-encrypting client (matrix-sdk) works, and the recovery key
//! makes the bot's device verified; typing never wakes the bot's sync; a flood of
//! invites is declined past `invites_per_hour`; more messages than one sync holds,
//! sent while the bot was away, all reach the model.

use pincer_fakes::Step;
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::synapse::{Homeserver, MatrixPlatform};
use serde_json::json;

use crate::common::platform::{self, owners};
use crate::common::{PATIENCE, wait_for_within};
use crate::conformance::{Harness, OWNER};

/// A small PNG: a 4×3 gradient.
fn png() -> Vec<u8> {
    let picture =
        image::RgbImage::from_fn(4, 3, |x, y| image::Rgb([x as u8 * 60, y as u8 * 80, 9]));
    let mut out = std::io::Cursor::new(Vec::new());
    picture
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("encode png");
    out.into_inner()
}

async fn synapse() -> MatrixPlatform {
    let platform = MatrixPlatform::start().await;
    platform.person(OWNER).await;
    platform
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_and_a_voice_note_reach_the_model() {
    let transcription = "[transcription]\nprovider = \"fake\"\nmodel = \"whisper-1\"\n";
    let h = Harness::start(synapse().await, "", transcription).await;
    h.model.set_transcript("water the basil", 3.0);
    let chat = h.round_trip(OWNER, "hello").await;
    let owner = h.platform.person(OWNER).await;
    let picture = png();
    owner.send_image(&chat, &picture).await;
    h.wait_shown(&chat, "echo: ").await;
    let saved = crate::common::wait_for(
        async || {
            let dir = h.home.workspace().join("inbox").join("matrix");
            std::fs::read_dir(&dir).ok()?.flatten().find_map(|entry| {
                let bytes = std::fs::read(entry.path()).ok()?;
                (bytes == picture).then_some(entry.path())
            })
        },
        || {
            format!(
                "the picture never reached the inbox; gateway log:\n{}",
                h.log()
            )
        },
    )
    .await;
    assert!(saved.starts_with(h.home.workspace()), "{saved:?}");

    let mut ogg = b"OggS\0\x02".to_vec();
    ogg.resize(2048, 7);
    let url = owner.upload(&ogg, "audio/ogg").await;
    owner
        .send_message(
            &chat,
            json!({
                "msgtype": "m.audio", "body": "Voice message", "url": url,
                "info": {"mimetype": "audio/ogg", "size": 2048, "duration": 1000},
                "org.matrix.msc3245.voice": {},
            }),
        )
        .await;
    crate::common::wait_for(
        async || {
            h.model
                .requests()
                .iter()
                .any(|r| r.last_user_text().contains("water the basil"))
                .then_some(())
        },
        || {
            format!(
                "the voice note was not transcribed; gateway log:\n{}",
                h.log()
            )
        },
    )
    .await;
    let heard = h
        .model
        .wait_for_transcriptions(1, crate::common::PATIENCE)
        .await;
    assert_eq!(heard[0].size, 2048, "the whole recording is sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_answered_by_a_reply_and_a_file_goes_out() {
    let h = Harness::start(
        synapse().await,
        "",
        "[tools.permissions]\nask = [\"write_file\"]\napproval_timeout_secs = 30\n",
    )
    .await;
    std::fs::write(h.home.workspace().join("plan.txt"), "the plan").expect("a file to send");
    h.model.push_all([
        Step::tool_call("write_file", json!({"path": "ok.md", "content": "yes"})),
        Step::tool_call("send_file", json!({"path": "plan.txt"})),
        Step::text("Saved and sent."),
    ]);
    let chat = h.platform.dm(OWNER, "save it").await;
    let question = h.wait_shown(&chat, "Allow write_file `ok.md`?").await;
    let owner = h.platform.person(OWNER).await;
    owner.send_reply(&chat, &question.id, "1").await;
    h.wait_shown(&chat, "Saved and sent.").await;
    assert!(
        h.home.workspace().join("ok.md").exists(),
        "the reply did not approve"
    );
    let settled = h.wait_shown(&chat, "Allowed once").await;
    assert_eq!(settled.id, question.id);
    // The file arrived as an m.file the person can download.
    let file = owner
        .events(&chat)
        .into_iter()
        .find(|e| e["content"]["msgtype"] == "m.file")
        .unwrap_or_else(|| panic!("no m.file in the room: {:#?}", owner.events(&chat)));
    let url = file["content"]["url"]
        .as_str()
        .expect("an unencrypted room's file has a url");
    assert_eq!(owner.download(url).await, b"the plan");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_homeserver_restart_mid_conversation_loses_nothing() {
    // A Synapse of this test's own, to restart.
    let server: &'static Homeserver = Box::leak(Box::new(Homeserver::start_own().await));
    let h = Harness::start(MatrixPlatform::start_on(server).await, "", "").await;
    let chat = h.round_trip(OWNER, "before").await;
    // A reply still streaming when the homeserver goes down.
    h.model.push(Step::slow_text(
        "one two three four five six seven eight",
        150,
    ));
    h.platform.dm(OWNER, "during").await;
    server.restart().await;
    h.wait_shown(&chat, "eight").await;
    h.round_trip(OWNER, "after").await;
    // A message delivered twice would be answered twice before this one is.
    h.round_trip(OWNER, "last").await;
    let texts = h.texts_in(&chat);
    for word in ["before", "after", "last"] {
        let n = texts
            .iter()
            .filter(|t| t.contains(&format!("echo: {word}")))
            .count();
        assert_eq!(n, 1, "`{word}` answered {n} times: {texts:?}");
    }
    let eights = texts.iter().filter(|t| t.contains("eight")).count();
    assert_eq!(eights, 1, "the streamed reply: {texts:?}");
    assert_eq!(h.model.requests().len(), 4, "{texts:?}");
}

/// While the gateway is stopped the owner writes more messages than one sync holds
/// (100 a room): the sync that follows is limited, and the gap is fetched back, so every
/// message reaches the model, and the one answered before the stop is not answered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_longer_than_a_sync_is_fetched_back() {
    let matrix = synapse().await;
    let owner_line = owners(&matrix, &[OWNER]);
    let setup = platform::setup(matrix, "", &owner_line).await;
    let gateway = setup.start_connected().await;
    let chat = setup.round_trip(OWNER, "before").await;
    drop(gateway);
    let owner = setup.platform.person(OWNER).await;
    const AWAY: usize = 130;
    for i in 0..AWAY {
        owner.send_text(&chat, &format!("away-{i:03}"), &[]).await;
    }
    let _gateway = setup.start_connected().await;
    let missing = || -> Vec<usize> {
        let asked: String = setup
            .model
            .requests()
            .iter()
            .map(|r| r.body.to_string())
            .collect();
        (0..AWAY)
            .filter(|i| !asked.contains(&format!("away-{i:03}")))
            .collect()
    };
    // 130 messages stored, then answered turn by turn: more than one PATIENCE on a
    // busy machine.
    wait_for_within(
        PATIENCE * 3,
        async || missing().is_empty().then_some(()),
        || {
            let missing = missing();
            format!(
                "{} of {AWAY} messages never reached the model ({:?}…); gateway log:\n{}",
                missing.len(),
                &missing[..missing.len().min(5)],
                setup.log()
            )
        },
    )
    .await;
    assert!(
        setup.log().contains("events a sync left out"),
        "the sync was not limited, so no gap was tested"
    );
    let befores = setup
        .texts_in(&chat)
        .iter()
        .filter(|t| t.contains("echo: before"))
        .count();
    assert_eq!(befores, 1, "`before` answered {befores} times");
}

/// A person on a real end-to-end-encrypting client (matrix-sdk, with its own device and
/// keys) opens an encrypted direct chat with the bot: the bot reads the message, the
/// model sees it, the encrypted reply decrypts on the person's side, and the homeserver
/// holds only ciphertext. `pincer doctor` then reports the login and the device.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_direct_chat_with_a_real_client_works() {
    use matrix_sdk::config::SyncSettings;
    use matrix_sdk::ruma::UserId;
    use matrix_sdk::ruma::events::room::member::MembershipState;
    use matrix_sdk::ruma::events::room::message::{
        OriginalSyncRoomMessageEvent, RoomMessageEventContent,
    };

    let platform = MatrixPlatform::start().await;
    // The owner is this test's SDK client, with a password it knows.
    let owner_id = platform.user_id(OWNER);
    let local = owner_id
        .trim_start_matches('@')
        .split(':')
        .next()
        .unwrap_or_default();
    let password = "owner-password-for-e2ee";
    platform
        .server()
        .register_exact(local, password, false)
        .await;
    let h = Harness::start(platform, "", "").await;

    let store = tempfile::tempdir().expect("a store for the client");
    let client = matrix_sdk::Client::builder()
        .homeserver_url(h.platform.server().url())
        .sqlite_store(store.path(), None)
        .build()
        .await
        .expect("the SDK client");
    client
        .matrix_auth()
        .login_username(&owner_id, password)
        .send()
        .await
        .expect("the owner logs in");
    let (heard, mut replies) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
    client.add_event_handler(move |event: OriginalSyncRoomMessageEvent| {
        let heard = heard.clone();
        async move {
            let _ = heard.send((event.sender.to_string(), event.content.body().to_string()));
        }
    });
    client
        .sync_once(SyncSettings::default())
        .await
        .expect("the first sync");
    let syncing = tokio::spawn({
        let client = client.clone();
        async move {
            let _ = client.sync(SyncSettings::default()).await;
        }
    });

    let bot = UserId::parse(h.platform.bot()).expect("the bot's user id");
    let room = client.create_dm(&bot).await.expect("an encrypted DM");
    assert!(
        room.latest_encryption_state()
            .await
            .expect("state")
            .is_encrypted()
    );
    crate::common::wait_for(
        async || {
            let member = room.get_member_no_sync(&bot).await.ok()??;
            (*member.membership() == MembershipState::Join).then_some(())
        },
        || {
            format!(
                "the bot never joined the encrypted DM; gateway log:\n{}",
                h.log()
            )
        },
    )
    .await;
    room.send(RoomMessageEventContent::text_plain("hello in secret"))
        .await
        .expect("sent encrypted");

    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + crate::common::PATIENCE;
    while !got
        .iter()
        .any(|(_, body): &(String, String)| body.contains("echo: hello in secret"))
    {
        match tokio::time::timeout_at(deadline, replies.recv()).await {
            Ok(Some((sender, body))) if sender == h.platform.bot() => got.push((sender, body)),
            Ok(Some(_)) => {}
            _ => panic!("no decrypted reply; got {got:?}; gateway log:\n{}", h.log()),
        }
    }
    assert_eq!(h.model.requests()[0].last_user_text(), "hello in secret");
    // What the homeserver holds: ciphertext only.
    let token = client.access_token().expect("logged in");
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/messages?dir=b&limit=20",
        h.platform.server().url(),
        room.room_id()
    );
    let history: serde_json::Value = reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .expect("history")
        .json()
        .await
        .expect("json");
    let kinds: Vec<&str> = history["chunk"]
        .as_array()
        .expect("a chunk")
        .iter()
        .filter(|e| e["sender"] == h.platform.bot())
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert!(kinds.contains(&"m.room.encrypted"), "{kinds:?}");
    assert!(
        !kinds.contains(&"m.room.message"),
        "the bot wrote in clear: {kinds:?}"
    );
    syncing.abort();

    let doctor = h.home.run(&["doctor"]);
    let out = format!("{}{}", doctor.stdout, doctor.stderr);
    assert!(
        out.contains(&format!("logged in as {}", h.platform.bot())),
        "{out}"
    );
    assert!(out.contains("is not verified"), "{out}");
    assert!(
        out.contains("recovery_key"),
        "doctor says how to verify: {out}"
    );
}

/// The bot's account was set up in another client first (cross-signing and secret
/// storage, as Element does); with that account's recovery key in `.security.yml` the bot
/// restores the cross-signing keys and signs its own device, so people see it verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recovery_key_makes_the_bots_device_verified() {
    let platform = MatrixPlatform::start().await;
    let store = tempfile::tempdir().expect("a store for the client");
    let first = matrix_sdk::Client::builder()
        .homeserver_url(platform.server().url())
        .sqlite_store(store.path(), None)
        .with_encryption_settings(matrix_sdk::encryption::EncryptionSettings {
            auto_enable_cross_signing: true,
            ..Default::default()
        })
        .build()
        .await
        .expect("the SDK client");
    first
        .matrix_auth()
        .login_username(platform.bot(), platform.bot_password())
        .send()
        .await
        .expect("the bot's account logs in on its first device");
    first
        .encryption()
        .wait_for_e2ee_initialization_tasks()
        .await;
    let key = first
        .encryption()
        .recovery()
        .enable()
        .await
        .expect("cross-signing and secret storage set up");
    platform.set_recovery_key(&key);
    let h = Harness::start(platform, "", "").await;

    let doctor = h.home.run(&["doctor"]);
    let out = format!("{}{}", doctor.stdout, doctor.stderr);
    assert!(
        out.contains("is verified (cross-signed by"),
        "{out}\ngateway log:\n{}",
        h.log()
    );
    // What everyone else sees: the device signed by the account's self-signing key.
    let bot = h.platform.bot();
    let keys: serde_json::Value = reqwest::Client::new()
        .post(format!(
            "{}/_matrix/client/v3/keys/query",
            h.platform.server().url()
        ))
        .bearer_auth(first.access_token().expect("logged in"))
        .json(&json!({ "device_keys": { bot: [] } }))
        .send()
        .await
        .expect("keys/query")
        .json()
        .await
        .expect("json");
    let self_signing = keys["self_signing_keys"][bot]["keys"]
        .as_object()
        .and_then(|k| k.keys().next().cloned())
        .expect("a self-signing key");
    let device = std::fs::read_to_string(h.home.path().join("matrix/device-id"))
        .expect("the gateway's device id");
    let signatures = &keys["device_keys"][bot][device.trim()]["signatures"][bot];
    assert!(
        signatures.get(&self_signing).is_some(),
        "the gateway's device is not cross-signed: {keys}"
    );
    for secret in [key.as_str(), h.platform.bot_password()] {
        assert!(!h.log().contains(secret), "a secret in the log");
    }
}

/// What a stranger can make the bot do costs them as much as it costs the bot: repeated
/// reactions on a question are refused once, garbage ciphertext in a direct chat is
/// answered once, and nothing the bot writes pings anyone (`m.mentions` is empty, so a
/// client does not look for `@room` or names in an echoed text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_cannot_make_the_bot_repeat_itself_or_ping_the_room() {
    use crate::conformance::STRANGER;
    let h = Harness::start(
        synapse().await,
        "",
        "[tools.permissions]\nask = [\"write_file\"]\napproval_timeout_secs = 30\n",
    )
    .await;
    // Garbage ciphertext from a stranger in a direct chat: one notice, however many.
    let chat = h.platform.dm(STRANGER, "hi").await;
    h.wait_shown(&chat, "pairing code").await;
    let stranger = h.platform.person(STRANGER).await;
    for n in 0..4 {
        let garbage = json!({"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": format!("junk{n}"),
            "session_id": "none", "sender_key": "none", "device_id": "NONE"});
        stranger
            .send_event(&chat, "m.room.encrypted", garbage)
            .await;
    }
    stranger.send_text(&chat, "still there?", &[]).await;
    h.wait_shown(&chat, "could not decrypt").await;

    // Reactions on the owner's question from a stranger let in: told once.
    h.model.push_all([
        Step::tool_call("write_file", json!({"path": "ok.md", "content": "yes"})),
        Step::text("Saved it, @room."),
    ]);
    let owner_chat = h.platform.dm(OWNER, "save it").await;
    let asked = h.wait_shown(&owner_chat, "Allow write_file `ok.md`?").await;
    crate::common::wait_for(
        async || {
            h.shown_in(&owner_chat)
                .into_iter()
                .find(|m| m.id == asked.id && m.buttons)
        },
        || format!("no buttons: {:#?}", h.shown_in(&owner_chat)),
    )
    .await;
    assert!(
        h.platform.press(&owner_chat, STRANGER, "deny").await,
        "no answer to the press"
    );
    for key in ["❌\u{fe0f}", "❌\u{fe0f}\u{fe0f}", "👍"] {
        stranger.react(&owner_chat, &asked.id, key).await;
    }
    assert!(h.platform.press(&owner_chat, OWNER, "once").await);
    h.wait_shown(&owner_chat, "Saved it").await;
    let owner = h.platform.person(OWNER).await;
    let events = owner.events(&owner_chat);
    let refusals = events
        .iter()
        .filter(|e| e["sender"] == h.platform.bot())
        .filter(|e| e["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == asked.id.as_str())
        .count();
    assert_eq!(refusals, 1, "the stranger was told more than once");
    let undecryptable = h
        .texts_in(&chat)
        .iter()
        .filter(|t| t.contains("could not decrypt"))
        .count();
    assert_eq!(undecryptable, 1, "{:?}", h.texts_in(&chat));
    // Every message of the bot says whom it mentions: nobody.
    for event in events
        .iter()
        .filter(|e| e["sender"] == h.platform.bot() && e["type"] == "m.room.message")
    {
        assert_eq!(event["content"]["m.mentions"], json!({}), "{event}");
    }
}

/// An invite to a room that `groups` does not list is declined: the bot never joins, so
/// nobody there reaches it (the red team's attempt, kept as a test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invite_to_an_unlisted_room_is_declined() {
    use crate::conformance::STRANGER;
    let h = Harness::start(synapse().await, "", "").await;
    let stranger = h.platform.person(STRANGER).await;
    let room = stranger.create_room(&[h.platform.bot()]).await;
    crate::common::wait_for(
        async || {
            stranger
                .events(&room)
                .into_iter()
                .find(|e| {
                    e["type"] == "m.room.member"
                        && e["state_key"] == h.platform.bot()
                        && e["content"]["membership"] == "leave"
                })
                .map(|_| ())
        },
        || format!("the bot did not decline; gateway log:\n{}", h.log()),
    )
    .await;
    assert!(
        !stranger
            .joined_members(&room)
            .await
            .iter()
            .any(|m| m == h.platform.bot()),
        "the bot joined a room not in groups"
    );
}

/// The bot's sync leaves out typing notices, read receipts and presence: the bot uses
/// none of them, and each would wake the sync for the SDK to process and store. This
/// checks typing (the test Synapse has presence off): someone typing, and the bot's own
/// typing while it answers, never reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_never_wakes_the_bots_sync() {
    let h = Harness::start(synapse().await, "", "").await;
    let chat = h.round_trip(OWNER, "hello").await;
    let owner = h.platform.person(OWNER).await;
    let proxy = h.platform.proxy();
    proxy.watch("\"m.typing\"");
    owner.set_typing(&chat, true).await;
    let again = h.round_trip(OWNER, "are you there").await;
    assert_eq!(again, chat);
    let (to_bot, _) = proxy.seen("\"m.typing\"");
    assert!(
        to_bot.is_none(),
        "a typing notice reached the bot's sync; gateway log:\n{}",
        h.log()
    );
}

/// A flood of invites is paced: with `invites_per_hour = 6` the bot takes three
/// strangers' invites at once (the check that it is connected spends one) and one every
/// ten minutes, and declines the rest, so a stranger cannot make it join rooms without
/// end; the owner's invite does not wait behind the flood.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_invites_is_declined_past_invites_per_hour() {
    use crate::conformance::STRANGER;
    let h = Harness::start(synapse().await, "invites_per_hour = 6", "").await;
    let stranger = h.platform.person(STRANGER).await;
    let mut rooms = Vec::new();
    for _ in 0..4 {
        rooms.push(stranger.create_dm(h.platform.bot()).await);
    }
    let bot = h.platform.bot().to_string();
    // Each invite answered: the bot's membership in each room is join or leave.
    let answers = crate::common::wait_for(
        async || {
            let answers: Vec<String> = rooms
                .iter()
                .filter_map(|room| {
                    stranger
                        .events(room)
                        .into_iter()
                        .filter(|e| e["type"] == "m.room.member" && e["state_key"] == bot)
                        .map(|e| {
                            e["content"]["membership"]
                                .as_str()
                                .unwrap_or("")
                                .to_string()
                        })
                        .find(|m| m == "join" || m == "leave")
                })
                .collect();
            (answers.len() == rooms.len()).then_some(answers)
        },
        || {
            format!(
                "the bot did not answer every invite; gateway log:\n{}",
                h.log()
            )
        },
    )
    .await;
    let joined = answers.iter().filter(|m| *m == "join").count();
    assert!(
        (1..=3).contains(&joined),
        "joined {joined} of 4 ({answers:?}); gateway log:\n{}",
        h.log()
    );
    assert!(
        h.log().contains("channels.matrix.invites_per_hour"),
        "the log does not say why; gateway log:\n{}",
        h.log()
    );
    // The owner opens a direct chat now, with the strangers' allowance spent.
    h.round_trip(OWNER, "still there?").await;
}
