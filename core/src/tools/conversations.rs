//! `conversation_search {query, channel?, chat?, person?, since?, until?, limit?}`: what
//! was said weeks ago in any conversation ("what did I tell you about the plumber?"),
//! found in the store's full-text index of every transcript (`pincer_store::search`),
//! each hit with a little context, its session key and its time. `pincer sessions
//! search` and the panel's Conversations page run the same search.
//!
//! Who sees what: it reads people's conversations ([`Effects::CONVERSATIONS`]), so it is
//! never offered in a group but to the owner where their memory belongs there
//! (`access.owner_memory_in_groups`); the owner finds every conversation, anyone else
//! (a member `access.member_tools` grants it to) only conversations nobody but they
//! wrote in. What others wrote is not the owner's word: a result with anything but the
//! owner's own messages makes the turn untrusted.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{NaiveDate, TimeZone};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Effects, ToolContext, ToolError, TypedTool};
use crate::access::{Origin, WEB_CHANNEL};
use crate::store::{Hit, Role, SearchQuery, Store};

/// Hits shown when the call names no `limit`.
const DEFAULT_HITS: usize = 10;

pub struct ConversationSearch {
    pub store: Store,
    pub owners: Vec<String>,
    pub timezone: crate::tz::Tz,
}

impl ConversationSearch {
    pub fn new(store: Store, owners: &[String], timezone: crate::tz::Tz) -> Arc<Self> {
        Arc::new(ConversationSearch {
            store,
            owners: owners.to_vec(),
            timezone,
        })
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// words to find (stems match: "plumbers" finds "plumber")
    pub query: String,
    /// only this channel: telegram, discord, slack, web, terminal
    #[serde(default)]
    pub channel: Option<String>,
    /// only this conversation: a session key such as telegram:dm:42
    #[serde(default)]
    pub chat: Option<String>,
    /// only what this person wrote: an id such as telegram:42, their name, or "me"
    #[serde(default)]
    pub person: Option<String>,
    /// from this day on, YYYY-MM-DD
    #[serde(default)]
    pub since: Option<String>,
    /// up to and including this day, YYYY-MM-DD
    #[serde(default)]
    pub until: Option<String>,
    /// most hits (default 10, at most 50)
    #[serde(default)]
    pub limit: Option<usize>,
}

#[async_trait]
impl TypedTool for ConversationSearch {
    type Args = SearchArgs;
    const NAME: &'static str = "conversation_search";
    const EFFECTS: Effects = Effects::CONVERSATIONS
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Search what was said in past conversations, in every chat. Each hit comes with its conversation's key and time.".into()
    }

    async fn run(&self, args: SearchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let words = args.query.clone();
        let mut hits = self.search(args, &ctx.caller.origin).await?;
        for hit in &mut hits {
            hit.snippet = safe_snippet(hit, &words);
        }
        let owners = self.owner_ids();
        if hits.iter().any(|hit| !owner_said(hit, &owners)) {
            ctx.taint.set();
        }
        Ok(render(&hits, self.timezone))
    }
}

impl ConversationSearch {
    /// The hits for `args`, asked by `origin`: anyone but an owner finds only their
    /// own direct chats.
    pub async fn search(&self, args: SearchArgs, origin: &Origin) -> Result<Vec<Hit>, ToolError> {
        let mut query = self.query(args, origin).await?;
        if !origin.is_owner() {
            query.only_conversations_of = Some(origin.sender.clone());
        }
        self.store
            .search_said(query)
            .await
            .map_err(|e| ToolError::new(format!("the search failed: {e}")))
    }

    /// The store's query for `args`, asked by `origin`.
    async fn query(&self, args: SearchArgs, origin: &Origin) -> Result<SearchQuery, ToolError> {
        let people = match args.person.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(me) if me.eq_ignore_ascii_case("me") => Some(if origin.is_owner() {
                self.owner_ids()
            } else {
                vec![origin.sender.clone()]
            }),
            Some(id) if id.contains(':') => Some(vec![id.to_string()]),
            Some(name) => Some(self.named(name).await?),
        };
        Ok(SearchQuery {
            text: args.query,
            channel: args.channel.filter(|c| !c.trim().is_empty()),
            chat: args.chat.filter(|c| !c.trim().is_empty()),
            people,
            since_ms: day(args.since.as_deref(), self.timezone, "since", 0)?,
            until_ms: day(args.until.as_deref(), self.timezone, "until", 1)?,
            only_conversations_of: None,
            limit: args.limit.unwrap_or(DEFAULT_HITS),
        })
    }

    /// The ids of the people approved under `name` (as their platforms named them).
    async fn named(&self, name: &str) -> Result<Vec<String>, ToolError> {
        let approved = self
            .store
            .approved(None)
            .await
            .map_err(|e| ToolError::new(format!("cannot read who is approved: {e}")))?;
        let ids: Vec<String> = approved
            .into_iter()
            .filter(|a| a.display_name.eq_ignore_ascii_case(name))
            .map(|a| a.sender)
            .collect();
        if ids.is_empty() {
            return Err(ToolError::new(format!(
                "nobody approved is named `{name}`: give their id (telegram:42), \"me\", or leave person out"
            )));
        }
        Ok(ids)
    }

    fn owner_ids(&self) -> Vec<String> {
        let mut ids = self.owners.clone();
        ids.push(crate::access::TERMINAL_SENDER.into());
        ids.push(format!("{WEB_CHANNEL}:owner"));
        ids
    }
}

/// Whether a hit is the owner's own words (`owners`: their ids).
fn owner_said(hit: &Hit, owners: &[String]) -> bool {
    hit.role == Role::User
        && hit
            .sender
            .as_deref()
            .is_some_and(|s| owners.iter().any(|o| o == s))
}

/// A hit's snippet that cannot carry a secret: the marks of matched words (or a cut
/// end) can split a secret so the scrubber no longer knows it, so a message holding one
/// is shown from its scrubbed whole text instead, unmarked, around the first word
/// asked for.
fn safe_snippet(hit: &Hit, query: &str) -> String {
    let clean = crate::scrub::scrub_global(&hit.text);
    if clean == hit.text {
        return hit.snippet.clone();
    }
    let lower = clean.to_lowercase();
    let at = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .filter_map(|w| lower.find(&w.to_lowercase()))
        .min()
        .unwrap_or(0);
    let chars: Vec<(usize, char)> = clean.char_indices().collect();
    let index = chars.iter().position(|(i, _)| *i >= at).unwrap_or(0);
    let start = index.saturating_sub(80);
    let end = (index + 160).min(chars.len());
    let mut out: String = chars[start..end].iter().map(|(_, c)| *c).collect();
    if start > 0 {
        out.insert(0, '…');
    }
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// The start of `date` (YYYY-MM-DD) plus `days_after` days, in `tz`, as Unix ms.
pub fn day(
    date: Option<&str>,
    tz: crate::tz::Tz,
    name: &str,
    days_after: u64,
) -> Result<Option<i64>, ToolError> {
    let Some(date) = date.map(str::trim).filter(|d| !d.is_empty()) else {
        return Ok(None);
    };
    let day = NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .map_err(|_| ToolError::new(format!("{name} `{date}` is not a day: write YYYY-MM-DD")))?
        + chrono::Days::new(days_after);
    let midnight = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    let start = tz
        .from_local_datetime(&midnight)
        .earliest()
        .ok_or_else(|| ToolError::new(format!("{name} `{date}` has no midnight in {tz}")))?;
    Ok(Some(start.timestamp_millis()))
}

/// The hits as the model and the CLI read them: one line each, its conversation, time
/// (in `tz`), who said it and the matching stretch.
pub fn render(hits: &[Hit], tz: crate::tz::Tz) -> String {
    if hits.is_empty() {
        return "Nothing found. Try other words, fewer filters, or a wider span of days.\n".into();
    }
    let mut out = format!(
        "{} message{} found, best first:\n",
        hits.len(),
        if hits.len() == 1 { "" } else { "s" }
    );
    for hit in hits {
        let when = tz
            .timestamp_millis_opt(hit.created_at)
            .single()
            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        let who = match hit.role {
            Role::User => hit.sender.as_deref().unwrap_or("user"),
            _ => "assistant",
        };
        let snippet = hit.snippet.replace(['\n', '\r'], " ");
        out.push_str(&format!("- {} · {when} · {who}: {snippet}\n", hit.key));
    }
    out
}
