//! The memory files through `Memory`: writing, reading, forgetting, recall.

use super::*;

fn today() -> NaiveDate {
    "2026-11-22".parse().unwrap()
}

#[test]
fn missing_and_blank_files_are_none() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::new(dir.path(), dir.path().join(".state"));
    assert_eq!(memory.index().unwrap(), None);
    std::fs::write(dir.path().join("SOUL.md"), "  \n").unwrap();
    assert_eq!(memory.persona().unwrap(), None);
    std::fs::write(dir.path().join("MEMORY.md"), "- likes tea\n").unwrap();
    assert_eq!(memory.index().unwrap().unwrap().text, "- likes tea\n");
}

#[test]
fn a_memory_is_written_with_its_index_line_read_and_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::new(dir.path(), dir.path().join(".state"));
    let written = memory
        .write(
            "Dentist",
            "project",
            "dentist next Thursday",
            "Dr Silva, 9:00 next Thursday.",
            today(),
        )
        .unwrap();
    assert!(written.created);
    assert_eq!(written.dates.len(), 2);
    let index = memory.index_text().unwrap().unwrap();
    assert!(
        index.contains("- [Dentist](memory/dentist.md) — dentist Thursday 2026-11-26"),
        "{index}"
    );
    let entry = memory.read("dentist").unwrap();
    assert_eq!(entry.body, "Dr Silva, 9:00 Thursday 2026-11-26.");
    assert_eq!(entry.created, Some(today()));
    let again = memory
        .write(
            "dentist",
            "project",
            "moved",
            "Friday now",
            "2026-11-24".parse().unwrap(),
        )
        .unwrap();
    assert!(!again.created);
    assert_eq!(again.entry.created, Some(today()), "created is kept");
    assert_eq!(
        memory
            .index_text()
            .unwrap()
            .unwrap()
            .matches("dentist.md")
            .count(),
        1
    );
    memory.forget("memory/dentist.md").unwrap();
    assert!(!dir.path().join("memory/dentist.md").exists());
    assert!(!memory.index_text().unwrap().unwrap().contains("dentist"));
    let err = memory.read("dentist").unwrap_err().to_string();
    assert!(err.contains("no memory named"), "{err}");
}

#[test]
fn bad_input_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::new(dir.path(), dir.path().join(".state"));
    let err = memory
        .write("../../etc/x", "user", "d", "c", today())
        .unwrap_err();
    assert!(err.to_string().contains("looks like a path"), "{err}");
    let err = memory.write("x", "diary", "d", "c", today()).unwrap_err();
    assert!(
        err.to_string()
            .contains("user, feedback, project, reference"),
        "{err}"
    );
    let err = memory
        .write("x", "user", "d", &"y".repeat(20_000), today())
        .unwrap_err();
    assert!(err.to_string().contains("at most 16 KB"), "{err}");
    assert!(!dir.path().join("memory").exists() || memory.entries().unwrap().is_empty());
}

#[test]
fn recall_brings_the_relevant_files_with_their_age() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::new(dir.path(), dir.path().join(".state"));
    let old: NaiveDate = "2026-10-06".parse().unwrap();
    memory
        .write(
            "peanuts",
            "user",
            "allergic to peanuts",
            "Carries an EpiPen.",
            old,
        )
        .unwrap();
    memory
        .write(
            "bike",
            "project",
            "restoring a 1970s road bike",
            "Needs new tyres.",
            today(),
        )
        .unwrap();
    let recalled = memory
        .recall("Can you suggest a snack? Remember my allergies", today())
        .unwrap()
        .unwrap();
    assert!(recalled.contains("memory/peanuts.md"), "{recalled}");
    assert!(recalled.contains("47 days old") && recalled.contains("EpiPen"));
    assert!(!recalled.contains("bike"));
    assert_eq!(memory.recall("hi", today()).unwrap(), None);
    assert_eq!(
        memory.recall("quantum chromodynamics", today()).unwrap(),
        None
    );
}

#[test]
fn recall_for_several_messages_answers_each_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::new(dir.path(), dir.path().join(".state"));
    let day: NaiveDate = "2026-11-22".parse().unwrap();
    let asked = [("any snack ideas for my allergies?", day), ("hi", day)];
    // No memory files yet: nothing to recall for anyone.
    let none = memory.recall_all(&asked);
    assert!(none.iter().all(|r| matches!(r, Ok(None))), "{none:?}");
    memory
        .write("peanuts", "user", "allergic to peanuts", "EpiPen.", day)
        .unwrap();
    memory
        .write("bike", "project", "restoring a road bike", "Tyres.", day)
        .unwrap();
    let asked = [
        ("the road bike needs what?", day),
        ("hi", day),
        ("any snack ideas for my allergies?", day),
    ];
    let answers: Vec<Option<String>> = memory
        .recall_all(&asked)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let bike = answers[0].as_deref().unwrap();
    assert!(
        bike.contains("memory/bike.md") && !bike.contains("peanuts"),
        "{bike}"
    );
    assert_eq!(answers[1], None);
    let snack = answers[2].as_deref().unwrap();
    assert!(
        snack.contains("memory/peanuts.md") && !snack.contains("bike"),
        "{snack}"
    );
}
