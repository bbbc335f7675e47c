//! A request's parameters as one JSON object, from wherever the client put them: the
//! query string, a JSON body, a form body or a multipart body (teloxide uses JSON, and
//! multipart when it uploads a file). Uploaded files are kept aside with their bytes.
//!
//! Form and multipart values stay strings; the accessors read numbers and booleans from
//! either form. Fields whose Bot API type is an object or array are parsed from their
//! JSON text, as Telegram does.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use serde_json::{Map, Value};

/// Parameters whose value is JSON text in a form or multipart body.
const JSON_FIELDS: &[&str] = &[
    "reply_parameters",
    "reply_markup",
    "entities",
    "caption_entities",
    "link_preview_options",
    "commands",
    "scope",
    "allowed_updates",
    "reaction",
    "media",
];

/// One uploaded file.
#[derive(Debug, Clone)]
pub(crate) struct Upload {
    /// The part's file name; `""` if the client gave none.
    pub name: String,
    pub bytes: Bytes,
}

/// The parameters of one request.
#[derive(Debug, Default)]
pub(crate) struct Params {
    /// Always a JSON object.
    pub value: Value,
    /// Uploaded files by the parameter that attached them (`document` for
    /// `"document": "attach://x"`), or by their own part name if nothing did.
    pub uploads: HashMap<String, Upload>,
}

impl Params {
    pub(crate) fn get(&self, key: &str) -> &Value {
        &self.value[key]
    }

    /// A string parameter; numbers are given as their text.
    pub(crate) fn str(&self, key: &str) -> Option<String> {
        match self.get(key) {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    pub(crate) fn i64(&self, key: &str) -> Option<i64> {
        as_i64(self.get(key))
    }

    pub(crate) fn bool(&self, key: &str) -> bool {
        match self.get(key) {
            Value::Bool(b) => *b,
            Value::String(s) => s == "true" || s == "True" || s == "1",
            _ => false,
        }
    }
}

/// A JSON number or a string holding one.
pub(crate) fn as_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A body that could not be read.
#[derive(Debug, Clone)]
pub(crate) struct Unreadable {
    /// The body was over the size limit (Telegram answers 413).
    pub too_large: bool,
    pub why: String,
}

impl From<String> for Unreadable {
    fn from(why: String) -> Unreadable {
        Unreadable {
            too_large: false,
            why,
        }
    }
}

impl Unreadable {
    fn of(status: StatusCode, why: String) -> Unreadable {
        Unreadable {
            too_large: status == StatusCode::PAYLOAD_TOO_LARGE,
            why,
        }
    }
}

/// Reads every parameter of `request`; `Err` is a body that does not parse.
pub(crate) async fn read(request: Request) -> Result<Params, Unreadable> {
    let mut map = Map::new();
    if let Some(query) = request.uri().query() {
        add_pairs(&mut map, query.as_bytes());
    }
    let content_type = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut uploads = HashMap::new();
    if content_type.starts_with("multipart/form-data") {
        let multipart = Multipart::from_request(request, &())
            .await
            .map_err(|e| Unreadable::of(e.status(), e.body_text()))?;
        uploads = read_multipart(multipart, &mut map).await?;
    } else {
        let body = Bytes::from_request(request, &())
            .await
            .map_err(|e| Unreadable::of(e.status(), e.body_text()))?;
        if content_type.starts_with("application/x-www-form-urlencoded") {
            add_pairs(&mut map, &body);
        } else if !body.iter().all(u8::is_ascii_whitespace) {
            match serde_json::from_slice::<Value>(&body) {
                Ok(Value::Object(fields)) => map.extend(fields),
                Ok(_) => return Err(String::from("the JSON body is not an object").into()),
                Err(e) => return Err(format!("the body is not JSON: {e}").into()),
            }
        }
    }
    Ok(Params {
        value: Value::Object(map),
        uploads,
    })
}

fn add_pairs(map: &mut Map<String, Value>, raw: &[u8]) {
    for (key, value) in form_urlencoded::parse(raw) {
        let value = text_value(&key, value.into_owned());
        map.insert(key.into_owned(), value);
    }
}

/// A text value as the parameter's type wants it: JSON fields parsed, others a string.
fn text_value(key: &str, text: String) -> Value {
    if JSON_FIELDS.contains(&key)
        && let Ok(parsed) = serde_json::from_str::<Value>(&text)
    {
        return parsed;
    }
    Value::String(text)
}

async fn read_multipart(
    mut multipart: Multipart,
    map: &mut Map<String, Value>,
) -> Result<HashMap<String, Upload>, Unreadable> {
    let unreadable =
        |e: axum::extract::multipart::MultipartError| Unreadable::of(e.status(), e.body_text());
    let mut files: Vec<(String, Upload)> = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(unreadable)? {
        let name = field.name().unwrap_or_default().to_string();
        let file_name = field.file_name().map(str::to_string);
        match file_name {
            Some(file_name) => {
                let bytes = field.bytes().await.map_err(unreadable)?;
                let upload = Upload {
                    name: file_name,
                    bytes,
                };
                files.push((name, upload));
            }
            None => {
                let text = field.text().await.map_err(unreadable)?;
                let value = text_value(&name, text);
                map.insert(name, value);
            }
        }
    }
    let mut uploads = HashMap::new();
    for (part, upload) in files {
        let attach = format!("attach://{part}");
        let owner = map
            .iter()
            .find(|(_, v)| v.as_str() == Some(attach.as_str()))
            .map(|(k, _)| k.clone())
            .unwrap_or(part);
        let note = serde_json::json!({"file_name": upload.name, "size": upload.bytes.len()});
        map.insert(owner.clone(), note);
        uploads.insert(owner, upload);
    }
    Ok(uploads)
}
