//! web_search: a query sent to the one backend the user configured — Brave, Tavily or
//! a SearXNG instance — and its results as a numbered list. Owns the three request
//! shapes and answer formats and the error wording; it never fetches result pages.
//!
//! No SSRF filter here, on purpose: the endpoint comes from the user's config, not
//! from the model (which only supplies the query text), and a self-hosted SearXNG is
//! often on the LAN or on localhost, which web_fetch's filter would refuse.

use crate::tools::Effects;
use std::time::Duration;

use std::num::NonZeroUsize;

use async_trait::async_trait;
use reqwest::{Client, RequestBuilder, StatusCode, redirect};
use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;

use super::html::strip_tags;
use super::{USER_AGENT, non_empty, truncate};
use crate::tools::{ToolContext, ToolError, TypedTool};

const TIMEOUT: Duration = Duration::from_secs(20);
const DEFAULT_RESULTS: usize = 5;
const MAX_RESULTS: usize = 10;
/// A snippet longer than this is cut (Tavily sends whole paragraphs).
const MAX_SNIPPET_BYTES: usize = 400;
const BRAVE_URL: &str = "https://api.search.brave.com";
const TAVILY_URL: &str = "https://api.tavily.com";
const KEY_PLACE: &str = "tools.web_search.api_key in .security.yml";

/// Where and how to search: `[tools.web_search]` from config plus the key from
/// `.security.yml`.
#[derive(Debug, Clone, Default)]
pub struct SearchSettings {
    /// `brave`, `tavily` or `searxng`; `None` leaves web_search unconfigured.
    pub backend: Option<String>,
    /// The SearXNG instance (`searxng` only).
    pub url: Option<String>,
    /// The Brave or Tavily key.
    pub api_key: Option<SecretString>,
    /// Replaces the Brave or Tavily API address (or the SearXNG url); tests point it
    /// at a local fake.
    pub base_url_override: Option<String>,
}

/// The `web_search` tool.
#[derive(Debug, Clone)]
pub struct WebSearch {
    settings: SearchSettings,
    /// Made at the first search, then kept (its connections with it).
    client: std::sync::OnceLock<Client>,
}

/// One result, whichever backend it came from.
#[derive(Debug, Default, Deserialize)]
struct Hit {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    /// Brave calls the snippet `description`, Tavily and SearXNG `content`.
    #[serde(default, alias = "description")]
    content: String,
}

/// Tavily's and SearXNG's answer.
#[derive(Debug, Deserialize)]
struct Listed {
    #[serde(default)]
    results: Vec<Hit>,
}

/// Brave's answer: results under `web` (absent when there are none).
#[derive(Debug, Deserialize)]
struct BraveAnswer {
    #[serde(default)]
    web: Option<Listed>,
}

impl WebSearch {
    pub fn new(settings: SearchSettings) -> Self {
        Self {
            settings,
            client: std::sync::OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&Client, ToolError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = pincer_net::http::client()
            .user_agent(USER_AGENT)
            .timeout(TIMEOUT)
            .redirect(redirect::Policy::limited(3))
            .build()
            .map_err(|err| ToolError::new(format!("cannot set up the HTTP client: {err}")))?;
        Ok(self.client.get_or_init(|| client))
    }

    fn key(&self, backend: &str) -> Result<&str, ToolError> {
        self.settings
            .api_key
            .as_ref()
            .map(|key| key.expose_secret())
            .filter(|key| !key.trim().is_empty())
            .ok_or_else(|| {
                ToolError::new(format!(
                    "web search backend \"{backend}\" needs an API key: set {KEY_PLACE}"
                ))
            })
    }

    fn base<'a>(&'a self, default: &'a str) -> &'a str {
        self.settings
            .base_url_override
            .as_deref()
            .unwrap_or(default)
            .trim_end_matches('/')
    }

    async fn brave(
        &self,
        client: &Client,
        query: &str,
        count: usize,
    ) -> Result<Vec<Hit>, ToolError> {
        let request = client
            .get(format!("{}/res/v1/web/search", self.base(BRAVE_URL)))
            .query(&[("q", query), ("count", &count.to_string())])
            .header("Accept", "application/json")
            .header("X-Subscription-Token", self.key("brave")?);
        let answer: BraveAnswer = send(request, "brave").await?;
        let hits = answer.web.map(|web| web.results).unwrap_or_default();
        // Brave marks query words with <strong> and escapes entities.
        Ok(hits
            .into_iter()
            .map(|hit| Hit {
                title: strip_tags(&hit.title),
                content: strip_tags(&hit.content),
                url: hit.url,
            })
            .collect())
    }

    async fn tavily(
        &self,
        client: &Client,
        query: &str,
        count: usize,
    ) -> Result<Vec<Hit>, ToolError> {
        let key = self.key("tavily")?;
        // The key goes both in the body (the documented original) and as a bearer
        // token (Tavily's newer form), so either API generation accepts it.
        let request = client
            .post(format!("{}/search", self.base(TAVILY_URL)))
            .bearer_auth(key)
            .json(&json!({"api_key": key, "query": query, "max_results": count}));
        let answer: Listed = send(request, "tavily").await?;
        Ok(answer.results)
    }

    async fn searxng(&self, client: &Client, query: &str) -> Result<Vec<Hit>, ToolError> {
        let instance = self
            .settings
            .base_url_override
            .as_deref()
            .or(self.settings.url.as_deref())
            .ok_or_else(|| {
                ToolError::new(
                    "web search backend \"searxng\" needs the instance address: add \
                     url = \"https://searx.example.org\" to [tools.web_search]",
                )
            })?;
        let request = client
            .get(format!("{}/search", instance.trim_end_matches('/')))
            .query(&[("q", query), ("format", "json")]);
        let answer: Listed = send(request, "searxng").await?;
        Ok(answer.results)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchArgs {
    /// what to search for
    query: String,
    /// how many results (default 5, at most 10)
    #[schemars(range(max = MAX_RESULTS))]
    max_results: Option<NonZeroUsize>,
}

#[async_trait]
impl TypedTool for WebSearch {
    type Args = WebSearchArgs;
    const NAME: &'static str = "web_search";
    const EFFECTS: Effects = Effects::FETCHES
        .union(Effects::UNTRUSTED)
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Search the web. Returns a numbered list of results: title, address and a snippet. Use web_fetch to read a result.".into()
    }

    async fn run(&self, args: WebSearchArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let query = non_empty(&args.query, "query")?;
        let count = args
            .max_results
            .map_or(DEFAULT_RESULTS, |n| n.get().min(MAX_RESULTS));
        let Some(backend) = self.settings.backend.as_deref() else {
            return Err(ToolError::new(
                "web search is not configured: set [tools.web_search] backend = \"brave\" \
                 (key in .security.yml under tools.web_search.api_key), \"tavily\", or \
                 \"searxng\" with url = \"https://searx.example.org\"",
            ));
        };
        let client = self.client()?;
        let hits = match backend {
            "brave" => self.brave(client, query, count).await?,
            "tavily" => self.tavily(client, query, count).await?,
            "searxng" => self.searxng(client, query).await?,
            other => {
                return Err(ToolError::new(format!(
                    "unknown web search backend \"{other}\": set [tools.web_search] backend to \
                     \"brave\", \"tavily\" or \"searxng\""
                )));
            }
        };
        Ok(list(query, hits, count))
    }
}

/// Send, check the status, and parse the JSON answer; errors say what to fix.
async fn send<T: for<'de> Deserialize<'de>>(
    request: RequestBuilder,
    backend: &str,
) -> Result<T, ToolError> {
    let response = request.send().await.map_err(|err| {
        let why = if err.is_timeout() {
            format!("no answer within {} s", TIMEOUT.as_secs())
        } else {
            let mut why = err.to_string();
            if let Some(source) = std::error::Error::source(&err) {
                why.push_str(&format!(": {source}"));
            }
            why
        };
        ToolError::new(format!("web search ({backend}) failed: {why}"))
    })?;
    let status = response.status();
    if !status.is_success() {
        let mut body = response.text().await.unwrap_or_default();
        truncate(&mut body, 200);
        let hint = match (status, backend) {
            (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, "brave" | "tavily") => {
                format!("; the API key was refused: check {KEY_PLACE}")
            }
            (StatusCode::FORBIDDEN, "searxng") => {
                "; the instance does not serve JSON: add `json` to search.formats in its settings.yml"
                    .to_owned()
            }
            (StatusCode::TOO_MANY_REQUESTS, _) => "; rate limited, try again later".to_owned(),
            _ => String::new(),
        };
        return Err(ToolError::new(format!(
            "web search ({backend}) answered HTTP {status}{hint} ({})",
            body.trim()
        )));
    }
    response.json::<T>().await.map_err(|err| {
        ToolError::new(format!(
            "web search ({backend}) sent an answer that is not the expected JSON: {err}"
        ))
    })
}

/// "1. Title — url\n   snippet", one entry per result, at most `count`.
fn list(query: &str, hits: Vec<Hit>, count: usize) -> String {
    let mut out = Vec::new();
    for hit in hits.into_iter().filter(|h| !h.url.is_empty()).take(count) {
        let title = one_line(&hit.title);
        let title = if title.is_empty() {
            hit.url.clone()
        } else {
            title
        };
        let mut entry = format!("{}. {title} — {}", out.len() + 1, hit.url);
        let mut snippet = one_line(&hit.content);
        if truncate(&mut snippet, MAX_SNIPPET_BYTES) {
            snippet.push('…');
        }
        if !snippet.is_empty() {
            entry.push_str("\n   ");
            entry.push_str(&snippet);
        }
        out.push(entry);
    }
    if out.is_empty() {
        return format!("no results for \"{query}\"");
    }
    out.join("\n")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
