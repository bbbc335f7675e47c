//! Documents in: text files up to 100 KB and the text of PDFs are put in the message,
//! each marked with its name and size; a PDF's page count is noted.

use pincer_fakes::{slack, telegram};

use super::rig::{OWNER, Rig, Wire, pdf};
use crate::common::TestHome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pdf_and_a_csv_sent_on_chat_platforms_are_inlined_with_name_and_size() {
    let mut rig = Rig::new(Wire::OpenAi, "", "").await;
    rig.start().await;
    let report = pdf(&[
        "Quarterly basil yield rose 12 percent",
        "Next page: tomatoes",
    ]);
    rig.telegram.inject(
        telegram::Incoming::dm(OWNER as i64, "summarise this")
            .with_document("report.pdf", report.clone()),
    );
    rig.shown(&rig.telegram, "42", "echo:").await;
    let text = rig.requests(1).await.remove(0).last_user_text();
    assert!(
        text.contains("Quarterly basil yield rose 12 percent"),
        "{text}"
    );
    assert!(text.contains("Next page: tomatoes"), "{text}");
    assert!(text.contains("report.pdf"), "{text}");
    assert!(text.contains("PDF, 2 pages"), "{text}");

    let csv = "plant,height_cm\nbasil,31\nthyme,12\n";
    rig.slack
        .inject(slack::Incoming::dm(OWNER, "and this").with_file(
            "plants.csv",
            "text/csv",
            csv.as_bytes().to_vec(),
        ));
    rig.shown(&rig.slack, "D42", "echo:").await;
    let text = rig.requests(2).await.remove(1).last_user_text();
    assert!(text.contains("basil,31"), "{text}");
    assert!(text.contains("plants.csv"), "{text}");
    assert!(
        text.contains(&format!("[file plants.csv, {} B]", csv.len())),
        "name and size marked: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_file_over_100_kb_stays_a_file() {
    let mut rig = Rig::new(Wire::OpenAi, "", "").await;
    rig.start().await;
    let big = "a line of a long log file\n".repeat(5000); // 130 KB
    rig.telegram.inject(
        telegram::Incoming::dm(OWNER as i64, "look").with_document("app.log", big.into_bytes()),
    );
    rig.shown(&rig.telegram, "42", "echo:").await;
    let text = rig.requests(1).await.remove(0).last_user_text();
    assert!(text.contains("over the 100 KB"), "{text}");
    assert!(!text.contains("a line of a long log file"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_attaches_a_pdf_with_slash_attach() {
    let model = pincer_fakes::FakeModel::start().await;
    let home = TestHome::openai(&model);
    let file = home.path().join("notes.pdf");
    std::fs::write(&file, pdf(&["Meeting moved to Thursday"])).expect("write pdf");
    let line = format!("/attach {} what changed?", file.display());
    let run = home.run(&["chat", "-m", &line]);
    assert!(run.ok(), "{run:?}");
    let text = model.requests()[0].last_user_text();
    assert!(text.contains("what changed?"), "{text}");
    assert!(text.contains("Meeting moved to Thursday"), "{text}");
    assert!(text.contains("PDF, 1 page"), "{text}");
}
