//! A request body as both wire formats send it: the fields built as JSON, then the tool
//! list serialized straight from the shared specs. The schemas are most of a request's
//! bytes and the same every turn, so they are never copied into a JSON tree first.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// `fields` (a JSON object) followed by `"tools": tools` when there are any.
pub struct Body<T> {
    pub fields: Value,
    pub tools: Option<T>,
}

impl<T: Serialize> Serialize for Body<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.fields.as_object().into_iter().flatten() {
            map.serialize_entry(key, value)?;
        }
        if let Some(tools) = &self.tools {
            map.serialize_entry("tools", tools)?;
        }
        map.end()
    }
}
