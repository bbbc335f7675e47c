//! What the trust tests share: the cast (an owner, a member, a guest, an allowed
//! group), the tools a model request offered and the tool results it carried, and an
//! owner's memory whose every part carries a marker to look for in what the model saw.

use pincer_fakes::Recorded;
use serde_json::Value;

use super::PATIENCE;
use super::telegram::Setup;

pub(crate) const GROUP: i64 = -1001;
pub(crate) const OWNER: i64 = 42;
pub(crate) const MEMBER: i64 = 7;
pub(crate) const GUEST: i64 = 9;

/// `owners = ["telegram:42"]`, for `[agent]`.
pub(crate) fn owners() -> String {
    format!("owners = [\"telegram:{OWNER}\"]")
}

/// Every tool a request offered, by name and sorted: those offered whole and those
/// `tool_search`'s description lists to load (`agent.always_tools` leaves them out of
/// the request), `tool_search` itself left out.
pub(crate) fn offered_tools(body: &Value) -> Vec<String> {
    let mut names = tool_names(body);
    let search = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["function"]["name"] == "tool_search");
    if let Some(listed) = search
        .and_then(|t| t["function"]["description"].as_str())
        .and_then(|d| d.split_once("Not listed, load by name: "))
    {
        names.extend(listed.1.split("; ").filter_map(|line| {
            let name = line.split(": ").next()?.split('.').next()?;
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
                .then(|| name.to_string())
        }));
    }
    names.retain(|n| n != "tool_search");
    names.sort();
    names
}

/// The names of the tools a request offered whole, in order.
pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The content of every tool result a request carried, in order.
pub(crate) fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Wait until the model has received `n` requests.
pub(crate) async fn requests(s: &Setup, n: usize) -> Vec<Recorded> {
    let got = s.model.wait_for_requests(n, PATIENCE).await;
    assert!(got.len() >= n, "{} of {n} model requests came", got.len());
    got
}

/// The owner's profile, memory index and one memory file, each with a marker.
pub(crate) fn owner_memory(s: &Setup) {
    let ws = s.home.workspace();
    std::fs::create_dir_all(ws.join("memory")).unwrap();
    std::fs::write(ws.join("SOUL.md"), "SOULMARK: be kind.\n").unwrap();
    std::fs::write(ws.join("USER.md"), "USERMARK: the owner lives in Lyon.\n").unwrap();
    std::fs::write(
        ws.join("MEMORY.md"),
        "- [cat](memory/cat.md) — INDEXMARK the owner's cat\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("memory/cat.md"),
        "---\nname: cat\ndescription: the owner's cat\ntype: user\n---\nRECALLMARK The cat is called Mochi.\n",
    )
    .unwrap();
}

/// Whether any of the owner's memory markers (besides the persona) is in `text`.
pub(crate) fn holds_owner_memory(text: &str) -> Option<&'static str> {
    ["USERMARK", "INDEXMARK", "RECALLMARK"]
        .into_iter()
        .find(|m| text.contains(m))
}
