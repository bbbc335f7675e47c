//! Semantic checks on a well-typed `Config`: ranges, the `open` DM policy and `"*"` rule,
//! router entries naming configured providers, URLs, web-search backends and MCP server
//! shapes. Checks run in a fixed order and the first failure is returned. What needs
//! outside knowledge (timezone names, cron syntax, durations) is the core's to check.

use crate::schema::{Access, DmPolicy, ModelRef, Platform, WebSearchConfig};
use crate::{Config, ConfigError, SlackMode};

use super::locate::{Locator, display_path};

/// A failed check: the key path to blame and the problem, completing "`key` ...".
struct Problem {
    path: Vec<String>,
    text: String,
}

fn problem(path: &[&str], text: impl Into<String>) -> Problem {
    Problem {
        path: path.iter().map(|s| (*s).to_owned()).collect(),
        text: text.into(),
    }
}

pub(crate) fn check(config: &Config, locator: &Locator<'_>) -> Result<(), ConfigError> {
    let found = agent(config)
        .or_else(|| router(config))
        .or_else(|| providers(config))
        .or_else(|| prices(config))
        .or_else(|| models(config))
        .or_else(|| transcription(config))
        .or_else(|| voice(config))
        .or_else(|| channels(config))
        .or_else(|| tools(&config.tools.web_search))
        .or_else(|| hooks(config))
        .or_else(|| limits(config))
        .or_else(|| mcp(config))
        .or_else(|| access(config))
        .or_else(|| host(config));
    match found {
        None => Ok(()),
        Some(p) => Err(ConfigError::Invalid {
            location: locator.locate(&p.path),
            key: display_path(&p.path),
            problem: p.text,
        }),
    }
}

fn agent(c: &Config) -> Option<Problem> {
    let a = &c.agent;
    if a.max_iterations == 0 {
        return Some(problem(&["agent", "max_iterations"], "must be at least 1"));
    }
    for (key, value) in [
        ("max_turn_cost_usd", a.max_turn_cost_usd),
        ("max_day_cost_usd", a.max_day_cost_usd),
    ] {
        if !(value.is_finite() && value >= 0.0) {
            return Some(problem(
                &["agent", key],
                format!("must be 0 or more (found {value})"),
            ));
        }
    }
    if a.max_turn_secs == 0 {
        return Some(problem(&["agent", "max_turn_secs"], "must be at least 1"));
    }
    if a.max_tokens == 0 {
        return Some(problem(&["agent", "max_tokens"], "must be at least 1"));
    }
    if !(a.compact_at > 0.0 && a.compact_at <= 1.0) {
        return Some(problem(
            &["agent", "compact_at"],
            format!(
                "must be a share of the context window above 0 and at most 1, e.g. 0.75 (found {})",
                a.compact_at
            ),
        ));
    }
    if a.task_max_iterations == 0 {
        return Some(problem(
            &["agent", "task_max_iterations"],
            "must be at least 1",
        ));
    }
    for (i, owner) in a.owners.iter().enumerate() {
        let index = i.to_string();
        let known = owner
            .split_once(':')
            .is_some_and(|(channel, id)| Platform::from_name(channel).is_some() && !id.is_empty());
        if !known {
            return Some(problem(
                &["agent", "owners", index.as_str()],
                format!(
                    "is `{owner}`, not a canonical sender id; write the channel and the platform's user id, e.g. \"telegram:123456789\", \"discord:80351110224678912\" or \"slack:U024BE7LH\""
                ),
            ));
        }
    }
    None
}

fn access(c: &Config) -> Option<Problem> {
    let a = &c.access;
    for (key, value) in [
        ("member_day_cost_usd", a.member_day_cost_usd),
        ("guest_day_cost_usd", a.guest_day_cost_usd),
    ] {
        if !(value.is_finite() && value >= 0.0) {
            return Some(problem(
                &["access", key],
                format!("must be 0 or more (found {value})"),
            ));
        }
    }
    None
}

fn host(c: &Config) -> Option<Problem> {
    if c.host.approval_timeout_secs == 0 {
        return Some(problem(
            &["host", "approval_timeout_secs"],
            "must be at least 1 (seconds a host has to answer a permission request)",
        ));
    }
    None
}

fn router(c: &Config) -> Option<Problem> {
    let r = &c.router;
    if !(0.0..=1.0).contains(&r.threshold) {
        return Some(problem(
            &["router", "threshold"],
            format!("must be between 0 and 1 (found {})", r.threshold),
        ));
    }
    for (chain, entries) in [("light", &r.light), ("heavy", &r.heavy)] {
        for (i, entry) in entries.iter().enumerate() {
            let index = i.to_string();
            let path = ["router", chain, index.as_str()];
            let Some(model) = ModelRef::parse(entry) else {
                return Some(problem(
                    &path,
                    format!(
                        "is \"{entry}\"; entries are \"<provider>/<model>\", \
                         e.g. \"openai/gpt-4.1-mini\""
                    ),
                ));
            };
            if !c.providers.contains_key(model.provider) {
                let configured = if c.providers.is_empty() {
                    "no providers are configured".to_owned()
                } else {
                    let names: Vec<&str> = c.providers.keys().map(String::as_str).collect();
                    format!("configured: {}", names.join(", "))
                };
                return Some(problem(
                    &path,
                    format!(
                        "names provider \"{}\", which is not configured ({configured}); \
                         add [providers.{}] with kind = \"openai\" or \"anthropic\"",
                        model.provider, model.provider
                    ),
                ));
            }
        }
    }
    None
}

fn providers(c: &Config) -> Option<Problem> {
    for (name, p) in &c.providers {
        if let Some(url) = &p.base_url
            && !is_http_url(url)
        {
            return Some(problem(
                &["providers", name, "base_url"],
                format!("must start with http:// or https:// (found \"{url}\")"),
            ));
        }
        for (key, value) in [
            ("timeout_secs", p.timeout_secs),
            ("idle_timeout_secs", p.idle_timeout_secs),
        ] {
            if value == 0 {
                return Some(problem(&["providers", name, key], "must be at least 1"));
            }
        }
    }
    None
}

fn prices(c: &Config) -> Option<Problem> {
    for (model, price) in &c.prices {
        let parts = [
            ("input", Some(price.input)),
            ("output", Some(price.output)),
            ("cache_read", price.cache_read),
            ("cache_write", price.cache_write),
        ];
        for (key, value) in parts {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Some(problem(
                    &["prices", model, key],
                    format!("must be 0 or more (found {v})"),
                ));
            }
        }
    }
    None
}

fn models(c: &Config) -> Option<Problem> {
    for (label, caps) in &c.models {
        if ModelRef::parse(label).is_none() {
            return Some(problem(
                &["models", label],
                "names no model; write it as [models.\"<provider>/<model>\"], e.g. [models.\"openai/gpt-4.1\"]",
            ));
        }
        if caps.context_tokens.is_some_and(|n| n < 1024) {
            return Some(problem(
                &["models", label, "context_tokens"],
                "must be at least 1024 (the model's context window, in tokens)",
            ));
        }
        if caps.call_timeout_secs == Some(0) {
            return Some(problem(
                &["models", label, "call_timeout_secs"],
                "must be at least 1 (seconds for one whole call to the model)",
            ));
        }
        if let Some(budget) = caps.thinking_budget.filter(|n| *n > 0) {
            if budget < 1024 {
                return Some(problem(
                    &["models", label, "thinking_budget"],
                    "must be 0 (off) or at least 1024 tokens, as Anthropic requires",
                ));
            }
            let provider = label.split_once('/').map_or("", |(p, _)| p);
            if let Some(p) = c.providers.get(provider)
                && p.kind != crate::ProviderKind::Anthropic
            {
                return Some(problem(
                    &["models", label, "thinking_budget"],
                    format!(
                        "is for Anthropic models; [providers.{provider}] is an OpenAI-compatible provider, whose reasoning models think on their own (remove the key)"
                    ),
                ));
            }
        }
    }
    None
}

fn transcription(c: &Config) -> Option<Problem> {
    let t = &c.transcription;
    if let Some(name) = &t.provider {
        match c.providers.get(name) {
            None => {
                return Some(problem(
                    &["transcription", "provider"],
                    format!(
                        "is \"{name}\", which is not configured; name a [providers.X] whose \
                         endpoint serves /audio/transcriptions"
                    ),
                ));
            }
            Some(p) if p.kind != crate::ProviderKind::Openai => {
                return Some(problem(
                    &["transcription", "provider"],
                    format!(
                        "is \"{name}\", an Anthropic provider, which has no transcription \
                         endpoint; name an OpenAI-compatible provider (OpenAI, Groq, a local \
                         whisper server)"
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    if t.model.trim().is_empty() {
        return Some(problem(
            &["transcription", "model"],
            "is empty; name the transcription model, e.g. \"whisper-1\"",
        ));
    }
    if t.max_minutes == 0 {
        return Some(problem(
            &["transcription", "max_minutes"],
            "must be at least 1",
        ));
    }
    None
}

fn voice(c: &Config) -> Option<Problem> {
    let v = &c.voice;
    if v.provider.is_some() && !v.command.is_empty() {
        return Some(problem(
            &["voice", "command"],
            "is set together with [voice] provider; keep one: provider (a speech server) \
             or command (a local program that writes a WAV)",
        ));
    }
    if let Some(name) = &v.provider {
        match c.providers.get(name) {
            None => {
                return Some(problem(
                    &["voice", "provider"],
                    format!(
                        "is \"{name}\", which is not configured; name a [providers.X] whose \
                         endpoint serves /audio/speech, or use [voice] command"
                    ),
                ));
            }
            Some(p) if p.kind != crate::ProviderKind::Openai => {
                return Some(problem(
                    &["voice", "provider"],
                    format!(
                        "is \"{name}\", an Anthropic provider, which has no speech endpoint; \
                         name an OpenAI-compatible provider, or use [voice] command"
                    ),
                ));
            }
            Some(_) => {}
        }
        if v.model.trim().is_empty() {
            return Some(problem(
                &["voice", "model"],
                "is empty; name the speech model, e.g. \"tts-1\"",
            ));
        }
    }
    if let Some(program) = v.command.first() {
        if program.trim().is_empty() {
            return Some(problem(
                &["voice", "command"],
                "starts with an empty program name; write it as [\"espeak-ng\", \"-w\", \"{out}\"]",
            ));
        }
        if !v.command.iter().any(|arg| arg.contains("{out}")) {
            return Some(problem(
                &["voice", "command"],
                "has no \"{out}\" argument; the program must write its WAV there, e.g. \
                 [\"espeak-ng\", \"-w\", \"{out}\"]",
            ));
        }
    }
    if v.max_chars == 0 {
        return Some(problem(&["voice", "max_chars"], "must be at least 1"));
    }
    None
}

fn channels(c: &Config) -> Option<Problem> {
    c.channels
        .all()
        .iter()
        .find_map(|access| channel(access, c))
}

fn channel(a: &Access<'_>, c: &Config) -> Option<Problem> {
    let name = a.name;
    let star = a.allow_from.iter().any(|id| id == "*");
    if a.dm_policy == DmPolicy::Open && !star {
        return Some(problem(
            &["channels", name, "dm_policy"],
            format!(
                "is \"open\", which admits everyone, so it must be confirmed: set \
                 channels.{name}.allow_from = [\"*\"] (or choose dm_policy = \"pairing\" \
                 or \"allowlist\")"
            ),
        ));
    }
    if a.dm_policy != DmPolicy::Open && star {
        return Some(problem(
            &["channels", name, "allow_from"],
            format!(
                "contains \"*\" (everyone), which only dm_policy = \"open\" allows, but \
                 dm_policy is \"{}\": set channels.{name}.dm_policy = \"open\" or remove \
                 \"*\" from channels.{name}.allow_from",
                a.dm_policy.as_str()
            ),
        ));
    }
    if let Some(emoji) = a.ack_reaction
        && (emoji.trim().is_empty() || emoji.chars().count() > 32)
    {
        return Some(problem(
            &["channels", name, "ack_reaction"],
            "must be one emoji such as \"👀\" (or a Slack name such as \":eyes:\"); remove the key for no reaction",
        ));
    }
    if a.silence_secs.is_some_and(|secs| secs < 2) {
        return Some(problem(
            &["channels", name, "silence_secs"],
            "must be at least 2 (seconds the connection may stay silent); remove the key for the platform's own",
        ));
    }
    // The URL as configured, or the platform's default (which is one).
    let url = a.api_url;
    if !is_http_url(url) {
        let key = if name == "matrix" {
            "homeserver"
        } else {
            "api_url"
        };
        return Some(problem(
            &["channels", name, key],
            format!("must start with http:// or https:// (found \"{url}\")"),
        ));
    }
    if name == "matrix"
        && let Some(user) = &c.channels.matrix.user_id
        && !is_matrix_user_id(user)
    {
        return Some(problem(
            &["channels", "matrix", "user_id"],
            format!(
                "must be a full Matrix user id like \"@pincer:example.org\" (found \"{user}\")"
            ),
        ));
    }
    if name == "slack"
        && let Some(listen) = &c.channels.slack.listen
    {
        if c.channels.slack.mode != SlackMode::Events {
            return Some(problem(
                &["channels", "slack", "listen"],
                "is only used with mode = \"events\"; set mode = \"events\" or remove listen",
            ));
        }
        if listen.parse::<std::net::SocketAddr>().is_err() {
            return Some(problem(
                &["channels", "slack", "listen"],
                format!("must be an address like \"127.0.0.1:8787\" (found \"{listen}\")"),
            ));
        }
    }
    None
}

/// `@localpart:server`, as Matrix writes a user.
fn is_matrix_user_id(id: &str) -> bool {
    id.strip_prefix('@')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| !local.is_empty() && !server.is_empty())
}

fn tools(w: &WebSearchConfig) -> Option<Problem> {
    if let Some(backend) = &w.backend {
        if !WebSearchConfig::BACKENDS.contains(&backend.as_str()) {
            return Some(problem(
                &["tools", "web_search", "backend"],
                format!(
                    "must be one of {} (found \"{backend}\")",
                    WebSearchConfig::BACKENDS.join(", ")
                ),
            ));
        }
        if backend == "searxng" && w.url.is_none() {
            return Some(problem(
                &["tools", "web_search", "backend"],
                "is \"searxng\", which needs the instance address: add \
                 url = \"https://searx.example.org\" to [tools.web_search]",
            ));
        }
    }
    if let Some(url) = &w.url
        && !is_http_url(url)
    {
        return Some(problem(
            &["tools", "web_search", "url"],
            format!("must start with http:// or https:// (found \"{url}\")"),
        ));
    }
    None
}

fn hooks(c: &Config) -> Option<Problem> {
    if c.tools.permissions.approval_timeout_secs == 0 {
        return Some(problem(
            &["tools", "permissions", "approval_timeout_secs"],
            "must be at least 1",
        ));
    }
    for (name, hook) in &c.tools.hooks {
        if hook.command.trim().is_empty() {
            return Some(problem(
                &["tools", "hooks", name],
                "needs command = \"...\" (run with /bin/sh -c in the workspace)",
            ));
        }
        if hook.timeout_secs == 0 {
            return Some(problem(
                &["tools", "hooks", name, "timeout_secs"],
                "must be at least 1",
            ));
        }
    }
    None
}

fn limits(c: &Config) -> Option<Problem> {
    let set = c.tools.exec.limits;
    let min = crate::schema::ExecLimits::MIN;
    for (key, value, least) in [
        ("memory_mb", set.memory_mb, min.memory_mb),
        ("cpu_secs", set.cpu_secs, min.cpu_secs),
        ("file_size_mb", set.file_size_mb, min.file_size_mb),
        ("open_files", set.open_files, min.open_files),
        ("processes", set.processes, min.processes),
    ] {
        if value != 0 && value < least {
            return Some(problem(
                &["tools", "exec", "limits", key],
                format!(
                    "must be 0 (no limit) or at least {least} (found {value}); below that not even a shell starts"
                ),
            ));
        }
    }
    None
}

fn mcp(c: &Config) -> Option<Problem> {
    for (name, server) in &c.mcp.servers {
        let path = ["mcp", "servers", name.as_str()];
        match (&server.command, &server.url) {
            (Some(_), Some(_)) | (None, None) => {
                return Some(problem(
                    &path,
                    "needs exactly one of command = \"...\" (a stdio server, with args) \
                     or url = \"http://...\" (an HTTP server)",
                ));
            }
            (None, Some(url)) if !is_http_url(url) => {
                return Some(problem(
                    &["mcp", "servers", name, "url"],
                    format!("must start with http:// or https:// (found \"{url}\")"),
                ));
            }
            (None, Some(_)) if !server.args.is_empty() => {
                return Some(problem(
                    &["mcp", "servers", name, "args"],
                    "only applies to a stdio server (command); remove it or use command",
                ));
            }
            _ => {}
        }
    }
    None
}

fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    rest.is_some_and(|r| !r.is_empty())
}
