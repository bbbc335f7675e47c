//! Typed memory files, `memory/<slug>.md`: a frontmatter block (`name`,
//! `description`, `type`, `created`, `updated`) and a markdown body. This file owns
//! the file format and the rules for names; it does not touch the disk.

use chrono::NaiveDate;

use crate::MemoryError;

/// The folder of typed memory files, relative to the workspace.
pub const DIR: &str = "memory";
/// The most a typed file's body may hold.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// The most a description (one index line) may hold.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
const MAX_SLUG_CHARS: usize = 64;

/// What a memory is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// About the owner: who they are, what they like.
    User,
    /// How the owner wants the assistant to behave.
    Feedback,
    /// Ongoing work, plans, dates.
    Project,
    /// Where things are: links, accounts, documents.
    Reference,
}

impl Kind {
    pub const NAMES: &[&str] = &["user", "feedback", "project", "reference"];

    pub fn parse(text: &str) -> Option<Kind> {
        match text.trim().to_ascii_lowercase().as_str() {
            "user" => Some(Kind::User),
            "feedback" => Some(Kind::Feedback),
            "project" => Some(Kind::Project),
            "reference" => Some(Kind::Reference),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Feedback => "feedback",
            Kind::Project => "project",
            Kind::Reference => "reference",
        }
    }
}

/// One typed memory file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The file name without `.md`; the entry's identity.
    pub slug: String,
    pub name: String,
    pub description: String,
    pub kind: Kind,
    pub created: Option<NaiveDate>,
    pub updated: Option<NaiveDate>,
    pub body: String,
}

impl Entry {
    /// `memory/<slug>.md`.
    pub fn path(&self) -> String {
        path_of(&self.slug)
    }

    /// The file as written to disk.
    pub fn render(&self) -> String {
        let mut out = format!(
            "---\nname: {}\ndescription: {}\ntype: {}\n",
            one_line(&self.name),
            one_line(&self.description),
            self.kind.as_str()
        );
        if let Some(created) = self.created {
            out.push_str(&format!("created: {created}\n"));
        }
        if let Some(updated) = self.updated {
            out.push_str(&format!("updated: {updated}\n"));
        }
        out.push_str("---\n\n");
        out.push_str(self.body.trim());
        out.push('\n');
        out
    }

    /// Read a file leniently: a hand-written file without frontmatter is still an
    /// entry (named after its file, typed `reference`, described by its first line).
    pub fn parse(slug: &str, text: &str) -> Entry {
        let mut entry = Entry {
            slug: slug.to_string(),
            name: slug.to_string(),
            description: String::new(),
            kind: Kind::Reference,
            created: None,
            updated: None,
            body: text.trim().to_string(),
        };
        let mut lines = text.lines();
        if lines.next().map(str::trim) == Some("---") {
            let mut consumed = text.find('\n').map_or(text.len(), |n| n + 1);
            let mut closed = false;
            for line in lines {
                consumed += line.len() + 1;
                if line.trim() == "---" {
                    closed = true;
                    break;
                }
                let Some((key, value)) = line.split_once(':') else {
                    continue;
                };
                let value = value.trim().trim_matches('"').trim();
                match key.trim() {
                    "name" if !value.is_empty() => entry.name = value.to_string(),
                    "description" => entry.description = value.to_string(),
                    "type" => entry.kind = Kind::parse(value).unwrap_or(Kind::Reference),
                    "created" => entry.created = value.parse().ok(),
                    "updated" => entry.updated = value.parse().ok(),
                    _ => {}
                }
            }
            if closed {
                entry.body = text
                    .get(consumed.min(text.len())..)
                    .unwrap_or("")
                    .trim()
                    .to_string();
            }
        }
        if entry.description.is_empty() {
            entry.description = entry
                .body
                .lines()
                .map(|l| l.trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
                .map(|l| l.chars().take(MAX_DESCRIPTION_CHARS).collect())
                .unwrap_or_default();
        }
        entry
    }

    /// Days since the entry last changed, by its `updated` (else `created`) date.
    pub fn age_days(&self, today: NaiveDate) -> Option<i64> {
        let when = self.updated.or(self.created)?;
        Some((today - when).num_days().max(0))
    }

    /// "47 days old" for entries older than a week, else nothing.
    pub fn age_note(&self, today: NaiveDate) -> Option<String> {
        age_note(self.age_days(today)?)
    }
}

/// "47 days old" for ages over a week.
pub fn age_note(days: i64) -> Option<String> {
    (days > 7).then(|| format!("{days} days old"))
}

pub fn path_of(slug: &str) -> String {
    format!("{DIR}/{slug}.md")
}

/// The slug a name is filed under: lower case, letters and digits, `-` between words.
/// Names are short titles; anything that looks like a path is refused, with the fix.
pub fn slug(name: &str) -> Result<String, MemoryError> {
    let name = name.trim();
    let name = name
        .strip_prefix("memory/")
        .and_then(|n| n.strip_suffix(".md"))
        .unwrap_or(name);
    if name.contains(['/', '\\']) || name.contains("..") {
        return Err(MemoryError::Invalid(format!(
            "`{name}` looks like a path; a memory's name is a short title such as \"coffee preferences\" (it is filed as memory/coffee-preferences.md)"
        )));
    }
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug
        .trim_end_matches('-')
        .chars()
        .take(MAX_SLUG_CHARS)
        .collect();
    let slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        return Err(MemoryError::Invalid(
            "the name is empty; give a short title such as \"coffee preferences\"".into(),
        ));
    }
    Ok(slug)
}

/// Whether `slug` is one `slug()` could have produced (checked on paths from the dream).
pub fn is_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.chars().count() <= MAX_SLUG_CHARS
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && slug
            .chars()
            .all(|c| c == '-' || (c.is_alphanumeric() && !c.is_uppercase()))
}

/// Check a description: one line, not empty, at most 200 characters.
pub fn check_description(description: &str) -> Result<String, MemoryError> {
    let description = one_line(description);
    if description.is_empty() {
        return Err(MemoryError::Invalid(
            "`description` is empty; give one line saying what this memory is (it becomes the MEMORY.md index line)".into(),
        ));
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(MemoryError::Invalid(format!(
            "`description` is {} characters; keep it to one line of at most {MAX_DESCRIPTION_CHARS} and put detail in `content`",
            description.chars().count()
        )));
    }
    Ok(description)
}

/// Check a body's size.
pub fn check_body(body: &str) -> Result<(), MemoryError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(MemoryError::Invalid(format!(
            "the content is {} bytes; a memory file holds at most {} KB — keep the durable facts, or split it into several memories",
            body.len(),
            MAX_BODY_BYTES / 1024
        )));
    }
    Ok(())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_through_its_file() {
        let entry = Entry {
            slug: "coffee".into(),
            name: "Coffee".into(),
            description: "flat white, no sugar".into(),
            kind: Kind::User,
            created: "2026-10-01".parse().ok(),
            updated: "2026-11-20".parse().ok(),
            body: "Orders a flat white.\n\nNo sugar.".into(),
        };
        let text = entry.render();
        assert!(text.starts_with("---\nname: Coffee\n"));
        assert_eq!(Entry::parse("coffee", &text), entry);
    }

    #[test]
    fn a_hand_written_file_without_frontmatter_is_still_an_entry() {
        let entry = Entry::parse("garden", "# Tomatoes in the south bed\nwater daily\n");
        assert_eq!(entry.name, "garden");
        assert_eq!(entry.kind, Kind::Reference);
        assert_eq!(entry.description, "Tomatoes in the south bed");
    }

    #[test]
    fn names_become_slugs_and_paths_are_refused() {
        assert_eq!(slug("Coffee preferences!").unwrap(), "coffee-preferences");
        assert_eq!(slug("memory/coffee.md").unwrap(), "coffee");
        assert!(slug("../etc/passwd").is_err());
        assert!(slug("a/b").is_err());
        assert!(slug("  ").is_err());
        assert!(is_slug("coffee-preferences") && !is_slug("../x") && !is_slug("Caps"));
    }

    #[test]
    fn ages_show_after_a_week() {
        let entry = Entry::parse("x", "---\nupdated: 2026-10-06\n---\nbody");
        let today = "2026-11-22".parse().unwrap();
        assert_eq!(entry.age_note(today).as_deref(), Some("47 days old"));
        assert_eq!(entry.age_note("2026-10-10".parse().unwrap()), None);
    }
}
