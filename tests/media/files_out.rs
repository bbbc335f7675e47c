//! Files out: `send_file` sends a workspace file to the chat the turn came from, a
//! picture as a photo and anything else as a document, on every platform; a path out
//! of the workspace or a file over the platform's limit is refused with the reason, and
//! a member is never offered the tool.

use pincer_fakes::telegram::MediaKind;
use pincer_fakes::{Recorded, Step, discord, slack, telegram};
use serde_json::json;

use super::rig::{OWNER, Rig, Wire, png};
use crate::common::PATIENCE;

/// Queue a turn that calls `send_file` with `args`, then says `done`.
fn script_send(rig: &Rig, args: serde_json::Value, done: &str) {
    rig.model.push(Step::tool_call("send_file", args));
    rig.model.push(Step::text(done));
}

/// The text of the tool result the model got in `request` (the whole body: both wire
/// formats carry it as a string).
fn body(request: &Recorded) -> String {
    request.body.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_png_goes_as_a_photo_and_a_csv_as_a_document_on_every_platform() {
    let mut rig = Rig::new(Wire::OpenAi, "", "").await;
    let chart = png(300, 200);
    let csv = b"day,cost\nmon,0.12\ntue,0.08\n".to_vec();
    std::fs::create_dir_all(rig.home.workspace().join("reports")).expect("mkdir");
    std::fs::write(rig.home.workspace().join("reports/chart.png"), &chart).expect("png");
    std::fs::write(rig.home.workspace().join("reports/costs.csv"), &csv).expect("csv");
    rig.start().await;
    let photo = json!({"path": "reports/chart.png", "caption": "this week"});
    let document = json!({"path": "reports/costs.csv"});

    // Telegram: sendPhoto, then sendDocument.
    script_send(&rig, photo.clone(), "there is the chart");
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "send me the chart"));
    rig.shown(&rig.telegram, "42", "there is the chart").await;
    script_send(&rig, document.clone(), "there are the costs");
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "and the costs"));
    rig.shown(&rig.telegram, "42", "there are the costs").await;
    let sent = rig.telegram.sent_files_in(42);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(sent[0].kind, MediaKind::Photo);
    assert_eq!(sent[0].bytes, chart);
    assert_eq!(sent[0].caption, "this week");
    assert_eq!(sent[1].kind, MediaKind::Document);
    assert_eq!(sent[1].file_name.as_deref(), Some("costs.csv"));
    assert_eq!(sent[1].bytes, csv);
    let requests = rig.requests(4).await;
    assert!(
        body(&requests[1]).contains("sent chart.png") && body(&requests[1]).contains("as a photo"),
        "the model hears it went: {}",
        body(&requests[1])
    );

    // Discord: attachments on a message in the DM, an image type for the picture.
    let dm = rig.discord_dm();
    script_send(&rig, photo.clone(), "chart on discord");
    rig.discord
        .inject(discord::Incoming::dm(OWNER, "send me the chart"));
    rig.shown(&rig.discord, &dm.to_string(), "chart on discord")
        .await;
    script_send(&rig, document.clone(), "costs on discord");
    rig.discord
        .inject(discord::Incoming::dm(OWNER, "and the costs"));
    rig.shown(&rig.discord, &dm.to_string(), "costs on discord")
        .await;
    let sent = rig.discord.sent_files_in(dm);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(sent[0].file_name, "chart.png");
    assert_eq!(sent[0].content_type, "image/png");
    assert_eq!(sent[0].bytes, chart);
    assert_eq!(sent[0].content, "this week");
    assert_eq!(sent[1].file_name, "costs.csv");
    assert_eq!(sent[1].bytes, csv);

    // Slack: the external upload flow, completed into the DM.
    script_send(&rig, photo, "chart on slack");
    rig.slack
        .inject(slack::Incoming::dm(OWNER, "send me the chart"));
    rig.shown(&rig.slack, "D42", "chart on slack").await;
    script_send(&rig, document, "costs on slack");
    rig.slack
        .inject(slack::Incoming::dm(OWNER, "and the costs"));
    rig.shown(&rig.slack, "D42", "costs on slack").await;
    let uploads = rig.slack.wait_for_uploads(2, PATIENCE).await;
    let done: Vec<_> = uploads.iter().filter(|u| u.completed).collect();
    assert_eq!(done.len(), 2, "{uploads:#?}");
    assert_eq!(done[0].file_name, "chart.png");
    assert_eq!(done[0].bytes, chart);
    assert_eq!(done[0].channel.as_deref(), Some("D42"));
    assert_eq!(done[0].comment.as_deref(), Some("this week"));
    assert_eq!(done[1].file_name, "costs.csv");
    assert_eq!(done[1].bytes, csv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_out_of_the_workspace_or_a_file_over_the_limit_is_refused_with_the_reason() {
    let mut rig = Rig::new(Wire::OpenAi, "", "").await;
    std::fs::create_dir_all(rig.home.workspace()).expect("workspace");
    // 51 MB: over Telegram's 50 MB for bots. 11 MB: over Discord's 10 MB.
    let big = std::fs::File::create(rig.home.workspace().join("big.bin")).expect("big");
    big.set_len(51 << 20).expect("size");
    let medium = std::fs::File::create(rig.home.workspace().join("medium.bin")).expect("medium");
    medium.set_len(11 << 20).expect("size");
    std::fs::write(rig.home.path().join("outside.txt"), "the owner's own file").expect("write");
    rig.start().await;

    script_send(&rig, json!({"path": "../outside.txt"}), "could not");
    rig.telegram.inject(telegram::Incoming::dm(
        OWNER as i64,
        "send the file next door",
    ));
    rig.shown(&rig.telegram, "42", "could not").await;
    let refusal = body(&rig.requests(2).await[1]);
    assert!(refusal.contains("is outside the workspace"), "{refusal}");
    assert!(!refusal.contains("the owner's own file"));

    script_send(&rig, json!({"path": "big.bin"}), "too big for telegram");
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "send big.bin"));
    rig.shown(&rig.telegram, "42", "too big for telegram").await;
    let refusal = body(&rig.requests(4).await[3]);
    assert!(
        refusal.contains("Telegram bots can send files up to 50 MB"),
        "{refusal}"
    );
    assert!(rig.telegram.sent_files().is_empty(), "nothing was sent");

    script_send(&rig, json!({"path": "medium.bin"}), "too big for discord");
    rig.discord
        .inject(discord::Incoming::dm(OWNER, "send medium.bin"));
    let dm = rig.discord_dm().to_string();
    rig.shown(&rig.discord, &dm, "too big for discord").await;
    let refusal = body(&rig.requests(6).await[5]);
    assert!(refusal.contains("medium.bin was not sent"), "{refusal}");
    assert!(refusal.contains("10 MB"), "the limit is named: {refusal}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_is_not_offered_send_file() {
    let mut rig = Rig::new(Wire::OpenAi, "allow_from = [\"7\"]", "").await;
    rig.start().await;
    rig.telegram
        .inject(telegram::Incoming::dm(7, "send me MEMORY.md"));
    rig.shown(&rig.telegram, "7", "echo:").await;
    rig.telegram
        .inject(telegram::Incoming::dm(OWNER as i64, "hello"));
    rig.shown(&rig.telegram, "42", "echo:").await;
    let requests = rig.requests(2).await;
    let offered = |r: &Recorded| {
        crate::common::trust::offered_tools(&r.body).contains(&"send_file".to_string())
    };
    let (member, owner): (Vec<_>, Vec<_>) = requests
        .iter()
        .partition(|r| r.last_user_text().contains("MEMORY.md"));
    assert!(!offered(member[0]), "a member is offered send_file");
    assert!(offered(owner[0]), "the owner is offered send_file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_prints_where_the_file_is() {
    let model = pincer_fakes::FakeModel::start().await;
    let home = crate::common::TestHome::openai(&model);
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    std::fs::write(home.workspace().join("chart.png"), png(8, 8)).expect("png");
    model.push(Step::tool_call(
        "send_file",
        json!({"path": "chart.png", "caption": "the chart"}),
    ));
    model.push(Step::text("There it is."));
    let run = home.run(&["chat", "-m", "send me the chart"]);
    assert!(run.ok(), "{run:?}");
    let path = home.workspace().join("chart.png");
    assert!(
        run.stdout
            .contains(&format!("[file] {} (the chart)", path.display())),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("There it is."));
}
