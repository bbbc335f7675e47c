//! The fake Telegram driven by the real teloxide 0.17 client: everything it answers must
//! deserialize, and its faults must surface as the `RequestError`s a bot would meet.

use std::time::Duration;

use pincer_fakes::PATIENCE;
use pincer_fakes::telegram::{FakeTelegram, Fault, Incoming};
use teloxide::net::Download;
use teloxide::prelude::*;
use teloxide::types::{
    BotCommand, ChatAction, InputFile, MessageEntityKind, MessageId, MessageKind, ParseMode,
    ReplyParameters, ThreadId, UpdateKind,
};
use teloxide::{ApiError, RequestError};

fn bot(fake: &FakeTelegram) -> Bot {
    let url = reqwest::Url::parse(&fake.api_url()).unwrap();
    Bot::new(fake.token()).set_api_url(url)
}

/// Polls once (no hold) from `offset` and returns the messages.
async fn poll(bot: &Bot, offset: i32) -> Vec<(i32, Message)> {
    let updates = bot.get_updates().offset(offset).timeout(1).await.unwrap();
    updates
        .into_iter()
        .map(|u| match u.kind {
            UpdateKind::Message(m) => (i32::try_from(u.id.0).unwrap(), m),
            other => panic!("expected a message update, got {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn get_me_webhook_calls_and_a_wrong_token() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let me = bot.get_me().await.unwrap();
    assert_eq!(me.username(), "pincer_test_bot");
    assert_eq!(me.id, UserId(999));
    assert!(me.is_bot);
    assert!(!me.can_read_all_group_messages);
    bot.get_webhook_info().await.unwrap();
    bot.delete_webhook().await.unwrap();
    let methods: Vec<_> = fake.calls().into_iter().map(|c| c.method).collect();
    assert_eq!(methods, ["getMe", "getWebhookInfo", "deleteWebhook"]);

    let url = reqwest::Url::parse(&fake.api_url()).unwrap();
    let stranger = Bot::new("1:WRONG").set_api_url(url);
    let result = stranger.get_me().await;
    assert!(matches!(
        result,
        Err(RequestError::Api(ApiError::InvalidToken))
    ));
}

#[tokio::test]
async fn a_dm_arrives_and_the_offset_confirms_it() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let id = fake.inject(Incoming::dm(42, "hello 🦀"));
    assert_eq!(fake.pending_updates(), 1);

    let got = poll(&bot, 0).await;
    assert_eq!(got.len(), 1);
    let (update_id, msg) = &got[0];
    assert_eq!(*update_id, 1);
    assert_eq!(msg.id, MessageId(i32::try_from(id).unwrap()));
    assert_eq!(msg.text(), Some("hello 🦀"));
    assert!(msg.chat.is_private());
    assert_eq!(msg.chat.id, ChatId(42));
    let from = msg.from.as_ref().unwrap();
    assert_eq!(from.username.as_deref(), Some("user42"));
    assert_eq!(from.first_name, "User42");

    // Not confirmed yet: the same update comes again.
    assert_eq!(poll(&bot, 0).await.len(), 1);
    assert!(poll(&bot, update_id + 1).await.is_empty());
    assert_eq!(fake.confirmed_offset(), i64::from(update_id + 1));
    assert_eq!(fake.pending_updates(), 0);
}

#[tokio::test]
async fn a_group_mention_in_a_forum_topic() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    fake.inject(
        Incoming::group(-100123, 7, "what's up?")
            .mentioning_bot()
            .in_topic(55),
    );
    let (_, msg) = poll(&bot, 0).await.remove(0);
    assert!(msg.chat.is_supergroup());
    assert_eq!(msg.chat.title(), Some("Group"));
    assert_eq!(msg.text(), Some("@pincer_test_bot what's up?"));
    assert_eq!(msg.thread_id, Some(ThreadId(MessageId(55))));
    assert!(msg.is_topic_message);
    let entity = &msg.entities().unwrap()[0];
    assert_eq!(entity.kind, MessageEntityKind::Mention);
    assert_eq!((entity.offset, entity.length), (0, 16));
    // Like Telegram: a topic message that is no reply "replies" to the topic's creation.
    let created = msg.reply_to_message().unwrap();
    assert!(matches!(created.kind, MessageKind::ForumTopicCreated(_)));
    assert_eq!(created.id, MessageId(55));
}

#[tokio::test]
async fn a_reply_to_the_bot_in_an_ordinary_group_and_a_command() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let sent = bot
        .send_message(ChatId(-100200), "I am the bot")
        .await
        .unwrap();
    let replied = i64::from(sent.id.0);
    fake.inject(Incoming::group(-100200, 8, "thanks").replying_to(replied, true));
    fake.inject(
        Incoming::group(-100200, 8, "/new topic")
            .command()
            .mentioning_bot(),
    );

    let got = poll(&bot, 0).await;
    let reply = &got[0].1;
    let quoted = reply.reply_to_message().unwrap();
    assert_eq!(quoted.text(), Some("I am the bot"));
    assert!(quoted.from.as_ref().unwrap().is_bot);
    // A reply thread, not a topic.
    assert_eq!(reply.thread_id, Some(ThreadId(sent.id)));
    assert!(!reply.is_topic_message);

    let command = &got[1].1;
    assert_eq!(command.text(), Some("/new@pincer_test_bot topic"));
    let entity = &command.entities().unwrap()[0];
    assert_eq!(entity.kind, MessageEntityKind::BotCommand);
    assert_eq!((entity.offset, entity.length), (0, 20));
}

#[tokio::test]
async fn a_photo_is_parsed_and_downloaded() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let bytes = vec![0xFF, 0xD8, 0xFF, 1, 2, 3];
    fake.inject(Incoming::dm(42, "look").with_photo(bytes.clone()));
    fake.inject(Incoming::dm(42, "").with_document("notes.txt", b"notes".to_vec()));
    fake.inject(Incoming::dm(42, "").with_voice(b"OggS".to_vec()));

    let got = poll(&bot, 0).await;
    let photo = &got[0].1;
    assert_eq!(photo.caption(), Some("look"));
    let sizes = photo.photo().unwrap();
    assert_eq!(sizes.len(), 2);
    let largest = sizes.last().unwrap();
    let file = bot.get_file(largest.file.id.clone()).await.unwrap();
    assert_eq!(file.size as usize, bytes.len());
    let mut downloaded = Vec::new();
    bot.download_file(&file.path, &mut downloaded)
        .await
        .unwrap();
    assert_eq!(downloaded, bytes);

    let document = got[1].1.document().unwrap();
    assert_eq!(document.file_name.as_deref(), Some("notes.txt"));
    assert_eq!(got[2].1.voice().unwrap().file.size, 4);
    assert_eq!(fake.calls_of("downloadFile").len(), 1);
}

#[tokio::test]
async fn html_is_sent_and_can_be_refused() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let msg = bot
        .send_message(ChatId(42), "<b>bold</b> &amp; plain")
        .parse_mode(ParseMode::Html)
        .await
        .unwrap();
    assert_eq!(msg.text(), Some("bold & plain"));
    assert_eq!(msg.from.as_ref().unwrap().id, UserId(999));
    let sent = fake.sent();
    assert_eq!(sent[0].text, "<b>bold</b> &amp; plain");
    assert_eq!(sent[0].parse_mode.as_deref(), Some("HTML"));
    assert_eq!(sent[0].message_id, i64::from(msg.id.0));

    let broken = bot
        .send_message(ChatId(42), "<p>para</p>")
        .parse_mode(ParseMode::Html)
        .await;
    assert!(matches!(
        broken,
        Err(RequestError::Api(ApiError::CantParseEntities(_)))
    ));

    fake.reject_html(true);
    let refused = bot
        .send_message(ChatId(42), "<b>fine</b>")
        .parse_mode(ParseMode::Html)
        .await;
    assert!(matches!(
        refused,
        Err(RequestError::Api(ApiError::CantParseEntities(_)))
    ));
    bot.send_message(ChatId(42), "plain works").await.unwrap();
    assert_eq!(fake.sent().len(), 2);
}

#[tokio::test]
async fn faults_become_teloxide_errors_once_each() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    fake.fail_next("sendMessage", Fault::TooManyRequests { retry_after: 3 });
    fake.fail_next(
        "SendMessage",
        Fault::Forbidden("bot was blocked by the user".into()),
    );
    fake.fail_next("getUpdates", Fault::Conflict);
    fake.fail_next("getMe", Fault::Unauthorized);

    match bot.send_message(ChatId(42), "hi").await {
        Err(RequestError::RetryAfter(after)) => assert_eq!(after.seconds(), 3),
        other => panic!("expected RetryAfter, got {other:?}"),
    }
    let blocked = bot.send_message(ChatId(42), "hi").await;
    assert!(matches!(
        blocked,
        Err(RequestError::Api(ApiError::BotBlocked))
    ));
    let conflict = bot.get_updates().await;
    assert!(matches!(
        conflict,
        Err(RequestError::Api(ApiError::TerminatedByOtherGetUpdates))
    ));
    let unauthorized = bot.get_me().await;
    assert!(matches!(
        unauthorized,
        Err(RequestError::Api(ApiError::InvalidToken))
    ));

    bot.send_message(ChatId(42), "hi").await.unwrap();
    bot.get_me().await.unwrap();
    assert_eq!(fake.calls_of("sendMessage").len(), 3);
}

#[tokio::test]
async fn edits_replies_and_topics_when_sending() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let question = fake.inject(Incoming::group(-100300, 5, "q").in_topic(9));
    let question = MessageId(i32::try_from(question).unwrap());
    let msg = bot
        .send_message(ChatId(-100300), "thinking")
        .message_thread_id(ThreadId(MessageId(9)))
        .reply_parameters(ReplyParameters::new(question))
        .await
        .unwrap();
    assert_eq!(msg.thread_id, Some(ThreadId(MessageId(9))));
    assert!(msg.is_topic_message);
    assert_eq!(msg.reply_to_message().unwrap().id, question);

    let edited = bot
        .edit_message_text(ChatId(-100300), msg.id, "the answer")
        .await
        .unwrap();
    assert_eq!(edited.text(), Some("the answer"));
    let same = bot
        .edit_message_text(ChatId(-100300), msg.id, "the answer")
        .await;
    assert!(matches!(
        same,
        Err(RequestError::Api(ApiError::MessageNotModified))
    ));
    let theirs = bot.edit_message_text(ChatId(-100300), question, "x").await;
    assert!(matches!(
        theirs,
        Err(RequestError::Api(ApiError::MessageCantBeEdited))
    ));

    let sent = fake.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].message_thread_id, Some(9));
    assert_eq!(sent[0].reply_to, Some(i64::from(question.0)));
    assert_eq!(sent[1].method, "editMessageText");
    assert_eq!(sent[1].text, "the answer");
    assert_eq!(sent[1].message_thread_id, Some(9));
}

#[tokio::test]
async fn chat_actions_commands_reactions_and_deletes() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    bot.send_chat_action(ChatId(42), ChatAction::Typing)
        .await
        .unwrap();
    let commands = vec![
        BotCommand::new("new", "Start a new conversation"),
        BotCommand::new("status", "Show status"),
    ];
    bot.set_my_commands(commands.clone()).await.unwrap();
    assert_eq!(bot.get_my_commands().await.unwrap(), commands);
    assert_eq!(
        fake.commands()[0],
        ("new".into(), "Start a new conversation".into())
    );
    let bad = bot.set_my_commands(vec![BotCommand::new("New", "x")]).await;
    assert!(bad.is_err());

    let msg = bot.send_message(ChatId(42), "bye").await.unwrap();
    bot.delete_message(ChatId(42), msg.id).await.unwrap();
    let again = bot.delete_message(ChatId(42), msg.id).await;
    assert!(matches!(
        again,
        Err(RequestError::Api(ApiError::MessageToDeleteNotFound))
    ));
    let action = fake
        .wait_for_call("sendChatAction", PATIENCE)
        .await
        .unwrap();
    assert_eq!(action.param("action"), "typing");
    assert_eq!(action.param_i64("chat_id"), Some(42));
}

#[tokio::test]
async fn a_document_upload_is_recorded_and_served_back() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let file = InputFile::memory(b"hello".to_vec()).file_name("notes.txt");
    let msg = bot
        .send_document(ChatId(42), file)
        .caption("<i>here</i>")
        .parse_mode(ParseMode::Html)
        .await
        .unwrap();
    let document = msg.document().unwrap();
    assert_eq!(document.file_name.as_deref(), Some("notes.txt"));
    assert_eq!(msg.caption(), Some("here"));

    let sent = &fake.sent()[0];
    assert_eq!(sent.method, "sendDocument");
    assert_eq!(sent.file_name.as_deref(), Some("notes.txt"));
    assert_eq!(sent.text, "<i>here</i>");
    let call = fake.wait_for_call("sendDocument", PATIENCE).await.unwrap();
    assert_eq!(call.param("document")["file_name"], "notes.txt");
    assert_eq!(call.param("document")["size"], 5);

    let stored = bot.get_file(document.file.id.clone()).await.unwrap();
    let mut bytes = Vec::new();
    bot.download_file(&stored.path, &mut bytes).await.unwrap();
    assert_eq!(bytes, b"hello");
}

#[tokio::test]
async fn a_long_poll_returns_as_soon_as_a_message_is_injected() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    let polling = tokio::spawn({
        let bot = bot.clone();
        async move { bot.get_updates().timeout(10).await }
    });
    fake.wait_for_call("getUpdates", PATIENCE).await.unwrap();
    fake.inject(Incoming::dm(42, "wake up"));
    // The hold is 10 s; waking must not need it.
    let updates = tokio::time::timeout(Duration::from_secs(5), polling)
        .await
        .expect("the long poll should return when a message arrives")
        .unwrap()
        .unwrap();
    assert_eq!(updates.len(), 1);
}

#[tokio::test]
async fn an_outage_drops_the_long_poll_and_the_same_url_works_after() {
    let fake = FakeTelegram::start().await;
    let bot = bot(&fake);
    fake.inject(Incoming::dm(42, "before"));
    assert_eq!(poll(&bot, 0).await.len(), 1);
    let polling = tokio::spawn({
        let bot = bot.clone();
        async move { bot.get_updates().offset(2).timeout(10).await }
    });
    fake.wait_for_calls("getUpdates", 2, PATIENCE).await;

    fake.outage(Duration::from_millis(300)).await;
    let dropped = polling.await.unwrap();
    assert!(
        matches!(dropped, Err(RequestError::Network(_))),
        "{dropped:?}"
    );
    let refused = bot.get_me().await;
    assert!(
        matches!(refused, Err(RequestError::Network(_))),
        "{refused:?}"
    );

    fake.wait_until_up().await;
    bot.get_me().await.unwrap();
    assert_eq!(fake.confirmed_offset(), 2);
    fake.inject(Incoming::dm(42, "after"));
    let got = poll(&bot, 2).await;
    assert_eq!(got[0].1.text(), Some("after"));
}
