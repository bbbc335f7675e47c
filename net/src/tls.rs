//! The TLS client settings the process's HTTP and WebSocket clients share, each built
//! once: rustls with the process's crypto provider (ring) and one parsed root store per
//! kind of roots. Each client used to build its own config (its own copy of the roots,
//! its own session cache); now each takes a clone of one of these, which shares the
//! verifier, the roots and the session cache.
//!
//! It decides no trust: every client keeps the roots it had — Mozilla's as
//! webpki-roots ships them for the reqwest clients (what reqwest's `rustls-tls` trusts),
//! the system's for Slack's Web API and Socket Mode. `None` means the config could not
//! be built; the caller then builds its client as it did before, so nothing changes.

use std::sync::{Arc, OnceLock};

use rustls::ClientConfig;
use rustls::crypto::CryptoProvider;

/// For `reqwest::ClientBuilder::use_preconfigured_tls`: Mozilla's roots, TLS 1.2 and
/// 1.3, ALPN `h2` then `http/1.1` — the config reqwest builds for each client itself.
pub fn webpki() -> Option<ClientConfig> {
    static CONFIG: OnceLock<Option<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let mut config = ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .ok()?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Some(config)
        })
        .clone()
}

/// The system's roots (as `rustls-native-certs` finds them), TLS 1.2 and 1.3, no ALPN:
/// for a WebSocket as it is, for hyper-rustls's builder to add its ALPN to. `None` when
/// the system has no usable root, as hyper-rustls's `with_native_roots` refuses then.
pub fn native() -> Option<Arc<ClientConfig>> {
    static CONFIG: OnceLock<Option<Arc<ClientConfig>>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            for err in &found.errors {
                tracing::warn!("reading the system's TLS roots: {err}");
            }
            let mut roots = rustls::RootCertStore::empty();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return None;
            }
            let config = ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .ok()?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Some(Arc::new(config))
        })
        .clone()
}

/// The provider `main` installed for the process, or ring (what it installs).
fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}
