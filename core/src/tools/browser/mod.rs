//! The `browser` tool: a real Chromium driven over the DevTools protocol
//! (chromiumoxide). Actions: `open {url}`, `snapshot`, `click {id}`, `type {id, text}`,
//! `select {id, text}`, `scroll {id?|direction}`, `screenshot`, `close`. What a page
//! shows is untrusted (the call taints the turn); `click`, `type` and `select` act
//! outside (`SENDS`), so they ask after untrusted content like `send_message` does.
//!
//! # Layout
//! - `chromium` — the one Chromium per gateway: started on first use, a browser
//!   context and tab per conversation, stopped after `idle_s`.
//! - `pipe`     — DevTools over a pipe, bridged once for chromiumoxide: no open port
//! - `proxy`    — the guard every request goes through: the SSRF rules of `web_fetch`,
//!   with `[tools.browser] allow_private`.
//! - `snapshot` — the scripts run in the page, and the capped text the model reads.

mod chromium;
mod pipe;
mod proxy;
mod snapshot;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::page::ScreenshotParams;
use reqwest::Url;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Mutex;

pub use chromium::Settings;
pub use proxy::{AllowError, AllowList};

use super::{Effects, ToolContext, ToolError, TypedTool};

/// How long a navigation (open, or what a click starts) may take.
const NAVIGATION_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one script in the page may take.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `browser` tool.
pub struct BrowserTool {
    settings: Settings,
    /// The gateway's one Chromium, when it runs.
    slot: chromium::Slot,
}

impl BrowserTool {
    pub fn new(settings: Settings) -> Arc<BrowserTool> {
        Arc::new(BrowserTool {
            settings,
            slot: Arc::new(Mutex::new(None)),
        })
    }
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Open,
    Snapshot,
    Click,
    Type,
    Select,
    Scroll,
    Screenshot,
    Close,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserArgs {
    action: Action,
    /// for open
    #[serde(default)]
    url: Option<String>,
    /// element id from the snapshot
    #[serde(default)]
    id: Option<String>,
    /// to type, or the option to select
    #[serde(default)]
    text: Option<String>,
    /// scroll: up or down
    #[serde(default)]
    direction: Option<String>,
}

#[async_trait]
impl TypedTool for BrowserTool {
    type Args = BrowserArgs;
    const NAME: &'static str = "browser";
    const EFFECTS: Effects = Effects::FETCHES
        .union(Effects::UNTRUSTED)
        .union(Effects::SENDS);

    /// Looking acts on nothing; clicking, typing and choosing may submit something.
    fn call_effects(&self, args: &Value) -> Effects {
        match args.get("action").and_then(Value::as_str) {
            Some("click" | "type" | "select") => Self::EFFECTS,
            _ => Effects::FETCHES | Effects::UNTRUSTED,
        }
    }

    fn description(&self) -> String {
        "Real browser: open a url, snapshot (text, elements with ids), click/type/select/scroll an element by id, screenshot to a PNG file, close.".into()
    }

    async fn run(&self, args: BrowserArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let session = ctx.session.unwrap_or(0);
        let mut held = self.slot.lock().await;
        if args.action == Action::Close {
            let closed = match held.as_mut() {
                Some(running) => chromium::close_tab(running, session).await,
                None => false,
            };
            if held.as_ref().is_some_and(|r| r.tabs.is_empty()) {
                *held = None;
            }
            return Ok(if closed {
                "closed the tab".into()
            } else {
                "no tab was open".into()
            });
        }
        if held.is_none() {
            *held = Some(chromium::start(&self.settings).await?);
            tokio::spawn(chromium::watch_idle(
                Arc::downgrade(&self.slot),
                self.settings.idle,
            ));
        }
        let running = held
            .as_mut()
            .ok_or_else(|| ToolError::new("Chromium is not running"))?;
        running.last_used = tokio::time::Instant::now();
        let guard = Arc::clone(&running.guard);
        let tab = chromium::tab(running, session, &self.settings.downloads).await?;
        let page = tab.page.clone();
        let result = act(&page, &args, ctx, &guard).await;
        if let Some(running) = held.as_mut() {
            running.last_used = tokio::time::Instant::now();
        }
        finishing(&self.settings.downloads).await;
        let delivered = deliver(&self.settings.downloads, &ctx.workspace);
        match (result, delivered.is_empty()) {
            (result, true) => result,
            (Ok(text), false) => Ok(format!("{text}\n\nDownloaded: {}", delivered.join(", "))),
            (Err(err), false) => Err(ToolError::new(format!(
                "{err}\n\nDownloaded: {}",
                delivered.join(", ")
            ))),
        }
    }
}

/// How long a call waits for a download it started to finish.
const DOWNLOAD_WAIT: Duration = Duration::from_secs(5);

/// Wait (up to `DOWNLOAD_WAIT`) while Chromium still writes a download
/// (`.crdownload`), so the call that started it reports it.
async fn finishing(downloads: &std::path::Path) {
    let deadline = tokio::time::Instant::now() + DOWNLOAD_WAIT;
    let writing = || {
        std::fs::read_dir(downloads).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".crdownload"))
        })
    };
    while writing() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The largest download moved into the workspace.
const MAX_DOWNLOAD: u64 = 100 << 20;

/// Move the downloads Chromium finished (in its private folder) into the workspace's
/// `tool-output/`, written beneath the workspace with no link followed; what each became.
/// One still being written (`.crdownload`) waits for the next call; one over
/// `MAX_DOWNLOAD` is dropped.
fn deliver(downloads: &std::path::Path, workspace: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(downloads) else {
        return Vec::new();
    };
    let mut delivered = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if name.ends_with(".crdownload") && regular {
            continue;
        }
        let path = entry.path();
        let size = entry.metadata().map_or(u64::MAX, |m| m.len());
        let safe: String = name
            .chars()
            .map(|c| if c == '/' || c.is_control() { '_' } else { c })
            .collect();
        let target = format!("tool-output/download-{}", safe.trim_start_matches('.'));
        let moved = regular
            && size <= MAX_DOWNLOAD
            && std::fs::read(&path)
                .and_then(|bytes| save(workspace, &target, &bytes))
                .map_err(|err| tracing::warn!("a download could not be moved to {target}: {err}"))
                .is_ok();
        let _ = std::fs::remove_file(&path);
        match moved {
            true => delivered.push(format!("{target} ({size} bytes)")),
            false => delivered.push(format!("`{safe}` (refused: not a file, or over 100 MB)")),
        }
    }
    delivered
}

fn need<'a>(value: &'a Option<String>, key: &str, action: &str) -> Result<&'a str, ToolError> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ToolError::new(format!("{action} needs `{key}`")))
}

async fn act(
    page: &Page,
    args: &BrowserArgs,
    ctx: &ToolContext,
    guard: &proxy::Guard,
) -> Result<String, ToolError> {
    match args.action {
        Action::Open => {
            let raw = need(&args.url, "url", "open")?;
            let url = check_url(raw, guard)?;
            guard.take_refusals();
            run_script(page, snapshot::navigate(url.as_str())).await?;
            if !settle(page, true).await {
                return Err(ToolError::new(format!(
                    "{url} did not load within {} s",
                    NAVIGATION_TIMEOUT.as_secs()
                )));
            }
            look(page, guard).await
        }
        Action::Snapshot => look(page, guard).await,
        Action::Click | Action::Type | Action::Select => {
            let id = need(&args.id, "id", "this action")?;
            let script = match args.action {
                Action::Click => snapshot::click(id),
                Action::Type => snapshot::type_text(id, args.text.as_deref().unwrap_or("")),
                _ => snapshot::select(id, need(&args.text, "text", "select")?),
            };
            guard.take_refusals();
            run_script(page, snapshot::MARK.to_owned()).await?;
            run_script(page, script).await?;
            settle(page, false).await;
            look(page, guard).await
        }
        Action::Scroll => {
            let up = args.direction.as_deref() == Some("up");
            run_script(page, snapshot::scroll(args.id.as_deref(), up)).await?;
            look(page, guard).await
        }
        Action::Screenshot => screenshot(page, ctx).await,
        Action::Close => Ok(String::new()),
    }
}

/// An address the browser may be sent to: http(s), and an IP literal the guard allows
/// (names are checked by the guard when Chromium connects).
fn check_url(raw: &str, guard: &proxy::Guard) -> Result<Url, ToolError> {
    let url = Url::parse(raw).map_err(|err| {
        ToolError::new(format!(
            "`{raw}` is not a URL ({err}); give a full address such as https://example.org/page"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::new(format!(
            "refused: the browser opens http:// and https:// addresses only, not `{}:`",
            url.scheme()
        )));
    }
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(80);
    if let Ok(ip) = host.trim_matches(['[', ']']).parse()
        && let Some(why) = guard.refusal(ip, port)
    {
        return Err(ToolError::new(proxy::refusal_text(host, port, ip, why)));
    }
    Ok(url)
}

/// Run a script that returns a JSON string; `{error}` becomes the call's error.
async fn run_script(page: &Page, script: String) -> Result<Value, ToolError> {
    let params = EvaluateParams::builder()
        .expression(script)
        .return_by_value(true)
        .await_promise(true)
        .build()
        .map_err(ToolError::new)?;
    let answer = tokio::time::timeout(SCRIPT_TIMEOUT, page.execute(params))
        .await
        .map_err(|_| ToolError::new("the page did not answer within 10 s"))?
        .map_err(|err| ToolError::new(format!("the page could not be read: {err}")))?;
    if let Some(details) = &answer.result.exception_details {
        return Err(ToolError::new(format!(
            "a script in the page failed: {}",
            details.text
        )));
    }
    let text = answer
        .result
        .result
        .value
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or("{}");
    let value: Value = serde_json::from_str(text)
        .map_err(|err| ToolError::new(format!("the page answered oddly: {err}")))?;
    if let Some(error) = value.get("error").and_then(Value::as_str) {
        return Err(ToolError::new(error.to_owned()));
    }
    Ok(value)
}

/// After an action: let what it started (a submit, a script) begin, then wait until
/// the page has loaded — a new document where `navigating`, else whichever is there.
/// False when nothing loaded in time.
async fn settle(page: &Page, navigating: bool) -> bool {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let deadline = tokio::time::Instant::now() + NAVIGATION_TIMEOUT;
    while tokio::time::Instant::now() < deadline {
        // Between two documents the page may not answer: that is "not yet".
        if let Ok(state) = run_script(page, snapshot::STATE.to_owned()).await {
            let fresh = state["fresh"] == true;
            if state["state"] == "complete" && (fresh || !navigating) {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The page as the model reads it, with what the guard refused on the way. A refused
/// page itself (a redirect inside) is an error naming the key that would allow it.
async fn look(page: &Page, guard: &proxy::Guard) -> Result<String, ToolError> {
    let value = run_script(page, snapshot::script()).await?;
    let snap: snapshot::Snapshot = serde_json::from_value(value)
        .map_err(|err| ToolError::new(format!("the page answered oddly: {err}")))?;
    let refusals = guard.take_refusals();
    if let Ok(url) = Url::parse(&snap.url)
        && let Some(host) = url.host_str()
    {
        let target = format!("{host}:{}", url.port_or_known_default().unwrap_or(80));
        if let Some(refusal) = refusals.iter().find(|r| r.target == target) {
            // Leave nothing of the refused address on screen.
            let _ = run_script(page, snapshot::navigate("about:blank")).await;
            return Err(ToolError::new(format!(
                "the page went to {url}, which was not loaded: {}",
                refusal.reason
            )));
        }
    }
    let mut out = snap.render();
    if !refusals.is_empty() {
        out.push_str("\n\nBlocked requests of this page:");
        for refusal in refusals.iter().take(5) {
            out.push_str(&format!("\n- {}: {}", refusal.target, refusal.reason));
        }
    }
    Ok(out)
}

/// Save a PNG of the visible page under `tool-output/` and say where.
async fn screenshot(page: &Page, ctx: &ToolContext) -> Result<String, ToolError> {
    let png = page
        .screenshot(
            ScreenshotParams::builder()
                .format(CaptureScreenshotFormat::Png)
                .build(),
        )
        .await
        .map_err(|err| ToolError::new(format!("cannot take a screenshot: {err}")))?;
    let stamp = crate::clock::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let path = format!("tool-output/browser-{stamp}.png");
    save(&ctx.workspace, &path, &png)
        .map_err(|err| ToolError::new(format!("cannot save the screenshot to {path}: {err}")))?;
    // Shown to a model that sees (after this result); scaled like a photo when large.
    match crate::media::image::scaled(&png).await {
        Ok(data) => ctx.pictures.add(path.clone(), data),
        Err(err) => tracing::warn!("the screenshot cannot be shown to the model: {err}"),
    }
    Ok(format!(
        "saved a screenshot of the page to {path} ({} bytes; a model that sees images is shown it next); send it with send_file",
        png.len()
    ))
}

/// Write `bytes` to `path` beneath the workspace (folders made, never led out by a link).
fn save(workspace: &std::path::Path, path: &str, bytes: &[u8]) -> std::io::Result<()> {
    let root = pincer_confine::Root::open(workspace)?;
    let rel = pincer_confine::Rel::parse(path).map_err(std::io::Error::other)?;
    pincer_confine::gateway::write(&root, &rel, bytes)
}
