//! Acknowledgement reactions: with `ack_reaction` set, the person's message gets that
//! reaction when its turn starts, on every platform; unset, none.

use pincer_fakes::{discord, slack, telegram};

use super::rig::{OWNER, Rig, Wire};
use crate::common::PATIENCE;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_reaction_reaches_telegram_discord_and_slack() {
    let mut rig = Rig::new(Wire::OpenAi, "ack_reaction = \"👀\"", "").await;
    rig.start().await;

    let id = rig
        .telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "hello"));
    let reactions = rig.telegram.wait_for_reactions(1, PATIENCE).await;
    assert_eq!(
        reactions,
        vec![(OWNER as i64, id, "👀".to_string())],
        "calls: {:#?}\nlog:\n{}",
        rig.telegram.calls(),
        rig.log()
    );

    let id = rig.discord.inject(discord::Incoming::dm(OWNER, "hello"));
    let reactions = rig.discord.wait_for_reactions(1, PATIENCE).await;
    assert_eq!(reactions, vec![(rig.discord_dm(), id, "👀".to_string())]);

    let ts = rig.slack.inject(slack::Incoming::dm(OWNER, "hello"));
    crate::common::wait_until("a reaction on Slack", async || {
        !rig.slack.reactions().is_empty()
    })
    .await;
    // Slack names reactions: 👀 is "eyes".
    assert_eq!(
        rig.slack.reactions(),
        vec![("D42".to_string(), ts, "eyes".to_string())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_ack_reaction_no_reaction_is_put() {
    let mut rig = Rig::new(Wire::OpenAi, "", "").await;
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "hello"));
    rig.shown(&rig.telegram, "42", "echo: hello").await;
    assert!(rig.telegram.reactions().is_empty());
    assert!(rig.telegram.calls_of("setMessageReaction").is_empty());
}
