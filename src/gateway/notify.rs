//! systemd's notify protocol (`sd_notify(3)`), by hand: each message is one datagram of
//! `KEY=VALUE` lines sent to the Unix socket named by `NOTIFY_SOCKET` (a path, or an
//! abstract socket when it starts with `@`). `pincer run` says `READY=1`, `WATCHDOG=1`,
//! `STOPPING=1` and `STATUS=…` through it (see `watchdog`). Without `NOTIFY_SOCKET` (not
//! started by systemd as `Type=notify`) there is no `Notifier` and nothing is sent.
//!
//! The socket does not block: a message systemd's queue has no room for is dropped
//! (and logged), never waited for. Commands Pincer runs get a cleared environment, so
//! they never see `NOTIFY_SOCKET`.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// Where systemd listens, and our unbound socket to it.
#[derive(Debug)]
pub(super) struct Notifier {
    socket: UnixDatagram,
    to: SocketAddr,
    /// What `NOTIFY_SOCKET` said, for messages about it.
    name: String,
}

/// The value of `key` in `env`.
fn var<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
    env.iter()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.as_str())
}

impl Notifier {
    /// The notifier `NOTIFY_SOCKET` in `env` asks for; `None` when it is unset or empty,
    /// or names no socket this system can reach (logged).
    pub(super) fn from_env(env: &[(String, String)]) -> Option<Notifier> {
        let name = var(env, "NOTIFY_SOCKET").filter(|n| !n.is_empty())?;
        match Notifier::open(name) {
            Ok(notifier) => Some(notifier),
            Err(err) => {
                tracing::warn!(
                    "NOTIFY_SOCKET={name} cannot be used ({err}); systemd will not hear that pincer is ready"
                );
                None
            }
        }
    }

    fn open(name: &str) -> std::io::Result<Notifier> {
        let to = match name.strip_prefix('@') {
            Some(abstract_name) => abstract_address(abstract_name)?,
            None => SocketAddr::from_pathname(name)?,
        };
        let socket = UnixDatagram::unbound()?;
        socket.set_nonblocking(true)?;
        Ok(Notifier {
            socket,
            to,
            name: name.to_string(),
        })
    }

    /// Send one message (`READY=1`, or several `KEY=VALUE` lines). A failure is logged
    /// and otherwise ignored: the gateway runs on whether or not systemd hears.
    pub(super) fn send(&self, message: &str) {
        if let Err(err) = self.socket.send_to_addr(message.as_bytes(), &self.to) {
            tracing::warn!(
                "could not tell systemd {:?} through NOTIFY_SOCKET={}: {err}",
                message.lines().next().unwrap_or_default(),
                self.name
            );
        }
    }
}

#[cfg(target_os = "linux")]
fn abstract_address(name: &str) -> std::io::Result<SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    SocketAddr::from_abstract_name(name.as_bytes())
}

#[cfg(not(target_os = "linux"))]
fn abstract_address(_name: &str) -> std::io::Result<SocketAddr> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "abstract sockets exist only on Linux",
    ))
}

/// How often to say `WATCHDOG=1`: half of `WATCHDOG_USEC`, as `sd_watchdog_enabled(3)`
/// advises; `None` when no watchdog is asked for, or it is meant for another process
/// (`WATCHDOG_PID`).
pub(super) fn watchdog_every(env: &[(String, String)]) -> Option<Duration> {
    if let Some(pid) = var(env, "WATCHDOG_PID")
        && pid.trim().parse::<u32>().ok() != Some(std::process::id())
    {
        return None;
    }
    let usec: u64 = var(env, "WATCHDOG_USEC")?.trim().parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec) / 2)
}

/// A `STATUS=` line: one line, at most 200 characters, whatever `text` holds, with
/// any secret scrubbed (systemd shows it to whoever may run `systemctl status`).
pub(super) fn status(text: &str) -> String {
    let line: String = crate::scrub::scrub_global(text)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    format!("STATUS={line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_watchdog_is_pinged_at_half_its_interval_and_only_for_this_process() {
        let every = watchdog_every(&env(&[("WATCHDOG_USEC", "30000000")]));
        assert_eq!(every, Some(Duration::from_secs(15)));
        let mine = std::process::id().to_string();
        let ours = env(&[("WATCHDOG_USEC", "200000"), ("WATCHDOG_PID", &mine)]);
        assert_eq!(watchdog_every(&ours), Some(Duration::from_millis(100)));
        let theirs = env(&[("WATCHDOG_USEC", "200000"), ("WATCHDOG_PID", "1")]);
        assert_eq!(watchdog_every(&theirs), None);
        assert_eq!(watchdog_every(&env(&[("WATCHDOG_USEC", "0")])), None);
        assert_eq!(watchdog_every(&[]), None);
    }

    #[test]
    fn without_notify_socket_there_is_no_notifier() {
        assert!(Notifier::from_env(&[]).is_none());
        assert!(Notifier::from_env(&env(&[("NOTIFY_SOCKET", "")])).is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_message_reaches_a_path_socket_and_an_abstract_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let systemd = UnixDatagram::bind(&path).unwrap();
        let notifier = Notifier::from_env(&env(&[("NOTIFY_SOCKET", path.to_str().unwrap())]))
            .expect("a notifier");
        notifier.send("READY=1\nSTATUS=up");
        let mut buf = [0u8; 64];
        let n = systemd.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=up");

        let name = format!("pincer-test-{}", std::process::id());
        let address = abstract_address(&name).unwrap();
        let systemd = UnixDatagram::bind_addr(&address).unwrap();
        let notifier = Notifier::from_env(&env(&[("NOTIFY_SOCKET", &format!("@{name}"))]))
            .expect("a notifier");
        notifier.send("WATCHDOG=1");
        let n = systemd.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"WATCHDOG=1");
    }

    #[test]
    fn a_status_is_one_short_line_without_secrets() {
        assert_eq!(status("a\nb"), "STATUS=a b");
        assert_eq!(status(&"x".repeat(500)).len(), "STATUS=".len() + 200);
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
        assert!(!status(&format!("down: {key}")).contains(key));
    }
}
