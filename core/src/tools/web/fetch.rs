//! web_fetch: one http(s) page as readable text. Owns the request loop (each redirect
//! hop re-checked by `ssrf`, at most 5), the 20 s deadline, the streamed 2 MiB body cap,
//! the choice between HTML, text and refused binary, and the 24 KiB output with its
//! notes. Which addresses are forbidden is `ssrf`'s business, the HTML reduction `html`'s.

use crate::tools::Effects;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use reqwest::{Client, Response, Url, header, redirect};
use schemars::JsonSchema;
use serde::Deserialize;

use super::html::{self, Page};
use super::ssrf::{self, GuardedResolver, Lookup, Reach};
use super::{USER_AGENT, non_empty, truncate};
use crate::tools::{ToolContext, ToolError, TypedTool};

/// The whole fetch, redirects and body included.
pub(super) const TIMEOUT: Duration = Duration::from_secs(20);
/// Redirects followed before giving up.
pub(super) const MAX_REDIRECTS: usize = 5;
/// Body bytes read; the rest of a larger page is never downloaded.
pub(super) const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// What the tool returns (below the registry's 32 KiB, so notes survive).
pub(super) const MAX_OUTPUT_BYTES: usize = 24 * 1024;
/// Room the link list may take out of the output.
const MAX_LINKS_BYTES: usize = 4 * 1024;

/// What web_fetch may reach. The default — the only value outside tests — is the
/// public internet through the system resolver.
#[derive(Clone, Default)]
pub struct FetchPolicy {
    /// Loopback ports that may be reached (a test's own server). Set in code only,
    /// never from config: a user-facing switch would reopen the SSRF hole.
    pub allow_loopback_ports: Vec<u16>,
    /// Name lookup used instead of the system resolver; tests map names to chosen
    /// addresses to show a refusal happens before any connection.
    pub resolver: Option<Lookup>,
}

impl fmt::Debug for FetchPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchPolicy")
            .field("allow_loopback_ports", &self.allow_loopback_ports)
            .field("resolver", &self.resolver.as_ref().map(|_| "custom"))
            .finish()
    }
}

/// The `web_fetch` tool.
#[derive(Debug, Clone)]
pub struct WebFetch {
    policy: FetchPolicy,
}

impl WebFetch {
    pub fn new(policy: FetchPolicy) -> Self {
        Self { policy }
    }

    async fn fetch(&self, start: Url) -> Result<String, ToolError> {
        let mut url = start;
        let mut from: Option<Url> = None;
        for _ in 0..=MAX_REDIRECTS {
            let reach = ssrf::check_url(&url, &self.policy.allow_loopback_ports)
                .map_err(|err| after_redirect(err, from.as_ref()))?;
            let response = self
                .client(reach)?
                .get(url.clone())
                .header(
                    header::ACCEPT,
                    "text/html,application/xhtml+xml,text/*;q=0.9,*/*;q=0.5",
                )
                .send()
                .await
                .map_err(|err| send_error(&url, &err, from.as_ref()))?;
            if response.status().is_redirection()
                && let Some(next) = location(&response, &url)?
            {
                tracing::debug!(%url, %next, "web_fetch follows a redirect");
                from = Some(url);
                url = next;
                continue;
            }
            return read(response, &url).await;
        }
        Err(ToolError::new(format!(
            "gave up after {MAX_REDIRECTS} redirects (the next pointed to {url}); \
             the page may loop, or fetch its final address directly"
        )))
    }

    /// A client for one hop: no redirects, no proxy (a proxy would resolve names
    /// itself, past our resolver), and the filtering resolver for this hop's port.
    fn client(&self, reach: Reach) -> Result<Client, ToolError> {
        let resolver = GuardedResolver {
            reach,
            lookup: self.policy.resolver.clone(),
        };
        pincer_net::http::client()
            .redirect(redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(resolver))
            .user_agent(USER_AGENT)
            .timeout(TIMEOUT)
            .build()
            .map_err(|err| ToolError::new(format!("cannot set up the HTTP client: {err}")))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchArgs {
    /// the full http:// or https:// address
    url: String,
}

#[async_trait]
impl TypedTool for WebFetch {
    type Args = WebFetchArgs;
    const NAME: &'static str = "web_fetch";
    const EFFECTS: Effects = Effects::FETCHES
        .union(Effects::UNTRUSTED)
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Fetch one public web page (http or https) and return it as readable text: title, headings, paragraphs, and links marked [n] with their addresses listed at the end. HTML and text only; long pages are cut.".into()
    }

    async fn run(&self, args: WebFetchArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let raw = non_empty(&args.url, "url")?;
        let url = Url::parse(raw).map_err(|err| {
            ToolError::new(format!(
                "`{raw}` is not a URL ({err}); give a full address such as https://example.org/page"
            ))
        })?;
        match tokio::time::timeout(TIMEOUT, self.fetch(url.clone())).await {
            Ok(result) => result,
            Err(_) => Err(ToolError::new(format!(
                "gave up on {url}: no complete answer within {} s",
                TIMEOUT.as_secs()
            ))),
        }
    }
}

fn after_redirect(err: ToolError, from: Option<&Url>) -> ToolError {
    match from {
        Some(from) => ToolError::new(format!("{} (reached by a redirect from {from})", err.0)),
        None => err,
    }
}

fn send_error(url: &Url, err: &reqwest::Error, from: Option<&Url>) -> ToolError {
    if let Some(refusal) = ssrf::refusal_in(err) {
        return after_redirect(ToolError::new(refusal), from);
    }
    let mut reason = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        reason.push_str(": ");
        reason.push_str(&inner.to_string());
        source = inner.source();
    }
    after_redirect(
        ToolError::new(format!("cannot fetch {url}: {reason}")),
        from,
    )
}

/// The next hop of a redirect, or `None` when the answer has no Location.
fn location(response: &Response, url: &Url) -> Result<Option<Url>, ToolError> {
    let Some(value) = response.headers().get(header::LOCATION) else {
        return Ok(None);
    };
    let target = value
        .to_str()
        .ok()
        .and_then(|loc| url.join(loc.trim()).ok())
        .ok_or_else(|| ToolError::new(format!("{url} redirected to an unreadable address")))?;
    Ok(Some(target))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

/// The kind a Content-Type declares; `None` when it says nothing useful.
fn declared_kind(essence: &str) -> Option<Kind> {
    let textual = [
        "json",
        "xml",
        "javascript",
        "ecmascript",
        "yaml",
        "toml",
        "csv",
    ];
    match essence {
        "" | "application/octet-stream" | "binary/octet-stream" => None,
        "text/html" | "application/xhtml+xml" => Some(Kind::Html),
        _ if essence.starts_with("text/") => Some(Kind::Text),
        _ if textual.iter().any(|t| essence.ends_with(t)) => Some(Kind::Text),
        _ => Some(Kind::Binary),
    }
}

/// Guess from the bytes when the server would not say.
fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(1024)];
    // An error with no length is a character cut by our 1 KiB window, not bad bytes.
    let bad_utf8 = matches!(std::str::from_utf8(head), Err(e) if e.error_len().is_some());
    if bad_utf8 || head.contains(&0) {
        return Kind::Binary;
    }
    let start = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Kind::Html
    } else {
        Kind::Text
    }
}

async fn read(response: Response, url: &Url) -> Result<String, ToolError> {
    let status = response.status();
    if !status.is_success() {
        return Err(ToolError::new(format!("{url} answered HTTP {status}")));
    }
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut parts = content_type.split(';').map(str::trim);
    let essence = parts.next().unwrap_or("").to_owned();
    let charset = parts
        .find_map(|p| p.strip_prefix("charset="))
        .map(|c| c.trim_matches('"').to_owned());
    let declared = declared_kind(&essence);
    if declared == Some(Kind::Binary) {
        return Err(binary(url, &essence));
    }
    let (body, cut) = read_capped(response, url).await?;
    let kind = declared.unwrap_or_else(|| sniff(&body));
    if kind == Kind::Binary {
        return Err(binary(url, "an undeclared type that looks binary"));
    }
    let text = decode(&body, charset.as_deref());
    let page = match kind {
        Kind::Html => html::to_text(&text, url),
        _ => Page {
            text: text.into_owned(),
            ..Page::default()
        },
    };
    Ok(render(url, page, cut))
}

fn binary(url: &Url, what: &str) -> ToolError {
    ToolError::new(format!(
        "refused: {url} is {what}, not text; web_fetch reads HTML and text pages only"
    ))
}

/// Read at most [`MAX_BODY_BYTES`]; true when more was on offer.
async fn read_capped(response: Response, url: &Url) -> Result<(Vec<u8>, bool), ToolError> {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| send_error(url, &err, None))?;
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// UTF-8 unless the server names a Latin-1 family charset (each byte one character;
/// windows-1252's 0x80–0x9f punctuation comes out as control characters).
fn decode<'a>(body: &'a [u8], charset: Option<&str>) -> std::borrow::Cow<'a, str> {
    match charset {
        Some("iso-8859-1" | "latin1" | "windows-1252" | "cp1252") => body
            .iter()
            .map(|&b| char::from(b))
            .collect::<String>()
            .into(),
        _ => String::from_utf8_lossy(body),
    }
}

/// The result: address, title, text, the links the kept text still marks, and notes.
fn render(url: &Url, page: Page, body_cut: bool) -> String {
    let mut out = format!("URL: {url}\n");
    if let Some(title) = &page.title {
        out.push_str(&format!("Title: {title}\n"));
    }
    out.push('\n');
    let mut notes = Vec::new();
    if body_cut {
        notes.push(format!(
            "[the page is larger than {} MiB; only its start was read]",
            MAX_BODY_BYTES / (1024 * 1024)
        ));
    }
    let links_room =
        (page.links.iter().map(|l| l.len() + 8).sum::<usize>() + 8).min(MAX_LINKS_BYTES);
    let mut text = page.text;
    let total = text.len();
    if truncate(
        &mut text,
        MAX_OUTPUT_BYTES.saturating_sub(out.len() + links_room),
    ) {
        notes.push(format!(
            "[text cut at {} of {total} bytes; the rest of the page is not shown]",
            text.len()
        ));
    }
    out.push_str(&text);
    let marked = highest_marker(&text).min(page.links.len());
    if marked > 0 {
        out.push_str("\n\nLinks:");
        let mut used = 0;
        for (i, link) in page.links[..marked].iter().enumerate() {
            let line = format!("\n[{}] {link}", i + 1);
            used += line.len();
            if used > MAX_LINKS_BYTES {
                out.push_str(&format!("\n[{} more links not listed]", marked - i));
                break;
            }
            out.push_str(&line);
        }
    }
    for note in notes {
        out.push_str("\n\n");
        out.push_str(&note);
    }
    out
}

/// The largest `[n]` in `text` (0 if none).
fn highest_marker(text: &str) -> usize {
    text.split('[')
        .skip(1)
        .filter_map(|rest| rest.split_once(']'))
        .filter_map(|(n, _)| n.parse::<usize>().ok())
        .max()
        .unwrap_or(0)
}
