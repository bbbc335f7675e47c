//! An MCP server's `elicitation/create` as questions to the owner, and their answers as
//! the server's `ElicitResult`.
//!
//! - A form (a flat object of text, number, yes/no and choice fields) is asked one field
//!   at a time; a field's default is its first choice, an optional field without one can
//!   be skipped, and every question can be declined. An answer that does not fit the
//!   field is asked again (three tries, then `cancel`).
//! - A URL is shown with the host it goes to, and the owner says whether they will open
//!   it (Pincer opens nothing itself; only `http`/`https` links are shown at all).
//!
//! What the server sends is untrusted: its message, labels and link are shown with
//! control, bidi and zero-width characters escaped (as approval questions are), cut to a
//! readable length, and always under "MCP server NAME asks", so it cannot pose as Pincer.
//! An answer "no" is `decline`; nobody answering in time is `cancel`. This file must not
//! decide who is asked (`asking` does).

use async_trait::async_trait;
use pincer_channels::approval::MAX_OPTIONS;
use pincer_channels::escape::escape_hidden;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::{Map, Value};

use crate::tools::approval::Approval;

/// Most characters of the server's message shown.
const MAX_MESSAGE_CHARS: usize = 2000;
/// Most characters of a field's label, description or choice shown.
const MAX_LABEL_CHARS: usize = 200;
/// How often a field is asked before the form is given up (`cancel`).
const TRIES: usize = 3;

const DECLINE: &str = "Decline";
const SKIP: &str = "Skip";
const OPEN: &str = "I will open it";

/// Whoever answers the questions: one question, its choices, the answer.
#[async_trait]
pub(super) trait Ask: Send + Sync {
    async fn ask(&self, question: String, options: Vec<String>) -> Approval;
}

/// Ask the owner what `request` asks, through `ask`, and say what they answered.
pub(super) async fn answer(
    server: &str,
    request: ElicitRequestParams,
    ask: &dyn Ask,
) -> ElicitResult {
    match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => form(server, &message, &requested_schema, ask).await,
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            link(server, &message, &url, ask).await
        }
        _ => ElicitResult::new(ElicitationAction::Decline),
    }
}

/// The server's text as shown to the owner: hidden characters escaped, cut to `max`.
fn shown(text: &str, max: usize) -> String {
    let text = escape_hidden(text.trim());
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.into_owned(),
    }
}

/// What an answer to one question does.
#[derive(Debug, Clone, PartialEq)]
enum Pick {
    Value(Value),
    Skip,
    Decline,
}

/// Ask `question` until an answer `read` accepts, `TRIES` times at most. `Err` is the
/// action that ends the elicitation: `decline` for a no, `cancel` for no answer.
async fn ask_until<T>(
    ask: &dyn Ask,
    question: &str,
    picks: &[(String, Pick)],
    read: impl Fn(Option<&Pick>, &str) -> Result<T, Misfit>,
) -> Result<T, ElicitationAction> {
    let options: Vec<String> = picks.iter().map(|(label, _)| label.clone()).collect();
    let mut problem = String::new();
    for _ in 0..TRIES {
        let typed = match ask
            .ask(format!("{problem}{question}"), options.clone())
            .await
        {
            Approval::Answered(typed) => typed,
            Approval::Refused(_) | Approval::Deny => return Err(ElicitationAction::Decline),
            _ => return Err(ElicitationAction::Cancel),
        };
        let typed = typed.trim();
        let picked = picks
            .iter()
            .find(|(label, _)| label.eq_ignore_ascii_case(typed))
            .map(|(_, pick)| pick);
        if picked == Some(&Pick::Decline) {
            return Err(ElicitationAction::Decline);
        }
        match read(picked, typed) {
            Ok(value) => return Ok(value),
            Err(why) => problem = format!("That answer does not fit: {why}. "),
        }
    }
    Err(ElicitationAction::Cancel)
}

async fn form(
    server: &str,
    message: &str,
    schema: &ElicitationSchema,
    ask: &dyn Ask,
) -> ElicitResult {
    let fields = match fields(schema) {
        Ok(fields) => fields,
        Err(why) => {
            tracing::info!(mcp_server = %server, "an elicitation was declined: {why}");
            return ElicitResult::new(ElicitationAction::Decline);
        }
    };
    let intro = format!(
        "MCP server {server} asks: {}",
        shown(message, MAX_MESSAGE_CHARS)
    );
    let mut content = Map::new();
    for (n, field) in fields.iter().enumerate() {
        let counter = match fields.len() {
            1 => String::new(),
            total => format!("({} of {total}) ", n + 1),
        };
        let (details, picks) = field.question();
        let question = format!("{intro}\n{counter}{details}");
        let read = |picked: Option<&Pick>, typed: &str| match picked {
            Some(pick) => Ok(pick.clone()),
            None => field.kind.read(typed).map(Pick::Value),
        };
        match ask_until(ask, &question, &picks, read).await {
            Ok(Pick::Value(value)) => {
                content.insert(field.name.clone(), value);
            }
            Ok(_) => {}
            Err(action) => return ElicitResult::new(action),
        }
    }
    ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
}

async fn link(server: &str, message: &str, url: &str, ask: &dyn Ask) -> ElicitResult {
    let parsed = reqwest::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "https" | "http"));
    let Some(parsed) = parsed else {
        tracing::info!(mcp_server = %server, "an elicitation was declined: its link is not http(s)");
        return ElicitResult::new(ElicitationAction::Decline);
    };
    let host = parsed.host_str().unwrap_or_default();
    let question = format!(
        "MCP server {server} asks you to open a link: {}\n{}\nIt goes to {}. Pincer does not open it for you: open it yourself if you agree.",
        shown(message, MAX_MESSAGE_CHARS),
        shown(parsed.as_str(), MAX_MESSAGE_CHARS),
        shown(host, MAX_LABEL_CHARS),
    );
    let picks = [
        (OPEN.to_string(), Pick::Value(Value::Bool(true))),
        (DECLINE.to_string(), Pick::Decline),
    ];
    let read = |picked: Option<&Pick>, _: &str| picked.cloned().ok_or(Misfit::OpenOrDecline);
    match ask_until(ask, &question, &picks, read).await {
        Ok(_) => ElicitResult::new(ElicitationAction::Accept),
        Err(action) => ElicitResult::new(action),
    }
}

/// Why a form cannot be asked (it is declined).
#[derive(Debug, thiserror::Error)]
enum Unaskable {
    #[error("{0}")]
    Spec(#[from] serde_json::Error),
    #[error("field {0} is a list without choices")]
    ListWithoutChoices(String),
    #[error("field {name} has type {kind}, which cannot be asked")]
    Type { name: String, kind: String },
}

/// Why an answer does not fit its field: the words after "That answer does not fit: ",
/// and the field is asked again.
#[derive(Debug, thiserror::Error)]
enum Misfit {
    /// The typed text, as shown.
    #[error("\"{0}\" is not one of the choices")]
    NotAChoice(String),
    #[error("at least {0} characters")]
    TooShort(u64),
    #[error("at most {0} characters")]
    TooLong(u64),
    #[error("a whole number is needed")]
    NotWhole,
    #[error("a number is needed")]
    NotNumber,
    #[error("at least {0}")]
    Below(f64),
    #[error("at most {0}")]
    Above(f64),
    #[error("answer yes or no")]
    NotYesNo,
    #[error("answer \"{OPEN}\" or \"{DECLINE}\"")]
    OpenOrDecline,
}

/// One field of a form.
struct Field {
    name: String,
    label: String,
    description: Option<String>,
    kind: Kind,
    default: Option<Value>,
    required: bool,
}

enum Kind {
    Text {
        min: Option<u64>,
        max: Option<u64>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    /// One of these (label, value).
    One(Vec<(String, Value)>),
    /// Any of these, answered comma-separated.
    Many(Vec<(String, Value)>),
}

/// The form's fields in the order the server sent them; `Err` for a field Pincer
/// cannot ask for (the form is then declined).
fn fields(schema: &ElicitationSchema) -> Result<Vec<Field>, Unaskable> {
    let order = schema
        .property_order
        .clone()
        .unwrap_or_else(|| schema.properties.keys().cloned().collect());
    let required = schema.required.clone().unwrap_or_default();
    order
        .iter()
        .filter_map(|name| Some((name, schema.properties.get(name)?)))
        .map(|(name, definition)| {
            let spec = serde_json::to_value(definition)?;
            Field::from_schema(name, &spec, required.contains(name))
        })
        .collect()
}

impl Field {
    fn from_schema(name: &str, spec: &Value, required: bool) -> Result<Field, Unaskable> {
        let number = |key: &str| spec.get(key).and_then(Value::as_f64);
        let count = |key: &str| spec.get(key).and_then(Value::as_u64);
        let kind = match (choices(spec), spec["type"].as_str()) {
            (Some(choices), _) => Kind::One(choices),
            (None, Some("array")) => match choices(&spec["items"]) {
                Some(choices) => Kind::Many(choices),
                None => return Err(Unaskable::ListWithoutChoices(name.to_string())),
            },
            (None, Some("string")) => Kind::Text {
                min: count("minLength"),
                max: count("maxLength"),
            },
            (None, Some(kind @ ("number" | "integer"))) => Kind::Number {
                integer: kind == "integer",
                min: number("minimum"),
                max: number("maximum"),
            },
            (None, Some("boolean")) => Kind::Boolean,
            (None, other) => {
                return Err(Unaskable::Type {
                    name: name.to_string(),
                    kind: other.unwrap_or("none").to_string(),
                });
            }
        };
        Ok(Field {
            name: name.to_string(),
            label: shown(spec["title"].as_str().unwrap_or(name), MAX_LABEL_CHARS),
            description: spec["description"]
                .as_str()
                .map(|d| shown(d, MAX_LABEL_CHARS)),
            default: spec.get("default").filter(|d| !d.is_null()).cloned(),
            kind,
            required,
        })
    }

    /// The field as asked ("Age — your age [a whole number]") and its choices: the
    /// default first, then the field's own, Skip for an optional field, Decline last.
    fn question(&self) -> (String, Vec<(String, Pick)>) {
        let mut text = self.label.clone();
        if let Some(description) = &self.description {
            text = format!("{text} — {description}");
        }
        text = format!("{text} [{}]", self.kind.hint());
        let mut picks: Vec<(String, Pick)> = Vec::new();
        let default = self.default.as_ref().filter(|d| self.kind.read_value(d));
        if let Some(default) = default {
            let label = format!("{} (default)", self.kind.label_of(default));
            picks.push((label, Pick::Value(default.clone())));
        }
        let own: Vec<(String, Value)> = match &self.kind {
            Kind::One(choices) => choices.clone(),
            Kind::Boolean => vec![
                ("yes".into(), Value::Bool(true)),
                ("no".into(), Value::Bool(false)),
            ],
            _ => Vec::new(),
        };
        let own: Vec<(String, Pick)> = own
            .into_iter()
            .filter(|(_, value)| Some(value) != default)
            .map(|(label, value)| (label, Pick::Value(value)))
            .collect();
        let mut tail = Vec::new();
        if !self.required && default.is_none() {
            tail.push((SKIP.to_string(), Pick::Skip));
        }
        tail.push((DECLINE.to_string(), Pick::Decline));
        let on_buttons = picks.len() + own.len() + tail.len() <= MAX_OPTIONS;
        if on_buttons {
            picks.extend(own);
        }
        let listed = match &self.kind {
            Kind::Many(choices) => Some(choices),
            Kind::One(choices) if !on_buttons => Some(choices),
            _ => None,
        };
        if let Some(choices) = listed {
            let labels: Vec<&str> = choices.iter().map(|(label, _)| label.as_str()).collect();
            text = format!("{text}\nChoices: {}", labels.join(", "));
        }
        picks.extend(tail);
        (text, picks)
    }
}

/// A field's choices: `enum` (with `enumNames`), or `oneOf`/`anyOf` of `{const, title}`.
fn choices(spec: &Value) -> Option<Vec<(String, Value)>> {
    if let Some(values) = spec["enum"].as_array() {
        let names = spec["enumNames"].as_array();
        let choices = values.iter().enumerate().map(|(n, value)| {
            let name = names.and_then(|names| names.get(n)?.as_str());
            (
                name.map_or_else(|| display(value), str::to_string),
                value.clone(),
            )
        });
        return Some(
            choices
                .map(|(l, v)| (shown(&l, MAX_LABEL_CHARS), v))
                .collect(),
        );
    }
    let titled = spec["oneOf"].as_array().or(spec["anyOf"].as_array())?;
    let choices = titled.iter().filter_map(|choice| {
        let value = choice.get("const")?.clone();
        let label = choice["title"]
            .as_str()
            .map_or_else(|| display(&value), str::to_string);
        Some((shown(&label, MAX_LABEL_CHARS), value))
    });
    Some(choices.collect())
}

/// A value as the owner reads it: a string without its quotes.
fn display(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl Kind {
    /// What kind of answer the field takes, in words.
    fn hint(&self) -> String {
        match self {
            Kind::Text { .. } => "text".into(),
            Kind::Number { integer: true, .. } => "a whole number".into(),
            Kind::Number { .. } => "a number".into(),
            Kind::Boolean => "yes or no".into(),
            Kind::One(_) => "one of the choices".into(),
            Kind::Many(_) => "one or more of the choices, separated by commas".into(),
        }
    }

    /// The label of `value` among the choices, else the value itself.
    fn label_of(&self, value: &Value) -> String {
        let listed = match self {
            Kind::One(choices) => choices.iter().find(|(_, v)| v == value),
            Kind::Boolean => {
                return if value == &Value::Bool(true) {
                    "yes"
                } else {
                    "no"
                }
                .into();
            }
            _ => None,
        };
        listed.map_or_else(
            || shown(&display(value), MAX_LABEL_CHARS),
            |(l, _)| l.clone(),
        )
    }

    /// Whether `value` is one this field takes (a server's default that is not, is not
    /// offered).
    fn read_value(&self, value: &Value) -> bool {
        match self {
            Kind::One(choices) => choices.iter().any(|(_, v)| v == value),
            Kind::Many(choices) => value
                .as_array()
                .is_some_and(|all| all.iter().all(|x| choices.iter().any(|(_, v)| v == x))),
            Kind::Boolean => value.is_boolean(),
            Kind::Number { .. } | Kind::Text { .. } => self.read(&display(value)).is_ok(),
        }
    }

    /// The value the owner typed, or why it does not fit.
    fn read(&self, typed: &str) -> Result<Value, Misfit> {
        let choose = |choices: &[(String, Value)], typed: &str| {
            choices
                .iter()
                .find(|(label, value)| {
                    label.eq_ignore_ascii_case(typed) || display(value).eq_ignore_ascii_case(typed)
                })
                .map(|(_, value)| value.clone())
                .ok_or_else(|| Misfit::NotAChoice(shown(typed, 80)))
        };
        match self {
            Kind::Text { min, max } => {
                let chars = typed.chars().count() as u64;
                match (min, max) {
                    (Some(min), _) if chars < *min => Err(Misfit::TooShort(*min)),
                    (_, Some(max)) if chars > *max => Err(Misfit::TooLong(*max)),
                    _ => Ok(Value::String(typed.to_string())),
                }
            }
            Kind::Number { integer, min, max } => {
                let value: Value = match integer {
                    true => typed
                        .parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| Misfit::NotWhole)?,
                    false => typed
                        .parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                        .ok_or(Misfit::NotNumber)?,
                };
                let n = value.as_f64().unwrap_or_default();
                match (min, max) {
                    (Some(min), _) if n < *min => Err(Misfit::Below(*min)),
                    (_, Some(max)) if n > *max => Err(Misfit::Above(*max)),
                    _ => Ok(value),
                }
            }
            Kind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "yes" | "true" => Ok(Value::Bool(true)),
                "no" | "false" => Ok(Value::Bool(false)),
                _ => Err(Misfit::NotYesNo),
            },
            Kind::One(choices) => choose(choices, typed),
            Kind::Many(choices) => typed
                .split(',')
                .map(str::trim)
                .filter(|part| !part.is_empty())
                .map(|part| choose(choices, part))
                .collect::<Result<Vec<Value>, Misfit>>()
                .map(Value::Array),
        }
    }
}

#[cfg(test)]
#[path = "elicit_tests.rs"]
mod tests;
