//! `web.token` in `.security.yml`: made by `onboard`, `pincer web token` and, on a
//! loopback address, by the first `pincer run` with the panel enabled; printed as a
//! login link by `pincer web url`. The file is rewritten whole (private, atomically,
//! after a backup) with only its `web:` section changed; other sections and their
//! comments stay as they were.

use std::path::Path;

use secrecy::{ExposeSecret, SecretString};

/// The shortest `web.token` the panel takes (a fresh one has 64 characters).
pub const MIN_LEN: usize = 32;

/// Why the panel may not listen as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListenError {
    #[error("web.listen = \"{0}\" is not an address and port; use e.g. \"127.0.0.1:8790\"")]
    NotAnAddress(String),
    #[error(
        "web.token in .security.yml has {0} characters; it needs at least {MIN_LEN}: run `pincer web token` for a new one"
    )]
    ShortToken(usize),
    #[error(
        "web.listen = \"{0}\" is reachable from other machines, and there is no web.token in .security.yml to keep them out; run `pincer web token`, or listen on 127.0.0.1"
    )]
    OpenWithoutToken(String),
}

/// Refuse a token too short to keep the panel shut (an empty one would let anyone in).
pub fn check(token: &SecretString) -> Result<(), ListenError> {
    let len = token.expose_secret().trim().chars().count();
    if len < MIN_LEN {
        return Err(ListenError::ShortToken(len));
    }
    Ok(())
}

/// A fresh token: 32 random bytes as hex.
pub fn fresh() -> anyhow::Result<String> {
    super::auth::random().ok_or_else(|| anyhow::anyhow!("the system gave no random bytes"))
}

/// The `web:` section of `.security.yml` for these tokens.
pub fn section(token: &str, metrics_token: Option<&str>) -> String {
    let quoted = |t: &str| serde_json::Value::String(t.to_string()).to_string();
    let mut out = format!("web:\n  token: {}\n", quoted(token));
    if let Some(m) = metrics_token {
        out.push_str(&format!("  metrics_token: {}\n", quoted(m)));
    }
    out
}

/// `text` with its top-level `web:` section (if any) replaced by `section`.
pub fn replace_section(text: &str, section: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        let top_level = !line.starts_with([' ', '\t', '#']) && !line.trim().is_empty();
        if top_level {
            inside = line.starts_with("web:");
        }
        if !inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(section);
    out
}

/// Make a new `web.token` (keeping `web.metrics_token`) and write it; returns it.
pub fn rotate(security_file: &Path) -> anyhow::Result<SecretString> {
    let secrets = pincer_config::load_secrets(security_file)?;
    let token = fresh()?;
    let metrics = secrets
        .web
        .metrics_token
        .as_ref()
        .map(|t| t.expose_secret().to_string());
    let old = match std::fs::read_to_string(security_file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => anyhow::bail!("cannot read {}: {e}", security_file.display()),
    };
    let new = replace_section(&old, &section(&token, metrics.as_deref()));
    if security_file.exists() {
        pincer_config::backup(security_file)
            .map_err(|e| anyhow::anyhow!("cannot back up {}: {e}", security_file.display()))?;
    }
    pincer_config::write_private(security_file, &new)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", security_file.display()))?;
    // What we wrote must load, or the next start fails for a reason the user did not cause.
    pincer_config::load_secrets(security_file)?;
    Ok(SecretString::from(token))
}

/// The login link for a panel listening on `listen`.
pub fn url(listen: &str, token: &SecretString) -> String {
    let host = match listen.parse::<std::net::SocketAddr>() {
        Ok(addr) if addr.ip().is_unspecified() => format!("127.0.0.1:{}", addr.port()),
        _ => listen.to_string(),
    };
    format!("http://{host}/login?token={}", token.expose_secret())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_web_section_changes() {
        let old = "# keep me\nproviders:\n  openai:\n    api_key: \"k\"\nweb:\n  token: \"old\"\n  # a comment in web\n  metrics_token: \"m\"\nchannels: {}\n";
        let new = replace_section(old, &section("new", Some("m")));
        assert!(
            new.starts_with("# keep me\nproviders:\n  openai:\n    api_key: \"k\"\nchannels: {}\n")
        );
        assert!(new.ends_with("web:\n  token: \"new\"\n  metrics_token: \"m\"\n"));
        assert!(!new.contains("old"));
        let fresh = replace_section("", &section("t", None));
        assert_eq!(fresh, "web:\n  token: \"t\"\n");
    }
}
