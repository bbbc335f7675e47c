//! Reading a field the way servers really send it. Every field of the wire types Pincer
//! reads (`openai::wire`, `anthropic::wire`, `error_body`, `window`) goes through
//! `lenient`: a field that is missing, `null` or of another shape than documented reads
//! as its default, and the rest of the message still counts. Compatible servers differ
//! in exactly such details (vLLM's `"tool_calls": null`, Ollama's arguments as an object,
//! Mistral's content as a list), and one odd field must not cost the text beside it.
//!
//! It never hides broken JSON: a syntax error still fails the whole message, where the
//! caller reports it.

use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::Value;

/// `T` if the field reads as one, else `T::default()`. For `#[serde(default,
/// deserialize_with = "lenient")]`.
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).unwrap_or_else(|err| {
        tracing::debug!(
            field = std::any::type_name::<T>(),
            %err,
            "a server sent a field in an unexpected shape; read as absent"
        );
        T::default()
    }))
}
