//! The files one Synapse instance runs from, all in its own directory: `homeserver.yaml`
//! (SQLite, one client listener on 127.0.0.1, no federation, registration closed but for
//! the shared secret, rate limits out of the way), the log config (Synapse's log goes to
//! `homeserver.log` beside it) and an ed25519 signing key made here, which saves the
//! two seconds `--generate-keys` takes.
//!
//! Nothing here starts a process (`home` does).

use std::io;
use std::path::Path;

use base64::Engine;

/// Every `rc_*` rate limit Synapse 1.163 reads, each set far above anything a test does.
/// Keys Synapse does not know are ignored, so the list may be generous.
const RATE_LIMITS: &[&str] = &[
    "rc_message",
    "rc_registration",
    "rc_registration_token_validity",
    "rc_admin_redaction",
    "rc_joins_per_room",
    "rc_3pid_validation",
    "rc_third_party_invite",
    "rc_media_create",
    "rc_key_requests",
    "rc_delayed_event_mgmt",
    "rc_reports",
    "rc_room_creation",
    "rc_send_to_device",
];

/// Rate limits with sub-keys.
const NESTED_RATE_LIMITS: &[(&str, &[&str])] = &[
    ("rc_login", &["address", "account", "failed_attempts"]),
    ("rc_joins", &["local", "remote"]),
    ("rc_invites", &["per_room", "per_user", "per_issuer"]),
    ("rc_presence", &["per_user"]),
];

const UNLIMITED: &str = "{per_second: 100000, burst_count: 100000}";

/// Random bytes from the kernel, for secrets and the signing key.
pub(crate) fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    use std::io::Read;
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// `n` random bytes as lowercase hex.
pub(crate) fn random_hex<const N: usize>() -> io::Result<String> {
    Ok(random_bytes::<N>()?
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Writes `homeserver.yaml`, `log.yaml` and `signing.key` into `dir` (kept across
/// restarts: a restart reuses them, and the database and media store beside them).
pub(crate) fn write(dir: &Path, port: u16, shared_secret: &str) -> io::Result<()> {
    let key = dir.join("signing.key");
    if !key.exists() {
        let seed = random_bytes::<32>()?;
        let id: String = random_hex::<2>()?;
        let seed = base64::engine::general_purpose::STANDARD_NO_PAD.encode(seed);
        std::fs::write(&key, format!("ed25519 a_{id} {seed}\n"))?;
    }
    std::fs::write(dir.join("log.yaml"), log_config(dir))?;
    std::fs::write(
        dir.join("homeserver.yaml"),
        homeserver_yaml(dir, port, shared_secret)?,
    )
}

fn log_config(dir: &Path) -> String {
    format!(
        "version: 1\n\
         formatters:\n  precise:\n    format: '%(asctime)s - %(name)s - %(levelname)s - %(message)s'\n\
         handlers:\n  file:\n    class: logging.FileHandler\n    formatter: precise\n    filename: {}\n\
         root:\n  level: INFO\n  handlers: [file]\n\
         disable_existing_loggers: false\n",
        quoted(&dir.join("homeserver.log"))
    )
}

fn homeserver_yaml(dir: &Path, port: u16, shared_secret: &str) -> io::Result<String> {
    // No `public_baseurl`: with one, Synapse names its own address in the login response
    // (`well_known`) and the bot's SDK moves there, past the proxy a test cuts or stalls.
    let mut yaml = format!(
        "server_name: localhost\n\
         pid_file: {pid}\n\
         listeners:\n  - port: {port}\n    bind_addresses: ['127.0.0.1']\n    type: http\n    tls: false\n    x_forwarded: false\n    resources:\n      - names: [client]\n        compress: false\n\
         database:\n  name: sqlite3\n  args:\n    database: {db}\n\
         log_config: {log}\n\
         media_store_path: {media}\n\
         signing_key_path: {key}\n\
         max_upload_size: 50M\n\
         report_stats: false\n\
         enable_metrics: false\n\
         enable_registration: false\n\
         registration_shared_secret: \"{shared_secret}\"\n\
         macaroon_secret_key: \"{macaroon}\"\n\
         form_secret: \"{form}\"\n\
         trusted_key_servers: []\n\
         suppress_key_server_warning: true\n\
         presence:\n  enabled: false\n\
         url_preview_enabled: false\n\
         allow_guest_access: false\n",
        pid = quoted(&dir.join("homeserver.pid")),
        db = quoted(&dir.join("homeserver.db")),
        log = quoted(&dir.join("log.yaml")),
        media = quoted(&dir.join("media")),
        key = quoted(&dir.join("signing.key")),
        macaroon = random_hex::<16>()?,
        form = random_hex::<16>()?,
    );
    for name in RATE_LIMITS {
        yaml.push_str(&format!("{name}: {UNLIMITED}\n"));
    }
    for (name, parts) in NESTED_RATE_LIMITS {
        yaml.push_str(&format!("{name}:\n"));
        for part in *parts {
            yaml.push_str(&format!("  {part}: {UNLIMITED}\n"));
        }
    }
    Ok(yaml)
}

/// A path as a YAML double-quoted string (JSON's quoting is valid YAML).
fn quoted(path: &Path) -> String {
    serde_json::Value::String(path.display().to_string()).to_string()
}
