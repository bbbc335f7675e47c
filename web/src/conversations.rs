//! `/conversations`: every session by channel, newest first, with a search over keys
//! and what was said (the `conversation_search` tool's full-text index: the messages
//! found are listed with their words marked, each linking into its transcript);
//! `/conversations/{id}`: one transcript, tool calls folded with their results,
//! pictures shown (`/media/inbox/…` serves them from the workspace inbox, nothing
//! else).

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path};
use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::WebState;
use super::auth::Login;
use super::layout::{self, when};
use pincer_core::provider::Part;
use pincer_core::store::{Hit, MAX_HITS, Role, SearchQuery, SessionInfo, StoredMessage};

/// Sessions a search shows at most.
const FOUND: usize = 200;
/// The largest picture the panel serves.
const MAX_PICTURE: u64 = 20 << 20;

#[derive(serde::Deserialize, Default)]
pub(crate) struct Search {
    #[serde(default)]
    q: String,
    #[serde(default)]
    channel: String,
}

/// `GET /conversations?q=…&channel=…`.
pub(crate) async fn list(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Query(search): Query<Search>,
) -> Response {
    let store = &state.agent.store();
    let all = match store.sessions().await {
        Ok(all) => all,
        Err(err) => return failed(&login, &format!("cannot read the sessions: {err}")),
    };
    let query = search.q.trim();
    let (found, hits): (Option<Vec<i64>>, Vec<Hit>) = if query.is_empty() {
        (None, Vec::new())
    } else {
        let said = SearchQuery {
            text: query.to_string(),
            channel: (!search.channel.is_empty()).then(|| search.channel.clone()),
            limit: MAX_HITS,
            ..SearchQuery::default()
        };
        match (
            store.sessions_keyed(query, FOUND).await,
            store.search_said(said).await,
        ) {
            (Ok(mut ids), Ok(hits)) => {
                ids.extend(hits.iter().map(|h| h.session_id));
                (Some(ids), hits)
            }
            (Err(err), _) | (_, Err(err)) => {
                return failed(&login, &format!("the search failed: {err}"));
            }
        }
    };
    let mut by_channel: BTreeMap<String, Vec<&SessionInfo>> = BTreeMap::new();
    for session in &all {
        let channel = prefix(&session.key);
        if !search.channel.is_empty() && channel != search.channel {
            continue;
        }
        if found.as_ref().is_some_and(|ids| !ids.contains(&session.id)) {
            continue;
        }
        by_channel.entry(channel).or_default().push(session);
    }
    let channels: Vec<String> = {
        let mut names: Vec<String> = all.iter().map(|s| prefix(&s.key)).collect();
        names.sort();
        names.dedup();
        names
    };
    let tz = state.agent.timezone();
    let body = html! {
        form.search method="get" action="/conversations" {
            input type="search" name="q" value=(search.q) placeholder="Search words or session keys" aria-label="Search";
            select name="channel" aria-label="Channel" {
                option value="" { "All channels" }
                @for c in &channels {
                    option value=(c) selected[*c == search.channel] { (c) }
                }
            }
            button type="submit" { "Search" }
        }
        @if !hits.is_empty() {
            h2 { "Messages " span.muted { "(" (hits.len()) ")" } }
            div.table-wrap { table {
                tr { th { "Said" } th { "Who" } th { "Session" } th { "When" } }
                @for hit in &hits {
                    tr {
                        td { (marked(&hit.snippet)) }
                        td { @match hit.role { Role::User => (hit.sender.as_deref().unwrap_or("user")), _ => "assistant" } }
                        td { a href=(format!("/conversations/{}#m{}", hit.session_id, hit.message_id)) { (hit.key) } }
                        td { (when(hit.created_at, tz)) }
                    }
                }
            } }
        }
        @if by_channel.is_empty() {
            p.muted { @if query.is_empty() { "No conversations yet." } @else { "Nothing matches." } }
        }
        @for (channel, sessions) in &by_channel {
            h2 { (channel) " " span.muted { "(" (sessions.len()) ")" } }
            div.table-wrap { table {
                tr { th { "Session" } th.num { "Messages" } th { "Last activity" } }
                @for s in sessions {
                    tr {
                        td { a href=(format!("/conversations/{}", s.id)) { (s.key) }
                             @if !s.current { " " span.muted { "(closed)" } } }
                        td.num { (s.messages) }
                        td { (when(s.updated_at, tz)) }
                    }
                }
            } }
        }
    };
    layout::page("Conversations", "/conversations", &login.csrf, body)
}

fn failed(login: &Login, why: &str) -> Response {
    let body = layout::flash(&Some(Err(why.to_string())));
    let mut response = layout::page("Conversations", "/conversations", &login.csrf, body);
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response
}

/// `GET /conversations/{id}`.
pub(crate) async fn transcript(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    UrlPath(id): UrlPath<i64>,
) -> Response {
    let store = &state.agent.store();
    let (key, history) = match store.session_key(id).await {
        Ok(key) => match store.history(id).await {
            Ok(history) => (key, history),
            Err(err) => return failed(&login, &format!("cannot read session #{id}: {err}")),
        },
        Err(_) => {
            let body = layout::flash(&Some(Err(format!(
                "There is no session #{id}; the list shows them all."
            ))));
            let mut response = layout::page("Conversations", "/conversations", &login.csrf, body);
            *response.status_mut() = StatusCode::NOT_FOUND;
            return response;
        }
    };
    let usage = store.session_usage(id).await.ok();
    let results: HashMap<&str, (&str, bool)> = history
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.as_str(), (content.as_str(), *is_error))),
            _ => None,
        })
        .collect();
    let tz = state.agent.timezone();
    let body = html! {
        p.muted {
            (key) " · " (history.len()) " messages"
            @if let Some((usage, cost)) = &usage {
                " · " (usage.input_tokens + usage.output_tokens) " tokens · " (layout::usd(*cost))
            }
        }
        @for message in &history {
            @if let Some(markup) = message_view(message, &results, tz) { (markup) }
        }
    };
    layout::page(
        &format!("Session #{id}"),
        "/conversations",
        &login.csrf,
        body,
    )
}

/// One message; `None` for a tool message (its results are shown with their calls).
fn message_view(
    message: &StoredMessage,
    results: &HashMap<&str, (&str, bool)>,
    tz: pincer_core::tz::Tz,
) -> Option<Markup> {
    let who = match message.role {
        Role::User => message.sender.clone().unwrap_or_else(|| "user".into()),
        Role::Assistant => "assistant".into(),
        Role::Tool => return None,
    };
    let class = match message.role {
        Role::User => "msg user",
        _ => "msg assistant",
    };
    Some(html! {
        div class=(class) id=(format!("m{}", message.id)) {
            div.who { (who) " · " (when(message.created_at, tz)) }
            @for part in &message.parts {
                @match part {
                    Part::Text { text } => div.text { (text) },
                    Part::Reasoning { redacted: true, .. } => div.reasoning { "(thinking, redacted)" },
                    Part::Reasoning { text, .. } => details.tool { summary { "thinking" } div.reasoning { (text) } },
                    Part::ToolCall { id, name, arguments } => details.tool {
                        @let result = results.get(id.as_str());
                        summary {
                            "tool: " (name)
                            @if result.is_some_and(|(_, error)| *error) { " ✗" }
                        }
                        pre { (serde_json::to_string_pretty(arguments).unwrap_or_default()) }
                        @if let Some((content, _)) = result { pre { (content) } }
                    },
                    Part::ToolResult { .. } => {},
                    Part::Image { path, .. } => {
                        a href=(format!("/media/{path}")) {
                            img src=(format!("/media/{path}")) alt=(format!("picture {path}")) loading="lazy";
                        }
                    },
                }
            }
        }
    })
}

/// `GET /media/inbox/…`: a picture people sent, from the workspace inbox only, and
/// only a regular file reached without a link.
pub(crate) async fn media(
    State(state): State<Arc<WebState>>,
    UrlPath(path): UrlPath<String>,
) -> Response {
    let Some(mime) = picture_type(&path) else {
        return (
            StatusCode::NOT_FOUND,
            "only pictures from the inbox are shown",
        )
            .into_response();
    };
    let rel = Path::new(&path);
    let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain || !rel.starts_with("inbox") {
        return (
            StatusCode::NOT_FOUND,
            "only pictures from the inbox are shown",
        )
            .into_response();
    }
    let workspace = state.agent.workspace().to_path_buf();
    let read = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
        // Opened beneath the workspace with no link followed at any component: a
        // command may have planted a link in the inbox to anything the gateway can read.
        let rel = pincer_confine::Rel::plain(&path).map_err(std::io::Error::other)?;
        let root = pincer_confine::Root::open(&workspace)?;
        let found = pincer_confine::gateway::read(&root, &rel, MAX_PICTURE)?;
        found.ok_or_else(|| std::io::ErrorKind::NotFound.into())
    })
    .await;
    match read {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, mime),
                (header::CACHE_CONTROL, "private, max-age=3600"),
            ],
            bytes,
        )
            .into_response(),
        _ => (StatusCode::NOT_FOUND, "no such picture").into_response(),
    }
}

fn picture_type(path: &str) -> Option<&'static str> {
    let ext = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// A hit's snippet with its matched words (between « and ») in `<mark>`.
fn marked(snippet: &str) -> Markup {
    html! {
        @for (i, piece) in snippet.split(['«', '»']).enumerate() {
            @if i % 2 == 1 { mark { (piece) } } @else { (piece) }
        }
    }
}

/// What the panel groups a conversation under: its channel, `cron` or `task`.
fn prefix(key: &str) -> String {
    key.parse::<pincer_channels::SessionKey>()
        .map(|k| k.prefix().to_string())
        .unwrap_or_else(|_| key.to_string())
}
