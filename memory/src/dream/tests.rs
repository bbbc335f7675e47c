//! The dream's memory side: applying, refusing, hand edits, crash recovery.

use super::*;

fn today() -> NaiveDate {
    "2026-11-22".parse().unwrap()
}

fn op(json: &str) -> Op {
    serde_json::from_str(json).unwrap()
}

fn setup() -> (tempfile::TempDir, Memory) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("USER.md"), "Ana, lives in Lisbon.\n").unwrap();
    std::fs::write(dir.path().join("SOUL.md"), "Dry wit.\n").unwrap();
    let memory = Memory::new(dir.path(), dir.path().join(".state"));
    memory.repo().unwrap();
    (dir, memory)
}

fn commits(memory: &Memory) -> usize {
    memory.repo().unwrap().log(100).unwrap().len()
}

fn next() -> Cursor {
    Cursor {
        transcript_ms: 5,
        last_dream_ms: 5,
        ..Cursor::default()
    }
}

#[test]
fn a_dream_applies_good_operations_refuses_bad_ones_and_commits_once() {
    let (dir, memory) = setup();
    let before = commits(&memory);
    let prepared = memory.prepare_dream(100_000).unwrap();
    let ops = [
        op(
            r#"{"op":"create","path":"memory/tea.md","type":"user","description":"likes green tea","content":"Sencha, no sugar."}"#,
        ),
        op(r#"{"op":"update","path":"USER.md","content":"Ana, lives in Porto."}"#),
        op(r#"{"op":"delete","path":"SOUL.md"}"#),
        op(
            r#"{"op":"create","path":"../../evil.md","type":"user","description":"x","content":"x"}"#,
        ),
    ];
    let outcome = memory
        .finish_dream(prepared, &ops, today(), next())
        .unwrap();
    assert_eq!(outcome.refused.len(), 2, "{:?}", outcome.refused);
    assert_eq!(
        outcome.applied,
        [
            "created MEMORY.md",
            "updated USER.md",
            "created memory/tea.md"
        ]
    );
    assert_eq!(commits(&memory), before + 1);
    let message = outcome.commit.unwrap().message;
    assert!(
        message.starts_with("Dream: 2 created, 1 updated\n"),
        "{message}"
    );
    assert!(dir.path().join("SOUL.md").exists());
    assert!(!dir.path().parent().unwrap().join("evil.md").exists());
    assert_eq!(memory.dream_cursor().unwrap(), next());
    let index = memory.index_text().unwrap().unwrap();
    assert!(index.contains("(memory/tea.md) — likes green tea"));
}

#[test]
fn a_dream_that_changes_nothing_commits_nothing_but_moves_the_cursor() {
    let (_dir, memory) = setup();
    let before = commits(&memory);
    let prepared = memory.prepare_dream(100_000).unwrap();
    let same = op(r#"{"op":"update","path":"USER.md","content":"Ana, lives in Lisbon."}"#);
    let outcome = memory
        .finish_dream(prepared, &[same], today(), next())
        .unwrap();
    assert_eq!(outcome.commit, None);
    assert!(outcome.applied.is_empty());
    assert_eq!(commits(&memory), before);
    assert_eq!(memory.dream_cursor().unwrap(), next());
}

#[test]
fn a_file_edited_while_the_dream_ran_keeps_the_owners_version() {
    let (dir, memory) = setup();
    let prepared = memory.prepare_dream(100_000).unwrap();
    std::fs::write(dir.path().join("USER.md"), "Ana, by hand.\n").unwrap();
    let ops = [op(
        r#"{"op":"update","path":"USER.md","content":"Ana, by the dream."}"#,
    )];
    let outcome = memory
        .finish_dream(prepared, &ops, today(), next())
        .unwrap();
    assert_eq!(outcome.skipped.len(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("USER.md")).unwrap(),
        "Ana, by hand.\n"
    );
}

#[test]
fn hand_edits_since_the_last_dream_are_marked_and_not_deleted() {
    let (dir, memory) = setup();
    memory
        .write("tea", "user", "likes tea", "Green.", today())
        .unwrap();
    let prepared = memory.prepare_dream(100_000).unwrap();
    let tea = prepared
        .files
        .iter()
        .find(|f| f.path == "memory/tea.md")
        .unwrap();
    assert!(
        !tea.hand_edited,
        "the assistant's own write is not a hand edit"
    );
    memory.finish_dream(prepared, &[], today(), next()).unwrap();
    std::fs::write(dir.path().join("USER.md"), "Ana, edited by hand.\n").unwrap();
    let prepared = memory.prepare_dream(100_000).unwrap();
    let user = prepared.files.iter().find(|f| f.path == "USER.md").unwrap();
    assert!(user.hand_edited && user.text.contains("edited by hand"));
    assert!(
        matches!(memory.prepare_dream(1), Err(MemoryError::Busy)),
        "one dream at a time"
    );
    drop(prepared);
    memory.prepare_dream(1).unwrap();
}

#[test]
fn a_crash_mid_dream_is_rolled_back_and_the_next_dream_completes() {
    let (dir, memory) = setup();
    let head = memory.repo().unwrap().head().unwrap();
    let prepared = memory.prepare_dream(100_000).unwrap();
    let ops = [
        op(
            r#"{"op":"create","path":"memory/tea.md","type":"user","description":"tea","content":"Green."}"#,
        ),
        op(r#"{"op":"update","path":"USER.md","content":"Ana, Porto."}"#),
    ];
    // Dies after writing the first of three files (MEMORY.md, USER.md, memory/tea.md).
    memory
        .finish(prepared, &ops, today(), next(), Stop::AfterWrites(1))
        .unwrap();
    assert!(
        dir.path().join("MEMORY.md").exists(),
        "the crash left a partial dream"
    );
    assert_eq!(
        memory.repo().unwrap().head().unwrap(),
        head,
        "nothing was committed"
    );
    assert_eq!(
        memory.dream_cursor().unwrap(),
        Cursor::default(),
        "the cursor did not move"
    );
    let prepared = memory.prepare_dream(100_000).unwrap();
    assert_eq!(prepared.rolled_back, ["MEMORY.md"]);
    assert!(!dir.path().join("MEMORY.md").exists());
    assert!(
        memory.repo().unwrap().changed().unwrap().is_empty(),
        "files match the repository"
    );
    let outcome = memory
        .finish_dream(prepared, &ops, today(), next())
        .unwrap();
    assert_eq!(outcome.applied.len(), 3);
    assert!(outcome.commit.is_some());
    assert!(memory.repo().unwrap().changed().unwrap().is_empty());
}

#[test]
fn the_index_is_repaired_from_the_files_when_they_disagree() {
    let (dir, memory) = setup();
    memory
        .write("tea", "user", "likes tea", "Green.", today())
        .unwrap();
    memory
        .write("dog", "user", "has a dog", "Rex.", today())
        .unwrap();
    // By hand: one file deleted, one written without an index line.
    std::fs::remove_file(dir.path().join("memory/tea.md")).unwrap();
    std::fs::write(dir.path().join("memory/cat.md"), "A cat called Miso.\n").unwrap();
    let prepared = memory.prepare_dream(100_000).unwrap();
    assert!(prepared.repaired_index);
    let index = memory.index_text().unwrap().unwrap();
    assert!(!index.contains("tea.md"), "{index}");
    assert!(index.contains("(memory/dog.md) — has a dog"), "{index}");
    assert!(
        index.contains("[cat](memory/cat.md) — A cat called Miso."),
        "{index}"
    );
}

#[test]
fn a_write_that_fails_part_way_puts_back_what_was_written() {
    let (dir, memory) = setup();
    // A folder where the dream will write a file: the third write fails.
    std::fs::create_dir_all(dir.path().join("memory/zz.md")).unwrap();
    let prepared = memory.prepare_dream(100_000).unwrap();
    let ops = [
        op(r#"{"op":"update","path":"USER.md","content":"Ana, Porto."}"#),
        op(
            r#"{"op":"create","path":"memory/zz.md","type":"user","description":"zz","content":"zz"}"#,
        ),
    ];
    let err = memory
        .finish_dream(prepared, &ops, today(), next())
        .unwrap_err();
    assert!(err.to_string().contains("cannot write"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("USER.md")).unwrap(),
        "Ana, lives in Lisbon.\n",
        "the file written before the failure is put back"
    );
    assert!(!dir.path().join("MEMORY.md").exists());
    assert!(!journal::path(dir.path()).exists());
    assert_eq!(
        memory.dream_cursor().unwrap(),
        Cursor::default(),
        "the cursor did not move"
    );
}
