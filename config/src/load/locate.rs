//! Finding where a setting was written: the line of a key in `config.toml` (from
//! `toml_edit` spans) or the environment variable that overrode it. Every error about a
//! key goes through [`Locator::locate`], so they all point the same way.

use std::path::Path;

use toml_edit::{Document, Item, TableLike, Value};

use super::env::EnvOverride;
use crate::Location;

/// Everything needed to say where a key path came from.
pub(crate) struct Locator<'a> {
    pub file: &'a Path,
    pub doc: &'a Document<String>,
    pub env: &'a [EnvOverride],
}

impl Locator<'_> {
    /// Where the value at `path` came from: an override whose path is a prefix of `path`
    /// (overrides win over the file), else the line of the deepest part of `path` written
    /// in the file, else just the file.
    pub(super) fn locate<S: AsRef<str>>(&self, path: &[S]) -> Location {
        let from_env = self
            .env
            .iter()
            .filter(|o| {
                o.path.len() <= path.len() && o.path.iter().zip(path).all(|(a, b)| a == b.as_ref())
            })
            .max_by_key(|o| o.path.len());
        if let Some(o) = from_env {
            return Location::Env { var: o.var.clone() };
        }
        Location::File {
            path: self.file.to_path_buf(),
            line: self.line_of(path),
        }
    }

    /// The line of the deepest part of `path` present in the file.
    pub(super) fn line_of<S: AsRef<str>>(&self, path: &[S]) -> Option<usize> {
        let offset = deepest_span_start(self.doc.as_item(), path)?;
        Some(line_at(self.doc.raw(), offset))
    }
}

fn deepest_span_start<S: AsRef<str>>(item: &Item, path: &[S]) -> Option<usize> {
    let (first, rest) = path.split_first()?;
    let first = first.as_ref();
    match item {
        Item::Table(t) => in_table(t, first, rest),
        Item::Value(Value::InlineTable(t)) => in_table(t, first, rest),
        Item::Value(Value::Array(a)) => {
            let child = a.get(first.parse::<usize>().ok()?)?;
            child.span().or_else(|| a.span()).map(|s| s.start)
        }
        Item::ArrayOfTables(a) => {
            let child = a.get(first.parse::<usize>().ok()?)?;
            let (next, rest) = rest.split_first()?;
            in_table(child, next.as_ref(), rest).or_else(|| child.span().map(|s| s.start))
        }
        _ => None,
    }
}

fn in_table<S: AsRef<str>>(table: &dyn TableLike, first: &str, rest: &[S]) -> Option<usize> {
    let (key, child) = table.get_key_value(first)?;
    deepest_span_start(child, rest).or_else(|| key.span().or_else(|| child.span()).map(|s| s.start))
}

/// `channels.telegram.allow_from.0` → `channels.telegram.allow_from[0]`.
pub(crate) fn display_path(path: &[String]) -> String {
    let mut out = String::new();
    for part in path {
        if part.parse::<usize>().is_ok() && !out.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}

/// 1-based line of a byte offset.
pub(crate) fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// 1-based column (in characters) of a byte offset.
pub(crate) fn column_at(text: &str, offset: usize) -> usize {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let line_start = text[..end].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..end].chars().count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document<String> {
        Document::parse(text.to_owned()).unwrap()
    }

    #[test]
    fn finds_keys_in_headers_dotted_keys_inline_tables_and_arrays() {
        let d = doc(
            "version = 1\n\n[agent]\nmax_iterations = 5\n\n[channels.telegram]\nallow_from = [\n  1,\n  \"x\",\n]\n[providers]\nlocal = { kind = \"openai\",\n base_url = 3 }\n",
        );
        let loc = Locator {
            file: Path::new("c.toml"),
            doc: &d,
            env: &[],
        };
        assert_eq!(loc.line_of(&["agent", "max_iterations"]), Some(4));
        assert_eq!(loc.line_of(&["agent"]), Some(3));
        assert_eq!(
            loc.line_of(&["channels", "telegram", "allow_from"]),
            Some(7)
        );
        assert_eq!(
            loc.line_of(&["channels", "telegram", "allow_from", "1"]),
            Some(9)
        );
        assert_eq!(loc.line_of(&["channels", "telegram"]), Some(6));
        assert_eq!(loc.line_of(&["providers", "local", "base_url"]), Some(13));
        assert_eq!(loc.line_of(&["agent", "nope"]), Some(3));
        assert_eq!(loc.line_of(&["nope"]), None);
    }

    #[test]
    fn env_overrides_win() {
        let d = doc("[agent]\nmax_iterations = 5\n");
        let env = [EnvOverride {
            var: "PINCER_AGENT__MAX_ITERATIONS".into(),
            path: vec!["agent".into(), "max_iterations".into()],
            value: "x".into(),
        }];
        let loc = Locator {
            file: Path::new("c.toml"),
            doc: &d,
            env: &env,
        };
        assert_eq!(
            loc.locate(&["agent", "max_iterations"]),
            Location::Env {
                var: "PINCER_AGENT__MAX_ITERATIONS".into()
            }
        );
        assert_eq!(
            loc.locate(&["agent"]),
            Location::File {
                path: "c.toml".into(),
                line: Some(1)
            }
        );
    }

    #[test]
    fn paths_show_indices_in_brackets() {
        let p: Vec<String> = ["a", "b", "0"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(display_path(&p), "a.b[0]");
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(column_at("ab\ncdé=x", 8), 5);
        assert_eq!(line_at("a\nb\nc", 4), 3);
    }
}
