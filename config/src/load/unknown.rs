//! Unknown keys: every key of `config.toml` and every override path is checked against the
//! registry in `keys`, and the first stranger (in document order, then overrides by name)
//! is reported with its line and the nearest valid key. Runs before typed extraction so a
//! typo is reported as a typo, not as whatever type error it happens to cause.

use toml_edit::{Item, TableLike, Value};

use super::env::EnvOverride;
use super::keys::{Node, ROOT, suggest};
use super::locate::{Locator, line_at};
use crate::{ConfigError, Location};

/// A key that is not allowed where it is written, or a value where a table belongs.
struct Stranger {
    offset: usize,
    path: Vec<String>,
    kind: StrangerKind,
}

enum StrangerKind {
    /// Not a key of its table; carries the table's valid keys.
    Unknown(Vec<String>),
    /// A table's place holds a value or `[[array]]`; carries what was found, in words.
    NotATable(&'static str),
}

pub(crate) fn check(locator: &Locator<'_>) -> Result<(), ConfigError> {
    let mut found = Vec::new();
    walk(locator.doc.as_table(), &ROOT, &mut Vec::new(), &mut found);
    if let Some(s) = found.into_iter().min_by_key(|s| s.offset) {
        let location = Location::File {
            path: locator.file.to_path_buf(),
            line: Some(line_at(locator.doc.raw(), s.offset)),
        };
        return Err(match s.kind {
            StrangerKind::Unknown(valid) => error(location, s.path, valid),
            StrangerKind::NotATable(found) => ConfigError::WrongType {
                location,
                key: s.path.join("."),
                expected: format!("a table ([{}])", s.path.join(".")),
                found: found.to_owned(),
            },
        });
    }
    for o in locator.env {
        check_env(o)?;
    }
    Ok(())
}

fn walk(table: &dyn TableLike, node: &Node, path: &mut Vec<String>, found: &mut Vec<Stranger>) {
    for (name, item) in table.iter() {
        path.push(name.to_owned());
        match node.child(name) {
            Ok(child) => {
                if let Err(kind) = walk_item(item, child, path, found) {
                    found.push(stranger(table, name, item, path, kind));
                }
            }
            Err(valid) => found.push(stranger(
                table,
                name,
                item,
                path,
                StrangerKind::Unknown(valid),
            )),
        }
        path.pop();
    }
}

fn stranger(
    table: &dyn TableLike,
    name: &str,
    item: &Item,
    path: &[String],
    kind: StrangerKind,
) -> Stranger {
    let span = table
        .get_key_value(name)
        .and_then(|(key, _)| key.span())
        .or_else(|| item.span());
    Stranger {
        offset: span.map_or(0, |s| s.start),
        path: path.to_vec(),
        kind,
    }
}

/// Descends into tables. A value or `[[array]]` where a table belongs is reported here,
/// because serde would otherwise read a list positionally as the table's fields; a table
/// where a value belongs is left to extraction, which names the expected type.
fn walk_item(
    item: &Item,
    node: &Node,
    path: &mut Vec<String>,
    found: &mut Vec<Stranger>,
) -> Result<(), StrangerKind> {
    if matches!(node, Node::Leaf) {
        return Ok(());
    }
    match item {
        Item::Table(t) => walk(t, node, path, found),
        Item::Value(Value::InlineTable(t)) => walk(t, node, path, found),
        Item::ArrayOfTables(_) => return Err(StrangerKind::NotATable("an array of tables")),
        Item::Value(Value::Array(_)) => return Err(StrangerKind::NotATable("a list")),
        Item::Value(Value::String(_)) => return Err(StrangerKind::NotATable("a string")),
        Item::Value(Value::Integer(_)) => return Err(StrangerKind::NotATable("an integer")),
        Item::Value(Value::Float(_)) => return Err(StrangerKind::NotATable("a number")),
        Item::Value(Value::Boolean(_)) => return Err(StrangerKind::NotATable("a boolean")),
        Item::Value(Value::Datetime(_)) => return Err(StrangerKind::NotATable("a date")),
        Item::None => {}
    }
    Ok(())
}

fn check_env(o: &EnvOverride) -> Result<(), ConfigError> {
    let mut node = &ROOT;
    for (depth, key) in o.path.iter().enumerate() {
        match node.child(key) {
            Ok(child) => node = child,
            Err(valid) => {
                let location = Location::Env { var: o.var.clone() };
                return Err(error(location, o.path[..=depth].to_vec(), valid));
            }
        }
    }
    Ok(())
}

fn error(location: Location, path: Vec<String>, valid: Vec<String>) -> ConfigError {
    let last = path.last().map(String::as_str).unwrap_or_default();
    ConfigError::UnknownKey {
        location,
        key: path.join("."),
        suggestion: suggest(last, &valid),
        valid,
    }
}
