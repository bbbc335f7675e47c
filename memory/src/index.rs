//! MEMORY.md, the index: one line per typed memory (`- [name](memory/slug.md) —
//! description`), plus whatever the owner writes there. The prompt gets at most 200
//! lines / 25 KB of it, with a visible warning when it was cut. The files are the
//! truth: when the index and the files disagree (a line for a file that is gone, a
//! file without a line), the index is repaired from the files.

use crate::entry::Entry;

/// The index file, relative to the workspace.
pub const FILE: &str = "MEMORY.md";
/// The most of MEMORY.md that goes into a prompt.
pub const MAX_LINES: usize = 200;
pub const MAX_BYTES: usize = 25 * 1024;

/// The MEMORY.md index as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// The capped text, ending with the warning when it was cut.
    pub text: String,
    /// Set when the file was over the cap and only its head is used.
    pub truncated: bool,
}

/// The head of the index within the caps, ending with a warning the model sees when
/// anything was cut.
pub fn cap(text: &str) -> Index {
    let mut out = String::new();
    let mut kept = 0;
    let total = text.lines().count();
    let mut truncated = false;
    for (n, line) in text.lines().enumerate() {
        if n >= MAX_LINES || out.len() + line.len() + 1 > MAX_BYTES {
            truncated = true;
            break;
        }
        out.push_str(line);
        out.push('\n');
        kept += 1;
    }
    if truncated {
        tracing::warn!(
            "MEMORY.md is over {MAX_LINES} lines or {MAX_BYTES} bytes; only its head is used — move detail into memory/<topic>.md files"
        );
        out.push_str(&format!(
            "[Warning: MEMORY.md is over its cap of {MAX_LINES} lines / {} KB; only the first {kept} of {total} lines are shown. Shorten it: one short line per memory, detail in the memory files.]\n",
            MAX_BYTES / 1024
        ));
    }
    Index {
        text: out,
        truncated,
    }
}

/// The index line of an entry.
pub fn line(entry: &Entry) -> String {
    format!(
        "- [{}]({}) — {}",
        entry.name.replace(['[', ']'], ""),
        entry.path(),
        entry.description
    )
}

/// The slug a line links to, if it is an entry line.
pub fn linked_slug(line: &str) -> Option<&str> {
    let start = line.find("](memory/")? + "](memory/".len();
    let rest = &line[start..];
    let end = rest.find(".md)")?;
    let slug = &rest[..end];
    (!slug.contains('/')).then_some(slug)
}

/// The index with the entry's line replaced (or added at the end).
pub fn upsert(text: &str, entry: &Entry) -> String {
    let new = line(entry);
    let mut replaced = false;
    let mut lines: Vec<String> = Vec::new();
    for old in text.lines() {
        if linked_slug(old) == Some(entry.slug.as_str()) {
            if !replaced {
                lines.push(new.clone());
                replaced = true;
            }
        } else {
            lines.push(old.to_string());
        }
    }
    if !replaced {
        if lines.is_empty() {
            lines.push("# Memory".into());
            lines.push(String::new());
        }
        lines.push(new);
    }
    join(&lines)
}

/// The index without the lines linking to `slug`.
pub fn remove(text: &str, slug: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .filter(|l| linked_slug(l) != Some(slug))
        .map(str::to_string)
        .collect();
    join(&lines)
}

/// Repair the index from the files: drop lines linking to files that are gone (and
/// duplicates), add lines for files that have none. `None` when they already agree.
pub fn reconcile(text: &str, entries: &[Entry]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    let mut changed = false;
    for old in text.lines() {
        match linked_slug(old) {
            Some(slug) if !entries.iter().any(|e| e.slug == slug) || seen.contains(&slug) => {
                changed = true;
            }
            Some(slug) => {
                seen.push(slug);
                lines.push(old.to_string());
            }
            None => lines.push(old.to_string()),
        }
    }
    for entry in entries {
        if !seen.contains(&entry.slug.as_str()) {
            if lines.is_empty() {
                lines.push("# Memory".into());
                lines.push(String::new());
            }
            lines.push(line(entry));
            changed = true;
        }
    }
    changed.then(|| join(&lines))
}

fn join(lines: &[String]) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Kind;

    fn entry(slug: &str, description: &str) -> Entry {
        Entry {
            slug: slug.into(),
            name: slug.into(),
            description: description.into(),
            kind: Kind::User,
            created: None,
            updated: None,
            body: String::new(),
        }
    }

    #[test]
    fn the_cap_is_200_lines_and_says_so() {
        let text: String = (0..300).map(|n| format!("- entry {n}\n")).collect();
        let index = cap(&text);
        assert!(index.truncated);
        assert_eq!(index.text.lines().count(), 201);
        assert!(index.text.contains("only the first 200 of 300 lines"));
        assert!(!cap("- one\n").truncated);
    }

    #[test]
    fn the_cap_is_25_kb() {
        let line = "x".repeat(1000);
        let text: String = (0..50).map(|_| format!("{line}\n")).collect();
        let index = cap(&text);
        assert!(index.truncated);
        assert!(index.text.len() <= MAX_BYTES + 300);
    }

    #[test]
    fn lines_are_replaced_added_and_removed_by_slug() {
        let text = upsert("", &entry("tea", "likes tea"));
        assert_eq!(text, "# Memory\n\n- [tea](memory/tea.md) — likes tea\n");
        let text = upsert(&text, &entry("tea", "likes green tea"));
        assert!(text.contains("likes green tea") && !text.contains("— likes tea"));
        let text = upsert(&text, &entry("dog", "has a dog"));
        assert_eq!(remove(&text, "tea").lines().count(), 3);
    }

    #[test]
    fn the_index_is_repaired_from_the_files() {
        let text = "# Memory\nnotes by hand\n- [gone](memory/gone.md) — old\n- [tea](memory/tea.md) — tea\n";
        let fixed = reconcile(text, &[entry("tea", "tea"), entry("dog", "dog")]).unwrap();
        assert_eq!(
            fixed,
            "# Memory\nnotes by hand\n- [tea](memory/tea.md) — tea\n- [dog](memory/dog.md) — dog\n"
        );
        assert_eq!(
            reconcile(&fixed, &[entry("tea", "x"), entry("dog", "y")]),
            None
        );
    }
}
