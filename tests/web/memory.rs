//! The Memory page: MEMORY.md, the typed files, the history as colored diffs, and
//! Restore, which asks before it changes anything.

use axum::http::StatusCode;
use chrono::NaiveDate;
use pincer_memory::repo::short;

use super::harness::Panel;

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 22).unwrap()
}

/// Two revisions of `memory/tea.md`: green tea, then black. Returns their ids.
fn two_revisions(panel: &Panel) -> (String, String) {
    let memory = &panel.state.agent.memory();
    memory
        .write(
            "tea",
            "user",
            "how Ana takes her tea",
            "Green tea, no sugar.",
            today(),
        )
        .unwrap();
    // Opening the repository the first time commits the memory as it is.
    let repo = memory.repo().unwrap();
    let first = repo.head().unwrap().unwrap();
    memory
        .write(
            "tea",
            "user",
            "how Ana takes her tea",
            "Black tea, with milk.",
            today(),
        )
        .unwrap();
    let second = repo.commit("Dream").unwrap().unwrap().id;
    (first, second)
}

/// The memory file as it is on disk, in the test home's workspace.
fn tea(panel: &Panel) -> String {
    std::fs::read_to_string(panel.home.workspace().join("memory/tea.md")).unwrap()
}

#[tokio::test]
async fn the_page_shows_memory_files_and_each_revision_as_a_colored_diff() {
    let panel = Panel::start("").await;
    let page = panel.get("/memory").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("No memories yet"), "{}", page.text);
    assert!(page.text.contains("No revisions yet"), "{}", page.text);
    assert!(
        !panel.state.agent.memory().has_history(),
        "looking does not create the repository"
    );

    let (first, second) = two_revisions(&panel);
    let page = panel.get("/memory").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    // MEMORY.md and the typed file.
    assert!(page.text.contains("id=\"memory-index\""), "{}", page.text);
    assert!(page.text.contains("how Ana takes her tea"), "{}", page.text);
    assert!(page.text.contains("Black tea, with milk."), "{}", page.text);
    // Both revisions, newest first, each with its message and a Restore form.
    let at_second = page.text.find(&format!("<code>{}</code>", short(&second)));
    let at_first = page.text.find(&format!("<code>{}</code>", short(&first)));
    assert!(
        at_second.is_some() && at_first.is_some() && at_second < at_first,
        "{}",
        page.text
    );
    assert!(page.text.contains("Dream: 1 updated"), "{}", page.text);
    assert!(
        page.text.contains("Start the memory repository"),
        "{}",
        page.text
    );
    assert!(
        page.text
            .contains(&format!("name=\"rev\" value=\"{second}\"")),
        "{}",
        page.text
    );
    // The second revision's diff against the first, colored by line.
    assert!(
        page.text
            .contains("<span class=\"del\">-Green tea, no sugar.</span>"),
        "{}",
        page.text
    );
    assert!(
        page.text
            .contains("<span class=\"add\">+Black tea, with milk.</span>"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("<span class=\"hunk\">@@ -"),
        "{}",
        page.text
    );
    // A file's header is not taken for a removed line.
    assert!(
        page.text
            .contains("<span class=\"hunk\">--- a/memory/tea.md</span>"),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn restore_asks_first_and_then_puts_the_files_back() {
    let panel = Panel::start("").await;
    let (first, _) = two_revisions(&panel);
    let repo = panel.state.agent.memory().repo().unwrap();

    // Without confirm=yes: a confirmation page, and nothing changes.
    let page = panel.post("/memory/restore", &[("rev", &first)]).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text.contains(&format!(
            "Put the memory files back as they were at <code>{}</code>?",
            short(&first)
        )),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("name=\"confirm\" value=\"yes\""),
        "{}",
        page.text
    );
    assert!(
        page.text
            .contains(&format!("name=\"rev\" value=\"{first}\""))
    );
    assert!(
        page.text
            .contains(&format!("name=\"csrf\" value=\"{}\"", panel.csrf))
    );
    assert!(page.text.contains("href=\"/memory\""), "a way to cancel");
    assert!(tea(&panel).contains("Black tea"), "nothing restored yet");
    assert_eq!(repo.log(10).unwrap().len(), 2, "no commit either");

    // Confirmed: the file is back, in a new commit.
    let page = panel
        .post("/memory/restore", &[("rev", &first), ("confirm", "yes")])
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text.contains(&format!(
            "Restored the memory files as of {} in a new commit",
            short(&first)
        )),
        "{}",
        page.text
    );
    assert!(page.text.contains("updated memory/tea.md"), "{}", page.text);
    assert!(
        tea(&panel).contains("Green tea, no sugar."),
        "{}",
        tea(&panel)
    );
    let log = repo.log(10).unwrap();
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(
        log[0].message.starts_with("Restore memory as of"),
        "{log:?}"
    );
}

#[tokio::test]
async fn restore_refuses_what_is_not_a_revision() {
    let panel = Panel::start("").await;
    two_revisions(&panel);
    let page = panel
        .post("/memory/restore", &[("rev", "HEAD~1; rm")])
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.text);
    assert!(page.text.contains("is not a revision id"), "{}", page.text);
    for confirm in ["", "yes"] {
        let page = panel
            .post(
                "/memory/restore",
                &[("rev", "0123456789abcdef"), ("confirm", confirm)],
            )
            .await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{}", page.text);
        assert!(
            page.text
                .contains("no revision `0123456789abcdef` in the memory repository"),
            "{}",
            page.text
        );
    }
    assert!(tea(&panel).contains("Black tea"));
}
