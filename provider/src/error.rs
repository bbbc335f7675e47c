//! What went wrong with a model call, in terms a retry policy and a user can act on:
//! `ErrorKind` for the chain, a `Display` sentence that names the fix for the user, and
//! the classification of HTTP statuses, both wire formats' error JSON, `Retry-After`
//! headers and reqwest failures into them. A context overflow carries the window the
//! server named (`context_limit`, read by `overflow`); a server started without a flag
//! it needs (llama.cpp's `--jinja`) is `ServerConfig`, named in the fix. It never sees
//! or prints an API key.

use std::time::Duration;

use super::error_body::{Code, ErrorBody, ErrorDetail};
use super::overflow;

/// Longest provider message kept in an error, in characters.
const MAX_MESSAGE_CHARS: usize = 300;

/// The classes of failure the chain reacts to differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Auth,
    Billing,
    RateLimit,
    Overloaded,
    Timeout,
    Network,
    Server,
    ContextTooLong,
    BadRequest,
    ModelNotFound,
    InvalidResponse,
    /// The server lacks a start-up flag the request needs (llama.cpp without `--jinja`
    /// refuses tools; vLLM without `--enable-auto-tool-choice`): it fails the same way
    /// until someone restarts it, so it is never retried.
    ServerConfig,
}

impl ErrorKind {
    /// A stable lower-case name for logs and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Billing => "billing",
            Self::RateLimit => "rate_limit",
            Self::Overloaded => "overloaded",
            Self::Timeout => "timeout",
            Self::Network => "network",
            Self::Server => "server",
            Self::ContextTooLong => "context_too_long",
            Self::BadRequest => "bad_request",
            Self::ModelNotFound => "model_not_found",
            Self::InvalidResponse => "invalid_response",
            Self::ServerConfig => "server_config",
        }
    }
}

/// A failed model call. `Display` is a sentence for the user that names the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(self))]
pub struct ProviderError {
    pub kind: ErrorKind,
    /// Short and human (the provider's own words where it gave some, cut to ~300
    /// characters); never contains an API key.
    pub message: String,
    /// How long the provider asked us to wait (`Retry-After`), when it said.
    pub retry_after: Option<Duration>,
    /// The HTTP status, when the failure came with one.
    pub status: Option<u16>,
    /// The user's name for the provider (`providers.NAME`), empty when not known.
    pub provider: String,
    /// The environment variable the provider's key may come from, for the auth hint.
    pub key_env: Option<&'static str>,
    /// The whole-call limit passed before any of the reply arrived: the server was
    /// still reading the request (or silent while it did). Sending the same request
    /// again at once would queue it behind that reading, so the chain does not retry
    /// it on the same model.
    pub still_reading: bool,
    /// What a context overflow said about sizes (the window, the prompt). Boxed: most
    /// errors have none, and every `Result` carrying this error pays for its size.
    figures: Option<Box<overflow::Figures>>,
}

impl ProviderError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: truncate(&message.into()),
            retry_after: None,
            status: None,
            provider: String::new(),
            key_env: None,
            still_reading: false,
            figures: None,
        }
    }

    /// The context window the server named when it refused a request as too long
    /// (llama.cpp `n_ctx`, "maximum context length is N tokens", "> N maximum"), in
    /// tokens. `None` for other errors and for servers that do not say.
    pub fn context_limit(&self) -> Option<u64> {
        self.figures.as_ref().and_then(|f| f.limit)
    }

    /// The request's size as the server counted it when it refused it as too long.
    pub fn prompt_tokens(&self) -> Option<u64> {
        self.figures.as_ref().and_then(|f| f.prompt)
    }

    /// The start-up flags the server said it needs (`ServerConfig`), e.g. `--jinja`.
    pub fn missing_flags(&self) -> Vec<String> {
        missing_flags(&self.message)
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// Name the provider the error came from, so `Display` can point at its settings.
    pub fn for_provider(mut self, name: &str, key_env: Option<&'static str>) -> Self {
        self.provider = name.to_string();
        self.key_env = key_env;
        self
    }

    /// Whether the same call may succeed if tried again in a moment.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::RateLimit
                | ErrorKind::Overloaded
                | ErrorKind::Timeout
                | ErrorKind::Network
                | ErrorKind::Server
                | ErrorKind::InvalidResponse
        )
    }
}

fn describe(e: &ProviderError) -> String {
    let who = if e.provider.is_empty() {
        "the provider".to_string()
    } else {
        format!("provider {}", e.provider)
    };
    let settings = if e.provider.is_empty() {
        "providers.NAME".to_string()
    } else {
        format!("providers.{}", e.provider)
    };
    let (summary, fix) = match e.kind {
        ErrorKind::Auth => (
            format!("authentication failed at {who}"),
            Some(format!(
                "check the API key in .security.yml ({settings}) or {}",
                e.key_env
                    .unwrap_or("the provider's API key environment variable")
            )),
        ),
        ErrorKind::Billing => (
            format!("{who} refused the call for billing reasons"),
            Some("add credit or raise the quota on the provider account".to_string()),
        ),
        ErrorKind::RateLimit => (format!("rate limited by {who}"), None),
        ErrorKind::Overloaded => (
            format!("{who} is overloaded"),
            Some("try again shortly, or add a fallback model to [router]".to_string()),
        ),
        // Timeouts Pincer measures itself carry their setting in the message.
        ErrorKind::Timeout => (format!("{who} timed out"), None),
        ErrorKind::Network => (
            format!("the connection to {who} failed"),
            Some(format!("check the network and {settings}.base_url")),
        ),
        ErrorKind::Server => (
            format!("{who} had a server error"),
            Some("try again later".to_string()),
        ),
        ErrorKind::ContextTooLong => (
            match (e.prompt_tokens(), e.context_limit()) {
                (Some(prompt), Some(limit)) => format!(
                    "the conversation is too long for the model ({prompt} tokens; its window is {limit})"
                ),
                (None, Some(limit)) => format!(
                    "the conversation is too long for the model (its window is {limit} tokens)"
                ),
                _ => "the conversation is too long for the model".to_string(),
            },
            Some(match e.context_limit() {
                Some(limit) => format!(
                    "start afresh with /new or shrink it with /compact; set context_tokens = {limit} under [models.\"{}/<model>\"] so Pincer compacts in time",
                    if e.provider.is_empty() {
                        "<provider>"
                    } else {
                        &e.provider
                    }
                ),
                None => "start afresh with /new or shrink it with /compact".to_string(),
            }),
        ),
        ErrorKind::BadRequest => (format!("{who} rejected the request"), None),
        ErrorKind::ModelNotFound => (
            format!("{who} does not know the model"),
            Some(format!(
                "check the model name in [router] (and {settings}.base_url)"
            )),
        ),
        ErrorKind::InvalidResponse => (format!("{who} sent a reply Pincer could not read"), None),
        ErrorKind::ServerConfig => (
            format!("{who}'s server was started without a setting it needs"),
            Some(match missing_flags(&e.message).as_slice() {
                [] => "restart the server with the setting its message names".to_string(),
                flags => format!("restart the server with {}", flags.join(" and ")),
            }),
        ),
    };
    let mut out = summary;
    if let Some(status) = e.status {
        out.push_str(&format!(" (HTTP {status})"));
    }
    if !e.message.is_empty() {
        out.push_str(": ");
        out.push_str(&e.message);
    }
    if let Some(wait) = e.retry_after {
        out.push_str(&format!("; retry after {}", format_duration(wait)));
    }
    if let Some(fix) = fix {
        out.push_str("; ");
        out.push_str(&fix);
    }
    out
}

/// `2s`, `1.5s` or `250ms`: how durations appear in messages.
pub(crate) fn format_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else if d.as_secs() > 0 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Cut a provider message to a readable length on a character boundary.
fn truncate(message: &str) -> String {
    let message = message.trim();
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.to_string(),
    }
}

/// `Retry-After` (delay seconds, possibly fractional) or `retry-after-ms`; an HTTP date
/// or anything else unparsable is ignored.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let read = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    let secs = match read("retry-after-ms") {
        Some(ms) => ms / 1000.0,
        None => read("retry-after")?,
    };
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

/// Classify a non-2xx answer from its status and body (either wire format's error JSON,
/// or plain text).
pub(crate) fn classify_http(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
) -> ProviderError {
    let parsed: Option<ErrorBody> = serde_json::from_str(body).ok();
    let detail = parsed.as_ref().map(ErrorBody::detail);
    let fields = detail.map(error_fields).unwrap_or_default();
    // A JSON body without a message says nothing a user can read; plain text may.
    let message = match detail {
        Some(_) => fields.message.clone(),
        None => body.trim().to_string(),
    };
    let kind = classify(Some(status), &fields.kind, &message);
    let mut err = ProviderError::new(kind, message);
    if kind == ErrorKind::ContextTooLong {
        let figures = overflow::figures(detail.and_then(ErrorDetail::object), &err.message);
        err.figures = Some(Box::new(figures));
    }
    err.with_status(status).with_retry_after(retry_after)
}

/// Classify an error that arrived inside a 200 stream (OpenAI's `error` field,
/// Anthropic's `error` event).
pub(crate) fn classify_stream_error(detail: &ErrorDetail) -> ProviderError {
    let fields = error_fields(detail);
    let message = if fields.message.is_empty() {
        "the stream reported an error".to_string()
    } else {
        fields.message
    };
    let kind = classify(fields.status, &fields.kind, &message);
    let mut err = ProviderError::new(kind, message);
    if kind == ErrorKind::ContextTooLong {
        err.figures = Some(Box::new(overflow::figures(detail.object(), &err.message)));
    }
    match fields.status {
        Some(status) => err.with_status(status),
        None => err,
    }
}

/// A reqwest failure while connecting or reading.
pub(crate) fn from_reqwest(err: &reqwest::Error) -> ProviderError {
    // reqwest's Display includes the URL, which carries no secret (keys go in headers).
    let detail = std::error::Error::source(err)
        .map(|source| format!("{err}: {source}"))
        .unwrap_or_else(|| err.to_string());
    if err.is_connect() {
        // Nothing was sent: trying again is safe, whatever the cause (a connect timeout
        // included).
        ProviderError::new(ErrorKind::Network, detail)
    } else if err.is_timeout() {
        ProviderError::new(ErrorKind::Timeout, detail)
    } else if err.is_body() || err.is_decode() {
        // reqwest reports a body that broke off (e.g. a chunked stream closed early) as
        // a decode error: the connection's fault, not the content's.
        ProviderError::new(
            ErrorKind::Network,
            format!("connection closed mid-reply ({detail})"),
        )
    } else {
        ProviderError::new(ErrorKind::Network, detail)
    }
}

#[derive(Debug, Default)]
struct ErrorFields {
    /// `type` and `code` joined, lower case: what the provider calls the error.
    kind: String,
    message: String,
    /// A numeric `code` some OpenAI-compatible routers send instead of a status.
    status: Option<u16>,
}

fn error_fields(detail: &ErrorDetail) -> ErrorFields {
    let object = match detail {
        ErrorDetail::Text(message) => {
            return ErrorFields {
                message: message.clone(),
                ..ErrorFields::default()
            };
        }
        ErrorDetail::Object(object) => object,
        ErrorDetail::Other(_) => return ErrorFields::default(),
    };
    let (code_name, status) = match &object.code {
        Some(Code::Name(name)) => (name.as_str(), None),
        Some(Code::Number(code)) => (
            "",
            u16::try_from(*code).ok().filter(|c| (100..600).contains(c)),
        ),
        None => ("", None),
    };
    ErrorFields {
        kind: format!("{} {code_name}", object.kind.as_deref().unwrap_or_default()).to_lowercase(),
        message: object.message.clone().unwrap_or_default(),
        status,
    }
}

fn classify(status: Option<u16>, kind: &str, message: &str) -> ErrorKind {
    let message = message.to_lowercase();
    let is = |marker: &str| kind.contains(marker);
    let says = |phrase: &str| message.contains(phrase);
    let server_side = status.is_some_and(|s| s >= 500);
    let client_side = status.is_none_or(|s| (400..500).contains(&s));

    if status == Some(402)
        || is("insufficient_quota")
        || is("billing")
        || (client_side && (says("credit balance") || says("billing") || says("quota")))
    {
        return ErrorKind::Billing;
    }
    if matches!(status, Some(401 | 403))
        || is("authentication_error")
        || is("permission_error")
        || is("invalid_api_key")
    {
        return ErrorKind::Auth;
    }
    if !missing_flags(&message).is_empty() {
        return ErrorKind::ServerConfig;
    }
    if matches!(status, Some(503 | 529)) || is("overloaded") {
        return ErrorKind::Overloaded;
    }
    if status == Some(429) || is("rate_limit") {
        return ErrorKind::RateLimit;
    }
    if matches!(status, Some(408 | 504)) || is("timeout") {
        return ErrorKind::Timeout;
    }
    if overflow::is_overflow(kind, &message, client_side) {
        return ErrorKind::ContextTooLong;
    }
    if status == Some(404)
        || is("model_not_found")
        || (is("not_found") && says("model"))
        || (client_side && says("model") && says("not found"))
    {
        return ErrorKind::ModelNotFound;
    }
    if server_side || is("api_error") || is("server_error") {
        return ErrorKind::Server;
    }
    if status.is_some() || is("invalid_request") {
        return ErrorKind::BadRequest;
    }
    // An error in a stream with nothing recognisable: treat as the server's fault.
    ErrorKind::Server
}

/// The command-line flags an error says the server must be started with: llama.cpp's
/// "tools param requires --jinja flag", vLLM's "\"auto\" tool choice requires
/// --enable-auto-tool-choice and --tool-call-parser to be set". Only a `--flag` named
/// next to "requires", "flag", "start it with" or "to be set" counts, so a message that
/// merely quotes a command line is not taken for one.
pub(crate) fn missing_flags(message: &str) -> Vec<String> {
    let lower = message.to_lowercase();
    let asks = ["requires", " flag", "start it with", "to be set"]
        .iter()
        .any(|p| lower.contains(p));
    if !asks {
        return Vec::new();
    }
    let mut flags: Vec<String> = Vec::new();
    for word in message.split(|c: char| c.is_whitespace() || matches!(c, '`' | '\'' | '"')) {
        let word = word.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        let is_flag = word.strip_prefix("--").is_some_and(|name| {
            name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
        if is_flag && !flags.iter().any(|f| f == word) {
            flags.push(word.to_string());
        }
    }
    flags
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
